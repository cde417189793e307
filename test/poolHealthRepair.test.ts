// A fixed pool's health repair (PoolCapacity with `healthRepair`) in the emulator world: ESS, ECS and Cloud Assistant
// are the emulator; the cluster behind the masters is testing/fakeCluster.ts (a Node's Ready condition and its
// lastTransitionTime as the API server would list them; drains move pods). Time is the masters' clock, which the test
// sets: the repair reads "now" from the master that lists the Nodes, and each Node's Ready condition says since when it
// is what it is. Everything asserted is read from state: the group's members, the instances, the Nodes and their pods.
import * as assert from "assert";
import { startEmulatorHere, useEmulator, useEmulatorEnvironment } from "../testing/emulator/fixture";
import { fakeCluster, type FakeCluster, type FakeNode } from "../testing/fakeCluster";
import { notReadySince, protectedPool, repairAt } from "../testing/fixedPool";
import { steppedClock } from "../testing/steppedClock";
import { poolCapacityProvider, setPoolCapacity, type PoolCapacityInputs } from "../src/providers/poolCapacity";
import { planHealthRepair } from "../src/removal";
import { repairPool } from "../src/removal/health";
import { modifyScalingGroup } from "../src/cloud/ess";
import { operation } from "../testing/savedCommands";
import * as zlib from "zlib";
import { DEFAULT_HEALTH_REPAIR, type HealthRepair } from "../src";
import type { Emulator } from "../testing/emulator";

const REGION = "cn-hangzhou";
const MIN = 60_000;

/** The group's members, and whether each is a Ready Node. */
function state(emu: Emulator, c: FakeCluster, group: string): { members: string[]; ready: number } {
    const members = emu.scalingGroupInstances(group);
    const ready = members.filter((id) => [...c.nodes.values()].some((n) => n.instanceId === id && n.ready)).length;
    return { members, ready };
}

/** Members that left the group, per run (`runs.push([])` starts a run). */
function watchLeaving(emu: Emulator, group: string): string[][] {
    const runs: string[][] = [[]];
    const left = emu.state.onMemberLeft;
    emu.state.onMemberLeft = (id, g, released) => {
        left?.(id, g, released);
        if (g === group) runs[runs.length - 1].push(id);
    };
    return runs;
}

