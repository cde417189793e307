// Rotation at scale: a protected fixed pool of 10 and of 50 nodes, every one made from an old spec, rolled onto the
// new one by PoolCapacity (`setPoolCapacity` with `rollout: { maxSurge: 10, maxUnavailable: 0, canary: false, soak: 0 }`,
// as `pulumi up` runs it: validation on, its readings counted against the target; the canary's extra round and the
// soak are waits the user chooses, left out of the machinery measured here) against the local emulator with the
// removal bench's durations (bench/removal.ts: 100 ms API latency, 1 s drain and reset, 3 s per ESS scaling activity,
// 300 ms per route-table task), and a new node Ready 5 s after ESS creates its instance (2 s after its 3 s launch
// activity ends). The Ready wait checks every 1 s (production: 15 s, which adds up to one such pause per round); Cloud
// Assistant polls, pacing and the removal's concurrency are production's.
// Beside each time it prints the floor: the critical path with instant API calls — per round, the surge's nodes
// Ready, then the removal floor of that round's victims (bench/removal.ts floorMs: drains in waves, ESS batches,
// one route task) — and the ESS scaling activities beside their least number (per round one launch and one
// removal per batch of 20).
// Checked from state: the pool ends at its size with only current members, all protected; no member left ESS
// undrained (I1).
// Target: each size ≤ 2 × its floor.
//   npm run bench -- rotation
import * as os from "os";
import { startEmulator, TEST_CREDENTIALS } from "../testing/emulator";
import { fakeCluster } from "../testing/fakeCluster";
import { resetPacer } from "../src/cloud/pacer";
import { setPoolCapacity } from "../src/providers/poolCapacity";
import { ESS_BATCH } from "../src/removal";
import { DEFAULT_ROLLOUT, SPEC_TAG, type Rollout } from "../src/rules";
import { ACTIVITY_MS, COMMAND_MS, floorMs as removalFloorMs, LATENCY_MS, ROUTE_TASK_MS } from "./removal";

const BOOT_MS = 5000;
const POLL_SECONDS = 1;
const ROLLOUT: Required<Rollout> = { ...DEFAULT_ROLLOUT, maxSurge: 10, maxUnavailable: 0, canary: false, soakSeconds: 0 };
const OLD = "0000000000000old";
const NEW = "0000000000000new";

/** The victims of each round: as many outdated members as the surge added (maxUnavailable 0). */
function rounds(nodes: number): number[] {
    const out: number[] = [];
    for (let left = nodes; left > 0; left -= ROLLOUT.maxSurge) out.push(Math.min(ROLLOUT.maxSurge, left));
    return out;
}

/** The critical path with instant API calls (see the header). */
export function floorMs(nodes: number): number {
    return rounds(nodes).reduce((t, victims) => t + BOOT_MS + removalFloorMs(victims), 0);
}

/** The fewest ESS scaling activities: one launch per round, one RemoveInstances per batch of its victims. */
export function floorActivities(nodes: number): number {
    return rounds(nodes).reduce((k, victims) => k + 1 + Math.ceil(victims / ESS_BATCH), 0);
}

interface Row { nodes: number; ms: number; floorMs: number; activities: number; floorActivities: number; calls: number }

