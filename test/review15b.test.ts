// Review 15b: tests for defects left after the admission review fixes (D1–D7 of docs/admission.md). Each
// failed while its defect was there and passes since its fix (docs/admission.md, "Review"); all assert from state (CSR
// conditions and certificates, Secrets and Leases on the real control plane, files a script left, what a
// server received).
//  - high: the approver trusts any Lease named alicloud-kubeadm-admission-token-<id>; every principal that may
//    create Leases in kube-system (CCM, cluster autoscaler, any leader-electing controller there) maps a pending
//    CSR of an admission token, made after the approver listed CSRs, to a master's name: the CA signs it.
//    6d3cb9f keeps a used token's Lease (marked) until the token expires, which stops the immediate remap (that
//    test passes since) but the CSR stays pending (ignored, not denied) for 24 h: once the Lease is swept, the
//    same Lease `create` still maps it to a master (fails on 6d3cb9f).
//  - medium: curl --cacert keeps the default CA path (Debian/Ubuntu): the CA pin of the bootstrap, the one-liner
//    and the pool client also trusts every CA of /etc/ssl/certs.
//  - low: two CSRs of one admission token listed in one pass were both approved (fixed by 6d3cb9f; passes since).
//  - low: the service account creates admitted-group tokens without expiration; it deletes any Lease in kube-system
//    and, since 6d3cb9f, updates any (takes over kube-controller-manager's leadership).
import * as assert from "assert";
import { execFileSync, spawn, spawnSync } from "child_process";
import * as crypto from "crypto";
import * as fs from "fs";
import * as http from "http";
import * as https from "https";
import type * as net from "net";
import * as os from "os";
import * as path from "path";
import { ADMITTED_GROUP, PROVIDER_ID_ANNOTATION, TOKEN_LABEL } from "../src/admission/approver";
import { approvePending, Kube, tokenLeaseName } from "../src/admission/kube";
import { CCM_NAMESPACE, CCM_ROLE_RULES } from "../src/components/podNetwork";
import { admissionAttachOneLiner, renderAdmissionBootstrap } from "../src/shell/renderAdmission";
import { makeServiceTls, type ServiceTls } from "../testing/admission/harness";
import { REGION, useAdmissionCluster } from "./admission/realCluster";

const MASTER = `${REGION}.i-master0`;

