// Existing nodes replaced in place when their spec changed (NodeMembership's update with `spec` and `rollout`), in the
// emulator world: ECS and Cloud Assistant are the emulator; the cluster behind the masters is testing/fakeCluster.ts
// (drains move pods, a PodDisruptionBudget is a drain that fails, `system` is what the validation reads). The saved
// attach command is a stand-in the test answers: it registers the instance's Node again, as attach_node.sh would.
// `pulumi up` is the memberships' diff and update in the order the Cluster's dependsOn chain gives them (each update
// after the one before returned; a failed one stops the ones after it), the state of a failed update stored as Pulumi's
// engine stores it (testing/partialUpdate.ts: a partial failure's properties, else the old state). Invariants are read from state at every drain,
// every attach and at the end. That order itself is checked last, under Pulumi mocks (testing/mockRuntime.ts) whose
// engine step of each resource takes time before its registration is answered.
import * as assert from "assert";
import { startEmulatorHere, useEmulator, useEmulatorEnvironment } from "../testing/emulator/fixture";
import type { Emulator } from "../testing/emulator";
import { fakeCluster, type FakeCluster } from "../testing/fakeCluster";
import { faultMatrix } from "../testing/faultMatrix";
import { createCommand, operation } from "../testing/savedCommands";
import { steppedClock } from "../testing/steppedClock";
import type { NodeCommandIds } from "../src/rules";
import { installMocks } from "../testing/mockRuntime";
import { engineRead, engineUpdate } from "../testing/partialUpdate";
import { NodeMembership, nodeMembershipProvider, updateMembership, type NodeMembershipInputs, type NodeMembershipOutputs } from "../src/providers/nodeMembership";

const REGION = "cn-hangzhou";
const OLD = "0000000000000old";
const NEW = "0000000000000new";

type State = NodeMembershipInputs & NodeMembershipOutputs;

/** The attach script of `auto` mode: cloud-init runs it at the first boot of a new system disk (the test reads its labels). */
const autoScript = (labels: string) => `#!/bin/bash\n# test attach (userdata)\nreadonly AK_LABELS='${labels}'\n`;

/**
 * A cluster with `n` existing nodes joined with the old spec (each with a workload pod) and a pool node to take pods.
 * `manual` nodes attach through the saved attach command, `auto` ones through userdata run at the boot after
 * ReplaceSystemDisk (the emulator's StartInstance).
 */
