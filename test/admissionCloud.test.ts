// The admission service's cloud view against the OpenAPI emulator (signed requests, ESS lifecycle states, ECS
// private IPs and tags): membership is what ESS and the config say now.
import * as assert from "assert";
import { AlibabaCloudView } from "../src/admission/cloud";
import { useEmulator } from "../testing/emulator/fixture";

describe("admission cloud view (emulator)", () => {
    const ctx = useEmulator();

    it("finds pool members in a joining state with the cloud's private IP, existing nodes, and nothing else", async () => {
        const emu = ctx.emu;
        const group = emu.addScalingGroup({ desiredCapacity: 2 });
        const other = emu.addScalingGroup({ desiredCapacity: 1 });
        const [a, b] = emu.scalingGroupInstances(group.scalingGroupId);
        const [foreign] = emu.scalingGroupInstances(other.scalingGroupId);
        const existing = emu.addInstance({ privateIp: "192.168.5.5" });
        const stranger = emu.addInstance({ tags: { team: "x" } });
        const view = new AlibabaCloudView({
            regionId: "cn-hangzhou", endpoint: emu.endpoint, scalingGroups: { [group.scalingGroupId]: "general" }, existingNodes: { [existing.instanceId]: "existing" },
        });
        const m = await view.member(a);
        assert.deepStrictEqual({ ...m, privateIp: undefined }, { instanceId: a, privateIp: undefined, source: "pool", pool: "general", state: "InService" });
        assert.strictEqual(m!.privateIp, emu.state.instances.get(a)!.privateIp);
        assert.strictEqual((await view.member(existing.instanceId))?.privateIp, "192.168.5.5");
        assert.strictEqual(await view.member(foreign), undefined, "a member of another cluster's group");
        assert.strictEqual(await view.member(stranger.instanceId), undefined);
        // A member on its way out is no joining node.
        emu.state.scalingInstances.get(b)!.lifecycleState = "Removing";
        assert.strictEqual(await view.member(b), undefined);
        emu.state.scalingInstances.get(b)!.lifecycleState = "Protected";
        assert.strictEqual((await view.member(b))?.state, "Protected");
        // The manual path: instances with the configured tag, only when enabled.
        const tagged = new AlibabaCloudView({ regionId: "cn-hangzhou", endpoint: emu.endpoint, scalingGroups: {}, existingNodes: {}, joinTag: "team=x" });
        assert.strictEqual((await tagged.member(stranger.instanceId))?.source, "tag");
        assert.ok(emu.calls.every((c) => c.status === 200 || c.action !== "DescribeScalingInstances"));
    });
});
