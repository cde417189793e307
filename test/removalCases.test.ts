/**
 * The removal in the situations a real cluster makes on its own: a Node whose provider id is not
 * `<region>.<instance-id>`, a Ready Node holding a victim's IP, a join still running when an existing node is
 * removed, a machine already stopped or released under a Ready Node, a drain that prints more than Cloud Assistant
 * keeps, a member ESS holds in `Removing` with no activity behind it. World: the emulator and testing/fakeCluster.ts,
 * which records I1 violations (a member leaving ESS with a Node not drained, a machine stopped with workload pods)
 * at the moment they happen; these need the cluster to act on cue, which a real API server does not.
 */
import * as assert from "assert";
import { useEmulator, call } from "../testing/emulator/fixture";
import { fakeCluster, type FakeCluster } from "../testing/fakeCluster";
import { createCommand } from "../testing/savedCommands";
import type { CommandReply } from "../testing/emulator";
import { removeNode, removeNodes, scaleInPool, RemovalError, type RemovalOptions } from "../src/removal";
import { resetPacer } from "../src/cloud/pacer";

const REGION = "cn-hangzhou";

describe("removal: the situations a real cluster makes", () => {
    const ctx = useEmulator();
    let c: FakeCluster;
    let warnings: string[];
    let logs: string[];
    let opts: RemovalOptions;
    beforeEach(async () => {
        c = await fakeCluster(ctx.emu, REGION);
        warnings = [];
        logs = [];
        opts = { region: REGION, masterInstanceIds: c.masters, commands: c.commands, pollIntervalMs: 10, warn: (m) => warnings.push(m), log: (m) => logs.push(m) };
        c.addNode(ctx.emu.addInstance().instanceId, { pool: "other" }); // where evicted pods go
    });
    afterEach(() => assert.deepStrictEqual(c.violations, [], "I1: no member left ESS, and no machine was stopped, with a Node that was not drained"));
    const nodeOf = (id: string) => [...c.nodes.values()].find((n) => n.instanceId === id);

    describe("a Node whose provider id is not <region>.<instance-id> is still the instance's Node", () => {
        for (const [what, providerId] of [["empty (matched by its IP)", () => ""], ["with an alicloud:// prefix", (id: string) => `alicloud://${REGION}.${id}`],
            ["of another region", (id: string) => `cn-beijing.${id}`]] as const) {
            it(`${what}: the member is drained before it leaves ESS, not stopped with its pods`, async () => {
                const group = ctx.emu.addScalingGroup({ desiredCapacity: 2, maxSize: 2 }).scalingGroupId;
                const [odd, plain] = ctx.emu.scalingGroupInstances(group);
                c.addNode(odd, { pool: "general", pods: ["ReplicaSet", "ReplicaSet"], providerId: providerId(odd) });
                c.addNode(plain, { pool: "general" });
                await removeNode({ instanceId: odd, kind: "scale-out", scalingGroupId: group }, opts);
                assert.deepStrictEqual(ctx.emu.scalingGroupInstances(group), [plain]);
                assert.strictEqual(nodeOf(odd), undefined, "its Node deleted");
                assert.ok(c.log.includes(`${c.master}: drain node-${odd}`), c.log.join("\n"));
                assert.strictEqual(ctx.emu.callsOf("StopInstance").length, 0, "not stopped as if it had no Node");
            });
        }

        it("a pool scale-in does not choose such a member first as if it had no Node", async () => {
            const group = ctx.emu.addScalingGroup({ desiredCapacity: 2, maxSize: 2 }).scalingGroupId;
            const [odd, plain] = ctx.emu.scalingGroupInstances(group);
            c.addNode(odd, { pods: ["ReplicaSet", "ReplicaSet"], providerId: "" });
            c.addNode(plain, { pool: "general" });
            await scaleInPool({ scalingGroupId: group, poolName: "general", targetSize: 1, minSize: 0 }, opts);
            assert.deepStrictEqual(ctx.emu.scalingGroupInstances(group), [odd], "the member with fewer workload pods went");
        });
    });

    it("an instance whose IP a Ready Node holds (its provider id naming another instance) is neither stopped nor released", async () => {
        const group = ctx.emu.addScalingGroup({ desiredCapacity: 1, maxSize: 1 }).scalingGroupId;
        const [victim] = ctx.emu.scalingGroupInstances(group);
        c.addNode("i-elsewhere000000001", { name: "stranger", providerId: `${REGION}.i-elsewhere000000001`, internalIp: ctx.emu.instances.get(victim)!.privateIp, pods: ["ReplicaSet"] });
        await assert.rejects(removeNode({ instanceId: victim, kind: "scale-out", scalingGroupId: group }, opts),
            (err: unknown) => err instanceof RemovalError && /Ready Node stranger .*has its IP/.test(err.message));
        assert.deepStrictEqual(ctx.emu.scalingGroupInstances(group), [victim], "still a member");
        assert.strictEqual(ctx.emu.instances.get(victim)!.status, "Running", "not stopped");
    });

    it("a Ready Node named after another instance that claims a victim's IP does not keep the victim from its release", async () => {
        // A kubelet writes its own status.addresses: only its Node's name is fixed by its credential (NodeRestriction).
        const group = ctx.emu.addScalingGroup({ desiredCapacity: 1, maxSize: 1 }).scalingGroupId;
        const [victim] = ctx.emu.scalingGroupInstances(group);
        c.addNode("i-elsewhere000000002", { name: `${REGION}.i-elsewhere000000002`, providerId: `${REGION}.i-elsewhere000000002`, internalIp: ctx.emu.instances.get(victim)!.privateIp, pods: ["ReplicaSet"] });
        await removeNode({ instanceId: victim, kind: "scale-out", scalingGroupId: group }, opts);
        assert.deepStrictEqual(ctx.emu.scalingGroupInstances(group), [], "released");
        assert.ok(c.nodes.has(`${REGION}.i-elsewhere000000002`), "the other instance's Node is not touched");
        assert.strictEqual(c.nodes.get(`${REGION}.i-elsewhere000000002`)!.unschedulable, false, "nor cordoned");
    });

    it("an existing node removed while its attach still runs: the attach is stopped before the reset, and no Node or credential comes back", async () => {
        const id = ctx.emu.addInstance({ userData: Buffer.from("#!/bin/bash\nattach").toString("base64") }).instanceId;
        const attach = await createCommand(REGION, { commandName: "test-attach", script: "#!/bin/bash\n# test attach: joins after a while\n", parameters: false, timeoutSeconds: 600, description: "attach" });
        // The join would finish (register the Node) only after the removal has ended, unless it was stopped.
        let removalEnded!: () => void;
        const afterRemoval = new Promise<void>((resolve) => { removalEnded = resolve; });
        let attachEnded: Promise<CommandReply> | undefined;
        ctx.emu.onCommand(/# test attach/, (cmd) => (attachEnded = (async (): Promise<CommandReply> => {
            await afterRemoval;
            const record = ctx.emu.state.invocations.get(cmd.invokeId)!.records.find((r) => r.instanceId === cmd.instanceId)!;
            if (record.fixed?.status === "Stopped") return { exitCode: 137 };
            c.addNode(id, { pods: [] });
            return { output: "joined\n" };
        })()));
        await call("ecs", "InvokeCommand", { CommandId: attach, InstanceId: [id] });
        await removeNode({ instanceId: id, kind: "existing", joinCommandId: attach }, opts);
        removalEnded();
        await attachEnded;
        assert.strictEqual(nodeOf(id), undefined, "no Node registered again");
        assert.ok(!c.credentials.has(id), "no kubelet credentials on the machine");
        assert.strictEqual(ctx.emu.callsOf("StopInvocation").length, 1);
        assert.match(warnings.join("\n"), /its join .* was still running: stopped it before the reset/);
    });

    describe("a machine already stopped or released under a Ready Node", () => {
        it("stopped: the drain evicts without waiting for its pods, says why, and the member leaves", async () => {
            const group = ctx.emu.addScalingGroup({ desiredCapacity: 1, maxSize: 1 }).scalingGroupId;
            const [id] = ctx.emu.scalingGroupInstances(group);
            c.addNode(id, { pool: "general", pods: ["ReplicaSet"] });
            ctx.emu.stopInstance(id); // its Node still reads Ready: the node lifecycle controller has not noticed yet
            await removeNode({ instanceId: id, kind: "scale-out", scalingGroupId: group }, opts);
            assert.deepStrictEqual(ctx.emu.scalingGroupInstances(group), []);
            assert.match(logs.join("\n"), new RegExp(`draining ${id} .*its instance is Stopped, so its pods cannot confirm their deletion`));
        });

        it("released: the same, and the steps on the machine are skipped as gone", async () => {
            const id = ctx.emu.addInstance({ userData: Buffer.from("#!/bin/bash\nattach").toString("base64") }).instanceId;
            c.addNode(id, { pods: ["ReplicaSet"] });
            ctx.emu.releaseInstance(id);
            const report = await removeNode({ instanceId: id, kind: "existing" }, opts);
            assert.deepStrictEqual(report.done, ["drain", "delete-node"]);
            assert.strictEqual(nodeOf(id), undefined);
            assert.match(logs.join("\n"), /its instance no longer exists, so its pods cannot confirm their deletion/);
        });
    });

    it("a drain that succeeded but printed more than Cloud Assistant keeps (24 KB) is a success", async () => {
        const id = ctx.emu.addInstance({ userData: Buffer.from("#!/bin/bash\nattach").toString("base64") }).instanceId;
        c.addNode(id, { pods: ["ReplicaSet"] });
        c.drainOutputBytes = 30 * 1024;
        const report = await removeNode({ instanceId: id, kind: "existing" }, opts);
        assert.ok(report.done.includes("drain") && report.done.includes("delete-node"));
        assert.strictEqual(nodeOf(id), undefined);
    });

    it("a member ESS shows Removing with no activity behind it fails as held by ESS, without a RemoveInstances", async () => {
        const group = ctx.emu.addScalingGroup({ desiredCapacity: 2, maxSize: 2 }).scalingGroupId;
        const [held, other] = ctx.emu.scalingGroupInstances(group);
        c.addNode(held, { pool: "general" });
        c.addNode(other, { pool: "general" });
        ctx.emu.state.scalingInstances.get(held)!.lifecycleState = "Removing"; // a lifecycle hook holds it: no activity runs
        await assert.rejects(removeNode({ instanceId: held, kind: "scale-out", scalingGroupId: group }, opts),
            (err: unknown) => err instanceof RemovalError && /Removing in asg-.*no scaling activity in progress.*lifecycle hook/.test(err.message) && /lifecycle action/.test(err.message));
        assert.strictEqual(ctx.emu.callsOf("RemoveInstances").length, 0);
    });

    it("20 pool nodes and 10 existing nodes removed at once under 2 calls/s per action finish in one run: every step retries throttling within a time budget", async function () {
        this.timeout(600_000);
        const table = ctx.emu.addRouteTable().routeTableId;
        const group = ctx.emu.addScalingGroup({ desiredCapacity: 20, maxSize: 20 }).scalingGroupId;
        const pool = ctx.emu.scalingGroupInstances(group);
        const existing = Array.from({ length: 10 }, () => ctx.emu.addInstance({ userData: Buffer.from("#!/bin/bash\nattach").toString("base64") }).instanceId);
        for (const id of [...pool, ...existing]) ctx.emu.addRouteEntry(table, { destinationCidrBlock: c.addNode(id, { pool: pool.includes(id) ? "general" : "", pods: ["ReplicaSet"] }).podCidr, nextHopId: id });
        resetPacer(); // the defaults: 20 calls/s per action, ten times the limit
        ctx.emu.rateLimit(2);
        await removeNodes([...pool.map((instanceId) => ({ instanceId, kind: "scale-out" as const, scalingGroupId: group })), ...existing.map((instanceId) => ({ instanceId, kind: "existing" as const }))],
            { ...opts, routeTableId: table, podCidr: "172.16.0.0/16", pollIntervalMs: 300 });
        assert.ok(ctx.emu.calls.some((x) => x.code === "Throttling.User"), "the limit was met");
        assert.deepStrictEqual(ctx.emu.scalingGroupInstances(group), []);
        assert.ok([...pool, ...existing].every((id) => !nodeOf(id) && !ctx.emu.routeTables.get(table)!.entries.some((e) => e.nextHopId === id)), "no Node, no route left");
        assert.ok(existing.every((id) => !c.credentials.has(id)), "every existing node reset");
    });
});
