// Existing nodes replaced in place when their spec changed (NodeMembership's update with `spec` and `rollout`), in the
// emulator world: ECS and Cloud Assistant are the emulator; the cluster behind the masters is testing/fakeCluster.ts
// (drains move pods, a PodDisruptionBudget is a drain that fails, `system` is what the validation reads). The saved
// attach command is a stand-in the test answers: it registers the instance's Node again, as attach_node.sh would.
// `pulumi up` is the memberships' diff and update in the order the Cluster's dependsOn chain gives them (each update
// after the one before returned; a failed one stops the ones after it). Invariants are read from state at every drain,
// every attach and at the end. That order itself is checked last, under Pulumi mocks (testing/mockRuntime.ts) whose
// engine step of each resource takes time before its registration is answered.
import * as assert from "assert";
import { startEmulatorHere, useEmulator, useEmulatorEnvironment } from "../testing/emulator/fixture";
import type { Emulator } from "../testing/emulator";
import { fakeCluster, type FakeCluster } from "../testing/fakeCluster";
import { faultMatrix } from "../testing/faultMatrix";
import { createCommand } from "../testing/savedCommands";
import { steppedClock } from "../testing/steppedClock";
import type { NodeCommandIds } from "../src/rules";
import { installMocks } from "../testing/mockRuntime";
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
            if (diff.changes) states.set(id, await updateMembership(olds, news(id), steppedClock()));
        }
    };
    const workloadPods = () => [...c.nodes.values()].reduce((k, x) => k + x.pods.filter((p) => p === "ReplicaSet").length, 0);
    return { c, ids, attached, broken, states, inputs, up, workloadPods };
}

describe("existing nodes replaced in place (emulator)", () => {
    const ctx = useEmulator();
    let c: FakeCluster;
    afterEach(() => assert.deepStrictEqual(c?.violations ?? [], []));

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
        assert.ok(!c.log.some((l) => /drain|reset/.test(l)), "nothing removed");
        c.system.deployments = [{ name: "kube-system/coredns", replicas: 2, available: 2 }];
        // The first node's attach breaks CoreDNS: its update fails after it is Ready again, and the second node is not touched.
        ctx.emu.onCommand(/# test attach/, (cmd) => {
            w.attached.set(cmd.instanceId, cmd.parameters.labels ?? "");
            c.addNode(cmd.instanceId, { pool: "existing" });
            c.system.deployments = [{ name: "kube-system/coredns", replicas: 2, available: 0 }];
            return { output: "joined\n" };
        });
        await assert.rejects(w.up(), new RegExp(`failed validation after ${a} was replaced`));
        assert.ok(!c.log.some((l) => l.includes(`node-${b}`) || l.startsWith(`${b}:`)), "the next node untouched");
        assert.strictEqual(w.states.get(a)!.joinedSpec, OLD, "the state records the new spec only once the cluster is valid");
    });

    it("a drain a PodDisruptionBudget blocks pauses the rollout with the budget named, the next node untouched; the next pulumi up finishes", async () => {
        const w = await existingWorld(ctx.emu, 2);
        c = w.c;
        const [a, b] = w.ids;
        c.failDrains = 1;
        await assert.rejects(w.up(), /disruption budget/);
        assert.ok(!w.attached.has(b) && !c.log.some((l) => l.includes(`node-${b}`)), "the next node untouched");
        await w.up();
        assert.ok([a, b].every((id) => w.attached.get(id) === "role=new" && w.states.get(id)!.joinedSpec === NEW));
        assert.deepStrictEqual(w.broken, []);
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
