// An autoscaled pool's rollout (PoolCapacity in `observe` mode with `specHash` and `rollout`) in the emulator world: ESS,
// ECS and Cloud Assistant are the emulator; the cluster behind the masters is testing/fakeCluster.ts. The configuration's
// tag (AUTOSCALED_SPEC_LABEL) changes as Pulumi's in-place update would make it; ESS puts it on the instances it creates
// from then on (testing/emulator/ess.ts launchInstance), and refuses a removal below the group's MinSize.
// The Cluster Autoscaler is modelled by its scale-down choice (docs/upstream.md#autoscaler-scale-down-disabled): every
// node of the group is a candidate unless annotated `cluster-autoscaler.kubernetes.io/scale-down-disabled`, the harshest
// reading (any node may be unneeded). The invariants are read from state as every member leaves ESS, every drain starts
// and every instance launches.
import * as assert from "assert";
import { call, startEmulatorHere, useEmulator, useEmulatorEnvironment } from "../testing/emulator/fixture";
import type { FakeCluster } from "../testing/fakeCluster";
import { rolloutCluster } from "../testing/fixedPool";
import { POOL_CAPACITY_PROVIDER_VERSION, poolCapacityProvider, previewRollout, rolloutStart, updateObservedPool, type PoolCapacityInputs, type RolloutStart } from "../src/providers/poolCapacity";
import { AUTOSCALED_SPEC_LABEL, DEFAULT_ROLLOUT, OUTDATED_TAINT, type Rollout } from "../src/rules";
import type { Emulator } from "../testing/emulator";
import { launchInstance } from "../testing/emulator/ess";
import { faultMatrix, rolloutCases } from "../testing/faultMatrix";
import { steppedClock } from "../testing/steppedClock";
import { engineUpdate } from "../testing/partialUpdate";

const REGION = "cn-hangzhou";
const OLD = "00000000000000aa";
const NEW = "00000000000000bb";
const NEWER = "00000000000000cc";

interface Pool {
    group: string;
    /** Broken invariants, as they happened. */
    broken: string[];
    /** The members the group had at most (since the last {@link Pool.expect}). */
    most: () => number;
    /** From now on: the Ready floor is `size − maxUnavailable` (the autoscaler moved the pool), and `most` counts from the members there. */
    expect: (size: number) => void;
    /** The configuration carries `spec` from now on, and members made from another are the outdated ones. */
    rollTo: (spec: string) => void;
}

/**
 * An autoscaled pool of `size` members made from the old spec (each a Ready Node with a workload pod; unprotected, as the
 * autoscaler needs them), within `min`–`max`; its configuration then carries the new spec. Watched from state: Ready and
 * schedulable members never below `size − maxUnavailable`; no current member leaves while an outdated one remains; at
 * every drain and removal, no current Node is a scale-down candidate of the autoscaler (not annotated); the group never
 * above `max` nor below `min`.
 */
function autoscaledPool(emu: Emulator, c: FakeCluster, size: number, min: number, max: number, maxUnavailable: number): Pool {
    const g = emu.addScalingGroup({ minSize: min, maxSize: max, desiredCapacity: size, configurationTags: { [AUTOSCALED_SPEC_LABEL]: OLD } });
    const group = g.scalingGroupId;
    for (const id of emu.scalingGroupInstances(group)) c.addNode(id, { pool: "general", pods: ["ReplicaSet"] });
    const config = emu.state.scalingConfigurations.get(g.activeScalingConfigurationId)!;
    config.tags = { ...config.tags, [AUTOSCALED_SPEC_LABEL]: NEW };
    const broken: string[] = [];
    let most = size;
    let spec = NEW;
    const members = () => [...emu.state.scalingInstances.values()].filter((m) => m.scalingGroupId === group).map((m) => m.instanceId);
    const nodeOf = (id: string) => [...c.nodes.values()].find((n) => n.instanceId === id);
    const outdated = (id: string) => emu.instances.get(id)?.tags[AUTOSCALED_SPEC_LABEL] !== spec;
    const available = (except?: string) => members().filter((id) => { const n = nodeOf(id); return n && n.ready && !n.unschedulable && n.name !== except; }).length;
    const check = (when: string, except?: string) => {
        const n = available(except);
        if (n < size - maxUnavailable) broken.push(`${when}: ${n} available node(s), below size − maxUnavailable = ${size - maxUnavailable}`);
        // The autoscaler's scale-down candidates among the current nodes: a Ready Node without the annotation.
        const exposed = members().filter((id) => !outdated(id) && nodeOf(id)?.ready && nodeOf(id)?.scaleDownDisabled !== "true");
        if (exposed.length > 0) broken.push(`${when}: current node(s) ${exposed.join(", ")} could be scaled down by the autoscaler (not annotated)`);
        most = Math.max(most, members().length);
        if (members().length > max) broken.push(`${when}: ${members().length} members, above autoscale.max ${max}`);
    };
    const left = emu.state.onMemberLeft;
    emu.state.onMemberLeft = (id, grp, released) => {
        left?.(id, grp, released);
        if (grp !== group) return;
        if (!outdated(id) && members().some(outdated)) broken.push(`current ${id} left while outdated ${members().filter(outdated).join(", ")} remained`);
        if (members().length < min) broken.push(`after ${id} left: ${members().length} members, below autoscale.min ${min}`);
        check(`after ${id} left`);
    };
    c.onDrain = (node) => check(`draining ${node}`, node);
    const join = emu.state.onUserDataRun;
    emu.state.onUserDataRun = (inst) => {
        join?.(inst);
        most = Math.max(most, members().length);
        if (members().length > max) broken.push(`${inst.instanceId} launched: ${members().length} members, above autoscale.max ${max}`);
    };
    const expect = (n: number) => { size = n; most = members().length; };
    const rollTo = (s: string) => { spec = s; config.tags = { ...config.tags, [AUTOSCALED_SPEC_LABEL]: s }; };
    return { group, broken, most: () => most, expect, rollTo };
}

