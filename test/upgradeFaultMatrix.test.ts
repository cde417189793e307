/**
 * The upgrade order under faults. World: the local OpenAPI emulator (Cloud Assistant, saved commands) with the fake
 * cluster behind it (testing/fakeCluster.ts: kubeadm's upgrade rules — `apply` needs the target kubeadm, the addon phase
 * waits for every master), 3 masters and 2 workers on 1.35.4, moved to 1.36.3 by what `pulumi up` runs: ControlPlaneVersion
 * (checks, backup, one master at a time) then NodeVersions (nodes in place). The join material's version is the
 * ControlPlaneVersion output the program last got (a run that fails returns nothing: the old one stays).
 *
 * A clean run, then every API call refused once, every command failing once and the caller killed after every mutating
 * call, each followed by a re-run without faults. Asserted from the fake cluster's and the emulator's state:
 *   U1 masters one at a time: no mutating step on a master while another is half-way (cordoned, API server and kubelet
 *      apart); CoreDNS and kube-proxy never ahead of an API server
 *   U2 no join material of version N while an API server serves less than N, nor while a master is half-way (its static
 *      pods not restarted by its kubelet yet, say); the autoscaler's minor never ahead
 *   U3 after the re-run: every master and node at 1.36.3, schedulable; kubeadm-config and the add-ons at 1.36.3
 *   U4 an etcd backup before the first change; the add-ons moved by the last master's `upgrade node`, after every other step
 * The same for a new controlPlane.instanceType (the masters stopped, resized with ModifyInstanceSpec and started):
 *   R1 never a master stopped while another is down or half-way   R2 after the re-run every master of the new type, Running,
 *   uncordoned   R3 no worker stopped or resized   R4 an etcd backup before the first master stopped
 */
import * as assert from "assert";
import { disarmFaults, failNthCommand, startEmulatorHere, useEmulatorEnvironment } from "../testing/emulator/fixture";
import type { Emulator } from "../testing/emulator";
import { fakeCluster, type FakeCluster } from "../testing/fakeCluster";
import { createCommand, operation } from "../testing/savedCommands";
import { renderUpgradeCommand } from "../src/shell/render";
import { OPERATIONS, autoscalerVersionWhileRunning, compareVersions, minorOf } from "../src/rules";
import { reconcileControlPlaneVersion, type ControlPlaneVersionInputs } from "../src/providers/controlPlaneVersion";
import { reconcileNodeVersions } from "../src/providers/nodeVersions";
import { modifyInstanceType } from "../src/cloud/ecs";
import { reconfigureControlPlane } from "../src/upgrade";
import type { Clock } from "../src/cloud/wait";
import { steppedClock } from "../testing/steppedClock";

const REGION = "cn-hangzhou";
const FROM = "1.35.4";
const TO = "1.36.3";
const POLLS = ["DescribeInvocationResults"];
const isMutating = (action: string) => !/^(Describe|List|Get|Query)/.test(action);

interface World {
    emu: Emulator;
    c: FakeCluster;
    inputs: ControlPlaneVersionInputs;
    /** The version the program's join material was last rendered with (ControlPlaneVersion's last output). */
    joinVersion: string;
    /** The health gates' and instance waits' clock: a gate gives up after as many looks on any machine, however busy. */
    clock: Clock;
}