async function existingWorld(emu: Emulator, n: number, mode: "manual" | "auto" = "manual") {
    const c = await fakeCluster(emu, REGION);
    c.addNode(emu.addInstance().instanceId, { pool: "general", pods: ["ReplicaSet"] });
    const ids = Array.from({ length: n }, () => emu.addInstance({ keyPairName: "kp-ops" }).instanceId);
    for (const id of ids) c.addNode(id, { pool: "existing", pods: ["ReplicaSet", "DaemonSet"] });
    const attachCommandId = await createCommand(REGION, {
        commandName: "test-attach", script: "#!/bin/bash\n# test attach\nL='{{labels}}' T='{{taints}}' C='{{channel}}'\n", parameters: true, timeoutSeconds: 600, description: "attach",
    });
    /** The labels each instance last attached with (the attach command's parameter). */
    const attached = new Map<string, string>();
    const broken: string[] = [];
    /** Existing nodes other than `except` that are out: no Node, NotReady, or cordoned. */
    const out = (except: string) => ids.filter((id) => id !== except).filter((id) => {
        const node = [...c.nodes.values()].find((x) => x.instanceId === id);
        return !node || !node.ready || node.unschedulable;
    });
    c.onDrain = (name) => {
        const id = c.nodes.get(name)?.instanceId ?? "";
        if (out(id).length > 0) broken.push(`drain of ${name} while ${out(id).join(", ")} was out`);
    };
    emu.onCommand(/# test attach/, (ctx) => {
        if (out(ctx.instanceId).length > 0) broken.push(`attach of ${ctx.instanceId} while ${out(ctx.instanceId).join(", ")} was out`);
        attached.set(ctx.instanceId, ctx.parameters.labels ?? "");
        if (![...c.nodes.values()].some((x) => x.instanceId === ctx.instanceId)) c.addNode(ctx.instanceId, { pool: "existing", pods: ["DaemonSet"] });
        return { output: "joined\n" };
    });
    emu.state.onUserDataRun = (inst) => {
        const labels = /AK_LABELS='([^']*)'/.exec(Buffer.from(inst.userData, "base64").toString())?.[1];
        if (labels === undefined) return;
        if (out(inst.instanceId).length > 0) broken.push(`attach of ${inst.instanceId} while ${out(inst.instanceId).join(", ")} was out`);
        attached.set(inst.instanceId, labels);
        c.credentials.add(inst.instanceId);
        c.addNode(inst.instanceId, { pool: "existing", pods: ["DaemonSet"] });
    };
    const byMode: Partial<NodeMembershipInputs> = mode === "manual" ? { mode, admission: true, attachCommandId }
        : { mode, replaceSystemDisk: true, imageId: "m-new", userData: autoScript("role=new") };
    const inputs = (id: string, extra: Partial<NodeMembershipInputs> = {}): NodeMembershipInputs => ({
        region: REGION, instanceId: id, mode, ...byMode, labels: "role=new", taints: "", commands: c.commands, masterInstanceId: c.master,
        pollSeconds: 0.01, readyTimeoutSeconds: 5, pollIntervalMs: 5, spec: NEW, rollout: "replace", ...extra,
    });
    /** Each node's state as the previous `pulumi up` left it: joined with the old labels and spec. */
    const states = new Map<string, State>(ids.map((id) => [id, { ...inputs(id), labels: "role=old", spec: OLD, joinedSpec: OLD, nodeName: `node-${id}`, providerId: `${REGION}.${id}` }]));
    /** One `pulumi up` over the chain: diff and update each membership in order; a failed update stops those after it. */
    const up = async (news: (id: string) => NodeMembershipInputs = inputs) => {
        for (const id of ids) {
            const olds = states.get(id)!;
            const diff = await nodeMembershipProvider.diff!("x", olds, news(id));
            assert.deepStrictEqual(diff.replaces, [], "never a replacement (which Pulumi would run for every node at once)");
            if (diff.changes) await engineUpdate(olds, news(id), (o, n) => updateMembership(o, n, steppedClock()), (state) => states.set(id, state));
        }
    };
    const workloadPods = () => [...c.nodes.values()].reduce((k, x) => k + x.pods.filter((p) => p === "ReplicaSet").length, 0);
    return { c, ids, attached, broken, states, inputs, up, workloadPods };
}

