// World: the OpenAPI emulator (testing/emulator).
import * as assert from "assert";
import * as http from "http";
import { AddressInfo } from "net";
import { callApi, flattenParams, OpenApiError, resolveEndpoint } from "../src/cloud/openapi";
import { configurePacer } from "../src/cloud/pacer";
import { acs3Signature, TEST_CREDENTIALS } from "../testing/emulator";
import { useEmulator } from "../testing/emulator/fixture";
import { steppedClock } from "../testing/steppedClock";

const region = "cn-hangzhou";
const fast = { baseDelayMs: 1, maxDelayMs: 5 };

async function rejects(p: Promise<unknown>): Promise<OpenApiError> {
    try {
        await p;
    } catch (e) {
        assert.ok(e instanceof OpenApiError, `expected OpenApiError, got ${String(e)}`);
        return e;
    }
    throw new Error("expected the call to fail");
}

describe("openapi wrapper against the emulator", () => {
    const fx = useEmulator();

    it("signs, sends RegionId, expands arrays and parses the response", async () => {
        const [a, b] = fx.emu.addInstances(2);
        fx.emu.stopInstance(b);
        const res = await callApi("ecs", "DescribeInstanceStatus", { InstanceId: [a, b] }, { region });
        const statuses = (res.InstanceStatuses as { InstanceStatus: { InstanceId: string; Status: string }[] }).InstanceStatus;
        assert.deepStrictEqual(statuses.map((s) => [s.InstanceId, s.Status]), [[a, "Running"], [b, "Stopped"]]);
        assert.match(String(res.RequestId), /^[0-9A-F-]{36}$/);
        const call = fx.emu.calls[0];
        assert.strictEqual(call.status, 200);
        assert.strictEqual(call.product, "ecs");
        assert.deepStrictEqual([call.params.RegionId, call.params["InstanceId.1"], call.params["InstanceId.2"]], [region, a, b]);
        assert.strictEqual(call.params.ClientToken, undefined, "read-only calls carry no ClientToken");
    });

    it("routes ESS and VPC calls by API version", async () => {
        const g = fx.emu.addScalingGroup({ desiredCapacity: 2 });
        const t = fx.emu.addRouteTable();
        const groups = await callApi("ess", "DescribeScalingGroups", { ScalingGroupId: [g.scalingGroupId] }, { region });
        assert.strictEqual((groups.ScalingGroups as { ScalingGroup: { TotalCapacity: number }[] }).ScalingGroup[0].TotalCapacity, 2);
        await callApi("vpc", "CreateRouteEntry", { RouteTableId: t.routeTableId, DestinationCidrBlock: "172.16.0.0/25", NextHopType: "Instance", NextHopId: fx.emu.scalingGroupInstances(g.scalingGroupId)[0] }, { region });
        assert.deepStrictEqual(fx.emu.routeTables.get(t.routeTableId)?.entries.map((e) => e.destinationCidrBlock), ["172.16.0.0/25"]);
        assert.deepStrictEqual(fx.emu.calls.map((c) => c.product), ["ess", "vpc"]);
    });

    it("retries throttling with the same ClientToken, then succeeds", async () => {
        const [id] = fx.emu.addInstances(1);
        fx.emu.throttle("RunCommand", 2);
        const retries: string[] = [];
        await callApi("ecs", "RunCommand", { Type: "RunShellScript", CommandContent: "echo hi", InstanceId: [id] }, { region, retry: { ...fast, onRetry: (r) => retries.push(r.code) } });
        const calls = fx.emu.callsOf("RunCommand");
        assert.deepStrictEqual(calls.map((c) => c.status), [400, 400, 200]);
        assert.deepStrictEqual(retries, ["Throttling.User", "Throttling.User"]);
        const tokens = new Set(calls.map((c) => c.params.ClientToken));
        assert.strictEqual(tokens.size, 1, "one ClientToken across retries");
        assert.match([...tokens][0], /^[0-9a-f-]{36}$/);
    });

    it("sends a ClientToken only to actions that define one (StopInstance does not)", async () => {
        const [id] = fx.emu.addInstances(1);
        fx.emu.throttle("StopInstance", 1);
        await callApi("ecs", "StopInstance", { InstanceId: id }, { region, retry: fast });
        assert.deepStrictEqual(fx.emu.callsOf("StopInstance").map((c) => c.params.ClientToken), [undefined, undefined]);
        assert.strictEqual(fx.emu.instances.get(id)?.status, "Stopped");
    });

    it("retries 5xx and ServiceUnavailable", async () => {
        fx.emu.fail5xx("DescribeInstances", 1, 500);
        fx.emu.fail5xx("DescribeInstances", 1, 503);
        await callApi("ecs", "DescribeInstances", {}, { region, retry: fast });
        assert.deepStrictEqual(fx.emu.callsOf("DescribeInstances").map((c) => c.code), ["InternalError", "ServiceUnavailable", ""]);
    });

    it("a lost response is retried with the same ClientToken and acts once", async () => {
        const [id] = fx.emu.addInstances(1);
        fx.emu.onCommand(/true/, { exitCode: 0 });
        fx.emu.inject("RunCommand", { status: 503, code: "ServiceUnavailable", message: "lost", times: 1, afterApply: true });
        const res = await callApi("ecs", "RunCommand", { Type: "RunShellScript", CommandContent: "true", InstanceId: [id] }, { region, retry: fast });
        assert.strictEqual(fx.emu.callsOf("RunCommand").length, 2);
        assert.strictEqual(fx.emu.state.invocations.size, 1, "the retry did not create a second invocation");
        assert.ok(fx.emu.state.invocations.has(String(res.InvokeId)));
    });

    it("honours x-acs-retry-after: the throttled action's next call waits that long, and without the header barely at all", async () => {
        // One clock for the pacer's holds and the retries' waits, moved only by the waits asked for: what is checked
        // is the time the retries were held for, not the machine's speed.
        const clock = steppedClock();
        configurePacer({ clock });
        const sentAt: number[] = [];
        fx.emu.beforeRequest = ({ action }) => { if (action === "DescribeInstances") sentAt.push(clock.now()); return undefined; };
        const gaps = () => sentAt.slice(1).map((t, k) => t - sentAt[k]);

        fx.emu.throttle("DescribeInstances", 2, 250);
        await callApi("ecs", "DescribeInstances", {}, { region, retry: { ...fast, clock } });
        assert.strictEqual(sentAt.length, 3, "two throttled answers, then the call that went through");
        assert.ok(gaps().every((ms) => ms >= 250 && ms <= 260), `each retry waited the 250 ms the server asked for (a token's time more at most): ${gaps()}`);

        sentAt.length = 0;
        fx.emu.throttle("DescribeInstances", 2);
        await callApi("ecs", "DescribeInstances", {}, { region, retry: { ...fast, clock } });
        assert.strictEqual(sentAt.length, 3);
        assert.ok(gaps().every((ms) => ms < 50), `without the header only the halved rate spaces the retries: ${gaps()}`);
    });

    it("gives up on a 5xx after maxAttempts with a typed, actionable error", async () => {
        fx.emu.fail5xx("DescribeInstances", 100);
        const err = await rejects(callApi("ecs", "DescribeInstances", {}, { region, retry: { ...fast, maxAttempts: 4 } }));
        assert.strictEqual(err.code, "ServiceUnavailable");
        assert.strictEqual(err.action, "DescribeInstances");
        assert.strictEqual(err.product, "ecs");
        assert.strictEqual(err.httpStatus, 503);
        assert.strictEqual(err.retryable, true);
        assert.strictEqual(err.attempts, 4);
        assert.match(err.requestId, /^[0-9A-F-]{36}$/);
        assert.match(err.message, /ECS DescribeInstances failed: ServiceUnavailable .*gave up after 4 attempt/);
        assert.strictEqual(fx.emu.callsOf("DescribeInstances").length, 4);
    });

    it("bounds 5xx retries by total time, not only attempts", async () => {
        fx.emu.fail5xx("DescribeInstances", 1000);
        // A clock that moves only by the waits the wrapper sleeps, so the bound is checked against the waits it asked
        // for, not the machine's speed: each is a jittered backoff under its cap, and none would end past 350 ms.
        let now = 0;
        const waits: number[] = [];
        const clock = { now: () => now, sleep: async (ms: number) => { waits.push(ms); now += ms; } };
        // the backoff each retry drew (full jitter: 0 is a draw too, and a 0 ms backoff sleeps not at all)
        const backoffs: number[] = [];
        const onRetry = (r: { delayMs: number }) => { backoffs.push(r.delayMs); };
        const err = await rejects(callApi("ecs", "DescribeInstances", {}, { region, retry: { maxAttempts: 1000, totalTimeoutMs: 350, baseDelayMs: 50, maxDelayMs: 100, clock, onRetry } }));
        assert.strictEqual(err.code, "ServiceUnavailable");
        assert.ok(err.attempts >= 2 && err.attempts < 1000, `attempts ${err.attempts}`);
        assert.strictEqual(backoffs.length, err.attempts - 1, "a backoff before each retry, none after the last attempt");
        assert.deepStrictEqual(waits, backoffs.filter((ms) => ms > 0), "each backoff slept on the clock");
        assert.ok(backoffs.every((ms, i) => ms >= 0 && ms < Math.min(100, 50 * 2 ** i)), `backoffs ${backoffs}`);
        assert.ok(now <= 350, `slept ${now} ms in all`);
        assert.strictEqual(fx.emu.callsOf("DescribeInstances").length, err.attempts);
    });

    it("retries throttling within a time budget whatever maxAttempts says, then gives up with a typed error", async () => {
        fx.emu.throttle("DescribeInstances", 1000);
        const err = await rejects(callApi("ecs", "DescribeInstances", {}, { region, retry: { ...fast, maxAttempts: 2, throttleBudgetMs: 1500 } }));
        assert.strictEqual(err.code, "Throttling.User");
        assert.strictEqual(err.httpStatus, 400);
        assert.ok(err.attempts > 2, `more attempts than maxAttempts: ${err.attempts}`);
        assert.match(err.message, /ECS DescribeInstances failed: Throttling\.User .*over the throttling budget/);
        assert.strictEqual(fx.emu.callsOf("DescribeInstances").length, err.attempts);
    });

    it("does not retry client errors", async () => {
        const err = await rejects(callApi("ecs", "StopInstance", { InstanceId: "i-missing" }, { region, retry: fast }));
        assert.strictEqual(err.code, "InvalidInstanceId.NotFound");
        assert.strictEqual(err.httpStatus, 404);
        assert.strictEqual(err.retryable, false);
        assert.match(err.message, /does not exist/);
        assert.strictEqual(fx.emu.calls.length, 1);
    });

    it("retries extra codes the caller names (ESS ScalingActivityInProgress)", async () => {
        const g = fx.emu.addScalingGroup({ desiredCapacity: 2 });
        const [victim] = fx.emu.scalingGroupInstances(g.scalingGroupId);
        fx.emu.inject("RemoveInstances", { status: 403, code: "ScalingActivityInProgress", message: "busy", times: 1 });
        await callApi("ess", "RemoveInstances", { ScalingGroupId: g.scalingGroupId, InstanceId: [victim] }, { region, retry: { ...fast, retryableCodes: ["ScalingActivityInProgress"] } });
        assert.strictEqual(fx.emu.instances.has(victim), false, "auto-created instance released");
        assert.deepStrictEqual(fx.emu.scalingGroupInstances(g.scalingGroupId).length, 1);
    });

    it("the emulator rejects a wrong secret (SignatureDoesNotMatch) and an unknown key", async () => {
        process.env.ALIBABA_CLOUD_ACCESS_KEY_SECRET = "not-the-secret";
        const bad = await rejects(callApi("ecs", "DescribeInstances", {}, { region, retry: fast }));
        assert.strictEqual(bad.code, "SignatureDoesNotMatch");
        assert.match(bad.message, /ALIBABA_CLOUD_ACCESS_KEY_SECRET/);
        assert.ok(!bad.message.includes("not-the-secret"), "the secret never appears in errors");
        process.env.ALIBABA_CLOUD_ACCESS_KEY_ID = "LTAIunknown";
        const unknown = await rejects(callApi("ecs", "DescribeInstances", {}, { region, retry: fast }));
        assert.strictEqual(unknown.code, "InvalidAccessKeyId.NotFound");
        process.env.ALIBABA_CLOUD_ACCESS_KEY_ID = TEST_CREDENTIALS.accessKeyId;
        process.env.ALIBABA_CLOUD_ACCESS_KEY_SECRET = TEST_CREDENTIALS.accessKeySecret;
        await callApi("ecs", "DescribeInstances", {}, { region });
        assert.deepStrictEqual(fx.emu.calls.map((c) => c.status), [400, 404, 200]);
    });

    it("reads credentials at call time (STS token sent when set)", async () => {
        await callApi("ecs", "DescribeInstances", {}, { region });
        process.env.ALIBABA_CLOUD_SECURITY_TOKEN = "sts-token-for-test";
        await callApi("ecs", "DescribeInstances", {}, { region });
        assert.deepStrictEqual(fx.emu.calls.map((c) => [c.status, c.accessKeyId, c.securityToken]),
            [[200, TEST_CREDENTIALS.accessKeyId, false], [200, TEST_CREDENTIALS.accessKeyId, true]]);
    });
});

