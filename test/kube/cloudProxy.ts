/**
 * Alibaba Cloud as a program inside the cluster's network namespace sees it, for add-ons that talk to the cloud
 * themselves (the Cluster Autoscaler): an HTTP proxy, reached through the standard HTTP_PROXY / HTTPS_PROXY
 * variables, that
 *
 * - forwards plain-HTTP OpenAPI requests to any `*.aliyuncs.com` host to the emulator (testing/emulator), which
 *   verifies their signatures and answers them;
 * - answers the metadata service (`http://100.100.100.200/latest/meta-data/...`): region, instance RAM role name
 *   and its STS credentials (the emulator's test AccessKey plus a security token);
 * - answers the Location service (`https://location.aliyuncs.com`, DescribeEndpoints), which the autoscaler's SDK
 *   asks for every product's endpoint: every product resolves to `<code>.<region>.aliyuncs.com`;
 * - terminates HTTPS to any `*.aliyuncs.com` host (a CONNECT tunnel) with a certificate of a test CA for that host
 *   (give the program `SSL_CERT_FILE` = {@link CloudProxy.caFile}) and answers it as above: the CCM calls OpenAPI over
 *   HTTPS, as its SDK does by default;
 * - refuses everything else, and records every host asked for ({@link CloudProxy.requests}).
 *
 * How the autoscaler's SDK finds endpoints and credentials, and why these standard variables suffice:
 * docs/upstream.md#autoscaler-endpoints.
 *
 * Nothing reaches the real cloud: the namespace has no route out, and the proxy answers or refuses every request.
 * With a network namespace the proxy listens on a unix socket in the run folder and a small bridge (a node
 * process started with `c.start`) listens on 127.0.0.1 inside the namespace; without one, on 127.0.0.1 directly.
 */
import { execFileSync } from "child_process";
import * as crypto from "crypto";
import * as fs from "fs";
import * as http from "http";
import * as net from "net";
import * as path from "path";
import * as tls from "tls";
import type { Emulator } from "../../testing/emulator";
import { TEST_CREDENTIALS } from "../../testing/emulator";
import type { Cluster } from "./cluster";

export interface CloudProxy {
    /** `http://127.0.0.1:<port>`, as processes in the cluster's network reach it: their HTTP_PROXY and HTTPS_PROXY. */
    url: string;
    /** PEM of the test CA that signs the Location service's certificate: their SSL_CERT_FILE. */
    caFile: string;
    /** The environment for such a process: the proxies and the CA. */
    env: Record<string, string>;
    /** `<METHOD> <host><path>` of every request, in order (CONNECT shown as `CONNECT host:port`). */
    requests: string[];
    stop(): Promise<void>;
}

/** The bridge inside the namespace: TCP 127.0.0.1:<port> → the unix socket. */
const BRIDGE = `
const net = require("net");
const [port, sock] = process.argv.slice(1);
net.createServer((c) => {
  const u = net.connect(sock);
  c.pipe(u); u.pipe(c);
  c.on("error", () => u.destroy()); u.on("error", () => c.destroy());
}).listen(Number(port), "127.0.0.1", () => console.log("bridge listening on 127.0.0.1:" + port));
`;

const LOCATION_HOSTS = ["location.aliyuncs.com", "location-readonly.aliyuncs.com"];