/**
 * One `pulumi up` of the pool's PoolCapacity as the engine runs it (testing/partialUpdate.ts): update(old state, new
 * inputs); a failure that carries `id` and `properties` is a partial failure whose properties become the state
 * (docs/upstream.md#pulumi-partial-update-pool-capacity), any other failure leaves the state as it was. The state after
 * the run, and the run's error if any.
 */
async function pulumiUp(state: Record<string, unknown>, news: PoolCapacityInputs): Promise<{ state: Record<string, unknown>; error?: Error }> {
    let stored = state;
    try {
        await engineUpdate(state, news, async (olds, n) => (await poolCapacityProvider.update!("x", olds, n)).outs, (s) => { stored = s; });
        return { state: stored };
    } catch (err) {
        return { state: stored, error: err as Error };
    }
}

describe("autoscaled pool rollout (emulator)", () => {
    const ctx = useEmulator();
    let c: FakeCluster;
    beforeEach(async () => { c = await rolloutCluster(ctx.emu, REGION); });
    afterEach(() => assert.deepStrictEqual(c.violations, [], "I1: every member left ESS drained"));

    const inputs = (group: string, min: number, max: number, rollout?: Partial<Rollout>): PoolCapacityInputs => ({
        region: REGION, scalingGroupId: group, poolName: "general", masterInstanceId: c.master, commands: c.commands, mode: "observe", minSize: min, maxSize: max,
        pollSeconds: 0.01, readyTimeoutSeconds: 5, pollIntervalMs: 5, specHash: NEW, ...(rollout ? { rollout: { ...DEFAULT_ROLLOUT, ...rollout } } : {}),
    });
    /** `pulumi up`'s update of the pool's PoolCapacity (observe mode), its gates on a clock of their own. */
    const run = (i: PoolCapacityInputs) => updateObservedPool({ mode: "observe" }, i, undefined, steppedClock());
    const specs = (group: string) => ctx.emu.scalingGroupInstances(group).map((id) => ctx.emu.instances.get(id)!.tags[AUTOSCALED_SPEC_LABEL]);
    const marked = () => [...c.nodes.values()].filter((n) => n.scaleDownDisabled || n.scaleDownHeld || n.taints.some((t) => t.key === OUTDATED_TAINT)).map((n) => n.name);

    it("replaces every outdated node: surge within autoscale.max, current nodes held from scale-down throughout, ending with only current nodes and no annotation", async () => {
        const pool = autoscaledPool(ctx.emu, c, 3, 1, 6, 0);
        await run(inputs(pool.group, 1, 6, {}));
        assert.deepStrictEqual(pool.broken, []);
        assert.deepStrictEqual(specs(pool.group), [NEW, NEW, NEW], "as many members as before, all current");
        assert.deepStrictEqual(marked(), [], "no Node keeps the annotation or the taint");
        assert.strictEqual(ctx.emu.state.scalingGroups.get(pool.group)!.desiredCapacity, 3, "the removals lowered the desired capacity back");
        for (const id of ctx.emu.scalingGroupInstances(pool.group)) assert.strictEqual(ctx.emu.state.scalingInstances.get(id)!.lifecycleState, "InService", `${id} unprotected: the autoscaler's to remove`);
    });

    it("at autoscale.max with maxUnavailable 1: no surge; removes first, one at a time, and refills, never above the maximum", async () => {
        const pool = autoscaledPool(ctx.emu, c, 3, 1, 3, 1);
        await run(inputs(pool.group, 1, 3, { maxUnavailable: 1 }));
        assert.deepStrictEqual(pool.broken, []);
        assert.strictEqual(pool.most(), 3, "never above autoscale.max");
        assert.deepStrictEqual(specs(pool.group), [NEW, NEW, NEW]);
        assert.deepStrictEqual(marked(), []);
    });

    it("at autoscale.max without validation: the run ends only once the last batch's replacements are Ready nodes", async () => {
        c.autoJoin("general", { pods: ["ReplicaSet"], readyAfterListings: 3 });
        const pool = autoscaledPool(ctx.emu, c, 3, 1, 3, 1);
        await run(inputs(pool.group, 1, 3, { maxUnavailable: 1, validate: false }));
        assert.deepStrictEqual(pool.broken, []);
        assert.deepStrictEqual(specs(pool.group), [NEW, NEW, NEW]);
        const notReady = ctx.emu.scalingGroupInstances(pool.group).filter((id) => !c.nodes.get(`node-${id}`)?.ready);
        assert.deepStrictEqual(notReady, [], "every member a Ready Node when `pulumi up` ends");
    });

    it("at autoscale.max with maxUnavailable 0: the preview says it pauses, and the run pauses naming the maximum before anything changes", async () => {
        const pool = autoscaledPool(ctx.emu, c, 2, 1, 2, 0);
        const before = ctx.emu.scalingGroupInstances(pool.group);
        assert.match((await previewRollout(inputs(pool.group, 1, 2, {})))!, /2 of 2 node\(s\) outdated, and the pool is at autoscale\.max \(2\): no node can surge and maxUnavailable is 0, so the rollout pauses/);
        await assert.rejects(run(inputs(pool.group, 1, 2, {})), /pool general: the rollout cannot go on: .*at autoscale\.max 2: no node can surge.*autoscale\.max/s);
        assert.deepStrictEqual(ctx.emu.scalingGroupInstances(pool.group), before, "nothing launched, nothing removed");
    });

    it("the preview says which: a surge below the maximum, remove-first at it; with the spec changing in the same preview, every member counts as outdated", async () => {
        const pool = autoscaledPool(ctx.emu, c, 2, 1, 5, 0);
        assert.match((await previewRollout(inputs(pool.group, 1, 5, { maxSurge: 2, canary: false })))!, /^pool general: rollout: 2 of 2 node\(s\) outdated: surges 2 node\(s\) at a time \(autoscale\.max 5\)/);
        assert.match((await previewRollout(inputs(pool.group, 1, 5, { maxSurge: 2 })))!, /surges 1 node\(s\) \(the canary first\)/);
        assert.match((await previewRollout(inputs(pool.group, 1, 2, { maxUnavailable: 1 })))!, /at autoscale\.max \(2\): no surge; it removes first, up to 1 node\(s\) at a time/);
        const unknown = { ...inputs(pool.group, 1, 5, {}), specHash: "04da6b54-80e4-46f7-96ec-b56ff0331ba9" };
        const group = ctx.emu.state.scalingGroups.get(pool.group)!;
        group.desiredCapacity = 3;
        launchInstance(ctx.emu.state, group); // one member made from the new spec
        assert.match((await previewRollout(unknown))!, /3 of 3 node\(s\) outdated/);
        assert.match((await previewRollout(inputs(pool.group, 1, 5, {})))!, /2 of 3 node\(s\) outdated/, "known: read from the instances' tags");
        assert.strictEqual(await previewRollout({ ...inputs(pool.group, 1, 5), rollout: undefined }), undefined, "no rollout, nothing to say");
    });

    it("never below autoscale.min: a pool at min = max with maxUnavailable 1 pauses naming the minimum; nothing removed", async () => {
        const pool = autoscaledPool(ctx.emu, c, 2, 2, 2, 1);
        const before = ctx.emu.scalingGroupInstances(pool.group);
        await assert.rejects(run(inputs(pool.group, 2, 2, { maxUnavailable: 1 })), /autoscale\.min is 2: removing an outdated node would go below it/);
        assert.deepStrictEqual(ctx.emu.scalingGroupInstances(pool.group), before);
    });

    it("a drain blocked by a PodDisruptionBudget pauses with the current nodes still held; the next run resumes, holds again (idempotent) and releases them at the end; an annotation somebody else set stays", async () => {
        const pool = autoscaledPool(ctx.emu, c, 2, 1, 4, 0);
        const other = c.addNode(ctx.emu.addInstance().instanceId, { pool: "general" });
        Object.assign(other, { scaleDownDisabled: "true" }); // the user's own, on a Node outside the group but in the pool label
        c.failDrains = 1;
        await assert.rejects(run(inputs(pool.group, 1, 4, {})), /rollout paused/);
        const current = ctx.emu.scalingGroupInstances(pool.group).filter((id) => ctx.emu.instances.get(id)!.tags[AUTOSCALED_SPEC_LABEL] === NEW);
        assert.ok(current.length > 0, "the surge is there");
        for (const id of current) assert.deepStrictEqual([c.nodes.get(`node-${id}`)!.scaleDownDisabled, c.nodes.get(`node-${id}`)!.scaleDownHeld], ["true", "general"], `${id} held while paused`);
        await run(inputs(pool.group, 1, 4, {}));
        assert.deepStrictEqual(pool.broken, []);
        // A run without the state the paused one left (no record: as after a crash) takes the members it finds as the
        // size, the surge included: the pool may end that much larger, all current and released, for the autoscaler.
        assert.deepStrictEqual(specs(pool.group), [NEW, NEW, NEW]);
        assert.deepStrictEqual(marked(), [other.name], "only the user's annotation is left");
        assert.deepStrictEqual([other.scaleDownDisabled, other.scaleDownHeld ?? ""], ["true", ""]);
    });

    it("a rollout that stays paused (every drain blocked by a PodDisruptionBudget), run by `pulumi up` four times, surges once: the pool stays at its size plus the canary", async () => {
        const pool = autoscaledPool(ctx.emu, c, 2, 1, 6, 0);
        c.failDrains = 1000;
        // The dynamic provider server passes the serialized provider among the new inputs; delete loads it from the state.
        const news = { ...inputs(pool.group, 1, 6, { soakSeconds: 0 }), providerVersion: POOL_CAPACITY_PROVIDER_VERSION, __provider: "the provider" } as PoolCapacityInputs;
        let state: Record<string, unknown> = { ...news, specHash: OLD, readyInstanceIds: [] };
        const sizes: number[] = [];
        for (let run = 0; run < 4; run++) {
            const up = await pulumiUp(state, news);
            assert.match(up.error?.message ?? "", /rollout paused: .*disruption budget/s);
            assert.deepStrictEqual((up.error as Error & { reasons?: string[] }).reasons, [up.error!.message], "the engine shows the reasons, not the message");
            state = up.state;
            sizes.push(ctx.emu.scalingGroupInstances(pool.group).length);
        }
        assert.deepStrictEqual(sizes, [3, 3, 3, 3], "2 members and the canary's surge, every run");
        assert.deepStrictEqual(state, { ...news, readyInstanceIds: [], rolloutStart: { specHash: NEW, size: 2, seen: 3 } }, "the new inputs, the provider among them, and the record");
        // The inputs unchanged, the rollout under way is still a change; the preview says the run resumes it, surge there.
        assert.strictEqual((await poolCapacityProvider.diff!("x", state, news)).changes, true);
        assert.match((await previewRollout(news, state.rolloutStart as RolloutStart))!, /2 of 3 node\(s\) outdated: resumes the rollout begun at 2 node\(s\), its surge there: removes outdated ones/);
        assert.strictEqual(ctx.emu.state.scalingGroups.get(pool.group)!.desiredCapacity, 3);
        assert.deepStrictEqual(pool.broken, []);
        // The drain unblocked: the next run finishes at the size the rollout started with.
        c.failDrains = 0;
        const up = await pulumiUp(state, news);
        assert.strictEqual(up.error, undefined);
        assert.strictEqual(up.state.rolloutStart, undefined, "the record goes with the rollout");
        assert.deepStrictEqual(specs(pool.group), [NEW, NEW], "ends at the size it started with, all current");
        assert.deepStrictEqual(pool.broken, []);
        assert.deepStrictEqual(marked(), []);
    });

    it("an autoscaled rollout that version 6 paused (surge there, current nodes held) is finished by this version after one pulumi up (an update)", async () => {
        const pool = autoscaledPool(ctx.emu, c, 2, 1, 4, 0);
        c.failDrains = 1;
        await assert.rejects(run(inputs(pool.group, 1, 4, {})), /rollout paused/); // the cloud and cluster state a paused rollout leaves
        const olds = { ...inputs(pool.group, 1, 4, { soakSeconds: 0 }), providerVersion: "6", readyInstanceIds: [] };
        const news = { ...inputs(pool.group, 1, 4, { soakSeconds: 0 }), providerVersion: POOL_CAPACITY_PROVIDER_VERSION };
        const diff = await poolCapacityProvider.diff!("x", olds, news);
        assert.deepStrictEqual([diff.changes, diff.replaces ?? []], [true, []]);
        await poolCapacityProvider.update!("x", olds, news);
        assert.deepStrictEqual(pool.broken, []);
        assert.deepStrictEqual(specs(pool.group), [NEW, NEW, NEW], "the resumed size counts the surge, as version 6 did");
        assert.deepStrictEqual(marked(), []);
    });

    it("a rollout that version 7 paused (its state without a record) runs this version after one pulumi up: an update that resumes with the size ESS shows and, paused again, leaves its record, so the runs after it surge no more", async () => {
        assert.strictEqual(POOL_CAPACITY_PROVIDER_VERSION, "8");
        const pool = autoscaledPool(ctx.emu, c, 2, 1, 6, 0);
        c.failDrains = 1000;
        await assert.rejects(run(inputs(pool.group, 1, 6, {})), /rollout paused/); // the cloud and cluster state version 7's paused rollout leaves
        assert.strictEqual(ctx.emu.scalingGroupInstances(pool.group).length, 3);
        const v7 = { ...inputs(pool.group, 1, 6, { soakSeconds: 0 }), providerVersion: "7", readyInstanceIds: [] };
        const news = { ...inputs(pool.group, 1, 6, { soakSeconds: 0 }), providerVersion: POOL_CAPACITY_PROVIDER_VERSION };
        const diff = await poolCapacityProvider.diff!("x", v7, news);
        assert.deepStrictEqual([diff.changes, diff.replaces ?? []], [true, []]);
        let up = await pulumiUp(v7, news);
        assert.match(up.error?.message ?? "", /rollout paused/);
        // Version 7 left no record: the size is what ESS shows, its surge in it (3), as version 7 read it.
        assert.deepStrictEqual(up.state.rolloutStart, { specHash: NEW, size: 3, seen: 4 });
        assert.strictEqual(ctx.emu.scalingGroupInstances(pool.group).length, 4);
        up = await pulumiUp(up.state, news);
        assert.match(up.error?.message ?? "", /rollout paused/);
        assert.strictEqual(ctx.emu.scalingGroupInstances(pool.group).length, 4, "no further surge");
        c.failDrains = 0;
        up = await pulumiUp(up.state, news);
        assert.strictEqual(up.error, undefined);
        assert.deepStrictEqual(specs(pool.group), [NEW, NEW, NEW]);
        assert.deepStrictEqual(pool.broken, []);
        assert.deepStrictEqual(marked(), []);
    });

    it("autoscale.max lowered while the surge node is not Ready: the shrink removes that node, never a Ready outdated one; the rollout, at the maximum with maxUnavailable 0, pauses", async () => {
        const pool = autoscaledPool(ctx.emu, c, 2, 1, 4, 0);
        c.autoJoin("general", { pods: ["ReplicaSet"], readyAfterListings: 1_000_000 });
        await assert.rejects(run({ ...inputs(pool.group, 1, 4, {}), readyTimeoutSeconds: 0.3 }), /not Ready: i-emu/i);
        assert.strictEqual(ctx.emu.scalingGroupInstances(pool.group).length, 3, "the surge node, not Ready");
        const surge = ctx.emu.scalingGroupInstances(pool.group).find((id) => ctx.emu.instances.get(id)!.tags[AUTOSCALED_SPEC_LABEL] === NEW)!;
        await assert.rejects(run({ ...inputs(pool.group, 1, 2, {}), readyTimeoutSeconds: 0.3 }), /the rollout cannot go on: .*autoscale\.max 2/s);
        // The one exception to "no current node leaves while an outdated one remains": a shrink the user asked for takes a
        // new node that is not Ready (it costs no Ready node) before a Ready outdated one.
        assert.deepStrictEqual(pool.broken.filter((b) => !b.startsWith(`current ${surge} left while outdated`)), []);
        assert.deepStrictEqual(specs(pool.group), [OLD, OLD], "the NotReady new node went; both Ready outdated nodes stay");
    });

    it("without rollout, outdated nodes stay and nothing is held; PoolCapacity's check takes a rollout in observe mode", async () => {
        const pool = autoscaledPool(ctx.emu, c, 2, 1, 4, 0);
        const before = ctx.emu.scalingGroupInstances(pool.group);
        await run(inputs(pool.group, 1, 4));
        assert.deepStrictEqual(ctx.emu.scalingGroupInstances(pool.group), before);
        assert.deepStrictEqual(marked(), []);
        assert.deepStrictEqual((await poolCapacityProvider.check!({}, inputs(pool.group, 1, 4, {}))).failures, []);
    });

    it("a rollout stopped after a batch whose victims took its surge away, then grown by the autoscaler: the next run counts the autoscaler's node in its size, keeps that many Ready nodes and ends there", async () => {
        const pool = autoscaledPool(ctx.emu, c, 2, 1, 6, 0);
        const news = { ...inputs(pool.group, 1, 6, { soakSeconds: 0 }), readyTimeoutSeconds: 0.5, providerVersion: POOL_CAPACITY_PROVIDER_VERSION };
        // CoreDNS goes down with the first drain: the validation after the first batch fails.
        const drain = c.onDrain;
        c.onDrain = (node) => { drain?.(node); c.system.deployments = [{ name: "kube-system/coredns", replicas: 2, available: 0 }]; };
        let up = await pulumiUp({ ...news, specHash: OLD, readyInstanceIds: [] }, news);
        assert.match(up.error?.message ?? "", /failed validation after replacing 1 outdated node/);
        c.onDrain = drain;
        c.system.deployments = [{ name: "kube-system/coredns", replicas: 2, available: 2 }];
        assert.deepStrictEqual(specs(pool.group).sort(), [OLD, NEW].sort(), "one outdated node replaced, its surge gone with it");
        assert.deepStrictEqual(up.state.rolloutStart, { specHash: NEW, size: 2, seen: 2 });
        // The Cluster Autoscaler scales the pool up by one (pods pending).
        const group = ctx.emu.state.scalingGroups.get(pool.group)!;
        group.desiredCapacity = 3;
        launchInstance(ctx.emu.state, group);
        pool.expect(3);
        up = await pulumiUp(up.state, news);
        assert.strictEqual(up.error, undefined);
        assert.deepStrictEqual(pool.broken, [], "Ready nodes never below the 3 the autoscaler wanted");
        assert.deepStrictEqual(specs(pool.group), [NEW, NEW, NEW], "ends at the autoscaler's 3, all current");
    });

    it("a spec replaced while its rollout is paused (its canary never Ready): the rollout to the new spec starts from the pool as the first one began it, and ends there", async () => {
        c.autoJoin("general", { pods: ["ReplicaSet"], readyAfterListings: 1_000_000 }); // nodes of the first spec never get Ready
        const pool = autoscaledPool(ctx.emu, c, 2, 1, 3, 0);
        const first = { ...inputs(pool.group, 1, 3, { soakSeconds: 0 }), readyTimeoutSeconds: 0.3, providerVersion: POOL_CAPACITY_PROVIDER_VERSION };
        let up = await pulumiUp({ ...first, specHash: OLD, readyInstanceIds: [] }, first);
        assert.match(up.error?.message ?? "", /not Ready: i-emu/i);
        assert.deepStrictEqual(specs(pool.group), [OLD, OLD, NEW], "the canary, not Ready");
        // The user fixes the spec; its nodes get Ready.
        pool.rollTo(NEWER);
        c.autoJoin("general", { pods: ["ReplicaSet"] });
        up = await pulumiUp(up.state, { ...first, specHash: NEWER, readyTimeoutSeconds: 5 });
        assert.strictEqual(up.error, undefined);
        assert.deepStrictEqual(pool.broken, []);
        assert.deepStrictEqual(specs(pool.group), [NEWER, NEWER], "the size the first rollout began with, all current");
        assert.strictEqual(up.state.rolloutStart, undefined);
    });

    it("a paused rollout whose pool the autoscaler scaled down meanwhile: the next run's size is what ESS shows, it surges no more than maxSurge, and ends at that size", async () => {
        const pool = autoscaledPool(ctx.emu, c, 5, 1, 8, 0);
        c.failDrains = 1000;
        const news = { ...inputs(pool.group, 1, 8, { soakSeconds: 0 }), providerVersion: POOL_CAPACITY_PROVIDER_VERSION };
        let up = await pulumiUp({ ...news, specHash: OLD, readyInstanceIds: [] }, news);
        assert.match(up.error?.message ?? "", /rollout paused/);
        assert.strictEqual(ctx.emu.scalingGroupInstances(pool.group).length, 6);
        // The Cluster Autoscaler finds 2 outdated nodes unneeded (the current one is held): drained, then removed with the
        // desired capacity lowered (its RemoveInstances).
        pool.expect(3);
        const victims = ctx.emu.scalingGroupInstances(pool.group).filter((id) => ctx.emu.instances.get(id)!.tags[AUTOSCALED_SPEC_LABEL] === OLD).slice(0, 2);
        for (const id of victims) Object.assign(c.nodes.get(`node-${id}`)!, { unschedulable: true, pods: [] });
        await call("ess", "RemoveInstances", { ScalingGroupId: pool.group, InstanceId: victims });
        for (const id of victims) c.nodes.delete(`node-${id}`);
        assert.strictEqual(ctx.emu.state.scalingGroups.get(pool.group)!.desiredCapacity, 4);
        pool.expect(3);
        c.failDrains = 0;
        up = await pulumiUp(up.state, news);
        assert.strictEqual(up.error, undefined);
        assert.deepStrictEqual(pool.broken, []);
        assert.strictEqual(pool.most(), 5, "never above the 4 members it found and one surge (maxSurge 1)");
        assert.deepStrictEqual(specs(pool.group), [NEW, NEW, NEW, NEW], "ends at the 4 the autoscaler left, all current");
    });

    it("property: sizes 1–4, autoscale.max size…size+2, surge 0–2, unavailable 0–1, with and without a canary: invariants hold; the pool ends with only current nodes within min/max, or pauses unchanged when nothing may go", async function () {
        this.timeout(600_000);
        const failures: string[] = [];
        for (const { size, maxSurge, maxUnavailable, canary, at: bounds } of rolloutCases()) {
            for (let room = 0; room <= 2; room++) {
                c = await rolloutCluster(ctx.emu, REGION);
                const min = 1;
                const max = size + room;
                const pool = autoscaledPool(ctx.emu, c, size, min, max, maxUnavailable);
                const before = ctx.emu.scalingGroupInstances(pool.group);
                const at = `${bounds}, max ${max}`;
                // Nothing may go: no room to surge (none asked, or at the maximum) and no node may be unavailable,
                // or the only way is to remove below the minimum.
                const stuck = (maxSurge === 0 || room === 0) && (maxUnavailable === 0 || size - 1 < min);
                const outcome = await run(inputs(pool.group, min, max, { maxSurge, maxUnavailable, canary })).then(() => "done", (e: Error) => e.message);
                const end = specs(pool.group);
                if (pool.broken.length > 0) failures.push(`${at}: ${pool.broken.join("; ")}`);
                if (c.violations.length > 0) failures.push(`${at}: ${c.violations.join("; ")}`);
                if (stuck) {
                    if (!/the rollout cannot go on/.test(outcome)) failures.push(`${at}: expected a pause, got ${outcome.split("\n")[0]}`);
                    if (ctx.emu.scalingGroupInstances(pool.group).join() !== before.join()) failures.push(`${at}: a paused rollout changed the pool`);
                } else if (outcome !== "done" || end.length !== size || end.some((s) => s !== NEW)) {
                    failures.push(`${at}: ended with ${end.join(", ")} (${outcome.split("\n")[0]})`);
                }
                if (marked().length > 0 && !stuck) failures.push(`${at}: ${marked().join(", ")} still marked`);
            }
        }
        assert.deepStrictEqual(failures, []);
    });
});

