import * as assert from "assert";
import * as fs from "fs";
import * as path from "path";
import * as zlib from "zlib";
import * as pulumi from "@pulumi/pulumi";
import * as YAML from "yaml";
import { useEmulator } from "./emulator/fixture";
import type { Emulator } from "./emulator";
import { installMocks, type Recorder } from "./mockRuntime";
import { redactUserdata } from "../src/shell/render";
import { scalingConfigurationTags } from "../src/rules";
import { parseClusterConfig } from "../src/config";
import { drainPool, setPoolCapacity, poolCapacityProvider, type PoolCapacityInputs } from "../src/providers/poolCapacity";
import type { NodeCommandIds } from "../src/rules";
import { operation, saveNodeCommands } from "./savedCommands";

const REGION = "cn-hangzhou";

/** A node listing line as kubectl prints it with NODE_LINES_JSONPATH. */
const line = (name: string, providerId: string, ready: boolean, pool: string) =>
    `${name}\t${providerId}\t${ready ? "True" : "False"}\t\t172.16.0.0/25\t${pool}\t2026-12-01T10:00:00Z`;

/**
 * Master 0 answering `kubectl get nodes -l alicloud-kubeadm/pool=<pool>`: every member of the group
 * registers as a node, and one more of them becomes Ready per listing. A stale Ready node of a released
 * instance carries the same pool label and must not be counted.
 */
function clusterOf(emu: Emulator, groupId: string, pool: string): { listings: number; selectors: string[] } {
    const seen = { listings: 0, selectors: [] as string[] };
    emu.onCommand(operation("list-nodes"), (c) => {
        seen.listings++;
        seen.selectors.push(c.parameters.selector ?? "");
        const members = emu.scalingGroupInstances(groupId);
        const lines = members.map((id, i) => line(`node-${id}`, `${REGION}.${id}`, i < seen.listings - 1, pool));
        lines.push(line("stale", `${REGION}.i-released0000000001`, true, pool));
        return { output: zlib.gzipSync(lines.join("\n")).toString("base64") };
    });
    return seen;
}

