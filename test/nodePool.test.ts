// World: the OpenAPI emulator (testing/emulator); the Kubernetes double (testing/fakeCluster.ts); Pulumi mocks
// (testing/mockRuntime.ts).
import * as assert from "assert";
import * as fs from "fs";
import * as path from "path";
import * as pulumi from "@pulumi/pulumi";
import * as YAML from "yaml";
import { useEmulator } from "../testing/emulator/fixture";
import { installMocks, type Recorder } from "../testing/mockRuntime";
import { redactUserdata, USERDATA_BUDGET_BYTES } from "../src/shell/render";
import { AUTOSCALED_SPEC_LABEL, kubeletMaySetLabel, POOL_LABEL, scalingConfigurationTags, SPEC_TAG } from "../src/rules";
import { parseClusterConfig } from "../src/config";
import { drainPool, setPoolCapacity, poolCapacityProvider, POOL_CAPACITY_PROVIDER_VERSION, type PoolCapacityInputs } from "../src/providers/poolCapacity";
import type { NodeCommandIds } from "../src/rules";
import { fakeCluster, type FakeCluster } from "../testing/fakeCluster";
import { drainNode, uncordonNode } from "../src/cloud/operations";
import { call } from "../testing/emulator/fixture";
import { launchInstance } from "../testing/emulator/ess";
import type { EmuScalingGroup } from "../testing/emulator";
import { headerValue, unpackScript } from "./tools";

const REGION = "cn-hangzhou";

