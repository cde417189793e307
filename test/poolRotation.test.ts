// A fixed pool's rollout (PoolCapacity with `specHash` and `rollout`) in the emulator world: ESS, ECS and Cloud Assistant
// are the emulator; the cluster behind the masters is testing/fakeCluster.ts (drains move pods, a PodDisruptionBudget
// is a drain that fails, `system` is what the rollout's validation reads). The configuration's tag changes as Pulumi's
// in-place update would make it; ESS puts the tag on the instances it creates from then on (testing/emulator/ess.ts
// launchInstance). The invariants are read from state as every member leaves ESS and every drain starts. The rollout's
// soak and validation wait on a stepped clock (testing/steppedClock.ts): no real time passes in them.
import * as assert from "assert";
import { startEmulatorHere, useEmulator, useEmulatorEnvironment } from "../testing/emulator/fixture";
import type { FakeCluster } from "../testing/fakeCluster";
import { rolloutCluster } from "../testing/fixedPool";
import { poolCapacityProvider, setPoolCapacity, type PoolCapacityInputs } from "../src/providers/poolCapacity";
import { DEFAULT_ROLLOUT, OUTDATED_TAINT, SPEC_TAG, type Rollout } from "../src/rules";
import type { Emulator } from "../testing/emulator";
import { launchInstance } from "../testing/emulator/ess";
import { faultMatrix, rolloutCases } from "../testing/faultMatrix";
import { steppedClock } from "../testing/steppedClock";
import type { Clock } from "../src/cloud/wait";

const REGION = "cn-hangzhou";
const OLD = "0000000000000old";
const NEW = "0000000000000new";

/** `pulumi up`'s PoolCapacity create/update, with the rollout's gates waiting on a clock of their own. */
const run = (inputs: PoolCapacityInputs, clock: Clock = steppedClock()) => setPoolCapacity(inputs, undefined, clock);

/** Watches a pool's rollout from state: the first broken invariant of each kind, as it happens. */
function watchRollout(emu: Emulator, c: FakeCluster, group: string, size: number, maxUnavailable: number): string[] {
    const broken: string[] = [];
    const members = () => [...emu.state.scalingInstances.values()].filter((m) => m.scalingGroupId === group).map((m) => m.instanceId);
    const nodeOf = (id: string) => [...c.nodes.values()].find((n) => n.instanceId === id);
    const outdated = (id: string) => emu.instances.get(id)?.tags[SPEC_TAG] !== NEW;
    /** Pool members whose Node is Ready and takes pods (a node being drained is cordoned: it counts as unavailable). */
    const available = (except?: string) => members().filter((id) => { const n = nodeOf(id); return n && n.ready && !n.unschedulable && n.name !== except; }).length;
    const checkAvailable = (when: string, except?: string) => {
        const n = available(except);
        if (n < size - maxUnavailable) broken.push(`${when}: ${n} available node(s), below size − maxUnavailable = ${size - maxUnavailable}`);
    };
    const left = emu.state.onMemberLeft;
    emu.state.onMemberLeft = (id, g, released) => {
        left?.(id, g, released);
        if (g !== group) return;
        if (!outdated(id) && members().some(outdated)) broken.push(`current ${id} left while outdated ${members().filter(outdated).join(", ")} remained`);
        checkAvailable(`after ${id} left`);
    };
    c.onDrain = (node) => checkAvailable(`draining ${node}`, node);
    return broken;
}