describe("PoolCapacity (emulator)", () => {
    const ctx = useEmulator();
    let commands: NodeCommandIds;
    beforeEach(async () => { commands = await saveNodeCommands(REGION); });
    const inputs = (groupId: string, master: string, size: number): PoolCapacityInputs => ({
        region: REGION, scalingGroupId: groupId, poolName: "general", masterInstanceId: master, commands, size,
        pollSeconds: 0.02, readyTimeoutSeconds: 5, pollIntervalMs: 10,
    });

    it("create sets the ESS capacity, then waits until that many group instances are Ready nodes, with progress", async () => {
        const { emu } = ctx;
        const master = emu.addInstance().instanceId;
        const group = emu.addScalingGroup({ maxSize: 1, desiredCapacity: 0 });
        const seen = clusterOf(emu, group.scalingGroupId, "general");
        const progress: string[] = [];
        const outs = await setPoolCapacity(inputs(group.scalingGroupId, master, 3), (m) => progress.push(m));

        const [modify] = emu.callsOf("ModifyScalingGroup");
        assert.deepStrictEqual([modify.params.ScalingGroupId, modify.params.DesiredCapacity, modify.params.MaxSize], [group.scalingGroupId, "3", "3"]);
        const members = emu.scalingGroupInstances(group.scalingGroupId);
        assert.strictEqual(members.length, 3);
        assert.deepStrictEqual(outs.readyInstanceIds, [...members].sort());
        // The stale node is Ready from the first listing; counting it would have ended the wait early.
        assert.strictEqual(seen.listings, 4, "Ready after the 4th listing: 0, 1, 2, then 3 members Ready");
        assert.ok(seen.selectors.every((s) => s === "alicloud-kubeadm/pool=general"), seen.selectors.join(" "));
        assert.ok(progress.includes(`pool general: waiting for 1/3 nodes Ready (3 instance(s) in ${group.scalingGroupId})`), progress.join("\n"));
        assert.strictEqual(progress[progress.length - 1], "pool general: 3/3 nodes Ready");
    });

    it("a failed ESS scaling activity fails the wait at once with ESS's reason", async () => {
        const { emu } = ctx;
        const master = emu.addInstance().instanceId;
        const group = emu.addScalingGroup({ maxSize: 5 });
        emu.onCommand(operation("list-nodes"), () => {
            emu.state.activities.push({
                scalingActivityId: "asa-failed", scalingGroupId: group.scalingGroupId, description: "Add 2 ECS instance(s)", cause: "A user request",
                startedAt: Date.now(), endsAt: Date.now(), statusCode: "Failed", totalCapacity: 0, createdInstances: [], destroyedInstances: [],
            });
            return { output: zlib.gzipSync("").toString("base64") };
        });
        await assert.rejects(setPoolCapacity({ ...inputs(group.scalingGroupId, master, 2), size: 2 }), (err: Error) => {
            assert.match(err.message, /pool general: ESS could not scale .* out: asa-failed Failed/);
            assert.match(err.message, /instanceTypes/);
            return true;
        });
    });

    it("gives up after the bounded wait, naming the instances that are not Ready", async () => {
        const { emu } = ctx;
        const master = emu.addInstance().instanceId;
        const group = emu.addScalingGroup({ maxSize: 2 });
        emu.onCommand(operation("list-nodes"), () => ({ output: zlib.gzipSync("").toString("base64") }));
        await assert.rejects(setPoolCapacity({ ...inputs(group.scalingGroupId, master, 2), readyTimeoutSeconds: 0.2 }), (err: Error) => {
            const members = emu.scalingGroupInstances(group.scalingGroupId);
            assert.match(err.message, /only 0\/2 nodes Ready after 0 s/);
            for (const id of members) assert.ok(err.message.includes(id), `${id} named`);
            assert.match(err.message, /attach-node\.log/);
            return true;
        });
    });

    it("update growing raises the capacity and waits; observe mode (autoscaled pools) sets nothing", async () => {
        const { emu } = ctx;
        const master = emu.addInstance().instanceId;
        const group = emu.addScalingGroup({ maxSize: 2, desiredCapacity: 2 });
        clusterOf(emu, group.scalingGroupId, "general");
        const olds = { ...inputs(group.scalingGroupId, master, 2), readyInstanceIds: [] };
        const res = await poolCapacityProvider.update!("x", olds, inputs(group.scalingGroupId, master, 4));
        assert.strictEqual(emu.scalingGroupInstances(group.scalingGroupId).length, 4);
        assert.strictEqual((res.outs as { readyInstanceIds: string[] }).readyInstanceIds.length, 4);

        const before = emu.calls.length;
        const observed = await poolCapacityProvider.create!({ ...inputs(group.scalingGroupId, master, 0), mode: "observe", size: undefined });
        assert.deepStrictEqual((observed.outs as { readyInstanceIds: string[] }).readyInstanceIds, []);
        assert.strictEqual(emu.calls.length, before, "observe mode makes no call");
    });

    it("a smaller size drains and removes the surplus through the removal flow before ESS sees the lower capacity", async () => {
        const { emu } = ctx;
        const master = emu.addInstance().instanceId;
        const group = emu.addScalingGroup({ maxSize: 3, desiredCapacity: 3 });
        const members = emu.scalingGroupInstances(group.scalingGroupId);
        const scripts: string[] = [];
        emu.onCommand(/./, (c) => { scripts.push(c.script); return { output: "" }; });
        emu.onCommand(operation("pod-owners"), () => ({ output: zlib.gzipSync("").toString("base64") }));
        emu.onCommand(operation("list-nodes"), () => ({ output: zlib.gzipSync(emu.scalingGroupInstances(group.scalingGroupId)
            .map((id) => line(`node-${id}`, `${REGION}.${id}`, true, "general")).join("\n")).toString("base64") }));
        const olds = { ...inputs(group.scalingGroupId, master, 3), readyInstanceIds: members };
        const res = await poolCapacityProvider.update!("x", olds, inputs(group.scalingGroupId, master, 1));

        const left = emu.scalingGroupInstances(group.scalingGroupId);
        assert.strictEqual(left.length, 1);
        assert.deepStrictEqual((res.outs as { readyInstanceIds: string[] }).readyInstanceIds, left);
        assert.strictEqual(scripts.filter((s) => operation("drain").test(s) && /^readonly AK_NODE='node-/m.test(s)).length, 2, "both surplus nodes drained");
        const ess = emu.mutatingCalls().filter((c) => c.product === "ess").map((c) => `${c.action}${c.params.DesiredCapacity ? `(${c.params.DesiredCapacity})` : ""}`);
        // Both surplus nodes leave in one RemoveInstances (ESS runs one scaling activity at a time per group).
        assert.deepStrictEqual(ess, ["RemoveInstances", "ModifyScalingGroup(1)", "ModifyScalingGroup(1)"]);
        const removed = emu.callsOf("RemoveInstances")[0].params;
        assert.deepStrictEqual([removed["InstanceId.1"], removed["InstanceId.2"]].every(Boolean), true, "two instances in the one call");
        assert.strictEqual(emu.scalingGroups.get(group.scalingGroupId)!.maxSize, 1);
    });

    it("deleting an autoscaled pool (observe mode) lowers MinSize to 0, then drains and removes every node", async () => {
        const { emu } = ctx;
        const master = emu.addInstance().instanceId;
        const group = emu.addScalingGroup({ minSize: 2, maxSize: 10, desiredCapacity: 2 });
        const drained: string[] = [];
        emu.onCommand(/./, (c) => { if (operation("drain").test(c.script)) drained.push(c.script); return { output: "" }; });
        emu.onCommand(operation("pod-owners"), () => ({ output: zlib.gzipSync("").toString("base64") }));
        emu.onCommand(operation("list-nodes"), () => ({ output: zlib.gzipSync(emu.scalingGroupInstances(group.scalingGroupId)
            .map((id) => line(`node-${id}`, `${REGION}.${id}`, true, "elastic")).join("\n")).toString("base64") }));
        await poolCapacityProvider.delete!("x", { ...inputs(group.scalingGroupId, master, 0), poolName: "elastic", mode: "observe", minSize: 2, readyInstanceIds: [] });
        assert.deepStrictEqual(emu.scalingGroupInstances(group.scalingGroupId), []);
        assert.strictEqual(drained.length, 2);
        const ess = emu.mutatingCalls().filter((c) => c.product === "ess").map((c) => c.action + (c.params.MinSize ? `(min ${c.params.MinSize}, max ${c.params.MaxSize})` : ""));
        // MaxSize capped at the members first: the autoscaler cannot add a node that would go undrained with the group.
        assert.deepStrictEqual(ess, ["ModifyScalingGroup(min 0, max 2)", "RemoveInstances"]);
        assert.ok(emu.callsOf("RemoveInstances")[0].params["InstanceId.2"], "both nodes in one batch");
    });

    it("deleting a pool whose ESS group is already gone is fine, with a warning", async () => {
        const { emu } = ctx;
        const master = emu.addInstance().instanceId;
        const warnings: string[] = [];
        const reports = await drainPool(inputs("asg-gone", master, 0), { region: REGION, masterInstanceId: master, commands, warn: (m) => warnings.push(m) });
        assert.deepStrictEqual(reports, []);
        assert.match(warnings[0], /asg-gone is already gone/);
    });

    it("diff: a size change updates in place; a new scaling group replaces (draining the old one first)", async () => {
        const olds = { ...inputs("asg-1", "i-m", 2), readyInstanceIds: [] };
        const grow = await poolCapacityProvider.diff!("x", olds, inputs("asg-1", "i-m", 3));
        assert.deepStrictEqual([grow.changes, grow.replaces], [true, []]);
        const toAutoscaled = await poolCapacityProvider.diff!("x", olds, { ...inputs("asg-1", "i-m", 2), mode: "observe" });
        assert.deepStrictEqual([toAutoscaled.changes, toAutoscaled.replaces], [true, []], "fixed → autoscaled is an update: no drain of the pool");
        const newCommand = await poolCapacityProvider.diff!("x", olds, { ...inputs("asg-1", "i-m", 2), commands: { ...commands, drain: "c-new" } });
        assert.deepStrictEqual([newCommand.changes, newCommand.replaces], [true, []], "a new command id is an update: the pool is not drained");
        const moved = await poolCapacityProvider.diff!("x", olds, inputs("asg-2", "i-m", 2));
        assert.deepStrictEqual([moved.replaces, moved.deleteBeforeReplace], [["scalingGroupId"], true]);
        const check = await poolCapacityProvider.check!({}, { ...inputs("asg-1", "i-m", -1) });
        assert.match(check.failures![0].reason, /0\.\.2000/);
    });
});

/** Header parameter of a rendered script (`readonly NAME='value'`). */
function header(script: string, name: string): string | undefined {
    const m = new RegExp(`^readonly ${name}='((?:[^']|'\\\\'')*)'$`, "m").exec(script);
    return m ? m[1].replace(/'\\''/g, "'") : undefined;
}

describe("NodePool (mock graph, dev pools)", () => {
    const CA_HASH = `sha256:${"ab".repeat(32)}`;
    const TOKEN = "abcdef.0123456789abcdef"; // the mocks' BootstrapToken placeholder
    let recorder: Recorder;
    const childOpts = new Map<string, pulumi.ResourceOptions>();

    before(async () => {
        recorder = installMocks({ stack: "node-pool-test" });
        const { NodePool } = await import("../src/components/nodePool");
        const doc = YAML.parse(fs.readFileSync(path.join(__dirname, "..", "stacks", "Pulumi.dev.yaml"), "utf8"));
        const config = parseClusterConfig(doc.config["alicloud-kubeadm:cluster"], doc.config["alicloud:region"]);
        for (const pool of config.nodePools) {
            new NodePool(`dev-pool-${pool.name}`, {
                config, pool,
                vswitchIds: ["vsw-h", "vsw-i"],
                securityGroupIds: ["sg-cluster"],
                imageId: "ubuntu_24_04_x64_20G_alibase_20260101.vhd",
                apiEndpoint: "192.168.0.10:6443",
                caCertHash: pulumi.secret(CA_HASH),
                masterInstanceId: "i-master0",
                commands: { "list-nodes": "c-list" } as unknown as NodeCommandIds,
                routeTableId: "vtb-dev",
                tags: { "alicloud-kubeadm/cluster": "dev" },
            }, { transformations: [(a) => { childOpts.set(a.name, a.opts); return undefined; }] });
        }
        await recorder.settle();
    });

    const byNameDesc = (a: { name: string }, b: { name: string }) => b.name.localeCompare(a.name);
    const groups = () => recorder.ofType("alicloud:ess/scalingGroup:ScalingGroup").sort(byNameDesc);
    const configs = () => recorder.ofType("alicloud:ess/scalingConfiguration:ScalingConfiguration").sort(byNameDesc);
    const dynamic = () => recorder.ofType("pulumi-nodejs:dynamic:Resource");

    it("two ESS groups over both vSwitches, BALANCE, newest removed first, desired capacity ignored", () => {
        assert.deepStrictEqual(groups().map((g) => g.name), ["dev-pool-general-group", "dev-pool-elastic-group"]);
        const [general, elastic] = groups();
        assert.deepStrictEqual([general.inputs.minSize, general.inputs.maxSize, general.inputs.desiredCapacity], [0, 2, 0]);
        assert.deepStrictEqual([elastic.inputs.minSize, elastic.inputs.maxSize, elastic.inputs.desiredCapacity], [0, 10, 0]);
        for (const g of groups()) {
            assert.deepStrictEqual(g.inputs.vswitchIds, ["vsw-h", "vsw-i"]);
            assert.strictEqual(g.inputs.multiAzPolicy, "BALANCE");
            assert.strictEqual((g.inputs.removalPolicies as string[])[0], "NewestInstance");
        }
        assert.deepStrictEqual(childOpts.get("dev-pool-general-group")?.ignoreChanges, ["desiredCapacity", "maxSize"]);
        assert.deepStrictEqual(childOpts.get("dev-pool-elastic-group")?.ignoreChanges, ["desiredCapacity"]);
    });

    it("scaling configurations: type, image, disk, security group, no RAM role, active and enabled, userdata secret", () => {
        const [general, elastic] = configs();
        assert.deepStrictEqual([general.inputs.scalingGroupId, elastic.inputs.scalingGroupId], groups().map((g) => g.id));
        assert.strictEqual(general.inputs.instanceType, "ecs.g7.xlarge");
        assert.strictEqual(elastic.inputs.instanceType, "ecs.c7.xlarge");
        for (const c of configs()) {
            assert.strictEqual(c.inputs.instanceTypes, undefined);
            assert.strictEqual(c.inputs.imageId, "ubuntu_24_04_x64_20G_alibase_20260101.vhd");
            assert.deepStrictEqual([c.inputs.systemDiskCategory, c.inputs.systemDiskSize], ["cloud_essd", 40]);
            assert.deepStrictEqual(c.inputs.securityGroupIds, ["sg-cluster"]);
            assert.strictEqual(c.inputs.roleName, undefined, "nodes get no RAM role");
            assert.deepStrictEqual([c.inputs.active, c.inputs.enable], [true, true]);
            assert.ok(c.secretInputs.includes("userData"), `${c.name}: userData is secret`);
            const script = c.rawInputs.userData as string;
            assert.ok(Buffer.byteLength(script) <= 16 * 1024, `${Buffer.byteLength(script)} bytes`);
            assert.strictEqual(header(script, "AK_BOOTSTRAP_TOKEN"), TOKEN);
            assert.strictEqual(header(script, "AK_CA_CERT_HASHES"), CA_HASH);
            assert.strictEqual(header(script, "AK_API_ENDPOINT"), "192.168.0.10:6443");
            assert.match(script, /kubeadm join --config/);
        }
    });

    it("autoscaled pool: configuration tags equal the kubelet labels exactly (the autoscaler's template reads them)", () => {
        const elastic = configs()[1];
        const script = elastic.rawInputs.userData as string;
        const kubelet = Object.fromEntries([`alicloud-kubeadm/pool=${header(script, "AK_POOL_NAME")}`, ...header(script, "AK_NODE_LABELS")!.split(",")]
            .map((kv) => kv.split("=") as [string, string]));
        assert.deepStrictEqual(elastic.inputs.tags, { workload_type: "cpu", "alicloud-kubeadm/pool": "elastic", "alicloud-kubeadm/autoscaled": "true" });
        assert.deepStrictEqual(kubelet, elastic.inputs.tags);
        assert.ok(!JSON.stringify(elastic.inputs.tags).includes("k8s.io"), "no label the kubelet may not set");
        const general = configs()[0];
        assert.deepStrictEqual(general.inputs.tags, { "alicloud-kubeadm/cluster": "dev", "alicloud-kubeadm/pool": "general" });
        assert.strictEqual(header(general.rawInputs.userData as string, "AK_NODE_LABELS"), "");
    });

    it("a bootstrap token per pool (ttl 0) and a PoolCapacity: fixed size for general, observe for elastic, after the configuration", () => {
        const tokens = dynamic().filter((r) => r.name.endsWith("-token")).sort((a, b) => b.name.localeCompare(a.name));
        assert.deepStrictEqual(tokens.map((t) => [t.name, t.inputs.ttl, t.inputs.masterInstanceId]), [
            ["dev-pool-general-token", "0", "i-master0"], ["dev-pool-elastic-token", "0", "i-master0"],
        ]);
        const caps = dynamic().filter((r) => r.name.endsWith("-capacity")).sort((a, b) => b.name.localeCompare(a.name));
        assert.deepStrictEqual(caps.map((c) => [c.name, c.inputs.mode, c.inputs.size, c.inputs.poolName, c.inputs.scalingGroupId]), [
            ["dev-pool-general-capacity", "fixed", 2, "general", groups()[0].id],
            ["dev-pool-elastic-capacity", "observe", undefined, "elastic", groups()[1].id],
        ]);
        const deps = childOpts.get("dev-pool-general-capacity")?.dependsOn as pulumi.Resource[];
        assert.ok(Array.isArray(deps) && deps.length === 2, "capacity waits for the configuration and the token");
    });

    it("the dev pools' attach userdata headers match the reviewed golden (secrets redacted; UPDATE_GOLDEN=1 rewrites it)", () => {
        // The header is what NodePool decides; the static script body below it has its own golden (test/userdata.test.ts).
        const golden = path.join(__dirname, "golden", "attach-node.dev-pools.header.sh");
        const actual = configs().map((c) => {
            const script = redactUserdata(c.rawInputs.userData as string);
            return `# ${c.name}\n${script.slice(0, script.indexOf("\n# ---- src/shell/"))}\n`;
        }).join("\n");
        assert.ok(!actual.includes(TOKEN) && !actual.includes(CA_HASH.slice(7)));
        if (process.env.UPDATE_GOLDEN === "1") fs.writeFileSync(golden, actual);
        assert.strictEqual(actual, fs.readFileSync(golden, "utf8"), "the dev attach userdata header changed: review the diff, then run with UPDATE_GOLDEN=1");
    });

    it("a pool whose tags ESS would refuse creates no cloud resource", async () => {
        const { NodePool } = await import("../src/components/nodePool");
        const doc = YAML.parse(fs.readFileSync(path.join(__dirname, "..", "stacks", "Pulumi.dev.yaml"), "utf8"));
        const config = parseClusterConfig(doc.config["alicloud-kubeadm:cluster"], doc.config["alicloud:region"]);
        const labels = Object.fromEntries(Array.from({ length: 19 }, (_, i) => [`label-${i}`, "x"]));
        const before = recorder.resources.filter((r) => r.custom).length;
        assert.throws(() => new NodePool("dev-pool-bad", {
            config, pool: { ...config.nodePools[1], name: "bad", labels }, vswitchIds: ["vsw-h"], securityGroupIds: ["sg"], imageId: "img",
            apiEndpoint: "192.168.0.10:6443", caCertHash: CA_HASH, masterInstanceId: "i-master0", commands: {} as NodeCommandIds,
        }), /21 tags/);
        await recorder.settle();
        assert.strictEqual(recorder.resources.filter((r) => r.custom).length, before);
    });

    it("no token or CA hash in any non-secret input (what resources.json shows)", () => {
        const visible = JSON.stringify(recorder.resources.map((r) => r.inputs));
        assert.ok(!visible.includes(TOKEN) && !visible.includes(TOKEN.slice(7)), "token");
        assert.ok(!visible.includes(CA_HASH.slice(7)), "CA hash");
        const raw = JSON.stringify(recorder.resources.map((r) => r.rawInputs));
        assert.ok(raw.includes(CA_HASH.slice(7)), "the check would see the hash were it not secret");
    });
});

describe("NodePool tags and labels (pure)", () => {
    const pool = (extra: Record<string, unknown>) => ({ name: "p", labels: {}, ...extra });
    const none = () => assert.fail("no problem expected");

    it("fixed pools tag instances with the cloud tags and the labels; autoscaled pools with the labels only", () => {
        const cloud = { "alicloud-kubeadm/cluster": "c", team: "infra" };
        assert.deepStrictEqual(scalingConfigurationTags(pool({ size: 1, labels: { a: "1" } }), cloud, none), { ...cloud, a: "1", "alicloud-kubeadm/pool": "p" });
        assert.deepStrictEqual(scalingConfigurationTags(pool({ autoscale: { min: 0, max: 3 }, labels: { a: "1" } }), cloud, none),
            { a: "1", "alicloud-kubeadm/pool": "p", "alicloud-kubeadm/autoscaled": "true" });
    });

    it("reports tags ESS would refuse: more than 20, or keys starting with aliyun", () => {
        const labels = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`l${i}`, "x"]));
        const seen: string[] = [];
        scalingConfigurationTags(pool({ size: 1, labels }), {}, (path, reason) => seen.push(`${path}: ${reason}`));
        scalingConfigurationTags(pool({ size: 1, labels: { "aliyun.accelerator/nvidia_name": "V100" } }), {}, (path, reason) => seen.push(`${path}: ${reason}`));
        assert.equal(seen.length, 2);
        assert.match(seen[0], /^labels: the scaling configuration would carry 21 tags .* ESS allows at most 20/);
        assert.match(seen[1], /^labels\.aliyun\.accelerator\/nvidia_name: .*refuses tag keys starting with aliyun/);
    });
});