/** 3 masters and 2 workers on `from`, `pulumi up` asking for `to` (and, when given, masters of `instanceType`). */
async function world(opts: { from?: string; to?: string; instanceType?: string; masters?: number } = {}): Promise<World> {
    const [from, to] = [opts.from ?? FROM, opts.to ?? TO];
    const emu = await startEmulatorHere();
    const c = await fakeCluster(emu, REGION, { masters: opts.masters ?? 3, version: from });
    c.backupInstalled = true;
    c.masters.forEach((id, k) => { if (k === 0) c.addNode(id, { name: "master-0", controlPlane: true }); });
    for (let k = 0; k < 2; k++) c.addNode(emu.addInstance({ regionId: REGION }).instanceId, { pods: ["ReplicaSet", "DaemonSet"] });
    const upgradeCommandId = await createCommand(REGION, {
        commandName: "test-upgrade", script: renderUpgradeCommand({ region: REGION, kubernetesVersion: to }), parameters: true,
        timeoutSeconds: OPERATIONS.upgrade.timeoutSeconds, description: OPERATIONS.upgrade.description,
    });
    const inputs: ControlPlaneVersionInputs = {
        region: REGION, masterInstanceId: c.master, masterInstanceIds: c.masters, commands: c.commands, pollIntervalMs: 2,
        targetVersion: to, upgradeCommandId, autoscaled: true, autoscalerVersion: "", gateTimeoutSeconds: 0.3, gateIntervalSeconds: 0.005,
        ...(opts.instanceType ? { instanceType: opts.instanceType } : {}),
    };
    return { emu, c, inputs, joinVersion: from, clock: steppedClock() };
}

/** What `pulumi up` runs: the control plane, then (its output feeding the join material) the nodes. */
async function up(w: World): Promise<void> {
    const out = await reconcileControlPlaneVersion(w.inputs, undefined, undefined, w.clock);
    assert.deepStrictEqual(w.c.mastersHalfway(), [], "U2 ControlPlaneVersion returned (the join material moves) with a master half-way");
    w.joinVersion = out.runningVersion;
    assertJoinMaterial(w, "after ControlPlaneVersion");
    await reconcileNodeVersions({ ...w.inputs, version: out.runningVersion }, undefined, w.clock);
}

/** U2 at this moment. */
function assertJoinMaterial(w: World, label: string): void {
    const apiServers = w.c.masters.map((m) => w.c.versions.get(m)!.apiserver);
    for (const v of apiServers) {
        assert.ok(compareVersions(w.joinVersion, v) <= 0, `${label}: U2 join material ${w.joinVersion} while an API server serves ${v}`);
        assert.ok(minorOf(autoscalerVersionWhileRunning("1.36.1", w.joinVersion)) <= minorOf(v), `${label}: U2 autoscaler ahead of API server ${v}`);
    }
}

function assertDone(w: World, label: string): void {
    const { c } = w;
    assert.deepStrictEqual(c.upgradeViolations, [], `${label}: U1`);
    assertJoinMaterial(w, label);
    assert.strictEqual(w.joinVersion, TO, `${label}: U2 join material not at ${TO} after the re-run`);
    for (const [id, v] of c.versions) {
        const master = c.masters.includes(id);
        assert.deepStrictEqual(v, { kubeadm: TO, kubelet: TO, apiserver: master ? TO : "none" }, `${label}: U3 ${master ? "master" : "node"} ${id}`);
    }
    for (const n of c.nodes.values()) {
        assert.strictEqual(n.kubelet, TO, `${label}: U3 Node ${n.name} kubelet`);
        assert.strictEqual(n.unschedulable, false, `${label}: U3 Node ${n.name} left cordoned`);
    }
    assert.strictEqual(c.clusterConfig, TO, `${label}: U3 kubeadm-config`);
    assert.strictEqual(c.addons.version, TO, `${label}: U3 add-ons`);
    const firstChange = c.log.findIndex((l) => /: upgrade (kubeadm|plan|apply|node|kubelet)$/.test(l) || /: drain /.test(l));
    const firstBackup = c.log.findIndex((l) => l.endsWith(": backup"));
    assert.ok(firstBackup >= 0 && firstBackup < firstChange, `${label}: U4 no etcd backup before the first change`);
    const addons = c.log.indexOf(`addons ${TO}`);
    const last = c.masters[c.masters.length - 1];
    const lastNode = c.log.lastIndexOf(`${last}: upgrade node`);
    assert.ok(lastNode >= 0 && addons > lastNode, `${label}: U4 add-ons moved before the last master's upgrade node`);
    const masterSteps = c.log.map((l, i) => ({ l, i })).filter(({ l }) => c.masters.some((m) => l.startsWith(`${m}: upgrade `) && !l.endsWith(" node")) && !l.startsWith(`${last}:`));
    assert.ok(masterSteps.every(({ i }) => i < addons), `${label}: U4 a step of another master after the add-ons moved`);
}