describe("fixed pool health repair (emulator)", () => {
    const ctx = useEmulator();
    let c: FakeCluster;
    let now: number;
    beforeEach(async () => {
        c = await fakeCluster(ctx.emu, REGION);
        c.autoJoin("general", { pods: ["ReplicaSet"] });
        now = c.masterNow();
    });
    afterEach(() => assert.deepStrictEqual(c.violations, [], "every member left ESS drained"));

    const inputs = (group: string, size: number, healthRepair?: Partial<HealthRepair>, extra: Partial<PoolCapacityInputs> = {}): PoolCapacityInputs => ({
        region: REGION, scalingGroupId: group, poolName: "general", masterInstanceId: c.master, commands: c.commands, size,
        pollSeconds: 0.01, readyTimeoutSeconds: 5, pollIntervalMs: 5, ...(healthRepair ? { healthRepair: { ...DEFAULT_HEALTH_REPAIR, ...healthRepair } } : {}), ...extra,
    });

    it("a member NotReady past the timeout while its instance runs is drained and released, and the pool refills to its size with Ready nodes", async () => {
        const group = protectedPool(ctx.emu, c, 3);
        const [bad, ...good] = ctx.emu.scalingGroupInstances(group);
        notReadySince(c, bad, now - 11 * MIN);
        await repairAt(c, now, inputs(group, 3, { notReadyTimeoutSeconds: 600 }));
        const end = state(ctx.emu, c, group);
        assert.ok(!end.members.includes(bad), "the NotReady member left the group");
        assert.strictEqual(ctx.emu.instances.get(bad), undefined, "its instance was released");
        assert.ok(![...c.nodes.values()].some((n) => n.instanceId === bad), "its Node was deleted");
        assert.deepStrictEqual(end.members.filter((id) => good.includes(id)), good, "the Ready members stay");
        assert.deepStrictEqual([end.members.length, end.ready], [3, 3], "the pool is back at its size, every member a Ready node");
        const onGood = good.reduce((k, id) => k + c.nodes.get(`node-${id}`)!.pods.filter((p) => p === "ReplicaSet").length, 0);
        assert.strictEqual(onGood, 3, "the NotReady node's pod was evicted onto a Ready node, not lost with it");
        for (const id of end.members) assert.strictEqual(ctx.emu.state.scalingInstances.get(id)!.lifecycleState, "Protected");
    });

    it("a NotReady time is measured on the listing master's clock: the Pulumi machine's clock hours off neither replaces a node NotReady for 2 minutes nor keeps one NotReady for an hour", async () => {
        const group = protectedPool(ctx.emu, c, 3);
        const [recent, long] = ctx.emu.scalingGroupInstances(group);
        notReadySince(c, recent, now - 2 * MIN);
        const run = (pulumiClock: number) => setPoolCapacity({ ...inputs(group, 3, { notReadyTimeoutSeconds: 600, maxUnhealthy: 1 }), readyTimeoutSeconds: 0.3 },
            undefined, steppedClock(pulumiClock)).catch(() => undefined);
        await run(now + 3 * 60 * MIN); // this machine's clock 3 hours ahead of the cluster's
        assert.ok(ctx.emu.scalingGroupInstances(group).includes(recent), "the node NotReady for 2 minutes (on the cluster's clock) is kept");
        assert.ok(!c.log.some((l) => l.includes(": drain ")), "nothing drained");
        c.nodes.get(`node-${recent}`)!.ready = true;
        notReadySince(c, long, now - 60 * MIN);
        await run(now - 3 * 60 * MIN); // and 3 hours behind it
        assert.ok(!ctx.emu.scalingGroupInstances(group).includes(long), "the node NotReady for an hour (on the cluster's clock) is replaced");
        assert.deepStrictEqual([state(ctx.emu, c, group).members.length, state(ctx.emu, c, group).ready], [3, 3]);
    });

    it("a listing without the master's time (an earlier release's list-nodes) replaces nothing", async () => {
        const group = protectedPool(ctx.emu, c, 3);
        const [bad] = ctx.emu.scalingGroupInstances(group);
        notReadySince(c, bad, now - 60 * MIN);
        ctx.emu.onCommand(operation("list-nodes"), () => {
            const line = (n: FakeNode) => [n.name, `${REGION}.${n.instanceId}`, n.ready ? "True" : "False", "", n.podCidr, "", n.createdAt, "", n.pool, "", n.readySince ?? "", "", ""].join("\t");
            return { output: zlib.gzipSync([...c.nodes.values()].map(line).join("\n")).toString("base64") };
        });
        const warnings: string[] = [];
        await repairPool({ scalingGroupId: group, poolName: "general", size: 3 }, { ...DEFAULT_HEALTH_REPAIR, notReadyTimeoutSeconds: 600 },
            { region: REGION, masterInstanceIds: [c.master], commands: c.commands, pollIntervalMs: 5, warn: (m) => warnings.push(m) });
        assert.ok(ctx.emu.scalingGroupInstances(group).includes(bad), "kept: its NotReady time is not known on the cluster's clock");
        assert.match(warnings.join("\n"), /health repair skipped: the master's list-nodes printed no time/);
    });

    it("the repair's wait for a running scaling activity is on the removal's clock: with the emulator's time standing, only that clock's waits end the activity", async () => {
        ctx.emu.stopClock();
        const group = protectedPool(ctx.emu, c, 2);
        const [bad] = ctx.emu.scalingGroupInstances(group);
        notReadySince(c, bad, c.masterNow() - 60 * MIN);
        ctx.emu.state.activityDurationMs = 2 * MIN;
        await modifyScalingGroup(REGION, group, { maxSize: 3, desiredCapacity: 3 }); // a launch of 2 minutes, under way
        const clock = ctx.emu.steppedClock();
        await repairPool({ scalingGroupId: group, poolName: "general", size: 3 }, { ...DEFAULT_HEALTH_REPAIR, notReadyTimeoutSeconds: 600 },
            { region: REGION, masterInstanceIds: [c.master], commands: c.commands, pollIntervalMs: 5, activityTimeoutSeconds: 20 * 60, clock });
        assert.ok(!ctx.emu.scalingGroupInstances(group).includes(bad), "replaced once the launch ended on the clock");
    });

    it("a member whose instance never registered a Node is replaced once the timeout has passed since ESS created it", async () => {
        const group = protectedPool(ctx.emu, c, 2);
        const [orphan] = ctx.emu.scalingGroupInstances(group);
        c.nodes.delete(`node-${orphan}`);
        ctx.emu.state.scalingInstances.get(orphan)!.creationTime = new Date(now - 30 * MIN).toISOString().replace(/\.\d{3}Z$/, "Z");
        await repairAt(c, now, inputs(group, 2, { notReadyTimeoutSeconds: 600 }));
        const end = state(ctx.emu, c, group);
        assert.ok(!end.members.includes(orphan));
        assert.deepStrictEqual([end.members.length, end.ready], [2, 2]);
    });

    it("a member NotReady for less than the timeout is kept (and so is one past it without healthRepair); once the clock passes the timeout, the next run replaces it", async () => {
        const group = protectedPool(ctx.emu, c, 2);
        const [bad] = ctx.emu.scalingGroupInstances(group);
        notReadySince(c, bad, now - 9 * MIN);
        const short = { ...inputs(group, 2, { notReadyTimeoutSeconds: 600 }), readyTimeoutSeconds: 0.3 };
        await assert.rejects(repairAt(c, now, short), new RegExp(`Not Ready: ${bad}`));
        await assert.rejects(repairAt(c, now + 60 * MIN, { ...short, healthRepair: undefined }), new RegExp(`Not Ready: ${bad}`));
        assert.ok(state(ctx.emu, c, group).members.includes(bad), "kept");
        const node = c.nodes.get(`node-${bad}`)!;
        assert.deepStrictEqual([node.unschedulable, node.pods], [false, ["ReplicaSet"]], "never cordoned nor drained");
        await repairAt(c, now + 2 * MIN, inputs(group, 2, { notReadyTimeoutSeconds: 600 }));
        const end = state(ctx.emu, c, group);
        assert.ok(!end.members.includes(bad), "replaced 11 minutes after it went NotReady");
        assert.deepStrictEqual([end.members.length, end.ready], [2, 2]);
    });

    it("more members not Ready than maxUnhealthy: nothing is drained or removed, and the plan says why", async () => {
        const group = protectedPool(ctx.emu, c, 3);
        const [a, b] = ctx.emu.scalingGroupInstances(group);
        notReadySince(c, a, now - 60 * MIN);
        notReadySince(c, b, now - 2 * MIN); // within the timeout, still not Ready: it counts, as in Cluster API
        const before = state(ctx.emu, c, group).members;
        await assert.rejects(repairAt(c, now, { ...inputs(group, 3, { maxUnhealthy: 1 }), readyTimeoutSeconds: 0.3 }), /Not Ready/);
        assert.deepStrictEqual(state(ctx.emu, c, group).members, before, "no member removed");
        assert.ok(![...c.nodes.values()].some((n) => n.unschedulable), "no Node cordoned");
        assert.ok(!c.log.some((l) => l.includes(": drain ")), "no drain ran");
        const plan = planHealthRepair([a, b, "i-ok"].map((id) => ({ instanceId: id, nodeName: `node-${id}`, ready: id === "i-ok", workloadPods: 1, createdAt: "", readySince: c.nodes.get(`node-${id}`)?.readySince ?? "", instance: { privateIp: "", status: "Running" } })),
            { notReadyTimeoutSeconds: 600, maxUnhealthy: 1 }, now, { size: 3, readyWorkers: 1 });
        assert.strictEqual(plan.kind, "breaker");
        assert.match(plan.kind === "breaker" ? plan.reason : "", /2 of 3 member\(s\) are not Ready, more than healthRepair\.maxUnhealthy = 1: that looks like an outage/);
    });

    it("a member whose instance is stopped is left alone (ESS's own health check is for that), and still counts against maxUnhealthy", async () => {
        const group = protectedPool(ctx.emu, c, 2);
        const [stopped] = ctx.emu.scalingGroupInstances(group);
        notReadySince(c, stopped, now - 60 * MIN);
        ctx.emu.instances.get(stopped)!.status = "Stopped";
        await assert.rejects(repairAt(c, now, { ...inputs(group, 2, {}), readyTimeoutSeconds: 0.3 }), /Not Ready/);
        assert.ok(state(ctx.emu, c, group).members.includes(stopped));
        assert.strictEqual(ctx.emu.instances.get(stopped)!.status, "Stopped");
    });

    it("property: sizes 1–4, 0–size members NotReady past the timeout, maxUnhealthy 1–2, a Ready worker in another pool: no run removes more than maxUnhealthy; within it every one is replaced, beyond it none", async function () {
        this.timeout(600_000);
        const failures: string[] = [];
        for (let size = 1; size <= 4; size++) {
            for (let sick = 0; sick <= size; sick++) {
                for (let maxUnhealthy = 1; maxUnhealthy <= 2; maxUnhealthy++) {
                    c = await fakeCluster(ctx.emu, REGION);
                    c.autoJoin("general", { pods: ["ReplicaSet"] });
                    const group = protectedPool(ctx.emu, c, size);
                    // Some worker of the cluster is Ready (else even a pool of one with its node sick is an outage: kept).
                    c.addNode(ctx.emu.addInstance().instanceId, { pool: "other", pods: ["ReplicaSet"] });
                    const bad = ctx.emu.scalingGroupInstances(group).slice(0, sick);
                    for (const id of bad) notReadySince(c, id, now - 60 * MIN);
                    const runs = watchLeaving(ctx.emu, group);
                    const at = `size ${size}, ${sick} NotReady, maxUnhealthy ${maxUnhealthy}`;
                    const run = () => repairAt(c, now, { ...inputs(group, size, { maxUnhealthy }), readyTimeoutSeconds: 0.3 }).then(() => "ok", (e: Error) => e.message);
                    const first = await run();
                    runs.push([]);
                    await run();
                    const end = state(ctx.emu, c, group);
                    for (const [i, r] of runs.entries()) if (r.length > maxUnhealthy) failures.push(`${at}: run ${i} removed ${r.length}`);
                    if (sick <= maxUnhealthy) {
                        if (bad.some((id) => end.members.includes(id)) || end.members.length !== size || end.ready !== size) {
                            failures.push(`${at}: ended with ${end.members.length} member(s), ${end.ready} Ready, ${bad.filter((id) => end.members.includes(id)).length} NotReady kept (first run: ${first.split("\n")[0]})`);
                        }
                    } else if (runs.flat().length > 0) {
                        failures.push(`${at}: the breaker let ${runs.flat().join(", ")} go`);
                    }
                    if (c.violations.length > 0) failures.push(`${at}: ${c.violations.join("; ")}`);
                }
            }
        }
        assert.deepStrictEqual(failures, []);
    });

    it("PoolCapacity's check refuses a health repair given directly out of bounds, naming the property", async () => {
        const bad = inputs("asg-x", 2, { notReadyTimeoutSeconds: 30, maxUnhealthy: 0 });
        const res = await poolCapacityProvider.check!({}, bad);
        assert.deepStrictEqual(res.failures!.map((f) => f.property), ["healthRepair.notReadyTimeoutSeconds", "healthRepair.maxUnhealthy"]);
        assert.deepStrictEqual((await poolCapacityProvider.check!({}, inputs("asg-x", 2, {}))).failures, []);
        const observed = await poolCapacityProvider.check!({}, { ...inputs("asg-x", 0, {}), mode: "observe" });
        assert.deepStrictEqual(observed.failures!.map((f) => f.property), ["healthRepair"], "an autoscaled pool's PoolCapacity takes none");
    });
});

describe("fixed pool health repair under faults (emulator): every mutating call refused once in turn, then a re-run", () => {
    useEmulatorEnvironment();

    /** A fresh world: a protected pool of 3, one member NotReady for an hour. */
    async function world(): Promise<{ emu: Emulator; c: FakeCluster; group: string; bad: string; runs: string[][]; run: () => Promise<void> }> {
        const emu = await startEmulatorHere();
        const c = await fakeCluster(emu, REGION);
        c.autoJoin("general", { pods: ["ReplicaSet"] });
        const group = protectedPool(emu, c, 3);
        const now = c.masterNow();
        const [bad] = emu.scalingGroupInstances(group);
        notReadySince(c, bad, now - 60 * MIN);
        const runs = watchLeaving(emu, group);
        const run = () => repairAt(c, now, {
            region: REGION, scalingGroupId: group, poolName: "general", masterInstanceId: c.master, commands: c.commands, size: 3,
            pollSeconds: 0.01, readyTimeoutSeconds: 5, pollIntervalMs: 5, healthRepair: DEFAULT_HEALTH_REPAIR,
        }).then(() => undefined);
        return { emu, c, group, bad, runs, run };
    }

    it("the NotReady member is replaced after the re-run, drained before it left, and no run removed more than maxUnhealthy", async function () {
        this.timeout(600_000);
        const clean = await world();
        const first = clean.emu.calls.length;
        await clean.run();
        const steps = clean.emu.mutatingSteps(first);
        await clean.emu.close();
        assert.ok(steps.some(([a]) => a === "RemoveInstances") && steps.some(([a]) => a === "ModifyScalingGroup"), `a repair removes and refills: ${steps.map(([a]) => a).join(", ")}`);
        const failures: string[] = [];
        for (const [action, occurrence] of steps) {
            const w = await world();
            w.emu.refuseOnce(action, occurrence);
            const firstRun = await w.run().then(() => "ok", (e: Error) => e.message);
            w.runs.push([]);
            await w.run().catch((e: Error) => failures.push(`${action}#${occurrence}: the re-run failed: ${e.message.split("\n")[0]}`));
            const end = state(w.emu, w.c, w.group);
            const at = `${action}#${occurrence} (first run: ${firstRun.split("\n")[0]})`;
            if (end.members.includes(w.bad) || end.members.length !== 3 || end.ready !== 3) failures.push(`${at}: ended with ${end.members.join(", ")}, ${end.ready} Ready`);
            for (const [i, r] of w.runs.entries()) if (r.length > DEFAULT_HEALTH_REPAIR.maxUnhealthy) failures.push(`${at}: run ${i} removed ${r.join(", ")}`);
            if (w.c.violations.length > 0) failures.push(`${at}: ${w.c.violations.join("; ")}`);
            await w.emu.close();
        }
        assert.deepStrictEqual(failures, []);
    });
});
