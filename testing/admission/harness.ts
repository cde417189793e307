// Shared by the node-side admission tests and `npm run bench -- admission`: the admission service's own key and
// certificate for 127.0.0.1 (made by the production AdmissionCertificate code), the admission server on it, a
// cluster CA (its pin is what kubeadm join checks), and a stand-in of the instance metadata service that serves
// each instance (told apart by its loopback source address, 127.0.0.N) its identity document and an openssl-made
// PKCS#7 signature for any audience.
import { execFileSync } from "child_process";
import * as crypto from "crypto";
import * as fs from "fs";
import * as http from "http";
import type * as net from "net";
import * as path from "path";
import { documentWithAudience, type AdmissionSettings } from "../../src/admission/admit";
import { trustedSigners } from "../../src/admission/pkcs7";
import { startServer, type RunningServer } from "../../src/admission/server";
import { newAdmissionKey, publicKeyPin, signAdmissionCertificate } from "../../src/providers/admissionCertificate";
import { ModelCloud, ModelCluster } from "./model";
import { makePki, type TestPki } from "./pki";

export interface ClusterCa { caPem: string; certPem: string; keyPem: string; caHash: string }

/** A cluster CA and a serving certificate for IP 127.0.0.1 signed by it. */
export function makeClusterCa(dir: string): ClusterCa {
    const run = (args: string[]) => execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });
    run(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "cluster-ca.key", "-out", "cluster-ca.pem", "-subj", "/CN=kubernetes", "-days", "2"]);
    run(["req", "-newkey", "rsa:2048", "-nodes", "-keyout", "serving.key", "-out", "serving.csr", "-subj", "/CN=kube-apiserver"]);
    fs.writeFileSync(path.join(dir, "san.ext"), "subjectAltName=IP:127.0.0.1\n");
    run(["x509", "-req", "-in", "serving.csr", "-CA", "cluster-ca.pem", "-CAkey", "cluster-ca.key", "-set_serial", "7", "-out", "serving.pem", "-days", "2", "-extfile", "san.ext"]);
    const caPem = fs.readFileSync(path.join(dir, "cluster-ca.pem"), "utf8");
    const spki = new crypto.X509Certificate(caPem).publicKey.export({ type: "spki", format: "der" });
    return {
        caPem, certPem: fs.readFileSync(path.join(dir, "serving.pem"), "utf8"), keyPem: fs.readFileSync(path.join(dir, "serving.key"), "utf8"),
        caHash: `sha256:${crypto.createHash("sha256").update(spki).digest("hex")}`,
    };
}

/** The admission service's TLS identity: its key, a certificate for its addresses, and the pin nodes carry. */
export interface ServiceTls { certPem: string; keyPem: string; pin: string }

/** A TLS identity for the admission service, as AdmissionCertificate makes it (default: for 127.0.0.1). */
export function makeServiceTls(addresses = ["127.0.0.1"]): ServiceTls {
    const keyPem = newAdmissionKey();
    return { keyPem, certPem: signAdmissionCertificate(keyPem, addresses).certPem, pin: publicKeyPin(keyPem) };
}

export interface Instance { instanceId: string; ip: string; accountId: string; regionId: string }

export function identityDocument(i: Instance): string {
    return JSON.stringify({
        "owner-account-id": i.accountId, "instance-id": i.instanceId, "mac": "00:16:3e:00:00:01", "region-id": i.regionId, "serial-number": i.instanceId,
        "zone-id": `${i.regionId}-h`, "instance-type": "ecs.g7.large", "image-id": "ubuntu_24_04_x64_20G_alibase_20250101.vhd", "private-ipv4": i.ip,
    });
}

/** The metadata service stand-in: /latest/dynamic/instance-identity/{document,pkcs7?audience=} per source address. */
export async function startMetadata(pki: TestPki, instances: Map<string, Instance>): Promise<{ url: string; close(): Promise<void>; signMs: number[] }> {
    const signMs: number[] = [];
    const server = http.createServer((req, res) => {
        const ip = (req.socket.remoteAddress ?? "").replace(/^::ffff:/, "");
        const inst = instances.get(ip);
        const url = new URL(req.url ?? "/", "http://x");
        if (!inst) { res.writeHead(404); res.end(); return; }
        if (req.method === "PUT" && url.pathname === "/latest/api/token") { res.end("imds-token"); return; }
        if (url.pathname === "/latest/dynamic/instance-identity/document") { res.end(identityDocument(inst)); return; }
        if (url.pathname === "/latest/dynamic/instance-identity/pkcs7") {
            const audience = url.searchParams.get("audience") ?? "";
            const t = Date.now();
            void pki.signAsync(documentWithAudience(identityDocument(inst), audience)).then((sig) => {
                signMs.push(Date.now() - t);
                res.end(sig);
            }, () => { res.writeHead(500); res.end(); });
            return;
        }
        res.writeHead(404);
        res.end();
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    return { url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/latest`, close: () => new Promise((r) => { server.closeAllConnections(); server.close(() => r()); }), signMs };
}

/** A test PKI, a cluster CA and the real admission server on 127.0.0.1 with modelled cloud and cluster. */
export interface LoopbackService {
    pki: TestPki;
    /** The cluster CA (its pin goes into the JoinConfiguration). */
    ca: ClusterCa;
    /** The service's own TLS identity (its pin is what the node trusts the service by). */
    tls: ServiceTls;
    cloud: ModelCloud;
    cluster: ModelCluster;
    server: RunningServer;
    close(): Promise<void>;
}

export async function startLoopbackService(opts: { accountId: string; regionId: string; attachScript?: string }): Promise<LoopbackService> {
    const pki = makePki();
    const ca = makeClusterCa(pki.dir);
    const cloud = new ModelCloud();
    const cluster = new ModelCluster();
    const settings: AdmissionSettings = {
        accountId: opts.accountId, regionId: opts.regionId, signers: trustedSigners(pki.signerPem), challengeKeys: [crypto.randomBytes(32)],
        challengeTtlSeconds: 120, tokenTtlSeconds: 600,
    };
    const tls = makeServiceTls();
    const server = await startServer({ settings, cloud, cluster, tls: () => ({ cert: tls.certPem, key: tls.keyPem }), host: "127.0.0.1", port: 0,
        attachScript: opts.attachScript });
    return { pki, ca, tls, cloud, cluster, server, close: async () => { await server.close(); pki.cleanup(); } };
}
