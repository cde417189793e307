// World: the OpenAPI emulator (testing/emulator).
/** The emulator's own semantics, exercised through the real SDK path (callApi), so later providers can trust it. */
import * as assert from "assert";
import * as crypto from "crypto";
import { callApi, OpenApiError, ParamValue, Product } from "../../src/cloud/openapi";
import { acs3Signature, Emulator, EmuInstance, rpcV1Signature, startEmulator, TEST_CREDENTIALS, verifyRequest, verifyRpcV1 } from "../../testing/emulator/index";
import { assertNoStrayRequests, useEmulator, useEmulatorEnvironment } from "../../testing/emulator/fixture";

const region = "cn-hangzhou";
const call = (product: Product, action: string, params: Record<string, ParamValue>) => callApi(product, action, params, { region, retry: { maxAttempts: 1, throttleBudgetMs: 0 } });

async function code(p: Promise<unknown>): Promise<string> {
    try { await p; } catch (e) { if (e instanceof OpenApiError) return e.code; throw e; }
    return "";
}

describe("emulator: ECS", () => {
    const fx = useEmulator();

    it("re-bootstrap recipe: user data runs only after Stop → ReplaceSystemDisk → Start", async () => {
        const inst = fx.emu.addInstance();
        const ran: string[] = [];
        fx.emu.state.onUserDataRun = (i: EmuInstance) => ran.push(Buffer.from(i.userData, "base64").toString());
        const ud = Buffer.from("#!/bin/sh\necho join\n").toString("base64");
        await call("ecs", "ModifyInstanceAttribute", { InstanceId: inst.instanceId, UserData: ud });
        assert.strictEqual((await call("ecs", "DescribeUserData", { InstanceId: inst.instanceId })).UserData, ud);
        assert.strictEqual(await code(call("ecs", "ReplaceSystemDisk", { InstanceId: inst.instanceId, ImageId: "img-2" })), "IncorrectInstanceStatus");
        await call("ecs", "StopInstance", { InstanceId: inst.instanceId });
        const oldDisk = inst.systemDiskId;
        const { DiskId } = await call("ecs", "ReplaceSystemDisk", { InstanceId: inst.instanceId, ImageId: "img-2" });
        assert.notStrictEqual(DiskId, oldDisk);
        assert.deepStrictEqual(ran, []);
        await call("ecs", "StartInstance", { InstanceId: inst.instanceId });
        assert.deepStrictEqual(ran, ["#!/bin/sh\necho join\n"]);
        assert.strictEqual(inst.status, "Running");
        assert.strictEqual(await code(call("ecs", "StartInstance", { InstanceId: inst.instanceId })), "IncorrectInstanceStatus");
    });

    it("ModifyInstanceSpec changes the type only while Stopped, one configuration per call, and only to a type ECS sells", async () => {
        const inst = fx.emu.addInstance({ instanceType: "ecs.g7.large" });
        const type = async () => ((await call("ecs", "DescribeInstances", { InstanceIds: JSON.stringify([inst.instanceId]) })).Instances as { Instance: { InstanceType: string }[] }).Instance[0].InstanceType;
        assert.strictEqual(await code(call("ecs", "ModifyInstanceSpec", { InstanceId: inst.instanceId, InstanceType: "ecs.g7.xlarge" })), "IncorrectInstanceStatus");
        await call("ecs", "StopInstance", { InstanceId: inst.instanceId });
        assert.strictEqual(await code(call("ecs", "ModifyInstanceSpec", { InstanceId: inst.instanceId, InstanceType: "ecs.g7.xlarge", InternetMaxBandwidthOut: 10 })), "InvalidParameter.Conflict");
        assert.strictEqual(await code(call("ecs", "ModifyInstanceSpec", { InstanceId: inst.instanceId, InstanceType: "ecs.nosuch.large" })), "InvalidInstanceType.ValueNotSupported");
        assert.strictEqual(await type(), "ecs.g7.large");
        await call("ecs", "ModifyInstanceSpec", { InstanceId: inst.instanceId, InstanceType: "ecs.g7.xlarge" });
        assert.strictEqual(await type(), "ecs.g7.xlarge");
        assert.strictEqual(inst.status, "Stopped");
    });

    it("with transitionReads, Stop and Start pass through Stopping and Starting for that many DescribeInstances answers", async () => {
        fx.emu.state.transitionReads = 2;
        const inst = fx.emu.addInstance();
        await call("ecs", "StopInstance", { InstanceId: inst.instanceId });
        const status = async () => ((await call("ecs", "DescribeInstances", { InstanceIds: JSON.stringify([inst.instanceId]) })).Instances as { Instance: { Status: string }[] }).Instance[0].Status;
        assert.deepStrictEqual([await status(), await status()], ["Stopping", "Stopping"]);
        assert.strictEqual(await code(call("ecs", "StartInstance", { InstanceId: inst.instanceId })), "IncorrectInstanceStatus");
        assert.strictEqual(await status(), "Stopped");
        await call("ecs", "StartInstance", { InstanceId: inst.instanceId });
        assert.deepStrictEqual([await status(), await status(), await status()], ["Starting", "Starting", "Running"]);
    });

    it("with transitionMs, Stop passes through Stopping until the time is up", async () => {
        // Far longer than any gap between two calls, so the first read sees Stopping however loaded the machine is.
        fx.emu.state.transitionMs = 60_000;
        const inst = fx.emu.addInstance();
        await call("ecs", "StopInstance", { InstanceId: inst.instanceId });
        const status = async () => ((await call("ecs", "DescribeInstanceStatus", { InstanceId: [inst.instanceId] })).InstanceStatuses as { InstanceStatus: { Status: string }[] }).InstanceStatus[0].Status;
        assert.strictEqual(await status(), "Stopping");
        assert.strictEqual(await code(call("ecs", "StartInstance", { InstanceId: inst.instanceId })), "IncorrectInstanceStatus");
    });

    it("DescribeInstances says when an instance last started, to the minute; a start moves it", async () => {
        const inst = fx.emu.addInstance({ startTime: "2026-01-02T03:04Z" });
        const started = async () => ((await call("ecs", "DescribeInstances", { InstanceIds: JSON.stringify([inst.instanceId]) })).Instances as { Instance: Array<{ StartTime: string }> }).Instance[0].StartTime;
        assert.strictEqual(await started(), "2026-01-02T03:04Z");
        await call("ecs", "StopInstance", { InstanceId: inst.instanceId });
        await call("ecs", "StartInstance", { InstanceId: inst.instanceId });
        assert.match(await started(), /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}Z$/);
        assert.ok(Date.parse((await started()).replace("Z", ":00Z")) > Date.parse("2026-01-02T03:04:00Z"));
    });

    it("DescribeInstances filters by the InstanceIds JSON array and pages", async () => {
        const ids = fx.emu.addInstances(5);
        const res = await call("ecs", "DescribeInstances", { InstanceIds: JSON.stringify(ids.slice(1)), PageSize: 3, PageNumber: 2 });
        const list = (res.Instances as { Instance: { InstanceId: string; VpcAttributes: { PrivateIpAddress: { IpAddress: string[] } } }[] }).Instance;
        assert.strictEqual(res.TotalCount, 4);
        assert.deepStrictEqual(list.map((i) => i.InstanceId), [ids[4]]);
        assert.strictEqual(list[0].VpcAttributes.PrivateIpAddress.IpAddress.length, 1);
        assert.strictEqual(await code(call("ecs", "DescribeInstances", { InstanceIds: "i-1,i-2" })), "InvalidInstanceIds.Malformed");
    });

    it("DescribeCloudAssistantStatus reflects the agent; DeleteInstance needs Force while Running", async () => {
        const [a, b] = fx.emu.addInstances(2);
        fx.emu.setAgentOffline(b);
        const res = await call("ecs", "DescribeCloudAssistantStatus", { InstanceId: [a, b] });
        const st = (res.InstanceCloudAssistantStatusSet as { InstanceCloudAssistantStatus: { InstanceId: string; CloudAssistantStatus: string }[] }).InstanceCloudAssistantStatus;
        assert.deepStrictEqual(st.map((s) => [s.InstanceId, s.CloudAssistantStatus]), [[a, "true"], [b, "false"]]);
        assert.strictEqual(await code(call("ecs", "DeleteInstance", { InstanceId: a })), "IncorrectInstanceStatus");
        await call("ecs", "DeleteInstance", { InstanceId: a, Force: true });
        assert.strictEqual(fx.emu.instances.has(a), false);
        assert.strictEqual(await code(call("ecs", "StopInstance", { InstanceId: a })), "InvalidInstanceId.NotFound");
    });

    it("callApi sends every parameter in the signed form body and none in the URL", async () => {
        const inst = fx.emu.addInstance();
        fx.emu.onCommand(/echo body-check/, { output: "ok" });
        await call("ecs", "RunCommand", { Type: "RunShellScript", CommandContent: Buffer.from("echo body-check").toString("base64"), ContentEncoding: "Base64", InstanceId: [inst.instanceId] });
        const [run] = fx.emu.callsOf("RunCommand");
        assert.strictEqual(run.status, 200, "accepted: the signature covers the body");
        assert.strictEqual(run.url, "/", "no query string");
        assert.match(run.body, /(^|&)CommandContent=/);
        assert.strictEqual(run.params.InstanceId_1 ?? run.params["InstanceId.1"], inst.instanceId);
    });

    it("each instance has a primary ENI with source/destination checking on, which ModifyNetworkInterfaceAttribute turns off", async () => {
        const [a, b] = [fx.emu.addInstance(), fx.emu.addInstance()];
        const inst = ((await call("ecs", "DescribeInstances", { InstanceIds: JSON.stringify([a.instanceId]) })).Instances as { Instance: Array<{ NetworkInterfaces: { NetworkInterface: Array<{ NetworkInterfaceId: string; Type: string; PrimaryIpAddress: string }> } }> }).Instance[0];
        const [eni] = inst.NetworkInterfaces.NetworkInterface;
        assert.strictEqual(eni.Type, "Primary");
        assert.strictEqual(eni.PrimaryIpAddress, a.privateIp);
        const check = async (id: string) => ((await call("ecs", "DescribeNetworkInterfaces", { NetworkInterfaceId: [id] })).NetworkInterfaceSets as { NetworkInterfaceSet: Array<{ InstanceId: string; SourceDestCheck: boolean }> }).NetworkInterfaceSet;
        assert.deepStrictEqual((await check(eni.NetworkInterfaceId)).map((x) => [x.InstanceId, x.SourceDestCheck]), [[a.instanceId, true]]);
        await call("ecs", "ModifyNetworkInterfaceAttribute", { NetworkInterfaceId: eni.NetworkInterfaceId, SourceDestCheck: false });
        assert.deepStrictEqual((await check(eni.NetworkInterfaceId)).map((x) => x.SourceDestCheck), [false]);
        assert.deepStrictEqual((await check(`eni-${b.instanceId.slice(2)}`)).map((x) => x.SourceDestCheck), [true], "only that ENI");
        assert.strictEqual(await code(call("ecs", "ModifyNetworkInterfaceAttribute", { NetworkInterfaceId: "eni-nope", SourceDestCheck: false })), "InvalidEniId.NotFound");
    });

    it("unknown actions get InvalidAction.NotFound", async () => {
        assert.strictEqual(await code(call("ecs", "DescribeNothing", {})), "InvalidAction.NotFound");
    });
});

