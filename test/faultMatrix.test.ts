// World: the OpenAPI emulator (testing/emulator); the Kubernetes double (testing/fakeCluster.ts).
/**
 * The removal fault matrix: for a pool node released and one kept, a pool member released with no
 * Node yet (fenced: protected and stopped before its release), an existing node and a
 * control-plane member, every API call of a clean removal fails once in turn (refused, or applied with its
 * answer lost), every command exits 1 once in turn, and the caller "crashes" after every mutating call (from
 * then on the cloud refuses it everything, as if the process were killed, while what it started — commands,
 * scaling activities, route tasks — goes on). Each is followed by a re-run without faults. Asserted from the
 * emulator's and the fake cluster's state, never from logs:
 *   I1  no member leaves ESS while it has a Node that was not drained (at the moment ESS takes it out);
 *   I2  after the re-run the node is fully gone: no Node, no route, out of ESS, userdata cleared (existing),
 *       out of etcd (control plane), no kubelet credentials on a machine that keeps running;
 *   I3  nothing else changed: the other instances, members, routes, Nodes and etcd members are as they were,
 *       and every group's desired capacity equals its members (ESS has no victim of its own to choose).
 * The emulator's clocks are not zero here: scaling activities and route tasks take time — the emulator's time, which
 * stands but for the removals' own waits (a stepped clock), so a re-run "at once" meets what the killed run started
 * still in progress and a clean run makes the same calls however loaded the machine.
 * One more dimension, throttling: the same removals with every action limited to a few calls per second (the
 * emulator answers Throttling.User above it, as Alibaba's per-action limits do) finish in one run, I1–I3 holding,
 * the process's pacer starting from its defaults and slowing down on the throttling answers.
 */
import * as assert from "assert";
import { disarmFaults, failNthCommand, startEmulatorHere, useEmulatorEnvironment } from "../testing/emulator/fixture";
import type { Emulator } from "../testing/emulator";
import { fakeCluster, type FakeCluster } from "../testing/fakeCluster";
import { CLEARED_USERDATA, removeNode, type RemovalOptions, type RemovalTarget } from "../src/removal";
import { resetPacer } from "../src/cloud/pacer";

const REGION = "cn-hangzhou";
/** Polling reads: their number depends on timing, so they are not counted as steps to fail. */
const POLLS = ["DescribeInvocationResults", "DescribeScalingActivities"];
const isMutating = (action: string) => !/^(Describe|List|Get|Query)/.test(action);
/** The throttling dimension: every action limited to this many calls per second. */
const THROTTLED_PER_SECOND = 2;

type Kind = "pool release" | "pool release, no Node" | "pool keep" | "existing" | "control-plane";

/** One removal world: the cloud, the cluster, the target and everything else that must not change. */
interface World {
    emu: Emulator;
    c: FakeCluster;
    table: string;
    target: RemovalTarget;
    opts: RemovalOptions;
    before: Snapshot;
}

interface Snapshot {
    instances: Record<string, string>;
    members: Record<string, string>;
    routes: string[];
    nodes: Record<string, boolean>;
    etcd: string[];
}

/** Everything but the target, for I3. */
function snapshot(w: Pick<World, "emu" | "c" | "table" | "target">): Snapshot {
    const id = w.target.instanceId;
    const st = w.emu.state;
    return {
        instances: Object.fromEntries([...st.instances.values()].filter((i) => i.instanceId !== id).map((i) => [i.instanceId, `${i.status} ${i.userData}`])),
        members: Object.fromEntries([...st.scalingInstances.values()].filter((m) => m.instanceId !== id).map((m) => [m.instanceId, `${m.scalingGroupId} ${m.lifecycleState}`])),
        routes: w.emu.routeTables.get(w.table)!.entries.filter((e) => e.nextHopId !== id).map((e) => `${e.routeEntryId} ${e.destinationCidrBlock}`).sort(),
        nodes: Object.fromEntries([...w.c.nodes.values()].filter((n) => n.instanceId !== id).map((n) => [n.name, n.unschedulable])),
        etcd: [...w.c.etcd.keys()].filter((name) => w.c.nodes.get(name)?.instanceId !== id && name !== `master-2`).sort(),
    };
}