async function measure(nodes: number): Promise<Row> {
    resetPacer();
    const emu = await startEmulator({ latencyMs: LATENCY_MS });
    const saved = { ...process.env };
    Object.assign(process.env, {
        ALICLOUD_KUBEADM_ENDPOINT: emu.endpoint, ALIBABA_CLOUD_ACCESS_KEY_ID: TEST_CREDENTIALS.accessKeyId, ALIBABA_CLOUD_ACCESS_KEY_SECRET: TEST_CREDENTIALS.accessKeySecret,
        ALIBABA_CLOUD_ECS_METADATA_DISABLED: "true", ALIBABA_CLOUD_CLI_PROFILE_DISABLED: "true",
    });
    try {
        // fake: the benchmark injects fixed drain, reset and boot times, which a real control plane cannot be made to take
        const cluster = await fakeCluster(emu, "cn-hangzhou", { commandDelayMs: COMMAND_MS });
        const table = emu.addRouteTable().routeTableId;
        const g = emu.addScalingGroup({ desiredCapacity: nodes, maxSize: nodes, configurationTags: { [SPEC_TAG]: OLD } });
        const group = g.scalingGroupId;
        for (const id of emu.scalingGroupInstances(group)) {
            emu.state.scalingInstances.get(id)!.lifecycleState = "Protected";
            const node = cluster.nodes.get(`node-${id}`) ?? cluster.addNode(id, { pool: "bench", pods: ["ReplicaSet"] });
            emu.addRouteEntry(table, { destinationCidrBlock: node.podCidr, nextHopId: id });
        }
        cluster.autoJoin("bench", { readyAfterMs: BOOT_MS, pods: ["ReplicaSet"] });
        const config = emu.state.scalingConfigurations.get(g.activeScalingConfigurationId)!;
        config.tags = { ...config.tags, [SPEC_TAG]: NEW };
        emu.state.activityDurationMs = ACTIVITY_MS;
        emu.state.routeTaskMs = ROUTE_TASK_MS;
        const firstCall = emu.calls.length;
        const start = Date.now();
        await setPoolCapacity({
            region: "cn-hangzhou", scalingGroupId: group, poolName: "bench", masterInstanceId: cluster.master, commands: cluster.commands, size: nodes,
            routeTableId: table, podCidr: "172.16.0.0/16", pollSeconds: POLL_SECONDS, specHash: NEW, rollout: ROLLOUT,
        });
        const ms = Date.now() - start;
        const members = emu.scalingGroupInstances(group);
        const problems = [
            ...cluster.violations.map((v) => `I1: ${v}`),
            ...(members.length !== nodes ? [`ended with ${members.length} member(s), ${nodes} wanted`] : []),
            ...members.filter((id) => emu.instances.get(id)!.tags[SPEC_TAG] !== NEW).map((id) => `${id} is still outdated`),
            ...members.filter((id) => emu.state.scalingInstances.get(id)!.lifecycleState !== "Protected").map((id) => `${id} is not protected`),
        ];
        if (problems.length > 0) throw new Error(problems.join("; "));
        return { nodes, ms, floorMs: floorMs(nodes), activities: emu.activitiesOf(group).length, floorActivities: floorActivities(nodes), calls: emu.calls.length - firstCall };
    } finally {
        process.env = saved;
        await emu.close();
    }
}

export async function main(): Promise<void> {
    console.log(`rotation: maxSurge ${ROLLOUT.maxSurge}, maxUnavailable ${ROLLOUT.maxUnavailable}; ${LATENCY_MS} ms API latency, ${COMMAND_MS} ms drain and reset, ` +
        `${ACTIVITY_MS} ms per scaling activity, ${ROUTE_TASK_MS} ms per route task, node Ready ${BOOT_MS} ms after launch, Ready checks every ${POLL_SECONDS} s; ` +
        `load average ${os.loadavg().map((l) => l.toFixed(2)).join(" ")} on ${os.cpus().length} CPUs`);
    console.log("nodes   wall s   floor s   × floor   ESS activities   floor activities   API calls/node");
    const rows: Row[] = [];
    for (const n of [10, 50]) {
        const r = await measure(n);
        rows.push(r);
        console.log(`${String(n).padStart(5)}  ${(r.ms / 1000).toFixed(2).padStart(7)}  ${(r.floorMs / 1000).toFixed(2).padStart(8)}  ${(r.ms / r.floorMs).toFixed(2).padStart(8)}  ` +
            `${String(r.activities).padStart(15)}  ${String(r.floorActivities).padStart(17)}  ${(r.calls / n).toFixed(1).padStart(15)}`);
    }
    const checks = rows.map((r): [string, boolean] => [`${r.nodes} nodes in ${(r.ms / r.floorMs).toFixed(2)} × the floor (${(r.floorMs / 1000).toFixed(1)} s) ≤ 2 ×`, r.ms <= 2 * r.floorMs]);
    for (const [text, ok] of checks) console.log(`${ok ? "PASS" : "FAIL"}  ${text}`);
    if (checks.some(([, ok]) => !ok)) throw new Error("a benchmark target was missed");
}

if (require.main === module) {
    main().then(() => process.exit(0), (err) => {
        console.error(err);
        process.exit(1);
    });
}
