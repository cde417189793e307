// Where a fixed pool's health repair must hold back (emulator world: ESS, ECS and Cloud Assistant are the emulator;
// the cluster behind the masters is testing/fakeCluster.ts). Each case asserts from state (the group's members, the
// instances, the Nodes) that a member is kept; the repair reads "now" from the masters' clock, which the test sets.
import * as assert from "assert";
import { useEmulator } from "../testing/emulator/fixture";
import { fakeCluster, type FakeCluster } from "../testing/fakeCluster";
import { notReadySince, protectedPool, repairAt } from "../testing/fixedPool";
import type { PoolCapacityInputs } from "../src/providers/poolCapacity";
import { DEFAULT_HEALTH_REPAIR } from "../src";
import { parseNodeLines } from "../src/cloud/operations";
import { planHealthRepair } from "../src/removal";

const REGION = "cn-hangzhou";
const MIN = 60_000;

describe("fixed pool health repair holds back (emulator)", () => {
    const ctx = useEmulator();
    let c: FakeCluster;
    let now: number;
    beforeEach(async () => {
        c = await fakeCluster(ctx.emu, REGION);
        c.autoJoin("general", { pods: ["ReplicaSet"] });
        now = c.masterNow();
    });

    const inputs = (group: string, size: number, name = "general"): PoolCapacityInputs => ({
        region: REGION, scalingGroupId: group, poolName: name, masterInstanceId: c.master, commands: c.commands, size,
        pollSeconds: 0.01, readyTimeoutSeconds: 0.3, pollIntervalMs: 5, healthRepair: DEFAULT_HEALTH_REPAIR,
    });

    it("a member missing since a repair whose refill failed counts against maxUnhealthy: the next run does not take a second member", async () => {
        const group = protectedPool(ctx.emu, c, 3, "general");
        const [a, b] = ctx.emu.scalingGroupInstances(group);
        notReadySince(c, a, now - 60 * MIN);
        ctx.emu.refuseOnce("ModifyScalingGroup", 0); // the refill after the repair fails: the run stops one member short
        await repairAt(c, now, inputs(group, 3)).catch(() => undefined);
        assert.deepStrictEqual([ctx.emu.scalingGroupInstances(group).includes(a), ctx.emu.scalingGroupInstances(group).length], [false, 2], "run 1 removed a, no refill");
        notReadySince(c, b, now - 60 * MIN);
        await repairAt(c, now, inputs(group, 3)).catch(() => undefined);
        assert.ok(ctx.emu.scalingGroupInstances(group).includes(b), "b kept: one member is already missing, maxUnhealthy is 1");
    });

    it("every worker of the cluster not Ready (an outage) does not release a one-node pool's node", async () => {
        const general = protectedPool(ctx.emu, c, 1, "general");
        const other = protectedPool(ctx.emu, c, 3, "other");
        for (const id of [...ctx.emu.scalingGroupInstances(general), ...ctx.emu.scalingGroupInstances(other)]) notReadySince(c, id, now - 60 * MIN);
        // The masters stay Ready (their kubelets reach the API server on their own machine): master 0 without a pool
        // label (kubeadm init), a joined member with alicloud-kubeadm/pool=control-plane, as real ones are.
        c.addNode(c.master, { name: "master-0", controlPlane: true });
        c.addMaster();
        assert.deepStrictEqual([...c.nodes.values()].filter((n) => n.controlPlane && n.ready).map((n) => n.legacyPool ?? ""), ["", "control-plane"], "Ready master Nodes are listed");
        const [only] = ctx.emu.scalingGroupInstances(general);
        await repairAt(c, now, inputs(general, 1)).catch(() => undefined);
        assert.ok(ctx.emu.instances.get(only), "the pool's only node kept while no worker of the cluster is Ready");
    });

    it("a node cordoned by a version upgrade (mark upgrading) is not replaced by health repair", async () => {
        const group = protectedPool(ctx.emu, c, 3, "general");
        const [a] = ctx.emu.scalingGroupInstances(group);
        notReadySince(c, a, now - 60 * MIN);
        const node = c.nodes.get(`node-${a}`)!;
        node.unschedulable = true;
        node.upgrading = new Date(now - 61 * MIN).toISOString();
        await repairAt(c, now, inputs(group, 3)).catch(() => undefined);
        assert.ok(ctx.emu.scalingGroupInstances(group).includes(a), "left to the upgrade that cordoned it");
    });

    it("a member whose Node never posted a Ready condition is replaced once its instance is older than the timeout", async () => {
        const group = protectedPool(ctx.emu, c, 3);
        const [a] = ctx.emu.scalingGroupInstances(group);
        const node = c.nodes.get(`node-${a}`)!;
        node.ready = false;
        node.readySince = undefined; // kubectl prints "" for a Node without a Ready condition
        const created = Date.parse(ctx.emu.state.scalingInstances.get(a)!.creationTime);
        await repairAt(c, created + 5 * MIN, inputs(group, 3)).catch(() => undefined);
        assert.ok(ctx.emu.scalingGroupInstances(group).includes(a), "within the timeout of its creation: kept");
        await repairAt(c, created + 60 * MIN, inputs(group, 3)).catch(() => undefined);
        assert.ok(!ctx.emu.scalingGroupInstances(group).includes(a), "past the timeout of its creation: replaced");
    });

    it("a member listed by the earlier released list-nodes (10 columns, no drain marks) is never replaced", () => {
        const [n] = parseNodeLines(`node-i-a\tcn-hangzhou.i-a\tFalse\ttrue\t\t\t2026-12-01T10:00:00Z\t\tgeneral\t192.168.0.7\n`);
        const members = ["i-a", "i-b", "i-c"].map((id) => ({ instanceId: id, nodeName: `node-${id}`, ready: id !== "i-a", workloadPods: 1, createdAt: "2026-12-01T10:00:00Z",
            readySince: id === "i-a" ? n.readySince : "", heldBy: id === "i-a" ? n.heldBy : "", instance: { privateIp: "", status: "Running" } }));
        const plan = planHealthRepair(members, DEFAULT_HEALTH_REPAIR, Date.parse("2026-12-02T00:00:00Z"), { size: 3, readyWorkers: 2 });
        assert.strictEqual(plan.kind, "wait", "its upgrade or resize marks are not known");
    });
});
