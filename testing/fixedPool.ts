// A fixed pool as PoolCapacity keeps it, in the emulator world with testing/fakeCluster.ts behind the masters: the
// setup health-repair and rollout tests share.
import type { Emulator } from "./emulator";
import { fakeCluster, type FakeCluster } from "./fakeCluster";
import { setPoolCapacity, type PoolCapacityInputs, type PoolCapacityOutputs } from "../src/providers/poolCapacity";
import { steppedClock } from "./steppedClock";

/** A protected fixed pool of `size` members (its scaling group's id), each a Ready Node of pool `name` with a workload pod. */
export function protectedPool(emu: Emulator, c: FakeCluster, size: number, name = "general"): string {
    const g = emu.addScalingGroup({ maxSize: Math.max(size, 1), desiredCapacity: size });
    for (const id of emu.scalingGroupInstances(g.scalingGroupId)) {
        emu.state.scalingInstances.get(id)!.lifecycleState = "Protected";
        if (!c.nodes.has(`node-${id}`)) c.addNode(id, { pool: name, pods: ["ReplicaSet"] });
    }
    return g.scalingGroupId;
}

/** The member's Node goes NotReady at `since` (ms; its Ready condition's lastTransitionTime, on the masters' clock). */
export function notReadySince(c: FakeCluster, instanceId: string, since: number): void {
    const node = c.nodes.get(`node-${instanceId}`)!;
    node.ready = false;
    node.readySince = new Date(since).toISOString();
}

/**
 * PoolCapacity's run (testing what health repair does) while the masters' clock stands at `at` (ms): the clock a NotReady
 * time is measured on. Its waits are on a clock that each pause moves forward (a Ready wait gives up after its own time
 * on it, however busy the machine).
 */
export function repairAt(c: FakeCluster, at: number, inputs: PoolCapacityInputs): Promise<PoolCapacityOutputs> {
    c.masterNow = () => at;
    return setPoolCapacity(inputs, undefined, steppedClock(at));
}

/** The cluster a rollout test starts from: master 0, and every instance ESS launches joining pool `general` with a workload pod. */
export async function rolloutCluster(emu: Emulator, region: string): Promise<FakeCluster> {
    const c = await fakeCluster(emu, region);
    c.autoJoin("general", { pods: ["ReplicaSet"] });
    return c;
}