async function world(kind: Kind): Promise<World> {
    const emu = await startEmulatorHere();
    emu.stopClock();
    emu.state.activityDurationMs = 20;
    emu.state.routeTaskMs = 20;
    const c = await fakeCluster(emu, REGION, { masters: kind === "control-plane" ? 3 : 1 });
    const table = emu.addRouteTable().routeTableId;
    const route = (id: string) => emu.addRouteEntry(table, { destinationCidrBlock: [...c.nodes.values()].find((n) => n.instanceId === id)!.podCidr, nextHopId: id });
    let target: RemovalTarget;
    if (kind === "pool release" || kind === "pool keep") {
        const group = emu.addScalingGroup({ desiredCapacity: 3, maxSize: 3 }).scalingGroupId;
        const ids = emu.scalingGroupInstances(group);
        ids.forEach((id, k) => { c.addNode(id, { pool: "general", pods: k === 0 ? ["ReplicaSet", "ReplicaSet", "DaemonSet"] : ["ReplicaSet"] }); route(id); });
        // Fixed pools' members are protected (PoolCapacity): the removal lifts it for the victim only.
        ids.forEach((id) => { emu.state.scalingInstances.get(id)!.lifecycleState = "Protected"; });
        target = { instanceId: ids[0], kind: "scale-out", scalingGroupId: group, essAction: kind === "pool keep" ? "keep" : "release" };
    } else if (kind === "pool release, no Node") {
        // A victim still joining (no Node): fenced — protected, stopped — before its release. Members not protected
        // (an autoscaled pool's), so the fence's own protection is what keeps ESS's health check off it.
        const group = emu.addScalingGroup({ desiredCapacity: 3, maxSize: 3 }).scalingGroupId;
        const ids = emu.scalingGroupInstances(group);
        ids.slice(1).forEach((id) => { c.addNode(id, { pool: "general", pods: ["ReplicaSet"] }); route(id); });
        target = { instanceId: ids[0], kind: "scale-out", scalingGroupId: group, essAction: "release" };
    } else if (kind === "existing") {
        const userData = Buffer.from("#!/bin/bash\nattach ...").toString("base64");
        const ids = [emu.addInstance({ userData }).instanceId, emu.addInstance({ userData }).instanceId];
        ids.forEach((id) => { c.addNode(id, { pods: ["ReplicaSet", "DaemonSet"] }); route(id); });
        target = { instanceId: ids[0], kind: "existing" };
    } else {
        c.addNode(c.master, { name: "master-0", controlPlane: true });
        c.masters.forEach((id) => route(id));
        c.resetLeavesEtcd = true; // kubeadm reset only warns when it cannot leave etcd: the harsher case
        target = { instanceId: c.masters[2], kind: "control-plane" };
    }
    const removal: RemovalOptions = { region: REGION, masterInstanceIds: c.masters, commands: c.commands, routeTableId: table, podCidr: "172.16.0.0/16", pollIntervalMs: 5, concurrency: 5, clock: emu.steppedClock() };
    const w = { emu, c, table, target, opts: removal, before: undefined as unknown as Snapshot };
    w.before = snapshot(w);
    return w;
}

