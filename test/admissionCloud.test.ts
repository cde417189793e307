// World: the admission service's cloud view (src/admission/cloud.ts) against the OpenAPI emulator (signed RPC V1
// requests; ESS lifecycle states, the tags ESS puts on the instances it creates, ECS private IPs and start
// times). Membership is what ESS says now; the calls each join costs are counted from the emulator's record.
import * as assert from "assert";
import { AlibabaCloudView, StaticPools, type PoolSource } from "../src/admission/cloud";
import { POOL_LABEL } from "../src/admission/nodes";
import type { Emulator } from "../testing/emulator";
import { useEmulator } from "../testing/emulator/fixture";

/** Groups whose registrations can change while the view runs (what KubePoolSource reads from the cluster). */
class ChangingPools implements PoolSource {
    refreshes = 0;
    /** Existing nodes registered (an ExistingNode attached later), seen only after a refresh. */
    registeredNodes = new Map<string, string>();
    private readNodes = new Map<string, string>();
    constructor(public current: Map<string, string>) {}
    async groups(): Promise<ReadonlyMap<string, string>> { return this.current; }
    async refresh(): Promise<ReadonlyMap<string, string>> { this.refreshes++; this.readNodes = new Map(this.registeredNodes); return this.current; }
    async nodes(): Promise<ReadonlyMap<string, string>> { return this.readNodes; }
    async refreshNodes(): Promise<ReadonlyMap<string, string>> { await this.refresh(); return this.readNodes; }
}

const count = (emu: Emulator, action: string, since: number) => emu.calls.slice(since).filter((c) => c.action === action).length;