// PoolCapacity on testing/fakeCluster.ts: each test makes ESS and the cluster act together on cue — an instance
// joining the moment ESS launches it (NotReady for a few listings), a member appearing while a victim leaves,
// a drain that fails, a pool at its minimum — and I1 is checked as ESS takes each member out. The removal
// core's Kubernetes side against a real API server is test/realClusterRemoval.test.ts.
describe("PoolCapacity (emulator)", () => {
    const ctx = useEmulator();
    let c: FakeCluster;
    let warnings: string[];
    beforeEach(async () => {
        c = await fakeCluster(ctx.emu, REGION);
        warnings = [];
    });
    afterEach(() => assert.deepStrictEqual(c.violations, [], "I1: no member left ESS with a Node that was not drained"));
    const inputs = (groupId: string, size: number, extra: Partial<PoolCapacityInputs> = {}): PoolCapacityInputs => ({
        region: REGION, scalingGroupId: groupId, poolName: "general", masterInstanceId: c.master, commands: c.commands, size,
        pollSeconds: 0.02, readyTimeoutSeconds: 5, pollIntervalMs: 10, ...extra,
    });
    const commands = () => c.commands;
    const members = (group: string) => ctx.emu.scalingGroupInstances(group);
    const states = (group: string) => members(group).map((id) => ctx.emu.state.scalingInstances.get(id)!.lifecycleState);
    /** A group of `n` members that joined the pool, each running a workload pod. */
    function joinedGroup(n: number, init: Partial<EmuScalingGroup> = {}): string {
        const group = ctx.emu.addScalingGroup({ maxSize: n, desiredCapacity: n, removalPolicies: ["NewestInstance", "OldestScalingConfiguration"], ...init }).scalingGroupId;
        members(group).forEach((id) => c.addNode(id, { pool: "general", pods: ["ReplicaSet"] }));
        return group;
    }

    it("create sets the ESS capacity, waits until that many group instances are Ready nodes (progress), then protects them from scale-in", async () => {
        const group = ctx.emu.addScalingGroup({ maxSize: 1, desiredCapacity: 0 }).scalingGroupId;
        c.autoJoin("general", { readyAfterListings: 2 });
        // A stale Ready node of a released instance carries the pool label: it must not be counted.
        c.addNode("i-released0000000001", { pool: "general" });
        const progress: string[] = [];
        const outs = await setPoolCapacity(inputs(group, 3), (m) => progress.push(m));
        const [modify] = ctx.emu.callsOf("ModifyScalingGroup");
        assert.deepStrictEqual([modify.params.ScalingGroupId, modify.params.DesiredCapacity, modify.params.MaxSize], [group, "3", "3"]);
        assert.strictEqual(members(group).length, 3);
        assert.deepStrictEqual(outs.readyInstanceIds, [...members(group)].sort());
        assert.ok(progress.includes(`pool general: waiting for 0/3 nodes Ready (3 instance(s) in ${group})`), progress.join("\n"));
        assert.ok(progress.includes("pool general: 3/3 nodes Ready"), progress.join("\n"));
        assert.deepStrictEqual(states(group), ["Protected", "Protected", "Protected"], "ESS can never pick one of them itself");
    });

    it("a failed ESS scaling activity fails the wait at once with ESS's reason", async () => {
        const group = ctx.emu.addScalingGroup({ maxSize: 5 }).scalingGroupId;
        ctx.emu.failNextActivity(group, { status: "Failed", errorCode: "OperationDenied.NoStock", message: "The requested resource is sold out" });
        await assert.rejects(setPoolCapacity(inputs(group, 2)), (err: Error) => {
            assert.match(err.message, /pool general: ESS could not scale .* out: asa-emu\d+ Failed: OperationDenied.NoStock: The requested resource is sold out/);
            assert.match(err.message, /instanceTypes/);
            return true;
        });
    });

    it("gives up after the bounded wait, naming the instances that are not Ready", async () => {
        const group = ctx.emu.addScalingGroup({ maxSize: 2 }).scalingGroupId;
        await assert.rejects(setPoolCapacity(inputs(group, 2, { readyTimeoutSeconds: 0.2 })), (err: Error) => {
            assert.match(err.message, /only 0\/2 nodes Ready after 0 s/);
            for (const id of members(group)) assert.ok(err.message.includes(id), `${id} named`);
            assert.match(err.message, /attach-node\.log/);
            return true;
        });
        assert.deepStrictEqual(states(group), ["Protected", "Protected"], "protected even though the wait gave up");
    });

    it("update growing raises the capacity and waits; observe mode (autoscaled pools) creates nothing", async () => {
        const group = joinedGroup(2);
        c.autoJoin("general");
        const olds = { ...inputs(group, 2), readyInstanceIds: [] };
        const res = await poolCapacityProvider.update!("x", olds, inputs(group, 4));
        assert.strictEqual(members(group).length, 4);
        assert.strictEqual((res.outs as { readyInstanceIds: string[] }).readyInstanceIds.length, 4);
        const before = ctx.emu.calls.length;
        const observed = await poolCapacityProvider.create!({ ...inputs(group, 0), mode: "observe", size: undefined });
        assert.deepStrictEqual((observed.outs as { readyInstanceIds: string[] }).readyInstanceIds, []);
        assert.strictEqual(ctx.emu.calls.length, before, "observe mode makes no call on create");
    });

    it("a smaller size drains and removes the surplus through the removal flow before ESS sees the lower capacity", async () => {
        const group = joinedGroup(3);
        const olds = { ...inputs(group, 3), readyInstanceIds: members(group) };
        const res = await poolCapacityProvider.update!("x", olds, inputs(group, 1));
        const left = members(group);
        assert.strictEqual(left.length, 1);
        assert.deepStrictEqual((res.outs as { readyInstanceIds: string[] }).readyInstanceIds, left);
        assert.strictEqual(c.log.filter((x) => / drain node-/.test(x)).length, 2, "both surplus nodes drained");
        // The desired capacity came down through RemoveInstances alone; nothing lowers it or MaxSize by hand (a second
        // run raising the pool meanwhile could otherwise leave a member above it for ESS to choose).
        const ess = ctx.emu.mutatingCalls().filter((x) => x.product === "ess" && !x.code).map((x) => x.action);
        assert.ok(!ess.includes("ModifyScalingGroup"), ess.join(", "));
        const g = ctx.emu.scalingGroups.get(group)!;
        assert.deepStrictEqual([g.desiredCapacity, g.maxSize], [1, 3]);
        assert.deepStrictEqual(states(group), ["Protected"]);
        assert.deepStrictEqual(ctx.emu.activitiesOf(group).filter((a) => /desired capacity/.test(a.description)).flatMap((a) => a.destroyedInstances), [], "ESS chose no victim itself");
    });

    it("deleting an autoscaled pool (observe mode) lowers MinSize to 0 and caps MaxSize, then drains and removes every node", async () => {
        const group = joinedGroup(2, { minSize: 2, maxSize: 10 });
        await poolCapacityProvider.delete!("x", { ...inputs(group, 0), mode: "observe", minSize: 2, readyInstanceIds: [] });
        assert.deepStrictEqual(members(group), []);
        assert.strictEqual(c.nodes.size, 0);
        const ess = ctx.emu.mutatingCalls().filter((x) => x.product === "ess").map((x) => x.action + (x.params.MinSize ? `(min ${x.params.MinSize}, max ${x.params.MaxSize})` : ""));
        // Scale-out suspended, then MaxSize capped at the members counted: the autoscaler cannot add a node that would go
        // undrained with the group (the suspension stays: the group is deleted next).
        assert.deepStrictEqual(ess.slice(0, 2), ["SuspendProcesses", "ModifyScalingGroup(min 0, max 2)"]);
        assert.deepStrictEqual(ess.slice(2).filter((a) => a !== "RemoveInstances"), []);
    });

    it("deleting a pool whose ESS group is already gone is fine, with a warning", async () => {
        const reports = await drainPool(inputs("asg-gone", 0), { region: REGION, masterInstanceIds: [c.master], commands: commands(), warn: (m) => warnings.push(m) });
        assert.deepStrictEqual(reports, []);
        assert.match(warnings[0], /asg-gone is already gone/);
    });

    describe("ESS never chooses a victim of a fixed pool", () => {
        it("a lowered desired capacity behind our back (console, another tool) makes ESS release no protected member", async () => {
            const group = ctx.emu.addScalingGroup({ maxSize: 1, desiredCapacity: 0 }).scalingGroupId;
            c.autoJoin("general", { pods: ["ReplicaSet"] });
            await setPoolCapacity(inputs(group, 3));
            const before = members(group);
            await call("ess", "ModifyScalingGroup", { ScalingGroupId: group, DesiredCapacity: 1 });
            assert.deepStrictEqual(members(group), before, "every member stays");
        });

        it("a member that appears between the victims' removal and the capacity change is drained through the flow, not released by ESS", async () => {
            const group = joinedGroup(3, { maxSize: 4 });
            let added = "";
            c.autoJoin("general", { pods: ["ReplicaSet", "ReplicaSet"] });
            // As the first victim leaves, ESS launches a member (a health replacement, an out-of-band scale-out) that joins at once.
            const hook = ctx.emu.state.onMemberLeft!;
            ctx.emu.state.onMemberLeft = (id, g, released) => {
                hook(id, g, released);
                if (!added) {
                    const sg = ctx.emu.scalingGroups.get(g)!;
                    added = launchInstance(ctx.emu.state, sg).instanceId;
                }
            };
            await setPoolCapacity(inputs(group, 1));
            assert.ok(added, "a member appeared");
            assert.strictEqual(members(group).length, 1);
            assert.deepStrictEqual(ctx.emu.activitiesOf(group).filter((a) => /desired capacity/.test(a.description)).flatMap((a) => a.destroyedInstances), [], "ESS released nobody itself");
            assert.strictEqual(ctx.emu.scalingGroups.get(group)!.desiredCapacity, 1);
        });

        it("the final capacity never goes below the minimum: a pool at size 0 with minimum 1 keeps one member, drained of nothing", async () => {
            const group = joinedGroup(2);
            await setPoolCapacity(inputs(group, 0, { minSize: 1 }));
            assert.strictEqual(members(group).length, 1);
            const g = ctx.emu.scalingGroups.get(group)!;
            assert.ok(g.desiredCapacity >= 1 && g.maxSize >= 1, `desired ${g.desiredCapacity}, max ${g.maxSize}`);
            assert.ok(c.nodes.size === 1 && !nodeOfInstance(members(group)[0])!.unschedulable, "the member that stays is a schedulable node");
        });

        it("a victim ESS refuses to remove (IncorrectInstanceStatus) fails the shrink; no other node is released and the capacity is not lowered", async () => {
            const group = joinedGroup(3);
            ctx.emu.state.activityDurationMs = 20;
            // Every other member is more expensive to remove, so the victim is this one; ESS has not finished adding it (Pending).
            const [victim, ...others] = members(group);
            nodeOfInstance(victim)!.pods = [];
            ctx.emu.state.scalingInstances.get(victim)!.lifecycleState = "Pending";
            await assert.rejects(setPoolCapacity(inputs(group, 2)), /IncorrectInstanceStatus/);
            assert.deepStrictEqual(members(group), [victim, ...others]);
            assert.strictEqual(ctx.emu.callsOf("ModifyScalingGroup").length, 0);
            assert.ok(others.every((id) => nodeOfInstance(id) && !nodeOfInstance(id)!.unschedulable));
        });

        it("a drain that fails leaves the node cordoned; reverting the size uncordons it (only a node a removal marked)", async () => {
            const group = joinedGroup(3);
            const someoneElses = members(group)[0];
            nodeOfInstance(someoneElses)!.unschedulable = true; // cordoned by an operator: left alone
            nodeOfInstance(someoneElses)!.pods.push("ReplicaSet", "ReplicaSet");
            c.failDrains = 1;
            await assert.rejects(setPoolCapacity(inputs(group, 2)), /step "drain" failed/);
            const cordoned = [...c.nodes.values()].filter((n) => n.removing);
            assert.strictEqual(cordoned.length, 1);
            await setPoolCapacity(inputs(group, 3));
            assert.deepStrictEqual([...c.nodes.values()].filter((n) => n.unschedulable).map((n) => n.instanceId), [someoneElses]);
            assert.strictEqual(members(group).length, 3);
        });

        it("a node an unfinished upgrade drained (its own mark) is not a removal's: PoolCapacity leaves it cordoned, the upgrade's re-run uncordons it", async () => {
            const group = joinedGroup(3);
            const upgrading = nodeOfInstance(members(group)[1])!;
            // The in-place upgrade of this node stopped after its drain (src/upgrade/nodes.ts): its kubelet is about to move.
            await drainNode(c.access, upgrading.name, { timeoutSeconds: 60, force: false, skipWaitSeconds: 0, mark: "upgrading" });
            assert.ok(upgrading.unschedulable && upgrading.upgrading && !upgrading.removing, "an upgrade's mark, not a removal's");
            await setPoolCapacity(inputs(group, 3));
            assert.strictEqual(upgrading.unschedulable, true, "PoolCapacity uncordoned a node in the middle of its upgrade");
            assert.strictEqual(await uncordonNode(c.access, upgrading.name, "removing"), "not-marked");
            assert.strictEqual(await uncordonNode(c.access, upgrading.name, "upgrading"), "uncordoned");
            assert.strictEqual(upgrading.unschedulable, false);
        });

        it("switching a pool to autoscaled lifts the protection: the Cluster Autoscaler's own RemoveInstances works", async () => {
            const group = ctx.emu.addScalingGroup({ maxSize: 1, desiredCapacity: 0 }).scalingGroupId;
            c.autoJoin("general");
            await setPoolCapacity(inputs(group, 2));
            assert.deepStrictEqual(states(group), ["Protected", "Protected"]);
            await poolCapacityProvider.update!("x", { ...inputs(group, 2), readyInstanceIds: [] }, { ...inputs(group, 0), mode: "observe", size: undefined });
            assert.deepStrictEqual(states(group), ["InService", "InService"]);
            const victim = members(group)[1];
            nodeOfInstance(victim)!.unschedulable = true; // the autoscaler drained it
            await call("ess", "RemoveInstances", { ScalingGroupId: group, InstanceId: [victim] });
            assert.deepStrictEqual(members(group).length, 1);
        });
    });

    describe("autoscaled pools, a pool's deletion and a failure of an earlier run", () => {
        it("an update of an autoscaled pool (observe before and after) leaves the protections the user set", async () => {
            const group = joinedGroup(2);
            await call("ess", "SetInstancesProtection", { ScalingGroupId: group, InstanceId: [members(group)[0]], ProtectedFromScaleIn: true });
            await poolCapacityProvider.update!("x", { ...inputs(group, 0), mode: "observe", size: undefined, readyInstanceIds: [] }, { ...inputs(group, 0), mode: "observe", size: undefined, drainTimeoutSeconds: 30 });
            assert.deepStrictEqual(states(group), ["Protected", "InService"]);
        });

        it("deleting a pool: a member that appears while the others drain (an ESS health replacement) is drained and removed too", async () => {
            const group = joinedGroup(2);
            let launched: string | undefined;
            c.onDrain = () => {
                if (launched) return;
                launched = launchInstance(ctx.emu.state, ctx.emu.state.scalingGroups.get(group)!).instanceId;
                c.addNode(launched, { pool: "general", pods: ["ReplicaSet"] });
            };
            await drainPool(inputs(group, 0), { region: REGION, masterInstanceIds: [c.master], commands: commands(), pollIntervalMs: 10 });
            assert.ok(launched);
            assert.deepStrictEqual(members(group), []);
            assert.strictEqual(nodeOfInstance(launched!), undefined);
        });

        it("lowering an autoscaled pool's maximum drains and removes the members above it before ESS sees the lower MaxSize", async () => {
            const group = joinedGroup(3, { minSize: 0, maxSize: 3 });
            c.addNode(ctx.emu.addInstance().instanceId, { pool: "other" }); // where the evicted pods go
            const auto = { ...inputs(group, 0), mode: "observe" as const, size: undefined, minSize: 0 };
            await poolCapacityProvider.update!("x", { ...auto, maxSize: 3, readyInstanceIds: [] }, { ...auto, maxSize: 1 });
            assert.strictEqual(members(group).length, 1);
            assert.strictEqual(ctx.emu.state.scalingGroups.get(group)!.maxSize, 1);
            // afterEach asserts I1: the two that left were drained first.
        });

        it("a scale-out that failed before (no stock, since fixed) does not fail the next run's wait", async () => {
            const group = ctx.emu.addScalingGroup({ maxSize: 5 }).scalingGroupId;
            ctx.emu.failNextActivity(group, { status: "Failed", errorCode: "OperationDenied.NoStock", message: "sold out" });
            ctx.emu.state.launchRetryMs = 0; // ESS tries the launch again (the expected number of instances) at once
            c.autoJoin("general", { readyAfterListings: 3 }); // the next run's wait looks at the activities at least once
            await assert.rejects(setPoolCapacity(inputs(group, 2)), /NoStock/);
            const outs = await setPoolCapacity(inputs(group, 2));
            assert.strictEqual(outs.readyInstanceIds.length, 2);
        });
    });

    function nodeOfInstance(id: string) {
        return [...c.nodes.values()].find((n) => n.instanceId === id);
    }

    describe("the pool label set by the admission service", () => {
        it("counts a Ready member only once its Node carries the pool's label: a Ready Node without it is waited for", async () => {
            const group = ctx.emu.addScalingGroup({ maxSize: 2, desiredCapacity: 2 }).scalingGroupId;
            const [a, b] = members(group);
            c.addNode(a, { pool: "general" });
            c.addNode(b, { pool: "" }); // registered and Ready, not labelled yet
            await assert.rejects(setPoolCapacity(inputs(group, 2, { readyTimeoutSeconds: 0.2 })), (err: Error) => {
                assert.match(err.message, /only 1\/2 nodes Ready/);
                assert.ok(err.message.includes(b) && !err.message.includes(`${a},`), err.message);
                return true;
            });
            c.nodes.get(`node-${b}`)!.pool = "general";
            assert.deepStrictEqual((await setPoolCapacity(inputs(group, 2))).readyInstanceIds, [a, b].sort());
        });

        it("a cluster of old and new nodes: the label a node set itself counts where the service's is absent, never against it", async () => {
            const group = ctx.emu.addScalingGroup({ maxSize: 3, desiredCapacity: 3 }).scalingGroupId;
            const [old, fresh, liar] = members(group);
            c.addNode(old, { pool: "", legacyPool: "general" }); // joined before this version: its own label only
            c.addNode(fresh, { pool: "general" }); // joined through admission: the service's label only
            c.addNode(liar, { pool: "other", legacyPool: "general" }); // claims general itself; the service says other
            await assert.rejects(setPoolCapacity(inputs(group, 3, { readyTimeoutSeconds: 0.2 })), (err: Error) => {
                assert.match(err.message, /only 2\/3 nodes Ready/);
                assert.ok(err.message.includes(liar), err.message);
                return true;
            });
            c.nodes.get(`node-${liar}`)!.pool = "general";
            assert.deepStrictEqual((await setPoolCapacity(inputs(group, 3))).readyInstanceIds, [old, fresh, liar].sort());
        });

        it("state written by the previous provider version runs the new code after one pulumi up (an update, never a replacement)", async () => {
            const group = ctx.emu.addScalingGroup({ maxSize: 2, desiredCapacity: 2 }).scalingGroupId;
            const [old, fresh] = members(group);
            c.addNode(old, { pool: "", legacyPool: "general" });
            c.addNode(fresh, { pool: "general" });
            const olds = { ...inputs(group, 2), providerVersion: "1", readyInstanceIds: [old] };
            const news = { ...inputs(group, 2), providerVersion: POOL_CAPACITY_PROVIDER_VERSION };
            assert.strictEqual(POOL_CAPACITY_PROVIDER_VERSION, "8");
            const diff = await poolCapacityProvider.diff!("x", olds, news);
            assert.deepStrictEqual([diff.changes, diff.replaces ?? []], [true, []]);
            const res = await poolCapacityProvider.update!("x", olds, news);
            assert.deepStrictEqual((res.outs as { readyInstanceIds: string[] }).readyInstanceIds, [old, fresh].sort(), "the node labelled by the service counts");
        });
    });

    it("diff: a size change updates in place; a new scaling group replaces (draining the old one first)", async () => {
        const olds = { ...inputs("asg-1", 2), readyInstanceIds: [] };
        const grow = await poolCapacityProvider.diff!("x", olds, inputs("asg-1", 3));
        assert.deepStrictEqual([grow.changes, grow.replaces], [true, []]);
        const toAutoscaled = await poolCapacityProvider.diff!("x", olds, { ...inputs("asg-1", 2), mode: "observe" });
        assert.deepStrictEqual([toAutoscaled.changes, toAutoscaled.replaces], [true, []], "fixed → autoscaled is an update: no drain of the pool");
        const newCommand = await poolCapacityProvider.diff!("x", olds, { ...inputs("asg-1", 2), commands: { ...commands(), drain: "c-new" } });
        assert.deepStrictEqual([newCommand.changes, newCommand.replaces], [true, []], "a new command id is an update: the pool is not drained");
        const moved = await poolCapacityProvider.diff!("x", olds, inputs("asg-2", 2));
        assert.deepStrictEqual([moved.replaces, moved.deleteBeforeReplace], [["scalingGroupId"], true]);
        const check = await poolCapacityProvider.check!({}, { ...inputs("asg-1", -1) });
        assert.match(check.failures![0].reason, /0\.\.2000/);
    });
});

