/**
 * Benchmark of the Cloud Assistant runner against the local emulator: one command on 1, 50 and
 * 200 instances, with 100 ms injected API latency and 2 s command run time, default polling.
 * Targets: wall time for 200 instances ≤ 1.5 × wall time for 1; ≤ 4 RunCommand calls for 200.
 *
 * Run: `npm run bench -- cloud-assistant`, or `npx ts-node --transpile-only bench/cloud-assistant.ts`.
 */
import { runCommand } from "../src/cloud/cloudAssistant";
import { startEmulator, TEST_CREDENTIALS } from "../testing/emulator";

const LATENCY_MS = 100;
const COMMAND_MS = 2000;
const SIZES = [1, 50, 200];
const ENV_KEYS = ["ALICLOUD_KUBEADM_ENDPOINT", "ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET", "ALIBABA_CLOUD_ECS_METADATA_DISABLED"];

/** One measured run. */
export interface BenchRow { instances: number; wallMs: number; runCommandCalls: number; pollCalls: number; ok: number }

/** Run the command on `n` fresh emulated instances and measure. */
export async function measure(n: number): Promise<BenchRow> {
    const emu = await startEmulator({ latencyMs: LATENCY_MS });
    const saved = Object.fromEntries(ENV_KEYS.map((k) => [k, process.env[k]]));
    Object.assign(process.env, {
        ALICLOUD_KUBEADM_ENDPOINT: emu.endpoint, ALIBABA_CLOUD_ACCESS_KEY_ID: TEST_CREDENTIALS.accessKeyId,
        ALIBABA_CLOUD_ACCESS_KEY_SECRET: TEST_CREDENTIALS.accessKeySecret, ALIBABA_CLOUD_ECS_METADATA_DISABLED: "true",
    });
    try {
        const ids = emu.addInstances(n);
        emu.onCommand(/kubeadm version/, { output: "kubeadm version: v1.34.2\n", delayMs: COMMAND_MS });
        const t0 = Date.now();
        const results = await runCommand({ region: "cn-hangzhou", instanceIds: ids, script: "kubeadm version -o short", timeoutSeconds: 60 });
        return {
            instances: n, wallMs: Date.now() - t0, runCommandCalls: emu.callsOf("RunCommand").length,
            pollCalls: emu.callsOf("DescribeInvocationResults").length, ok: results.filter((r) => r.ok).length,
        };
    } finally {
        await emu.close();
        for (const [k, v] of Object.entries(saved)) {
            if (v === undefined) delete process.env[k];
            else process.env[k] = v;
        }
    }
}

/** Print the table and the verdict; rejects when a target is missed (so the bench exits non-zero). */
export async function main(): Promise<void> {
    const rows: BenchRow[] = [];
    for (const n of SIZES) rows.push(await measure(n));
    console.log(`Cloud Assistant runner vs emulator (API latency ${LATENCY_MS} ms, command ${COMMAND_MS} ms)`);
    console.log("instances | wall ms | RunCommand calls | poll calls | succeeded");
    console.log("--------- | ------- | ---------------- | ---------- | ---------");
    for (const r of rows) {
        console.log(`${String(r.instances).padStart(9)} | ${String(r.wallMs).padStart(7)} | ${String(r.runCommandCalls).padStart(16)} | ${String(r.pollCalls).padStart(10)} | ${String(r.ok).padStart(9)}`);
    }
    const one = rows[0], big = rows[rows.length - 1];
    const ratio = big.wallMs / one.wallMs;
    const checks = [
        { name: `wall(200) ≤ 1.5 × wall(1): ${big.wallMs} ms vs ${one.wallMs} ms (×${ratio.toFixed(2)})`, pass: ratio <= 1.5 },
        { name: `RunCommand calls for 200 ≤ 4: ${big.runCommandCalls}`, pass: big.runCommandCalls <= 4 },
        { name: `every instance succeeded: ${rows.every((r) => r.ok === r.instances)}`, pass: rows.every((r) => r.ok === r.instances) },
    ];
    for (const c of checks) console.log(`${c.pass ? "PASS" : "FAIL"}  ${c.name}`);
    const failed = checks.filter((c) => !c.pass);
    if (failed.length) throw new Error(`cloud-assistant bench missed ${failed.length} target(s)`);
}

if (require.main === module) {
    main().catch((e) => { console.error(e); process.exitCode = 1; });
}