describe("fixed pool rollout (emulator)", () => {
    const ctx = useEmulator();
    let c: FakeCluster;
    beforeEach(async () => { c = await rolloutCluster(ctx.emu, REGION); });
    afterEach(() => assert.deepStrictEqual(c.violations, [], "I1: every member left ESS drained"));

    const inputs = (group: string, size: number, rollout?: Partial<Rollout>, extra: Partial<PoolCapacityInputs> = {}): PoolCapacityInputs => ({
        region: REGION, scalingGroupId: group, poolName: "general", masterInstanceId: c.master, commands: c.commands, size,
        pollSeconds: 0.01, readyTimeoutSeconds: 5, pollIntervalMs: 5, specHash: NEW, ...(rollout ? { rollout: { ...DEFAULT_ROLLOUT, ...rollout } } : {}), ...extra,
    });
    /** A protected pool of `n` members made from the old spec, each a Ready Node with a workload pod; then the configuration's tag is the new spec. */
    function outdatedPool(n: number): string {
        const g = ctx.emu.addScalingGroup({ maxSize: Math.max(n, 1), desiredCapacity: n, configurationTags: { [SPEC_TAG]: OLD } });
        for (const id of ctx.emu.scalingGroupInstances(g.scalingGroupId)) {
            ctx.emu.state.scalingInstances.get(id)!.lifecycleState = "Protected";
            if (!c.nodes.has(`node-${id}`)) c.addNode(id, { pool: "general", pods: ["ReplicaSet"] });
        }
        const config = ctx.emu.state.scalingConfigurations.get(g.activeScalingConfigurationId)!;
        config.tags = { ...config.tags, [SPEC_TAG]: NEW };
        return g.scalingGroupId;
    }
    const specs = (group: string) => ctx.emu.scalingGroupInstances(group).map((id) => ctx.emu.instances.get(id)!.tags[SPEC_TAG]);
    /** Nodes carrying the rollout's taint (any pool), by name, as `name=<pool>:<effect>`. */
    const tainted = () => [...c.nodes.values()].flatMap((n) => n.taints.filter((t) => t.key === OUTDATED_TAINT).map((t) => `${n.name}=${t.value}:${t.effect}`)).sort();
    /** A stepped clock for the rollout's gates, and the time on it at which each member left the group, in order. */
    function watchLeavingTimes(group: string): { clock: ReturnType<typeof steppedClock>; leftAt: number[] } {
        const clock = steppedClock();
        const leftAt: number[] = [];
        const left = ctx.emu.state.onMemberLeft;
        ctx.emu.state.onMemberLeft = (id, g, released) => {
            left?.(id, g, released);
            if (g === group) leftAt.push(clock.now());
        };
        return { clock, leftAt };
    }
    /** The number of current members (made from the new spec) of the group each time an outdated one leaves it, in order. */
    function watchCanary(group: string): number[] {
        const current: number[] = [];
        const left = ctx.emu.state.onMemberLeft;
        ctx.emu.state.onMemberLeft = (id, g, released) => {
            left?.(id, g, released);
            if (g === group && ctx.emu.instances.get(id)?.tags[SPEC_TAG] !== NEW) current.push(specs(group).filter((s) => s === NEW).length);
        };
        return current;
    }

    it("replaces every outdated node: surge, then drain and remove, never below size Ready, ending at size with only current nodes (protected)", async () => {
        const group = outdatedPool(3);
        const broken = watchRollout(ctx.emu, c, group, 3, 0);
        const old = ctx.emu.scalingGroupInstances(group).map((id) => `node-${id}`);
        // Before the first new node launches, every outdated Node carries the PreferNoSchedule taint.
        const atFirstLaunch: string[][] = [];
        const join = ctx.emu.state.onUserDataRun;
        ctx.emu.state.onUserDataRun = (inst) => {
            if (atFirstLaunch.length === 0) atFirstLaunch.push(tainted());
            join?.(inst);
        };
        // The pods a drain evicts go to the new nodes, never onto another outdated one (each started with one).
        const left = ctx.emu.state.onMemberLeft;
        ctx.emu.state.onMemberLeft = (id, g, released) => {
            left?.(id, g, released);
            for (const name of old) {
                const pods = c.nodes.get(name)?.pods.filter((p) => p !== "DaemonSet").length ?? 0;
                if (pods > 1) broken.push(`an evicted pod landed on outdated ${name} (${pods} workload pods) when ${id} left`);
            }
        };
        await run(inputs(group, 3, {}));
        assert.deepStrictEqual(broken, []);
        assert.deepStrictEqual(atFirstLaunch, [old.map((n) => `${n}=general:PreferNoSchedule`).sort()], "every outdated Node tainted before the surge");
        assert.deepStrictEqual(tainted(), [], "no Node keeps the taint");
        assert.deepStrictEqual(specs(group), [NEW, NEW, NEW]);
        for (const id of ctx.emu.scalingGroupInstances(group)) assert.strictEqual(ctx.emu.state.scalingInstances.get(id)!.lifecycleState, "Protected");
        const workload = [...c.nodes.values()].filter((n) => !n.controlPlane).reduce((k, n) => k + n.pods.filter((p) => p === "ReplicaSet").length, 0);
        assert.ok(workload >= 3, "the evicted pods were rescheduled onto the new nodes");
    });

    it("without rollout, outdated nodes stay; a shrink removes outdated before current", async () => {
        const group = outdatedPool(2);
        const g = ctx.emu.state.scalingGroups.get(group)!;
        g.maxSize = 3;
        g.desiredCapacity = 3;
        const fresh = launchInstance(ctx.emu.state, g).instanceId; // made from the new spec, the newest
        const before = ctx.emu.scalingGroupInstances(group);
        await run(inputs(group, 3));
        assert.deepStrictEqual(ctx.emu.scalingGroupInstances(group), before, "nothing replaced without a rollout");
        assert.deepStrictEqual(specs(group).sort(), [NEW, OLD, OLD].sort(), "the outdated nodes stay");
        c.nodes.get(`node-${fresh}`)!.pods = []; // the cheapest to remove by every other rule
        await run(inputs(group, 1));
        assert.deepStrictEqual(ctx.emu.scalingGroupInstances(group), [fresh], "the shrink kept the current node");
    });

    it("a PodDisruptionBudget that blocks a drain pauses the rollout naming the pod; the next run resumes and finishes", async () => {
        const group = outdatedPool(2);
        const broken = watchRollout(ctx.emu, c, group, 2, 0);
        c.failDrains = 1;
        await assert.rejects(run(inputs(group, 2, {})), (err: Error) => {
            assert.match(err.message, /pool general: rollout paused/);
            assert.match(err.message, /pods\/"web-1" -n "default"/, "the pod that blocked eviction");
            assert.match(err.message, /disruption budget/);
            assert.match(err.message, /next `pulumi up` resumes/);
            return true;
        });
        assert.ok(specs(group).includes(OLD), "paused with an outdated node left");
        await run(inputs(group, 2, {}));
        assert.deepStrictEqual(broken, []);
        assert.deepStrictEqual(specs(group), [NEW, NEW]);
    });

    it("a paused rollout leaves its outdated Nodes tainted PreferNoSchedule; once the pool has no rollout, the Nodes it keeps lose the taint (another pool's stays)", async () => {
        const group = outdatedPool(2);
        const old = ctx.emu.scalingGroupInstances(group).map((id) => `node-${id}`);
        const other = c.addNode(ctx.emu.addInstance().instanceId, { pool: "other", taints: [{ key: OUTDATED_TAINT, value: "other", effect: "PreferNoSchedule" }] });
        c.failDrains = 1;
        await assert.rejects(run(inputs(group, 2, {})), /rollout paused/);
        const kept = old.filter((n) => c.nodes.has(n));
        assert.ok(kept.length > 0, "an outdated node is left");
        assert.deepStrictEqual(tainted(), [...kept.map((n) => `${n}=general:PreferNoSchedule`), `${other.name}=other:PreferNoSchedule`].sort());
        c.failDrains = 0;
        // The user took `rollout` away: the surge node is surplus now, and the shrink removes an outdated node first.
        await run(inputs(group, 2));
        const stays = old.filter((n) => c.nodes.has(n));
        assert.strictEqual(stays.length, 1, "an outdated node stays in the pool");
        assert.deepStrictEqual(tainted(), [`${other.name}=other:PreferNoSchedule`], "the Node the pool keeps lost the taint; another pool's kept it");
    });

    it("onDrainTimeout force: a drain blocked by a PodDisruptionBudget is done again deleting the pods, and the rollout finishes in one run", async () => {
        const group = outdatedPool(2);
        c.failDrains = 1;
        await run(inputs(group, 2, { onDrainTimeout: "force" }));
        assert.deepStrictEqual(specs(group), [NEW, NEW]);
        const drains = ctx.emu.callsOf("InvokeCommand").filter((call) => /"force":"delete"/.test(call.params.Parameters ?? ""));
        assert.strictEqual(drains.length, 1, "only the blocked drain went without eviction");
    });

    it("a new node that never gets Ready stops the rollout before any outdated node leaves, naming it", async () => {
        const group = outdatedPool(2);
        c.autoJoin("general", { readyAfterListings: 1_000_000 });
        await assert.rejects(run(inputs(group, 2, {}, { readyTimeoutSeconds: 0.3 })), /Not Ready: i-emu/);
        assert.deepStrictEqual(specs(group).filter((s) => s === OLD).length, 2, "no outdated node was removed");
    });

    it("a run that stopped with its surge node not Ready resumes the rollout: run after run, no Ready outdated node leaves", async () => {
        const group = outdatedPool(2);
        const broken = watchRollout(ctx.emu, c, group, 2, 0);
        c.autoJoin("general", { readyAfterListings: 1_000_000 });
        for (let k = 0; k < 3; k++) {
            await assert.rejects(run(inputs(group, 2, {}, { readyTimeoutSeconds: 0.3 })), /not Ready: i-emu/i);
        }
        assert.deepStrictEqual(broken, []);
        assert.strictEqual(specs(group).filter((s) => s === OLD).length, 2, "both outdated nodes stay");
        assert.strictEqual(ctx.emu.scalingGroupInstances(group).length, 3, "one surge node, not one per run");
    });

    it("a lower maxSurge while the surge is not Ready: the next run keeps the new nodes as surge and removes no Ready outdated node", async () => {
        const group = outdatedPool(3);
        c.autoJoin("general", { pods: ["ReplicaSet"], readyAfterListings: 1000 }); // the new spec's nodes never get Ready
        const broken = watchRollout(ctx.emu, c, group, 3, 0);
        await assert.rejects(run(inputs(group, 3, { maxSurge: 2, canary: false })), /only 3\/5 nodes Ready/);
        await assert.rejects(run(inputs(group, 3, { maxSurge: 1, canary: false })), /new node\(s\) not Ready/);
        assert.deepStrictEqual(broken, []);
        assert.deepStrictEqual(specs(group).sort(), [OLD, OLD, OLD, NEW, NEW].sort(), "every outdated node still there");
    });

    it("the rollout removed while its surge node is not Ready: the shrink removes that node, never a Ready outdated one, and the pool keeps its size in Ready nodes", async () => {
        const group = outdatedPool(2);
        c.autoJoin("general", { readyAfterListings: 1_000_000 });
        await assert.rejects(run(inputs(group, 2, {}, { readyTimeoutSeconds: 0.3 })), /not Ready: i-emu/i);
        assert.strictEqual(ctx.emu.scalingGroupInstances(group).length, 3, "the surge node, not Ready");
        const readyLeft: string[] = [];
        const left = ctx.emu.state.onMemberLeft;
        ctx.emu.state.onMemberLeft = (id, g, released) => {
            left?.(id, g, released);
            if (g === group && c.nodes.get(`node-${id}`)?.ready) readyLeft.push(id);
        };
        await run(inputs(group, 2, undefined, { readyTimeoutSeconds: 0.3 }));
        assert.deepStrictEqual(readyLeft, [], "no Ready node left the pool");
        assert.deepStrictEqual(specs(group), [OLD, OLD], "the outdated nodes stay (no rollout): the NotReady new node went");
    });

    it("a rollout paused by a drain that stays blocked finishes on the next run with onDrainTimeout force", async () => {
        const group = outdatedPool(2);
        const broken = watchRollout(ctx.emu, c, group, 2, 0);
        c.failDrains = 100;
        await assert.rejects(run(inputs(group, 2, {})), /rollout paused/);
        await run(inputs(group, 2, { onDrainTimeout: "force" }));
        assert.deepStrictEqual(broken, []);
        assert.deepStrictEqual(specs(group), [NEW, NEW]);
    });

    it("PoolCapacity's check refuses a rollout given directly that could never replace a node, naming the property", async () => {
        const bad = { ...inputs("asg-x", 2, { maxSurge: 0, maxUnavailable: 0 }) };
        const res = await poolCapacityProvider.check!({}, bad);
        assert.deepStrictEqual(res.failures!.map((f) => f.property), ["rollout"]);
        assert.match(res.failures![0].reason, /both 0/);
        assert.deepStrictEqual((await poolCapacityProvider.check!({}, inputs("asg-x", 2, {}))).failures, []);
        const longSoak = await poolCapacityProvider.check!({}, inputs("asg-x", 2, { soakSeconds: 90_000 }));
        assert.deepStrictEqual(longSoak.failures!.map((f) => f.property), ["rollout.soak"]);
    });

    it("canary: the first new node comes alone and one outdated node leaves before the rest surge; without it the first surge is maxSurge wide", async () => {
        const withCanary = outdatedPool(4);
        const canaryLeaves = watchCanary(withCanary);
        await run(inputs(withCanary, 4, { maxSurge: 3 }));
        assert.deepStrictEqual(specs(withCanary), [NEW, NEW, NEW, NEW]);
        assert.deepStrictEqual(canaryLeaves, [1, 4, 4, 4], "one current member (the canary) when the first outdated one left; the other three surged together");
        const without = outdatedPool(4);
        const plainLeaves = watchCanary(without);
        await run(inputs(without, 4, { maxSurge: 3, canary: false }));
        assert.deepStrictEqual(specs(without), [NEW, NEW, NEW, NEW]);
        assert.deepStrictEqual(plainLeaves.slice(0, 3), [3, 3, 3], "three new members before the first outdated one left");
    });

    it("a canary that fails validation (a kube-system pod on it not Ready) pauses the rollout naming the pod, before any outdated node leaves; fixed, the next run finishes", async () => {
        const group = outdatedPool(3);
        const broken = watchRollout(ctx.emu, c, group, 3, 0);
        const join = ctx.emu.state.onUserDataRun;
        let first = true;
        ctx.emu.state.onUserDataRun = (inst) => {
            join?.(inst);
            if (first) c.system.unreadyPods.push({ name: "kube-system/kube-proxy-canary", node: `node-${inst.instanceId}`, phase: "Running" });
            first = false;
        };
        const old = ctx.emu.scalingGroupInstances(group);
        await assert.rejects(run(inputs(group, 3, { maxSurge: 2 })), (err: Error) => {
            assert.match(err.message, /pool general: rollout paused: the cluster failed validation after the surge to 4 member\(s\)/);
            assert.match(err.message, /pod kube-system\/kube-proxy-canary on node-i-\S+ not Ready \(Running\)/);
            assert.match(err.message, /next `pulumi up` validates again and resumes/);
            return true;
        });
        assert.deepStrictEqual(ctx.emu.scalingGroupInstances(group).filter((id) => old.includes(id)), old, "every outdated node stays");
        assert.deepStrictEqual(specs(group).filter((s) => s === NEW).length, 1, "one new node: the canary");
        c.system.unreadyPods = [];
        await run(inputs(group, 3, { maxSurge: 2 }));
        assert.deepStrictEqual(broken, []);
        assert.deepStrictEqual(specs(group), [NEW, NEW, NEW]);
    });

    it("a canary Ready but without its pod route (NetworkUnavailable: the CCM has not created it) pauses the rollout before any outdated node leaves; routed, the next run finishes", async () => {
        const group = outdatedPool(3);
        const join = ctx.emu.state.onUserDataRun;
        let canary = "";
        ctx.emu.state.onUserDataRun = (inst) => {
            join?.(inst);
            if (!canary) {
                canary = inst.instanceId;
                c.nodes.get(`node-${inst.instanceId}`)!.networkUnavailable = true;
            }
        };
        const old = ctx.emu.scalingGroupInstances(group);
        await assert.rejects(run(inputs(group, 3, {})), /failed validation after the surge to 4 member\(s\) for \d+ s: new node\(s\) without their pod route \(NetworkUnavailable/);
        assert.deepStrictEqual(ctx.emu.scalingGroupInstances(group).filter((id) => old.includes(id)), old, "every outdated node stays");
        c.nodes.get(`node-${canary}`)!.networkUnavailable = false;
        await run(inputs(group, 3, {}));
        assert.deepStrictEqual(specs(group), [NEW, NEW, NEW]);
    });

    it("validation before the rollout: a kube-system Deployment short of replicas stops it before anything changes, naming it; the next run finishes", async () => {
        const group = outdatedPool(2);
        c.system.deployments = [{ name: "kube-system/coredns", replicas: 2, available: 1 }];
        const before = ctx.emu.scalingGroupInstances(group);
        await assert.rejects(run(inputs(group, 2, {})), /failed validation before the rollout for \d+ s: Deployment kube-system\/coredns: 1 of 2 replica\(s\) available/);
        assert.deepStrictEqual(ctx.emu.scalingGroupInstances(group), before, "nothing launched, nothing removed");
        assert.deepStrictEqual(tainted(), [], "no Node tainted");
        c.system.deployments[0].available = 2;
        await run(inputs(group, 2, {}));
        assert.deepStrictEqual(specs(group), [NEW, NEW]);
    });

    it("validation after a batch: a Deployment that loses a replica as an outdated node leaves pauses the rollout there; restored, the next run finishes within the invariants", async () => {
        const group = outdatedPool(3);
        const broken = watchRollout(ctx.emu, c, group, 3, 0);
        const left = ctx.emu.state.onMemberLeft;
        ctx.emu.state.onMemberLeft = (id, g, released) => {
            left?.(id, g, released);
            c.system.deployments = [{ name: "kube-system/coredns", replicas: 2, available: 1 }];
        };
        await assert.rejects(run(inputs(group, 3, { canary: false })), /failed validation after replacing 1 outdated node\(s\) for \d+ s: Deployment kube-system\/coredns: 1 of 2/);
        assert.deepStrictEqual(specs(group).sort(), [NEW, OLD, OLD], "one batch went; the next waited");
        ctx.emu.state.onMemberLeft = left;
        c.system.deployments = [{ name: "kube-system/coredns", replicas: 2, available: 2 }];
        await run(inputs(group, 3, { canary: false }));
        assert.deepStrictEqual(broken, []);
        assert.deepStrictEqual(specs(group), [NEW, NEW, NEW]);
    });

    it("soak: no outdated node leaves within `soak` of the batch before it, and the last batch is soaked too (on the rollout's clock)", async () => {
        const group = outdatedPool(3);
        const { clock, leftAt } = watchLeavingTimes(group);
        await run(inputs(group, 3, { soakSeconds: 90 }), clock);
        assert.deepStrictEqual(specs(group), [NEW, NEW, NEW]);
        assert.strictEqual(leftAt.length, 3, "canary, then one a round (maxSurge 1)");
        for (let k = 1; k < leftAt.length; k++) assert.ok(leftAt[k] - leftAt[k - 1] >= 90_000, `batch ${k + 1} left ${leftAt[k] - leftAt[k - 1]} ms after the one before`);
        assert.ok(clock.now() - leftAt[leftAt.length - 1] >= 90_000, "the last batch soaked before the rollout ended");
    });

    it("a run stopped during a batch's soak (cancelled, killed): the next run soaks in full before the next batch leaves (on the rollout's clock)", async () => {
        const group = outdatedPool(3);
        const { clock, leftAt } = watchLeavingTimes(group);
        // The first run's first pause on its clock is the canary batch's soak: the run dies there.
        let died = false;
        const dying = { now: () => clock.now(), sleep: async (ms: number) => { if (!died) { died = true; throw new Error("killed during the soak"); } return clock.sleep(ms); } };
        await assert.rejects(run(inputs(group, 3, { soakSeconds: 90 }), dying), /killed during the soak/);
        assert.strictEqual(leftAt.length, 1, "the canary's batch left, then the run died soaking");
        await run(inputs(group, 3, { soakSeconds: 90 }), clock);
        assert.deepStrictEqual(specs(group), [NEW, NEW, NEW]);
        for (let k = 1; k < leftAt.length; k++) assert.ok(leftAt[k] - leftAt[k - 1] >= 90_000, `batch ${k + 1} left ${leftAt[k] - leftAt[k - 1]} ms after the one before`);
    });

    it("validation fails while a master's Node is not Ready (no pool member, its pods not counted): the rollout stops before anything changes, naming it; the next run finishes", async () => {
        c.addNode(c.master, { name: "master-0", controlPlane: true });
        c.addMaster();
        c.nodes.get("master-1")!.ready = false;
        const group = outdatedPool(2);
        const before = ctx.emu.scalingGroupInstances(group);
        await assert.rejects(run(inputs(group, 2, {})), /failed validation before the rollout for \d+ s: control-plane Node\(s\) not Ready: master-1/);
        assert.deepStrictEqual(ctx.emu.scalingGroupInstances(group), before, "nothing launched, nothing removed");
        c.nodes.get("master-1")!.ready = true;
        await run(inputs(group, 2, {}));
        assert.deepStrictEqual(specs(group), [NEW, NEW]);
    });

    it("a fixed pool switched to autoscaled (PoolCapacity update to observe) clears the taint a paused rollout left, and lifts the protections; another pool's taint stays", async () => {
        const group = outdatedPool(2);
        const other = c.addNode(ctx.emu.addInstance().instanceId, { pool: "other", taints: [{ key: OUTDATED_TAINT, value: "other", effect: "PreferNoSchedule" }] });
        c.failDrains = 1;
        await assert.rejects(run(inputs(group, 2, {})), /rollout paused/);
        assert.ok(tainted().some((t) => t.endsWith("=general:PreferNoSchedule")), "the paused rollout's outdated Nodes carry the taint");
        c.failDrains = 0;
        const olds = { ...inputs(group, 2, {}), readyInstanceIds: [] };
        const news: PoolCapacityInputs = { ...inputs(group, 0), mode: "observe", size: undefined, specHash: undefined, minSize: 0, maxSize: 5 };
        await poolCapacityProvider.update!("x", olds, news);
        assert.deepStrictEqual(tainted(), [`${other.name}=other:PreferNoSchedule`]);
        for (const id of ctx.emu.scalingGroupInstances(group)) assert.strictEqual(ctx.emu.state.scalingInstances.get(id)!.lifecycleState, "InService", id);
    });

    it("property: sizes 1–4, surge 0–2, unavailable 0–1, with and without a canary: invariants hold and the pool ends at its size, all current", async function () {
        this.timeout(600_000);
        const failures: string[] = [];
        for (const { size, maxSurge, maxUnavailable, canary, at } of rolloutCases()) {
            c = await rolloutCluster(ctx.emu, REGION);
            const group = outdatedPool(size);
            const broken = watchRollout(ctx.emu, c, group, size, maxUnavailable);
            const firstLeft = watchCanary(group);
            await run(inputs(group, size, { maxSurge, maxUnavailable, canary }));
            const end = specs(group);
            if (broken.length > 0) failures.push(`${at}: ${broken.join("; ")}`);
            if (end.length !== size || end.some((s) => s !== NEW)) failures.push(`${at}: ended with ${end.join(", ")}`);
            if (c.violations.length > 0) failures.push(`${at}: ${c.violations.join("; ")}`);
            // A canary: when the first outdated node leaves, at most one current member exists (the canary, or none yet with maxSurge 0).
            if (canary && (firstLeft[0] ?? 0) > 1) failures.push(`${at}: ${firstLeft[0]} current member(s) when the first outdated one left`);
        }
        assert.deepStrictEqual(failures, []);
    });
});

describe("fixed pool rollout under faults (emulator): every mutating call refused once in turn, then a re-run", () => {
    useEmulatorEnvironment();

    /** A fresh world: a protected pool of 2 made from the old spec, the configuration on the new one. */
    async function world(): Promise<{ emu: Emulator; c: FakeCluster; group: string; broken: string[]; run: () => Promise<void> }> {
        const emu = await startEmulatorHere();
        const c = await rolloutCluster(emu, REGION);
        const g = emu.addScalingGroup({ maxSize: 2, desiredCapacity: 2, configurationTags: { [SPEC_TAG]: OLD } });
        for (const id of emu.scalingGroupInstances(g.scalingGroupId)) {
            emu.state.scalingInstances.get(id)!.lifecycleState = "Protected";
            c.addNode(id, { pool: "general", pods: ["ReplicaSet"] });
        }
        const config = emu.state.scalingConfigurations.get(g.activeScalingConfigurationId)!;
        config.tags = { ...config.tags, [SPEC_TAG]: NEW };
        const broken = watchRollout(emu, c, g.scalingGroupId, 2, 0);
        const run = () => setPoolCapacity({
            region: REGION, scalingGroupId: g.scalingGroupId, poolName: "general", masterInstanceId: c.master, commands: c.commands, size: 2,
            pollSeconds: 0.01, readyTimeoutSeconds: 5, pollIntervalMs: 5, specHash: NEW, rollout: DEFAULT_ROLLOUT,
        }, undefined, steppedClock()).then(() => undefined);
        return { emu, c, group: g.scalingGroupId, broken, run };
    }

    it("the invariants hold under each fault, and the re-run ends at size with only current nodes", async function () {
        this.timeout(600_000);
        const { steps, failures } = await faultMatrix(world, (w, at) => {
            const end = w.emu.scalingGroupInstances(w.group).map((id) => w.emu.instances.get(id)!.tags[SPEC_TAG]);
            return [
                ...w.broken.map((b) => `${at}: ${b}`),
                ...w.c.violations.map((v) => `${at}: I1 ${v}`),
                ...(end.length !== 2 || end.some((s) => s !== NEW) ? [`${at}: ended with ${end.join(", ")}`] : []),
            ];
        });
        assert.ok(steps.length >= 8, `a rollout makes mutating calls: ${steps.map(([a]) => a).join(", ")}`);
        assert.deepStrictEqual(failures, []);
    });
});