/** A test CA, and a certificate it signs for each host asked for (made with openssl, as the fixture makes node keys). */
function testCloudCa(dir: string): { caFile: string; certFor(host: string): { key: string; cert: string } } {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const f = (n: string) => path.join(dir, n);
    const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
    execFileSync("openssl", ["req", "-x509", ...ec, "-keyout", f("ca.key"), "-out", f("ca.crt"), "-days", "2", "-subj", "/CN=alicloud-kubeadm test cloud CA",
        "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"], { stdio: "pipe" });
    const made = new Map<string, { key: string; cert: string }>();
    return {
        caFile: f("ca.crt"),
        certFor(host) {
            const known = made.get(host);
            if (known) return known;
            execFileSync("openssl", ["req", ...ec, "-keyout", f(`${host}.key`), "-out", f(`${host}.csr`), "-subj", `/CN=${host}`], { stdio: "pipe" });
            fs.writeFileSync(f(`${host}.ext`), `subjectAltName=DNS:${host}\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n`);
            execFileSync("openssl", ["x509", "-req", "-in", f(`${host}.csr`), "-CA", f("ca.crt"), "-CAkey", f("ca.key"), "-CAcreateserial", "-out", f(`${host}.crt`),
                "-days", "2", "-extfile", f(`${host}.ext`)], { stdio: "pipe" });
            const pair = { key: fs.readFileSync(f(`${host}.key`), "utf8"), cert: fs.readFileSync(f(`${host}.crt`), "utf8") };
            made.set(host, pair);
            return pair;
        },
    };
}

/**
 * Starts the proxy for `c`'s network, forwarding OpenAPI requests to `emu`.
 * @param opts.region the metadata service's region-id, and the region of every endpoint
 * @param opts.roleName the instance RAM role the metadata service names (its credentials are the emulator's test AccessKey)
 * @param opts.metadata answers the metadata service instead (test/kube/metadata.ts, for the master's instance)
 */