describe("openapi wrapper without the emulator", () => {
    it("retries network errors and reports them with the endpoint hint", async () => {
        const server = http.createServer();
        await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
        const port = (server.address() as AddressInfo).port;
        await new Promise<void>((r) => server.close(() => r()));
        const saved = { ...process.env };
        Object.assign(process.env, { ALICLOUD_KUBEADM_ENDPOINT: `http://127.0.0.1:${port}`, ALIBABA_CLOUD_ACCESS_KEY_ID: "a", ALIBABA_CLOUD_ACCESS_KEY_SECRET: "b" });
        try {
            const err = await rejects(callApi("ecs", "DescribeInstances", { InstanceName: "tok-abc123" }, { region, retry: { ...fast, maxAttempts: 3 } }));
            assert.ok(!err.message.includes("tok-abc123"), "request parameters never appear in errors");
            assert.strictEqual(err.code, "ECONNREFUSED");
            assert.strictEqual(err.httpStatus, 0);
            assert.strictEqual(err.attempts, 3);
            assert.match(err.message, /ALICLOUD_KUBEADM_ENDPOINT/);
        } finally {
            for (const k of ["ALICLOUD_KUBEADM_ENDPOINT", "ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET"]) {
                if (saved[k] === undefined) delete process.env[k]; else process.env[k] = saved[k];
            }
        }
    });

    it("resolves public, VPC-internal and overridden endpoints", () => {
        const saved = process.env.ALICLOUD_KUBEADM_ENDPOINT;
        try {
            delete process.env.ALICLOUD_KUBEADM_ENDPOINT;
            assert.deepStrictEqual(resolveEndpoint("ess", "cn-beijing"), { host: "ess.cn-beijing.aliyuncs.com", protocol: "https" });
            assert.deepStrictEqual(resolveEndpoint("vpc", "cn-beijing", true), { host: "vpc-vpc.cn-beijing.aliyuncs.com", protocol: "https" });
            process.env.ALICLOUD_KUBEADM_ENDPOINT = "http://127.0.0.1:9999/";
            assert.deepStrictEqual(resolveEndpoint("ecs", "cn-beijing", true), { host: "127.0.0.1:9999", protocol: "http" });
            process.env.ALICLOUD_KUBEADM_ENDPOINT = "ftp://x";
            assert.throws(() => resolveEndpoint("ecs", "cn-beijing"), /ALICLOUD_KUBEADM_ENDPOINT/);
        } finally {
            if (saved === undefined) delete process.env.ALICLOUD_KUBEADM_ENDPOINT; else process.env.ALICLOUD_KUBEADM_ENDPOINT = saved;
        }
    });

    it("flattens array parameters and drops undefined", () => {
        assert.deepStrictEqual(flattenParams({ InstanceId: ["i-1", "i-2"], Force: true, Size: 3, Skip: undefined }),
            { "InstanceId.1": "i-1", "InstanceId.2": "i-2", Force: "true", Size: "3" });
    });

    it("the emulator's verifier reproduces the official ACS3-HMAC-SHA256 vector", () => {
        const headers = {
            host: "ecs.cn-shanghai.aliyuncs.com", "x-acs-action": "RunInstances", "x-acs-version": "2014-05-26",
            "x-acs-date": "2023-10-26T10:22:32Z", "x-acs-signature-nonce": "3156853299f313e23d1673dc12e1703d",
            "x-acs-content-sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        };
        const sig = acs3Signature({
            method: "POST", path: "/", query: { ImageId: "win2019_1809_x64_dtc_zh-cn_40G_alibase_20230811.vhd", RegionId: "cn-shanghai" },
            headers, signedHeaders: Object.keys(headers), payloadHash: headers["x-acs-content-sha256"],
        }, "YourAccessKeySecret");
        assert.strictEqual(sig, "06563a9e1b43f5dfe96b81484da74bceab24a1d853912eee15083a6f0f3283c0");
    });
});