describe("emulator: ESS", () => {
    const fx = useEmulator();

    it("instances ESS creates carry the scaling configuration's tags and ESS's own group tag", async () => {
        const g = fx.emu.addScalingGroup({ desiredCapacity: 1, configurationTags: { team: "a" } });
        const [id] = fx.emu.scalingGroupInstances(g.scalingGroupId);
        const res = await call("ecs", "DescribeInstances", { InstanceIds: JSON.stringify([id]) });
        const tags = (res.Instances as { Instance: Array<{ Tags: { Tag: Array<{ TagKey: string; TagValue: string }> } }> }).Instance[0].Tags.Tag;
        assert.deepStrictEqual(Object.fromEntries(tags.map((t) => [t.TagKey, t.TagValue])), { team: "a", "acs:autoscaling:scalingGroupId": g.scalingGroupId });
    });

    it("RemoveInstances releases auto-created instances; DetachInstances keeps them running", async () => {
        const g = fx.emu.addScalingGroup({ minSize: 1, maxSize: 5, desiredCapacity: 3 });
        const [a, b, c] = fx.emu.scalingGroupInstances(g.scalingGroupId);
        const { ScalingActivityId } = await call("ess", "RemoveInstances", { ScalingGroupId: g.scalingGroupId, InstanceId: [a] });
        assert.match(String(ScalingActivityId), /^asa-/);
        assert.strictEqual(fx.emu.instances.has(a), false, "released");
        await call("ess", "DetachInstances", { ScalingGroupId: g.scalingGroupId, InstanceId: [b] });
        assert.strictEqual(fx.emu.instances.get(b)?.status, "Running", "detached, not released");
        assert.deepStrictEqual(fx.emu.scalingGroupInstances(g.scalingGroupId), [c]);
        assert.strictEqual(g.desiredCapacity, 1);
        assert.strictEqual(await code(call("ess", "RemoveInstances", { ScalingGroupId: g.scalingGroupId, InstanceId: [c] })), "IncorrectCapacity.MinSize");
        assert.strictEqual(await code(call("ess", "RemoveInstances", { ScalingGroupId: g.scalingGroupId, InstanceId: [b] })), "InvalidInstanceId.NotFound");
        await call("ess", "RemoveInstances", { ScalingGroupId: g.scalingGroupId, InstanceId: [b], IgnoreInvalidInstance: true, DecreaseDesiredCapacity: false });
    });

    it("manually attached, non-entrusted instances survive RemoveInstances", async () => {
        const g = fx.emu.addScalingGroup({ maxSize: 3 });
        const own = fx.emu.addInstance();
        await call("ess", "AttachInstances", { ScalingGroupId: g.scalingGroupId, InstanceId: [own.instanceId] });
        const res = await call("ess", "DescribeScalingInstances", { ScalingGroupId: g.scalingGroupId });
        const si = (res.ScalingInstances as { ScalingInstance: { InstanceId: string; CreationType: string; LifecycleState: string }[] }).ScalingInstance;
        assert.deepStrictEqual(si.map((s) => [s.InstanceId, s.CreationType, s.LifecycleState]), [[own.instanceId, "Attached", "InService"]]);
        await call("ess", "RemoveInstances", { ScalingGroupId: g.scalingGroupId, InstanceId: [own.instanceId] });
        assert.strictEqual(fx.emu.instances.get(own.instanceId)?.status, "Running");
    });

    it("DesiredCapacity changes launch and remove instances and leave activities", async () => {
        const ud = Buffer.from("#!/bin/sh\n").toString("base64");
        const g = fx.emu.addScalingGroup({ maxSize: 4, userData: ud });
        await call("ess", "ModifyScalingGroup", { ScalingGroupId: g.scalingGroupId, DesiredCapacity: 3 });
        const ids = fx.emu.scalingGroupInstances(g.scalingGroupId);
        assert.strictEqual(ids.length, 3);
        assert.strictEqual(fx.emu.instances.get(ids[0])?.userData, ud, "launched from the scaling configuration");
        assert.strictEqual(await code(call("ess", "ModifyScalingGroup", { ScalingGroupId: g.scalingGroupId, DesiredCapacity: 5 })), "InvalidParameter.Conflict");
        await call("ess", "ScaleWithAdjustment", { ScalingGroupId: g.scalingGroupId, AdjustmentType: "QuantityChangeInCapacity", AdjustmentValue: -2 });
        assert.deepStrictEqual(fx.emu.scalingGroupInstances(g.scalingGroupId), [ids[2]], "oldest removed first");
        assert.strictEqual(await code(call("ess", "ScaleWithAdjustment", { ScalingGroupId: g.scalingGroupId, AdjustmentType: "TotalCapacity", AdjustmentValue: 9 })), "IncorrectCapacity.MaxSize");
        const acts = await call("ess", "DescribeScalingActivities", { ScalingGroupId: g.scalingGroupId });
        const list = (acts.ScalingActivities as { ScalingActivity: { StatusCode: string; TotalCapacity: string }[] }).ScalingActivity;
        assert.deepStrictEqual(list.map((a) => [a.StatusCode, a.TotalCapacity]), [["Successful", "1"], ["Successful", "3"]]);
        const groups = await call("ess", "DescribeScalingGroups", { ScalingGroupId: [g.scalingGroupId] });
        const view = (groups.ScalingGroups as { ScalingGroup: Record<string, unknown>[] }).ScalingGroup[0];
        assert.deepStrictEqual([view.DesiredCapacity, view.TotalCapacity, view.LifecycleState], [1, 1, "Active"]);
        const cfgs = await call("ess", "DescribeScalingConfigurations", { ScalingGroupId: g.scalingGroupId });
        assert.strictEqual((cfgs.ScalingConfigurations as { ScalingConfiguration: { UserData: string }[] }).ScalingConfiguration[0].UserData, ud);
    });

    it("a scaling activity in progress blocks RemoveInstances (ScalingActivityInProgress)", async () => {
        fx.emu.state.activityDurationMs = 60_000;
        const g = fx.emu.addScalingGroup({ maxSize: 3 });
        await call("ess", "ScaleWithAdjustment", { ScalingGroupId: g.scalingGroupId, AdjustmentType: "TotalCapacity", AdjustmentValue: 2 });
        const [a] = fx.emu.scalingGroupInstances(g.scalingGroupId);
        assert.strictEqual(await code(call("ess", "RemoveInstances", { ScalingGroupId: g.scalingGroupId, InstanceId: [a] })), "ScalingActivityInProgress");
        fx.emu.advance(60_000);
        await call("ess", "RemoveInstances", { ScalingGroupId: g.scalingGroupId, InstanceId: [a] });
    });
});

