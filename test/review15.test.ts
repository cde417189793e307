// Hostile review of issue 15 (node admission by cloud identity). Each test here failed on the main it was written
// against (2827543) and demonstrated one defect; each passes since its fix (docs/admission.md, "Review"). The two
// found on the real control plane (D1 end to end, D6) are in test/realClusterAdmission.test.ts. The tests
// assert from state (the approver's verdict vs. what a standard PEM reader signs, files a script left, the
// recorded decisions, the admitted identity), never from log lines.
import * as assert from "assert";
import { execFileSync, spawn } from "child_process";
import * as crypto from "crypto";
import * as fs from "fs";
import * as https from "https";
import type * as net from "net";
import * as os from "os";
import * as path from "path";
import { admit, documentWithAudience, type AdmissionSettings } from "../src/admission/admit";
import { ADMITTED_GROUP, csrVerdict, KUBELET_CLIENT_SIGNER, type Csr } from "../src/admission/approver";
import { issueChallenge } from "../src/admission/challenge";
import { trustedSigners } from "../src/admission/pkcs7";
import { approvePending, Kube, KubeError } from "../src/admission/kube";
import { startServer } from "../src/admission/server";
import { admissionAttachOneLiner, renderAdmissionBootstrap } from "../src/shell/renderAdmission";
import { makeClusterCa, makeServiceTls } from "../testing/admission/harness";
import { ModelCloud, ModelCluster } from "../testing/admission/model";
import { makePki, type TestPki } from "../testing/admission/pki";

const ACCOUNT = "1234567890123456";
const REGION = "cn-hangzhou";