describe("review 15b: admission on the real control plane", function () {
    this.timeout(180_000);
    const ac = useAdmissionCluster([["i-pool1", "10.0.0.1"], ["i-pool2", "10.0.0.2"]]);
    const { rc, asToken, admitted, csrWithToken, csrOf } = ac;
    /** The subject of the certificate signed for `name`, once the signer has issued it (or why there is none). */
    async function signedSubject(name: string): Promise<string> {
        const approved = ((await csrOf(name)).status?.conditions ?? []).some((c) => c.type === "Approved");
        if (!approved) return "(not approved)";
        const cert = await rc.c.waitFor(`certificate of ${name}`, async () => (await csrOf(name)).status?.certificate, 30_000);
        return new crypto.X509Certificate(Buffer.from(cert, "base64")).subject.replace(/\n/g, ", ");
    }

    /** A credential with the CCM's own RBAC from this repo: `create` on every Lease of kube-system (client-go leader election needs it). */
    async function ccmCredential(): Promise<string> {
        const ccm = "review15b-ccm";
        await rc.c.apply([
            { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: ccm, namespace: CCM_NAMESPACE } },
            { apiVersion: "rbac.authorization.k8s.io/v1", kind: "Role", metadata: { name: ccm, namespace: CCM_NAMESPACE }, rules: CCM_ROLE_RULES },
            { apiVersion: "rbac.authorization.k8s.io/v1", kind: "RoleBinding", metadata: { name: ccm, namespace: CCM_NAMESPACE },
                roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: ccm }, subjects: [{ kind: "ServiceAccount", name: ccm, namespace: CCM_NAMESPACE }] },
        ]);
        return (await rc.c.kubectl(["create", "token", ccm, "-n", CCM_NAMESPACE, "--duration", "1h"])).trim();
    }
    /** A pool node's admission token, and a second CSR for a master's name made with it while the approver's pass decides its first. */
    async function racedCsr(ttlSeconds?: number): Promise<{ tokenId: string; own: string; evil: string }> {
        const token = await admitted("i-pool1", "10.0.0.1", ttlSeconds);
        const own = await csrWithToken(token, `system:node:${REGION}.i-pool1`);
        let evil = "";
        const racing = {
            request: async (method: string, path: string, body?: unknown) => {
                const r = await ac.kube.request(method, path, body);
                if (!evil && method === "GET" && path.startsWith("/apis/certificates.k8s.io/v1/certificatesigningrequests?")) evil = await csrWithToken(token, `system:node:${MASTER}`);
                return r;
            },
            close: () => undefined,
        } as unknown as Kube;
        const first = await approvePending(racing, () => undefined);
        assert.strictEqual(first[own], "approve");
        assert.ok(evil && first[evil] === undefined, "the second CSR was made after the pass listed CSRs");
        return { tokenId: token.split(".")[0], own, evil };
    }

    it("a CSR of a used admission token is denied at once, not left pending until its token's Lease is swept (when a Lease made by the CCM's account could map it)", async () => {
        const { evil } = await racedCsr(3);
        assert.deepStrictEqual((await approvePending(ac.kube, () => undefined))[evil], "deny");
        const csr = await csrOf(evil);
        assert.ok((csr.status?.conditions ?? []).some((c) => c.type === "Denied"), "decided: nothing later can approve it");
        assert.strictEqual(await signedSubject(evil), "(not approved)");
    });

    it("a Lease made by another kube-system principal (the CCM's service account) cannot name a token's node: only the service writes its Leases", async () => {
        const ccmToken = await ccmCredential();
        const leaseFor = (name: string, providerId?: string) => JSON.stringify({
            apiVersion: "coordination.k8s.io/v1", kind: "Lease",
            metadata: { name, namespace: "kube-system", labels: { [TOKEN_LABEL]: "true" }, ...(providerId ? { annotations: { [PROVIDER_ID_ANNOTATION]: providerId } } : {}) },
            spec: { holderIdentity: "x", leaseDurationSeconds: 600 },
        });
        // The API server enforces a new policy once it has compiled it (about a second): a fresh token id each try.
        await ac.policyInForce("alicloud-kubeadm-admission-leases",
            () => asToken(ccmToken, ["create", "-f", "-"], { allowFail: true, input: leaseFor(tokenLeaseName(crypto.randomBytes(3).toString("hex")), MASTER) }));
        // Its own leader election is untouched by the policy.
        const own = await asToken(ccmToken, ["create", "-f", "-"], { allowFail: true, input: leaseFor(`review15b-ccm-${crypto.randomBytes(3).toString("hex")}`) });
        assert.strictEqual(own.code, 0, own.stderr);
    });

    it("an admission token is single use: two CSRs for its node listed in one pass get one certificate, not two", async () => {
        const token = await admitted("i-pool2", "10.0.0.2");
        const a = await csrWithToken(token, `system:node:${REGION}.i-pool2`);
        const b = await csrWithToken(token, `system:node:${REGION}.i-pool2`);
        await approvePending(ac.kube, () => undefined);
        const approved = [];
        for (const n of [a, b]) if (((await csrOf(n)).status?.conditions ?? []).some((c) => c.type === "Approved")) approved.push(n);
        assert.ok(approved.length <= 1, `one admission token got ${approved.length} approved kubelet client certificates: ${approved.join(", ")}`);
    });

    const saRun = (args: string[], input?: string) => asToken(ac.saToken, args, { allowFail: true, input });
    async function policyInForce(): Promise<void> {
        await rc.c.waitFor("the Secret policy in force", async () => (await saRun(["create", "-f", "-"], JSON.stringify({ apiVersion: "v1", kind: "Secret", type: "Opaque",
            metadata: { name: `probe-${crypto.randomBytes(3).toString("hex")}`, namespace: "kube-system" } }))).stderr.includes("alicloud-kubeadm-admission-secrets") || undefined, 30_000);
    }

    it("the service's credential cannot create a bootstrap token that never expires (the policy does not look at the expiration)", async () => {
        await policyInForce();
        const id = crypto.randomBytes(3).toString("hex");
        // Labelled, named, typed and grouped as the policy wants: only the expiration is missing.
        await saRun(["create", "-f", "-"], JSON.stringify({
            apiVersion: "v1", kind: "Secret", type: "bootstrap.kubernetes.io/token", metadata: { name: `bootstrap-token-${id}`, namespace: "kube-system", labels: { [TOKEN_LABEL]: "true" } },
            stringData: { "token-id": id, "token-secret": "0123456789abcdef", "usage-bootstrap-authentication": "true", "auth-extra-groups": ADMITTED_GROUP },
        }));
        const exists = (await rc.c.kubectl(["get", "secret", "-n", "kube-system", `bootstrap-token-${id}`, "--ignore-not-found", "-o", "name"])).trim() !== "";
        assert.strictEqual(exists, false, `bootstrap-token-${id}: a token of the admitted group without expiration was created by the service's account`);
    });

    it("the service's credential cannot delete another component's Lease in kube-system (kube-controller-manager's leader election)", async () => {
        const uid = async () => (await rc.c.kubectl(["get", "lease", "-n", "kube-system", "kube-controller-manager", "--ignore-not-found", "-o", "jsonpath={.metadata.uid}"])).trim();
        const before = await rc.c.waitFor("kube-controller-manager's Lease", async () => (await uid()) || undefined, 60_000);
        await saRun(["delete", "lease", "-n", "kube-system", "kube-controller-manager", "--wait=false"]);
        // Deleted, the leader recreates it (a new uid): the uid tells whether the delete went through.
        await new Promise((r) => setTimeout(r, 1000));
        assert.strictEqual(await uid(), before, "the service account deleted kube-controller-manager's Lease (it may then create it with a holder of its own)");
    });

    // Last in this describe: a lost Lease makes the controller-manager exit (it is restarted by nothing here).
    it("the service's credential cannot take over kube-controller-manager's leader-election Lease (update, granted for marking tokens used)", async () => {
        const lease = JSON.parse(await rc.c.kubectl(["get", "lease", "-n", "kube-system", "kube-controller-manager", "-o", "json"])) as { spec: Record<string, unknown> };
        lease.spec.holderIdentity = "review15b-attacker";
        lease.spec.leaseDurationSeconds = 1_000_000;
        await saRun(["replace", "-f", "-"], JSON.stringify(lease));
        const holder = (await rc.c.kubectl(["get", "lease", "-n", "kube-system", "kube-controller-manager", "-o", "jsonpath={.spec.holderIdentity}"])).trim();
        assert.notStrictEqual(holder, "review15b-attacker", "the service account holds kube-controller-manager's leadership (for 11 days): no controller runs, no CSR is signed");
    });
});