describe("emulator: a per-action rate limit (Emulator.rateLimit)", () => {
    const fx = useEmulator();

    it("answers Throttling.User beyond N calls per window and action, applies nothing for them, admits again in the next window, and comes off", async () => {
        fx.emu.rateLimit(2, 60_000);
        const windowStart = () => fx.emu.advance(60_000 - (fx.emu.state.now() % 60_000)); // on the emulator's clock: the next calls share one window
        windowStart();
        const inst = fx.emu.addInstance();
        const describe = () => code(call("ecs", "DescribeInstances", { InstanceIds: JSON.stringify([inst.instanceId]) }));
        assert.deepStrictEqual([await describe(), await describe(), await describe()], ["", "", "Throttling.User"]);
        assert.strictEqual(await code(call("ecs", "DescribeInstanceStatus", {})), "", "another action has its own count");
        const rename = (name: string) => code(call("ecs", "ModifyInstanceAttribute", { InstanceId: inst.instanceId, InstanceName: name }));
        assert.deepStrictEqual([await rename("a"), await rename("b"), await rename("c")], ["", "", "Throttling.User"]);
        assert.strictEqual(inst.instanceName, "b", "a refused call applies nothing");
        // the refused call is recorded with HTTP 400 (a stray call from an earlier test's loop is refused apart and
        // fails the test: Emulator.strayRequests)
        const refused = fx.emu.callsOf("DescribeInstances").filter((c) => c.code === "Throttling.User");
        assert.deepStrictEqual(refused.map((c) => [c.status, c.params.InstanceIds]), [[400, JSON.stringify([inst.instanceId])]], "the third call, recorded, HTTP 400");
        fx.emu.rateLimit({ DescribeInstances: 1 }, 60_000);
        windowStart();
        assert.deepStrictEqual([await describe(), await describe()], ["", "Throttling.User"], "one per window");
        fx.emu.advance(60_000);
        assert.strictEqual(await describe(), "", "the next window admits again");
        fx.emu.rateLimit({});
        assert.deepStrictEqual([await describe(), await describe(), await describe()], ["", "", ""]);
    });
});

