// Removal at scale: removes 1, 10 and 50 pool nodes through the removal core against the local
// emulator with 100 ms API latency and 1 s drain/reset run time (production poll intervals).
// Targets: 50 nodes at concurrency 10 ≤ 6 × the one-node time; ≤ 12 mutating calls per node plus polls.
//   npm run bench -- removal
import { startEmulator, TEST_CREDENTIALS } from "../test/emulator";
import { fakeCluster } from "../test/fakeCluster";
import { scaleInPool } from "../src/removal";

const LATENCY_MS = 100;
const COMMAND_MS = 1000;
const CONCURRENCY = 10;

interface Row { nodes: number; ms: number; mutatingPerNode: number; pollsPerNode: number; readsPerNode: number }

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
        }
        const start = Date.now();
        const reports = await scaleInPool({ scalingGroupId: group, poolName: "bench", targetSize: 0, minSize: 0 },
            { region: "cn-hangzhou", masterInstanceId: cluster.master, commands: cluster.commands, routeTableId: table, concurrency: CONCURRENCY });
        const ms = Date.now() - start;
        if (reports.length !== nodes || emu.scalingGroupInstances(group).length !== 0) {
            throw new Error(`removed ${reports.length}/${nodes}`);
        }
        const polls = emu.callsOf("DescribeInvocationResults").length;
        const mutating = emu.mutatingCalls().filter((c) => c.action !== "CreateCommand").length;
        const reads = emu.calls.length - mutating - polls;
        return { nodes, ms, mutatingPerNode: mutating / nodes, pollsPerNode: polls / nodes, readsPerNode: reads / nodes };
    } finally {
        process.env = saved;
        await emu.close();
    }
}

export async function main(): Promise<void> {
    console.log(`removal: ${LATENCY_MS} ms API latency, ${COMMAND_MS} ms drain/reset, concurrency ${CONCURRENCY}`);
    console.log("nodes   wall s   × 1 node   mutating/node   polls/node   other reads/node");
    const rows: Row[] = [];
    for (const n of [1, 10, 50]) {
        const r = await measure(n);
        rows.push(r);
        console.log(`${String(n).padStart(5)}  ${(r.ms / 1000).toFixed(2).padStart(7)}  ${(r.ms / rows[0].ms).toFixed(2).padStart(9)}  ` +
            `${r.mutatingPerNode.toFixed(1).padStart(14)}  ${r.pollsPerNode.toFixed(1).padStart(11)}  ${r.readsPerNode.toFixed(1).padStart(17)}`);
    }
    const fifty = rows[rows.length - 1];
    const worstMutating = Math.max(...rows.map((r) => r.mutatingPerNode));
    const checks: Array<[string, boolean]> = [
        [`50 nodes in ${(fifty.ms / rows[0].ms).toFixed(2)} × the one-node time ≤ 6 ×`, fifty.ms <= 6 * rows[0].ms],
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