describe("review 15b: the CA pin on the node", function () {
    this.timeout(120_000);
    let dir: string;
    let real: ServiceTls;
    let evil: { caPem: string; certPem: string; keyPem: string };
    let store: string;

    // curl's `--cacert` replaces only the CA file: a curl built with a default CA path (Debian and Ubuntu's,
    // /etc/ssl/certs) still trusts every CA there. The tests run the node's scripts in a private mount namespace
    // whose /etc/ssl/certs holds one CA of the attacker's (standing in for any CA of the image's trust store).
    before(function () {
        if (spawnSync("unshare", ["-m", "--propagation", "private", "true"]).status !== 0) this.skip();
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "ak-review15b-"));
        real = makeServiceTls();
        // The attacker's CA is named differently from the cluster's ("kubernetes"), as any third-party CA is.
        const evilDir = fs.mkdtempSync(path.join(dir, "evil-"));
        const ossl = (args: string[]) => execFileSync("openssl", args, { cwd: evilDir, stdio: "pipe" });
        ossl(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-subj", "/CN=Some Trusted Root CA", "-days", "2"]);
        ossl(["req", "-newkey", "rsa:2048", "-nodes", "-keyout", "serving.key", "-out", "serving.csr", "-subj", "/CN=10.0.0.10"]);
        fs.writeFileSync(path.join(evilDir, "san.ext"), "subjectAltName=IP:127.0.0.1\n");
        ossl(["x509", "-req", "-in", "serving.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-set_serial", "9", "-out", "serving.pem", "-days", "2", "-extfile", "san.ext"]);
        evil = { caPem: fs.readFileSync(path.join(evilDir, "ca.pem"), "utf8"), certPem: fs.readFileSync(path.join(evilDir, "serving.pem"), "utf8"),
            keyPem: fs.readFileSync(path.join(evilDir, "serving.key"), "utf8") };
        store = fs.mkdtempSync(path.join(dir, "store-"));
        fs.writeFileSync(path.join(store, "evil.pem"), evil.caPem);
        execFileSync("openssl", ["rehash", store]);
    });
    after(() => { if (dir) fs.rmSync(dir, { recursive: true, force: true }); });

    /** An on-path server at the master's address: the service's real (public) certificate at /admission.crt, so the pin matches; its own serving certificate. */
    async function onPath(handle: (req: http.IncomingMessage, res: http.ServerResponse) => void): Promise<{ endpoint: string; close(): Promise<void> }> {
        const server = https.createServer({ cert: evil.certPem, key: evil.keyPem }, (req, res) => {
            if (req.url === "/admission.crt") res.end(real.certPem);
            else handle(req, res);
        });
        await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
        return {
            endpoint: `127.0.0.1:${(server.address() as net.AddressInfo).port}`,
            close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
        };
    }
    const inNamespace = (script: string) => new Promise<void>((resolve) => spawn("unshare", ["-m", "--propagation", "private", "bash", "-c",
        `mount --bind ${store} /etc/ssl/certs && ${script}`], { stdio: "ignore" }).on("exit", () => resolve()));

    it("the saved bootstrap and the one-liner trust only the pinned certificate, not also the system CA path", async () => {
        const marker = path.join(dir, "pwned");
        const server = await onPath((req, res) => {
            if (req.url === "/attach.sh") res.end(`#!/bin/bash\necho attacker > ${marker}\n`);
            else { res.writeHead(404); res.end(); }
        });
        try {
            fs.writeFileSync(path.join(dir, "bootstrap.sh"), renderAdmissionBootstrap([server.endpoint], real.pin).replace(/'\{\{(labels|taints|channel)\}\}'/g, "''"));
            await inNamespace(`bash ${path.join(dir, "bootstrap.sh")}`);
            const viaBootstrap = fs.existsSync(marker);
            fs.rmSync(marker, { force: true });
            fs.writeFileSync(path.join(dir, "oneliner.sh"), admissionAttachOneLiner([server.endpoint], real.pin));
            await inNamespace(`bash ${path.join(dir, "oneliner.sh")}`);
            const viaOneLiner = fs.existsSync(marker);
            assert.deepStrictEqual({ viaBootstrap, viaOneLiner }, { viaBootstrap: false, viaOneLiner: false },
                "a script served under a certificate of a CA from the system CA path (not the pinned one) ran as root");
        } finally {
            await server.close();
        }
    });

    it("the pool's admission client sends its signed identity only to the server with the pinned key, not to one of the system CA path", async () => {
        const received: string[] = [];
        const server = await onPath((req, res) => {
            received.push(`${req.method} ${req.url}`);
            if (req.url === "/challenge") res.end(`ak1.${Math.floor(Date.now() / 1000) + 120}.${"A".repeat(22)}.${"B".repeat(43)}\n`);
            else if (req.url === "/admit") { req.resume(); req.on("end", () => res.end('{"token":"evilid.0123456789abcdef"}')); }
            else { res.writeHead(404); res.end(); }
        });
        const metadata = http.createServer((_req, res) => res.end("{\"instance-id\":\"i-pool1\"}"));
        await new Promise<void>((r) => metadata.listen(0, "127.0.0.1", () => r()));
        try {
            const state = fs.mkdtempSync(path.join(dir, "state-"));
            fs.writeFileSync(path.join(dir, "client.sh"), [
                "set -euo pipefail",
                `source ${JSON.stringify(path.join(__dirname, "..", "src", "shell", "admission_client.sh"))}`,
                "ak_log() { :; }; ak_die() { exit 1; }; ak_mark() { :; }",
                `AK_ADMISSION_ENDPOINTS=${server.endpoint} AK_ADMISSION_PIN=${real.pin} AK_STATE_DIR=${state} AK_ROOT=""`,
                `AK_METADATA=http://127.0.0.1:${(metadata.address() as net.AddressInfo).port}/latest AK_ADMISSION_ATTEMPTS=1 AK_RETRY_DELAY=0`,
                `ak_admission_token && printf %s "$AK_BOOTSTRAP_TOKEN" > ${state}/token || true`,
            ].join("\n"));
            await inNamespace(`bash ${path.join(dir, "client.sh")}`);
            const token = fs.existsSync(path.join(state, "token")) ? fs.readFileSync(path.join(state, "token"), "utf8") : "";
            assert.deepStrictEqual({ admitPosted: received.includes("POST /admit"), token }, { admitPosted: false, token: "" },
                "the signed identity went to, and a token came from, a server whose certificate a CA of the system CA path signed");
        } finally {
            await server.close();
            await new Promise<void>((r) => { metadata.closeAllConnections(); metadata.close(() => r()); });
        }
    });
});
