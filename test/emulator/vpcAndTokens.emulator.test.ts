/**
 * The emulator's VPC route tasks (one change at a time per VPC, Pending/Deleting, batch calls) and its
 * ClientToken semantics (idempotent only where the request model defines ClientToken), through callApi.
 */
import * as assert from "assert";
import { CLIENT_TOKEN_ACTIONS } from "../../testing/emulator/index";
import { call, code, describeMap, useEmulator } from "../../testing/emulator/fixture";
import { callApi, type ParamValue, type Product } from "../../src/cloud/openapi";

const region = "cn-hangzhou";

const statuses = (routeTableId: string) => describeMap("vpc", "DescribeRouteEntryList", { RouteTableId: routeTableId, MaxResult: 100 }, ["RouteEntrys", "RouteEntry"], "DestinationCidrBlock", "Status");

describe("emulator: VPC route tasks", () => {
    const fx = useEmulator();

    it("one route change at a time per VPC: Pending → Available, Deleting → gone; others meanwhile get the conflict codes in turn", async () => {
        // A minute-long task, ended by stepping the emulator's clock: the five calls meanwhile cannot outlast it.
        fx.emu.state.routeTaskMs = 60_000;
        const t = fx.emu.addRouteTable();
        const t2 = fx.emu.addRouteTable({ routeTableType: "Custom" });
        const other = fx.emu.addRouteTable({ vpcId: "vpc-other" });
        const [a, b] = fx.emu.addInstances(2);
        await call("vpc", "CreateRouteEntry", { RouteTableId: t.routeTableId, DestinationCidrBlock: "172.16.0.0/25", NextHopId: a });
        assert.deepStrictEqual(await statuses(t.routeTableId), { "172.16.0.0/25": "Pending" });
        const codes: string[] = [];
        codes.push(await code(call("vpc", "CreateRouteEntry", { RouteTableId: t.routeTableId, DestinationCidrBlock: "172.16.0.128/25", NextHopId: b })));
        codes.push(await code(call("vpc", "CreateRouteEntry", { RouteTableId: t2.routeTableId, DestinationCidrBlock: "172.16.1.0/25", NextHopId: b })));
        codes.push(await code(call("vpc", "DeleteRouteEntry", { RouteTableId: t.routeTableId, DestinationCidrBlock: "172.16.0.0/25", NextHopId: a })));
        codes.push(await code(call("vpc", "DeleteRouteEntries", { "RouteEntries.1.RouteTableId": t.routeTableId, "RouteEntries.1.DstCidrBlock": "172.16.0.0/25", "RouteEntries.1.NextHop": a })));
        codes.push(await code(call("vpc", "CreateRouteEntry", { RouteTableId: t.routeTableId, DestinationCidrBlock: "172.16.2.0/25", NextHopId: b })));
        assert.deepStrictEqual(codes, ["TaskConflict", "OperationConflict", "IncorrectRouteEntryStatus", "SystemBusy", "TaskConflict"], "the same VPC, even another table, is busy");
        assert.strictEqual(await code(call("vpc", "CreateRouteEntry", { RouteTableId: other.routeTableId, DestinationCidrBlock: "172.16.0.0/25", NextHopId: b })), "", "another VPC is not");
        fx.emu.advance(60_000);
        assert.deepStrictEqual(await statuses(t.routeTableId), { "172.16.0.0/25": "Available" });
        await call("vpc", "DeleteRouteEntry", { RouteTableId: t.routeTableId, DestinationCidrBlock: "172.16.0.0/25", NextHopId: a });
        assert.deepStrictEqual(await statuses(t.routeTableId), { "172.16.0.0/25": "Deleting" });
        fx.emu.advance(60_000);
        assert.deepStrictEqual(await statuses(t.routeTableId), {});
        assert.strictEqual(t.entries.length, 0);
    });

    it("the conflict codes are configurable; an entry that is not Available cannot be deleted; system routes are refused", async () => {
        fx.emu.state.routeTaskMs = 60_000;
        fx.emu.state.routeConflictCodes = ["SystemBusy"];
        const t = fx.emu.addRouteTable();
        const [a, b] = fx.emu.addInstances(2);
        await call("vpc", "CreateRouteEntry", { RouteTableId: t.routeTableId, DestinationCidrBlock: "172.16.0.0/25", NextHopId: a });
        assert.strictEqual(await code(call("vpc", "CreateRouteEntry", { RouteTableId: t.routeTableId, DestinationCidrBlock: "172.16.1.0/25", NextHopId: b })), "SystemBusy");
        assert.strictEqual(await code(call("vpc", "CreateRouteEntry", { RouteTableId: t.routeTableId, DestinationCidrBlock: "172.16.1.0/25", NextHopId: b })), "SystemBusy");
        fx.emu.advance(60_000);
        const sys = fx.emu.addRouteEntry(t.routeTableId, { destinationCidrBlock: "192.168.0.0/24", nextHopId: "", nextHopType: "local" });
        sys.type = "System";
        assert.strictEqual(await code(call("vpc", "DeleteRouteEntry", { RouteEntryId: sys.routeEntryId })), "OperationDenied");
        t.entries[0].status = "Modifying";
        assert.strictEqual(await code(call("vpc", "DeleteRouteEntry", { RouteTableId: t.routeTableId, RouteEntryId: t.entries[0].routeEntryId })), "IncorrectRouteEntryStatus");
        assert.strictEqual(await code(call("vpc", "DeleteRouteEntry", { RouteTableId: t.routeTableId, RouteEntryId: "rte-missing" })), "InvalidRouteEntry.NotFound");
    });

    it("DeleteRouteEntries and CreateRouteEntries: RouteEntries.N.…, up to 50, per-entry failures in FailedRouteEntries", async () => {
        const t = fx.emu.addRouteTable();
        const ids = fx.emu.addInstances(3);
        const created = await call("vpc", "CreateRouteEntries", {
            ...Object.fromEntries(ids.flatMap((id, k) => [[`RouteEntries.${k + 1}.RouteTableId`, t.routeTableId], [`RouteEntries.${k + 1}.DstCidrBlock`, `172.16.${k}.0/25`], [`RouteEntries.${k + 1}.NextHop`, id], [`RouteEntries.${k + 1}.NextHopType`, "Instance"]])),
            "RouteEntries.4.RouteTableId": t.routeTableId, "RouteEntries.4.DstCidrBlock": "172.16.0.0/25", "RouteEntries.4.NextHop": ids[0],
        });
        assert.deepStrictEqual([created.SuccessCount, created.FailedCount, (created.RouteEntryIds as string[]).length], [3, 1, 3]);
        assert.strictEqual((created.FailedRouteEntries as { FailedCode: string }[])[0].FailedCode, "VPC_ROUTE_ENTRY_CIDR_BLOCK_DUPLICATE");
        const deleted = await call("vpc", "DeleteRouteEntries", {
            "RouteEntries.1.RouteTableId": t.routeTableId, "RouteEntries.1.RouteEntryId": (created.RouteEntryIds as string[])[0],
            "RouteEntries.2.RouteTableId": t.routeTableId, "RouteEntries.2.DstCidrBlock": "172.16.1.0/25", "RouteEntries.2.NextHop": ids[1],
            "RouteEntries.3.RouteTableId": t.routeTableId, "RouteEntries.3.DstCidrBlock": "172.16.9.0/25", "RouteEntries.3.NextHop": ids[2],
        });
        assert.deepStrictEqual([deleted.SuccessCount, deleted.FailedCount], [2, 1]);
        const failed = (deleted.FailedRouteEntries as { DstCidrBlock: string; FailedCode: string }[])[0];
        assert.deepStrictEqual([failed.DstCidrBlock, failed.FailedCode], ["172.16.9.0/25", "VPC_ROUTER_ENTRY_NOT_EXIST"]);
        assert.deepStrictEqual(t.entries.map((e) => e.destinationCidrBlock), ["172.16.2.0/25"]);
        const tooMany = Object.fromEntries(Array.from({ length: 51 }, (_, k) => [[`RouteEntries.${k + 1}.RouteTableId`, t.routeTableId], [`RouteEntries.${k + 1}.RouteEntryId`, `rte-${k}`]]).flat());
        assert.strictEqual(await code(call("vpc", "DeleteRouteEntries", tooMany)), "InvalidParameter.RouteEntries");
    });
});

