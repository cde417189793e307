/**
 * `npm run bench -- admission`: what admission adds to a node's join, and a burst of joins under an API rate limit,
 * with the cloud calls each costs. Prints numbers and PASS/FAIL.
 *
 * Everything on loopback: the admission server (src/admission/server.ts) with its own key and certificate (as
 * AdmissionCertificate makes them), membership read from the OpenAPI emulator with signed requests (ECS
 * DescribeInstances, ESS DescribeScalingInstances) through the production cloud view, the API server side modelled
 * in memory, and a metadata-service stand-in that signs each identity document with openssl (a test CA standing in
 * for Alibaba's). Each node has its own loopback address (127.0.0.N), its private IP in the emulator, so the
 * source-address check is real. Instances carry the tags ESS puts on them (its group id), as in the cloud.
 *
 * 1. Added per join, no rate limit, every cloud call answered after 50 ms: the real shell client
 *    (admission_client.sh) run 3 times in sequence by a member of the last of 1, 10 and 100 pools; the time minus
 *    the stand-in's signing (Alibaba signs on its side). Target ≤ 1 s each, and calls per join the same at every
 *    pool count.
 * 2. A burst: 100 nodes, each in its own pool (100 pools: nothing to share per group), asking at once, every
 *    action limited to 20 calls/s (`Throttling.User` beyond, `Emulator.rateLimit`) and 50 ms per call;
 *    each node retries a refusal as the shell client does (exponential backoff with jitter from 5 s). Target:
 *    all admitted within the admission share of the scale-up budget (docs/scale-up.md#admission), 100 distinct
 *    tokens, every challenge claimed once, and every replay refused.
 */
import { spawn } from "child_process";
import * as crypto from "crypto";
import * as fs from "fs";
import * as http from "http";
import * as https from "https";
import * as os from "os";
import * as path from "path";
import { trustedSigners } from "../src/admission/pkcs7";
import { startServer, type RunningServer } from "../src/admission/server";
import { AlibabaCloudView, StaticPools } from "../src/admission/cloud";
import type { AdmissionSettings } from "../src/admission/admit";
import { makePki, type TestPki } from "../testing/admission/pki";
import { makeServiceTls, startMetadata, type Instance, type ServiceTls } from "../testing/admission/harness";
import { ModelCluster } from "../testing/admission/model";
import { startEmulator, TEST_CREDENTIALS, type Emulator } from "../testing/emulator";

const ACCOUNT = "1234567890123456";
const REGION = "cn-hangzhou";
const CALL_LATENCY_MS = 50;
const PER_JOIN_TARGET_MS = 1000;
const BURST = 100;
const BURST_POOLS = 100;
const RATE_PER_ACTION = 20;
/** The admission share of the scale-up budget: every node of the burst admitted within this of its first request (docs/scale-up.md#admission). */
export const BURST_BUDGET_MS = 10_000;
const CLOUD_ACTIONS = ["DescribeInstances", "DescribeScalingInstances"];