describe("NodePool (mock graph, dev pools)", () => {
    const CA_HASH = `sha256:${"ab".repeat(32)}`;
    const TOKEN = "abcdef.0123456789abcdef"; // the mocks' BootstrapToken placeholder
    let recorder: Recorder;
    const childOpts = new Map<string, pulumi.ResourceOptions>();

    before(async () => {
        recorder = installMocks({ stack: "node-pool-test" });
        const { NodePool } = await import("../src/components/nodePool");
        const doc = YAML.parse(fs.readFileSync(path.join(__dirname, "..", "stacks", "Pulumi.dev.yaml"), "utf8"));
        // The general pool with a health repair, which the dev stack leaves out.
        doc.config["alicloud-kubeadm:cluster"].nodePools[0].healthRepair = { notReadyTimeout: "15m", maxUnhealthy: 2 };
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

    it("two ESS groups over both vSwitches, BALANCE, oldest configuration then newest removed first, desired capacity ignored", () => {
        assert.deepStrictEqual(groups().map((g) => g.name), ["dev-pool-general-group", "dev-pool-elastic-group"]);
        const [general, elastic] = groups();
        assert.deepStrictEqual([general.inputs.minSize, general.inputs.maxSize, general.inputs.desiredCapacity], [0, 2, 0]);
        assert.deepStrictEqual([elastic.inputs.minSize, elastic.inputs.maxSize, elastic.inputs.desiredCapacity], [0, 10, 0]);
        for (const g of groups()) {
            assert.deepStrictEqual(g.inputs.vswitchIds, ["vsw-h", "vsw-i"]);
            assert.strictEqual(g.inputs.multiAzPolicy, "BALANCE");
            assert.deepStrictEqual(g.inputs.removalPolicies, ["OldestScalingConfiguration", "NewestInstance"], "outdated configuration first, as the removal core's order");
        }
        // protectedInstances too: PoolCapacity protects a fixed pool's members, and a later `pulumi up` must not lift it.
        assert.deepStrictEqual(childOpts.get("dev-pool-general-group")?.ignoreChanges, ["desiredCapacity", "maxSize", "protectedInstances"]);
        // Autoscaled pools too: a lower maximum goes through PoolCapacity, which drains the members above it first.
        assert.deepStrictEqual(childOpts.get("dev-pool-elastic-group")?.ignoreChanges, ["desiredCapacity", "maxSize", "protectedInstances"]);
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
            assert.ok(Buffer.byteLength(c.rawInputs.userData as string) <= USERDATA_BUDGET_BYTES, `${Buffer.byteLength(c.rawInputs.userData as string)} bytes`);
            assert.match(c.rawInputs.userData as string, /^ak_packed=/m, "delivered packed (packUserdata)");
            const script = unpackScript(c.rawInputs.userData as string);
            assert.strictEqual(headerValue(script, "AK_BOOTSTRAP_TOKEN"), TOKEN);
            assert.strictEqual(headerValue(script, "AK_CA_CERT_HASHES"), CA_HASH);
            assert.strictEqual(headerValue(script, "AK_API_ENDPOINT"), "192.168.0.10:6443");
            assert.match(script, /kubeadm join --config/);
        }
    });

    it("autoscaled pool: configuration tags equal the node's labels exactly: the kubelet's (its spec hash among them) and the pool label the service sets (the autoscaler's template reads them)", () => {
        const elastic = configs()[1];
        const script = elastic.rawInputs.userData as string;
        const kubelet = Object.fromEntries(headerValue(script, "AK_NODE_LABELS")!.split(",").map((kv) => kv.split("=") as [string, string]));
        const labelled = { ...kubelet, [POOL_LABEL]: headerValue(script, "AK_POOL_NAME") };
        const { [AUTOSCALED_SPEC_LABEL]: elasticSpec, ...elasticRest } = elastic.inputs.tags as Record<string, string>;
        assert.deepStrictEqual(elasticRest, { workload_type: "cpu", [POOL_LABEL]: "elastic", "alicloud-kubeadm/autoscaled": "true" });
        assert.match(elasticSpec, /^[0-9a-f]{16}$/, "an autoscaled pool's spec hash is a tag and a label of its nodes alike");
        assert.deepStrictEqual(labelled, elastic.inputs.tags);
        assert.ok(Object.keys(kubelet).every((k) => kubeletMaySetLabel(k)), "the kubelet registers only labels it may set");
        assert.ok(!kubeletMaySetLabel(POOL_LABEL), "and not the pool label");
        const general = configs()[0];
        const { [SPEC_TAG]: spec, ...rest } = general.inputs.tags as Record<string, string>;
        assert.deepStrictEqual(rest, { "alicloud-kubeadm/cluster": "dev", [POOL_LABEL]: "general" });
        assert.match(spec, /^[0-9a-f]{16}$/, "a fixed pool's configuration carries its spec hash, for ESS to put on the instances");
        assert.strictEqual(dynamic().find((r) => r.name === "dev-pool-general-capacity")!.inputs.specHash, spec, "PoolCapacity compares the instances' tags with it");
        assert.strictEqual(dynamic().find((r) => r.name === "dev-pool-elastic-capacity")!.inputs.specHash, elasticSpec);
        assert.strictEqual(headerValue(general.rawInputs.userData as string, "AK_NODE_LABELS"), "");
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
        assert.deepStrictEqual(caps.map((c) => c.inputs.healthRepair), [{ notReadyTimeoutSeconds: 900, maxUnhealthy: 2 }, undefined], "the pool's health repair reaches its PoolCapacity");
        const deps = childOpts.get("dev-pool-general-capacity")?.dependsOn as pulumi.Resource[];
        assert.ok(Array.isArray(deps) && deps.length === 2, "capacity waits for the configuration and the token");
    });

    it("the dev pools' attach userdata headers match the reviewed golden (secrets redacted; UPDATE_GOLDEN=1 rewrites it)", () => {
        // The header is what NodePool decides; the static script body below it has its own golden (test/userdata.test.ts).
        const golden = path.join(__dirname, "golden", "attach-node.dev-pools.header.sh");
        const actual = configs().map((c) => {
            const script = redactUserdata(c.rawInputs.userData as string);
            return `# ${c.name}\n${script.slice(0, script.indexOf("\nak_packed="))}\n`;
        }).join("\n");
        assert.ok(!actual.includes(TOKEN) && !actual.includes(CA_HASH.slice(7)));
        if (process.env.UPDATE_GOLDEN === "1") fs.writeFileSync(golden, actual);
        assert.strictEqual(actual, fs.readFileSync(golden, "utf8"), "the dev attach userdata header changed: review the diff, then run with UPDATE_GOLDEN=1");
    });

    it("a pool whose tags ESS would refuse creates no cloud resource", async () => {
        const { NodePool } = await import("../src/components/nodePool");
        const doc = YAML.parse(fs.readFileSync(path.join(__dirname, "..", "stacks", "Pulumi.dev.yaml"), "utf8"));
        const config = parseClusterConfig(doc.config["alicloud-kubeadm:cluster"], doc.config["alicloud:region"]);
        const labels = Object.fromEntries(Array.from({ length: 18 }, (_, i) => [`label-${i}`, "x"]));
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
        assert.deepStrictEqual(scalingConfigurationTags(pool({ size: 1, labels: { a: "1" } }), cloud, none), { ...cloud, a: "1", [POOL_LABEL]: "p" });
        assert.deepStrictEqual(scalingConfigurationTags(pool({ autoscale: { min: 0, max: 3 }, labels: { a: "1" } }), cloud, none),
            { a: "1", [POOL_LABEL]: "p", "alicloud-kubeadm/autoscaled": "true" });
    });

    it("reports tags ESS would refuse: more than 20, or keys starting with aliyun", () => {
        const labels = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`l${i}`, "x"]));
        const seen: string[] = [];
        scalingConfigurationTags(pool({ size: 1, labels }), {}, (path, reason) => seen.push(`${path}: ${reason}`));
        scalingConfigurationTags(pool({ size: 1, labels: { "aliyun.accelerator/nvidia_name": "V100" } }), {}, (path, reason) => seen.push(`${path}: ${reason}`));
        assert.equal(seen.length, 2);
        assert.match(seen[0], /^labels: the scaling configuration would carry 22 tags .*alicloud-kubeadm-spec.* ESS allows at most 20/);
        assert.match(seen[1], /^labels\.aliyun\.accelerator\/nvidia_name: .*refuses tag keys starting with aliyun/);
    });
});
