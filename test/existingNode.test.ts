// World: the OpenAPI emulator (testing/emulator); Pulumi mocks (testing/mockRuntime.ts); outputs as the dynamic provider
// server sends them to the engine (testing/partialUpdate.ts).
import * as assert from "assert";
import * as fs from "fs";
import * as path from "path";
import * as zlib from "zlib";
import * as pulumi from "@pulumi/pulumi";
import * as YAML from "yaml";
import { useEmulator } from "../testing/emulator/fixture";
import type { Emulator } from "../testing/emulator";
import { installMocks, type Recorder } from "../testing/mockRuntime";
import { parseClusterConfig } from "../src/config";
import { joinExistingNode, membershipProblems, nodeMembershipProvider, type NodeMembershipInputs } from "../src/providers/nodeMembership";
import { PARAMETER_MARKER, renderAttachCommand, renderAttachNode } from "../src/shell/render";
import type { NodeCommandIds } from "../src/rules";
import { formatProblem, OPERATIONS } from "../src/rules";
import { createCommand, saveNodeCommands } from "../testing/savedCommands";
import { overGrpc } from "../testing/partialUpdate";
import { installNodeChannels } from "./nodeChannel";

const REGION = "cn-hangzhou";
const TOKEN = "k8sjn1.q9w8e7r6t5y4u3i2";
const CA_HASH = `sha256:${"cd".repeat(32)}`;
const JOIN = { region: REGION, kubernetesVersion: "1.34.2", apiEndpoint: "192.168.0.10:6443", poolName: "existing", token: TOKEN, caCertHash: CA_HASH };
/** The userdata of `auto` mode. */
const SCRIPT = renderAttachNode({ ...JOIN, labels: { role: "legacy" }, taints: ["legacy=true:NoSchedule"] });

/**
 * Master 0 answering `kubectl get nodes`: an instance in `joined` appears as a node, NotReady on its
 * first listing and Ready from the second.
 */
function clusterOf(emu: Emulator, joined: Set<string>): { listings: number } {
    const seen = { listings: 0 };
    const listed = new Map<string, number>();
    emu.onCommand(/get nodes/, () => {
        seen.listings++;
        const lines = [...joined].map((id) => {
            listed.set(id, (listed.get(id) ?? 0) + 1);
            return `node-${id}\t${REGION}.${id}\t${listed.get(id)! > 1 ? "True" : "False"}\t\t172.16.1.0/25\texisting\t2026-12-01T10:00:00Z`;
        });
        return { output: zlib.gzipSync(lines.join("\n")).toString("base64") };
    });
    return seen;
}

