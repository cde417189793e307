/**
 * The emulator's ESS model: asynchronous scaling activities that can fail, members that refuse
 * removal, the removal policy ESS applies on its own, capacity limits; through the real SDK path.
 */
import * as assert from "assert";
import { call, code, describeMap, useEmulator } from "../../testing/emulator/fixture";



interface Activity { ScalingActivityId: string; StatusCode: string; StatusMessage: string; ErrorCode: string; ErrorMessage: string; Progress: number; TotalCapacity: string; DestroyedInstances: { DestroyedInstance: string[] }; CreatedInstances: { CreatedInstance: string[] } }

async function activity(id: unknown): Promise<Activity> {
    const res = await call("ess", "DescribeScalingActivities", { ScalingActivityId: [String(id)] });
    return (res.ScalingActivities as { ScalingActivity: Activity[] }).ScalingActivity[0];
}

const lifecycle = (groupId: string) => describeMap("ess", "DescribeScalingInstances", { ScalingGroupId: groupId, PageSize: 50 }, ["ScalingInstances", "ScalingInstance"], "InstanceId", "LifecycleState");

describe("emulator: ESS scaling activities", () => {
    const fx = useEmulator();

    it("RemoveInstances answers at once; the member leaves (and is released) only when its activity ends", async () => {
        // A minute long, ended by stepping the emulator's clock: the checks in between cannot outlast it.
        fx.emu.state.activityDurationMs = 60_000;
        const g = fx.emu.addScalingGroup({ maxSize: 5, desiredCapacity: 3 });
        const [a, b, c] = fx.emu.scalingGroupInstances(g.scalingGroupId);
        const { ScalingActivityId } = await call("ess", "RemoveInstances", { ScalingGroupId: g.scalingGroupId, InstanceId: [a] });
        const running = await activity(ScalingActivityId);
        assert.deepStrictEqual([running.StatusCode, running.StatusMessage], ["InProgress", ""]);
        assert.ok(running.Progress < 100);
        assert.strictEqual((await lifecycle(g.scalingGroupId))[a], "Removing");
        assert.ok(fx.emu.instances.has(a), "not released before the activity ends");
        assert.strictEqual(await code(call("ess", "RemoveInstances", { ScalingGroupId: g.scalingGroupId, InstanceId: [b] })), "ScalingActivityInProgress");
        assert.strictEqual(await code(call("ess", "DetachInstances", { ScalingGroupId: g.scalingGroupId, InstanceId: [b] })), "ScalingActivityInProgress");
        assert.strictEqual(await code(call("ess", "ScaleWithAdjustment", { ScalingGroupId: g.scalingGroupId, AdjustmentType: "TotalCapacity", AdjustmentValue: 1 })), "ScalingActivityInProgress");
        fx.emu.advance(60_000);
        const ended = await activity(ScalingActivityId);
        assert.deepStrictEqual([ended.StatusCode, ended.Progress, ended.ErrorCode, ended.TotalCapacity, ended.DestroyedInstances.DestroyedInstance], ["Successful", 100, "", "2", [a]]);
        assert.strictEqual(fx.emu.instances.has(a), false);
        assert.deepStrictEqual(fx.emu.scalingGroupInstances(g.scalingGroupId), [b, c]);
        assert.strictEqual(g.desiredCapacity, 2);
    });

    it("a Failed or Rejected activity changes nothing and names its error; DesiredCapacity is given back", async () => {
        const g = fx.emu.addScalingGroup({ maxSize: 5, desiredCapacity: 3 });
        const [a, b] = fx.emu.scalingGroupInstances(g.scalingGroupId);
        fx.emu.failNextActivity(g.scalingGroupId, { status: "Failed", errorCode: "InternalError", message: "The request processing has failed due to some unknown error." });
        const r1 = await call("ess", "RemoveInstances", { ScalingGroupId: g.scalingGroupId, InstanceId: [a] });
        const failed = await activity(r1.ScalingActivityId);
        assert.deepStrictEqual([failed.StatusCode, failed.ErrorCode, failed.ErrorMessage, failed.StatusMessage], ["Failed", "InternalError", "The request processing has failed due to some unknown error.", "The request processing has failed due to some unknown error."]);
        assert.strictEqual((await lifecycle(g.scalingGroupId))[a], "InService");
        assert.ok(fx.emu.instances.has(a));
        assert.strictEqual(g.desiredCapacity, 3);

        fx.emu.failNextActivity(g.scalingGroupId, { status: "Rejected" });
        const r2 = await call("ess", "DetachInstances", { ScalingGroupId: g.scalingGroupId, InstanceId: [b] });
        const rejected = await activity(r2.ScalingActivityId);
        assert.deepStrictEqual([rejected.StatusCode, rejected.ErrorCode], ["Rejected", "OperationDenied"]);
        assert.strictEqual(fx.emu.scalingGroupInstances(g.scalingGroupId).length, 3);

        const r3 = await call("ess", "RemoveInstances", { ScalingGroupId: g.scalingGroupId, InstanceId: [a] });
        assert.strictEqual((await activity(r3.ScalingActivityId)).StatusCode, "Successful", "the fault armed one activity only");
    });

    it("a Warning activity is partly successful: the kept members remain", async () => {
        const g = fx.emu.addScalingGroup({ maxSize: 5, desiredCapacity: 4 });
        const [a, b, c] = fx.emu.scalingGroupInstances(g.scalingGroupId);
        fx.emu.failNextActivity(g.scalingGroupId, { status: "Warning", errorCode: "PartialFailed", message: "1 instance could not be removed.", keep: [b] });
        const { ScalingActivityId } = await call("ess", "RemoveInstances", { ScalingGroupId: g.scalingGroupId, InstanceId: [a, b, c] });
        const act = await activity(ScalingActivityId);
        assert.deepStrictEqual([act.StatusCode, act.ErrorCode, act.DestroyedInstances.DestroyedInstance], ["Warning", "PartialFailed", [a, c]]);
        assert.deepStrictEqual(Object.keys(await lifecycle(g.scalingGroupId)).includes(b), true);
        assert.strictEqual(fx.emu.scalingGroupInstances(g.scalingGroupId).length, 2);
        assert.strictEqual(g.desiredCapacity, 2, "lowered by the two members that left");
    });

    it("a failed scale-out: members are Pending during the activity and released when it fails", async () => {
        fx.emu.state.activityDurationMs = 60_000;
        const g = fx.emu.addScalingGroup({ maxSize: 5, desiredCapacity: 1 });
        fx.emu.failNextActivity(g.scalingGroupId, { status: "Failed", errorCode: "OperationDenied.NoStock", message: "The requested resource is sold out in the specified zone." });
        await call("ess", "ModifyScalingGroup", { ScalingGroupId: g.scalingGroupId, DesiredCapacity: 3 });
        const during = await lifecycle(g.scalingGroupId);
        assert.deepStrictEqual(Object.values(during).sort(), ["InService", "Pending", "Pending"]);
        const pending = Object.keys(during).filter((id) => during[id] === "Pending");
        fx.emu.advance(60_000);
        const list = (await call("ess", "DescribeScalingActivities", { ScalingGroupId: g.scalingGroupId })).ScalingActivities as { ScalingActivity: Activity[] };
        assert.deepStrictEqual(list.ScalingActivity.map((a) => [a.StatusCode, a.ErrorCode]), [["Failed", "OperationDenied.NoStock"]], "ModifyScalingGroup has no ScalingActivityId but its activity is listed");
        assert.strictEqual(fx.emu.scalingGroupInstances(g.scalingGroupId).length, 1);
        assert.ok(pending.every((id) => !fx.emu.instances.has(id)));
    });
});