/** I1–I3 after the re-run. */
function assertInvariants(w: World, label: string): void {
    const { emu, c, target } = w;
    const id = target.instanceId;
    assert.deepStrictEqual(c.violations, [], `${label}: I1`);
    const inst = emu.instances.get(id);
    assert.ok(![...c.nodes.values()].some((n) => n.instanceId === id), `${label}: I2 Node left`);
    assert.deepStrictEqual(emu.routeTables.get(w.table)!.entries.filter((e) => e.nextHopId === id), [], `${label}: I2 route left`);
    assert.ok(!emu.state.scalingInstances.has(id), `${label}: I2 still an ESS member`);
    if (target.kind === "existing") assert.strictEqual(Buffer.from(inst!.userData, "base64").toString("utf8"), CLEARED_USERDATA, `${label}: I2 userdata`);
    if (target.kind === "control-plane") assert.ok(!c.etcd.has("master-2"), `${label}: I2 still in etcd`);
    if (inst && inst.status === "Running" && (target.kind === "existing" || target.essAction === "keep")) assert.ok(!c.credentials.has(id), `${label}: I2 kubelet credentials left`);
    if (target.essAction === "release") assert.ok(!inst, `${label}: I2 not released`);
    if (target.essAction === "keep") assert.ok(inst, `${label}: I2 a kept instance was released`);
    assert.deepStrictEqual(snapshot(w), w.before, `${label}: I3`);
    for (const g of emu.scalingGroups.values()) {
        const members = [...emu.state.scalingInstances.values()].filter((m) => m.scalingGroupId === g.scalingGroupId).length;
        assert.strictEqual(g.desiredCapacity, members, `${label}: I3 desired capacity of ${g.scalingGroupId} is ${g.desiredCapacity} for ${members} members`);
    }
}

/** What can go wrong once, at step `index`. */
type Fault = { kind: "refused" | "lost-answer" | "crash-after"; index: number; atOnce?: boolean } | { kind: "command-fails"; index: number; atOnce?: boolean };

/** Arms `fault` on the world; the returned flag turns true once the fault has struck. */
function arm(w: World, fault: Fault): { struck: boolean } {
    const hit = { struck: false };
    let n = 0, m = 0;
    let crashed = false;
    if (fault.kind === "command-fails") return failNthCommand(w.emu, fault.index);
    w.emu.beforeRequest = (req) => {
        if (crashed) return { status: 400, code: "EmulatedCrash", message: "the caller was killed" };
        if (POLLS.includes(req.action)) return undefined;
        n++;
        if (fault.kind === "refused" && n === fault.index) {
            hit.struck = true;
            return { status: 400, code: "EmulatedFault", message: "injected: refused once" };
        }
        return undefined;
    };
    w.emu.afterRequest = (req) => {
        if (POLLS.includes(req.action)) return;
        if (fault.kind === "crash-after" && isMutating(req.action) && ++m === fault.index) crashed = hit.struck = true;
    };
    if (fault.kind === "lost-answer") {
        // Applied, then the answer is lost (a 503 the client retries): with a ClientToken the retry gets the first answer;
        // without one the action runs again.
        let seen = 0;
        const orig = w.emu.beforeRequest;
        w.emu.beforeRequest = (req) => {
            const r = orig(req);
            if (r) return r;
            if (!POLLS.includes(req.action) && ++seen === fault.index) {
                hit.struck = true;
                w.emu.inject(req.action, { status: 503, code: "ServiceUnavailable", message: "answer lost", times: 1, afterApply: true, headers: { "x-acs-retry-after": "1" } });
            }
            return undefined;
        };
    }
    return hit;
}

function disarm(w: World): void {
    disarmFaults(w.emu);
}

/** The clean run's steps: API calls (without polls), mutating ones, and commands. */
async function cleanRun(kind: Kind): Promise<{ calls: number; mutating: number; commands: number; ms: number }> {
    const w = await world(kind);
    const setupCalls = w.emu.calls.length;
    try {
        const started = Date.now();
        await removeNode(w.target, w.opts);
        await settle(w);
        assertInvariants(w, `${kind} clean`);
        const steps = w.emu.calls.slice(setupCalls).filter((x) => !POLLS.includes(x.action));
        return { calls: steps.length, mutating: steps.filter((x) => isMutating(x.action)).length, commands: w.emu.callsOf("InvokeCommand").length, ms: Date.now() - started };
    } finally {
        await w.emu.close();
    }
}

/** Lets what the killed caller started (activities, route tasks) end, as time would: the emulator's clock steps past them. */
async function settle(w: World): Promise<void> {
    w.emu.advance(Math.max(w.emu.state.activityDurationMs, w.emu.state.routeTaskMs) + 5);
}

