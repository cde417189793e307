/**
 * `npm run bench -- admission`: the time admission adds to a node's join, and 100 concurrent joins.
 *
 * Everything on loopback: the admission server (src/admission/server.ts) with a serving certificate from a test
 * cluster CA, membership read from the OpenAPI emulator with signed requests (ESS DescribeScalingInstances, ECS
 * DescribeInstances), the API server side modelled in memory, and a metadata-service stand-in that signs each
 * identity document with openssl (a test CA standing in for Alibaba's). Each node has its own loopback address
 * (127.0.0.N), which is its private IP in the emulator, so the source-address check is real.
 *
 * 1. Added per join: the real shell client (admission_client.sh) run 5 times in sequence; the time minus the
 *    stand-in's signing (Alibaba signs on its side) is what admission adds before `kubeadm join`. Target ≤ 1 s.
 * 2. 100 concurrent joins (a TypeScript client doing what the shell client does): all admitted, 100 distinct
 *    tokens, each challenge claimed once; replaying every request is refused. Throws when a target is missed.
 */
import { spawn } from "child_process";
import * as crypto from "crypto";
import * as fs from "fs";
import * as https from "https";
import * as os from "os";
import * as path from "path";
import { trustedSigners } from "../src/admission/pkcs7";
import { startServer } from "../src/admission/server";
import { AlibabaCloudView, StaticPools } from "../src/admission/cloud";
import type { AdmissionSettings } from "../src/admission/admit";
import { makePki } from "../testing/admission/pki";
import { makeClusterCa, startMetadata, type Instance } from "../testing/admission/harness";
import { ModelCluster } from "../testing/admission/model";
import { startEmulator, TEST_CREDENTIALS } from "../testing/emulator";

const ACCOUNT = "1234567890123456";
const REGION = "cn-hangzhou";
const CONCURRENT = 100;
const TARGET_MS = 1000;

function get(url: string, ca: string, localAddress: string, body?: string): Promise<{ status: number; text: string }> {
    return new Promise((resolve, reject) => {
        const req = https.request(url, {
            method: body ? "POST" : "GET", ca, localAddress, agent: false,
            headers: body ? { "content-type": "application/x-www-form-urlencoded" } : {},
        }, (res) => {
            let text = "";
            res.on("data", (d: Buffer) => { text += d.toString(); });
            res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
        });
        req.on("error", reject);
        req.end(body);
    });
}

function median(xs: number[]): number {
    const s = [...xs].sort((a, b) => a - b);
    return s[Math.floor(s.length / 2)];
}