describe("existing nodes replaced in place (emulator)", () => {
    const ctx = useEmulator();
    let c: FakeCluster;
    afterEach(() => assert.deepStrictEqual(c?.violations ?? [], []));
    const nodeOf = (id: string) => [...c.nodes.values()].find((x) => x.instanceId === id);

    it("with rollout: replace, outdated nodes are drained, reset and attached again one at a time; a current one is never touched", async () => {
        const w = await existingWorld(ctx.emu, 4);
        c = w.c;
        const [a, b, d, current] = w.ids;
        w.states.set(current, { ...w.states.get(current)!, labels: "role=new", spec: NEW, joinedSpec: NEW });
        const created = c.nodes.get(`node-${current}`)!.createdAt;
        const pods = w.workloadPods();
        await w.up();
        assert.deepStrictEqual(w.broken, [], "never two existing nodes out at once");
        assert.deepStrictEqual([a, b, d].map((id) => w.attached.get(id)), ["role=new", "role=new", "role=new"], "each outdated node attached again with the new labels");
        for (const id of [a, b, d]) {
            const node = [...c.nodes.values()].find((x) => x.instanceId === id)!;
            assert.ok(node.ready && !node.unschedulable && !node.removing, `${id} is a Ready, schedulable Node again`);
            assert.strictEqual(w.states.get(id)!.joinedSpec, NEW);
            const drained = c.log.indexOf(`${c.master}: drain node-${id}`);
            assert.ok(drained >= 0 && drained < c.log.indexOf(`${id}: reset`), `${id} drained before its reset`);
        }
        assert.strictEqual(w.workloadPods(), pods, "every workload pod evicted to another node, none lost with a deleted Node");
        assert.ok(!c.log.some((l) => l.includes(current)), "the current node: no drain, no reset, no command");
        assert.strictEqual(c.nodes.get(`node-${current}`)!.createdAt, created);
        assert.ok(!w.attached.has(current));
        assert.ok(ctx.emu.callsOf("ModifyInstanceAttribute").every((call) => call.params.InstanceId !== current));
        // The next `pulumi up` sees nothing to do.
        const log = c.log.length;
        await w.up();
        assert.deepStrictEqual(c.log.slice(log).filter((l) => /drain|reset/.test(l)), []);
    });

    it("without rollout: replace nothing is removed: the node keeps its old spec, recorded; allowed later, the next pulumi up replaces it", async () => {
        const w = await existingWorld(ctx.emu, 2);
        c = w.c;
        const before = [...c.nodes.values()].map((x) => `${x.name} ${x.createdAt} ${x.pods.join(",")}`);
        await w.up((id) => w.inputs(id, { rollout: undefined }));
        await w.up((id) => w.inputs(id, { rollout: "report" }));
        assert.deepStrictEqual([...c.nodes.values()].map((x) => `${x.name} ${x.createdAt} ${x.pods.join(",")}`), before, "every Node as it was");
        assert.ok(!c.log.some((l) => /drain|reset|delete-node/.test(l)), c.log.join("\n"));
        assert.strictEqual(w.attached.size, 0);
        assert.ok(w.ids.every((id) => w.states.get(id)!.joinedSpec === OLD && w.states.get(id)!.spec === NEW), "the state records what the node joined with");
        // Allowed later: the next `pulumi up` replaces them.
        await w.up();
        assert.ok(w.ids.every((id) => w.attached.get(id) === "role=new" && w.states.get(id)!.joinedSpec === NEW));
        assert.deepStrictEqual(w.broken, []);
    });

    it("a cluster that fails validation before a node goes stops the rollout before it; one that fails after a node came back stops the next", async () => {
        const w = await existingWorld(ctx.emu, 2);
        c = w.c;
        const [a, b] = w.ids;
        c.system.deployments = [{ name: "kube-system/coredns", replicas: 2, available: 1 }];
        await assert.rejects(w.up(), new RegExp(`failed validation before ${a} is replaced.*coredns: 1 of 2.*fix: .*its rollout to report`, "s"));
        assert.ok(w.ids.every((id) => nodeOf(id)?.ready && !nodeOf(id)!.unschedulable && w.states.get(id)!.joinedSpec === OLD), "nothing removed");
        c.system.deployments = [{ name: "kube-system/coredns", replicas: 2, available: 2 }];
        // The first node's attach breaks CoreDNS: its update fails after it is Ready again, and the second node is not touched.
        let breaks = 1;
        ctx.emu.onCommand(/# test attach/, (cmd) => {
            w.attached.set(cmd.instanceId, cmd.parameters.labels ?? "");
            c.addNode(cmd.instanceId, { pool: "existing" });
            if (breaks-- > 0) c.system.deployments = [{ name: "kube-system/coredns", replicas: 2, available: 0 }];
            return { output: "joined\n" };
        });
        const bBefore = { ...nodeOf(b)! };
        await assert.rejects(w.up());
        assert.deepStrictEqual({ ...nodeOf(b)! }, bBefore, "the next node untouched");
        assert.strictEqual(w.states.get(b)!.joinedSpec, OLD);
        assert.deepStrictEqual([w.states.get(a)!.joinedSpec, w.states.get(a)!.awaitingReady], [NEW, true], "the state records the new spec, not yet validated");
        // Once the cluster is valid again, the next `pulumi up` validates the node and goes on; it does not remove it again.
        c.system.deployments = [{ name: "kube-system/coredns", replicas: 2, available: 2 }];
        const resets = c.log.filter((l) => l === `${a}: reset`).length;
        await w.up();
        assert.strictEqual(c.log.filter((l) => l === `${a}: reset`).length, resets, `${a} not reset again`);
        assert.ok([a, b].every((id) => w.states.get(id)!.joinedSpec === NEW && !w.states.get(id)!.awaitingReady));
    });

    it("a drain a PodDisruptionBudget blocks pauses the rollout with the budget named, the next node untouched; the next pulumi up finishes", async () => {
        const w = await existingWorld(ctx.emu, 2);
        c = w.c;
        const [a, b] = w.ids;
        c.failDrains = 1;
        const bBefore = { ...nodeOf(b)! };
        await assert.rejects(w.up());
        assert.ok(nodeOf(a)?.unschedulable, `${a} cordoned, its drain paused`);
        assert.strictEqual(w.states.get(a)!.joinedSpec, "removed", `the state records ${a} on its way out`);
        assert.ok(!w.attached.has(b), "the next node not attached");
        assert.deepStrictEqual({ ...nodeOf(b)! }, bBefore, "the next node untouched");
        await w.up();
        assert.ok([a, b].every((id) => w.attached.get(id) === "role=new" && w.states.get(id)!.joinedSpec === NEW));
        assert.deepStrictEqual(w.broken, []);
    });
});

