/**
 * The process's pacer of cloud calls (src/cloud/pacer.ts): a token bucket per action, slowed down by throttling
 * answers and given back with time, its waits reported, and one set of buckets for every dynamic resource a
 * provider host runs. World: the pacer itself, and the emulator (with its per-action rate limit) for calls.
 */
import * as assert from "assert";
import * as pulumi from "@pulumi/pulumi";
import { callApi } from "../src/cloud/openapi";
import { listObjects, ossRequest } from "../src/cloud/oss";
import { configurePacer, MAX_RETRY_AFTER_MS, pace, pacerBuckets, parseRates, reportPacingTo, resetPacer, throttled } from "../src/cloud/pacer";
import { nodeMembershipProvider } from "../src/providers/nodeMembership";
import { poolCapacityProvider } from "../src/providers/poolCapacity";
import { useEmulator } from "../testing/emulator/fixture";
import { fakeCluster } from "../testing/fakeCluster";
import { admissionBundle } from "../src/components/admission";
import { TEST_CREDENTIALS } from "../testing/emulator";
import * as fs from "fs";
import * as os from "os";
import { isBuiltin } from "module";
import * as path from "path";

const REGION = "cn-hangzhou";

describe("the pacer: one token bucket per action, per process", () => {
    beforeEach(() => resetPacer());
    after(() => resetPacer());

    it("calls beyond the burst wait in the action's queue and are served in the order they asked; another action has its own bucket", async () => {
        configurePacer({ rates: { "*": 5 }, burst: 2 }); // slow enough that no token comes back while the calls are made
        const served: number[] = [];
        const calls = Array.from({ length: 5 }, (_, k) => pace("ecs:DescribeInstances").then(() => served.push(k)));
        assert.strictEqual(pacerBuckets()["ecs:DescribeInstances"].queued, 3, "the burst goes at once, the rest wait");
        assert.strictEqual((await pace("ess:DescribeScalingGroups")).waitedMs, 0, "another action is not held by the first");
        await Promise.all(calls);
        assert.deepStrictEqual(served, [0, 1, 2, 3, 4]);
        assert.deepStrictEqual(Object.keys(pacerBuckets()).sort(), ["ecs:DescribeInstances", "ess:DescribeScalingGroups"]);
    });

    it("a throttling answer halves the action's rate once per round (answers to calls whose slot came before the cut count once) and spends its burst", () => {
        configurePacer({ rates: { "ecs:InvokeCommand": 8 }, burst: 4 });
        const sentBefore = Date.now() - 1;
        void pace("ecs:InvokeCommand");
        throttled("ecs:InvokeCommand", undefined, sentBefore);
        throttled("ecs:InvokeCommand", undefined, sentBefore); // its slot taken before the cut: the same signal
        // (the rate creeps back by 0.5 calls/s per second meanwhile: compared to a tenth)
        let b = pacerBuckets()["ecs:InvokeCommand"];
        assert.deepStrictEqual([Math.round(b.rate * 10) / 10, b.burst, b.throttled], [4, 1, 2]);
        throttled("ecs:InvokeCommand", undefined, Date.now() + 1); // its slot taken after the cut: a new signal
        b = pacerBuckets()["ecs:InvokeCommand"];
        assert.strictEqual(Math.round(b.rate * 10) / 10, 2);
    });

    it("a server's retry-after holds the action's next slot that long, but never past a minute (MAX_RETRY_AFTER_MS)", () => {
        configurePacer({ rates: { "*": 10 }, burst: 1 });
        /** How long the action's next call waits, ms: the tokens it owes at its rate. */
        const held = (key: string) => { const b = pacerBuckets()[key]; return Math.round((Math.max(0, -b.tokens) / b.rate) * 1000); };
        throttled("ecs:DescribeInstances", 5000);
        assert.strictEqual(held("ecs:DescribeInstances"), 5000);
        throttled("ecs:InvokeCommand", 30 * 86_400_000); // a month: a wrong or hostile header
        assert.strictEqual(held("ecs:InvokeCommand"), MAX_RETRY_AFTER_MS);
        throttled("ecs:RunCommand", Number.NaN);
        assert.strictEqual(held("ecs:RunCommand"), 0, "an unreadable one holds nothing beyond the halved rate");
    });

    it("rates come from ALICLOUD_KUBEADM_API_RATE: one number for every action, or per action and product", () => {
        assert.deepStrictEqual(parseRates("5"), { "*": 5 });
        assert.deepStrictEqual(parseRates("*=5, ecs:DescribeInvocationResults=10,ess:*=2,bad=x,=3"), { "*": 5, "ecs:DescribeInvocationResults": 10, "ess:*": 2 });
        configurePacer({ rates: { "ess:*": 2, "ecs:InvokeCommand": 7 } });
        void pace("ess:DescribeScalingGroups");
        void pace("ecs:InvokeCommand");
        const b = pacerBuckets();
        assert.deepStrictEqual([b["ess:DescribeScalingGroups"].configured, b["ecs:InvokeCommand"].configured], [2, 7]);
    });

    it("a wait that grows past 2 s is reported with the action, its rate and the wait", async () => {
        const lines: string[] = [];
        reportPacingTo((m) => lines.push(m));
        configurePacer({ rates: { "*": 1 }, burst: 1 });
        for (let k = 0; k < 4; k++) void pace("vpc:DescribeRouteEntryList"); // waits of 0, ~1, ~2 and ~3 s
        assert.ok(lines.length >= 1 && lines.length <= 2, lines.join("\n"));
        assert.match(lines[0], /^cloud API vpc:DescribeRouteEntryList: at 1 calls\/s; calls queue, the next waits [23]\.\d s \(ALICLOUD_KUBEADM_API_RATE sets the rate\)$/);
        reportPacingTo(undefined);
    });
});