describe("emulator: a request from an earlier test's loop (Emulator.strayRequests)", () => {
    useEmulatorEnvironment(); // the test credentials, the loopback guard, and the endpoint restored afterwards
    let earlier: Emulator | undefined, current: Emulator | undefined;
    afterEach(async () => { await earlier?.close(); await current?.close(); });

    it("is refused without being applied, recorded or rate-counted, and the check names the test that left the loop", async () => {
        earlier = await startEmulator();
        earlier.claim("an earlier test");
        const theirs = earlier.addInstance();
        current = await startEmulator();
        current.claim("this test");
        const ours = current.addInstance();
        assert.notStrictEqual(theirs.instanceId, ours.instanceId, "two emulators never mint the same id");
        current.rateLimit({ DescribeInstances: 1 }, 60_000);
        current.advance(60_000 - (current.state.now() % 60_000));
        process.env.ALICLOUD_KUBEADM_ENDPOINT = current.endpoint; // where a loop that reads the endpoint at call time now goes
        const describe = (id: string) => code(call("ecs", "DescribeInstances", { InstanceIds: JSON.stringify([id]) }));
        const rename = (id: string) => code(call("ecs", "ModifyInstanceAttribute", { InstanceId: id, InstanceName: "renamed" }));
        assert.deepStrictEqual([await describe(theirs.instanceId), await rename(theirs.instanceId)], ["Emulator.StrayRequest", "Emulator.StrayRequest"]);
        assert.deepStrictEqual(current.calls, [], "nothing recorded");
        assert.strictEqual(await describe(ours.instanceId), "", "nothing counted against this test's rate limit");
        assert.deepStrictEqual(current.strayRequests.map((r) => [r.action, r.ids, r.from]),
            [["DescribeInstances", [theirs.instanceId], ["an earlier test"]], ["ModifyInstanceAttribute", [theirs.instanceId], ["an earlier test"]]]);
        assert.throws(() => assertNoStrayRequests([current!]), new RegExp(`2 request\\(s\\) from a loop an earlier test left running.*\\n  DescribeInstances for ${theirs.instanceId} \\(from the emulator of: an earlier test\\)`, "s"));
        assert.doesNotThrow(() => assertNoStrayRequests([earlier!]));
    });
});

