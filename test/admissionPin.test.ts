// The pin of the admission service's key on the node (src/shell/renderAdmission.ts, src/shell/admission_client.sh):
// the saved attach bootstrap, the one-line attach command and the pool's admission client trust the one certificate
// whose public key matches the pin, and nothing else: not another CA's certificate appended to /admission.crt, not a
// CA of the system's trust store. World:
// the real scripts under bash with the real curl and openssl, an on-path HTTPS server on loopback (and, for the
// trust store, a private mount namespace); asserted from the files a script left and what the server received.
import * as assert from "assert";
import { execFileSync, spawn, spawnSync } from "child_process";
import * as fs from "fs";
import * as http from "http";
import * as https from "https";
import type * as net from "net";
import * as os from "os";
import * as path from "path";
import { admissionAttachOneLiner, renderAdmissionBootstrap } from "../src/shell/renderAdmission";
import { makeClusterCa, makeServiceTls, type ServiceTls } from "../testing/admission/harness";

describe("the pin of the admission service's key on the node: another CA's certificate in /admission.crt is not trusted", function () {
    this.timeout(120_000);
    let dir: string;

    before(() => {
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "ak-ca-pin-bundle-"));
    });
    after(() => {
        if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });

    it("a bundle does not defeat the pin: the saved bootstrap and the one-liner run no script served under a certificate of another CA appended to /admission.crt", async () => {
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

    it("the pool's admission client sends its signed identity to, and takes a token from, no server of a CA appended to /admission.crt", async () => {
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
        const metadata = http.createServer((_req, res) => res.end("{\"instance-id\":\"i-pool1\"}"));
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
});

describe("the pin of the admission service's key on the node: the system CA path is not trusted too", function () {
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
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "ak-ca-pin-path-"));
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

describe("the one-line attach command", () => {
    it("the one-line attach command tries every master, not only master 0", () => {
        const pin = `sha256:${"a".repeat(64)}`;
        const line = admissionAttachOneLiner(["10.0.0.1:10443", "10.0.0.2:10443", "10.0.0.3:10443"], pin);
        assert.ok(line.includes("10.0.0.2:10443") || line.includes("10.0.0.3:10443"), `the one-liner only tries 10.0.0.1: ${line}`);
    });
});