describe("existing nodes: a replacement that failed after it removed or attached the node (emulator)", () => {
    const ctx = useEmulator();
    let c: FakeCluster;
    afterEach(() => assert.deepStrictEqual(c?.violations ?? [], []));
    const nodeOf = (id: string) => [...c.nodes.values()].find((x) => x.instanceId === id);

    const undo = {
        "its spec put back": (w: Awaited<ReturnType<typeof existingWorld>>) => (id: string) => w.inputs(id, { labels: "role=old", spec: OLD }),
        "its rollout set to report": (w: Awaited<ReturnType<typeof existingWorld>>) => (id: string) => w.inputs(id, { rollout: "report" }),
    };
    for (const [how, news] of Object.entries(undo)) it(`a node removed whose attach then failed is attached again by the next pulumi up, with ${how}`, async () => {
        const w = await existingWorld(ctx.emu, 1);
        c = w.c;
        const [a] = w.ids;
        let fail = true;
        ctx.emu.onCommand(/# test attach/, (cmd) => {
            if (fail) return { exitCode: 1, output: "attach failed\n" };
            w.attached.set(cmd.instanceId, cmd.parameters.labels ?? "");
            if (!nodeOf(cmd.instanceId)) c.addNode(cmd.instanceId, { pool: "existing", pods: ["DaemonSet"] });
            return { output: "joined\n" };
        });
        await assert.rejects(w.up());
        assert.strictEqual(nodeOf(a), undefined, "removed: no Node");
        assert.strictEqual(w.states.get(a)!.joinedSpec, "removed");
        fail = false;
        await w.up(news(w));
        assert.ok(nodeOf(a)?.ready && !nodeOf(a)!.unschedulable, `${a} is a Ready, schedulable Node again`);
        assert.strictEqual(w.attached.get(a), news(w)(a).labels, "attached again, with the labels asked for now");
        assert.strictEqual(w.states.get(a)!.joinedSpec, news(w)(a).spec, "recorded as joined with the spec asked for now");
        // And stays: the pulumi up after does nothing to it.
        const log = c.log.length;
        await w.up(news(w));
        assert.deepStrictEqual(c.log.slice(log).filter((l) => /drain|reset/.test(l)), []);
    });

    it("mode auto: a node attached again whose Ready wait timed out is not re-imaged by the next pulumi up: it is waited for and validated", async () => {
        const w = await existingWorld(ctx.emu, 1, "auto");
        c = w.c;
        const [a] = w.ids;
        const boot = ctx.emu.state.onUserDataRun!;
        let boots = 0;
        ctx.emu.state.onUserDataRun = (inst) => {
            boot(inst);
            const node = nodeOf(inst.instanceId);
            if (node && boots++ === 0) node.ready = false; // the kubelet not Ready yet after the first boot
        };
        const slow = (id: string) => w.inputs(id, { readyTimeoutSeconds: 1 });
        await assert.rejects(w.up(slow));
        assert.strictEqual(w.states.get(a)!.awaitingReady, true);
        const disks = ctx.emu.callsOf("ReplaceSystemDisk").length;
        const resets = c.log.filter((l) => l === `${a}: reset`).length;
        assert.strictEqual(disks, 1);
        nodeOf(a)!.ready = true;
        await w.up(slow);
        assert.strictEqual(ctx.emu.callsOf("ReplaceSystemDisk").length, disks, "its system disk not replaced again");
        assert.strictEqual(ctx.emu.callsOf("StopInstance").length, 1, "not stopped again");
        assert.strictEqual(c.log.filter((l) => l === `${a}: reset`).length, resets, "not reset again");
        assert.ok(nodeOf(a)?.ready && !nodeOf(a)!.unschedulable);
        assert.strictEqual(w.states.get(a)!.joinedSpec, NEW);
        assert.ok(!w.states.get(a)!.awaitingReady);
    });
});

