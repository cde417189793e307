// World: a local HTTPS server with an openssl-made CA standing in for the API server; no cluster, no cloud.
import * as assert from "assert";
import { execFileSync } from "child_process";
import * as fs from "fs";
import * as https from "https";
import type { AddressInfo } from "net";
import * as os from "os";
import * as path from "path";
import { clusterOf, waitForApiServer } from "../src/providers/apiServerReady";

/** A CA and a server certificate for 127.0.0.1, made with the openssl CLI. */
function pki(): { ca: string; key: string; cert: string } {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "pki-"));
    const f = (n: string) => path.join(dir, n);
    const run = (...args: string[]) => execFileSync("openssl", args, { stdio: "ignore" });
    run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", f("ca.key"), "-out", f("ca.crt"), "-days", "1", "-subj", "/CN=kubernetes");
    run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", f("srv.key"), "-out", f("srv.csr"), "-subj", "/CN=kube-apiserver");
    fs.writeFileSync(f("ext"), "subjectAltName=IP:127.0.0.1\n");
    run("x509", "-req", "-in", f("srv.csr"), "-CA", f("ca.crt"), "-CAkey", f("ca.key"), "-CAcreateserial", "-out", f("srv.crt"), "-days", "1", "-extfile", f("ext"));
    const out = { ca: fs.readFileSync(f("ca.crt"), "utf8"), key: fs.readFileSync(f("srv.key"), "utf8"), cert: fs.readFileSync(f("srv.crt"), "utf8") };
    fs.rmSync(dir, { recursive: true, force: true });
    return out;
}

const kubeconfig = (server: string, ca: string) => `apiVersion: v1
kind: Config
clusters:
- name: kubernetes
  cluster: {server: "${server}", certificate-authority-data: ${Buffer.from(ca).toString("base64")}}
contexts:
- name: admin
  context: {cluster: kubernetes, user: admin}
current-context: admin
users:
- name: admin
  user: {}
`;

describe("ApiServerReady", () => {
    const keys = pki();
    let server: https.Server;
    let answers: Array<[number, string]>;
    let url: string;
    let paths: string[];

    beforeEach(async () => {
        answers = [];
        paths = [];
        server = https.createServer({ key: keys.key, cert: keys.cert }, (req, res) => {
            paths.push(req.url ?? "");
            const [status, body] = answers.shift() ?? [200, "ok"];
            res.writeHead(status).end(body);
        });
        await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
        url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    afterEach(() => new Promise<void>((r) => server.close(() => r())));

    it("waits until /readyz answers ok, verifying the server against the kubeconfig's CA", async () => {
        answers = [[500, "[-]etcd failed: reason withheld\nreadyz check failed"], [500, "readyz check failed"]];
        const progress: string[] = [];
        await waitForApiServer({ kubeconfig: kubeconfig(url, keys.ca), pollSeconds: 0.02, timeoutSeconds: 5 }, (m) => progress.push(m));
        assert.deepStrictEqual(paths, ["/readyz", "/readyz", "/readyz"]);
        assert.match(progress[0], /waiting for the API server at https:\/\/127\.0\.0\.1:\d+ \/readyz: HTTP 500: .*readyz check failed/);
        assert.match(progress[progress.length - 1], /is ready/);
    });

    it("never trusts a server the CA did not sign, and says what to check after the bound", async () => {
        const other = pki();
        await assert.rejects(waitForApiServer({ kubeconfig: kubeconfig(url, other.ca), pollSeconds: 0.05, timeoutSeconds: 0.3 }),
            /not ready within .*last: .*(certificate|signature).*apiAllowedCidrs/s);
        assert.deepStrictEqual(paths, [], "no request completed without a verified certificate");
    });

    it("reads the current context's cluster", () => {
        const c = clusterOf(kubeconfig("https://10.0.0.1:6443", keys.ca));
        assert.strictEqual(c.server, "https://10.0.0.1:6443");
        assert.strictEqual(c.ca, keys.ca);
        assert.throws(() => clusterOf("apiVersion: v1\nkind: Config\n"), /no cluster server/);
    });
});