type Fault = { kind: "refused" | "crash-after" | "command-fails"; index: number };

function arm(w: World, fault: Fault): { struck: boolean } {
    const hit = { struck: false };
    if (fault.kind === "command-fails") return failNthCommand(w.emu, fault.index);
    let n = 0, m = 0, crashed = false;
    w.emu.beforeRequest = (req) => {
        if (crashed) return { status: 400, code: "EmulatedCrash", message: "the caller was killed" };
        if (POLLS.includes(req.action)) return undefined;
        if (fault.kind === "refused" && ++n === fault.index) {
            hit.struck = true;
            return { status: 400, code: "EmulatedFault", message: "injected: refused once" };
        }
        return undefined;
    };
    w.emu.afterRequest = (req) => {
        if (!POLLS.includes(req.action) && fault.kind === "crash-after" && isMutating(req.action) && ++m === fault.index) crashed = hit.struck = true;
    };
    return hit;
}

function disarm(w: World): void {
    disarmFaults(w.emu);
}

/** Waits until the commands a killed caller started (they run on) have ended: every handler has answered. */
async function settle(w: World): Promise<void> {
    const running = () => [...w.emu.state.invocations.values()].some((inv) => inv.records.some((r) => !r.fixed && !r.reply && r.deliveryTimeoutAt === undefined));
    while (running()) await new Promise((r) => setImmediate(r));
}

/** What a clean run did: the size of the matrix. */
interface Clean { calls: number; mutating: number; commands: number }

/** A clean run's counts, from the emulator's calls after `setup`. */
function countsOf(w: World, setup: number): Clean {
    const steps = w.emu.calls.slice(setup).filter((x) => !POLLS.includes(x.action));
    return { calls: steps.length, mutating: steps.filter((x) => isMutating(x.action)).length, commands: w.emu.callsOf("InvokeCommand").length };
}

/**
 * Every refused call, failing command and crash after a mutating call of a clean run (`clean`), each in a fresh world:
 * `during` holds after the faulty run, the re-run succeeds, and `done` holds after it.
 */
async function faultMatrix(clean: Clean, make: () => Promise<World>, during: (w: World, label: string) => void, done: (w: World, label: string) => void): Promise<void> {
    assert.ok(clean.calls > 0, "the clean run did not run");
    const faults: Fault[] = [
        ...Array.from({ length: clean.calls }, (_, k) => ({ kind: "refused" as const, index: k + 1 })),
        ...Array.from({ length: clean.commands }, (_, k) => ({ kind: "command-fails" as const, index: k + 1 })),
        ...Array.from({ length: clean.mutating }, (_, k) => ({ kind: "crash-after" as const, index: k + 1 })),
    ];
    let struck = 0;
    for (const fault of faults) {
        const label = `${fault.kind} at step ${fault.index}`;
        const w = await make();
        try {
            const hit = arm(w, fault);
            await up(w).catch(() => undefined);
            if (hit.struck) struck++;
            disarm(w);
            await settle(w);
            during(w, label);
            await up(w).catch((err: Error) => assert.fail(`${label}: the re-run failed: ${err.message}`));
            done(w, label);
        } finally {
            await w.emu.close();
        }
    }
    if (process.env.FAULT_MATRIX_VERBOSE) console.log(`${faults.length} injections; clean run ${JSON.stringify(clean)}; struck ${struck}`);
    assert.ok(struck >= faults.length - 3, `struck ${struck} of ${faults.length}`);
}