describe("NodeMembership (emulator)", () => {
    const ctx = useEmulator();
    let commands: NodeCommandIds;
    let attachCommandId: string;
    beforeEach(async () => {
        commands = await saveNodeCommands(REGION);
        attachCommandId = await createCommand(REGION, {
            commandName: "test-attach", script: renderAttachCommand(JOIN), parameters: true,
            timeoutSeconds: OPERATIONS.attach.timeoutSeconds, description: OPERATIONS.attach.description,
        });
    });
    const inputs = (instanceId: string, master: string, extra: Partial<NodeMembershipInputs> = {}): NodeMembershipInputs => ({
        region: REGION, instanceId, mode: "manual", attachCommandId, token: TOKEN, labels: "role=legacy", taints: "legacy=true:NoSchedule", commands, masterInstanceId: master,
        pollSeconds: 0.02, readyTimeoutSeconds: 5, pollIntervalMs: 10, ...extra,
    });

    it("manual: the token sent sealed to the instance's one-use key, then the saved attach command with labels, taints and the channel, then Ready polling on master 0", async () => {
        const { emu } = ctx;
        const master = emu.addInstance().instanceId;
        const node = emu.addInstance().instanceId;
        const joined = new Set<string>();
        const channels = installNodeChannels(emu);
        let ran = "", received = "";
        emu.onCommand(/kubeadm join --config/, (c) => { received = channels.take(c.instanceId, c.script); joined.add(c.instanceId); ran = c.script; return { output: "joined\n" }; });
        const seen = clusterOf(emu, joined);

        const outs = await joinExistingNode(inputs(node, master));
        assert.deepStrictEqual(outs, { nodeName: `node-${node}`, providerId: `${REGION}.${node}` });
        assert.strictEqual(received, TOKEN, "the attach script read the token the node received");
        const invokes = emu.callsOf("InvokeCommand");
        const onNode = invokes.filter((r) => r.params["InstanceId.1"] === node);
        assert.deepStrictEqual(onNode.map((r) => r.params.CommandId), [commands["channel-open"], commands["channel-receive"], attachCommandId]);
        const params = JSON.parse(onNode[2].params.Parameters);
        assert.deepStrictEqual(params, { labels: "role=legacy", taints: "legacy=true:NoSchedule", channel: JSON.parse(onNode[0].params.Parameters).channel });
        assert.match(ran, /^# AK_NODE_LABELS=role=legacy$/m, "Cloud Assistant filled the labels into the saved script's parameter lines");
        assert.ok(emu.calls.every((c) => !c.body.includes(TOKEN.slice(7)) && !c.url.includes(TOKEN.slice(7))), "no request holds the token");
        assert.ok([...emu.state.invocations.values()].every((inv) => !JSON.stringify(inv).includes(TOKEN.slice(7))), "no record holds the token");
        assert.strictEqual(invokes.indexOf(onNode[0]), 0, "the channel is opened first");
        assert.ok(invokes.slice(3).every((r) => r.params["InstanceId.1"] === master && r.params.CommandId === commands["list-nodes"]), "then only listings on master 0");
        assert.strictEqual(seen.listings, 2, "NotReady, then Ready");
        assert.deepStrictEqual(emu.mutatingCalls().map((c) => c.action).filter((a) => a !== "InvokeCommand" && a !== "CreateCommand"), [], "manual changes nothing else");
        assert.strictEqual(emu.callsOf("RunCommand").length, 0, "no one-off script");
    });

    it("manual: a failing attach script names the instance, the log and the fix, without the token or CA pin", async () => {
        const { emu } = ctx;
        const master = emu.addInstance().instanceId;
        const node = emu.addInstance().instanceId;
        installNodeChannels(emu);
        emu.onCommand(/kubeadm join --config/, { exitCode: 1, output: `[ERROR] discovery with token ${TOKEN} and ${CA_HASH} failed: connection refused\n` });
        // The node's bootstrap log, as doctor-bootstrap-log prints it: token secrets blanked on the node.
        emu.onCommand(/alicloud-kubeadm operation: doctor-bootstrap-log/, { output: `==> /var/log/alicloud-kubeadm/attach-node.log\n[ERROR] discovery with token ${TOKEN.slice(0, 6)}.<redacted> failed: connection refused\n` });
        await assert.rejects(joinExistingNode(inputs(node, master)), (err: Error) => {
            assert.match(err.message, new RegExp(`attaching ${node} failed`));
            assert.match(err.message, /connection refused/);
            assert.match(err.message, /attach-node\.log/);
            assert.ok(!err.message.includes(TOKEN) && !err.message.includes(TOKEN.slice(7)), err.message);
            assert.ok(!err.message.includes(CA_HASH.slice(7)), err.message);
            return true;
        });
    });

    it("manual: labels or taints that could break out of the script's quoting are refused before any call", async () => {
        const { emu } = ctx;
        const before = emu.calls.length;
        await assert.rejects(joinExistingNode(inputs("i-emubad", "i-master", { labels: "role=x'; rm -rf /; '" })), /labels: parameter labels must be node labels/);
        await assert.rejects(joinExistingNode(inputs("i-emubad", "i-master", { taints: "a=$(id):NoSchedule" })), /taints: parameter taints must be node taints/);
        assert.strictEqual(emu.calls.length, before);
    });

    it("auto: ModifyInstanceAttribute → StopInstance → ReplaceSystemDisk → StartInstance, in that order, then Ready", async () => {
        const { emu } = ctx;
        emu.state.transitionReads = 1;
        const master = emu.addInstance().instanceId;
        const node = emu.addInstance({ imageId: "old-image", keyPairName: "ops-key" }).instanceId;
        const joined = new Set<string>();
        // cloud-init runs the userdata at first boot on the new system disk: the script joins.
        emu.state.onUserDataRun = (i) => {
            if (Buffer.from(i.userData, "base64").toString("utf8") === SCRIPT) joined.add(i.instanceId);
        };
        clusterOf(emu, joined);
        const progress: string[] = [];
        const outs = await joinExistingNode(inputs(node, master, { mode: "auto", replaceSystemDisk: true, imageId: "ubuntu_24_04_x64_20G_alibase_20260101.vhd", userData: SCRIPT }), (m) => progress.push(m));

        assert.deepStrictEqual(outs, { nodeName: `node-${node}`, providerId: `${REGION}.${node}` });
        const ecs = emu.mutatingCalls().filter((c) => !["InvokeCommand", "CreateCommand"].includes(c.action));
        assert.deepStrictEqual(ecs.map((c) => c.action), ["ModifyInstanceAttribute", "StopInstance", "ReplaceSystemDisk", "StartInstance"]);
        assert.ok(ecs.every((c) => c.params.InstanceId === node && c.status === 200));
        assert.strictEqual(Buffer.from(ecs[0].params.UserData, "base64").toString("utf8"), SCRIPT);
        assert.strictEqual(ecs[1].params.StoppedMode, "KeepCharging");
        assert.strictEqual(ecs[2].params.ImageId, "ubuntu_24_04_x64_20G_alibase_20260101.vhd");
        const inst = emu.instances.get(node)!;
        assert.deepStrictEqual([inst.status, inst.imageId, inst.userDataRuns], ["Running", "ubuntu_24_04_x64_20G_alibase_20260101.vhd", 1]);
        assert.ok(progress.some((m) => m.includes("waiting for Stopped (now Stopping)")), progress.join("\n"));
        assert.ok(progress.some((m) => m.includes("waiting for Running (now Starting)")), progress.join("\n"));
        // The new system disk keeps the instance's key pair, not the image's preset password.
        assert.strictEqual(ecs[2].params.KeyPairName, "ops-key");
        assert.strictEqual(ecs[2].params.PasswordInherit, undefined);
        assert.deepStrictEqual([inst.keyPairName, inst.passwordSource], ["ops-key", "instance"]);
    });

    it("auto on an instance that logs in by password only is refused before anything changes", async () => {
        const { emu } = ctx;
        const master = emu.addInstance().instanceId;
        const node = emu.addInstance({ imageId: "old-image", keyPairName: "" }).instanceId;
        clusterOf(emu, new Set());
        await assert.rejects(joinExistingNode(inputs(node, master, { mode: "auto", replaceSystemDisk: true, imageId: "new-image", userData: SCRIPT })),
            /logs in by password only.*\n  fix: bind a key pair .* or use mode: manual; nothing was changed/s);
        assert.deepStrictEqual(emu.mutatingCalls().filter((c) => !["InvokeCommand", "CreateCommand"].includes(c.action)), []);
        assert.deepStrictEqual([emu.instances.get(node)!.status, emu.instances.get(node)!.imageId], ["Running", "old-image"]);
    });

    for (const start of ["Stopped", "Stopping"] as const) {
        it(`auto on a ${start} instance sends no StopInstance${start === "Stopping" ? " (it waits the stop out)" : ""}`, async () => {
            const { emu } = ctx;
            emu.state.transitionReads = 1;
            const master = emu.addInstance().instanceId;
            const node = emu.addInstance({ imageId: "old-image", keyPairName: "ops-key", status: start }).instanceId;
            // Stopping: the stop someone else started ends after the membership has seen it once.
            if (start === "Stopping") emu.instances.get(node)!.pendingTransition = { to: "Stopped", reads: 1, done: () => undefined };
            const joined = new Set<string>();
            emu.state.onUserDataRun = (i) => { joined.add(i.instanceId); };
            clusterOf(emu, joined);
            await joinExistingNode(inputs(node, master, { mode: "auto", replaceSystemDisk: true, imageId: "new-image", userData: SCRIPT }));
            const ecs = emu.mutatingCalls().filter((c) => !["InvokeCommand", "CreateCommand"].includes(c.action)).map((c) => c.action);
            assert.deepStrictEqual(ecs, ["ModifyInstanceAttribute", "ReplaceSystemDisk", "StartInstance"]);
            assert.strictEqual(emu.instances.get(node)!.status, "Running");
        });
    }

    it("auto without replaceSystemDisk: true makes no call at all and says why", async () => {
        const { emu } = ctx;
        const node = emu.addInstance().instanceId;
        const refused = inputs(node, "i-master", { mode: "auto", imageId: "img", userData: SCRIPT });
        const before = emu.calls.length;
        await assert.rejects(joinExistingNode(refused), /replaceSystemDisk: mode auto replaces the system disk .* set replaceSystemDisk: true/);
        await assert.rejects(nodeMembershipProvider.create!(refused), /replaceSystemDisk/);
        const check = await nodeMembershipProvider.check!({}, refused);
        assert.strictEqual(check.failures![0].property, "replaceSystemDisk");
        assert.strictEqual(emu.calls.length, before);
        assert.strictEqual(emu.instances.get(node)!.status, "Running");
    });

    it("auto on an instance that already is a Ready node leaves its disk alone", async () => {
        const { emu } = ctx;
        const master = emu.addInstance().instanceId;
        const node = emu.addInstance().instanceId;
        emu.onCommand(/get nodes/, () => ({ output: zlib.gzipSync(`node-a\t${REGION}.${node}\tTrue\t\t\texisting\t2026-12-01T10:00:00Z`).toString("base64") }));
        const outs = await joinExistingNode(inputs(node, master, { mode: "auto", replaceSystemDisk: true, imageId: "img", userData: SCRIPT }));
        assert.strictEqual(outs.nodeName, "node-a");
        assert.deepStrictEqual(emu.mutatingCalls().map((c) => c.action).filter((a) => a !== "CreateCommand"), ["InvokeCommand"], "only the node listing");
    });

    it("ssh: the script ran elsewhere (remote.Command); the membership only waits for Ready", async () => {
        const { emu } = ctx;
        const master = emu.addInstance().instanceId;
        const node = emu.addInstance().instanceId;
        clusterOf(emu, new Set([node]));
        await joinExistingNode(inputs(node, master, { mode: "ssh" }));
        assert.ok(emu.callsOf("InvokeCommand").every((c) => c.params["InstanceId.1"] === master));
    });

    it("a membership without a spec (built outside an ExistingNode) is created and updated with outputs the engine can carry", async () => {
        const { emu } = ctx;
        const master = emu.addInstance().instanceId;
        const node = emu.addInstance().instanceId;
        clusterOf(emu, new Set([node]));
        const created = overGrpc<Record<string, unknown>>((await nodeMembershipProvider.create!(inputs(node, master, { mode: "ssh" }))).outs);
        assert.strictEqual(created.nodeName, `node-${node}`);
        const updated = overGrpc<Record<string, unknown>>((await nodeMembershipProvider.update!("x", created, inputs(node, master, { mode: "ssh", labels: "role=other" }))).outs);
        assert.deepStrictEqual([updated.nodeName, updated.labels, "joinedSpec" in updated], [`node-${node}`, "role=other", false]);
    });

    it("gives up after the bounded wait, pointing at the attach log", async () => {
        const { emu } = ctx;
        const master = emu.addInstance().instanceId;
        const node = emu.addInstance().instanceId;
        clusterOf(emu, new Set());
        await assert.rejects(joinExistingNode(inputs(node, master, { mode: "ssh", readyTimeoutSeconds: 0.1 })),
            new RegExp(`${node} did not become a Ready node .* no node registered yet.*attach-node\\.log`, "s"));
    });

    it("membershipProblems lists every problem; a new instance or mode replaces (leave first), a new script does not re-join", async () => {
        const p = membershipProblems({ region: REGION, instanceId: "i-x", mode: "auto", userData: SCRIPT, masterInstanceId: "i-m", commands });
        assert.strictEqual(p.length, 2, p.map(formatProblem).join("\n"));
        assert.deepStrictEqual(membershipProblems({ ...inputs("i-x", "i-m"), attachCommandId: undefined }).map((x) => x.path), ["attachCommandId"]);
        assert.deepStrictEqual(membershipProblems({ ...inputs("i-x", "i-m"), token: undefined }).map((x) => x.path), ["token"]);
        const olds = { ...inputs("i-x", "i-m"), nodeName: "n", providerId: `${REGION}.i-x` };
        const d = await nodeMembershipProvider.diff!("x", olds, { ...inputs("i-x", "i-m"), mode: "auto", replaceSystemDisk: true, imageId: "img" });
        assert.deepStrictEqual([d.replaces, d.deleteBeforeReplace], [["mode"], true]);
        for (const changed of [{ attachCommandId: "c-new" }, { commands: { ...commands, drain: "c-new" } }, { labels: "role=new" }]) {
            const rotated = await nodeMembershipProvider.diff!("x", olds, { ...inputs("i-x", "i-m"), ...changed });
            assert.deepStrictEqual([rotated.changes, rotated.replaces], [true, []], `${JSON.stringify(changed)}: an update, never a re-join`);
        }
        const t = await nodeMembershipProvider.diff!("x", olds, { ...inputs("i-x", "i-m"), readyTimeoutSeconds: 99 });
        assert.deepStrictEqual([t.changes, t.replaces], [true, []]);
    });
});

describe("ExistingNode (mock graph)", () => {
    let recorder: Recorder;
    let mod: typeof import("../src/components/existingNode");
    let config: ReturnType<typeof parseClusterConfig>;

    before(async () => {
        recorder = installMocks({ stack: "existing-node-test" });
        mod = await import("../src/components/existingNode");
        const doc = YAML.parse(fs.readFileSync(path.join(__dirname, "..", "examples", "Pulumi.existing-nodes.yaml"), "utf8"));
        config = parseClusterConfig(doc.config["alicloud-kubeadm:cluster"], doc.config["alicloud:region"]);
    });
    beforeEach(() => recorder.resources.splice(0));

    const common = () => ({
        config, apiEndpoint: "192.168.0.10:6443", token: pulumi.secret(TOKEN), caCertHash: pulumi.secret(CA_HASH),
        masterInstanceId: "i-master0", routeTableId: "vtb-dev", imageId: "img", commands: { "list-nodes": "c-list" } as unknown as NodeCommandIds, attachCommandId: "c-attach",
    });

    it("the example's manual node: one NodeMembership invoking the saved attach command with its labels and taints; nothing secret in its inputs", async () => {
        const [node] = config.existingNodes;
        new mod.ExistingNode("dev-node-0", { ...common(), node: { ...node, labels: { role: "legacy" } } });
        await recorder.settle();
        const [m] = recorder.ofType("pulumi-nodejs:dynamic:Resource");
        assert.strictEqual(m.parent, "dev-node-0");
        assert.deepStrictEqual([m.inputs.mode, m.inputs.instanceId, m.inputs.masterInstanceId, m.inputs.imageId, m.inputs.attachCommandId, m.inputs.labels],
            ["manual", "i-bp1exampleexample01", "i-master0", undefined, "c-attach", "role=legacy"]);
        assert.strictEqual(m.rawInputs.userData, undefined, "manual mode sends no script");
        const visible = JSON.stringify(recorder.resources.map((r) => r.inputs));
        assert.ok(!visible.includes(TOKEN.slice(7)) && !visible.includes(CA_HASH.slice(7)));
        assert.strictEqual(recorder.ofType("command:remote:Command").length, 0);
    });

    it("the cluster's attach command: the attach script without the token, labels/taints/channel as parameters, within 18 KB", async () => {
        mod.createAttachCommand("dev-attach", { config, apiEndpoint: "192.168.0.10:6443", caCertHash: pulumi.secret(CA_HASH) }, {});
        await recorder.settle();
        const [cmd] = recorder.ofType("alicloud:ecs/command:Command");
        assert.deepStrictEqual([cmd.inputs.name, cmd.inputs.type, cmd.inputs.enableParameter], ["example-attach", "RunShellScript", true]);
        assert.ok(cmd.secretInputs.includes("commandContent"));
        const script = Buffer.from(cmd.rawInputs.commandContent as string, "base64").toString("utf8");
        assert.ok(script.endsWith(`\nexit\n${PARAMETER_MARKER}\n# AK_NODE_LABELS={{labels}}\n# AK_NODE_TAINTS={{taints}}\n# AK_CHANNEL={{channel}}\n`),
            "labels, taints and the channel are the last lines, after the final exit");
        assert.strictEqual(script.match(/\{\{/g)?.length, 3, "no other placeholder anywhere");
        assert.ok(!script.includes("AK_BOOTSTRAP_TOKEN=") && script.includes(CA_HASH), "no token in the command");
        assert.ok((cmd.rawInputs.commandContent as string).length <= 18 * 1024);
    });

    it("with a connection: the script goes over SSH on stdin (secret, logging off), the membership only waits", async () => {
        const [node] = config.existingNodes;
        new mod.ExistingNode("dev-node-ssh", { ...common(), node, connection: { host: "192.168.1.20", user: "root", privateKey: pulumi.secret("KEY") } });
        await recorder.settle();
        const [cmd] = recorder.ofType("command:remote:Command");
        assert.strictEqual(cmd.inputs.create, mod.SSH_ATTACH_COMMAND);
        assert.strictEqual(cmd.inputs.logging, "none");
        assert.ok(cmd.secretInputs.includes("stdin"));
        assert.match(cmd.rawInputs.stdin as string, /kubeadm join --config/);
        const [m] = recorder.ofType("pulumi-nodejs:dynamic:Resource");
        assert.strictEqual(m.inputs.mode, "ssh");
    });

    it("mode auto without replaceSystemDisk is refused before anything is registered", () => {
        const node = { ...config.existingNodes[0], mode: "auto" as const, replaceSystemDisk: false };
        assert.throws(() => new mod.ExistingNode("dev-node-auto", { ...common(), node }), /replaceSystemDisk: true to confirm/);
        assert.strictEqual(recorder.ofType("pulumi-nodejs:dynamic:Resource").length, 0);
    });
});