describe("emulator: VPC", () => {
    const fx = useEmulator();

    it("creates, lists (paged), and deletes route entries with the real codes", async () => {
        const t = fx.emu.addRouteTable();
        const ids = fx.emu.addInstances(3);
        for (const [k, id] of ids.entries()) await call("vpc", "CreateRouteEntry", { RouteTableId: t.routeTableId, DestinationCidrBlock: `172.16.${k}.0/25`, NextHopType: "Instance", NextHopId: id });
        assert.strictEqual(await code(call("vpc", "CreateRouteEntry", { RouteTableId: t.routeTableId, DestinationCidrBlock: "172.16.0.0/25", NextHopId: ids[1] })), "InvalidCIDRBlock.Duplicate");
        const p1 = await call("vpc", "DescribeRouteEntryList", { RouteTableId: t.routeTableId, MaxResult: 2 });
        const p2 = await call("vpc", "DescribeRouteEntryList", { RouteTableId: t.routeTableId, MaxResult: 2, NextToken: String(p1.NextToken) });
        const rows = [p1, p2].flatMap((p) => (p.RouteEntrys as { RouteEntry: { DestinationCidrBlock: string; NextHops: { NextHop: { NextHopId: string }[] } }[] }).RouteEntry);
        assert.deepStrictEqual(rows.map((r) => [r.DestinationCidrBlock, r.NextHops.NextHop[0].NextHopId]), ids.map((id, k) => [`172.16.${k}.0/25`, id]));
        assert.strictEqual(p2.NextToken, "");
        await call("vpc", "DeleteRouteEntry", { RouteTableId: t.routeTableId, DestinationCidrBlock: "172.16.1.0/25", NextHopId: ids[1] });
        assert.strictEqual(await code(call("vpc", "DeleteRouteEntry", { RouteTableId: t.routeTableId, DestinationCidrBlock: "172.16.1.0/25", NextHopId: ids[1] })), "InvalidRouteEntry.NotFound");
        const tables = await call("vpc", "DescribeRouteTableList", { VpcId: "vpc-emu" });
        const list = (tables.RouterTableList as { RouterTableListType: { RouteTableId: string }[] }).RouterTableListType;
        assert.deepStrictEqual(list.map((x) => x.RouteTableId), [t.routeTableId]);
        assert.strictEqual(t.entries.length, 2);
    });
});

