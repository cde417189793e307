// World: the OpenAPI emulator (testing/emulator); the Kubernetes double (testing/fakeCluster.ts).
// The fence of a released victim that has no Node (scalingGroup.ts fenceNodeless): its late Node is drained
// before its machine is stopped (B1), each victim is stopped on its own and one whose stop fails is held back
// alone (B2), a stopped victim whose batch does not leave is started again (B2), and ESS's health check does
// not release a stopped victim before the call (B3). Asserted from the emulator's and the fake cluster's
// state: members, instance status, desired capacity, Nodes and their pods, and the fake cluster's violations
// (a member that left ESS undrained; an instance stopped while its Node still had workload pods).
import * as assert from "assert";
import { useEmulator } from "../testing/emulator/fixture";
import { fakeCluster, type FakeCluster } from "../testing/fakeCluster";
import { removeNodes, RemovalError, type RemovalOptions } from "../src/removal";

const REGION = "cn-hangzhou";

describe("removal: the fence of Node-less released victims", () => {
    const ctx = useEmulator();
    let c: FakeCluster;
    let opts: RemovalOptions;

    beforeEach(async () => {
        c = await fakeCluster(ctx.emu, REGION);
        opts = { region: REGION, masterInstanceIds: c.masters, commands: c.commands, pollIntervalMs: 10, warn: () => undefined, log: () => undefined };
    });
    afterEach(() => assert.deepStrictEqual(c.violations, [], "no member left ESS undrained; no machine stopped with workload pods on its Node"));

    const nodeOf = (id: string) => [...c.nodes.values()].find((n) => n.instanceId === id);
    const release = (...ids: string[]) => ids.map((instanceId) => ({ instanceId, kind: "scale-out" as const, scalingGroupId: group }));
    let group = "";

    it("B1: a victim whose Node registers (and takes evicted pods) while another victim drains is drained before its machine is stopped", async () => {
        group = ctx.emu.addScalingGroup({ desiredCapacity: 3, maxSize: 3 }).scalingGroupId;
        const [a, late, survivor] = ctx.emu.scalingGroupInstances(group);
        c.addNode(a, { pool: "general", pods: ["ReplicaSet", "ReplicaSet"] });
        c.addNode(survivor, { pool: "general", pods: ["ReplicaSet", "ReplicaSet", "ReplicaSet", "ReplicaSet"] });
        // `late` registers while a drains, and a's evicted pods land on it (it has the fewest).
        c.onDrain = (name) => { if (name === nodeOf(a)?.name && !nodeOf(late)) c.addNode(late, { pool: "general" }); };
        await removeNodes(release(a, late), opts);
        assert.deepStrictEqual(ctx.emu.scalingGroupInstances(group), [survivor]);
        assert.strictEqual(ctx.emu.scalingGroups.get(group)!.desiredCapacity, 1);
        assert.strictEqual(nodeOf(late), undefined, "its Node was drained, and deleted once it left");
        assert.strictEqual(nodeOf(survivor)!.pods.length, 6, "every pod evicted (none lost with a stopped machine)");
    });

    it("B1: a Node registered between the last listing and the stop is drained on its stopped machine without waiting for its pods", async () => {
        group = ctx.emu.addScalingGroup({ desiredCapacity: 2, maxSize: 2 }).scalingGroupId;
        const [joining, survivor] = ctx.emu.scalingGroupInstances(group);
        c.addNode(survivor, { pool: "general" });
        // The kubelet's registration reaches the API server just as the machine is stopped, with a pod bound to it.
        ctx.emu.afterRequest = (req) => {
            if (req.action === "StopInstance" && req.params.InstanceId === joining && !nodeOf(joining)) c.addNode(joining, { pool: "general", pods: ["ReplicaSet"] });
        };
        await removeNodes(release(joining), { ...opts, drainTimeoutSeconds: 5 });
        assert.deepStrictEqual(ctx.emu.scalingGroupInstances(group), [survivor]);
        assert.strictEqual(nodeOf(joining), undefined);
        assert.deepStrictEqual(nodeOf(survivor)!.pods, ["ReplicaSet"], "its pod was replaced on the survivor");
    });

    it("B2: a victim whose StopInstance is refused is held back alone: the rest of its batch is released, it stays a running member", async () => {
        group = ctx.emu.addScalingGroup({ desiredCapacity: 4, maxSize: 4 }).scalingGroupId;
        const [a, b, locked, survivor] = ctx.emu.scalingGroupInstances(group);
        c.addNode(a, { pool: "general", pods: ["ReplicaSet"] });
        c.addNode(survivor, { pool: "general" });
        ctx.emu.beforeRequest = (req) => req.action === "StopInstance" && req.params.InstanceId === locked
            ? { status: 403, code: "InstanceLockedForSecurity", message: "The specified operation is denied as your instance is locked for security reasons." } : undefined;
        const err = await removeNodes(release(a, b, locked), opts).then(() => undefined, (e: Error) => e);
        assert.match(String(err?.message), new RegExp(`1 of 3 node removal\\(s\\) failed:[\\s\\S]*${locked}[\\s\\S]*could not be stopped[\\s\\S]*InstanceLockedForSecurity`));
        assert.deepStrictEqual(ctx.emu.scalingGroupInstances(group), [locked, survivor], "a and b left; the locked victim stayed");
        assert.strictEqual(ctx.emu.scalingGroups.get(group)!.desiredCapacity, 2);
        assert.strictEqual(ctx.emu.instances.get(locked)!.status, "Running");
        assert.strictEqual(ctx.emu.state.scalingInstances.get(locked)!.lifecycleState, "InService", "not left protected");
        assert.strictEqual(ctx.emu.instances.has(b), false, "b was released");
    });

    it("B2: a victim held back does not stop the group's later batches (22 Node-less victims: batches of 20 and 2)", async () => {
        group = ctx.emu.addScalingGroup({ desiredCapacity: 23, maxSize: 23 }).scalingGroupId;
        const ids = ctx.emu.scalingGroupInstances(group);
        const survivor = ids[22];
        c.addNode(survivor, { pool: "general" });
        const locked = ids[0];
        ctx.emu.beforeRequest = (req) => req.action === "StopInstance" && req.params.InstanceId === locked
            ? { status: 403, code: "InstanceLockedForSecurity", message: "The specified operation is denied as your instance is locked for security reasons." } : undefined;
        await assert.rejects(removeNodes(release(...ids.slice(0, 22)), opts), /1 of 22 node removal\(s\) failed/);
        assert.strictEqual(ctx.emu.callsOf("RemoveInstances").length, 2, "both batches called");
        assert.deepStrictEqual(ctx.emu.scalingGroupInstances(group), [locked, survivor]);
        assert.strictEqual(ctx.emu.scalingGroups.get(group)!.desiredCapacity, 2);
    });

    it("B2: a victim whose instance is already gone when it is stopped counts as stopped: its batch is released", async () => {
        group = ctx.emu.addScalingGroup({ desiredCapacity: 3, maxSize: 3 }).scalingGroupId;
        const [a, gone, survivor] = ctx.emu.scalingGroupInstances(group);
        c.addNode(a, { pool: "general", pods: ["ReplicaSet"] });
        c.addNode(survivor, { pool: "general" });
        // Released by someone else just before the StopInstance reaches ECS (ESS still lists the member).
        ctx.emu.beforeRequest = (req) => { if (req.action === "StopInstance" && req.params.InstanceId === gone) ctx.emu.instances.delete(gone); return undefined; };
        await removeNodes(release(a, gone), opts);
        assert.deepStrictEqual(ctx.emu.scalingGroupInstances(group), [survivor]);
        assert.strictEqual(ctx.emu.scalingGroups.get(group)!.desiredCapacity, 1);
        assert.strictEqual(ctx.emu.instances.has(a), false);
    });

    it("B2: a stopped victim whose batch fails is started again: ESS's health check then has nothing to replace", async () => {
        group = ctx.emu.addScalingGroup({ desiredCapacity: 2, maxSize: 2 }).scalingGroupId;
        const [victim, survivor] = ctx.emu.scalingGroupInstances(group);
        c.addNode(survivor, { pool: "general" });
        ctx.emu.failNextActivity(group, { status: "Failed", errorCode: "OperationFailed", message: "boom" });
        await assert.rejects(removeNodes(release(victim), opts), (e: unknown) => e instanceof RemovalError && e.step === "leave-scaling-group");
        assert.deepStrictEqual(ctx.emu.scalingGroupInstances(group), [victim, survivor]);
        assert.strictEqual(ctx.emu.instances.get(victim)!.status, "Running", "started again");
        assert.strictEqual(ctx.emu.state.scalingInstances.get(victim)!.lifecycleState, "InService");
        assert.strictEqual(ctx.emu.runHealthCheck(group), undefined, "no unhealthy member to release and replace");
        assert.deepStrictEqual(ctx.emu.scalingGroupInstances(group), [victim, survivor]);
    });

    it("B3: ESS's health check while a victim is stopped does not release it before the call: no replacement, desired capacity lowered by the call", async () => {
        group = ctx.emu.addScalingGroup({ desiredCapacity: 3, maxSize: 3 }).scalingGroupId;
        const [a, joining, survivor] = ctx.emu.scalingGroupInstances(group);
        c.addNode(a, { pool: "general", pods: ["ReplicaSet"] });
        c.addNode(survivor, { pool: "general" });
        const instancesBefore = [...ctx.emu.instances.keys()];
        // ESS checks the group's health the moment the victim is stopped.
        ctx.emu.afterRequest = (req) => { if (req.action === "StopInstance" && req.params.InstanceId === joining) ctx.emu.runHealthCheck(group); };
        await removeNodes(release(a, joining), opts);
        assert.deepStrictEqual(ctx.emu.scalingGroupInstances(group), [survivor], "no replacement launched");
        assert.strictEqual(ctx.emu.scalingGroups.get(group)!.desiredCapacity, 1);
        assert.deepStrictEqual([...ctx.emu.instances.keys()].filter((id) => !instancesBefore.includes(id)), [], "no instance created");
        assert.ok(!ctx.emu.activitiesOf(group).some((x) => /unhealthy/.test(x.description)), "no health-check removal");
    });
});
