// The admission service: HTTPS on the masters' private IPs (host network, port 10443), one replica per master, with
// its own key and a certificate for the masters' addresses (src/providers/admissionCertificate.ts).
//   GET  /admission.crt  that certificate (public; the node checks its key against the pin of its userdata, then trusts only it)
//   GET  /challenge  a fresh challenge bound to the caller's address
//   POST /admit      {document, signature, audience} (JSON or form) → 200 {token, expiresAt} | 403 {reason, message, advice}
//   GET  /attach.sh  the attach script of the manual one-line path (no secret in it), when enabled
//   GET  /healthz
// Runs the CSR approver and the pool labeller (a pass a second), re-reads the allowed pools, sweeps used challenges. Node built-ins only: this folder is shipped compiled
// in a ConfigMap and run by a pinned public Node.js image (src/components/admission.ts).
import * as fs from "fs";
import * as https from "https";
import type * as net from "net";
import * as tls from "tls";
import { admit, REFUSAL_ADVICE, type AdmissionSettings, type ClusterView, type CloudView } from "./admit";
import { issueChallenge } from "./challenge";
import { AlibabaCloudView, type CloudSettings } from "./cloud";
import { approvePending, challengeKeys, inClusterAccess, Kube, KubeClusterView, KubePoolSource, labelAdmittedNodes } from "./kube";
import { trustedSigners } from "./pkcs7";

/** Port of the admission service on every master (issue 14's security groups open it from the node vSwitches). */
export const ADMISSION_PORT = 10443;

export interface ServerOptions {
    settings: AdmissionSettings;
    cloud: CloudView;
    cluster: ClusterView;
    /** The service's certificate and key (PEM), read again on change (rotation); the certificate is served at /admission.crt. */
    tls: () => { cert: string | Buffer; key: string | Buffer };
    /** Manual attach script, served at /attach.sh when set. */
    attachScript?: string;
    host?: string;
    port?: number;
}

export interface RunningServer {
    port: number;
    server: https.Server;
    /** Re-reads the serving certificate (called periodically in production). */
    reloadTls(): void;
    close(): Promise<void>;
}

function clientIp(socket: net.Socket): string {
    return (socket.remoteAddress ?? "").replace(/^::ffff:/, "");
}

export function startServer(o: ServerOptions): Promise<RunningServer> {
    let current = o.tls();
    const server = https.createServer({ ...current, minVersion: "TLSv1.2" }, (req, res) => {
        const send = (status: number, body: string | object, type = "application/json"): void => {
            const text = typeof body === "string" ? body : JSON.stringify(body);
            res.writeHead(status, { "content-type": type, "cache-control": "no-store" });
            res.end(text);
        };
        const ip = clientIp(req.socket);
        const url = (req.url ?? "/").split("?")[0];
        if (req.method === "GET" && url === "/healthz") return send(200, "ok\n", "text/plain");
        if (req.method === "GET" && url === "/admission.crt") return send(200, current.cert.toString(), "application/x-pem-file");
        if (req.method === "GET" && url === "/challenge") {
            return send(200, issueChallenge(o.settings.challengeKeys[0], ip, o.settings.challengeTtlSeconds) + "\n", "text/plain");
        }
        if (req.method === "GET" && url === "/attach.sh" && o.attachScript) return send(200, o.attachScript, "text/x-shellscript");
        if (req.method === "POST" && url === "/admit") {
            const chunks: Buffer[] = [];
            let size = 0;
            req.on("data", (c: Buffer) => {
                size += c.length;
                if (size > 64 * 1024) req.destroy();
                else chunks.push(c);
            });
            req.on("end", () => {
                // JSON, or a form (what the node's curl --data-urlencode sends).
                const text = Buffer.concat(chunks).toString("utf8");
                let body: unknown;
                try {
                    body = /^application\/x-www-form-urlencoded/.test(req.headers["content-type"] ?? "")
                        ? Object.fromEntries(new URLSearchParams(text)) : JSON.parse(text);
                } catch {
                    body = undefined;
                }
                void admit(body as never, ip, o.settings, o.cloud, o.cluster).then((r) => r.admitted
                    ? send(200, { token: r.token, expiresAt: r.expiresAt, providerId: r.providerId })
                    : send(r.reason === "internal" ? 503 : 403, { reason: r.reason, message: r.message, advice: REFUSAL_ADVICE[r.reason!] }));
            });
            return;
        }
        send(404, { message: "not found" });
    });
    return new Promise((resolve, reject) => {
        server.once("error", reject);
        server.listen(o.port ?? ADMISSION_PORT, o.host ?? "0.0.0.0", () => {
            const port = (server.address() as net.AddressInfo).port;
            resolve({
                port, server,
                reloadTls: () => {
                    const next = o.tls();
                    server.setSecureContext({ ...next, minVersion: "TLSv1.2" } as tls.SecureContextOptions);
                    current = next;
                },
                close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
            });
        });
    });
}