describe("the pacer against a rate limit (emulator)", () => {
    const ctx = useEmulator();

    it("60 calls of one action against a limit of 5 per second all succeed; the pacer slows down on the first throttling answers", async function () {
        this.timeout(60_000);
        resetPacer(); // the defaults: 20 calls/s per action, above the limit
        ctx.emu.rateLimit({ DescribeInstances: 5 });
        await Promise.all(Array.from({ length: 60 }, () => callApi("ecs", "DescribeInstances", {}, { region: REGION })));
        const calls = ctx.emu.callsOf("DescribeInstances");
        assert.strictEqual(calls.filter((x) => x.code === "").length, 60);
        const b = pacerBuckets()["ecs:DescribeInstances"];
        assert.ok(b.throttled > 0 && b.rate < b.configured, `slowed down: ${JSON.stringify(b)}`);
        assert.ok(calls.filter((x) => x.code).length < 60, `fewer throttling answers than calls: ${calls.filter((x) => x.code).length}`);
    });

    it("two dynamic resources of different types in one provider host share one bucket per action", async function () {
        this.timeout(60_000);
        const c = await fakeCluster(ctx.emu, REGION);
        const group = ctx.emu.addScalingGroup({ desiredCapacity: 1, maxSize: 3 }).scalingGroupId;
        const existing = ctx.emu.addInstance().instanceId;
        c.addNode(existing, { pods: [] });
        // Each provider serialized as Pulumi stores it, then loaded in this one process the way the dynamic-provider
        // host loads it (require-from-string): every module it uses is its own copy, by value.
        const requireFromString = require("require-from-string") as (code: string) => { handler: () => pulumi.dynamic.ResourceProvider };
        const load = async (p: pulumi.dynamic.ResourceProvider) => requireFromString((await pulumi.runtime.serializeFunction(() => p)).text).handler();
        const [pool, membership] = [await load(poolCapacityProvider), await load(nodeMembershipProvider)];
        resetPacer();
        const auto = { region: REGION, scalingGroupId: group, poolName: "general", masterInstanceId: c.master, commands: c.commands, mode: "observe" as const, maxSize: 3, pollIntervalMs: 10 };
        await pool.update!("x", { ...auto, readyInstanceIds: [] }, auto);
        await membership.create!({ region: REGION, masterInstanceId: c.master, commands: c.commands, instanceId: existing, mode: "ssh", pollIntervalMs: 10, pollSeconds: 0.02 });
        const buckets = pacerBuckets();
        const invokes = ctx.emu.callsOf("InvokeCommand").length;
        const ess = ctx.emu.calls.filter((x) => x.product === "ess").length;
        assert.ok(ess > 0 && invokes > 0);
        assert.strictEqual(buckets["ecs:InvokeCommand"].calls, invokes, "one InvokeCommand bucket counted the calls of both resources");
        assert.strictEqual(Object.entries(buckets).filter(([k]) => k.startsWith("ess:")).reduce((n, [, b]) => n + b.calls, 0), ess);
    });

    it("OSS requests (the restore's listing and download) take their turn from the same pacer", async () => {
        ctx.emu.oss.addBucket("pacer-bucket");
        ctx.emu.oss.buckets.get("pacer-bucket")!.objects.set("dev/x", [{ body: Buffer.from("backup"), versionId: "v1", lastModified: new Date().toISOString(), etag: "\"A\"" }]);
        const target = { endpoint: "http://oss-cn-hangzhou.aliyuncs.com", region: REGION, bucket: "pacer-bucket", connectTo: `127.0.0.1:${new URL(ctx.emu.endpoint).port}` };
        resetPacer();
        const [object] = await listObjects(target, "dev/", TEST_CREDENTIALS);
        assert.strictEqual((await ossRequest("GET", target, object.key, TEST_CREDENTIALS)).toString(), "backup");
        assert.strictEqual(pacerBuckets()["oss:GET"].calls, 2, "the listing and the download, one bucket");
    });

    it("the admission service as bundled (its own copy of the pacer beside it) takes its cloud calls' tokens from the process's pacer", async () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "admission-bundle-"));
        try {
            for (const [name, text] of Object.entries(admissionBundle())) fs.writeFileSync(path.join(dir, name), text);
            assert.match(fs.readFileSync(path.join(dir, "cloud.js"), "utf8"), /require\("\.\/pacer"\)/);
            // Self-contained: every module it requires is a Node built-in or a file of the bundle.
            for (const [name, text] of Object.entries(admissionBundle()).filter(([n]) => n.endsWith(".js"))) {
                for (const [, spec] of text.matchAll(/require\("([^"]+)"\)/g)) {
                    assert.ok(spec.startsWith("./") ? fs.existsSync(path.join(dir, `${spec.slice(2)}.js`)) : isBuiltin(spec), `${name} requires ${spec}`);
                }
            }
            // eslint-disable-next-line @typescript-eslint/no-require-imports
            assert.strictEqual(typeof (require(path.join(dir, "server.js")) as { startServer: unknown }).startServer, "function", "the entry the DaemonSet runs loads from the bundle");
            // eslint-disable-next-line @typescript-eslint/no-require-imports
            const { RpcClient, StaticPools } = require(path.join(dir, "cloud.js")) as typeof import("../src/admission/cloud");
            resetPacer();
            const rpc = new RpcClient({ regionId: REGION, pools: new StaticPools({}), existingNodes: {}, endpoint: ctx.emu.endpoint,
                credentials: async () => ({ accessKeyId: TEST_CREDENTIALS.accessKeyId, accessKeySecret: TEST_CREDENTIALS.accessKeySecret }) });
            await rpc.call("ecs", "DescribeInstances", {});
            await callApi("ecs", "DescribeInstances", {}, { region: REGION });
            assert.strictEqual(pacerBuckets()["ecs:DescribeInstances"].calls, 2, "the service's call and the library's, one bucket");
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });
});