describe("admission cloud view (emulator)", () => {
    const ctx = useEmulator();
    const view = (emu: Emulator, pools: PoolSource, more: { existingNodes?: Record<string, string>; joinTag?: string } = {}) =>
        new AlibabaCloudView({ regionId: "cn-hangzhou", endpoint: emu.endpoint, pools, existingNodes: more.existingNodes ?? {}, joinTag: more.joinTag });

    it("an existing node registered while the service runs (an attached ExistingNode) is found after one re-read; a stranger is not, and a pool member asks no registration", async () => {
        const emu = ctx.emu;
        const group = emu.addScalingGroup({ desiredCapacity: 1 });
        const [member] = emu.scalingGroupInstances(group.scalingGroupId);
        const attached = emu.addInstance({ privateIp: "192.168.7.7" });
        const stranger = emu.addInstance();
        const pools = new ChangingPools(new Map([[group.scalingGroupId, "general"]]));
        const v = view(emu, pools);
        assert.strictEqual(await v.member(attached.instanceId), undefined, "not registered yet");
        pools.registeredNodes.set(attached.instanceId, "batch");
        const found = await v.member(attached.instanceId);
        assert.deepStrictEqual([found?.source, found?.pool, found?.privateIp], ["existing", "batch", "192.168.7.7"]);
        assert.strictEqual(await v.member(stranger.instanceId), undefined);
        const before = pools.refreshes;
        assert.strictEqual((await v.member(member))?.pool, "general");
        assert.strictEqual(pools.refreshes, before, "a pool member is found without reading the registrations again");
    });

    it("finds pool members in a joining state with the cloud's private IP and start time, existing nodes, and nothing else", async () => {
        const emu = ctx.emu;
        const group = emu.addScalingGroup({ desiredCapacity: 2 });
        const other = emu.addScalingGroup({ desiredCapacity: 1 });
        const [a, b] = emu.scalingGroupInstances(group.scalingGroupId);
        const [foreign] = emu.scalingGroupInstances(other.scalingGroupId);
        const existing = emu.addInstance({ privateIp: "192.168.5.5" });
        const stranger = emu.addInstance({ tags: { team: "x" } });
        emu.state.instances.get(a)!.startTime = "2030-01-02T03:04Z";
        const v = view(emu, new StaticPools({ [group.scalingGroupId]: "general" }), { existingNodes: { [existing.instanceId]: "existing" } });
        const m = await v.member(a);
        assert.deepStrictEqual(m, {
            instanceId: a, privateIp: emu.state.instances.get(a)!.privateIp, source: "pool", pool: "general", state: "InService",
            scalingGroupId: group.scalingGroupId, startedAt: Date.parse("2030-01-02T03:04:00Z"),
        });
        assert.strictEqual((await v.member(existing.instanceId))?.privateIp, "192.168.5.5");
        assert.strictEqual(await v.member(foreign), undefined, "a member of another cluster's group");
        assert.strictEqual(await v.member(stranger.instanceId), undefined);
        assert.strictEqual(await v.member("i-nonexistent"), undefined);
        // A member on its way out is no joining node.
        emu.state.scalingInstances.get(b)!.lifecycleState = "Removing";
        assert.strictEqual(await v.member(b), undefined);
        emu.state.scalingInstances.get(b)!.lifecycleState = "Protected";
        assert.strictEqual((await v.member(b))?.state, "Protected");
        // The manual path: instances with the configured tag, only when enabled.
        const tagged = view(emu, new StaticPools({}), { joinTag: "team=x" });
        assert.strictEqual((await tagged.member(stranger.instanceId))?.source, "tag");
    });

    it("costs one DescribeInstances and one DescribeScalingInstances per join whatever the number of pools", async () => {
        const emu = ctx.emu;
        for (const pools of [1, 10, 100]) {
            const groups = Array.from({ length: pools }, () => emu.addScalingGroup({ desiredCapacity: 1 }));
            const last = groups[pools - 1];
            const [member] = emu.scalingGroupInstances(last.scalingGroupId);
            const v = view(emu, new StaticPools(Object.fromEntries(groups.map((g, i) => [g.scalingGroupId, `pool-${i}`]))));
            const since = emu.calls.length;
            const m = await v.member(member);
            assert.strictEqual(m?.pool, `pool-${pools - 1}`);
            assert.deepStrictEqual([count(emu, "DescribeInstances", since), count(emu, "DescribeScalingInstances", since), emu.calls.length - since], [1, 1, 2],
                `${pools} pools`);
            assert.strictEqual(emu.calls.at(-1)!.params.ScalingGroupId, last.scalingGroupId, "the group the instance's ESS tag names is the one asked");
        }
    });

    it("a tag only chooses which group to ask: a stranger tagged with a pool's name is asked about and refused", async () => {
        const emu = ctx.emu;
        const group = emu.addScalingGroup({ desiredCapacity: 1 });
        const liar = emu.addInstance({ tags: { [POOL_LABEL]: "general", "acs:autoscaling:scalingGroupId": group.scalingGroupId } });
        const v = view(emu, new StaticPools({ [group.scalingGroupId]: "general" }));
        const since = emu.calls.length;
        assert.strictEqual(await v.member(liar.instanceId), undefined);
        assert.strictEqual(count(emu, "DescribeScalingInstances", since), 1, "ESS was asked, and said no");
        // An instance with no tag of the cluster costs no ESS call at all.
        const plain = emu.addInstance();
        const before = emu.calls.length;
        assert.strictEqual(await v.member(plain.instanceId), undefined);
        assert.strictEqual(count(emu, "DescribeScalingInstances", before), 0);
    });

    it("routes by the pool tag of the scaling configuration when the ESS tag names no allowed group", async () => {
        const emu = ctx.emu;
        const group = emu.addScalingGroup({ desiredCapacity: 1, configurationTags: { [POOL_LABEL]: "general" } });
        const [member] = emu.scalingGroupInstances(group.scalingGroupId);
        delete emu.state.instances.get(member)!.tags["acs:autoscaling:scalingGroupId"];
        assert.strictEqual(emu.state.instances.get(member)!.tags[POOL_LABEL], "general", "ESS put the configuration's tags on the instance");
        assert.strictEqual((await view(emu, new StaticPools({ [group.scalingGroupId]: "general" })).member(member))?.pool, "general");
    });

    it("concurrent joins share their reads: one DescribeInstances for all, one DescribeScalingInstances per group", async () => {
        const emu = ctx.emu;
        const groups = Array.from({ length: 4 }, () => emu.addScalingGroup({ desiredCapacity: 10, maxSize: 10 }));
        const members = groups.flatMap((g) => emu.scalingGroupInstances(g.scalingGroupId));
        const v = view(emu, new StaticPools(Object.fromEntries(groups.map((g, i) => [g.scalingGroupId, `pool-${i}`]))));
        const since = emu.calls.length;
        const found = await Promise.all(members.map((id) => v.member(id)));
        assert.ok(found.every((m, i) => m?.instanceId === members[i] && m.state === "InService"));
        assert.deepStrictEqual([count(emu, "DescribeInstances", since), count(emu, "DescribeScalingInstances", since)], [1, 4]);
    });

    it("reads the lifecycle state after the join asked: a member leaving meanwhile is refused, never answered from an earlier read", async () => {
        const emu = ctx.emu;
        const group = emu.addScalingGroup({ desiredCapacity: 1 });
        const [member] = emu.scalingGroupInstances(group.scalingGroupId);
        const v = view(emu, new StaticPools({ [group.scalingGroupId]: "general" }));
        assert.strictEqual((await v.member(member))?.state, "InService");
        emu.state.scalingInstances.get(member)!.lifecycleState = "Removing:Wait";
        assert.strictEqual(await v.member(member), undefined);
    });

    it("reads the allowed groups again when an instance names one it does not know: a pool added while it runs", async () => {
        const emu = ctx.emu;
        const first = emu.addScalingGroup({ desiredCapacity: 1 });
        const added = emu.addScalingGroup({ desiredCapacity: 1 });
        const [late] = emu.scalingGroupInstances(added.scalingGroupId);
        const pools = new ChangingPools(new Map([[first.scalingGroupId, "general"]]));
        const v = view(emu, pools);
        assert.strictEqual(await v.member(late), undefined, "not registered yet");
        assert.strictEqual(pools.refreshes, 1, "one re-read for the unknown group");
        pools.current = new Map([[first.scalingGroupId, "general"], [added.scalingGroupId, "elastic"]]);
        assert.strictEqual((await v.member(late))?.pool, "elastic");
    });

    it("retries throttling and 5xx with backoff, through the one signed call", async () => {
        const emu = ctx.emu;
        const group = emu.addScalingGroup({ desiredCapacity: 1 });
        const [member] = emu.scalingGroupInstances(group.scalingGroupId);
        const v = view(emu, new StaticPools({ [group.scalingGroupId]: "general" }));
        emu.throttle("DescribeScalingInstances", 2);
        emu.fail5xx("DescribeInstances", 1);
        assert.strictEqual((await v.member(member))?.state, "InService");
        assert.strictEqual(v.rpc.calls.get("DescribeScalingInstances"), 3);
        assert.strictEqual(v.rpc.calls.get("DescribeInstances"), 2);
    });
});