describe("emulator: signature checks beyond the secret", () => {
    function signed(headers: Record<string, string>, query: Record<string, string> = { RegionId: region }) {
        const body = Buffer.alloc(0);
        const all: Record<string, string> = {
            host: "127.0.0.1:1", "x-acs-action": "DescribeInstances", "x-acs-version": "2014-05-26", "x-acs-date": new Date().toISOString().replace(/\.\d+Z$/, "Z"),
            "x-acs-signature-nonce": crypto.randomUUID(), "x-acs-content-sha256": crypto.createHash("sha256").update(body).digest("hex"), ...headers,
        };
        const signedHeaders = Object.keys(all).filter((h) => h !== "x-acs-unsigned");
        const sig = acs3Signature({ method: "POST", path: "/", query, headers: all, signedHeaders, payloadHash: all["x-acs-content-sha256"] }, TEST_CREDENTIALS.accessKeySecret);
        all.authorization = `ACS3-HMAC-SHA256 Credential=${TEST_CREDENTIALS.accessKeyId},SignedHeaders=${signedHeaders.sort().join(";")},Signature=${sig}`;
        return { method: "POST", path: "/", query, headers: all, body };
    }
    const secretFor = (ak: string) => (ak === TEST_CREDENTIALS.accessKeyId ? TEST_CREDENTIALS.accessKeySecret : undefined);

    it("accepts a correct request once, then rejects the replayed nonce", () => {
        const nonces = new Set<string>();
        const req = signed({});
        assert.deepStrictEqual(verifyRequest(req, secretFor, nonces), { ok: true, accessKeyId: TEST_CREDENTIALS.accessKeyId });
        assert.strictEqual((verifyRequest(req, secretFor, nonces) as { code: string }).code, "SignatureNonceUsed");
    });

    it("rejects a tampered parameter, a stale date and an unsigned x-acs header", () => {
        const tampered = signed({});
        tampered.query = { RegionId: "cn-beijing" };
        assert.strictEqual((verifyRequest(tampered, secretFor, new Set()) as { code: string }).code, "SignatureDoesNotMatch");
        const stale = signed({ "x-acs-date": "2020-01-01T00:00:00Z" });
        assert.strictEqual((verifyRequest(stale, secretFor, new Set()) as { code: string }).code, "InvalidTimeStamp.Expired");
        const unsigned = signed({ "x-acs-unsigned": "1" });
        assert.strictEqual((verifyRequest(unsigned, secretFor, new Set()) as { code: string }).code, "IncompleteSignature");
    });

    it("a form body is signed through x-acs-content-sha256: a changed body is refused", () => {
        const body = Buffer.from("RegionId=cn-hangzhou&CommandContent=ZWNobw%3D%3D");
        const req = { ...signed({ "x-acs-content-sha256": crypto.createHash("sha256").update(body).digest("hex") }, {}), body };
        assert.deepStrictEqual(verifyRequest(req, secretFor, new Set()), { ok: true, accessKeyId: TEST_CREDENTIALS.accessKeyId });
        const changed = { ...req, body: Buffer.from("RegionId=cn-hangzhou&CommandContent=cm0gLXJm") };
        assert.strictEqual((verifyRequest(changed, secretFor, new Set()) as { code: string }).code, "SignatureDoesNotMatch");
    });

    it("RPC V1 (HMAC-SHA1): the published example's signature; a correct request once, then tampering, staleness and replay refused", () => {
        // https://www.alibabacloud.com/help/doc-detail/127287.htm: DescribeRegions signed with the secret "testsecret"
        const example = { Timestamp: "2016-02-23T12:46:24Z", Format: "XML", AccessKeyId: "testid", Action: "DescribeRegions", SignatureMethod: "HMAC-SHA1",
            SignatureNonce: "3ee8c1b8-83d3-44af-a94f-4e0ad82fd6cf", Version: "2014-05-26", SignatureVersion: "1.0" };
        assert.strictEqual(rpcV1Signature("GET", example, "testsecret"), "OLeaidS1JvxuMvnyHOwuJ+uX5qY=");
        const params: Record<string, string> = { ...example, AccessKeyId: TEST_CREDENTIALS.accessKeyId, Timestamp: new Date().toISOString().replace(/\.\d+Z$/, "Z"), SignatureNonce: crypto.randomUUID() };
        params.Signature = rpcV1Signature("POST", params, TEST_CREDENTIALS.accessKeySecret);
        const nonces = new Set<string>();
        assert.deepStrictEqual(verifyRpcV1("POST", params, secretFor, nonces), { ok: true, accessKeyId: TEST_CREDENTIALS.accessKeyId });
        assert.strictEqual((verifyRpcV1("POST", params, secretFor, nonces) as { code: string }).code, "SignatureNonceUsed");
        assert.strictEqual((verifyRpcV1("POST", { ...params, RegionId: "cn-beijing" }, secretFor, new Set()) as { code: string }).code, "SignatureDoesNotMatch");
        const stale: Record<string, string> = { ...params, Timestamp: "2020-01-01T00:00:00Z" };
        stale.Signature = rpcV1Signature("POST", stale, TEST_CREDENTIALS.accessKeySecret);
        assert.strictEqual((verifyRpcV1("POST", stale, secretFor, new Set()) as { code: string }).code, "InvalidTimeStamp.Expired");
    });
});
