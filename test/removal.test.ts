import * as assert from "assert";
import { useEmulator } from "./emulator/fixture";
import type { Emulator } from "./emulator";
import { fakeCluster, type FakeCluster } from "./fakeCluster";
import { chooseVictims, removeNode, removeNodes, scaleInPool, RemovalError, CLEARED_USERDATA, type RemovalOptions } from "../src/removal";

const REGION = "cn-hangzhou";

/** Every mutating call after the setup, in order; InvokeCommand is shown with its target and the saved operation it runs. */
function timeline(emu: Emulator, c: FakeCluster): string[] {
    const opOf = Object.fromEntries(Object.entries(c.commands).map(([op, id]) => [id, op]));
    const verb: Record<string, string> = { "list-nodes": "get-nodes", "pod-owners": "get-pods" };
    return emu.mutatingCalls().filter((call) => call.code === "" && call.action !== "CreateCommand").map((call) => {
        if (call.action !== "InvokeCommand") {
            return `${call.action} ${call.params["InstanceId.1"] ?? call.params.InstanceId ?? call.params.DestinationCidrBlock ?? ""}`.trim();
        }
        const op = opOf[call.params.CommandId] ?? "other";
        const who = call.params["InstanceId.1"] === c.master ? "master" : call.params["InstanceId.1"];
        return `InvokeCommand ${who} ${verb[op] ?? op}`;
    });
}

