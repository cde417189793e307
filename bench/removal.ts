// Removal at scale: scales a fixed pool (members protected, as PoolCapacity leaves them) in from 1, 10, 50 and 100
// nodes to 0 through the removal core, against the local emulator with 100 ms API latency, 1 s drain and 1 s reset,
// 3 s per ESS scaling activity (one at a time per group) and 300 ms per route-table task (one at a time per VPC),
// with production poll intervals and the default concurrency.
// Targets: 50 nodes ≤ 4 × the one-node time, 100 nodes ≤ 6 × the one-node time, ≤ 12 mutating calls per node.
//   npm run bench -- removal
import { startEmulator, TEST_CREDENTIALS } from "../testing/emulator";
import { fakeCluster } from "../testing/fakeCluster";
import { scaleInPool } from "../src/removal";

const LATENCY_MS = 100;
const COMMAND_MS = 1000;
const ACTIVITY_MS = 3000;
const ROUTE_TASK_MS = 300;

interface Row { nodes: number; ms: number; mutatingPerNode: number; pollsPerNode: number; readsPerNode: number; activities: number }

async function measure(nodes: number): Promise<Row> {
    const emu = await startEmulator({ latencyMs: LATENCY_MS });
    const saved = { ...process.env };
    Object.assign(process.env, {
        ALICLOUD_KUBEADM_ENDPOINT: emu.endpoint,
        ALIBABA_CLOUD_ACCESS_KEY_ID: TEST_CREDENTIALS.accessKeyId,
        ALIBABA_CLOUD_ACCESS_KEY_SECRET: TEST_CREDENTIALS.accessKeySecret,
        ALIBABA_CLOUD_ECS_METADATA_DISABLED: "true",
        ALIBABA_CLOUD_CLI_PROFILE_DISABLED: "true",
    });
    try {
        // fake: the benchmark injects a fixed 1 s drain/reset time at 50 nodes, which a real control plane cannot be made to take
        const cluster = await fakeCluster(emu, "cn-hangzhou", { commandDelayMs: COMMAND_MS });
        const table = emu.addRouteTable().routeTableId;
        const group = emu.addScalingGroup({ desiredCapacity: nodes, maxSize: nodes }).scalingGroupId;
        for (const id of emu.scalingGroupInstances(group)) {
            const node = cluster.addNode(id, { pool: "bench", podCidr: `172.16.${cluster.nodes.size % 256}.${cluster.nodes.size >= 256 ? 128 : 0}/25`, pods: ["ReplicaSet"] });
            emu.addRouteEntry(table, { destinationCidrBlock: node.podCidr, nextHopId: id });
            emu.state.scalingInstances.get(id)!.lifecycleState = "Protected";
        }
        emu.state.activityDurationMs = ACTIVITY_MS;
        emu.state.routeTaskMs = ROUTE_TASK_MS;
        const setupCalls = emu.calls.length;
        const start = Date.now();
        const reports = await scaleInPool({ scalingGroupId: group, poolName: "bench", targetSize: 0, minSize: 0 },
            { region: "cn-hangzhou", masterInstanceIds: cluster.masters, commands: cluster.commands, routeTableId: table, podCidr: "172.16.0.0/16" });
        const ms = Date.now() - start;
        if (reports.length !== nodes || emu.scalingGroupInstances(group).length !== 0 || emu.routeTables.get(table)!.entries.length !== 0 || cluster.violations.length > 0) {
            throw new Error(`removed ${reports.length}/${nodes}; ${cluster.violations.join("; ")}`);
        }
        const calls = emu.calls.slice(setupCalls);
        const polls = calls.filter((c) => c.action === "DescribeInvocationResults" || c.action === "DescribeScalingActivities").length;
        const mutating = calls.filter((c) => !/^(Describe|List|Get|Query)/.test(c.action)).length;
        const reads = calls.length - mutating - polls;
        return { nodes, ms, mutatingPerNode: mutating / nodes, pollsPerNode: polls / nodes, readsPerNode: reads / nodes, activities: emu.activitiesOf(group).length };
    } finally {
        process.env = saved;
        await emu.close();
    }
}

export async function main(): Promise<void> {
    console.log(`removal: ${LATENCY_MS} ms API latency, ${COMMAND_MS} ms drain and reset, ${ACTIVITY_MS} ms per scaling activity, ${ROUTE_TASK_MS} ms per route task`);
    console.log("nodes   wall s   × 1 node   mutating/node   polls/node   other reads/node   ESS activities");
    const rows: Row[] = [];
    for (const n of [1, 10, 50, 100]) {
        const r = await measure(n);
        rows.push(r);
        console.log(`${String(n).padStart(5)}  ${(r.ms / 1000).toFixed(2).padStart(7)}  ${(r.ms / rows[0].ms).toFixed(2).padStart(9)}  ` +
            `${r.mutatingPerNode.toFixed(1).padStart(14)}  ${r.pollsPerNode.toFixed(1).padStart(11)}  ${r.readsPerNode.toFixed(1).padStart(17)}  ${String(r.activities).padStart(15)}`);
    }
    const at = (n: number) => rows.find((r) => r.nodes === n)!;
    const worstMutating = Math.max(...rows.map((r) => r.mutatingPerNode));
    const checks: Array<[string, boolean]> = [
        [`50 nodes in ${(at(50).ms / at(1).ms).toFixed(2)} × the one-node time ≤ 4 ×`, at(50).ms <= 4 * at(1).ms],
        [`100 nodes in ${(at(100).ms / at(1).ms).toFixed(2)} × the one-node time ≤ 6 ×`, at(100).ms <= 6 * at(1).ms],
        [`${worstMutating.toFixed(1)} mutating calls per node ≤ 12`, worstMutating <= 12],
    ];
    for (const [text, ok] of checks) {
        console.log(`${ok ? "PASS" : "FAIL"}  ${text}`);
    }
    if (checks.some(([, ok]) => !ok)) {
        throw new Error("a benchmark target was missed");
    }
}

if (require.main === module) {
    main().then(() => process.exit(0), (err) => {
        console.error(err);
        process.exit(1);
    });
}
