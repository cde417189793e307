/**
 * Benchmark of the Cloud Assistant fan-out against the local emulator: one command on 1, 50, 200 and 1,000
 * instances (after one warm-up run), with 100 ms API latency, 2 s command run time, default polling and pacing.
 * Then 1,000 instances again with every action limited to 2 calls/s (the emulator answers Throttling.User above
 * it) and a throttling budget of 1.5 s, so that some batches are not sent: every instance must come back done,
 * failed or not sent, and a retry with those results must finish the rest without running anything twice.
 * Targets: wall time for 1,000 ≤ 1.5 × wall time for 1; every instance accounted for under the limit; the retry
 * runs nothing twice.
 *
 * Run: `npm run bench -- cloud-assistant`, or `npx ts-node --transpile-only bench/cloud-assistant.ts`.
 */
import * as os from "os";
import { MAX_BATCH, runCommand, type InstanceResult } from "../src/cloud/cloudAssistant";
import { resetPacer } from "../src/cloud/pacer";
import { startEmulator, TEST_CREDENTIALS, type Emulator } from "../testing/emulator";

const LATENCY_MS = 100;
const COMMAND_MS = 2000;
const SIZES = [1, 50, 200, 1000];
const LIMIT_PER_SECOND = 2;
const ENV_KEYS = ["ALICLOUD_KUBEADM_ENDPOINT", "ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET", "ALIBABA_CLOUD_ECS_METADATA_DISABLED"];

/** One measured run. */
export interface BenchRow { instances: number; wallMs: number; runCommandCalls: number; pollCalls: number; ok: number }

/** Runs `work` against a fresh emulator whose handler counts the runs per instance. */
async function withEmulator<T>(work: (emu: Emulator, runs: Map<string, number>) => Promise<T>): Promise<T> {
    resetPacer();
    const emu = await startEmulator({ latencyMs: LATENCY_MS });
    const saved = Object.fromEntries(ENV_KEYS.map((k) => [k, process.env[k]]));
    Object.assign(process.env, {
        ALICLOUD_KUBEADM_ENDPOINT: emu.endpoint, ALIBABA_CLOUD_ACCESS_KEY_ID: TEST_CREDENTIALS.accessKeyId,
        ALIBABA_CLOUD_ACCESS_KEY_SECRET: TEST_CREDENTIALS.accessKeySecret, ALIBABA_CLOUD_ECS_METADATA_DISABLED: "true",
    });
    const runs = new Map<string, number>();
    emu.onCommand(/kubeadm version/, (ctx) => {
        runs.set(ctx.instanceId, (runs.get(ctx.instanceId) ?? 0) + 1);
        return { output: "kubeadm version: v1.34.2\n", delayMs: COMMAND_MS };
    });
    try {
        return await work(emu, runs);
    } finally {
        await emu.close();
        for (const [k, v] of Object.entries(saved)) {
            if (v === undefined) delete process.env[k];
            else process.env[k] = v;
        }
    }
}

const run = (ids: string[], extra: { previous?: InstanceResult[]; throttleBudgetMs?: number } = {}) => runCommand({
    region: "cn-hangzhou", instanceIds: ids, script: "kubeadm version -o short", timeoutSeconds: 60, previous: extra.previous,
    retry: extra.throttleBudgetMs ? { throttleBudgetMs: extra.throttleBudgetMs } : undefined,
});

/** Run the command on `n` fresh emulated instances and measure. */
export async function measure(n: number): Promise<BenchRow> {
    return withEmulator(async (emu) => {
        const ids = emu.addInstances(n);
        const t0 = Date.now();
        const results = await run(ids);
        return {
            instances: n, wallMs: Date.now() - t0, runCommandCalls: emu.callsOf("RunCommand").length,
            pollCalls: emu.callsOf("DescribeInvocationResults").length, ok: results.filter((r) => r.ok).length,
        };
    });
}