describe("removal core", () => {
    const ctx = useEmulator();
    let c: FakeCluster;
    let warnings: string[];
    let opts: RemovalOptions;
    let table: string;

    beforeEach(async () => {
        c = await fakeCluster(ctx.emu, REGION);
        table = ctx.emu.addRouteTable().routeTableId;
        warnings = [];
        opts = { region: REGION, masterInstanceId: c.master, commands: c.commands, routeTableId: table, pollIntervalMs: 10, warn: (m) => warnings.push(m), log: () => undefined };
    });

    /** An existing instance joined as a node, with userdata and a pod route. */
    function existingNode(): string {
        const id = ctx.emu.addInstance({ userData: Buffer.from("#!/bin/bash\nkubeadm join ...").toString("base64") }).instanceId;
        const node = c.addNode(id, { pods: ["ReplicaSet", "DaemonSet"] });
        ctx.emu.addRouteEntry(table, { destinationCidrBlock: node.podCidr, nextHopId: id });
        return id;
    }

    /** A pool member launched by ESS, joined, with a pod route. */
    function poolNode(groupId: string): string {
        const id = ctx.emu.scalingGroupInstances(groupId).find((i) => ![...c.nodes.values()].some((n) => n.instanceId === i))!;
        const node = c.addNode(id, { pool: "general", pods: ["ReplicaSet"] });
        ctx.emu.addRouteEntry(table, { destinationCidrBlock: node.podCidr, nextHopId: id });
        return id;
    }

    it("existing node (manual or auto): drain → clear userdata → reset → delete Node → delete route", async () => {
        const id = existingNode();
        const report = await removeNode({ instanceId: id, kind: "existing" }, opts);
        assert.deepStrictEqual(timeline(ctx.emu, c), [
            "InvokeCommand master get-nodes",
            "InvokeCommand master drain",
            `ModifyInstanceAttribute ${id}`,
            `InvokeCommand ${id} reset`,
            "InvokeCommand master delete-node",
            "DeleteRouteEntry 172.16.0.0/25",
        ]);
        assert.deepStrictEqual(report.done, ["drain", "clear-userdata", "reset", "delete-node", "delete-route"]);
        assert.strictEqual(Buffer.from(ctx.emu.instances.get(id)!.userData, "base64").toString("utf8"), CLEARED_USERDATA);
        assert.strictEqual(c.nodes.size, 0);
        assert.strictEqual(ctx.emu.routeTables.get(table)!.entries.length, 0);
        assert.ok(ctx.emu.instances.has(id), "an existing instance is never released");
    });

    for (const [essAction, action] of [["release", "RemoveInstances"], ["keep", "DetachInstances"]] as const) {
        it(`scale-out node (${essAction}): drain → reset → delete Node → ${action} → delete route`, async () => {
            const group = ctx.emu.addScalingGroup({ desiredCapacity: 2, minSize: 0 }).scalingGroupId;
            const id = poolNode(group);
            await removeNode({ instanceId: id, kind: "scale-out", scalingGroupId: group, essAction }, opts);
            assert.deepStrictEqual(timeline(ctx.emu, c), [
                "InvokeCommand master get-nodes",
                "InvokeCommand master drain",
                `InvokeCommand ${id} reset`,
                "InvokeCommand master delete-node",
                `${action} ${id}`,
                "DeleteRouteEntry 172.16.0.0/25",
            ]);
            assert.deepStrictEqual(ctx.emu.scalingGroupInstances(group).includes(id), false);
            assert.strictEqual(ctx.emu.instances.has(id), essAction === "keep");
            assert.strictEqual(ctx.emu.scalingGroups.get(group)!.desiredCapacity, 1, "desired capacity decreased");
        });
    }

    it("control-plane member: drain → reset (leaves etcd) → delete Node; no userdata or ESS calls", async () => {
        const id = ctx.emu.addInstance().instanceId;
        c.addNode(id);
        await removeNode({ instanceId: id, kind: "control-plane" }, { ...opts, routeTableId: undefined });
        assert.deepStrictEqual(timeline(ctx.emu, c), [
            "InvokeCommand master get-nodes",
            "InvokeCommand master drain",
            `InvokeCommand ${id} reset`,
            "InvokeCommand master delete-node",
        ]);
    });

    it("a Node deleted meanwhile (stale name from state): drain is skipped and the rest completes", async () => {
        const id = existingNode();
        const stale = [...c.nodes.values()][0].name;
        c.nodes.clear();
        const report = await removeNode({ instanceId: id, kind: "existing", nodeName: stale }, opts);
        assert.deepStrictEqual(report.done, ["clear-userdata", "delete-route"]);
        assert.match(warnings.join("\n"), new RegExp(`drain skipped: Node ${stale} is already deleted`));
    });

    it("a NotReady node is drained without waiting forever for pods its kubelet never confirms", async () => {
        const id = existingNode();
        [...c.nodes.values()][0].ready = false;
        await removeNode({ instanceId: id, kind: "existing" }, opts);
        const drains = () => ctx.emu.callsOf("InvokeCommand").filter((x) => x.params.CommandId === c.commands.drain).map((x) => JSON.parse(x.params.Parameters) as Record<string, string>);
        assert.equal(drains()[0].skipWait, "60");
        const readyId = existingNode();
        await removeNode({ instanceId: readyId, kind: "existing" }, opts);
        assert.equal(drains()[1].skipWait, "0", "Ready nodes keep graceful termination");
    });

    it("a control-plane member that cannot reset leaves etcd through master 0", async () => {
        const id = ctx.emu.addInstance().instanceId;
        c.addNode(c.master, { name: "master-0" });
        c.addNode(id, { name: "master-1" });
        ctx.emu.stopInstance(id);
        const report = await removeNode({ instanceId: id, kind: "control-plane" }, { ...opts, routeTableId: undefined });
        assert.deepStrictEqual(c.log.filter((x) => !x.endsWith("get-nodes")),
            [`${c.master}: drain master-1`, `${c.master}: etcd-member-remove master-1 via master-0`, `${c.master}: delete-node master-1`]);
        assert.deepStrictEqual(report.done, ["drain", "reset", "delete-node"]);
    });

    it("is idempotent: removing again makes no mutating call but the read-only node lookup", async () => {
        const id = existingNode();
        await removeNode({ instanceId: id, kind: "existing" }, opts);
        const before = ctx.emu.calls.length;
        const report = await removeNode({ instanceId: id, kind: "existing" }, opts);
        const again = ctx.emu.calls.slice(before).filter((x) => !/^(Describe|List|Get)/.test(x.action));
        assert.deepStrictEqual(again.map((x) => [x.action, x.params.CommandId]), [["InvokeCommand", c.commands["list-nodes"]]]);
        assert.deepStrictEqual(report.done, []);
        assert.match(warnings.join("\n"), /drain skipped: no Node has provider id/);
        assert.match(warnings.join("\n"), /clear-userdata skipped: userdata already cleared/);
    });

    it("retries throttling and 5xx and completes", async () => {
        const group = ctx.emu.addScalingGroup({ desiredCapacity: 1 }).scalingGroupId;
        const id = poolNode(group);
        ctx.emu.throttle("RemoveInstances", 2);
        ctx.emu.fail5xx("DeleteRouteEntry", 1);
        const report = await removeNode({ instanceId: id, kind: "scale-out", scalingGroupId: group }, opts);
        assert.deepStrictEqual(report.done, ["drain", "reset", "delete-node", "leave-scaling-group", "delete-route"]);
        assert.strictEqual(ctx.emu.callsOf("RemoveInstances").length, 3);
        assert.ok(!ctx.emu.instances.has(id));
    });

    it("agent offline on the node: reset is skipped with a warning, the Kubernetes side and ESS still complete", async () => {
        const group = ctx.emu.addScalingGroup({ desiredCapacity: 1 }).scalingGroupId;
        const id = poolNode(group);
        ctx.emu.setAgentOffline(id);
        const report = await removeNode({ instanceId: id, kind: "scale-out", scalingGroupId: group }, opts);
        assert.deepStrictEqual(report.done, ["drain", "delete-node", "leave-scaling-group", "delete-route"]);
        assert.match(warnings.join("\n"), new RegExp(`${id}: reset skipped: .*ClientNotRunning`));
    });

    it("drain timeout (PodDisruptionBudget): stops with the step and the fix, releases nothing; a re-run resumes", async () => {
        const group = ctx.emu.addScalingGroup({ desiredCapacity: 1 }).scalingGroupId;
        const id = poolNode(group);
        c.failDrains = 1;
        await assert.rejects(removeNode({ instanceId: id, kind: "scale-out", scalingGroupId: group }, opts), (err: unknown) => {
            assert.ok(err instanceof RemovalError);
            assert.strictEqual(err.step, "drain");
            assert.match(err.message, new RegExp(`removing ${id}: step "drain" failed: .*disruption budget`, "s"));
            assert.match(err.message, /fix: a PodDisruptionBudget .* raise drainTimeoutSeconds, or set force: true/);
            assert.match(err.message, /run the same `pulumi up` \/ `pulumi destroy` again to resume/);
            return true;
        });
        assert.deepStrictEqual(timeline(ctx.emu, c), ["InvokeCommand master get-nodes", "InvokeCommand master drain"], "nothing after the failed drain");
        assert.ok(ctx.emu.instances.has(id) && ctx.emu.scalingGroupInstances(group).includes(id), "the undrained node is not released");

        await removeNode({ instanceId: id, kind: "scale-out", scalingGroupId: group }, opts);
        assert.ok(!ctx.emu.instances.has(id));
    });

    it("instance already released: the Kubernetes side and the route are still cleaned up", async () => {
        const id = existingNode();
        ctx.emu.releaseInstance(id);
        const report = await removeNode({ instanceId: id, kind: "existing" }, opts);
        assert.deepStrictEqual(report.done, ["drain", "delete-node", "delete-route"]);
        assert.deepStrictEqual(report.skipped.map((s) => s.step).sort(), ["clear-userdata", "leave-scaling-group", "reset"]);
        assert.strictEqual(c.nodes.size, 0);
    });

    it("an ESS refusal stops before the route step and names the group", async () => {
        const group = ctx.emu.addScalingGroup({ desiredCapacity: 1, minSize: 1 }).scalingGroupId;
        const id = poolNode(group);
        await assert.rejects(removeNode({ instanceId: id, kind: "scale-out", scalingGroupId: group }, opts),
            (err: unknown) => err instanceof RemovalError && err.step === "leave-scaling-group" && /IncorrectCapacity\.MinSize/.test(err.message) && err.message.includes(group));
        assert.strictEqual(ctx.emu.callsOf("DeleteRouteEntry").length, 0);
    });

    it("master unreachable: fails at the first step, touches nothing", async () => {
        const id = existingNode();
        ctx.emu.setAgentOffline(c.master);
        await assert.rejects(removeNode({ instanceId: id, kind: "existing" }, opts), /step "find-node" failed: Cloud Assistant agent on .* is not running/);
        assert.deepStrictEqual(ctx.emu.mutatingCalls().filter((x) => x.action !== "InvokeCommand" && x.action !== "CreateCommand"), []);
    });

    it("removeNodes attempts every node and reports all failures together", async () => {
        const ids = [existingNode(), existingNode(), existingNode()];
        c.failDrains = 1;
        await assert.rejects(removeNodes(ids.map((instanceId) => ({ instanceId, kind: "existing" as const })), { ...opts, concurrency: 1 }),
            /1 of 3 node removal\(s\) failed:\nremoving i-.*step "drain"/);
        assert.strictEqual(c.nodes.size, 1, "the other two were removed");
    });

    it("removeNodes: ESS members leave in batches of 20; a node whose drain failed is not in any batch", async () => {
        const group = ctx.emu.addScalingGroup({ desiredCapacity: 25, maxSize: 25 }).scalingGroupId;
        const ids = ctx.emu.scalingGroupInstances(group);
        ids.forEach((id) => c.addNode(id, { pool: "general" }));
        c.failDrains = 1;
        await assert.rejects(removeNodes(ids.map((instanceId) => ({ instanceId, kind: "scale-out" as const, scalingGroupId: group })), { ...opts, concurrency: 1 }),
            /1 of 25 node removal\(s\) failed/);
        const calls = ctx.emu.callsOf("RemoveInstances").map((x) => Object.keys(x.params).filter((k) => k.startsWith("InstanceId.")).length);
        assert.deepStrictEqual(calls, [20, 4]);
        assert.deepStrictEqual(ctx.emu.scalingGroupInstances(group), [ids[0]], "only the undrained node stays");
    });

    it("scale-in 5 → 2 removes exactly 3: the NotReady node first, then fewest workload pods, then newest", async () => {
        const group = ctx.emu.addScalingGroup({ desiredCapacity: 5 }).scalingGroupId;
        const ids = ctx.emu.scalingGroupInstances(group);
        const pods = [["ReplicaSet", "ReplicaSet"], ["ReplicaSet"], ["ReplicaSet", "ReplicaSet", "ReplicaSet"], ["DaemonSet", "ReplicaSet"], ["ReplicaSet", "ReplicaSet"]];
        ids.forEach((id, i) => {
            c.addNode(id, { pool: "general", pods: pods[i], ready: i !== 2 });
            ctx.emu.state.scalingInstances.get(id)!.creationTime = `2026-12-01T10:0${i}:00Z`;
        });
        const reports = await scaleInPool({ scalingGroupId: group, poolName: "general", targetSize: 2, minSize: 0 }, opts);
        // NotReady: ids[2]; then one workload pod: ids[1] and ids[3] (newest first: ids[3], ids[1]).
        assert.deepStrictEqual(reports.map((r) => r.instanceId).sort(), [ids[1], ids[2], ids[3]].sort());
        assert.deepStrictEqual(ctx.emu.scalingGroupInstances(group).sort(), [ids[0], ids[4]].sort());
        assert.strictEqual(ctx.emu.scalingGroups.get(group)!.desiredCapacity, 2);
        // the victim's readiness travels with its name: the NotReady node is drained without waiting for its pods
        const drains = ctx.emu.callsOf("InvokeCommand").filter((x) => x.params.CommandId === c.commands.drain).map((x) => JSON.parse(x.params.Parameters) as Record<string, string>);
        assert.deepStrictEqual(Object.fromEntries(drains.map((d) => [d.node, d.skipWait])),
            { [`node-${ids[1]}`]: "0", [`node-${ids[2]}`]: "60", [`node-${ids[3]}`]: "0" });
    });

    it("scale-in never goes below the pool minimum", async () => {
        const group = ctx.emu.addScalingGroup({ desiredCapacity: 5 }).scalingGroupId;
        ctx.emu.scalingGroupInstances(group).forEach((id) => c.addNode(id, { pool: "general" }));
        const reports = await scaleInPool({ scalingGroupId: group, poolName: "general", targetSize: 1, minSize: 3 }, opts);
        assert.strictEqual(reports.length, 2);
        assert.strictEqual(ctx.emu.scalingGroupInstances(group).length, 3);
        assert.deepStrictEqual(await scaleInPool({ scalingGroupId: group, poolName: "general", targetSize: 3, minSize: 0 }, opts), []);
    });

    it("chooseVictims orders NotReady / Node-less, then workload pods, then newest", () => {
        const m = (instanceId: string, ready: boolean, workloadPods: number, createdAt: string, nodeName: string | null = instanceId) => ({ instanceId, nodeName, ready, workloadPods, createdAt });
        const members = [m("a", true, 0, "2026-01-01"), m("b", true, 0, "2026-01-03"), m("c", false, 9, "2026-01-01"), m("d", true, 5, "2026-01-02"), m("e", true, 0, "2026-01-02", null)];
        assert.deepStrictEqual(chooseVictims(members, 4).map((v) => v.instanceId), ["e", "c", "b", "a"]);
        assert.deepStrictEqual(chooseVictims(members, 0), []);
    });
});