describe("emulator: ESS members that refuse removal", () => {
    const fx = useEmulator();

    it("a Protected member: RemoveInstances/DetachInstances fail with IncorrectInstanceStatus and remove nothing", async () => {
        const g = fx.emu.addScalingGroup({ maxSize: 5, desiredCapacity: 3 });
        const [a, b] = fx.emu.scalingGroupInstances(g.scalingGroupId);
        await call("ess", "SetInstancesProtection", { ScalingGroupId: g.scalingGroupId, InstanceId: [a], ProtectedFromScaleIn: true });
        assert.strictEqual((await lifecycle(g.scalingGroupId))[a], "Protected");
        const groups = await call("ess", "DescribeScalingGroups", { ScalingGroupId: [g.scalingGroupId] });
        assert.strictEqual((groups.ScalingGroups as { ScalingGroup: { ProtectedCapacity: number }[] }).ScalingGroup[0].ProtectedCapacity, 1);
        assert.strictEqual(await code(call("ess", "RemoveInstances", { ScalingGroupId: g.scalingGroupId, InstanceId: [a, b] })), "IncorrectInstanceStatus");
        assert.strictEqual(await code(call("ess", "DetachInstances", { ScalingGroupId: g.scalingGroupId, InstanceId: [a] })), "IncorrectInstanceStatus");
        assert.strictEqual(fx.emu.scalingGroupInstances(g.scalingGroupId).length, 3, "b was not removed either");
        assert.strictEqual(fx.emu.state.activities.length, 0);
        // IgnoreInvalidInstance skips it and removes the rest.
        await call("ess", "RemoveInstances", { ScalingGroupId: g.scalingGroupId, InstanceId: [a, b], IgnoreInvalidInstance: true });
        assert.deepStrictEqual(fx.emu.scalingGroupInstances(g.scalingGroupId).includes(a), true);
        assert.strictEqual(fx.emu.instances.has(b), false);
        // Unprotected, it can leave.
        await call("ess", "SetInstancesProtection", { ScalingGroupId: g.scalingGroupId, InstanceId: [a], ProtectedFromScaleIn: false });
        await call("ess", "RemoveInstances", { ScalingGroupId: g.scalingGroupId, InstanceId: [a] });
        assert.strictEqual(fx.emu.instances.has(a), false);
        assert.strictEqual(await code(call("ess", "SetInstancesProtection", { ScalingGroupId: g.scalingGroupId, InstanceId: [a], ProtectedFromScaleIn: true })), "InvalidInstanceId.NotFound");
    });

    it("protectedMembersRemovable=true models the older doc (RemoveInstances still removes protected members)", async () => {
        fx.emu.state.protectedMembersRemovable = true;
        const g = fx.emu.addScalingGroup({ maxSize: 5, desiredCapacity: 2 });
        const [a] = fx.emu.scalingGroupInstances(g.scalingGroupId);
        await call("ess", "SetInstancesProtection", { ScalingGroupId: g.scalingGroupId, InstanceId: [a], ProtectedFromScaleIn: true });
        await call("ess", "RemoveInstances", { ScalingGroupId: g.scalingGroupId, InstanceId: [a] });
        assert.strictEqual(fx.emu.instances.has(a), false);
    });

    it("Standby members can be removed by hand (documented); Pending:Wait and Removing ones cannot", async () => {
        const g = fx.emu.addScalingGroup({ maxSize: 5, desiredCapacity: 3 });
        const [a, b, c] = fx.emu.scalingGroupInstances(g.scalingGroupId);
        const r = await call("ess", "EnterStandby", { ScalingGroupId: g.scalingGroupId, InstanceId: [a] });
        assert.match(String(r.ScalingActivityId), /^asa-/);
        assert.strictEqual((await lifecycle(g.scalingGroupId))[a], "Standby");
        assert.strictEqual(await code(call("ess", "EnterStandby", { ScalingGroupId: g.scalingGroupId, InstanceId: [a] })), "IncorrectInstanceStatus");
        assert.strictEqual(await code(call("ess", "SetInstancesProtection", { ScalingGroupId: g.scalingGroupId, InstanceId: [a], ProtectedFromScaleIn: true })), "IncorrectInstanceStatus");
        await call("ess", "ExitStandby", { ScalingGroupId: g.scalingGroupId, InstanceId: [a] });
        assert.strictEqual((await lifecycle(g.scalingGroupId))[a], "InService");
        await call("ess", "EnterStandby", { ScalingGroupId: g.scalingGroupId, InstanceId: [a] });
        await call("ess", "RemoveInstances", { ScalingGroupId: g.scalingGroupId, InstanceId: [a] });
        assert.strictEqual(fx.emu.instances.has(a), false);

        fx.emu.state.scalingInstances.get(b)!.lifecycleState = "Pending:Wait";
        fx.emu.state.scalingInstances.get(c)!.lifecycleState = "Removing";
        assert.strictEqual(await code(call("ess", "RemoveInstances", { ScalingGroupId: g.scalingGroupId, InstanceId: [b] })), "IncorrectInstanceStatus");
        assert.strictEqual(await code(call("ess", "DetachInstances", { ScalingGroupId: g.scalingGroupId, InstanceId: [c] })), "IncorrectInstanceStatus");
        assert.deepStrictEqual(fx.emu.scalingGroupInstances(g.scalingGroupId), [b, c]);
    });

    it("MinSize: RemoveInstances below it is refused whatever DecreaseDesiredCapacity says; at most 20 instances per call", async () => {
        const g = fx.emu.addScalingGroup({ minSize: 2, maxSize: 5, desiredCapacity: 2 });
        const [a] = fx.emu.scalingGroupInstances(g.scalingGroupId);
        assert.strictEqual(await code(call("ess", "RemoveInstances", { ScalingGroupId: g.scalingGroupId, InstanceId: [a] })), "IncorrectCapacity.MinSize");
        assert.strictEqual(await code(call("ess", "RemoveInstances", { ScalingGroupId: g.scalingGroupId, InstanceId: [a], DecreaseDesiredCapacity: false })), "IncorrectCapacity.MinSize");
        assert.strictEqual(await code(call("ess", "ModifyScalingGroup", { ScalingGroupId: g.scalingGroupId, DesiredCapacity: 1 })), "InvalidParameter.Conflict");
        const ids = Array.from({ length: 21 }, (_, k) => `i-x${k}`);
        assert.strictEqual(await code(call("ess", "RemoveInstances", { ScalingGroupId: g.scalingGroupId, InstanceId: ids })), "InvalidParameter.InstanceId");
    });

    it("RemoveInstances with DecreaseDesiredCapacity=false: ESS launches a replacement after the activity", async () => {
        const g = fx.emu.addScalingGroup({ maxSize: 5, desiredCapacity: 2 });
        const [a, b] = fx.emu.scalingGroupInstances(g.scalingGroupId);
        await call("ess", "RemoveInstances", { ScalingGroupId: g.scalingGroupId, InstanceId: [a], DecreaseDesiredCapacity: false });
        const now = fx.emu.scalingGroupInstances(g.scalingGroupId);
        assert.strictEqual(now.length, 2);
        assert.ok(now.includes(b) && !now.includes(a));
        assert.strictEqual(fx.emu.activitiesOf(g.scalingGroupId).length, 2, "the removal, then ESS's own scale-out");
    });
});