/** 1,000 instances under the rate limit, then the retry. */
async function throttled(n: number): Promise<{ first: Record<string, number>; accounted: boolean; retryDone: number; ranTwice: number; retrySent: number; ms: number; retryMs: number; throttledAnswers: number }> {
    return withEmulator(async (emu, runs) => {
        const ids = emu.addInstances(n);
        emu.rateLimit(LIMIT_PER_SECOND);
        const t0 = Date.now();
        const first = await run(ids, { throttleBudgetMs: 1500 });
        const ms = Date.now() - t0;
        const counts: Record<string, number> = { done: 0, failed: 0, "not-sent": 0 };
        for (const r of first) counts[r.outcome] += 1;
        const accounted = first.length === n && new Set(first.map((r) => r.instanceId)).size === n && ids.every((id) => first.some((r) => r.instanceId === id));
        const sentBefore = emu.callsOf("RunCommand").filter((c) => c.code === "").length;
        const t1 = Date.now();
        const retry = await run(ids, { previous: first });
        return {
            first: counts, accounted, retryDone: retry.filter((r) => r.outcome === "done").length, ranTwice: [...runs.values()].filter((k) => k > 1).length,
            retrySent: emu.callsOf("RunCommand").filter((c) => c.code === "").length - sentBefore, ms, retryMs: Date.now() - t1,
            throttledAnswers: emu.calls.filter((c) => c.code.startsWith("Throttling")).length,
        };
    });
}

/** Print the table and the verdict; rejects when a target is missed (so the bench exits non-zero). */
export async function main(): Promise<void> {
    await measure(10); // warm-up: module loading, the first TLS-less connections, the JIT
    const rows: BenchRow[] = [];
    for (const n of SIZES) rows.push(await measure(n));
    console.log(`Cloud Assistant fan-out vs emulator (API latency ${LATENCY_MS} ms, command ${COMMAND_MS} ms, batches of ${MAX_BATCH}); ` +
        `load average ${os.loadavg().map((l) => l.toFixed(2)).join(" ")} on ${os.cpus().length} CPUs`);
    console.log("instances | wall ms | × 1 | RunCommand calls | poll calls | succeeded");
    console.log("--------- | ------- | --- | ---------------- | ---------- | ---------");
    for (const r of rows) {
        console.log(`${String(r.instances).padStart(9)} | ${String(r.wallMs).padStart(7)} | ${(r.wallMs / rows[0].wallMs).toFixed(2)} | ${String(r.runCommandCalls).padStart(16)} | ` +
            `${String(r.pollCalls).padStart(10)} | ${String(r.ok).padStart(9)}`);
    }
    const t = await throttled(1000);
    console.log(`1000 instances, every action limited to ${LIMIT_PER_SECOND} calls/s, throttling budget 1.5 s: ${(t.ms / 1000).toFixed(1)} s, ` +
        `${t.first.done} done, ${t.first.failed} failed, ${t.first["not-sent"]} not sent (${t.throttledAnswers} throttling answers over both runs); ` +
        `the retry: ${(t.retryMs / 1000).toFixed(1)} s, ${t.retrySent} RunCommand call(s), ${t.retryDone} done`);
    const one = rows[0], big = rows[rows.length - 1];
    const ratio = big.wallMs / one.wallMs;
    const checks = [
        { name: `wall(1000) ≤ 1.5 × wall(1): ${big.wallMs} ms vs ${one.wallMs} ms (×${ratio.toFixed(2)})`, pass: ratio <= 1.5 },
        { name: `RunCommand calls for 1000 ≤ ${Math.ceil(1000 / MAX_BATCH)}: ${big.runCommandCalls}`, pass: big.runCommandCalls <= Math.ceil(1000 / MAX_BATCH) },
        { name: `every instance succeeded without a limit: ${rows.every((r) => r.ok === r.instances)}`, pass: rows.every((r) => r.ok === r.instances) },
        { name: `under ${LIMIT_PER_SECOND} calls/s every instance is accounted for (done / failed / not sent): ${t.accounted}`, pass: t.accounted },
        { name: `the retry finishes the rest (${t.retryDone}/1000 done) and runs nothing twice (${t.ranTwice} instance(s) ran twice)`, pass: t.retryDone === 1000 && t.ranTwice === 0 },
    ];
    for (const c of checks) console.log(`${c.pass ? "PASS" : "FAIL"}  ${c.name}`);
    const failed = checks.filter((c) => !c.pass);
    if (failed.length) throw new Error(`cloud-assistant bench missed ${failed.length} target(s)`);
}

if (require.main === module) {
    main().catch((e) => { console.error(e); process.exitCode = 1; });
}
