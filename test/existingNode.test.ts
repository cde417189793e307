import * as assert from "assert";
import * as fs from "fs";
import * as path from "path";
import * as zlib from "zlib";
import * as pulumi from "@pulumi/pulumi";
import * as YAML from "yaml";
import { useEmulator } from "./emulator/fixture";
import type { Emulator } from "./emulator";
import { installMocks, type Recorder } from "./mockRuntime";
import { parseClusterConfig } from "../src/config";
import { joinExistingNode, membershipProblems, nodeMembershipProvider, type NodeMembershipInputs } from "../src/providers/nodeMembership";
import { renderAttachNode } from "../src/shell/render";

const REGION = "cn-hangzhou";
const TOKEN = "k8sjn1.q9w8e7r6t5y4u3i2";
const CA_HASH = `sha256:${"cd".repeat(32)}`;
const SCRIPT = renderAttachNode({
    region: REGION, kubernetesVersion: "1.34.2", apiEndpoint: "192.168.0.10:6443", poolName: "existing",
    labels: { role: "legacy" }, taints: ["legacy=true:NoSchedule"], token: TOKEN, caCertHash: CA_HASH,
});

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
    const inputs = (instanceId: string, master: string, extra: Partial<NodeMembershipInputs> = {}): NodeMembershipInputs => ({
        region: REGION, instanceId, mode: "manual", userData: SCRIPT, masterInstanceId: master,
        pollSeconds: 0.02, readyTimeoutSeconds: 5, pollIntervalMs: 10, ...extra,
    });

    it("manual: one RunCommand on the instance whose decoded content is the attach script, then Ready polling on master 0", async () => {
        const { emu } = ctx;
        const master = emu.addInstance().instanceId;
        const node = emu.addInstance().instanceId;
        const joined = new Set<string>();
        emu.onCommand(/kubeadm join --config/, (c) => { joined.add(c.instanceId); return { output: "joined\n" }; });
        const seen = clusterOf(emu, joined);

        const outs = await joinExistingNode(inputs(node, master));
        assert.deepStrictEqual(outs, { nodeName: `node-${node}`, providerId: `${REGION}.${node}` });
        const runs = emu.callsOf("RunCommand");
        const onNode = runs.filter((r) => r.params["InstanceId.1"] === node);
        assert.strictEqual(onNode.length, 1);
        assert.strictEqual(onNode[0].params.ContentEncoding, "Base64");
        assert.strictEqual(Buffer.from(onNode[0].params.CommandContent, "base64").toString("utf8"), SCRIPT);
        assert.strictEqual(runs.indexOf(onNode[0]), 0, "the attach script runs first");
        assert.ok(runs.slice(1).every((r) => r.params["InstanceId.1"] === master), "then only listings on master 0");
        assert.strictEqual(seen.listings, 2, "NotReady, then Ready");
        assert.deepStrictEqual(emu.mutatingCalls().map((c) => c.action).filter((a) => a !== "RunCommand"), [], "manual changes nothing else");
    });

    it("manual: a failing attach script names the instance, the log and the fix, without the token or CA pin", async () => {
        const { emu } = ctx;
        const master = emu.addInstance().instanceId;
        const node = emu.addInstance().instanceId;
        emu.onCommand(/kubeadm join --config/, { exitCode: 1, output: `[ERROR] discovery with token ${TOKEN} and ${CA_HASH} failed: connection refused\n` });
        await assert.rejects(joinExistingNode(inputs(node, master)), (err: Error) => {
            assert.match(err.message, new RegExp(`attaching ${node} failed`));
            assert.match(err.message, /connection refused/);
            assert.match(err.message, /attach-node\.log/);
            assert.ok(!err.message.includes(TOKEN) && !err.message.includes(TOKEN.slice(7)), err.message);
            assert.ok(!err.message.includes(CA_HASH.slice(7)), err.message);
            return true;
        });
    });

    it("manual: a script above Cloud Assistant's 24 KB (after Base64) is refused before any call", async () => {
        const { emu } = ctx;
        const big = `${SCRIPT}\n# ${"x".repeat(19 * 1024)}\n`;
        await assert.rejects(joinExistingNode(inputs("i-emubig", "i-master", { userData: big })), /after Base64, above Cloud Assistant's 24576.*mode auto.*connection/s);
        assert.strictEqual(emu.calls.length, 0);
    });

    it("auto: ModifyInstanceAttribute → StopInstance → ReplaceSystemDisk → StartInstance, in that order, then Ready", async () => {
        const { emu } = ctx;
        emu.state.transitionMs = 60;
        const master = emu.addInstance().instanceId;
        const node = emu.addInstance({ imageId: "old-image" }).instanceId;
        const joined = new Set<string>();
        // cloud-init runs the userdata at first boot on the new system disk: the script joins.
        emu.state.onUserDataRun = (i) => {
            if (Buffer.from(i.userData, "base64").toString("utf8") === SCRIPT) joined.add(i.instanceId);
        };
        clusterOf(emu, joined);
        const progress: string[] = [];
        const outs = await joinExistingNode(inputs(node, master, { mode: "auto", replaceSystemDisk: true, imageId: "ubuntu_24_04_x64_20G_alibase_20260101.vhd" }), (m) => progress.push(m));

        assert.deepStrictEqual(outs, { nodeName: `node-${node}`, providerId: `${REGION}.${node}` });
        const ecs = emu.mutatingCalls().filter((c) => c.action !== "RunCommand");
        assert.deepStrictEqual(ecs.map((c) => c.action), ["ModifyInstanceAttribute", "StopInstance", "ReplaceSystemDisk", "StartInstance"]);
        assert.ok(ecs.every((c) => c.params.InstanceId === node && c.status === 200));
        assert.strictEqual(Buffer.from(ecs[0].params.UserData, "base64").toString("utf8"), SCRIPT);
        assert.strictEqual(ecs[1].params.StoppedMode, "KeepCharging");
        assert.strictEqual(ecs[2].params.ImageId, "ubuntu_24_04_x64_20G_alibase_20260101.vhd");
        const inst = emu.instances.get(node)!;
        assert.deepStrictEqual([inst.status, inst.imageId, inst.userDataRuns], ["Running", "ubuntu_24_04_x64_20G_alibase_20260101.vhd", 1]);
        assert.ok(progress.some((m) => m.includes("waiting for Stopped (now Stopping)")), progress.join("\n"));
        assert.ok(progress.some((m) => m.includes("waiting for Running (now Starting)")), progress.join("\n"));
    });

    it("auto without replaceSystemDisk: true makes no call at all and says why", async () => {
        const { emu } = ctx;
        const node = emu.addInstance().instanceId;
        const refused = inputs(node, "i-master", { mode: "auto", imageId: "img" });
        await assert.rejects(joinExistingNode(refused), /replaceSystemDisk: mode auto replaces the system disk .* set replaceSystemDisk: true/);
        await assert.rejects(nodeMembershipProvider.create!(refused), /replaceSystemDisk/);
        const check = await nodeMembershipProvider.check!({}, refused);
        assert.strictEqual(check.failures![0].property, "replaceSystemDisk");
        assert.strictEqual(emu.calls.length, 0);
        assert.strictEqual(emu.instances.get(node)!.status, "Running");
    });

    it("auto on an instance that already is a Ready node leaves its disk alone", async () => {
        const { emu } = ctx;
        const master = emu.addInstance().instanceId;
        const node = emu.addInstance().instanceId;
        emu.onCommand(/get nodes/, () => ({ output: zlib.gzipSync(`node-a\t${REGION}.${node}\tTrue\t\t\texisting\t2026-12-01T10:00:00Z`).toString("base64") }));
        const outs = await joinExistingNode(inputs(node, master, { mode: "auto", replaceSystemDisk: true, imageId: "img" }));
        assert.strictEqual(outs.nodeName, "node-a");
        assert.deepStrictEqual(emu.mutatingCalls().map((c) => c.action), ["RunCommand"], "only the node listing");
    });

    it("ssh: the script ran elsewhere (remote.Command); the membership only waits for Ready", async () => {
        const { emu } = ctx;
        const master = emu.addInstance().instanceId;
        const node = emu.addInstance().instanceId;
        clusterOf(emu, new Set([node]));
        await joinExistingNode(inputs(node, master, { mode: "ssh" }));
        assert.ok(emu.callsOf("RunCommand").every((c) => c.params["InstanceId.1"] === master));
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
        const p = membershipProblems({ region: REGION, instanceId: "i-x", mode: "auto", userData: SCRIPT, masterInstanceId: "i-m" });
        assert.strictEqual(p.length, 2, p.join("\n"));
        const olds = { ...inputs("i-x", "i-m"), nodeName: "n", providerId: `${REGION}.i-x` };
        const d = await nodeMembershipProvider.diff!("x", olds, { ...inputs("i-x", "i-m"), mode: "auto", replaceSystemDisk: true, imageId: "img" });
        assert.deepStrictEqual([d.replaces, d.deleteBeforeReplace], [["mode"], true]);
        const rotated = await nodeMembershipProvider.diff!("x", olds, { ...inputs("i-x", "i-m"), userData: `${SCRIPT}\n` });
        assert.deepStrictEqual([rotated.changes, rotated.replaces], [true, []]);
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
        const doc = YAML.parse(fs.readFileSync(path.join(__dirname, "..", "stacks", "Pulumi.dev.yaml"), "utf8"));
        config = parseClusterConfig(doc.config["alicloud-kubeadm:cluster"], doc.config["alicloud:region"]);
    });
    beforeEach(() => recorder.resources.splice(0));

    const common = () => ({
        config, apiEndpoint: "192.168.0.10:6443", token: pulumi.secret(TOKEN), caCertHash: pulumi.secret(CA_HASH),
        masterInstanceId: "i-master0", routeTableId: "vtb-dev", imageId: "img",
    });

    it("dev's manual node: one NodeMembership running the attach script, userdata secret, nothing secret in plain inputs", async () => {
        const [node] = config.existingNodes;
        new mod.ExistingNode("dev-node-0", { ...common(), node });
        await recorder.settle();
        const [m] = recorder.ofType("pulumi-nodejs:dynamic:Resource");
        assert.strictEqual(m.parent, "dev-node-0");
        assert.deepStrictEqual([m.inputs.mode, m.inputs.instanceId, m.inputs.masterInstanceId, m.inputs.imageId], ["manual", "i-bp1exampleexample01", "i-master0", undefined]);
        assert.ok(m.secretInputs.includes("userData"));
        const script = m.rawInputs.userData as string;
        assert.match(script, /readonly AK_POOL_NAME='existing'/);
        assert.ok(script.includes(TOKEN) && script.includes(CA_HASH));
        assert.ok(Buffer.byteLength(script) <= 16 * 1024);
        const visible = JSON.stringify(recorder.resources.map((r) => r.inputs));
        assert.ok(!visible.includes(TOKEN.slice(7)) && !visible.includes(CA_HASH.slice(7)));
        assert.strictEqual(recorder.ofType("command:remote:Command").length, 0);
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