describe("existing nodes: a replacement resumed from what the cluster shows (emulator)", () => {
    const ctx = useEmulator();
    let c: FakeCluster;
    afterEach(() => assert.deepStrictEqual(c?.violations ?? [], []));
    const nodeOf = (id: string) => [...c.nodes.values()].find((x) => x.instanceId === id);

    for (const mode of ["manual", "auto"] as const) it(`mode ${mode}: a node attached again whose Node never registered is attached again by the next pulumi up, not waited for forever`, async () => {
        const w = await existingWorld(ctx.emu, 1, mode);
        c = w.c;
        const [a] = w.ids;
        // The first attach after the removal reports success but no Node registers (a kubelet that never came up, a transient failure at boot).
        let lost = true;
        const boot = ctx.emu.state.onUserDataRun!;
        ctx.emu.state.onUserDataRun = (inst) => { if (!lost) boot(inst); };
        ctx.emu.onCommand(/# test attach/, (cmd) => {
            if (lost) return { output: "joined\n" };
            w.attached.set(cmd.instanceId, cmd.parameters.labels ?? "");
            if (!nodeOf(cmd.instanceId)) c.addNode(cmd.instanceId, { pool: "existing", pods: ["DaemonSet"] });
            return { output: "joined\n" };
        });
        const slow = (id: string) => w.inputs(id, { readyTimeoutSeconds: 1 });
        await assert.rejects(w.up(slow));
        assert.strictEqual(nodeOf(a), undefined);
        assert.strictEqual(w.states.get(a)!.awaitingReady, true, "the state records it attached again");
        lost = false;
        await w.up(slow);
        assert.ok(nodeOf(a)?.ready && !nodeOf(a)!.unschedulable, `${a} is a Ready, schedulable Node`);
        assert.strictEqual(w.attached.get(a), "role=new");
        assert.strictEqual(w.states.get(a)!.joinedSpec, NEW);
        assert.ok(!w.states.get(a)!.awaitingReady);
        if (mode === "auto") assert.strictEqual(ctx.emu.callsOf("ReplaceSystemDisk").length, 2, "re-imaged again: only a new first boot runs the attach script");
    });

    it("a node attached again without a Node, whose spec then changed with rollout: report, records the spec it attached with the second time", async () => {
        const w = await existingWorld(ctx.emu, 1);
        c = w.c;
        const [a] = w.ids;
        let lost = true;
        ctx.emu.onCommand(/# test attach/, (cmd) => {
            if (lost) return { output: "joined\n" };
            w.attached.set(cmd.instanceId, cmd.parameters.labels ?? "");
            if (!nodeOf(cmd.instanceId)) c.addNode(cmd.instanceId, { pool: "existing", pods: ["DaemonSet"] });
            return { output: "joined\n" };
        });
        await assert.rejects(w.up((id) => w.inputs(id, { readyTimeoutSeconds: 1 })));
        assert.deepStrictEqual([nodeOf(a), w.states.get(a)!.awaitingReady], [undefined, true]);
        lost = false;
        const OTHER = "000000000000other";
        await w.up((id) => w.inputs(id, { readyTimeoutSeconds: 1, labels: "role=other", spec: OTHER, rollout: "report" }));
        assert.strictEqual(w.attached.get(a), "role=other", "attached again with the spec asked for now");
        assert.strictEqual(w.states.get(a)!.joinedSpec, OTHER, "the state records what it attached with, so it is not outdated");
    });

    it("a removal that fails before it changed the node records nothing removed: with the spec put back the node stays as it was", async () => {
        const w = await existingWorld(ctx.emu, 1);
        c = w.c;
        const [a] = w.ids;
        const before = { ...nodeOf(a)! };
        // Every DescribeInstances after the rollout's own is refused: the removal core's first read fails, before its drain.
        let n = 0;
        ctx.emu.inject("DescribeInstances", { status: 400, code: "Forbidden.Injected", message: "refused by the test", times: 1000, when: () => n++ >= 1 });
        await assert.rejects(w.up());
        assert.strictEqual(w.states.get(a)!.joinedSpec, OLD, "not recorded as removed");
        assert.ok(nodeOf(a)?.ready && !nodeOf(a)!.unschedulable && nodeOf(a)!.createdAt === before.createdAt, "the Node as it was");
        n = -1_000_000;
        await w.up((id) => w.inputs(id, { labels: "role=old", spec: OLD }));
        assert.ok(nodeOf(a)?.ready && !nodeOf(a)!.unschedulable && nodeOf(a)!.createdAt === before.createdAt, "the rollback kept: the Node as it was, never drained");
        assert.deepStrictEqual(nodeOf(a)!.pods, before.pods);
        assert.strictEqual(w.states.get(a)!.joinedSpec, OLD);
        assert.ok(!w.attached.has(a));
    });

    it("after a run killed mid-replacement (nothing recorded), pulumi up --refresh finds the node out and attaches it again though its spec was put back", async () => {
        const w = await existingWorld(ctx.emu, 2);
        c = w.c;
        const [a, b] = w.ids;
        // The run is killed after a's removal, before its attach: the engine stores nothing, the state still says joined with OLD.
        ctx.emu.onCommand(/# test attach/, () => ({ exitCode: 1, output: "killed\n" }));
        await assert.rejects(updateMembership(w.states.get(a)!, w.inputs(a), steppedClock()));
        assert.strictEqual(nodeOf(a), undefined);
        assert.strictEqual(w.states.get(a)!.joinedSpec, OLD);
        ctx.emu.onCommand(/# test attach/, (cmd) => {
            w.attached.set(cmd.instanceId, cmd.parameters.labels ?? "");
            if (!nodeOf(cmd.instanceId)) c.addNode(cmd.instanceId, { pool: "existing", pods: ["DaemonSet"] });
            return { output: "joined\n" };
        });
        const putBack = (id: string) => w.inputs(id, { labels: "role=old", spec: OLD });
        // The refresh: a's state says it is out; b's (a Node in the cluster) is as it was.
        const bState = w.states.get(b)!;
        for (const id of w.ids) w.states.set(id, await engineRead(nodeMembershipProvider, `${id}/membership`, w.states.get(id)!));
        assert.strictEqual(w.states.get(a)!.joinedSpec, "removed");
        assert.deepStrictEqual(w.states.get(b), bState, "a refresh of a membership whose Node is in the cluster changes nothing");
        await w.up(putBack);
        assert.ok(nodeOf(a)?.ready && !nodeOf(a)!.unschedulable, `${a} is a Ready, schedulable Node again`);
        assert.strictEqual(w.attached.get(a), "role=old");
        assert.strictEqual(w.states.get(a)!.joinedSpec, OLD);
        assert.ok(!w.attached.has(b));
    });

    it("pulumi up --refresh keeps a node whose Node is there, even cordoned and marked by a removal (its own kubelet can write both): only a missing Node is recorded out", async () => {
        const w = await existingWorld(ctx.emu, 1);
        c = w.c;
        const [a] = w.ids;
        const joined = w.states.get(a)!.joinedSpec;
        // A healthy node whose kubelet cordons and marks its own Node: the refresh must not record it out (the next
        // pulumi up would then reset it and send it join material, whatever its rollout).
        nodeOf(a)!.unschedulable = true;
        nodeOf(a)!.removing = "node-written";
        w.states.set(a, await engineRead(nodeMembershipProvider, `${a}/membership`, w.states.get(a)!));
        assert.strictEqual(w.states.get(a)!.joinedSpec, joined, "the state is kept");
        nodeOf(a)!.unschedulable = false;
        nodeOf(a)!.removing = "";
        // A run killed mid-drain: the Node is there (cordoned, marked), so the refresh keeps it too; the node is not reset.
        c.failDrains = 1;
        await assert.rejects(updateMembership(w.states.get(a)!, w.inputs(a), steppedClock()));
        assert.ok(nodeOf(a)?.unschedulable && nodeOf(a)!.removing);
        w.states.set(a, await engineRead(nodeMembershipProvider, `${a}/membership`, w.states.get(a)!));
        assert.strictEqual(w.states.get(a)!.joinedSpec, joined, "the state is kept: a Node is there");
        await w.up((id) => w.inputs(id, { rollout: "report" }));
        assert.ok(nodeOf(a), `${a} keeps its Node: with rollout report nothing removes it`);
    });

    it("mode auto: pulumi destroy of a node a replacement left stopped after its removal starts the instance again, without the attach script", async () => {
        const w = await existingWorld(ctx.emu, 1, "auto");
        c = w.c;
        const [a] = w.ids;
        ctx.emu.refuseOnce("StartInstance", 0);
        await assert.rejects(w.up());
        const inst = ctx.emu.state.instances.get(a)!;
        assert.deepStrictEqual([inst.status, w.states.get(a)!.joinedSpec], ["Stopped", "removed"]);
        await nodeMembershipProvider.delete!(`${a}/membership`, w.states.get(a)!);
        assert.strictEqual(inst.status, "Running", "the user's instance running again");
        assert.strictEqual(nodeOf(a), undefined, "not attached: its userdata was cleared before the boot");
        assert.ok(!w.attached.has(a));
    });

    it("an attach that fails keeps the node's bootstrap log out of the state: only the Pulumi log shows it", async () => {
        const w = await existingWorld(ctx.emu, 1);
        c = w.c;
        const [a] = w.ids;
        const nodeLog = ["+ kubeadm join 10.0.0.1:6443", "[preflight] node-written line 7f3a9c", "error execution phase kubelet-start"];
        ctx.emu.onCommand(/# test attach/, () => ({ exitCode: 1, output: "attach failed\n" }));
        ctx.emu.onCommand(operation("doctor-bootstrap-log"), () => ({ output: nodeLog.join("\n") + "\n" }));
        let thrown: { reasons?: string[]; properties?: object } = {};
        await assert.rejects(w.up(), (err: { reasons?: string[]; properties?: object }) => { thrown = err; return true; });
        assert.strictEqual(w.states.get(a)!.joinedSpec, "removed", "a partial update: the state records the node out");
        const stored = JSON.stringify([thrown.reasons, thrown.properties, w.states.get(a)]);
        assert.ok(thrown.reasons && thrown.reasons.length > 0 && thrown.reasons.every((r) => r.includes(a)), "the reasons name the instance");
        for (const line of nodeLog) assert.ok(!stored.includes(line), `no line of the node's log in the stored state or reasons: ${line}`);
    });
});