describe("upgrade fault matrix: one fault at every step, then a re-run (U1–U4 from state)", function () {
    this.timeout(600_000);
    useEmulatorEnvironment();
    let clean: Clean = { calls: 0, mutating: 0, commands: 0 };

    it("a clean run moves the masters one at a time, then the nodes; a second run changes nothing", async () => {
        const w = await world();
        try {
            const setup = w.emu.calls.length;
            await up(w);
            assertDone(w, "clean");
            clean = countsOf(w, setup);
            const log = [...w.c.log];
            await up(w);
            assert.ok(!w.c.log.slice(log.length).some((l) => /: (upgrade (kubeadm|plan|apply|node|kubelet)|drain .*|backup)$/.test(l)), "a second run ran a step");
        } finally {
            await w.emu.close();
        }
    });

    it("an uncordon refused while the master's API server restarts under its new kubelet is tried again: one run finishes", async () => {
        const w = await world();
        try {
            // what a real master's uncordon met right after its kubelet step (test/realNodeSecondMasterUpgrade.test.ts)
            const handlers = w.emu.state.handlers;
            let refused = 0;
            w.emu.onCommand(operation("uncordon"), (ctx) => {
                if (refused < 2) {
                    refused++;
                    return { exitCode: 1, output: 'error: Get "https://192.168.0.41:6443/api/v1/nodes/n": dial tcp 192.168.0.41:6443: connect: connection refused\n' };
                }
                const next = handlers.slice(0, -1).reverse().find((h) => h.pattern.test(ctx.script))!.handler;
                return typeof next === "function" ? next(ctx) : next;
            });
            await up(w);
            assert.strictEqual(refused, 2);
            assertDone(w, "uncordon refused twice");
        } finally {
            await w.emu.close();
        }
    });

    it("a master's kubelet restarts its static pods listings after its kubelet step: the next master's first step waits for them", async () => {
        const w = await world();
        try {
            // As a real master did: the health gate passed on the old containers, the new kubelet restarted them after.
            w.c.staticPodRestartPolls = 4;
            await up(w);
            // U1 (assertDone): no step on a master while another one's static pods waited for their restart.
            assertDone(w, "static pods restarted late");
            assert.deepStrictEqual(w.c.staticPodRestarts, w.c.masters, "each master's kubelet restarted its static pods, once");
        } finally {
            await w.emu.close();
        }
    });

    it("a run killed while the last master's static pods wait for their restart: the re-run waits for them before the join material moves or a master stops", async () => {
        for (const instanceType of [undefined, BIG]) {
            const w = await world({ instanceType });
            try {
                // Each kubelet step restarts that master's static pods 30 listings later: well into the gate's time, after
                // whatever a re-run reads before it reaches the control plane.
                w.c.staticPodRestartPolls = 30;
                const last = w.c.masters[w.c.masters.length - 1];
                const lastNode = [...w.c.nodes.values()].find((n) => n.instanceId === last)!.name;
                let crashed = false;
                w.emu.beforeRequest = () => crashed ? { status: 400, code: "EmulatedCrash", message: "the caller was killed" } : undefined;
                w.emu.afterRequest = (req) => {
                    if (req.action === "InvokeCommand" && req.params.CommandId === w.c.commands["static-pods"] && JSON.parse(req.params.Parameters).node === lastNode) crashed = true;
                };
                await assert.rejects(up(w));
                disarm(w);
                await settle(w);
                assert.deepStrictEqual(w.c.mastersHalfway(), [last], "the crash left the last master's static pods waiting for their restart");
                await up(w);
                assertDone(w, `re-run${instanceType ? " with a new instance type" : ""}`);
                if (instanceType) assertResized(w, "re-run");
            } finally {
                await w.emu.close();
            }
        }
    });

    it("a ClusterConfiguration change on a master whose Node is gone stops at that master's status, not after the gate's time", async () => {
        const w = await world({ masters: 1 });
        try {
            const node = [...w.c.nodes.values()].find((n) => n.instanceId === w.c.master)!;
            w.c.nodes.delete(node.name);
            const access = { region: REGION, masterInstanceIds: w.c.masters, commands: w.c.commands, pollIntervalMs: 2 };
            await assert.rejects(reconfigureControlPlane({ access, target: FROM, upgradeCommandId: w.inputs.upgradeCommandId, gate: { timeoutMs: 300, intervalMs: 5, clock: w.clock } }),
                new RegExp(`^UpgradeError: ${w.c.master}: step "status" failed: the master has no Node in the cluster`));
        } finally {
            await w.emu.close();
        }
    });

    it("saved commands without static-pods (an earlier version's) stop the run before any master is touched, with the fix", async () => {
        const w = await world();
        try {
            const { "static-pods": _gone, ...commands } = w.c.commands;
            w.inputs = { ...w.inputs, commands: commands as typeof w.c.commands };
            await assert.rejects(up(w), new RegExp(`^UpgradeError: ${w.c.master}: step "saved commands" failed: the saved command static-pods is missing .*Fix: give the resource the saved commands of this version`));
            assert.deepStrictEqual(w.c.masters.map((m) => w.c.versions.get(m)), w.c.masters.map(() => ({ kubeadm: FROM, kubelet: FROM, apiserver: FROM })), "a master was touched");
            assert.deepStrictEqual(w.c.backups, [], "a backup was taken");
        } finally {
            await w.emu.close();
        }
    });

    it("static pods that do not come back stop the run at that master with the step and the fix, before the next master; a re-run resumes", async () => {
        const w = await world();
        try {
            w.c.staticPodRestartPolls = 1_000_000;
            const [m0, m1] = w.c.masters;
            await assert.rejects(up(w), (err: Error) => {
                assert.match(err.message, new RegExp(`^${m0}: step "static pods" failed: the static pods of master-0 not restarted and Ready after [0-9]+ s: .*kube-apiserver-master-0 not restarted by the kubelet yet`));
                assert.match(err.message, /Fix: the master's kubelet did not run its new etcd, kube-apiserver.*journalctl -u kubelet/);
                return true;
            });
            assert.deepStrictEqual(w.c.versions.get(m1), { kubeadm: FROM, kubelet: FROM, apiserver: FROM }, "the next master was touched");
            assert.strictEqual(w.joinVersion, FROM);
            w.c.staticPodRestartPolls = 1; // the kubelet restarts them at last
            await up(w);
            assertDone(w, "re-run after the static pods came back");
        } finally {
            await w.emu.close();
        }
    });

    it("a patch release's kubelet keeps the static pods it finds (the same hash): one run finishes, no restart waited for", async () => {
        const w = await world({ from: TO, to: "1.36.4" });
        try {
            const out = await reconcileControlPlaneVersion(w.inputs, undefined, undefined, w.clock);
            assert.strictEqual(out.runningVersion, "1.36.4");
            assert.deepStrictEqual(w.c.upgradeViolations, []);
            assert.deepStrictEqual(w.c.staticPodRestarts, []);
            assert.deepStrictEqual(w.c.masters.map((m) => w.c.versions.get(m)), w.c.masters.map(() => ({ kubeadm: "1.36.4", kubelet: "1.36.4", apiserver: "1.36.4" })));
        } finally {
            await w.emu.close();
        }
    });

    it("every refused call, failing command and crash stops the run, and a re-run finishes with U1–U4", async () => {
        await faultMatrix(clean, () => world(), (w, label) => {
            assert.deepStrictEqual(w.c.upgradeViolations, [], `${label}: U1 during the faulty run`);
            assertJoinMaterial(w, `${label} (faulty run)`);
        }, assertDone);
    });
});

const SMALL = "ecs.g7.large";
const BIG = "ecs.g7.xlarge";

/** R1–R4 after a run: every master of the new type, Running, uncordoned, unmarked; the workers untouched; a backup before the first stop. */
function assertResized(w: World, label: string): void {
    assert.deepStrictEqual(w.c.upgradeViolations, [], `${label}: R1 two masters out at once`);
    for (const m of w.c.masters) {
        const inst = w.emu.instances.get(m)!;
        assert.deepStrictEqual([inst.instanceType, inst.status], [BIG, "Running"], `${label}: R2 master ${m}`);
    }
    for (const n of w.c.nodes.values()) {
        assert.ok(!n.unschedulable && !n.upgrading, `${label}: R2 Node ${n.name} left cordoned or marked`);
        if (!n.controlPlane) assert.strictEqual(w.emu.instances.get(n.instanceId)!.instanceType, SMALL, `${label}: R3 a worker was resized`);
    }
    assert.ok(!w.emu.callsOf("StopInstance").some((x) => !w.c.masters.includes(x.params.InstanceId)), `${label}: R3 a worker was stopped`);
    const firstStop = w.c.log.findIndex((l) => l.endsWith(": stop"));
    const firstBackup = w.c.log.findIndex((l) => l.endsWith(": backup"));
    assert.ok(firstBackup >= 0 && firstBackup < firstStop, `${label}: R4 no etcd backup before the first master stopped`);
}

// controlPlane.instanceType: the masters' ECS instances ignore it; ControlPlaneVersion resizes them one at a time (stop,
// ModifyInstanceSpec, start: ECS changes a type only while the instance is Stopped), each behind a drain and a health gate.
describe("master instance type: one master at a time, under a fault at every step (R1–R4 from state)", function () {
    this.timeout(600_000);
    useEmulatorEnvironment();
    let clean: Clean = { calls: 0, mutating: 0, commands: 0 };
    const resizeWorld = () => world({ from: TO, to: TO, instanceType: BIG });

    it("a clean run resizes each master in turn (drained, stopped, resized, started, gated); a second run stops nothing", async () => {
        const w = await resizeWorld();
        try {
            const setup = w.emu.calls.length;
            await up(w);
            assertResized(w, "clean");
            clean = countsOf(w, setup);
            const stops = w.c.log.filter((l) => l.endsWith(": stop")).map((l) => l.split(":")[0]);
            assert.deepStrictEqual(stops, w.c.masters, "each master stopped once, master 0 first");
            const before = w.emu.callsOf("StopInstance").length;
            await up(w);
            assert.strictEqual(w.emu.callsOf("StopInstance").length, before, "a second run stopped a master");
        } finally {
            await w.emu.close();
        }
    });

    it("ECS refuses a new type for a running instance; a master somebody else stopped stops the run before any other master is touched", async () => {
        const w = await resizeWorld();
        try {
            await assert.rejects(modifyInstanceType(REGION, w.c.masters[1], BIG), (err: { code?: string }) => err.code === "IncorrectInstanceStatus");
            w.emu.instances.get(w.c.masters[1])!.status = "Stopped";
            // Master 0 comes first: its health gate sees master 1's etcd member down and refuses to take a second one out.
            await assert.rejects(up(w), new RegExp(`${w.c.masters[0]}: step "health gate" failed: .*etcd members not healthy: master-1`));
            assert.deepStrictEqual(w.emu.callsOf("StopInstance").length, 0, "a master was stopped while another one was down");
            assert.deepStrictEqual(w.c.masters.map((m) => w.emu.instances.get(m)!.instanceType), [SMALL, SMALL, SMALL]);
        } finally {
            await w.emu.close();
        }
    });

    it("one master: a run killed while it is stopped (the API down with it) is finished by the re-run", async () => {
        const w = await world({ from: TO, to: TO, instanceType: BIG, masters: 1 });
        try {
            let crashed = false;
            w.emu.beforeRequest = (req) => {
                if (crashed) return { status: 400, code: "EmulatedCrash", message: "the caller was killed" };
                if (req.action === "StopInstance") crashed = true;
                return undefined;
            };
            await assert.rejects(up(w));
            w.emu.beforeRequest = undefined;
            await settle(w);
            assert.strictEqual(w.emu.instances.get(w.c.master)!.status, "Stopped", "the crash left the only master stopped");
            await up(w);
            assertResized(w, "one master, re-run");
        } finally {
            await w.emu.close();
        }
    });

    it("every refused call, failing command and crash stops the run, and a re-run finishes with R1–R4", async () => {
        await faultMatrix(clean, resizeWorld, (w, label) => assert.deepStrictEqual(w.c.upgradeViolations, [], `${label}: R1 during the faulty run`), assertResized);
    });
});
