// Removal at scale: scales a fixed pool (members protected, as PoolCapacity leaves them) in from 1, 10, 50 and 100
// nodes to 0 through the removal core, against the local emulator with 100 ms API latency, 1 s drain and 1 s reset,
// 3 s per ESS scaling activity (one at a time per group) and 300 ms per route-table task (one at a time per VPC),
// with production poll intervals, pacing and the default concurrency. Beside each time it prints the floor: the
// critical path with instant API calls — drains in waves of `concurrency`, each ESS batch of 20 once its members
// are drained and the previous activity ended, then one route task.
// Then 50 nodes again with every action limited to 5 calls/s (the emulator answers Throttling.User above it), and
// I1–I3 read from state: no member left ESS with a Node not drained, every victim fully gone, everything else
// (another pool, another node, its route) unchanged.
// Targets: 100 nodes ≤ 5 × the one-node time; 50 and 100 nodes ≤ 2 × their floor (at 1 and 10 nodes the fixed cost of
// the reads around the steps — ~15 API calls at 100 ms, four Cloud Assistant round trips — is as large as the floor
// itself; their ratio is printed, not held to it); the throttled run completes with I1–I3.
//   npm run bench -- removal
import * as os from "os";
import { startEmulator, TEST_CREDENTIALS, type Emulator } from "../testing/emulator";
import { fakeCluster, type FakeCluster } from "../testing/fakeCluster";
import { resetPacer } from "../src/cloud/pacer";
import { scaleInPool, ESS_BATCH } from "../src/removal";

export const LATENCY_MS = 100;
export const COMMAND_MS = 1000;
export const ACTIVITY_MS = 3000;
export const ROUTE_TASK_MS = 300;
const CONCURRENCY = 10;
const THROTTLE_PER_SECOND = 5;

interface Row { nodes: number; ms: number; floorMs: number; mutatingPerNode: number; pollsPerNode: number; readsPerNode: number; activities: number; throttled: number }

/** The critical path with instant API calls (see the header). */
export function floorMs(nodes: number): number {
    let end = 0;
    for (let k = 1; (k - 1) * ESS_BATCH < nodes; k++) {
        const ready = Math.ceil(Math.min(k * ESS_BATCH, nodes) / CONCURRENCY) * COMMAND_MS;
        end = Math.max(ready, end) + ACTIVITY_MS;
    }
    return end + ROUTE_TASK_MS;
}

interface World { emu: Emulator; cluster: FakeCluster; group: string; table: string; snapshot: () => string }

async function world(nodes: number): Promise<World> {
    resetPacer();
    const emu = await startEmulator({ latencyMs: LATENCY_MS });
    Object.assign(process.env, {
        ALICLOUD_KUBEADM_ENDPOINT: emu.endpoint, ALIBABA_CLOUD_ACCESS_KEY_ID: TEST_CREDENTIALS.accessKeyId, ALIBABA_CLOUD_ACCESS_KEY_SECRET: TEST_CREDENTIALS.accessKeySecret,
        ALIBABA_CLOUD_ECS_METADATA_DISABLED: "true", ALIBABA_CLOUD_CLI_PROFILE_DISABLED: "true",
    });
    // fake: the benchmark injects a fixed 1 s drain/reset time at 100 nodes, which a real control plane cannot be made to take
    const cluster = await fakeCluster(emu, "cn-hangzhou", { commandDelayMs: COMMAND_MS });
    const table = emu.addRouteTable().routeTableId;
    const group = emu.addScalingGroup({ desiredCapacity: nodes, maxSize: nodes }).scalingGroupId;
    const podCidr = () => `172.16.${cluster.nodes.size % 256}.${cluster.nodes.size >= 256 ? 128 : 0}/25`;
    for (const id of emu.scalingGroupInstances(group)) {
        const node = cluster.addNode(id, { pool: "bench", podCidr: podCidr(), pods: ["ReplicaSet"] });
        emu.addRouteEntry(table, { destinationCidrBlock: node.podCidr, nextHopId: id });
        emu.state.scalingInstances.get(id)!.lifecycleState = "Protected";
    }
    // Everything else, for I3: another pool with a member, a node outside the pools (where evicted pods go), its route.
    const other = emu.addScalingGroup({ desiredCapacity: 1, maxSize: 1 }).scalingGroupId;
    for (const id of emu.scalingGroupInstances(other)) cluster.addNode(id, { pool: "other", podCidr: podCidr() });
    const spare = emu.addInstance().instanceId;
    emu.addRouteEntry(table, { destinationCidrBlock: cluster.addNode(spare, { pool: "spare", podCidr: podCidr() }).podCidr, nextHopId: spare });
    const snapshot = () => JSON.stringify({
        instances: [...emu.instances.values()].filter((i) => !emu.state.scalingInstances.get(i.instanceId) || emu.state.scalingInstances.get(i.instanceId)!.scalingGroupId !== group)
            .map((i) => `${i.instanceId} ${i.status}`).sort(),
        members: [...emu.state.scalingInstances.values()].filter((m) => m.scalingGroupId !== group).map((m) => `${m.instanceId} ${m.lifecycleState}`).sort(),
        groups: [...emu.scalingGroups.values()].filter((g) => g.scalingGroupId !== group).map((g) => `${g.scalingGroupId} ${g.minSize}-${g.maxSize} ${g.desiredCapacity}`),
        routes: emu.routeTables.get(table)!.entries.filter((e) => !emu.state.scalingInstances.has(e.nextHopId) || emu.state.scalingInstances.get(e.nextHopId)!.scalingGroupId !== group)
            .map((e) => `${e.destinationCidrBlock} ${e.nextHopId}`).sort(),
        nodes: [...cluster.nodes.values()].filter((n) => n.pool !== "bench").map((n) => `${n.name} ${n.unschedulable}`).sort(),
        etcd: [...cluster.etcd.keys()],
    });
    emu.state.activityDurationMs = ACTIVITY_MS;
    emu.state.routeTaskMs = ROUTE_TASK_MS;
    return { emu, cluster, group, table, snapshot };
}