describe("review 15: admission defects", function () {
    this.timeout(120_000);
    let pki: TestPki;
    let dir: string;
    let settings: AdmissionSettings;
    const key = crypto.randomBytes(32);

    before(() => {
        process.env.AK_ADMISSION_LOG = "off";
        pki = makePki();
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "ak-review15-"));
        settings = { accountId: ACCOUNT, regionId: REGION, signers: trustedSigners(pki.signerPem), challengeKeys: [key], challengeTtlSeconds: 120, tokenTtlSeconds: 600 };
    });
    after(() => {
        delete process.env.AK_ADMISSION_LOG;
        pki?.cleanup();
        if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });

    /** The subject a standard PEM reader (openssl; Go's pem.Decode in kube-apiserver/kube-controller-manager alike) sees in `text`. */
    const opensslSubject = (text: string): string => execFileSync("openssl", ["req", "-noout", "-subject", "-nameopt", "RFC2253"], { input: text }).toString().trim();

    it("D1 (critical): the approver reads a different CSR than the one the signer signs (leading Base64 before the PEM block)", () => {
        const own = `system:node:${REGION}.i-pool1`;
        const master = `system:node:${REGION}.i-master0`;
        // The admitted node's own CSR, as bare Base64 ending in '=' padding (Node's decoder stops there)...
        let ownBody = "";
        for (let i = 0; i < 20 && !ownBody.endsWith("="); i++) {
            ownBody = pki.csr(`/O=system:nodes/CN=${own}`).replace(/-----(BEGIN|END) [A-Z ]+-----/g, "").replace(/\s+/g, "");
        }
        assert.ok(ownBody.endsWith("="), "a CSR whose DER length is not a multiple of 3 (two in three are)");
        // ...then a proper PEM block for the master's name. PEM readers skip text before "-----BEGIN".
        const request = `${ownBody}\n${pki.csr(`/O=system:nodes/CN=${master}`)}`;
        assert.match(opensslSubject(request), new RegExp(`CN=${master}`), "what gets signed: the master's name");
        const tokenId = "abcdef";
        const csr: Csr = {
            metadata: { name: "csr-smuggled" },
            spec: { request, signerName: KUBELET_CLIENT_SIGNER, username: `system:bootstrap:${tokenId}`, groups: ["system:bootstrappers", ADMITTED_GROUP, "system:authenticated"],
                usages: ["digital signature", "client auth"] },
        };
        const v = csrVerdict(csr, (id) => (id === tokenId ? `${REGION}.i-pool1` : undefined));
        assert.notStrictEqual(v.action, "approve", `approved a CSR whose signed subject is ${master}: ${v.why}`);
    });

    it("D2 (high): a CA bundle defeats the CA pin: the pin is taken of the first certificate, curl trusts all of them (manual path runs the attacker's script)", async () => {
        const real = makeServiceTls();
        const evilDir = fs.mkdtempSync(path.join(dir, "evil-"));
        const evil = makeClusterCa(evilDir);
        const marker = path.join(dir, "pwned");
        // An on-path attacker (what the pin exists to stop) answers at the master's address with its own CA's
        // certificate, and serves the service's real (public) certificate first in /admission.crt, followed by its CA.
        const server = https.createServer({ cert: evil.certPem, key: evil.keyPem }, (req, res) => {
            if (req.url === "/admission.crt") res.end(real.certPem + evil.caPem);
            else if (req.url === "/attach.sh") res.end(`#!/bin/bash\necho attacker > ${marker}\n`);
            else { res.writeHead(404); res.end(); }
        });
        await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
        const endpoint = `127.0.0.1:${(server.address() as net.AddressInfo).port}`;
        try {
            const bootstrap = renderAdmissionBootstrap([endpoint], real.pin).replace(/'\{\{(labels|taints|channel)\}\}'/g, "''");
            fs.writeFileSync(path.join(dir, "bootstrap.sh"), bootstrap);
            await new Promise<void>((resolve) => {
                const p = spawn("bash", [path.join(dir, "bootstrap.sh")], { stdio: "ignore" });
                p.on("exit", () => resolve());
            });
            const viaBootstrap = fs.existsSync(marker);
            fs.rmSync(marker, { force: true });
            await new Promise<void>((resolve) => {
                const p = spawn("bash", ["-c", admissionAttachOneLiner([endpoint], real.pin)], { stdio: "ignore" });
                p.on("exit", () => resolve());
            });
            const viaOneLiner = fs.existsSync(marker);
            assert.deepStrictEqual({ viaBootstrap, viaOneLiner }, { viaBootstrap: false, viaOneLiner: false }, "a script served under a certificate of another CA ran as root");
        } finally {
            await new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); });
        }
    });

    it("D2b (high): the pool path too: the admission client sends its signed identity to, and takes a token from, a server of another CA", async () => {
        const real = makeServiceTls();
        const evil = makeClusterCa(fs.mkdtempSync(path.join(dir, "evil-")));
        const received: string[] = [];
        const server = https.createServer({ cert: evil.certPem, key: evil.keyPem }, (req, res) => {
            received.push(`${req.method} ${req.url}`);
            if (req.url === "/admission.crt") res.end(real.certPem + evil.caPem);
            else if (req.url === "/challenge") res.end(`ak1.${Math.floor(Date.now() / 1000) + 120}.${"A".repeat(22)}.${"B".repeat(43)}\n`);
            else if (req.url === "/admit") { req.resume(); req.on("end", () => res.end('{"token":"evilid.0123456789abcdef"}')); }
            else { res.writeHead(404); res.end(); }
        });
        // The instance metadata stand-in (any document; what matters is where the client sends it).
        const metadata = (await import("http")).createServer((_req, res) => res.end("{\"instance-id\":\"i-pool1\"}"));
        await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
        await new Promise<void>((r) => metadata.listen(0, "127.0.0.1", () => r()));
        try {
            const state = fs.mkdtempSync(path.join(dir, "state-"));
            const script = [
                "set -euo pipefail",
                `source ${JSON.stringify(path.join(__dirname, "..", "src", "shell", "admission_client.sh"))}`,
                "ak_log() { :; }; ak_die() { exit 1; }; ak_mark() { :; }",
                `AK_ADMISSION_ENDPOINTS=127.0.0.1:${(server.address() as net.AddressInfo).port} AK_ADMISSION_PIN=${real.pin} AK_STATE_DIR=${state} AK_ROOT=""`,
                `AK_METADATA=http://127.0.0.1:${(metadata.address() as net.AddressInfo).port}/latest AK_ADMISSION_ATTEMPTS=1 AK_RETRY_DELAY=0`,
                `ak_admission_token && printf %s "$AK_BOOTSTRAP_TOKEN" > ${state}/token || true`,
            ].join("\n");
            await new Promise<void>((resolve) => spawn("bash", ["-c", script], { stdio: "ignore" }).on("exit", () => resolve()));
            const token = fs.existsSync(path.join(state, "token")) ? fs.readFileSync(path.join(state, "token"), "utf8") : "";
            assert.deepStrictEqual({ admitPosted: received.includes("POST /admit"), token }, { admitPosted: false, token: "" },
                "the signed identity went to, and a token came from, a server whose key is not the pinned one");
        } finally {
            await new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); });
            await new Promise<void>((r) => { metadata.closeAllConnections(); metadata.close(() => r()); });
        }
    });

    it("D3 (medium, defence in depth): signed JSON with duplicate keys is used with its LAST value instead of being refused", async () => {
        // What Alibaba would sign if it appends the caller's audience without escaping it (docs/admission.md quotes
        // the format "audience":"<VALUE>"; the attacker chooses VALUE in the metadata request): the attacker's own
        // document followed by injected members. The service must not let a second "instance-id"/"owner-account-id" win.
        const cloud = new ModelCloud();
        const cluster = new ModelCluster();
        cloud.members.set("i-pool1", { instanceId: "i-pool1", privateIp: "192.168.1.10", source: "pool", pool: "general", state: "Pending" });
        const audience = issueChallenge(key, "192.168.1.10", 120);
        const injected = `{"owner-account-id":"999999","instance-id":"i-stranger","region-id":"${REGION}","private-ipv4":"192.168.1.10","audience":"${audience}",` +
            `"owner-account-id":"${ACCOUNT}","instance-id":"i-pool1"}`;
        const r = await admit({ document: injected, signature: pki.sign(documentWithAudience(injected, audience)), audience }, "192.168.1.10", settings, cloud, cluster);
        assert.deepStrictEqual([r.admitted, cluster.tokens.size], [false, 0], `admitted ${r.instanceId} from a document that names i-stranger of account 999999 first`);
    });

    it("D4 (medium): every unauthenticated request to /admit writes a decision to the API server (an Event each: etcd write amplification)", async () => {
        const ca = makeClusterCa(fs.mkdtempSync(path.join(dir, "srv-")));
        const cluster = new ModelCluster();
        const running = await startServer({ settings, cloud: new ModelCloud(), cluster, tls: () => ({ cert: ca.certPem, key: ca.keyPem }), host: "127.0.0.1", port: 0 });
        try {
            const post = (body: string) => new Promise<void>((resolve) => {
                const req = https.request({ host: "127.0.0.1", port: running.port, path: "/admit", method: "POST", rejectUnauthorized: false, headers: { "content-type": "application/json" } },
                    (res) => { res.resume(); res.on("end", () => resolve()); });
                req.on("error", () => resolve());
                req.end(body);
            });
            for (let i = 0; i < 40; i++) await post(i % 2 ? "{}" : JSON.stringify({ document: "x", signature: "x", audience: "ak1.garbage" }));
            assert.ok(cluster.decisions.length <= 4, `40 requests without any credential (no challenge, no signature) made ${cluster.decisions.length} API writes`);
        } finally {
            await running.close();
        }
    });

    it("D7 (low-medium): every approver pass GETs the token Secret of every kubelet-client CSR on the cluster, decided ones included (each replica, every second)", async () => {
        // A fake API server holding 50 CSRs that are already approved (they stay listed for an hour after
        // approval; kubeadm's own tokens' CSRs too). Nothing is left to decide, so one list call is all a pass needs.
        const csrs = Array.from({ length: 50 }, (_, i) => ({
            metadata: { name: `csr-${i}` },
            spec: { request: "", signerName: KUBELET_CLIENT_SIGNER, username: `system:bootstrap:${String(i).padStart(6, "a")}`, groups: ["system:bootstrappers"], usages: ["client auth"] },
            status: { conditions: [{ type: "Approved" }] },
        }));
        const calls: string[] = [];
        class FakeKube extends Kube {
            override request<T = Record<string, unknown>>(method: string, p: string): Promise<T> {
                calls.push(`${method} ${p.split("?")[0]}`);
                if (p.startsWith("/apis/certificates.k8s.io/v1/certificatesigningrequests?")) return Promise.resolve({ items: csrs } as T);
                return Promise.reject(new KubeError(404, "not found"));
            }
        }
        const kube = new FakeKube({ server: "https://127.0.0.1:1", ca: "" });
        try {
            assert.deepStrictEqual(await approvePending(kube, () => undefined), {});
            assert.strictEqual(calls.length, 1, `one pass over 50 decided CSRs made ${calls.length} API calls`);
        } finally {
            kube.close();
        }
    });

    it("D5 (low): the manual one-line command names only the first master: with master 0 down the manual path is dead", () => {
        const pin = `sha256:${"a".repeat(64)}`;
        const line = admissionAttachOneLiner(["10.0.0.1:10443", "10.0.0.2:10443", "10.0.0.3:10443"], pin);
        assert.ok(line.includes("10.0.0.2:10443") || line.includes("10.0.0.3:10443"), `the one-liner only tries 10.0.0.1: ${line}`);
    });
});
