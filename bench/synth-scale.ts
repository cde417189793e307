// Synth at scale: generates stack configs with many pools and existing nodes, synthesises each in a
// fresh process (so peak memory is per size), and prints wall time and peak RSS.
// Targets: 100 pools + 200 existing nodes ≤ 20 s and ≤ 1.5 GiB; doubling the size ≤ 2.2× the time.
//   npm run bench -- synth-scale
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import * as YAML from "yaml";

const SIZES: Array<[pools: number, nodes: number]> = [[10, 20], [25, 50], [50, 100], [100, 200]];

/** A valid cluster config with `pools` pools (alternately fixed and autoscaled) and `nodes` existing nodes. */
export function scaleConfig(pools: number, nodes: number): Record<string, unknown> {
    return {
        "alicloud:region": "cn-hangzhou",
        "alicloud-kubeadm:cluster": {
            name: `scale-${pools}-${nodes}`,
            kubernetesVersion: "1.36.3",
            zones: ["cn-hangzhou-h", "cn-hangzhou-i", "cn-hangzhou-j"],
            network: { vpcCidr: "192.168.0.0/16", podCidr: "172.16.0.0/12", serviceCidr: "10.96.0.0/12", nodeCidrMaskSize: 24, routeEntryQuota: 5000 },
            controlPlane: { count: 3 },
            nodePools: Array.from({ length: pools }, (_, i) => i % 2 === 0
                ? { name: `pool-${i}`, instanceType: "ecs.g7.xlarge", size: 2, labels: { team: `t${i}` } }
                : { name: `pool-${i}`, instanceType: "ecs.c7.xlarge", autoscale: { min: 0, max: 10 }, labels: { team: `t${i}` } }),
            existingNodes: Array.from({ length: nodes }, (_, i) => ({ instanceId: `i-bench${String(i).padStart(12, "0")}`, mode: "manual" })),
        },
    };
}

interface Measurement { pools: number; nodes: number; ms: number; maxRssMiB: number; resources: number }

/** Child mode: synthesise one size and print a JSON measurement. */
async function child(pools: number, nodes: number): Promise<void> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "synth-scale-"));
    const file = path.join(dir, `Pulumi.scale-${pools}-${nodes}.yaml`);
    fs.writeFileSync(file, YAML.stringify({ config: scaleConfig(pools, nodes) }));
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { synthesize } = require("../scripts/synth") as typeof import("../scripts/synth");
    const start = process.hrtime.bigint();
    const result = await synthesize(file, path.join(dir, "out"));
    const ms = Number(process.hrtime.bigint() - start) / 1e6;
    fs.rmSync(dir, { recursive: true, force: true });
    if (result.problems.length > 0) {
        throw new Error(result.problems.join("\n"));
    }
    const m: Measurement = { pools, nodes, ms, maxRssMiB: process.resourceUsage().maxRSS / 1024, resources: result.resources.length };
    process.stdout.write(`${JSON.stringify(m)}\n`);
}

export async function main(): Promise<void> {
    const rows: Measurement[] = [];
    console.log("pools  existing  resources   wall s  peak RSS MiB  × previous");
    for (const [pools, nodes] of SIZES) {
        const res = spawnSync(process.execPath, [require.resolve("ts-node/dist/bin"), "--transpile-only", __filename, "--child", String(pools), String(nodes)],
            { encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
        const line = res.stdout.trim().split("\n").pop() ?? "";
        if (res.status !== 0 || !line.startsWith("{")) {
            throw new Error(`size ${pools}/${nodes} failed:\n${res.stderr.slice(-2000)}`);
        }
        const m = JSON.parse(line) as Measurement;
        const prev = rows[rows.length - 1];
        rows.push(m);
        console.log(`${String(pools).padStart(5)}  ${String(nodes).padStart(8)}  ${String(m.resources).padStart(9)}  ${(m.ms / 1000).toFixed(2).padStart(7)}  ${m.maxRssMiB.toFixed(0).padStart(12)}  ${prev ? (m.ms / prev.ms).toFixed(2).padStart(10) : "         -"}`);
    }
    const largest = rows[rows.length - 1];
    const worstRatio = Math.max(...rows.slice(1).map((r, i) => r.ms / rows[i].ms));
    const checks: Array<[string, boolean]> = [
        [`100 pools + 200 nodes in ${(largest.ms / 1000).toFixed(2)} s ≤ 20 s`, largest.ms <= 20_000],
        [`peak RSS ${largest.maxRssMiB.toFixed(0)} MiB ≤ 1536 MiB`, largest.maxRssMiB <= 1536],
        [`worst doubling ${worstRatio.toFixed(2)}× ≤ 2.2×`, worstRatio <= 2.2],
    ];
    for (const [text, ok] of checks) {
        console.log(`${ok ? "PASS" : "FAIL"}  ${text}`);
    }
    if (checks.some(([, ok]) => !ok)) {
        throw new Error("a benchmark target was missed");
    }
}

if (require.main === module) {
    const args = process.argv.slice(2);
    const run = args[0] === "--child" ? child(Number(args[1]), Number(args[2])) : main();
    run.then(() => process.exit(0), (err) => {
        console.error(err);
        process.exit(1);
    });
}
