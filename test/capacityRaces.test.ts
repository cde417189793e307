/**
 * Whatever sets a pool's capacity — lowering an autoscaled pool's maximum while the Cluster Autoscaler scales out,
 * two overlapping runs on one fixed pool — never lets ESS choose a member that is not a drained victim (I1).
 * World: the emulator (ESS removes members above a lowered MaxSize, protected members are not removed by a scale-in,
 * a member added after a protect call is unprotected, scale-outs are refused while the process is suspended) and
 * testing/fakeCluster.ts, which records every member that leaves ESS with a Node that was not drained, and makes
 * every instance ESS launches join at once with a workload pod (the harshest timing: in the cloud a new node takes a
 * minute to register).
 */
import * as assert from "assert";
import type { Emulator } from "../testing/emulator";
import { ESS_ACTIONS } from "../testing/emulator/ess";
import { startEmulatorHere, useEmulatorEnvironment } from "../testing/emulator/fixture";
import { fakeCluster, type FakeCluster } from "../testing/fakeCluster";
import { poolCapacityProvider, setPoolCapacity, type PoolCapacityInputs } from "../src/providers/poolCapacity";

const REGION = "cn-hangzhou";
/** Polls: their number depends on timing, so a scale-out is not injected after them. */
const POLLS = ["DescribeInvocationResults", "DescribeScalingActivities"];

interface World { emu: Emulator; c: FakeCluster; group: string; inputs: (extra: Partial<PoolCapacityInputs>) => PoolCapacityInputs }

/** A pool of `members` joined nodes with a workload pod each, a node outside it for evicted pods, every launch joining at once. */
async function world(members: number, group: { maxSize: number; protect: boolean; activityMs: number }): Promise<World> {
    const emu = await startEmulatorHere();
    const c = await fakeCluster(emu, REGION);
    const id = emu.addScalingGroup({ maxSize: group.maxSize, desiredCapacity: members, removalPolicies: ["OldestInstance"] }).scalingGroupId;
    for (const m of emu.scalingGroupInstances(id)) {
        c.addNode(m, { pool: "general", pods: ["ReplicaSet"] });
        if (group.protect) emu.state.scalingInstances.get(m)!.lifecycleState = "Protected";
    }
    c.addNode(emu.addInstance().instanceId, { pool: "other" });
    c.autoJoin("general", { pods: ["ReplicaSet"] });
    emu.state.activityDurationMs = group.activityMs;
    const inputs = (extra: Partial<PoolCapacityInputs>): PoolCapacityInputs => ({
        region: REGION, scalingGroupId: id, poolName: "general", masterInstanceId: c.master, commands: c.commands,
        pollSeconds: 0.02, readyTimeoutSeconds: 5, pollIntervalMs: 5, ...extra,
    });
    return { emu, c, group: id, inputs };
}

/** The Cluster Autoscaler's scale-out (ScaleWithAdjustment +1, as it calls it), straight into the emulator; refused when ESS refuses it. */
function autoscalerScalesOut(emu: Emulator, group: string): boolean {
    try {
        ESS_ACTIONS.ScaleWithAdjustment(emu.state, { ScalingGroupId: group, AdjustmentType: "QuantityChangeInCapacity", AdjustmentValue: "1" });
        return true;
    } catch {
        return false;
    }
}

/** Lets the scaling activities the runs started end, as time would: the emulator's clock steps past them. */
const settle = async (w: World) => w.emu.advance(w.emu.state.activityDurationMs + 10);

describe("capacity changes never let ESS choose a member that is not a drained victim (I1)", function () {
    this.timeout(600_000);
    useEmulatorEnvironment();

    /**
     * Runs `change` on a fresh world once clean (to count its calls), then once per call with `other` injected right
     * after that call, each time asserting I1 and `check`. Returns how many injections ESS took.
     */
    async function afterEveryCall(make: () => Promise<World>, change: (w: World) => Promise<unknown>, other: (w: World) => boolean,
        check: (w: World, label: string) => void): Promise<number> {
        const once = async (injectAfter: number | undefined): Promise<{ calls: number; injected: boolean }> => {
            const w = await make();
            let n = 0;
            let injected = false;
            w.emu.afterRequest = (req) => {
                if (POLLS.includes(req.action) || ++n !== injectAfter) return;
                injected = other(w);
            };
            try {
                await change(w);
                await settle(w);
                const label = `injected after call ${injectAfter ?? "none"}`;
                assert.deepStrictEqual(w.c.violations, [], `${label}: I1`);
                check(w, label);
                return { calls: n, injected };
            } finally {
                await w.emu.close();
            }
        };
        const clean = await once(undefined);
        let injections = 0;
        for (let k = 1; k <= clean.calls; k++) injections += (await once(k)).injected ? 1 : 0;
        return injections;
    }

    it("lowering autoscale.max with a Cluster Autoscaler scale-out after every call: I1 holds, the maximum is set, scale-out runs again", async () => {
        const injections = await afterEveryCall(() => world(4, { maxSize: 6, protect: false, activityMs: 0 }), async (w) => {
            const auto = w.inputs({ mode: "observe", minSize: 0 });
            await poolCapacityProvider.update!("x", { ...auto, maxSize: 6, readyInstanceIds: [] }, { ...auto, maxSize: 2 });
        }, (w) => autoscalerScalesOut(w.emu, w.group), (w, label) => {
            const g = w.emu.scalingGroups.get(w.group)!;
            assert.strictEqual(g.maxSize, 2, `${label}: MaxSize`);
            assert.ok(w.emu.scalingGroupInstances(w.group).length <= 2, `${label}: members`);
            assert.deepStrictEqual(g.suspendedProcesses ?? [], [], `${label}: scale-out resumed`);
        });
        assert.ok(injections > 0, "ESS took at least one of the scale-outs");
    });

    it("a fixed pool shrinking 5 → 3 while a second run with stale state raises it to 4 after any of its calls: I1 holds", async () => {
        // The other run's capacity step as it lands: desired 4 (its size), MaxSize raised to fit.
        const staleRaise = (w: World) => {
            const g = w.emu.scalingGroups.get(w.group)!;
            try {
                ESS_ACTIONS.ModifyScalingGroup(w.emu.state, { ScalingGroupId: w.group, DesiredCapacity: "4", MaxSize: String(Math.max(g.maxSize, 4)) });
                return true;
            } catch {
                return false;
            }
        };
        const injections = await afterEveryCall(() => world(5, { maxSize: 5, protect: true, activityMs: 0 }), async (w) => {
            await setPoolCapacity(w.inputs({ size: 3 })).catch(() => undefined);
        }, staleRaise, () => undefined);
        assert.ok(injections > 0);
    });

    for (const activityMs of [0, 30]) {
        it(`two runs on one fixed pool at once (5 → 3, and 5 → 4; activities ${activityMs} ms): I1 holds`, async () => {
            for (let round = 0; round < 3; round++) {
                const w = await world(5, { maxSize: 5, protect: true, activityMs });
                try {
                    await Promise.allSettled([setPoolCapacity(w.inputs({ size: 3 })), setPoolCapacity(w.inputs({ size: 4 }))]);
                    await settle(w);
                    assert.deepStrictEqual(w.c.violations, [], `round ${round}: I1`);
                } finally {
                    await w.emu.close();
                }
            }
        });
    }
});
