/**
 * A stack deployed with the previous version of a dynamic provider whose create/update/delete changed: Pulumi keeps
 * running the code stored in state until an update stores the new code, so the new version bumps its
 * `providerVersion`. Here the state the previous version wrote goes through one `pulumi up` (diff → update with
 * the new code and the new saved commands), and the resource's delete then runs the new code against that state.
 * World: the emulator and testing/fakeCluster.ts; I1–I3 are read from their state.
 */
import * as assert from "assert";
import { useEmulator, call } from "../testing/emulator/fixture";
import { fakeCluster, type FakeCluster } from "../testing/fakeCluster";
import { createCommand } from "../testing/savedCommands";
import { engineUpdate } from "../testing/partialUpdate";
import { CONTROL_PLANE_MEMBER_PROVIDER_VERSION, controlPlaneMemberProvider } from "../src/providers/controlPlaneMember";
import { NODE_MEMBERSHIP_PROVIDER_VERSION, nodeMembershipProvider } from "../src/providers/nodeMembership";
import { POOL_CAPACITY_PROVIDER_VERSION, poolCapacityProvider } from "../src/providers/poolCapacity";
import { CONTROL_PLANE_VERSION_PROVIDER_VERSION, controlPlaneVersionProvider, type ControlPlaneVersionInputs } from "../src/providers/controlPlaneVersion";
import { renderUpgradeCommand } from "../src/shell/render";
import { AUTOSCALED_SPEC_LABEL, DEFAULT_ROLLOUT, OPERATIONS, OUTDATED_TAINT, SPEC_TAG, type NodeCommandIds } from "../src/rules";

const REGION = "cn-hangzhou";

/** The delete-node command as the previous version saved it: one Node per call, parameter `node`. */
const PREVIOUS_DELETE_NODE = "#!/bin/bash\n# alicloud-kubeadm operation: delete-node (delete a Node object), rendered by src/shell/render.ts. Parameters:\n" +
    "readonly AK_NODE='{{node}}'\nkubectl delete node \"$AK_NODE\" --ignore-not-found --wait=false\n";