function request(url: string, ca: string, localAddress: string, body?: string): Promise<{ status: number; text: string }> {
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

/** Calls answered Throttling.User since call `since`, per action. */
function throttledCalls(emu: Emulator, since: number): Record<string, number> {
    const out: Record<string, number> = {};
    for (const c of emu.calls.slice(since)) if (c.code === "Throttling.User") out[c.action] = (out[c.action] ?? 0) + 1;
    return out;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const callsOf = (emu: Emulator, since: number) => Object.fromEntries(CLOUD_ACTIONS.map((a) => [a, emu.calls.slice(since).filter((c) => c.action === a).length]));

interface World { emu: Emulator; server: RunningServer; cluster: ModelCluster; endpoint: string; close(): Promise<void> }

/** `pools` scaling groups of one member each, with loopback addresses; the last group's member is 127.0.0.1 (where the shell client calls from). */
async function world(pki: TestPki, tls: ServiceTls, pools: number, instances: Map<string, Instance>): Promise<World> {
    const emu = await startEmulator({ latencyMs: CALL_LATENCY_MS });
    const groups: Record<string, string> = {};
    for (let k = 0; k < pools; k++) {
        const g = emu.addScalingGroup({ desiredCapacity: 1, maxSize: 1 });
        groups[g.scalingGroupId] = `pool-${k}`;
        const [id] = emu.scalingGroupInstances(g.scalingGroupId);
        const i = pools - 1 - k;
        const ip = `127.0.${Math.floor(i / 250)}.${(i % 250) + 1}`;
        emu.state.instances.get(id)!.privateIp = ip;
        instances.set(ip, { instanceId: id, ip, accountId: ACCOUNT, regionId: REGION });
    }
    const cluster = new ModelCluster();
    const settings: AdmissionSettings = {
        accountId: ACCOUNT, regionId: REGION, signers: trustedSigners(pki.signerPem), challengeKeys: [crypto.randomBytes(32)], challengeTtlSeconds: 120, tokenTtlSeconds: 900,
    };
    const cloud = new AlibabaCloudView({ regionId: REGION, endpoint: emu.endpoint, pools: new StaticPools(groups), existingNodes: {} });
    const server = await startServer({ settings, cloud, cluster, tls: () => ({ cert: tls.certPem, key: tls.keyPem }), host: "127.0.0.1", port: 0 });
    return { emu, server, cluster, endpoint: `127.0.0.1:${server.port}`, close: async () => { await server.close(); await emu.close(); } };
}

export async function main(): Promise<void> {
    process.env.AK_ADMISSION_LOG = "off";
    process.env.ALIBABA_CLOUD_ACCESS_KEY_ID = TEST_CREDENTIALS.accessKeyId;
    process.env.ALIBABA_CLOUD_ACCESS_KEY_SECRET = TEST_CREDENTIALS.accessKeySecret;
    const pki = makePki();
    const tls = makeServiceTls();
    const instances = new Map<string, Instance>();
    const metadata = await startMetadata(pki, instances);
    const checks: Array<{ ok: boolean; text: string }> = [];
    try {
        // 1. The shell client, in sequence, as the member of the last pool.
        console.log(`1. added per join (the shell client; cloud calls answered after ${CALL_LATENCY_MS} ms, no rate limit), 3 joins each`);
        const shell = path.join(__dirname, "..", "src", "shell");
        const perJoinCalls: string[] = [];
        for (const pools of [1, 10, 100]) {
            instances.clear();
            const w = await world(pki, tls, pools, instances);
            const added: number[] = [];
            let calls: Record<string, number> = {};
            try {
                for (let i = 0; i < 3; i++) {
                    const root = fs.mkdtempSync(path.join(os.tmpdir(), "ak-bench-admission-"));
                    const signed = metadata.signMs.length;
                    const since = w.emu.calls.length;
                    const t = Date.now();
                    const script = [`source ${JSON.stringify(path.join(shell, "prepare_node.sh"))}`, `source ${JSON.stringify(path.join(shell, "admission_client.sh"))}`,
                        `AK_METADATA=${JSON.stringify(metadata.url)}`, `AK_ADMISSION_ENDPOINTS=${w.endpoint}`, `AK_ADMISSION_PIN=${tls.pin}`,
                        "mkdir -p \"$AK_STATE_DIR\"", "ak_imds_token", "ak_admission_token"].join("\n");
                    const child = spawn("bash", ["-c", script], { env: { ...process.env, AK_ROOT: root, AK_RETRY_DELAY: "0", AK_ADMISSION_ATTEMPTS: "1" }, stdio: "ignore" });
                    const code = await new Promise<number | null>((r) => child.on("close", r));
                    const wall = Date.now() - t;
                    fs.rmSync(root, { recursive: true, force: true });
                    if (code !== 0) throw new Error(`the shell client was refused (exit ${code}) with ${pools} pools`);
                    added.push(wall - metadata.signMs.slice(signed).reduce((a, b) => a + b, 0));
                    calls = callsOf(w.emu, since);
                }
            } finally {
                await w.close();
            }
            const perJoin = Object.entries(calls).map(([a, n]) => `${a} ${n}`).join(" + ");
            perJoinCalls.push(JSON.stringify(calls));
            console.log(`   ${String(pools).padStart(3)} pool(s): added ${added.join(", ")} ms (max ${Math.max(...added)}); cloud calls per join: ${perJoin}`);
            checks.push({ ok: Math.max(...added) <= PER_JOIN_TARGET_MS, text: `${pools} pool(s): every join's added latency ≤ ${PER_JOIN_TARGET_MS} ms (max ${Math.max(...added)} ms)` });
        }
        checks.push({ ok: new Set(perJoinCalls).size === 1, text: `cloud calls per join independent of the pool count (${perJoinCalls[0]})` });

        // 2. The burst.
        console.log(`2. ${BURST} nodes at once, ${BURST_POOLS} pools, ${RATE_PER_ACTION} calls/s per action, ${CALL_LATENCY_MS} ms per call; nodes retry with backoff and jitter`);
        instances.clear();
        const w = await world(pki, tls, BURST_POOLS, instances);
        w.emu.rateLimit(RATE_PER_ACTION);
        try {
            const nodes = [...instances.values()].slice(0, BURST);
            const since = w.emu.calls.length;
            const requests = new Map<string, string>();
            const metaGet = (n: Instance, p: string) => new Promise<string>((resolve, reject) => {
                const req = http.request(`${metadata.url}/dynamic/instance-identity/${p}`, { localAddress: n.ip, agent: false }, (res) => {
                    let text = "";
                    res.on("data", (d: Buffer) => { text += d.toString(); });
                    res.on("end", () => resolve(text));
                });
                req.on("error", reject);
                req.end();
            });
            const t0 = Date.now();
            const results = await Promise.all(nodes.map(async (n) => {
                let signing = 0, rounds = 0;
                for (let round = 1; Date.now() - t0 < 120_000; round++) {
                    rounds = round;
                    const challenge = (await request(`https://${w.endpoint}/challenge`, tls.certPem, n.ip)).text.trim();
                    const document = await metaGet(n, "document");
                    const s = Date.now();
                    const signature = await metaGet(n, `pkcs7?audience=${challenge}`);
                    signing += Date.now() - s;
                    const body = new URLSearchParams({ document, signature, audience: challenge }).toString();
                    const r = await request(`https://${w.endpoint}/admit`, tls.certPem, n.ip, body);
                    if (r.status === 200) {
                        requests.set(n.ip, body);
                        return { ok: true, token: (JSON.parse(r.text) as { token: string }).token, ms: Date.now() - t0, added: Date.now() - t0 - signing, rounds };
                    }
                    // The shell client's backoff: 5 s doubled per round up to 30 s, half to all of it.
                    const delay = Math.min(30, 5 * 2 ** (round - 1)) * 1000;
                    await new Promise((r2) => setTimeout(r2, delay / 2 + Math.random() * delay / 2));
                }
                return { ok: false, token: undefined, ms: Date.now() - t0, added: Date.now() - t0 - signing, rounds };
            }));
            const wall = Date.now() - t0;
            const calls = callsOf(w.emu, since);
            const total = Object.values(calls).reduce((a, b) => a + b, 0);
            const admitted = results.filter((r) => r.ok);
            const tokens = new Set(admitted.map((r) => r.token));
            const slowest = Math.max(...results.map((r) => r.added));
            console.log(`   ${admitted.length}/${BURST} admitted, ${tokens.size} distinct tokens, ${w.cluster.leases.size} challenges claimed once; wall ${wall} ms ` +
                `(including the stand-in's openssl signing, ${median(metadata.signMs)} ms median per signature on ${os.cpus().length} cores)`);
            console.log(`   per node, from its first request to its token, without its own signing: median ${median(results.map((r) => r.added))} ms, max ${slowest} ms; ` +
                `rounds: ${results.filter((r) => r.rounds > 1).length} node(s) needed more than one`);
            console.log(`   cloud calls for the burst: ${Object.entries(calls).map(([a, n]) => `${a} ${n}`).join(", ")} (${total}; ${(total / BURST).toFixed(2)} per join), ` +
                `of which answered Throttling.User: ${Object.entries(throttledCalls(w.emu, since)).map(([a, n]) => `${a} ${n}`).join(", ") || "none"}`);
            const replays = await Promise.all(nodes.map((n) => request(`https://${w.endpoint}/admit`, tls.certPem, n.ip, requests.get(n.ip))));
            const replayRefused = replays.filter((r) => r.status === 403 && /challenge-replayed/.test(r.text)).length;
            console.log(`   replaying all ${BURST} requests: ${replayRefused} refused as challenge-replayed, ${replays.filter((r) => r.status === 200).length} admitted`);
            checks.push({ ok: admitted.length === BURST && slowest <= BURST_BUDGET_MS,
                text: `burst: all ${BURST} admitted within ${BURST_BUDGET_MS / 1000} s of their first request (the admission share of the scale-up budget; slowest ${slowest} ms)` });
            checks.push({ ok: tokens.size === BURST && w.cluster.leases.size >= BURST, text: "burst: one distinct token per node, each challenge claimed once" });
            checks.push({ ok: replayRefused === BURST, text: "burst: every replay refused" });
        } finally {
            w.emu.rateLimit({});
            await w.close();
        }
    } finally {
        await metadata.close();
        pki.cleanup();
    }
    for (const c of checks) console.log(`${c.ok ? "PASS" : "FAIL"}  ${c.text}`);
    if (checks.some((c) => !c.ok)) throw new Error("admission bench: a target was missed");
}