export async function startCloudProxy(c: Cluster, emu: Emulator, opts: { region: string; roleName?: string; metadata?: (req: http.IncomingMessage, res: http.ServerResponse) => void }): Promise<CloudProxy> {
    const requests: string[] = [];
    const { caFile, certFor } = testCloudCa(c.path("cloud-proxy"));
    const emuPort = Number(new URL(emu.endpoint).port);
    const json = (res: http.ServerResponse, status: number, body: unknown) => {
        const text = typeof body === "string" ? body : JSON.stringify(body);
        res.writeHead(status, { "content-type": typeof body === "string" ? "text/plain" : "application/json" });
        res.end(text);
    };

    // Location, behind TLS: DescribeEndpoints(Id=<region>, ServiceCode=<code>) → <code>.<region>.aliyuncs.com
    const location = http.createServer((req, res) => {
        const u = new URL(req.url ?? "/", `https://${req.headers.host}`);
        requests.push(`${req.method} ${req.headers.host}${u.pathname}?Action=${u.searchParams.get("Action")}&ServiceCode=${u.searchParams.get("ServiceCode")}`);
        if (u.searchParams.get("Action") !== "DescribeEndpoints") return json(res, 404, { Code: "InvalidAction.NotFound", Message: "only DescribeEndpoints", Success: false });
        const code = (u.searchParams.get("ServiceCode") ?? "").toLowerCase();
        const region = u.searchParams.get("Id") ?? opts.region;
        json(res, 200, {
            RequestId: crypto.randomUUID().toUpperCase(), Success: true,
            Endpoints: { Endpoint: [{ Endpoint: `${code}.${region}.aliyuncs.com`, Id: region, Namespace: "", ServiceCode: code, Type: "openAPI", Protocols: { Protocols: ["HTTP", "HTTPS"] } }] },
        });
    });

    const metadata = (p: string, res: http.ServerResponse): void => {
        const base = "/latest/meta-data/";
        // the autoscaler's metadata client asks for `Ram/security-credentials/<role>` (capital R, as older ECS documents
        // spell it) after listing `ram/security-credentials/`: both spellings are served
        const item = (p.startsWith(base) ? p.slice(base.length) : "").replace(/^Ram\//, "ram/");
        if (item === "region-id") return json(res, 200, opts.region);
        if (item === "ram/security-credentials/" || item === "ram/security-credentials") return json(res, 200, opts.roleName);
        if (item === `ram/security-credentials/${opts.roleName}`) {
            const now = new Date();
            return json(res, 200, {
                AccessKeyId: TEST_CREDENTIALS.accessKeyId, AccessKeySecret: TEST_CREDENTIALS.accessKeySecret, SecurityToken: `emulator-sts-${crypto.randomBytes(8).toString("hex")}`,
                Expiration: new Date(now.getTime() + 3600_000).toISOString().replace(/\.\d+Z$/, "Z"), LastUpdated: now.toISOString().replace(/\.\d+Z$/, "Z"), Code: "Success",
            });
        }
        json(res, 404, "Not Found");
    };

    const toEmulator = (req: http.IncomingMessage, res: http.ServerResponse, host: string, pathAndQuery: string): void => {
        const fwd = http.request({ host: "127.0.0.1", port: emuPort, method: req.method, path: pathAndQuery, headers: { ...req.headers, host } }, (r) => {
            res.writeHead(r.statusCode ?? 502, r.headers);
            r.pipe(res);
        });
        fwd.on("error", (e) => json(res, 502, String(e)));
        req.pipe(fwd);
    };
    const front = http.createServer((req, res) => {
        let u: URL;
        try {
            u = new URL(req.url ?? "");
        } catch {
            requests.push(`${req.method} (not a proxy request) ${req.url}`);
            return json(res, 400, "proxy requests only");
        }
        requests.push(`${req.method} ${u.host}${u.pathname}`);
        if (u.hostname === "100.100.100.200") return opts.metadata ? opts.metadata(req, res) : metadata(u.pathname, res);
        if (!u.hostname.endsWith(".aliyuncs.com") || u.protocol !== "http:") return json(res, 502, `refused: ${u.host}`);
        toEmulator(req, res, u.host, `${u.pathname}${u.search}`);
    });
    // HTTPS to an OpenAPI host, once the tunnel is terminated: the same answers as over HTTP.
    const secureApi = http.createServer((req, res) => {
        const host = (req.headers.host ?? "").replace(/:443$/, "");
        requests.push(`${req.method} https://${host}${(req.url ?? "/").split("?")[0]}`);
        if (LOCATION_HOSTS.includes(host)) location.emit("request", req, res);
        else toEmulator(req, res, host, req.url ?? "/");
    });
    front.on("connect", (req: http.IncomingMessage, socket: net.Socket, head: Buffer) => {
        requests.push(`CONNECT ${req.url}`);
        const [host, port] = (req.url ?? "").split(":");
        if (!/^[a-z0-9.-]+\.aliyuncs\.com$/.test(host) || port !== "443") {
            socket.end("HTTP/1.1 403 Forbidden\r\n\r\n");
            return;
        }
        socket.write("HTTP/1.1 200 Connection Established\r\n\r\n");
        if (head.length) socket.unshift(head);
        const secure = new tls.TLSSocket(socket, { isServer: true, ...certFor(host) });
        secure.on("error", () => socket.destroy());
        secureApi.emit("connection", secure);
    });

    let bridge: { stop(): Promise<void> } | undefined;
    let url: string;
    if (c.netns) {
        const sock = c.path("cloud-proxy/proxy.sock");
        await new Promise<void>((resolve, reject) => { front.once("error", reject); front.listen(sock, () => resolve()); });
        const port = 18080;
        bridge = c.start("cloud-proxy-bridge", process.execPath, ["-e", BRIDGE, String(port), sock]);
        await c.waitFor("the cloud proxy bridge", async () => fs.readFileSync(c.path("logs/cloud-proxy-bridge.log"), "utf8").includes("listening"), 20_000);
        url = `http://127.0.0.1:${port}`;
    } else {
        await new Promise<void>((resolve, reject) => { front.once("error", reject); front.listen(0, "127.0.0.1", () => resolve()); });
        url = `http://127.0.0.1:${(front.address() as net.AddressInfo).port}`;
    }
    return {
        url, caFile, requests,
        env: { HTTP_PROXY: url, HTTPS_PROXY: url, http_proxy: url, https_proxy: url, NO_PROXY: "127.0.0.1,localhost", no_proxy: "127.0.0.1,localhost", SSL_CERT_FILE: caFile },
        stop: async () => {
            await bridge?.stop();
            front.closeAllConnections();
            await new Promise<void>((r) => front.close(() => r()));
        },
    };
}