describe("emulator: ESS picks the victims itself when DesiredCapacity drops", () => {
    const fx = useEmulator();

    it("by RemovalPolicies, never Protected or Standby members; unreachable capacity ends Warning", async () => {
        const g = fx.emu.addScalingGroup({ maxSize: 6, desiredCapacity: 4 });
        const [m0, m1, m2, m3] = fx.emu.scalingGroupInstances(g.scalingGroupId);
        await call("ess", "SetInstancesProtection", { ScalingGroupId: g.scalingGroupId, InstanceId: [m0], ProtectedFromScaleIn: true });
        await call("ess", "EnterStandby", { ScalingGroupId: g.scalingGroupId, InstanceId: [m1] });
        await call("ess", "ModifyScalingGroup", { ScalingGroupId: g.scalingGroupId, DesiredCapacity: 3 });
        assert.deepStrictEqual(fx.emu.scalingGroupInstances(g.scalingGroupId), [m0, m1, m3], "default policies: oldest configuration, then oldest instance → m2");
        assert.strictEqual(fx.emu.instances.has(m2), false, "ESS released its victim");
        await call("ess", "ModifyScalingGroup", { ScalingGroupId: g.scalingGroupId, DesiredCapacity: 0 });
        assert.deepStrictEqual(fx.emu.scalingGroupInstances(g.scalingGroupId), [m0, m1]);
        const last = fx.emu.activitiesOf(g.scalingGroupId).pop()!;
        assert.deepStrictEqual([last.statusCode, last.destroyedInstances], ["Warning", [m3]]);
        assert.match(last.errorMessage ?? "", /protected, in standby/);
    });

    it("NewestInstance, and OldestScalingConfiguration before it", async () => {
        const g = fx.emu.addScalingGroup({ maxSize: 6, desiredCapacity: 2 });
        const [a, b] = fx.emu.scalingGroupInstances(g.scalingGroupId);
        // A newer active configuration: the next launch uses it.
        const cfg = { ...fx.emu.state.scalingConfigurations.get(g.activeScalingConfigurationId)!, scalingConfigurationId: "asc-newer" };
        fx.emu.state.scalingConfigurations.set(cfg.scalingConfigurationId, cfg);
        g.activeScalingConfigurationId = cfg.scalingConfigurationId;
        await call("ess", "ModifyScalingGroup", { ScalingGroupId: g.scalingGroupId, DesiredCapacity: 3, "RemovalPolicy.1": "OldestScalingConfiguration", "RemovalPolicy.2": "NewestInstance" });
        const [, , c] = fx.emu.scalingGroupInstances(g.scalingGroupId);
        assert.strictEqual(fx.emu.state.scalingInstances.get(c)?.scalingConfigurationId, "asc-newer");
        await call("ess", "ModifyScalingGroup", { ScalingGroupId: g.scalingGroupId, DesiredCapacity: 2 });
        assert.deepStrictEqual(fx.emu.scalingGroupInstances(g.scalingGroupId), [a, c], "the newest member of the oldest configuration: b, not the newest member c");
        await call("ess", "ModifyScalingGroup", { ScalingGroupId: g.scalingGroupId, DesiredCapacity: 1, "RemovalPolicy.1": "NewestInstance" });
        assert.deepStrictEqual(fx.emu.scalingGroupInstances(g.scalingGroupId), [a]);
        assert.ok(![b, c].some((id) => fx.emu.instances.has(id)));
    });

    it("a DesiredCapacity change during a RemoveInstances activity is accepted; ESS removes one more member when it ends", async () => {
        fx.emu.state.activityDurationMs = 60_000;
        const g = fx.emu.addScalingGroup({ maxSize: 5, desiredCapacity: 3 });
        const [a, b, c] = fx.emu.scalingGroupInstances(g.scalingGroupId);
        await call("ess", "RemoveInstances", { ScalingGroupId: g.scalingGroupId, InstanceId: [c] });
        assert.strictEqual(g.desiredCapacity, 2, "lowered when the request is accepted");
        await call("ess", "ModifyScalingGroup", { ScalingGroupId: g.scalingGroupId, DesiredCapacity: 1 });
        assert.strictEqual(fx.emu.scalingGroupInstances(g.scalingGroupId).length, 3, "nothing happened yet");
        fx.emu.advance(60_000);
        const acts = fx.emu.activitiesOf(g.scalingGroupId);
        assert.deepStrictEqual(acts.map((x) => x.statusCode), ["Successful", "InProgress"], "ESS started its own scale-in");
        assert.deepStrictEqual(acts[1].plan?.instanceIds, [a], "its victim: the oldest member");
        fx.emu.advance(60_000);
        assert.deepStrictEqual(fx.emu.scalingGroupInstances(g.scalingGroupId), [b]);
    });

    it("a health check removes members whose instance is not Running, but not Protected or Standby ones", async () => {
        const g = fx.emu.addScalingGroup({ maxSize: 5, desiredCapacity: 3 });
        const [a, b, c] = fx.emu.scalingGroupInstances(g.scalingGroupId);
        await call("ess", "SetInstancesProtection", { ScalingGroupId: g.scalingGroupId, InstanceId: [a], ProtectedFromScaleIn: true });
        await call("ess", "EnterStandby", { ScalingGroupId: g.scalingGroupId, InstanceId: [b] });
        for (const id of [a, b, c]) fx.emu.stopInstance(id);
        const act = fx.emu.runHealthCheck(g.scalingGroupId);
        assert.deepStrictEqual(act?.destroyedInstances, [c]);
        const now = fx.emu.scalingGroupInstances(g.scalingGroupId);
        assert.strictEqual(now.length, 3, "replaced up to DesiredCapacity");
        assert.ok(now.includes(a) && now.includes(b) && !now.includes(c));
        assert.strictEqual(fx.emu.runHealthCheck(g.scalingGroupId), undefined, "nothing else is unhealthy");
    });
});
