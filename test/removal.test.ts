// World: the OpenAPI emulator (testing/emulator); the Kubernetes double (testing/fakeCluster.ts).
// The removal core where a test must make the cluster do what a real API server will not on cue: a Node that
// registers while another node drains, a kubelet that registers its Node again, a drain that prints 30 KB or
// fails with a misleading "(NotFound)", a kubeadm reset that leaves its etcd member, an etcd to exec into,
// stopped masters and nodes, agents in DeliveryTimeout. These run on testing/fakeCluster.ts (which records I1
// violations as ESS takes a member out). The ordinary paths — drain with PDBs, evictions, Node deletion and
// existence, timelines, batches, scale-in victims — run against the real API server in
// test/realClusterRemoval.test.ts; every step failing in turn is test/faultMatrix.test.ts.
import * as assert from "assert";
import { call, useEmulator } from "../testing/emulator/fixture";
import type { Emulator } from "../testing/emulator";
import { fakeCluster, type FakeCluster } from "../testing/fakeCluster";
import { operation } from "../testing/savedCommands";
import { chooseVictims, removeNode, removeNodes, scaleInPool, RemovalError, type RemovalOptions } from "../src/removal";

const REGION = "cn-hangzhou";

/** Every mutating call after the setup, in order; InvokeCommand is shown with its target and the saved operation it runs. */
function timeline(emu: Emulator, c: FakeCluster): string[] {
    const opOf = Object.fromEntries(Object.entries(c.commands).map(([op, id]) => [id, op]));
    const verb: Record<string, string> = { "list-nodes": "get-nodes", "pod-owners": "get-pods" };
    return emu.mutatingCalls().filter((call) => call.code === "" && call.action !== "CreateCommand").map((call) => {
        if (call.action !== "InvokeCommand") {
            return `${call.action} ${call.params["InstanceId.1"] ?? call.params.InstanceId ?? call.params["RouteEntries.1.RouteEntryId"] ?? ""}`.trim();
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
    let logs: string[];
    let opts: RemovalOptions;
    let table: string;

    beforeEach(async () => {
        c = await fakeCluster(ctx.emu, REGION);
        table = ctx.emu.addRouteTable().routeTableId;
        warnings = [];
        logs = [];
        opts = { region: REGION, masterInstanceIds: c.masters, commands: c.commands, routeTableId: table, podCidr: "172.16.0.0/16", pollIntervalMs: 10, warn: (m) => warnings.push(m), log: (m) => logs.push(m) };
    });
    afterEach(() => assert.deepStrictEqual(c.violations, [], "I1: no member left ESS with a Node that was not drained"));

    /** An existing instance joined as a node, with userdata and a pod route. */
    function existingNode(): string {
        const id = ctx.emu.addInstance({ userData: Buffer.from("#!/bin/bash\nkubeadm join ...").toString("base64") }).instanceId;
        const node = c.addNode(id, { pods: ["ReplicaSet", "DaemonSet"] });
        ctx.emu.addRouteEntry(table, { destinationCidrBlock: node.podCidr, nextHopId: id });
        return id;
    }

    /** A pool member launched by ESS, joined, with a pod route. */
    function poolNode(groupId: string, pods = ["ReplicaSet"]): string {
        const id = ctx.emu.scalingGroupInstances(groupId).find((i) => ![...c.nodes.values()].some((n) => n.instanceId === i))!;
        const node = c.addNode(id, { pool: "general", pods });
        ctx.emu.addRouteEntry(table, { destinationCidrBlock: node.podCidr, nextHopId: id });
        return id;
    }

    const routesTo = (id: string) => ctx.emu.routeTables.get(table)!.entries.filter((e) => e.nextHopId === id);
    const nodeOf = (id: string) => [...c.nodes.values()].find((n) => n.instanceId === id);



    it("control-plane member: drain → reset (leaves etcd) → delete Node; no userdata or ESS calls", async () => {
        c = await fakeCluster(ctx.emu, REGION, { masters: 3 });
        const id = c.masters[2];
        await removeNode({ instanceId: id, kind: "control-plane" }, { ...opts, masterInstanceIds: c.masters, commands: c.commands, routeTableId: undefined });
        assert.deepStrictEqual(c.log.filter((x) => !x.endsWith("get-nodes")), [`${c.master}: drain master-2`, `${id}: reset`, `${c.master}: etcd-member-remove master-2 via master-1`, `${c.master}: delete-node master-2`]);
        assert.deepStrictEqual([...c.etcd.keys()], ["master-0", "master-1"]);
    });



    it("a control-plane member that cannot reset leaves etcd through another Ready master", async () => {
        c = await fakeCluster(ctx.emu, REGION, { masters: 3 });
        const id = c.masters[1];
        ctx.emu.stopInstance(id);
        const report = await removeNode({ instanceId: id, kind: "control-plane" }, { ...opts, masterInstanceIds: c.masters, commands: c.commands, routeTableId: undefined });
        assert.deepStrictEqual(report.done, ["drain", "leave-etcd", "delete-node"]);
        assert.deepStrictEqual([...c.etcd.keys()], ["master-0", "master-2"]);
        assert.match(c.log.join("\n"), /etcd-member-remove master-1 via master-2/);
    });

    it("a second run of a finished removal changes nothing but resetting the machine again", async () => {
        const id = existingNode();
        await removeNode({ instanceId: id, kind: "existing" }, opts);
        const before = ctx.emu.calls.length;
        const report = await removeNode({ instanceId: id, kind: "existing" }, opts);
        const again = ctx.emu.calls.slice(before).filter((x) => !/^(Describe|List|Get)/.test(x.action));
        // The last listing checks that the machine, which keeps running, did not register its Node again.
        assert.deepStrictEqual(again.map((x) => [x.action, x.params.CommandId]),
            [["InvokeCommand", c.commands["list-nodes"]], ["InvokeCommand", c.commands.reset], ["InvokeCommand", c.commands["list-nodes"]]]);
        assert.deepStrictEqual(report.done, ["reset"]);
        assert.match(warnings.join("\n"), /drain skipped: no Node has provider id/);
        assert.match(warnings.join("\n"), /clear-userdata skipped: userdata already cleared/);
    });







    it("a removal completes with master 0 stopped (3 masters): the Kubernetes side runs on the next master that can run commands", async () => {
        c = await fakeCluster(ctx.emu, REGION, { masters: 3 });
        const id = existingNode();
        ctx.emu.stopInstance(c.master);
        const report = await removeNode({ instanceId: id, kind: "existing" }, { ...opts, masterInstanceIds: c.masters, commands: c.commands });
        assert.deepStrictEqual(report.done, ["drain", "clear-userdata", "reset", "delete-node", "delete-route"]);
        assert.strictEqual(nodeOf(id), undefined);
        const onMaster1 = c.log.filter((x) => x.startsWith(`${c.masters[1]}:`)).map((x) => x.split(": ")[1].split(" ")[0]);
        // The last listing checks that the machine, which keeps running, did not register its Node again.
        assert.deepStrictEqual(onMaster1, ["get-nodes", "drain", "delete-node", "get-nodes"]);
        assert.ok(!c.log.some((x) => x.startsWith(`${c.master}:`)), "master 0 ran nothing");
        assert.strictEqual(ctx.emu.callsOf("InvokeCommand").filter((x) => x.params["InstanceId.1"] === c.master).length, 1, "master 0 was tried once, then the run kept to master 1");
    });


    it("chooseVictims orders NotReady / Node-less, then a node an unfinished removal cordoned, then workload pods, then newest", () => {
        const m = (instanceId: string, ready: boolean, workloadPods: number, createdAt: string, nodeName: string | null = instanceId, marked = false) => ({ instanceId, nodeName, ready, workloadPods, createdAt, marked });
        const members = [m("a", true, 0, "2026-01-01"), m("b", true, 0, "2026-01-03"), m("c", false, 9, "2026-01-01"), m("d", true, 5, "2026-01-02"), m("e", true, 0, "2026-01-02", null), m("f", true, 7, "2026-01-01", "f", true)];
        assert.deepStrictEqual(chooseVictims(members, 5).map((v) => v.instanceId), ["e", "c", "f", "b", "a"]);
        assert.deepStrictEqual(chooseVictims(members, 0), []);
    });

    it("chooseVictims puts outdated before current, then NotReady; with notReadyFirst, NotReady before Ready whatever the spec, then outdated", () => {
        const m = (instanceId: string, ready: boolean, outdated: boolean) => ({ instanceId, nodeName: instanceId, ready, workloadPods: 0, createdAt: "2026-01-01", outdated });
        const members = [m("ready-current", true, false), m("ready-outdated", true, true), m("notready-current", false, false), m("notready-outdated", false, true)];
        assert.deepStrictEqual(chooseVictims(members, 4).map((v) => v.instanceId), ["notready-outdated", "ready-outdated", "notready-current", "ready-current"]);
        assert.deepStrictEqual(chooseVictims(members, 4, true).map((v) => v.instanceId), ["notready-outdated", "notready-current", "ready-outdated", "ready-current"]);
    });

    describe("races while nodes leave, one test each", () => {
        it("a victim with no Node that registers while the others drain is drained before it leaves ESS", async () => {
            const group = ctx.emu.addScalingGroup({ desiredCapacity: 3, maxSize: 3 }).scalingGroupId;
            const [a, b, survivor] = ctx.emu.scalingGroupInstances(group);
            c.addNode(a, { pool: "general", pods: ["ReplicaSet", "ReplicaSet"] });
            c.addNode(survivor, { pool: "general", pods: ["ReplicaSet", "ReplicaSet", "ReplicaSet", "ReplicaSet"] });
            // b is still joining: it registers while a drains, and a's evicted pods land on it (it has the fewest).
            c.onDrain = (name) => { if (name === nodeOf(a)?.name && !nodeOf(b)) c.addNode(b, { pool: "general" }); };
            await scaleInPool({ scalingGroupId: group, poolName: "general", targetSize: 1, minSize: 0 }, opts);
            assert.deepStrictEqual(ctx.emu.scalingGroupInstances(group), [survivor]);
            assert.strictEqual(nodeOf(b), undefined, "b's late Node was drained and deleted");
            assert.strictEqual(nodeOf(survivor)!.pods.length, 6, "every evicted pod ended on the survivor");
            assert.match(warnings.join("\n"), new RegExp(`${b}: Node node-${b} appeared after the drain`));
        });

        it("a drain failing with '(NotFound)' in its output while the Node exists stops the removal", async () => {
            const group = ctx.emu.addScalingGroup({ desiredCapacity: 1 }).scalingGroupId;
            const id = poolNode(group);
            const undo = ctx.emu.onCommand(operation("drain"), () => ({ exitCode: 1, output: 'error: unable to drain node: Error from server (NotFound): pods "web-1" not found\ndrain-status=1\n' }));
            await assert.rejects(removeNode({ instanceId: id, kind: "scale-out", scalingGroupId: group }, opts), (err: unknown) => err instanceof RemovalError && err.step === "drain");
            undo();
            assert.ok(ctx.emu.scalingGroupInstances(group).includes(id) && nodeOf(id) && c.credentials.has(id), "nothing was reset, deleted or released");
        });

        it("RemoveInstances refused with IncorrectInstanceStatus fails the step; no capacity change lets ESS release another node", async () => {
            const group = ctx.emu.addScalingGroup({ desiredCapacity: 2, maxSize: 2 }).scalingGroupId;
            const [victim, other] = ctx.emu.scalingGroupInstances(group);
            c.addNode(victim, { pool: "general" });
            c.addNode(other, { pool: "general", pods: ["ReplicaSet"] });
            // ESS refuses to remove a member it has not finished adding (the emulator's IncorrectInstanceStatus).
            ctx.emu.state.scalingInstances.get(victim)!.lifecycleState = "Pending";
            await assert.rejects(removeNode({ instanceId: victim, kind: "scale-out", scalingGroupId: group }, opts),
                (err: unknown) => err instanceof RemovalError && err.step === "leave-scaling-group" && /IncorrectInstanceStatus.*still in .*Pending/s.test(err.message));
            assert.deepStrictEqual(ctx.emu.scalingGroupInstances(group), [victim, other], "both still members");
            assert.strictEqual(ctx.emu.scalingGroups.get(group)!.desiredCapacity, 2, "desired capacity untouched");
            assert.strictEqual(ctx.emu.callsOf("ModifyScalingGroup").length, 0);
            assert.ok(nodeOf(other) && !nodeOf(other)!.unschedulable);
        });

        it("after a failed ESS batch, the group's later members are reported failed (not removed) and stay members", async () => {
            // 22 members: a full batch of 20 goes while the last two still drain; they come after the failure.
            const group = ctx.emu.addScalingGroup({ desiredCapacity: 22, maxSize: 22 }).scalingGroupId;
            const ids = ctx.emu.scalingGroupInstances(group);
            ids.forEach((id) => c.addNode(id, { pool: "general" }));
            ctx.emu.state.activityDurationMs = 30;
            ctx.emu.failNextActivity(group, { status: "Failed", errorCode: "OperationFailed", message: "boom" });
            await assert.rejects(removeNodes(ids.map((instanceId) => ({ instanceId, kind: "scale-out" as const, scalingGroupId: group })), { ...opts, concurrency: 1 }),
                /22 of 22 node removal\(s\) failed:[\s\S]*ended Failed \(OperationFailed\): boom[\s\S]*not attempted: an earlier batch/);
            assert.deepStrictEqual(ctx.emu.scalingGroupInstances(group), ids);
            assert.strictEqual(ctx.emu.callsOf("RemoveInstances").length, 1, "one batch tried");
            assert.deepStrictEqual(logs.filter((l) => / removed \(/.test(l)), [], "no node reported removed");
            assert.strictEqual(ctx.emu.callsOf("DeleteRouteEntries").length, 0);
        });

        it("a drain printing more than Cloud Assistant keeps (24 KB) succeeds", async () => {
            const id = existingNode();
            c.drainOutputBytes = 30 * 1024; // what kubectl printed, were it passed through whole
            // drain.sh prints only the tail of kubectl's output: the handler passes on what the script would print.
            const undo = ctx.emu.onCommand(operation("drain"), (cmd) => {
                const name = cmd.parameters.node;
                const node = c.nodes.get(name)!;
                node.unschedulable = true;
                node.pods = node.pods.filter((k) => k === "DaemonSet");
                return { output: `${"evicting pod default/web-0\n".repeat(1200)}`.slice(-8192) + "drain-status=0\n" };
            });
            await removeNode({ instanceId: id, kind: "existing" }, opts);
            undo();
            assert.strictEqual(nodeOf(id), undefined);
        });

        it("route deletions of two removals at once on one table (the first's route task still running when the second asks) are serialized, batched and retried until gone", async () => {
            // The emulator's time stands until both removals have asked to delete their routes, so the first one's
            // route task (5 s) still runs when the second asks, however slow the machine; then every wait steps it.
            ctx.emu.stopClock();
            ctx.emu.state.routeTaskMs = 5000;
            const clock = ctx.emu.steppedClock(() => ctx.emu.callsOf("DeleteRouteEntries").length < 2);
            const ids = Array.from({ length: 6 }, () => existingNode());
            await Promise.all([
                removeNodes(ids.slice(0, 3).map((instanceId) => ({ instanceId, kind: "existing" as const })), { ...opts, clock }),
                removeNodes(ids.slice(3).map((instanceId) => ({ instanceId, kind: "existing" as const })), { ...opts, clock }),
            ]);
            assert.deepStrictEqual(ctx.emu.routeTables.get(table)!.entries, [], "every route gone, none left Deleting");
            const ok = ctx.emu.callsOf("DeleteRouteEntries").filter((x) => !x.code);
            assert.ok(ok.length <= 2, `one batch call per removal (${ok.length})`);
            assert.ok(ctx.emu.callsOf("DeleteRouteEntries").some((x) => x.code), "the table was busy at least once (a conflict was retried)");
            assert.strictEqual(ctx.emu.callsOf("DeleteRouteEntry").length, 0);
        });

        for (const status of ["Warning", "Failed", "Rejected"] as const) {
            it(`a RemoveInstances activity that ends ${status} fails the members still present; nothing after it runs; a re-run completes`, async () => {
                const group = ctx.emu.addScalingGroup({ desiredCapacity: 2, maxSize: 2 }).scalingGroupId;
                // Two members that never joined leave in one batch (they wait for every drain of the run).
                const [a, b] = ctx.emu.scalingGroupInstances(group);
                for (const [k, id] of [a, b].entries()) ctx.emu.addRouteEntry(table, { destinationCidrBlock: `172.16.${k}.0/25`, nextHopId: id });
                ctx.emu.state.activityDurationMs = 30;
                ctx.emu.failNextActivity(group, { status, keep: [b] });
                await assert.rejects(removeNodes([a, b].map((instanceId) => ({ instanceId, kind: "scale-out" as const, scalingGroupId: group })), opts),
                    (err: Error) => new RegExp(`ended ${status}`).test(err.message));
                assert.strictEqual(ctx.emu.callsOf("RemoveInstances").length, 1);
                const still = ctx.emu.scalingGroupInstances(group);
                assert.deepStrictEqual(still, status === "Warning" ? [b] : [a, b]);
                assert.strictEqual(routesTo(b).length, 1, "the route of a member still there is kept");
                if (status === "Warning") assert.deepStrictEqual(routesTo(a), [], "the member that left has its route deleted");
                await removeNodes(still.map((instanceId) => ({ instanceId, kind: "scale-out" as const, scalingGroupId: group })), opts);
                assert.deepStrictEqual(ctx.emu.scalingGroupInstances(group), []);
                assert.deepStrictEqual(ctx.emu.routeTables.get(table)!.entries, []);
            });
        }

        it("a lost response of an action without ClientToken (DetachInstances) is safe: the retry re-reads and counts the member as gone", async () => {
            const group = ctx.emu.addScalingGroup({ desiredCapacity: 1 }).scalingGroupId;
            const id = poolNode(group);
            ctx.emu.inject("DetachInstances", { status: 503, code: "ServiceUnavailable", message: "lost", times: 1, afterApply: true });
            await removeNode({ instanceId: id, kind: "scale-out", scalingGroupId: group, essAction: "keep" }, opts);
            assert.deepStrictEqual(ctx.emu.scalingGroupInstances(group), []);
            assert.ok(ctx.emu.instances.has(id), "kept");
            assert.ok(ctx.emu.callsOf("DetachInstances").every((x) => x.params.ClientToken === undefined), "DetachInstances has no ClientToken");
            assert.ok(ctx.emu.callsOf("InvokeCommand").every((x) => x.params.ClientToken), "InvokeCommand carries one");
        });
    });

    describe("nodes whose machine keeps running are reset, or the removal fails with the fix", () => {
        for (const [what, arrange] of [
            // A stopped machine's Node turns NotReady (node-monitor-grace-period): its drain does not wait for the pods.
            ["stopped", (id: string) => { ctx.emu.stopInstance(id); nodeOf(id)!.ready = false; }],
            ["agent offline", (id: string) => ctx.emu.setAgentOffline(id, "ClientNotRunning")],
            ["agent reported DeliveryTimeout", (id: string) => { ctx.emu.state.deliveryTimeoutMs = 50; ctx.emu.setAgentOffline(id, "DeliveryTimeout"); }],
        ] as const) {
            it(`${what}: the removal stops at reset with the fix (Node drained, not deleted); with removeWithoutReset it completes and says what is left`, async () => {
                const id = existingNode();
                arrange(id);
                await assert.rejects(removeNode({ instanceId: id, kind: "existing" }, opts), (err: unknown) => {
                    assert.ok(err instanceof RemovalError && err.step === "reset", String(err));
                    assert.match(err.message, /fix: start .* Cloud Assistant agent online.*removeWithoutReset/);
                    assert.doesNotMatch(err.message, /exited with code unknown/);
                    return true;
                });
                assert.ok(nodeOf(id)?.unschedulable && c.credentials.has(id), "drained, not deleted; credentials still on the machine");
                await assert.rejects(removeNode({ instanceId: id, kind: "existing" }, opts), /step "reset" failed/, "a re-run fails the same way, not differently");
                const report = await removeNode({ instanceId: id, kind: "existing" }, { ...opts, removeWithoutReset: true });
                assert.ok(report.done.includes("delete-node"));
                assert.strictEqual(nodeOf(id), undefined);
                assert.match(warnings.join("\n"), /removeWithoutReset is set: its kubelet credentials stay on it/);
            });
        }

        it("a Node deleted by hand: the machine is still reset (its kubelet would register it again)", async () => {
            const id = existingNode();
            c.nodes.delete(nodeOf(id)!.name);
            const report = await removeNode({ instanceId: id, kind: "existing" }, opts);
            assert.ok(report.done.includes("reset"));
            assert.ok(!c.credentials.has(id));
        });

        it("a pool node detached with keep is held to the same rule", async () => {
            const group = ctx.emu.addScalingGroup({ desiredCapacity: 1 }).scalingGroupId;
            const id = poolNode(group);
            ctx.emu.setAgentOffline(id);
            await assert.rejects(removeNode({ instanceId: id, kind: "scale-out", scalingGroupId: group, essAction: "keep" }, opts), /step "reset" failed/);
            assert.deepStrictEqual(ctx.emu.scalingGroupInstances(group), [id], "still a member");
        });

        it("a released pool node that could not be reset keeps its drained Node until it has left ESS (its kubelet would register a deleted one again)", async () => {
            const group = ctx.emu.addScalingGroup({ desiredCapacity: 1 }).scalingGroupId;
            const id = poolNode(group);
            ctx.emu.setAgentOffline(id);
            c.kubeletReregisters = true;
            await removeNode({ instanceId: id, kind: "scale-out", scalingGroupId: group }, opts);
            assert.deepStrictEqual(ctx.emu.scalingGroupInstances(group), []);
            assert.strictEqual(nodeOf(id), undefined, "deleted for good: the instance (and its kubelet) is gone");
            const t = timeline(ctx.emu, c);
            assert.ok(t.indexOf(`RemoveInstances ${id}`) < t.indexOf("InvokeCommand master delete-node"), t.join("\n"));
        });

        it("a Node its kubelet registered again (uncordoned) before the ESS call is drained again first (detach with keep)", async () => {
            const group = ctx.emu.addScalingGroup({ desiredCapacity: 1 }).scalingGroupId;
            const id = poolNode(group, ["ReplicaSet"]);
            // Reset succeeds but the kubelet comes back once (say, a second kubelet unit): the Node reappears after delete-node.
            const undo = ctx.emu.onCommand(operation("delete-node"), (cmd) => {
                const node = c.nodes.get(cmd.parameters.nodes)!;
                c.nodes.set(node.name, { ...node, unschedulable: false, removing: "", pods: ["ReplicaSet"] });
                undo();
                return { output: "deleted" };
            });
            // A detached node (keep) is reset and its Node deleted before it leaves ESS; a released one keeps its Node until then.
            await removeNode({ instanceId: id, kind: "scale-out", scalingGroupId: group, essAction: "keep" }, opts);
            assert.deepStrictEqual(ctx.emu.scalingGroupInstances(group), []);
            assert.match(warnings.join("\n"), /registered again after the reset|appeared after the drain/);
            assert.strictEqual(c.log.filter((x) => x.includes("drain node-")).length, 2);
        });
    });

    describe("resumed runs, refusals, masters and routes: one test each", () => {
        it("a released node that could not be reset, whose run died after RemoveInstances: the re-run finds it gone and deletes its held Node", async () => {
            const group = ctx.emu.addScalingGroup({ desiredCapacity: 1 }).scalingGroupId;
            const id = poolNode(group);
            ctx.emu.setAgentOffline(id);
            // The activity takes 5 s of the emulator's time, which moves only by the removals' own waits.
            ctx.emu.stopClock();
            ctx.emu.state.activityDurationMs = 5000;
            const clocked = { ...opts, clock: ctx.emu.steppedClock() };
            // The activity runs on in ESS; this run cannot see it end (reads refused), so it fails after the call.
            ctx.emu.inject("DescribeScalingActivities", { status: 403, code: "Forbidden.RAM", message: "denied", times: 1 });
            await assert.rejects(removeNode({ instanceId: id, kind: "scale-out", scalingGroupId: group }, clocked), /leave-scaling-group/);
            assert.ok(nodeOf(id), "its Node was held (not reset)");
            // The re-run starts while the member is still being removed (its instance exists, and cannot run commands).
            assert.deepStrictEqual(ctx.emu.scalingGroupInstances(group), [id], "still a member when the re-run starts");
            assert.strictEqual(ctx.emu.state.scalingInstances.get(id)!.lifecycleState, "Removing", "still leaving when the re-run starts");
            await removeNode({ instanceId: id, kind: "scale-out", scalingGroupId: group }, clocked);
            assert.deepStrictEqual(ctx.emu.scalingGroupInstances(group), []);
            assert.strictEqual(nodeOf(id), undefined, "the re-run deletes the held Node of the released instance");
        });

        it("a released victim ESS refuses to take out stays a whole node: not reset, its drained Node kept (a later run uncordons it)", async () => {
            const group = ctx.emu.addScalingGroup({ desiredCapacity: 1, minSize: 1 }).scalingGroupId;
            const id = poolNode(group);
            await assert.rejects(removeNode({ instanceId: id, kind: "scale-out", scalingGroupId: group }, opts), /leave-scaling-group/);
            assert.deepStrictEqual(ctx.emu.scalingGroupInstances(group), [id]);
            assert.ok(c.credentials.has(id), "its kubelet was not reset");
            assert.ok(nodeOf(id)?.unschedulable && nodeOf(id)?.removing, "its Node is kept, drained, cordoned and marked");
        });

        it("a released victim with no Node is stopped before ESS takes it: still joining, it cannot register during the activity", async () => {
            const group = ctx.emu.addScalingGroup({ desiredCapacity: 2 }).scalingGroupId;
            const [joining] = ctx.emu.scalingGroupInstances(group);
            ctx.emu.state.activityDurationMs = 200;
            // Its kubelet registers the Node as soon as the activity starts, if the machine still runs.
            ctx.emu.afterRequest = (req) => {
                if (req.action === "RemoveInstances" && ctx.emu.instances.get(joining)?.status === "Running") c.addNode(joining, { pool: "general", pods: ["ReplicaSet"] });
            };
            await removeNodes([{ instanceId: joining, kind: "scale-out", scalingGroupId: group }], opts);
            assert.deepStrictEqual(ctx.emu.scalingGroupInstances(group).includes(joining), false);
            assert.deepStrictEqual(c.violations, [], "I1");
            assert.strictEqual(nodeOf(joining), undefined, "no Node registered");
        });

        it("a released member attached by hand (not created by ESS) leaves its group still running: it is reset before its held Node goes", async () => {
            const group = ctx.emu.addScalingGroup({ desiredCapacity: 0, maxSize: 2 }).scalingGroupId;
            const id = ctx.emu.addInstance().instanceId;
            await call("ess", "AttachInstances", { ScalingGroupId: group, InstanceId: [id] });
            c.addNode(id, { pool: "general", pods: ["ReplicaSet"] });
            c.kubeletReregisters = true;
            await removeNodes([{ instanceId: id, kind: "scale-out", scalingGroupId: group }], opts);
            assert.ok(!ctx.emu.scalingGroupInstances(group).includes(id) && ctx.emu.instances.get(id)?.status === "Running", "out of the group, still running");
            assert.ok(!c.credentials.has(id), "reset");
            assert.strictEqual(nodeOf(id), undefined, "its Node is gone and did not come back");
        });

        it("removing master 1 with master 0 stopped runs the Kubernetes side on master 2, never on the member leaving", async () => {
            c = await fakeCluster(ctx.emu, REGION, { masters: 3 });
            const id = c.masters[1];
            ctx.emu.stopInstance(c.master);
            await removeNode({ instanceId: id, kind: "control-plane" }, { ...opts, masterInstanceIds: c.masters, commands: c.commands, routeTableId: undefined });
            assert.deepStrictEqual(c.log.filter((x) => x.startsWith(`${id}:`)), [`${id}: reset`], "the leaving member only resets itself");
            assert.deepStrictEqual([...c.etcd.keys()], ["master-0", "master-2"]);
            assert.strictEqual(nodeOf(id), undefined);
        });

        it("only pod routes go with the node: a user's route through it (0.0.0.0/0 to a NAT instance) stays; without a pod CIDR only its Node's podCIDR goes", async () => {
            const id = existingNode();
            ctx.emu.addRouteEntry(table, { destinationCidrBlock: "0.0.0.0/0", nextHopId: id });
            ctx.emu.addRouteEntry(table, { destinationCidrBlock: "10.99.0.0/16", nextHopId: id });
            await removeNode({ instanceId: id, kind: "existing" }, opts);
            assert.deepStrictEqual(routesTo(id).map((e) => e.destinationCidrBlock).sort(), ["0.0.0.0/0", "10.99.0.0/16"]);
            assert.match(warnings.join("\n"), /0\.0\.0\.0\/0, 10\.99\.0\.0\/16 still point at it and lie outside the pod CIDR/);

            const other = existingNode();
            const otherPod = nodeOf(other)!.podCidr;
            ctx.emu.addRouteEntry(table, { destinationCidrBlock: "172.16.200.0/25", nextHopId: other });
            await removeNode({ instanceId: other, kind: "existing" }, { ...opts, podCidr: undefined });
            assert.deepStrictEqual(routesTo(other).map((e) => e.destinationCidrBlock), ["172.16.200.0/25"], `only ${otherPod} (its Node's) was deleted`);
        });

        it("a scale-in without a pod CIDR (state from before) still deletes each victim's route to its Node's podCIDR", async () => {
            const group = ctx.emu.addScalingGroup({ desiredCapacity: 2 }).scalingGroupId;
            const ids = ctx.emu.scalingGroupInstances(group);
            ids.forEach(() => poolNode(group));
            await scaleInPool({ scalingGroupId: group, poolName: "general", targetSize: 1, minSize: 0 }, { ...opts, podCidr: undefined });
            const [victim] = ids.filter((id) => !ctx.emu.scalingGroupInstances(group).includes(id));
            assert.deepStrictEqual(routesTo(victim), []);
            assert.strictEqual(ctx.emu.routeTables.get(table)!.entries.length, 1, "the survivor's route stays");
        });

        it("a member whose Node an earlier, failed drain left cordoned and marked, pods still on it, is drained before it leaves ESS", async () => {
            const group = ctx.emu.addScalingGroup({ desiredCapacity: 1 }).scalingGroupId;
            const id = poolNode(group, ["ReplicaSet", "ReplicaSet"]);
            Object.assign(nodeOf(id)!, { unschedulable: true, removing: "2026-12-01T00:00:00Z" });
            c.addNode(ctx.emu.addInstance().instanceId, { pool: "general" }); // where the pods can go
            // The caller's listing said no Node (e.g. taken before the Node registered): the batch's own read finds it.
            await removeNodes([{ instanceId: id, kind: "scale-out", scalingGroupId: group, nodeName: null }], opts);
            assert.deepStrictEqual(ctx.emu.scalingGroupInstances(group), []);
            // afterEach asserts I1 (no member left ESS with workload pods on its Node).
        });
    });

    describe("etcd membership after kubeadm reset", () => {
        it("a reset that only warns about etcd (exit 0) leaves the member; it is removed through another master", async () => {
            c = await fakeCluster(ctx.emu, REGION, { masters: 3 });
            c.resetLeavesEtcd = true;
            const id = c.masters[2];
            const report = await removeNode({ instanceId: id, kind: "control-plane" }, { ...opts, masterInstanceIds: c.masters, commands: c.commands, routeTableId: undefined });
            assert.deepStrictEqual(report.done, ["drain", "reset", "leave-etcd", "delete-node"]);
            assert.deepStrictEqual([...c.etcd.keys()], ["master-0", "master-1"]);
            assert.match(warnings.join("\n"), /etcd member was still there after the reset/);
        });

        it("a member whose Node was deleted by hand is still found by its peer address", async () => {
            c = await fakeCluster(ctx.emu, REGION, { masters: 3 });
            c.resetLeavesEtcd = true;
            const id = c.masters[2];
            c.nodes.delete("master-2");
            await removeNode({ instanceId: id, kind: "control-plane" }, { ...opts, masterInstanceIds: c.masters, commands: c.commands, routeTableId: undefined });
            assert.deepStrictEqual([...c.etcd.keys()], ["master-0", "master-1"]);
        });
    });
});