export async function main(): Promise<void> {
    process.env.AK_ADMISSION_LOG = "off";
    process.env.ALIBABA_CLOUD_ACCESS_KEY_ID = TEST_CREDENTIALS.accessKeyId;
    process.env.ALIBABA_CLOUD_ACCESS_KEY_SECRET = TEST_CREDENTIALS.accessKeySecret;
    const pki = makePki();
    const ca = makeClusterCa(pki.dir);
    const emu = await startEmulator();
    const group = emu.addScalingGroup({ desiredCapacity: CONCURRENT + 1, maxSize: CONCURRENT + 1 });
    const ids = emu.scalingGroupInstances(group.scalingGroupId);
    const instances = new Map<string, Instance>();
    ids.forEach((id, k) => {
        const ip = `127.0.0.${k + 1}`;
        emu.state.instances.get(id)!.privateIp = ip;
        instances.set(ip, { instanceId: id, ip, accountId: ACCOUNT, regionId: REGION });
    });
    const cluster = new ModelCluster();
    const settings: AdmissionSettings = {
        accountId: ACCOUNT, regionId: REGION, signers: trustedSigners(pki.signerPem), challengeKeys: [crypto.randomBytes(32)], challengeTtlSeconds: 120, tokenTtlSeconds: 900,
    };
    const cloudView = new AlibabaCloudView({ regionId: REGION, endpoint: emu.endpoint, pools: new StaticPools({ [group.scalingGroupId]: "general" }), existingNodes: {} });
    const cloudMs: number[] = [];
    const cloud = { member: async (id: string) => { const t = Date.now(); try { return await cloudView.member(id); } finally { cloudMs.push(Date.now() - t); } } };
    const server = await startServer({ settings, cloud, cluster, tls: () => ({ cert: ca.certPem, key: ca.keyPem }), host: "127.0.0.1", port: 0 });
    const metadata = await startMetadata(pki, instances);
    const endpoint = `127.0.0.1:${server.port}`;
    try {
        // 1. The shell client, in sequence, as node 127.0.0.1.
        const shell = path.join(__dirname, "..", "src", "shell");
        const added: number[] = [];
        for (let i = 0; i < 5; i++) {
            const root = fs.mkdtempSync(path.join(os.tmpdir(), "ak-bench-admission-"));
            const signed = metadata.signMs.length;
            const t = Date.now();
            const script = [`source ${JSON.stringify(path.join(shell, "prepare_node.sh"))}`, `source ${JSON.stringify(path.join(shell, "admission_client.sh"))}`,
                `AK_METADATA=${JSON.stringify(metadata.url)}`, `AK_ADMISSION_ENDPOINTS=${endpoint}`, `AK_CA_CERT_HASHES=${ca.caHash}`,
                "mkdir -p \"$AK_STATE_DIR\"", "ak_imds_token", "ak_admission_token"].join("\n");
            const child = spawn("bash", ["-c", script], { env: { ...process.env, AK_ROOT: root, AK_RETRY_DELAY: "0", AK_ADMISSION_ATTEMPTS: "1" }, stdio: "ignore" });
            const code = await new Promise<number | null>((r) => child.on("close", r));
            const wall = Date.now() - t;
            fs.rmSync(root, { recursive: true, force: true });
            if (code !== 0) throw new Error(`the shell client was refused (exit ${code})`);
            const signing = metadata.signMs.slice(signed).reduce((a, b) => a + b, 0);
            added.push(wall - signing);
            cluster.nodes.set(`${REGION}.${ids[0]}`, { ready: false }); // a re-join of a NotReady node stays admissible
        }
        const perJoin = median(added);
        console.log(`admission added per join (shell client, median of 5, without the stand-in's signing): ${perJoin} ms (target <= ${TARGET_MS} ms)`);

        // 2. 100 concurrent joins, each node from its own address.
        const signedBefore = metadata.signMs.length;
        const t0 = Date.now();
        const nodes = [...instances.values()].slice(1);
        const requests = new Map<string, string>();
        const results = await Promise.all(nodes.map(async (n) => {
            const start = Date.now();
            const challenge = (await get(`https://${endpoint}/challenge`, ca.caPem, n.ip)).text.trim();
            const meta = (p: string) => new Promise<string>((resolve, reject) => {
                const req = require("http").request(`${metadata.url}/dynamic/instance-identity/${p}`, { localAddress: n.ip, agent: false }, (res: import("http").IncomingMessage) => {
                    let text = "";
                    res.on("data", (d: Buffer) => { text += d.toString(); });
                    res.on("end", () => resolve(text));
                });
                req.on("error", reject);
                req.end();
            });
            const document = await meta("document");
            const signature = await meta(`pkcs7?audience=${challenge}`);
            const body = new URLSearchParams({ document, signature, audience: challenge }).toString();
            requests.set(n.ip, body);
            const a = Date.now();
            const r = await get(`https://${endpoint}/admit`, ca.caPem, n.ip, body);
            return { status: r.status, token: r.status === 200 ? (JSON.parse(r.text) as { token: string }).token : undefined, ms: Date.now() - start, admitMs: Date.now() - a, text: r.text };
        }));
        const wall = Date.now() - t0;
        const admitted = results.filter((r) => r.status === 200);
        const tokens = new Set(admitted.map((r) => r.token));
        const signingMs = metadata.signMs.slice(signedBefore);
        console.log(`${CONCURRENT} concurrent joins: ${admitted.length} admitted, ${tokens.size} distinct tokens, ${cluster.leases.size} challenges claimed once; ` +
            `wall ${wall} ms; per join median ${median(results.map((r) => r.ms))} ms, max ${Math.max(...results.map((r) => r.ms))} ms ` +
            `(of which the stand-in's openssl signing: median ${median(signingMs)} ms each, ${signingMs.length} signatures on ${os.cpus().length} cores); ` +
            `POST /admit median ${median(results.map((r) => r.admitMs))} ms, of which the cloud membership reads (emulator) median ${median(cloudMs.slice(-CONCURRENT))} ms`);
        const replays = await Promise.all(nodes.map((n) => get(`https://${endpoint}/admit`, ca.caPem, n.ip, requests.get(n.ip))));
        const replayRefused = replays.filter((r) => r.status === 403 && /challenge-replayed/.test(r.text)).length;
        console.log(`replaying all ${CONCURRENT} requests: ${replayRefused} refused as challenge-replayed, ${replays.filter((r) => r.status === 200).length} admitted`);
        const failures: string[] = [];
        if (perJoin > TARGET_MS) failures.push(`added per join ${perJoin} ms > ${TARGET_MS} ms`);
        if (admitted.length !== CONCURRENT) failures.push(`${CONCURRENT - admitted.length} of ${CONCURRENT} were not admitted: ${results.find((r) => r.status !== 200)?.text}`);
        if (tokens.size !== CONCURRENT) failures.push("tokens are not distinct");
        if (replayRefused !== CONCURRENT) failures.push("a replay was not refused");
        if (failures.length) throw new Error(`admission bench: ${failures.join("; ")}`);
    } finally {
        await server.close();
        await metadata.close();
        await emu.close();
        pki.cleanup();
    }
}