/** Removes every member of the pool; throws unless I1–I3 hold from state. */
async function measure(nodes: number, throttle?: number): Promise<Row> {
    const w = await world(nodes);
    const { emu, cluster, group, table } = w;
    const saved = { ...process.env };
    try {
        const members = emu.scalingGroupInstances(group);
        const before = w.snapshot();
        if (throttle) emu.rateLimit(throttle);
        const setupCalls = emu.calls.length;
        const start = Date.now();
        const reports = await scaleInPool({ scalingGroupId: group, poolName: "bench", targetSize: 0, minSize: 0 },
            { region: "cn-hangzhou", masterInstanceIds: cluster.masters, commands: cluster.commands, routeTableId: table, podCidr: "172.16.0.0/16", concurrency: CONCURRENCY });
        const ms = Date.now() - start;
        const left = members.filter((id) => emu.state.scalingInstances.has(id) || emu.instances.has(id) || [...cluster.nodes.values()].some((n) => n.instanceId === id) ||
            emu.routeTables.get(table)!.entries.some((e) => e.nextHopId === id));
        const problems = [
            ...cluster.violations.map((v) => `I1: ${v}`),
            ...(reports.length !== nodes || left.length > 0 ? [`I2: ${reports.length}/${nodes} reported, left behind: ${left.join(", ")}`] : []),
            ...(w.snapshot() !== before ? ["I3: something else changed"] : []),
        ];
        if (problems.length > 0) throw new Error(problems.join("; "));
        const calls = emu.calls.slice(setupCalls);
        const polls = calls.filter((c) => c.action === "DescribeInvocationResults" || c.action === "DescribeScalingActivities").length;
        const mutating = calls.filter((c) => !/^(Describe|List|Get|Query)/.test(c.action)).length;
        return {
            nodes, ms, floorMs: floorMs(nodes), mutatingPerNode: mutating / nodes, pollsPerNode: polls / nodes, readsPerNode: (calls.length - mutating - polls) / nodes,
            activities: emu.activitiesOf(group).length, throttled: calls.filter((c) => c.code.startsWith("Throttling")).length,
        };
    } finally {
        process.env = saved;
        await w.emu.close();
    }
}

export async function main(): Promise<void> {
    console.log(`removal: ${LATENCY_MS} ms API latency, ${COMMAND_MS} ms drain and reset, ${ACTIVITY_MS} ms per scaling activity, ${ROUTE_TASK_MS} ms per route task, ` +
        `concurrency ${CONCURRENCY}; load average ${os.loadavg().map((l) => l.toFixed(2)).join(" ")} on ${os.cpus().length} CPUs`);
    console.log("nodes   wall s   floor s   × floor   × 1 node   mutating/node   polls/node   other reads/node   ESS activities");
    const rows: Row[] = [];
    const print = (r: Row, label = String(r.nodes)) => console.log(`${label.padStart(5)}  ${(r.ms / 1000).toFixed(2).padStart(7)}  ${(r.floorMs / 1000).toFixed(2).padStart(8)}  ` +
        `${(r.ms / r.floorMs).toFixed(2).padStart(8)}  ${(r.ms / rows[0].ms).toFixed(2).padStart(9)}  ${r.mutatingPerNode.toFixed(1).padStart(14)}  ${r.pollsPerNode.toFixed(1).padStart(11)}  ` +
        `${r.readsPerNode.toFixed(1).padStart(17)}  ${String(r.activities).padStart(15)}`);
    for (const n of [1, 10, 50, 100]) {
        const r = await measure(n);
        rows.push(r);
        print(r);
    }
    const throttled = await measure(50, THROTTLE_PER_SECOND);
    console.log(`50 nodes with every action limited to ${THROTTLE_PER_SECOND} calls/s: ${(throttled.ms / 1000).toFixed(2)} s, ${throttled.throttled} throttling answers, I1–I3 held`);
    const at = (n: number) => rows.find((r) => r.nodes === n)!;
    const checks: Array<[string, boolean]> = [
        [`100 nodes in ${(at(100).ms / at(1).ms).toFixed(2)} × the one-node time ≤ 5 ×`, at(100).ms <= 5 * at(1).ms],
        ...[50, 100].map((n): [string, boolean] => [`${n} nodes in ${(at(n).ms / at(n).floorMs).toFixed(2)} × the floor (${(at(n).floorMs / 1000).toFixed(1)} s) ≤ 2 ×`, at(n).ms <= 2 * at(n).floorMs]),
        [`50 nodes at ${THROTTLE_PER_SECOND} calls/s per action completed with I1–I3 (${throttled.throttled} throttling answers absorbed)`, true],
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