describe("where an autoscaled pool's rollout resumes (pure)", () => {
    const limits = { min: 1, max: 6 };
    it("without a record the size is what ESS shows (within autoscale.max); with one, the recorded size moved by what the pool changed since the run stopped, never above what ESS shows, within autoscale.min/max, whatever the spec", () => {
        const paused = { specHash: NEW, size: 2, seen: 3 }; // stopped with its surge there
        assert.deepStrictEqual(rolloutStart(3, NEW, limits), { specHash: NEW, size: 3, seen: 3 }, "no record (a crash, version 7): the surge counts");
        assert.deepStrictEqual(rolloutStart(3, NEW, { min: 1, max: 2 }), { specHash: NEW, size: 2, seen: 3 }, "no record, autoscale.max lowered below the pool: the maximum");
        assert.deepStrictEqual(rolloutStart(3, NEW, limits, paused), { specHash: NEW, size: 2, seen: 3 }, "its own surge is not counted again");
        assert.deepStrictEqual(rolloutStart(5, NEW, limits, paused), { specHash: NEW, size: 4, seen: 5 }, "the autoscaler grew the pool by 2 meanwhile: counted");
        const batched = { specHash: NEW, size: 2, seen: 2 }; // stopped after a batch whose victims took the surge away
        assert.deepStrictEqual(rolloutStart(3, NEW, limits, batched), { specHash: NEW, size: 3, seen: 3 }, "the autoscaler's node is counted, though the rollout surged once");
        assert.deepStrictEqual(rolloutStart(4, NEW, { min: 1, max: 8 }, { specHash: NEW, size: 5, seen: 6 }), { specHash: NEW, size: 4, seen: 4 }, "the pool lost 2 meanwhile: the size is what ESS shows, not less");
        assert.deepStrictEqual(rolloutStart(10, NEW, { min: 1, max: 20 }, { specHash: NEW, size: 10, seen: 12 }), { specHash: NEW, size: 10, seen: 10 },
            "the autoscaler removed the rollout's 2 NotReady surge nodes: the size (and the floor) stays 10, not 8");
        assert.deepStrictEqual(rolloutStart(3, NEW, limits, { specHash: NEW, size: 4, seen: 3 }), { specHash: NEW, size: 3, seen: 3 }, "never above what ESS shows: a surge launches no more than maxSurge");
        assert.deepStrictEqual(rolloutStart(3, NEWER, limits, paused), { specHash: NEWER, size: 2, seen: 3 }, "another spec: taken over, the old rollout's surge not counted");
        assert.deepStrictEqual(rolloutStart(3, NEW, { min: 3, max: 6 }, paused), { specHash: NEW, size: 3, seen: 3 }, "autoscale.min raised above the size: the minimum");
        assert.deepStrictEqual(rolloutStart(1, NEW, { min: 1, max: 1 }, paused), { specHash: NEW, size: 1, seen: 1 }, "autoscale.max lowered below the size: the maximum");
        assert.deepStrictEqual(rolloutStart(3, NEW, limits, { specHash: NEW, size: 2 } as RolloutStart), { specHash: NEW, size: 3, seen: 3 }, "a record without `seen`: as none");
    });
});