describe("existing nodes replaced in place: a fault at every step (emulator)", () => {
    useEmulatorEnvironment();

    for (const mode of ["manual", "auto"] as const) it(`mode ${mode}: every mutating call refused once in turn, then a re-run: both nodes current, Ready, drained before they left, never two out`, async () => {
        type World = Awaited<ReturnType<typeof existingWorld>> & { emu: Emulator; run: () => Promise<void>; pods: number };
        const { steps, failures } = await faultMatrix(async (): Promise<World> => {
            const emu = await startEmulatorHere();
            const w = await existingWorld(emu, 2, mode);
            return { ...w, emu, run: () => w.up(), pods: w.workloadPods() };
        }, (w, at) => {
            const problems = [...w.broken, ...w.c.violations];
            for (const id of w.ids) {
                const node = [...w.c.nodes.values()].find((x) => x.instanceId === id);
                if (!node?.ready || node.unschedulable) problems.push(`${id} is not a Ready, schedulable Node`);
                if (w.states.get(id)!.joinedSpec !== NEW || w.attached.get(id) !== "role=new") problems.push(`${id} not attached with the new spec`);
            }
            if (w.workloadPods() !== w.pods) problems.push(`${w.pods - w.workloadPods()} workload pod(s) lost (a Node deleted before its drain)`);
            return problems.map((p) => `${at}: ${p}`);
        });
        assert.ok(steps.length >= 6, `a replacement makes mutating calls: ${steps.map(([s]) => s).join(", ")}`);
        if (mode === "auto") assert.ok(["StopInstance", "ReplaceSystemDisk", "StartInstance"].every((a) => steps.some(([s]) => s === a)), "the re-image's calls are refused in turn too");
        assert.deepStrictEqual(failures, []);
    });
});

describe("existing nodes: the order Pulumi works on memberships in (Pulumi mocks)", () => {
    it("memberships without a dependency are worked on at once; one that depends on another only after the other's step returned", async () => {
        const events: string[] = [];
        const recorder = installMocks({
            step: async (type, name) => {
                if (type !== "pulumi-nodejs:dynamic:Resource") return;
                events.push(`start ${name}`);
                await new Promise((resolve) => setTimeout(resolve, 50));
                events.push(`end ${name}`);
            },
        });
        const args = (instanceId: string) => ({ region: REGION, instanceId, mode: "manual" as const, admission: true, attachCommandId: "c-attach", masterInstanceId: "i-master0", commands: {} as NodeCommandIds, spec: NEW });
        const a = new NodeMembership("a", args("i-a"));
        new NodeMembership("b", { ...args("i-b"), rollout: "replace" }, { dependsOn: [a] });
        new NodeMembership("c", args("i-c"));
        await recorder.settle();
        const at = (e: string) => events.indexOf(e);
        assert.ok(at("start c") < at("end a"), `unchained: a and c at once (${events.join(", ")})`);
        assert.ok(at("start b") > at("end a"), `chained: b only after a's step returned (${events.join(", ")})`);
    });
});