describe("emulator: ClientToken only where the request model defines it", () => {
    const fx = useEmulator();
    /** A lost response: the action runs, then the caller sees a 503 and retries with the same ClientToken. */
    const lost = (action: string) => fx.emu.inject(action, { status: 503, code: "ServiceUnavailable", message: "lost", times: 1, afterApply: true });
    const retrying = (product: Product, action: string, params: Record<string, ParamValue>) => callApi(product, action, params, { region, retry: { maxAttempts: 2, baseDelayMs: 1 } });

    it("lists the actions with a ClientToken (the rest are not idempotent)", () => {
        assert.deepStrictEqual(CLIENT_TOKEN_ACTIONS, {
            ecs: ["RunCommand", "CreateCommand", "InvokeCommand", "ReplaceSystemDisk"],
            ess: ["RemoveInstances", "ScaleWithAdjustment", "EnterStandby", "ExitStandby", "SuspendProcesses", "ResumeProcesses"],
            vpc: ["CreateRouteEntry"],
        });
    });

    it("actions with a ClientToken: the retry gets the first answer and does not act again", async () => {
        const [a] = fx.emu.addInstances(1);
        fx.emu.onCommand(/./, {});
        lost("CreateCommand");
        await retrying("ecs", "CreateCommand", { Name: "x", Type: "RunShellScript", CommandContent: Buffer.from("true").toString("base64") });
        assert.strictEqual(fx.emu.commands.size, 1);
        const cmd = [...fx.emu.commands.keys()][0];
        lost("InvokeCommand");
        await retrying("ecs", "InvokeCommand", { CommandId: cmd, InstanceId: [a] });
        assert.strictEqual(fx.emu.state.invocations.size, 1);

        const g = fx.emu.addScalingGroup({ maxSize: 5, desiredCapacity: 3 });
        const [m] = fx.emu.scalingGroupInstances(g.scalingGroupId);
        lost("RemoveInstances");
        const r = await retrying("ess", "RemoveInstances", { ScalingGroupId: g.scalingGroupId, InstanceId: [m] });
        assert.strictEqual(fx.emu.activitiesOf(g.scalingGroupId).length, 1);
        assert.strictEqual(String(r.ScalingActivityId), fx.emu.activitiesOf(g.scalingGroupId)[0].scalingActivityId);
        assert.strictEqual(g.desiredCapacity, 2, "decreased once");

        const t = fx.emu.addRouteTable();
        lost("CreateRouteEntry");
        await retrying("vpc", "CreateRouteEntry", { RouteTableId: t.routeTableId, DestinationCidrBlock: "172.16.0.0/25", NextHopId: a });
        assert.strictEqual(t.entries.length, 1);

        assert.strictEqual(await code(call("ecs", "CreateCommand", { Name: "y", Type: "RunShellScript", CommandContent: "dHJ1ZQ==", ClientToken: "fixed-token" })), "");
        assert.strictEqual(await code(call("ecs", "CreateCommand", { Name: "z", Type: "RunShellScript", CommandContent: "dHJ1ZQ==", ClientToken: "fixed-token" })), "IdempotentParameterMismatch");
    });

    it("actions without one act twice: the retry of StopInstance, DetachInstances, DeleteRouteEntry fails; ModifyInstanceAttribute runs again", async () => {
        const inst = fx.emu.addInstance();
        lost("StopInstance");
        assert.strictEqual(await code(retrying("ecs", "StopInstance", { InstanceId: inst.instanceId })), "IncorrectInstanceStatus", "the instance was stopped by the first attempt");
        assert.strictEqual(inst.status, "Stopped");

        const g = fx.emu.addScalingGroup({ maxSize: 5, desiredCapacity: 3 });
        const [m] = fx.emu.scalingGroupInstances(g.scalingGroupId);
        lost("DetachInstances");
        assert.strictEqual(await code(retrying("ess", "DetachInstances", { ScalingGroupId: g.scalingGroupId, InstanceId: [m] })), "InvalidInstanceId.NotFound");
        assert.strictEqual(fx.emu.scalingGroupInstances(g.scalingGroupId).includes(m), false);

        lost("ModifyScalingGroup");
        await retrying("ess", "ModifyScalingGroup", { ScalingGroupId: g.scalingGroupId, DesiredCapacity: 1 });
        assert.strictEqual(fx.emu.callsOf("ModifyScalingGroup").length, 2);
        assert.strictEqual(fx.emu.activitiesOf(g.scalingGroupId).filter((x) => x.plan?.kind === "scale").length, 1, "the second (absolute) call found nothing left to do");

        const t = fx.emu.addRouteTable();
        fx.emu.addRouteEntry(t.routeTableId, { destinationCidrBlock: "172.16.0.0/25", nextHopId: m });
        lost("DeleteRouteEntry");
        assert.strictEqual(await code(retrying("vpc", "DeleteRouteEntry", { RouteTableId: t.routeTableId, DestinationCidrBlock: "172.16.0.0/25", NextHopId: m })), "InvalidRouteEntry.NotFound");

        const other = fx.emu.addInstance();
        lost("ModifyInstanceAttribute");
        await retrying("ecs", "ModifyInstanceAttribute", { InstanceId: other.instanceId, UserData: Buffer.from("#!/bin/sh\n").toString("base64") });
        const calls = fx.emu.callsOf("ModifyInstanceAttribute");
        assert.deepStrictEqual(calls.map((c) => [c.status, c.code]), [[503, "ServiceUnavailable"], [200, ""]], "applied by both attempts");
        assert.strictEqual(calls[0].params.ClientToken, calls[1].params.ClientToken, "the same token did not make it idempotent");
    });
});