describe("autoscaled pool rollout under faults (emulator): every mutating call refused once in turn, then a re-run", () => {
    useEmulatorEnvironment();

    /**
     * A fresh world: an autoscaled pool of `size` (`min`–`max`) made from the old spec, the configuration on the new one.
     * Default 2 (1–4), the default rollout. Its run is `updateObservedPool` with no state (what a crash leaves: every run
     * reads the pool from ESS), or, with `engine`, the provider's update with the state the engine keeps between runs
     * ({@link pulumiUp}: a run stopped after the rollout began leaves its record there).
     */
    function worldOf(size = 2, min = 1, max = 4, rollout: Rollout = DEFAULT_ROLLOUT, engine = false) {
        return async (): Promise<{ emu: Emulator; c: FakeCluster; pool: Pool; run: () => Promise<void> }> => {
            const emu = await startEmulatorHere();
            const c = await rolloutCluster(emu, REGION);
            const pool = autoscaledPool(emu, c, size, min, max, rollout.maxUnavailable);
            const news: PoolCapacityInputs = {
                region: REGION, scalingGroupId: pool.group, poolName: "general", masterInstanceId: c.master, commands: c.commands, mode: "observe", minSize: min, maxSize: max,
                pollSeconds: 0.01, readyTimeoutSeconds: 5, pollIntervalMs: 5, specHash: NEW, rollout: engine ? { ...rollout, soakSeconds: 0 } : rollout,
            };
            let state: Record<string, unknown> = { ...news, specHash: OLD, readyInstanceIds: [] };
            const run = engine
                ? async () => {
                    const up = await pulumiUp(state, news);
                    state = up.state;
                    if (up.error) throw up.error;
                }
                : () => updateObservedPool({ mode: "observe" }, news, undefined, steppedClock());
            return { emu, c, pool, run };
        };
    }

    /** What broke in a world after its faulty run and the re-run; `ends` checks the members' count it ended with. */
    const brokenIn = (ends: (n: number) => boolean) => (w: { emu: Emulator; c: FakeCluster; pool: Pool }, at: string) => {
        const end = w.emu.scalingGroupInstances(w.pool.group).map((id) => w.emu.instances.get(id)!.tags[AUTOSCALED_SPEC_LABEL]);
        const held = [...w.c.nodes.values()].filter((n) => n.scaleDownDisabled || n.scaleDownHeld).map((n) => n.name);
        return [
            ...w.pool.broken.map((b) => `${at}: ${b}`),
            ...w.c.violations.map((v) => `${at}: I1 ${v}`),
            ...(!ends(end.length) || end.some((s) => s !== NEW) ? [`${at}: ended with ${end.join(", ")}`] : []),
            ...(held.length > 0 ? [`${at}: ${held.join(", ")} still held`] : []),
        ];
    };

    it("the invariants hold under each fault, and the re-run ends with only current nodes, none held, within min/max", async function () {
        this.timeout(600_000);
        const { steps, failures } = await faultMatrix(worldOf(), brokenIn((n) => n >= 1 && n <= 4));
        assert.ok(steps.length >= 6 && steps.some(([a]) => a === "InvokeCommand"), `a rollout makes mutating calls, the hold among them: ${steps.map(([a]) => a).join(", ")}`);
        assert.deepStrictEqual(failures, []);
    });

    it("at autoscale.max, removing first (3 of 3, maxUnavailable 1, no canary): a run stopped after any step is resumed with the size the rollout started with: Ready nodes never below 2, and it ends at 3 current nodes", async function () {
        this.timeout(600_000);
        const { failures } = await faultMatrix(worldOf(3, 1, 3, { ...DEFAULT_ROLLOUT, maxUnavailable: 1, canary: false }), brokenIn((n) => n === 3));
        assert.deepStrictEqual(failures, []);
    });

    it("with the state the engine keeps between the runs (the record of where the rollout began): the invariants hold under each fault, and the re-run ends at the size the rollout started with, only current nodes, none held", async function () {
        this.timeout(600_000);
        const { failures } = await faultMatrix(worldOf(2, 1, 4, DEFAULT_ROLLOUT, true), brokenIn((n) => n === 2));
        assert.deepStrictEqual(failures, []);
    });

    it("with the state the engine keeps, at autoscale.max removing first (3 of 3, maxUnavailable 1, no canary): Ready nodes never below 2 under each fault, and it ends at 3 current nodes", async function () {
        this.timeout(600_000);
        const { failures } = await faultMatrix(worldOf(3, 1, 3, { ...DEFAULT_ROLLOUT, maxUnavailable: 1, canary: false }, true), brokenIn((n) => n === 3));
        assert.deepStrictEqual(failures, []);
    });
});