describe("removal fault matrix: one fault at every step, then a re-run (I1–I3 from state)", function () {
    this.timeout(120_000);
    useEmulatorEnvironment();

    for (const kind of ["pool release", "pool release, no Node", "pool keep", "existing", "control-plane"] as Kind[]) {
        it(`${kind}: every refused call, lost answer, failing command and crash is followed by a re-run that finishes, with I1–I3`, async () => {
            const clean = await cleanRun(kind);
            const faults: Fault[] = [
                ...Array.from({ length: clean.calls }, (_, k) => ({ kind: "refused" as const, index: k + 1 })),
                ...Array.from({ length: clean.calls }, (_, k) => ({ kind: "lost-answer" as const, index: k + 1 })),
                ...Array.from({ length: clean.commands }, (_, k) => ({ kind: "command-fails" as const, index: k + 1 })),
                ...Array.from({ length: clean.mutating }, (_, k) => ({ kind: "crash-after" as const, index: k + 1 })),
                // The same crashes, re-run at once: the re-run meets the scaling activity or route task still in progress.
                ...Array.from({ length: clean.mutating }, (_, k) => ({ kind: "crash-after" as const, index: k + 1, atOnce: true })),
            ];
            const struck: Record<string, number> = {};
            const started = Date.now();
            for (const fault of faults) {
                const label = `${kind}, ${fault.kind} at step ${fault.index}${fault.atOnce ? " (re-run at once)" : ""}`;
                const w = await world(kind);
                try {
                    const hit = arm(w, fault);
                    let threw = false;
                    await removeNode(w.target, w.opts).catch(() => { threw = true; });
                    if (hit.struck) struck[fault.kind + (fault.atOnce ? " at once" : "")] = (struck[fault.kind + (fault.atOnce ? " at once" : "")] ?? 0) + 1;
                    // A fault that struck stops the run (a lost answer is retried and must not).
                    assert.strictEqual(threw, hit.struck && fault.kind !== "lost-answer", `${label}: ${threw ? "stopped" : "did not stop"} the run`);
                    disarm(w);
                    if (!fault.atOnce) {
                        await settle(w);
                        assert.deepStrictEqual(w.c.violations, [], `${label}: I1 during the faulty run`);
                    }
                    await removeNode(w.target, w.opts).catch((err: Error) => assert.fail(`${label}: the re-run failed: ${err.message}`));
                    await settle(w);
                    assertInvariants(w, label);
                } finally {
                    await w.emu.close();
                }
            }
            if (process.env.FAULT_MATRIX_VERBOSE) console.log(`${kind}: ${faults.length} injections in ${Date.now() - started} ms (clean run ${clean.ms} ms: ${clean.calls} calls, ${clean.mutating} mutating, ${clean.commands} commands); struck: ${JSON.stringify(struck)}`);
            // Nearly every fault found its step (the number of route listings while a route task ends varies a little).
            assert.ok(Object.values(struck).reduce((a, b) => a + b, 0) >= faults.length - 3, `struck ${JSON.stringify(struck)} of ${faults.length}`);
        });
    }

    for (const kind of ["pool release", "pool release, no Node", "pool keep", "existing", "control-plane"] as Kind[]) {
        it(`${kind}: throttled at ${THROTTLED_PER_SECOND} calls/s per action, the removal finishes in one run with I1–I3`, async () => {
            const w = await world(kind);
            try {
                resetPacer(); // the defaults, above the limit: the pacer must slow down on its own
                // The emulator's time stands but for the removal's waits, so the first window's limit is met however slow
                // the machine; a throttled caller sees the next window (it waited there), as the pacer makes it wait.
                w.emu.onThrottled = () => w.emu.advance(w.emu.state.rateWindowMs);
                w.emu.rateLimit(THROTTLED_PER_SECOND);
                await removeNode(w.target, w.opts); // polling every few ms: the limit is met at once
                await settle(w);
                assertInvariants(w, `${kind}, throttled at ${THROTTLED_PER_SECOND}/s`);
                assert.ok(w.emu.calls.some((c) => c.code === "Throttling.User"), "the limit was met");
            } finally {
                await w.emu.close();
            }
        });
    }
});