/** The service's config file (written by src/components/admission.ts into the ConfigMap). */
export interface ServiceConfig {
    accountId: string;
    regionId: string;
    /** Existing node instance id → pool label value. (The pools' scaling groups are read from their registrations: kube.ts KubePoolSource.) */
    existingNodes: Record<string, string>;
    /** `key=value`: instances with this tag may join by the manual path. Default: off. */
    joinTag?: string;
    challengeTtlSeconds: number;
    tokenTtlSeconds: number;
    /** How stale an existing Node's heartbeat must be before its instance may be admitted again, seconds. */
    readmitAfterSeconds?: number;
    port: number;
    /** The service's certificate and key (mounted from its Secret). */
    tlsCertFile: string;
    tlsKeyFile: string;
    /** PEM of the trusted instance identity signing certificate(s) (the ConfigMap's `identity-signer.pem`). */
    signerFile: string;
    /** Manual attach script file, when the one-line path is enabled. */
    attachScriptFile?: string;
    /** Accept identity signatures with a SHA-1 digest. Default true. */
    allowSha1?: boolean;
    /** OpenAPI base URL override (tests). */
    cloudEndpoint?: string;
}

async function main(): Promise<void> {
    const configFile = process.argv[2] ?? "/etc/alicloud-kubeadm-admission/config.json";
    const c = JSON.parse(fs.readFileSync(configFile, "utf8")) as ServiceConfig;
    const kube = new Kube(inClusterAccess());
    const cluster = new KubeClusterView(kube);
    const pools = new KubePoolSource(kube);
    const cloudSettings: CloudSettings = { regionId: c.regionId, pools, existingNodes: c.existingNodes, joinTag: c.joinTag, endpoint: c.cloudEndpoint };
    const settings: AdmissionSettings = {
        accountId: c.accountId, regionId: c.regionId, signers: trustedSigners(fs.readFileSync(c.signerFile, "utf8")),
        challengeKeys: await challengeKeys(kube), challengeTtlSeconds: c.challengeTtlSeconds, tokenTtlSeconds: c.tokenTtlSeconds,
        readmitAfterSeconds: c.readmitAfterSeconds, allowSha1: c.allowSha1 !== false,
    };
    const readTls = () => ({ cert: fs.readFileSync(c.tlsCertFile), key: fs.readFileSync(c.tlsKeyFile) });
    const running = await startServer({
        settings, cloud: new AlibabaCloudView(cloudSettings), cluster, tls: readTls,
        attachScript: c.attachScriptFile ? fs.readFileSync(c.attachScriptFile, "utf8") : undefined, port: c.port,
    });
    const say = (event: Record<string, unknown>) => process.stdout.write(JSON.stringify(event) + "\n");
    say({ event: "started", port: running.port, signers: settings.signers.map((s) => s.certificate.subject), pools: [...(await pools.groups().catch(() => new Map())).values()] });
    // Pools attached later (another program's NodePool) are read when a node names their group, and every 30 s.
    setInterval(() => void pools.refresh().catch((e) => say({ event: "pools", error: (e as Error).message })), 30_000).unref();
    let lastMtime = fs.statSync(c.tlsCertFile).mtimeMs;
    setInterval(() => {
        // A renewal rewrites the files: one missing or half-written for a moment is tried again next minute.
        try {
            const m = fs.statSync(c.tlsCertFile).mtimeMs;
            if (m !== lastMtime) {
                running.reloadTls();
                lastMtime = m;
                process.stdout.write(JSON.stringify({ event: "tls-reloaded", file: c.tlsCertFile }) + "\n");
            }
        } catch (e) {
            process.stdout.write(JSON.stringify({ event: "tls-reload-failed", file: c.tlsCertFile, error: (e as Error).message }) + "\n");
        }
    }, 60_000).unref();
    const approve = async (): Promise<void> => {
        try {
            await approvePending(kube);
        } catch (e) {
            say({ event: "csr", error: (e as Error).message });
        }
        try {
            await labelAdmittedNodes(kube);
        } catch (e) {
            say({ event: "node-labelled", error: (e as Error).message });
        }
        setTimeout(approve, 1000);
    };
    void approve();
    setInterval(() => void cluster.sweepClaims().catch(() => undefined), 5 * 60_000).unref();
}

if (require.main === module) {
    main().catch((e) => {
        process.stderr.write(`admission service failed to start: ${(e as Error).stack ?? e}\n`);
        process.exit(1);
    });
}