describe("providers whose behaviour changed: state from the previous version runs the new code after one pulumi up", () => {
    const ctx = useEmulator();
    let c: FakeCluster;
    /** The saved commands the previous version's state names (delete-node as it was then). */
    let previousCommands: NodeCommandIds;
    beforeEach(async () => {
        c = await fakeCluster(ctx.emu, REGION);
        const deleteNode = await createCommand(REGION, { commandName: "test-delete-node-v1", script: PREVIOUS_DELETE_NODE, parameters: true, timeoutSeconds: 120, description: "delete a Node object" });
        // Saved before the rollout's taint existed: no outdated-taint command in the state.
        const { "outdated-taint": _taint, ...before } = c.commands;
        previousCommands = { ...before, "delete-node": deleteNode } as NodeCommandIds;
        c.addNode(ctx.emu.addInstance().instanceId, { pool: "other" }); // where evicted pods go
    });
    afterEach(() => assert.deepStrictEqual(c.violations, [], "I1"));
    const nodeOf = (id: string) => [...c.nodes.values()].find((n) => n.instanceId === id);

    // Every version a stack may still hold: 1 (nodes label their pool themselves), 2 (the admission service sets the
    // pool label), 3 (capacity changes that never let ESS choose), 4 (outdated members replaced by a rollout, no taint),
    // 5 (fixed pools' rollouts only: autoscaled pools with no spec hash), 6 (autoscaled rollouts whose removals lower the
    // desired capacity), 7 (an autoscaled rollout resumed with the size read from the pool, no record in the state), each
    // going straight to the current one in one `pulumi up` (7 with the spec hash and a rollout too, below, a fixed pool and
    // an autoscaled one; 6's and 7's paused autoscaled rollouts in test/poolRotationAutoscaled.test.ts).
    const previousPoolCapacityVersions = Array.from({ length: Number(POOL_CAPACITY_PROVIDER_VERSION) - 1 }, (_, i) => String(i + 1));
    it("PoolCapacity: every previous version is covered below", () => assert.deepStrictEqual(previousPoolCapacityVersions, ["1", "2", "3", "4", "5", "6", "7"]));
    for (const version of previousPoolCapacityVersions) {
        it(`PoolCapacity ${version} → ${POOL_CAPACITY_PROVIDER_VERSION}: an update (not a replacement) stores the new code; its delete then drains the pool with scale-out suspended`, async () => {
            const group = ctx.emu.addScalingGroup({ desiredCapacity: 2, maxSize: 2 }).scalingGroupId;
            const members = ctx.emu.scalingGroupInstances(group);
            // Version 1's nodes carry only the label they set themselves; from version 2 the service's label.
            const [early, late] = members;
            c.addNode(early, version === "1" ? { pool: "", legacyPool: "general", pods: ["ReplicaSet"] } : { pool: "general", pods: ["ReplicaSet"] });
            c.addNode(late, { pool: "general", pods: ["ReplicaSet"] });
            members.forEach((id) => { ctx.emu.state.scalingInstances.get(id)!.lifecycleState = "Protected"; });
            const base = { region: REGION, scalingGroupId: group, poolName: "general", masterInstanceId: c.master, size: 2, pollSeconds: 0.02, readyTimeoutSeconds: 5, pollIntervalMs: 10 };
            const previous = { ...base, commands: previousCommands, providerVersion: version, readyInstanceIds: version === "1" ? [early] : [...members].sort() };
            const news = { ...base, commands: c.commands, providerVersion: POOL_CAPACITY_PROVIDER_VERSION };
            const diff = await poolCapacityProvider.diff!("x", previous, news);
            assert.deepStrictEqual([diff.changes, diff.replaces], [true, []]);
            const updated = await poolCapacityProvider.update!("x", previous, news);
            const state = updated.outs as typeof previous;
            assert.strictEqual(state.providerVersion, POOL_CAPACITY_PROVIDER_VERSION);
            assert.deepStrictEqual(state.readyInstanceIds, [...members].sort(), "both nodes counted, whichever label they carry");
            assert.deepStrictEqual(ctx.emu.scalingGroupInstances(group), members, "I3: the update changed no member");
            await poolCapacityProvider.delete!("x", state);
            assert.deepStrictEqual(ctx.emu.scalingGroupInstances(group), []);
            assert.ok(members.every((id) => !nodeOf(id)), "I2: every Node gone");
            assert.deepStrictEqual(ctx.emu.scalingGroups.get(group)!.suspendedProcesses, ["ScaleOut"], "the new code's delete: scale-out held for the group's deletion");
            assert.ok(ctx.emu.callsOf("InvokeCommand").filter((x) => x.params.CommandId === c.commands["delete-node"]).length > 0, "the new delete-node command");
            assert.strictEqual(ctx.emu.callsOf("InvokeCommand").filter((x) => x.params.CommandId === previousCommands["delete-node"]).length, 0);
        });
    }

    it(`PoolCapacity ${Number(POOL_CAPACITY_PROVIDER_VERSION) - 1} → ${POOL_CAPACITY_PROVIDER_VERSION} with the pool's spec hash and a rollout: one pulumi up replaces the members made before (no spec tag), drained, ending at size`, async () => {
        const group = ctx.emu.addScalingGroup({ desiredCapacity: 2, maxSize: 2 });
        const members = ctx.emu.scalingGroupInstances(group.scalingGroupId);
        members.forEach((id) => { c.addNode(id, { pool: "general", pods: ["ReplicaSet"] }); ctx.emu.state.scalingInstances.get(id)!.lifecycleState = "Protected"; });
        // This version's NodePool tags the configuration (Pulumi's in-place update): ESS tags what it creates from now on.
        const config = ctx.emu.state.scalingConfigurations.get(group.activeScalingConfigurationId)!;
        config.tags = { ...config.tags, [SPEC_TAG]: "00000000000spec2" };
        c.autoJoin("general");
        // The old members' Nodes carry the PreferNoSchedule taint before the first new node launches.
        const taintedAtLaunch: string[][] = [];
        const join = ctx.emu.state.onUserDataRun;
        ctx.emu.state.onUserDataRun = (inst) => {
            if (taintedAtLaunch.length === 0) taintedAtLaunch.push(members.filter((id) => nodeOf(id)?.taints.some((t) => t.key === OUTDATED_TAINT && t.effect === "PreferNoSchedule")));
            join?.(inst);
        };
        const base = { region: REGION, scalingGroupId: group.scalingGroupId, poolName: "general", masterInstanceId: c.master, size: 2, pollSeconds: 0.02, readyTimeoutSeconds: 5, pollIntervalMs: 10 };
        const previous = { ...base, commands: previousCommands, providerVersion: String(Number(POOL_CAPACITY_PROVIDER_VERSION) - 1), readyInstanceIds: [...members].sort() };
        const news = { ...base, commands: c.commands, providerVersion: POOL_CAPACITY_PROVIDER_VERSION, specHash: "00000000000spec2", rollout: { ...DEFAULT_ROLLOUT, soakSeconds: 0 } }; // no soak: the provider waits on the real clock
        const diff = await poolCapacityProvider.diff!("x", previous, news);
        assert.deepStrictEqual([diff.changes, diff.replaces], [true, []], "an update: the pool is not drained by a replacement");
        const state = (await poolCapacityProvider.update!("x", previous, news)).outs as typeof news & { readyInstanceIds: string[] };
        const now = ctx.emu.scalingGroupInstances(group.scalingGroupId);
        assert.strictEqual(now.length, 2);
        assert.ok(now.every((id) => !members.includes(id) && ctx.emu.instances.get(id)!.tags[SPEC_TAG] === "00000000000spec2"), "every member made from the new spec");
        assert.ok(members.every((id) => !nodeOf(id)), "I2: the old members' Nodes gone");
        assert.deepStrictEqual(state.readyInstanceIds, [...now].sort());
        assert.deepStrictEqual(taintedAtLaunch, [members], "the old members tainted before the surge");
        assert.ok([...c.nodes.values()].every((n) => n.taints.length === 0), "no Node keeps the taint");
    });

    it(`PoolCapacity ${Number(POOL_CAPACITY_PROVIDER_VERSION) - 1} → ${POOL_CAPACITY_PROVIDER_VERSION}, an autoscaled pool given a rollout: one pulumi up replaces the members made before (no spec tag), its new nodes held from autoscaler scale-down until the end`, async () => {
        const group = ctx.emu.addScalingGroup({ minSize: 1, maxSize: 4, desiredCapacity: 2 });
        const members = ctx.emu.scalingGroupInstances(group.scalingGroupId);
        members.forEach((id) => c.addNode(id, { pool: "general", pods: ["ReplicaSet"] }));
        // This version's NodePool tags an autoscaled pool's configuration too (AUTOSCALED_SPEC_LABEL, Pulumi's in-place update).
        const config = ctx.emu.state.scalingConfigurations.get(group.activeScalingConfigurationId)!;
        config.tags = { ...config.tags, [AUTOSCALED_SPEC_LABEL]: "00000000000spec2" };
        c.autoJoin("general");
        const heldAtDrain: boolean[] = [];
        c.onDrain = () => heldAtDrain.push([...c.nodes.values()].filter((n) => !n.controlPlane && n.pool === "general" && !members.includes(n.instanceId))
            .every((n) => n.scaleDownDisabled === "true"));
        const base = { region: REGION, scalingGroupId: group.scalingGroupId, poolName: "general", masterInstanceId: c.master, mode: "observe" as const, minSize: 1, maxSize: 4,
            pollSeconds: 0.02, readyTimeoutSeconds: 5, pollIntervalMs: 10 };
        // Version 5 wrote an autoscaled pool's state with no spec hash and no rollout (the config refused one).
        const previous = { ...base, commands: previousCommands, providerVersion: String(Number(POOL_CAPACITY_PROVIDER_VERSION) - 1), readyInstanceIds: [] };
        const news = { ...base, commands: c.commands, providerVersion: POOL_CAPACITY_PROVIDER_VERSION, specHash: "00000000000spec2", rollout: { ...DEFAULT_ROLLOUT, soakSeconds: 0 } };
        const diff = await poolCapacityProvider.diff!("x", previous, news);
        assert.deepStrictEqual([diff.changes, diff.replaces], [true, []], "an update: the pool is not drained by a replacement");
        await poolCapacityProvider.update!("x", previous, news);
        const now = ctx.emu.scalingGroupInstances(group.scalingGroupId);
        assert.strictEqual(now.length, 2);
        assert.ok(now.every((id) => !members.includes(id) && ctx.emu.instances.get(id)!.tags[AUTOSCALED_SPEC_LABEL] === "00000000000spec2"), "every member made from the new spec");
        assert.ok(members.every((id) => !nodeOf(id)), "I2: the old members' Nodes gone");
        assert.deepStrictEqual(heldAtDrain, [true, true], "at each drain, every new node held");
        assert.ok([...c.nodes.values()].every((n) => !n.scaleDownDisabled && n.taints.length === 0), "no Node keeps the annotation or the taint");
    });

    it(`NodeMembership ${Number(NODE_MEMBERSHIP_PROVIDER_VERSION) - 1} → ${NODE_MEMBERSHIP_PROVIDER_VERSION}: an update stores the new code; its delete stops a running attach and leaves no Node behind`, async () => {
        const id = ctx.emu.addInstance({ userData: Buffer.from("#!/bin/bash\nattach").toString("base64") }).instanceId;
        const other = ctx.emu.addInstance().instanceId;
        c.addNode(other, { pods: ["ReplicaSet"] });
        const attach = await createCommand(REGION, { commandName: "test-attach", script: "#!/bin/bash\n# test attach\n", parameters: false, timeoutSeconds: 600, description: "attach" });
        let attachRuns = 0;
        ctx.emu.onCommand(/# test attach/, async () => { attachRuns++; return { output: "joined\n", delayMs: 60_000 }; });
        c.addNode(id, { pods: ["ReplicaSet"] });
        const base = { region: REGION, masterInstanceId: c.master, instanceId: id, mode: "manual" as const, attachCommandId: attach, admission: true, pollSeconds: 0.02, pollIntervalMs: 10 };
        const previous = { ...base, commands: previousCommands, providerVersion: String(Number(NODE_MEMBERSHIP_PROVIDER_VERSION) - 1), nodeName: `node-${id}`, providerId: `${REGION}.${id}` };
        const news = { ...base, commands: c.commands, providerVersion: NODE_MEMBERSHIP_PROVIDER_VERSION };
        const diff = await nodeMembershipProvider.diff!("x", previous, news);
        assert.deepStrictEqual([diff.changes, diff.replaces], [true, []]);
        // Through the engine's model: the outputs cross gRPC as a protobuf Struct (a membership with no spec has no joined spec either).
        let state = previous;
        await engineUpdate(previous, news, (o, n) => nodeMembershipProvider.update!("x", o, n).then((r) => r.outs), (s) => { state = s; });
        assert.strictEqual(state.providerVersion, NODE_MEMBERSHIP_PROVIDER_VERSION);
        await call("ecs", "InvokeCommand", { CommandId: attach, InstanceId: [id] }); // an attach still running (a re-run of a slow join)
        await nodeMembershipProvider.delete!("x", state);
        assert.strictEqual(nodeOf(id), undefined, "I2: no Node");
        assert.ok(!c.credentials.has(id), "I2: no kubelet credentials on the machine");
        assert.strictEqual(ctx.emu.callsOf("StopInvocation").length, 1, "the new code stopped the attach");
        assert.ok(nodeOf(other) && !nodeOf(other)!.unschedulable, "I3: the other node untouched");
        assert.strictEqual(attachRuns, 1);
    });

    it(`NodeMembership 4 → ${NODE_MEMBERSHIP_PROVIDER_VERSION}: state with no spec is adopted unless its labels changed; then, with rollout: replace, an outdated node is replaced in place, drained first`, async () => {
        const attach = await createCommand(REGION, { commandName: "test-attach", script: "#!/bin/bash\n# test attach\nL='{{labels}}' T='{{taints}}' C='{{channel}}'\n", parameters: true, timeoutSeconds: 600, description: "attach" });
        const attached: string[] = [];
        ctx.emu.onCommand(/# test attach/, (cmd) => {
            attached.push(`${cmd.instanceId} ${cmd.parameters.labels}`);
            if (!nodeOf(cmd.instanceId)) c.addNode(cmd.instanceId);
            return { output: "joined\n" };
        });
        const [kept, relabelled] = [ctx.emu.addInstance().instanceId, ctx.emu.addInstance().instanceId];
        for (const id of [kept, relabelled]) c.addNode(id, { pods: ["ReplicaSet"] });
        const base = (id: string) => ({ region: REGION, masterInstanceId: c.master, instanceId: id, mode: "manual" as const, attachCommandId: attach, admission: true, labels: "role=a",
            pollSeconds: 0.02, pollIntervalMs: 10, readyTimeoutSeconds: 5 });
        // Version 4 recorded no spec; this version adds it (and the rollout) to the inputs.
        const previous = (id: string) => ({ ...base(id), commands: previousCommands, providerVersion: "4", nodeName: `node-${id}`, providerId: `${REGION}.${id}` });
        const news = (id: string, labels: string) => ({ ...base(id), labels, commands: c.commands, providerVersion: NODE_MEMBERSHIP_PROVIDER_VERSION, spec: "00000000000spec1", rollout: "report" as const });
        const adopted = (await nodeMembershipProvider.update!("x", previous(kept), news(kept, "role=a"))).outs;
        assert.strictEqual(adopted.joinedSpec, "00000000000spec1", "labels as recorded: joined with today's spec");
        const reported = (await nodeMembershipProvider.update!("x", previous(relabelled), news(relabelled, "role=b"))).outs;
        assert.strictEqual(reported.joinedSpec, "unrecorded", "labels changed since: outdated");
        assert.deepStrictEqual(attached, [], "report: nothing re-attached");
        assert.ok(!c.log.some((l) => /drain|reset/.test(l)), "report: nothing removed");
        const allowed = { ...news(relabelled, "role=b"), rollout: "replace" as const };
        const diff = await nodeMembershipProvider.diff!("x", reported, allowed);
        assert.deepStrictEqual([diff.changes, diff.replaces], [true, []]);
        const state = (await nodeMembershipProvider.update!("x", reported, allowed)).outs;
        assert.strictEqual(state.joinedSpec, "00000000000spec1");
        assert.deepStrictEqual(attached, [`${relabelled} role=b`]);
        assert.ok(c.log.indexOf(`${c.master}: drain node-${relabelled}`) < c.log.indexOf(`${relabelled}: reset`), "drained before its reset");
        assert.ok(nodeOf(relabelled)?.ready && !nodeOf(relabelled)?.unschedulable, "Ready and schedulable again");
        assert.ok(!c.log.some((l) => l.includes(kept)), "the adopted node untouched");
        assert.deepStrictEqual((await nodeMembershipProvider.diff!("x", { ...allowed, ...state }, allowed)).changes, false, "the next pulumi up sees nothing to do");
    });

    it(`NodeMembership 5 → ${NODE_MEMBERSHIP_PROVIDER_VERSION}: a replacement whose attach fails after the removal records it in the state the engine keeps (the new code in it); the next pulumi up attaches the node again though its spec was put back`, async () => {
        const attach = await createCommand(REGION, { commandName: "test-attach", script: "#!/bin/bash\n# test attach\nL='{{labels}}' T='{{taints}}' C='{{channel}}'\n", parameters: true, timeoutSeconds: 600, description: "attach" });
        let fail = true;
        const attached: string[] = [];
        ctx.emu.onCommand(/# test attach/, (cmd) => {
            if (fail) return { exitCode: 1, output: "attach failed\n" };
            attached.push(`${cmd.instanceId} ${cmd.parameters.labels}`);
            if (!nodeOf(cmd.instanceId)) c.addNode(cmd.instanceId);
            return { output: "joined\n" };
        });
        const id = ctx.emu.addInstance().instanceId;
        c.addNode(id, { pods: ["ReplicaSet"] });
        const base = { region: REGION, masterInstanceId: c.master, instanceId: id, mode: "manual" as const, attachCommandId: attach, admission: true, pollSeconds: 0.02, pollIntervalMs: 10,
            readyTimeoutSeconds: 5, rollout: "replace" as const };
        // Version 5's state: the spec it joined with recorded; its code (`__provider`) the old one.
        const previous = { ...base, labels: "role=a", spec: "00000000000spec1", joinedSpec: "00000000000spec1", commands: c.commands, providerVersion: "5",
            nodeName: `node-${id}`, providerId: `${REGION}.${id}`, __provider: "code 5" };
        const news = { ...base, labels: "role=b", spec: "00000000000spec2", commands: c.commands, providerVersion: NODE_MEMBERSHIP_PROVIDER_VERSION, __provider: "code 6" };
        let state: Record<string, unknown> = previous;
        await assert.rejects(engineUpdate(previous, news, (o, n) => nodeMembershipProvider.update!(`${id}/membership`, o, n).then((r) => r.outs), (s) => { state = s; }));
        assert.strictEqual(nodeOf(id), undefined, "removed, its attach failed");
        assert.deepStrictEqual([state.joinedSpec, state.providerVersion, state.__provider], ["removed", NODE_MEMBERSHIP_PROVIDER_VERSION, "code 6"], "the engine keeps the new code and the removal");
        // The spec put back: the next `pulumi up` still attaches it again.
        fail = false;
        const putBack = { ...news, labels: "role=a", spec: "00000000000spec1" };
        const diff = await nodeMembershipProvider.diff!("x", state, putBack);
        assert.deepStrictEqual([diff.changes, diff.replaces], [true, []]);
        state = (await nodeMembershipProvider.update!("x", state, putBack)).outs;
        assert.deepStrictEqual(attached, [`${id} role=a`]);
        assert.ok(nodeOf(id)?.ready && !nodeOf(id)?.unschedulable, "Ready and schedulable again");
        assert.strictEqual(state.joinedSpec, "00000000000spec1");
        assert.deepStrictEqual((await nodeMembershipProvider.diff!("x", state, putBack)).changes, false, "the next pulumi up sees nothing to do");
    });

    it(`ControlPlaneMember ${Number(CONTROL_PLANE_MEMBER_PROVIDER_VERSION) - 1} → ${CONTROL_PLANE_MEMBER_PROVIDER_VERSION}: an update stores the new code; its delete takes the member out of the cluster and etcd`, async () => {
        c = await fakeCluster(ctx.emu, REGION, { masters: 3 });
        previousCommands = { ...c.commands, "delete-node": previousCommands["delete-node"] };
        const member = c.masters[2];
        const base = { region: REGION, masterInstanceId: c.master, masterInstanceIds: c.masters, memberInstanceId: member, joinCommandId: "c-join", pollSeconds: 0.02 };
        const previous = { ...base, commands: previousCommands, providerVersion: String(Number(CONTROL_PLANE_MEMBER_PROVIDER_VERSION) - 1), nodeName: "master-2" };
        const news = { ...base, commands: c.commands, providerVersion: CONTROL_PLANE_MEMBER_PROVIDER_VERSION };
        const diff = await controlPlaneMemberProvider.diff!("x", previous, news);
        assert.deepStrictEqual([diff.changes, diff.replaces], [true, []]);
        const state = (await controlPlaneMemberProvider.update!("x", previous, news)).outs as typeof previous;
        assert.strictEqual(state.providerVersion, CONTROL_PLANE_MEMBER_PROVIDER_VERSION);
        await controlPlaneMemberProvider.delete!("x", state);
        assert.ok(!c.nodes.has("master-2") && !c.etcd.has("master-2"), "I2: no Node, no etcd member");
        assert.deepStrictEqual([...c.etcd.keys()].sort(), ["master-0", "master-1"], "I3: the other members stay");
        assert.ok(ctx.emu.callsOf("InvokeCommand").some((x) => x.params.CommandId === c.commands["delete-node"]), "the new delete-node command");
    });

    it(`ControlPlaneVersion ${Number(CONTROL_PLANE_VERSION_PROVIDER_VERSION) - 1} → ${CONTROL_PLANE_VERSION_PROVIDER_VERSION}: an update stores the new code, which waits for each master's static pods before the next master`, async () => {
        c = await fakeCluster(ctx.emu, REGION, { masters: 2, version: "1.35.4" });
        c.addNode(c.master, { name: "master-0", controlPlane: true });
        // Saved before the static-pods operation existed.
        const { "static-pods": _static, ...before } = c.commands;
        const upgradeCommandId = await createCommand(REGION, {
            commandName: "test-upgrade", script: renderUpgradeCommand({ region: REGION, kubernetesVersion: "1.36.3" }), parameters: true,
            timeoutSeconds: OPERATIONS.upgrade.timeoutSeconds, description: OPERATIONS.upgrade.description,
        });
        const base = { region: REGION, masterInstanceId: c.master, masterInstanceIds: c.masters, pollIntervalMs: 2, autoscaled: false, autoscalerVersion: "", gateTimeoutSeconds: 5, gateIntervalSeconds: 0.005 };
        const previous = { ...base, commands: before as NodeCommandIds, providerVersion: String(Number(CONTROL_PLANE_VERSION_PROVIDER_VERSION) - 1), targetVersion: "1.35.4", upgradeCommandId: "c-upgrade-1.35.4", runningVersion: "1.35.4" };
        const news: ControlPlaneVersionInputs = { ...base, commands: c.commands, providerVersion: CONTROL_PLANE_VERSION_PROVIDER_VERSION, targetVersion: "1.36.3", upgradeCommandId };
        const diff = await controlPlaneVersionProvider.diff!("x", previous, news);
        assert.deepStrictEqual([diff.changes, diff.replaces], [true, []]);
        const state = (await controlPlaneVersionProvider.update!("x", previous, news)).outs as ControlPlaneVersionInputs & { runningVersion: string };
        assert.deepStrictEqual([state.providerVersion, state.runningVersion], [CONTROL_PLANE_VERSION_PROVIDER_VERSION, "1.36.3"]);
        assert.deepStrictEqual(c.upgradeViolations, [], "a master's step while the other's static pods had not restarted");
        assert.deepStrictEqual(c.masters.map((m) => c.versions.get(m)!.apiserver), ["1.36.3", "1.36.3"]);
        assert.ok(ctx.emu.callsOf("InvokeCommand").some((x) => x.params.CommandId === c.commands["static-pods"]), "the new static-pods command");
    });
});
