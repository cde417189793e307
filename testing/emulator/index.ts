/**
 * Local Alibaba Cloud OpenAPI emulator for tests: a loopback HTTP server (127.0.0.1, random port)
 * that the real `@alicloud/openapi-core` SDK talks to unchanged (point `ALICLOUD_KUBEADM_ENDPOINT` at
 * `emulator.endpoint`). It verifies ACS3-HMAC-SHA256 signatures (and the older RPC V1 HMAC-SHA1 ones, which the
 * Cluster Autoscaler's vendored SDK sends), routes on `x-acs-version` + `x-acs-action` (or `Version` + `Action`),
 * keeps ECS / ESS / VPC state in memory, answers Cloud Assistant commands with handlers the test
 * registers, records every call, and injects faults (throttling, 5xx, latency, offline agents,
 * stopped or released instances).
 *
 * It models Alibaba Cloud, not this library: each behaviour cites its public source where it is
 * implemented (ecs.ts, ess.ts, vpc.ts), and where the sources are silent the harsher behaviour is
 * modelled and the comment says so. Knobs on `emu.state` (defaults): `activityDurationMs` (0),
 * `routeTaskMs` (0), `routeConflictCodes` (TaskConflict, OperationConflict, IncorrectRouteEntryStatus,
 * SystemBusy), `transitionMs` (0), `transitionReads` (0), `deliveryTimeoutMs` (60000), `protectedMembersRemovable` (false),
 * `presetPasswordImages` (empty), `syncNotMatchForStoppedInstances` (false), `invocationResultsPageCap` (50),
 * `maxInstancesPerInvocation` (100), `rateLimits` (none: off) with `rateWindowMs` (1000).
 * Hooks: `onCommand`, `setAgentOffline(id, "ClientNotRunning" | "ClientNotResponse" | "DeliveryTimeout")`,
 * `failNextActivity`, `runHealthCheck`, `activitiesOf`, `inject`, `throttle`, `rateLimit`, `fail5xx`; `advance(ms)` steps
 * the emulator's clock (`state.now()`, the wall clock plus `clockOffsetMs`) past an activity, route task, delivery
 * window or rate-limit window; `stopClock()` takes the wall clock out of it, and `steppedClock()` is a `Clock` for
 * the code under test whose sleeps step it (the code's waits then end what they wait for, whatever the machine's speed).
 */
import * as http from "http";
import { AddressInfo } from "net";
import * as querystring from "querystring";
import { ECS_ACTIONS } from "./ecs";
import { ESS_ACTIONS, launchInstance, runHealthCheck, settleActivities } from "./ess";
import { ActivityFault, AgentFailure, ApiError, CommandHandler, EmuActivity, EmuCommand, EmuInstance, EmuRouteEntry, EmuRouteTable, EmuScalingGroup, EmulatorState, idGeneration, isoMinute, isoTime, mintedIds, requestId } from "./state";
import { verifyRequest, verifyRpcV1 } from "./signature";
import { settleRoutes, VPC_ACTIONS } from "./vpc";
import { OssError, ossErrorXml, OssState } from "./oss";
import type { Clock } from "../../src/cloud/wait";

export * from "./state";
export { OssState, policyAllows, type OssBucket, type OssPolicy } from "./oss";
export { acs3Signature, verifyRequest, percentEncode, rpcV1Signature, verifyRpcV1 } from "./signature";

/** Credentials the emulator accepts by default. Test-only values. */
export const TEST_CREDENTIALS = { accessKeyId: "LTAI5tEmulatorTestKeyId", accessKeySecret: "emulator-test-secret-0123456789" } as const;

/** Products the emulator knows, keyed by API version. */
const PRODUCTS: Record<string, { product: "ecs" | "ess" | "vpc"; actions: Record<string, (st: EmulatorState, p: Record<string, string>) => Record<string, unknown> | Promise<Record<string, unknown>>> }> = {
    "2014-05-26": { product: "ecs", actions: ECS_ACTIONS },
    "2014-08-28": { product: "ess", actions: ESS_ACTIONS },
    "2016-04-28": { product: "vpc", actions: VPC_ACTIONS },
};

/** One recorded call (every request, including rejected ones). */
export interface RecordedCall {
    product: "ecs" | "ess" | "vpc" | "oss" | "unknown";
    action: string;
    params: Record<string, string>;
    /** The request URL as received (path and query): what URL logs of proxies and gateways keep. */
    url: string;
    /** The raw request body (form-encoded parameters, or empty). */
    body: string;
    /** HTTP status answered. */
    status: number;
    /** Error code answered, "" on success. */
    code: string;
    /** AccessKey id from the Authorization header ("" when absent). */
    accessKeyId: string;
    /** Whether an STS token header (`x-acs-security-token`) was sent. */
    securityToken: boolean;
    at: number;
}

/** A fault to inject into the next `times` calls of an action (`"*"` = every action). */
export interface Fault {
    status: number;
    code: string;
    message: string;
    times: number;
    /**
     * Perform the action first, then answer with the error (a lost response). A retry with the same
     * ClientToken gets the cached answer only for the actions in {@link CLIENT_TOKEN_ACTIONS}; any other
     * action runs again.
     */
    afterApply?: boolean;
    /** Extra response headers, e.g. `x-acs-retry-after`. */
    headers?: Record<string, string>;
    /** Only calls whose parameters this accepts (test hook: one batch of many). Default every call. */
    when?: (params: Record<string, string>) => boolean;
}

/** Options of {@link startEmulator}. */
export interface EmulatorOptions {
    /** Accepted AccessKey pairs. Default: [{@link TEST_CREDENTIALS}]. */
    credentials?: { accessKeyId: string; accessKeySecret: string }[];
    /** Delay added to every response, ms. Default 0. */
    latencyMs?: number;
}

const isMutating = (action: string) => !/^(Describe|List|Get|Query)/.test(action);

/**
 * The actions (of those the emulator implements) whose official request model has a `ClientToken`:
 * only these are idempotent by token. For every other action the token is ignored, as the gateway
 * ignores unknown parameters, so a retry after a lost response acts twice, as in the cloud.
 * - ECS (npm @alicloud/ecs20140526 src/models/<Action>Request.ts): RunCommand, CreateCommand,
 *   InvokeCommand, ReplaceSystemDisk have it; ModifyInstanceAttribute, StopInstance, StartInstance,
 *   DeleteInstance, DeleteCommand do not.
 * - ESS 2014-08-28 (aliyun/alibaba-cloud-sdk-go services/ess/*.go request structs): RemoveInstances
 *   (remove_instances.go@d5c3d8e), ScaleWithAdjustment (scale_with_adjustment.go@21c4618), EnterStandby
 *   and ExitStandby (@cd941e9) have it; SuspendProcesses and ResumeProcesses too (their API references,
 *   https://www.alibabacloud.com/help/en/auto-scaling/developer-reference/api-ess-2014-08-28-suspendprocesses); ModifyScalingGroup (@1334f3e), DetachInstances, AttachInstances
 *   (@21c4618) and SetInstancesProtection (@dbe30d7) do not.
 * - VPC 2016-04-28 (aliyun/alibabacloud-typescript-sdk vpc-20160428/src/models/*Request.ts): CreateRouteEntry
 *   has it; DeleteRouteEntry, DeleteRouteEntries and CreateRouteEntries do not.
 */
export const CLIENT_TOKEN_ACTIONS: Readonly<Record<"ecs" | "ess" | "vpc", readonly string[]>> = {
    ecs: ["RunCommand", "CreateCommand", "InvokeCommand", "ReplaceSystemDisk"],
    ess: ["RemoveInstances", "ScaleWithAdjustment", "EnterStandby", "ExitStandby", "SuspendProcesses", "ResumeProcesses"],
    vpc: ["CreateRouteEntry"],
};

/** Emulator generation → the test it served ({@link Emulator.claim}). */
const owners = new Map<number, string>();

/** A running emulator. */
export class Emulator {
    /** `http://127.0.0.1:PORT`, for `ALICLOUD_KUBEADM_ENDPOINT`. */
    readonly endpoint: string;
    /** All in-memory state; tests may inspect or change it. */
    readonly state = new EmulatorState();
    /** Every call received, in order. */
    readonly calls: RecordedCall[] = [];
    /** OSS (testing/emulator/oss.ts): buckets, objects, the STS credentials and policies it accepts. Requests whose Host
     *  is `<bucket>.oss-<region>[-internal].aliyuncs.com` go there (point the client at this emulator's port). */
    readonly oss = new OssState();
    /** Delay added to every response, ms. */
    latencyMs: number;
    /**
     * Test hook (not a cloud behaviour): consulted before every request's handler; a fault it returns is answered
     * instead and nothing is applied. The fault matrix uses it to fail one call in turn, and to refuse everything
     * after a simulated crash of the caller.
     */
    beforeRequest?: (req: { product: string; action: string; params: Record<string, string> }) => Omit<Fault, "times"> | undefined;
    /** Test hook: called after a request was applied and answered successfully. */
    afterRequest?: (req: { product: string; action: string; params: Record<string, string> }) => void;
    /** Test hook: called when `rateLimit` refuses a call (before the answer goes out). */
    onThrottled?: (action: string) => void;
    /**
     * Test hygiene, not a cloud behaviour: the requests that named an id another emulator minted, each with its action,
     * those ids and the test that emulator served (see {@link claim}). Such a request comes from a loop an earlier test
     * left running (it reads the endpoint at call time, so it reaches whichever emulator is current): it is answered
     * `Emulator.StrayRequest` without being applied, recorded in {@link calls} or counted by {@link rateLimit}, and the
     * fixture fails the test that received it, naming the one that left the loop.
     */
    readonly strayRequests: Array<{ action: string; ids: string[]; from: string[] }> = [];
    private readonly faults = new Map<string, Fault[]>();
    private readonly idempotent = new Map<string, { params: string; out: Record<string, unknown> }>();
    private readonly nonces = new Set<string>();
    private readonly secrets: Map<string, string>;

    /** @internal use {@link startEmulator}. */
    constructor(private readonly server: http.Server, opts: EmulatorOptions) {
        const port = (server.address() as AddressInfo).port;
        this.endpoint = `http://127.0.0.1:${port}`;
        this.latencyMs = opts.latencyMs ?? 0;
        this.secrets = new Map((opts.credentials ?? [TEST_CREDENTIALS]).map((c) => [c.accessKeyId, c.accessKeySecret]));
        // The same AccessKeys sign OSS requests (an account's key: no RAM policy limits it here).
        for (const [id, secret] of this.secrets) this.oss.credentials.set(id, { secret });
        server.on("request", (req, res) => void this.handle(req, res));
    }

    /** ECS instances by id. */
    get instances(): Map<string, EmuInstance> { return this.state.instances; }
    /** ESS scaling groups by id. */
    get scalingGroups(): Map<string, EmuScalingGroup> { return this.state.scalingGroups; }
    /** VPC route tables by id. */
    get routeTables(): Map<string, EmuRouteTable> { return this.state.routeTables; }
    /** Saved Cloud Assistant commands by id. */
    get commands(): Map<string, EmuCommand> { return this.state.commands; }

    /** Names the test this emulator serves, so that a stray request elsewhere can name it. */
    claim(test: string): void { owners.set(this.state.generation, test); }

    /** Calls of one action. */
    callsOf(action: string): RecordedCall[] { return this.calls.filter((c) => c.action === action); }
    /** Calls of mutating actions (anything not Describe/List/Get/Query). */
    mutatingCalls(): RecordedCall[] { return this.calls.filter((c) => isMutating(c.action)); }
    /**
     * The mutating calls from index `since` of {@link calls} on, each as its action and its occurrence among the calls
     * of that action: the steps a fault matrix refuses one at a time (`inject(action, { when: nth occurrence })`).
     */
    mutatingSteps(since = 0): Array<[string, number]> {
        const seen = new Map<string, number>();
        return this.calls.slice(since).filter((c) => isMutating(c.action)).map((c) => {
            const n = seen.get(c.action) ?? 0;
            seen.set(c.action, n + 1);
            return [c.action, n];
        });
    }

    /**
     * Answer Cloud Assistant scripts matching `pattern` (tested against the decoded script).
     * The most recently registered match wins; unmatched scripts exit 127.
     * @returns A function that unregisters the handler.
     */
    onCommand(pattern: RegExp, handler: CommandHandler): () => void {
        const entry = { pattern, handler };
        this.state.handlers.push(entry);
        return () => { const k = this.state.handlers.indexOf(entry); if (k >= 0) this.state.handlers.splice(k, 1); };
    }

    /** Add a Running ECS instance with an online agent (override any field). */
    addInstance(init: Partial<EmuInstance> = {}): EmuInstance {
        const id = init.instanceId ?? this.state.nextId("i-emu");
        const n = this.state.nextSeq();
        const inst: EmuInstance = {
            instanceId: id, regionId: "cn-hangzhou", zoneId: "cn-hangzhou-h", instanceName: id, hostName: id, instanceType: "ecs.g7.large",
            imageId: "aliyun_3_x64_20G_alibase_20250101.vhd", status: "Running", userData: "", systemDiskId: this.state.nextId("d-emu"),
            vpcId: "vpc-emu", vSwitchId: "vsw-emu", privateIp: `192.168.${Math.floor(n / 250) % 250}.${(n % 250) + 2}`, agentOnline: true,
            agentFailure: "ClientNotRunning", tags: {}, creationTime: isoTime(), userDataRuns: 0, pendingUserDataRun: false,
            keyPairName: "", passwordSource: "instance", startTime: isoMinute(), ...init,
        };
        this.state.instances.set(id, inst);
        return inst;
    }

    /** Add `count` instances; returns their ids. */
    addInstances(count: number, init: Partial<Omit<EmuInstance, "instanceId">> = {}): string[] {
        return Array.from({ length: count }, () => this.addInstance(init).instanceId);
    }

    /**
     * Take the Cloud Assistant agent of an instance offline (`ClientNotRunning` by default).
     * `DeliveryTimeout`: commands are never delivered; each stays `Pending` for `state.deliveryTimeoutMs`
     * (default 60 s), then ends `Aborted` with ErrorCode `DeliveryTimeout`.
     */
    setAgentOffline(instanceId: string, code: AgentFailure = "ClientNotRunning"): void {
        const i = this.mustGet(instanceId);
        i.agentOnline = false;
        i.agentFailure = code;
    }

    /** Put an instance into Stopped without an API call. */
    stopInstance(instanceId: string): void { this.mustGet(instanceId).status = "Stopped"; }

    /** Release an instance without an API call (it disappears, also from scaling groups). */
    releaseInstance(instanceId: string): void {
        this.state.instances.delete(instanceId);
        this.state.scalingInstances.delete(instanceId);
    }

    /**
     * Add an Active scaling group with one active scaling configuration and `desiredCapacity`
     * auto-created Running instances.
     */
    addScalingGroup(init: Partial<EmuScalingGroup> & { userData?: string; imageId?: string; instanceType?: string; configurationTags?: Record<string, string> } = {}): EmuScalingGroup {
        const id = init.scalingGroupId ?? this.state.nextId("asg-emu");
        const cfgId = this.state.nextId("asc-emu");
        this.state.scalingConfigurations.set(cfgId, {
            scalingConfigurationId: cfgId, scalingConfigurationName: `${id}-config`, scalingGroupId: id, imageId: init.imageId ?? "aliyun_3_x64_20G_alibase_20250101.vhd",
            instanceType: init.instanceType ?? "ecs.g7.large", userData: init.userData ?? "", lifecycleState: "Active", tags: init.configurationTags ?? {},
        });
        const g: EmuScalingGroup = {
            scalingGroupId: id, scalingGroupName: id, regionId: "cn-hangzhou", minSize: 0, maxSize: 10, desiredCapacity: 0, lifecycleState: "Active",
            activeScalingConfigurationId: cfgId, vSwitchIds: ["vsw-emu"], vpcId: "vpc-emu", removalPolicies: ["OldestScalingConfiguration", "OldestInstance"],
            creationTime: isoTime(),
        };
        for (const k of Object.keys(g) as (keyof EmuScalingGroup)[]) if (init[k] !== undefined) (g as unknown as Record<string, unknown>)[k] = init[k];
        this.state.scalingGroups.set(id, g);
        for (let k = 0; k < g.desiredCapacity; k++) launchInstance(this.state, g);
        return g;
    }

    /** Ids of a scaling group's member instances, oldest first (activities that are due are ended first). */
    scalingGroupInstances(scalingGroupId: string): string[] {
        settleActivities(this.state);
        return [...this.state.scalingInstances.values()].filter((s) => s.scalingGroupId === scalingGroupId).sort((a, b) => a.seq - b.seq).map((s) => s.instanceId);
    }

    /**
     * Make the next scaling activity of a group (RemoveInstances, DetachInstances, AttachInstances,
     * ScaleWithAdjustment, a DesiredCapacity change, standby, health check) end `Failed` or `Rejected`
     * (its change does not happen) or `Warning` (partly: the `keep` instances stay as they were; default
     * the last one). Faults queue: each call arms one more activity.
     */
    failNextActivity(scalingGroupId: string, fault: ActivityFault): void {
        const list = this.state.activityFaults.get(scalingGroupId) ?? [];
        list.push({ ...fault });
        this.state.activityFaults.set(scalingGroupId, list);
    }

    /**
     * Move the emulator's clock `ms` ahead of the wall clock and end what is then due (scaling activities, route
     * tasks; a command's delivery window and run are judged by the same clock when next read). A test steps an
     * operation past its end this way instead of sleeping, and one given a long duration cannot end early.
     */
    advance(ms: number): void {
        this.state.clockOffsetMs += ms;
        settleActivities(this.state);
        settleRoutes(this.state);
    }

    /**
     * Stop the wall clock from moving the emulator's: from now on only `advance` moves it (directly, or through the
     * sleeps of a {@link steppedClock}), so an activity, route task or delivery window started now ends when the test
     * steps past its end, however slow or loaded the machine is.
     */
    stopClock(): void {
        this.state.clockStoppedAt ??= Date.now();
    }

    /**
     * A clock for the code under test (its waits take a `Clock`, src/cloud/wait.ts) on the emulator's time: `now` is
     * `state.now()`, and a sleep advances the emulator by its length, then yields one turn of the event loop, so the
     * code's own waits end what they wait for and its time bounds count the time it waited, not the machine's. Use
     * it with {@link stopClock}. While `hold()` is true a sleep does not advance: the emulator's time stands (what
     * runs stays running, and no time bound moves) and the sleep only yields, a few real milliseconds so that a
     * waiting loop does not spin; a test holds time until the moment it arranges (a second caller has arrived).
     */
    steppedClock(hold: () => boolean = () => false): Clock {
        return {
            now: () => this.state.now(),
            sleep: async (ms: number) => {
                if (hold()) return new Promise<void>((resolve) => setTimeout(resolve, Math.min(Math.max(0, ms), 5)));
                this.advance(Math.max(0, ms));
                return new Promise<void>((resolve) => setImmediate(resolve));
            },
        };
    }

    /** Scaling activities of a group, oldest first (due ones ended first). */
    activitiesOf(scalingGroupId: string): EmuActivity[] {
        settleActivities(this.state);
        return this.state.activities.filter((a) => a.scalingGroupId === scalingGroupId);
    }

    /**
     * Run one ESS health check on a group: InService members whose instance is not Running are removed
     * (released) and replaced; Protected and Standby members are skipped.
     * @returns The removal activity, or undefined when nothing was unhealthy or an activity was running.
     */
    runHealthCheck(scalingGroupId: string): EmuActivity | undefined {
        return runHealthCheck(this.state, scalingGroupId);
    }

    /** Add a route table (System type by default). */
    addRouteTable(init: Partial<Omit<EmuRouteTable, "entries">> = {}): EmuRouteTable {
        const t: EmuRouteTable = {
            routeTableId: init.routeTableId ?? this.state.nextId("vtb-emu"), vpcId: init.vpcId ?? "vpc-emu", vRouterId: init.vRouterId ?? "vrt-emu",
            routeTableType: init.routeTableType ?? "System", routeTableName: init.routeTableName ?? "", entries: [],
        };
        this.state.routeTables.set(t.routeTableId, t);
        return t;
    }

    /** Add a custom route entry (next hop type Instance by default). */
    addRouteEntry(routeTableId: string, init: { destinationCidrBlock: string; nextHopId: string; nextHopType?: string; routeEntryName?: string }): EmuRouteEntry {
        const t = this.state.routeTables.get(routeTableId);
        if (!t) throw new Error(`emulator: no route table ${routeTableId}`);
        const e: EmuRouteEntry = { routeEntryId: this.state.nextId("rte-emu"), routeTableId, nextHopType: "Instance", routeEntryName: "", type: "Custom", status: "Available", ...init };
        t.entries.push(e);
        return e;
    }

    /** Refuses the `occurrence`-th call (from 0) of `action` from now on, once, as a 400 `Forbidden.Injected` (a fault matrix's step). */
    refuseOnce(action: string, occurrence: number): void {
        let count = 0;
        this.inject(action, { status: 400, code: "Forbidden.Injected", message: "refused by the test", times: 1, when: () => count++ === occurrence });
    }

    /** Inject a fault into the next `fault.times` calls of `action` (`"*"` = any action). */
    inject(action: string, fault: Fault): void {
        const list = this.faults.get(action) ?? [];
        list.push({ ...fault });
        this.faults.set(action, list);
    }

    /**
     * Limits every action (a number: each action on its own) or the actions named to `calls` per `windowMs`
     * (default 1000 ms), as Alibaba limits each API operation per account and region (docs/upstream.md#api-rate-limits;
     * the values are the test's, none are published); see `EmulatorState.rateLimits`. `{}` turns it off.
     */
    rateLimit(calls: number | Record<string, number>, windowMs = 1000): void {
        this.state.rateLimits = typeof calls === "number" ? { "*": calls } : { ...calls };
        this.state.rateWindowMs = windowMs;
        this.state.rateCounts.clear();
    }

    /** Counts a call against its action's limit, or refuses it with `Throttling.User` (see `EmulatorState.rateLimits`). */
    private admitRate(action: string): void {
        const st = this.state;
        const limit = st.rateLimits[action] ?? st.rateLimits["*"];
        if (limit === undefined) return;
        const window = Math.floor(st.now() / st.rateWindowMs);
        const c = st.rateCounts.get(action);
        const counted = c && c.window === window ? c : { window, count: 0 };
        if (counted.count >= limit) {
            this.onThrottled?.(action);
            throw new ApiError(400, "Throttling.User", "Request was denied due to user flow control.");
        }
        counted.count += 1;
        st.rateCounts.set(action, counted);
    }

    /**
     * The next `times` calls of `action` get `Throttling.User` (HTTP 400), optionally with `x-acs-retry-after` (ms): the
     * code and message of a per-action rate limit (see `rateLimit`); the status is not confirmed (400 is what the SDKs'
     * local tests saw, and they classify by code: docs/upstream.md#api-retries).
     */
    throttle(action: string, times: number, retryAfterMs?: number): void {
        this.inject(action, {
            status: 400, code: "Throttling.User", message: "Request was denied due to user flow control.", times,
            headers: retryAfterMs !== undefined ? { "x-acs-retry-after": String(retryAfterMs) } : undefined,
        });
    }

    /** The next `times` calls of `action` fail with a 5xx (503 `ServiceUnavailable` by default, 500 `InternalError`). */
    fail5xx(action: string, times: number, status = 503): void {
        this.inject(action, status === 503
            ? { status, code: "ServiceUnavailable", message: "The request has failed due to a temporary failure of the server.", times }
            : { status, code: "InternalError", message: "The request processing has failed due to some unknown error, exception or failure.", times });
    }

    private handleOss(req: http.IncomingMessage, path: string, rawQuery: string, body: Buffer, res: http.ServerResponse): void {
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(req.headers)) headers[k] = Array.isArray(v) ? v.join(",") : (v ?? "");
        let out: { status: number; headers: Record<string, string>; body: Buffer };
        try {
            out = this.oss.handle({ method: req.method ?? "GET", host: headers.host, path, rawQuery, headers, body });
        } catch (e) {
            const err = e instanceof OssError ? e : new OssError(500, "InternalError", `emulator bug: ${String(e)}`);
            out = { status: err.status, headers: { "content-type": "application/xml" }, body: Buffer.from(ossErrorXml(err, requestId())) };
        }
        const accessKeyId = /Credential=([^/]+)\//.exec(headers.authorization ?? "")?.[1] ?? "";
        const action = req.method === "PUT" ? "PutObject" : path === "/" ? "ListObjectsV2" : "GetObject";
        this.calls.push({ product: "oss", action, params: { host: headers.host, key: path }, url: req.url ?? "/", body: "", status: out.status,
            code: out.status < 300 ? "" : (/<Code>([^<]+)</.exec(out.body.toString())?.[1] ?? ""), accessKeyId, securityToken: !!headers["x-oss-security-token"], at: Date.now() });
        res.writeHead(out.status, { "content-length": out.body.length, "x-oss-request-id": requestId(), ...out.headers });
        res.end(out.body);
    }

    /** Stop listening. */
    close(): Promise<void> {
        return new Promise((resolve) => { this.server.closeAllConnections(); this.server.close(() => resolve()); });
    }

    private mustGet(instanceId: string): EmuInstance {
        const i = this.state.instances.get(instanceId);
        if (!i) throw new Error(`emulator: no instance ${instanceId}`);
        return i;
    }

    private takeFault(action: string, afterApply: boolean, params: Record<string, string>): Fault | undefined {
        for (const key of [action, "*"]) {
            const list = this.faults.get(key);
            const f = list?.find((x) => x.times > 0 && !!x.afterApply === afterApply && (!x.when || x.when(params)));
            if (f) { f.times -= 1; return f; }
        }
        return undefined;
    }

    private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
        const chunks: Buffer[] = [];
        for await (const c of req) chunks.push(c as Buffer);
        const body = Buffer.concat(chunks);
        const [path, rawQuery = ""] = (req.url ?? "/").split("?", 2);
        if (/\.oss-[a-z0-9-]+\.aliyuncs\.com(:\d+)?$/.test(req.headers.host ?? "")) {
            this.handleOss(req, path, rawQuery, body, res);
            return;
        }
        const query: Record<string, string> = {};
        for (const [k, v] of Object.entries(querystring.parse(rawQuery))) query[k] = Array.isArray(v) ? v[0] : (v ?? "");
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(req.headers)) headers[k] = Array.isArray(v) ? v.join(",") : (v ?? "");
        const params: Record<string, string> = { ...query };
        // RPC parameters may come in the query or in a form body: V3 signs the body through its SHA-256
        // (`x-acs-content-sha256`, "RequestBody: business parameters defined in the body",
        // https://www.alibabacloud.com/help/en/sdk/product-overview/v3-request-structure-and-signature), and RPC V1
        // signs every parameter, query and form alike (https://www.alibabacloud.com/help/doc-detail/127287.htm).
        if (body.length && (headers["content-type"] ?? "").startsWith("application/x-www-form-urlencoded")) {
            for (const [k, v] of Object.entries(querystring.parse(body.toString("utf8")))) params[k] = Array.isArray(v) ? v[0] : (v ?? "");
        }
        const action = headers["x-acs-action"] ?? params.Action ?? "";
        const spec = PRODUCTS[headers["x-acs-version"] ?? params.Version ?? ""];
        const stray = [...new Set(Object.values(params).flatMap(mintedIds))]
            .filter((id) => idGeneration(id) !== this.state.generation);
        if (stray.length > 0) {
            const from = [...new Set(stray.map((id) => owners.get(idGeneration(id)!) ?? `emulator #${idGeneration(id)}`))];
            this.strayRequests.push({ action, ids: stray, from });
            const text = JSON.stringify({ RequestId: requestId(), Code: "Emulator.StrayRequest", Message: `${action} names ${stray.join(", ")}, minted by another emulator (${from.join("; ")})` });
            res.writeHead(400, { "content-type": "application/json;charset=utf-8", "content-length": Buffer.byteLength(text) });
            res.end(text);
            return;
        }
        if (this.latencyMs > 0) await new Promise((r) => setTimeout(r, this.latencyMs));

        let status = 200, out: Record<string, unknown>, extraHeaders: Record<string, string> = {};
        try {
            // V3 (`Authorization: ACS3-HMAC-SHA256 …`, what this library's SDK sends) or the RPC V1 signature in the parameters.
            const v = headers["authorization"] === undefined && params.Signature !== undefined
                ? verifyRpcV1(req.method ?? "POST", params, (ak) => this.secrets.get(ak), this.nonces)
                : verifyRequest({ method: req.method ?? "POST", path, query, headers, body }, (ak) => this.secrets.get(ak), this.nonces);
            if (!v.ok) throw new ApiError(v.status, v.code, v.message);
            const handler = spec?.actions[action];
            if (!handler) throw new ApiError(404, "InvalidAction.NotFound", `Specified api is not found, please check your url and method: ${action}.`);
            this.admitRate(action);
            const hooked = this.beforeRequest?.({ product: spec.product, action, params });
            if (hooked) { extraHeaders = hooked.headers ?? {}; throw new ApiError(hooked.status, hooked.code, hooked.message); }
            const before = this.takeFault(action, false, params);
            if (before) { extraHeaders = before.headers ?? {}; throw new ApiError(before.status, before.code, before.message); }
            // Idempotency only where the request model defines ClientToken (CLIENT_TOKEN_ACTIONS); the same token
            // with other parameters → IdempotentParameterMismatch (InvokeCommand/RunCommand error tables).
            const tokenKey = params.ClientToken && CLIENT_TOKEN_ACTIONS[spec.product].includes(action) ? `${spec.product}:${action}:${params.ClientToken}` : "";
            // (an RPC V1 request's signature parameters differ on every retry; they are not what the token guards)
            const { ClientToken: _token, Signature: _s, SignatureNonce: _n, Timestamp: _t, ...rest } = params;
            const fingerprint = JSON.stringify(Object.keys(rest).sort().map((k) => [k, rest[k]]));
            const cached = tokenKey ? this.idempotent.get(tokenKey) : undefined;
            if (cached && cached.params !== fingerprint) throw new ApiError(403, "IdempotentParameterMismatch", "The request uses the same client token as a previous, but non-identical request.");
            out = cached?.out ?? await handler(this.state, params);
            if (tokenKey && !cached) this.idempotent.set(tokenKey, { params: fingerprint, out });
            const after = this.takeFault(action, true, params);
            if (after) { extraHeaders = after.headers ?? {}; throw new ApiError(after.status, after.code, after.message); }
            out = { RequestId: requestId(), ...out };
            this.afterRequest?.({ product: spec.product, action, params });
        } catch (e) {
            const err = e instanceof ApiError ? e : new ApiError(500, "InternalError", `emulator bug: ${String(e)}`);
            status = err.status;
            out = { RequestId: requestId(), HostId: "127.0.0.1", Code: err.code, Message: err.message, Recommend: "https://api.aliyun.com/troubleshoot" };
        }
        const accessKeyId = /Credential=([^,]+)/.exec(headers["authorization"] ?? "")?.[1] ?? params.AccessKeyId ?? "";
        const securityToken = !!headers["x-acs-security-token"] || !!params.SecurityToken;
        this.calls.push({ product: spec?.product ?? "unknown", action, params, url: req.url ?? "/", body: body.toString("utf8"), status, code: status === 200 ? "" : String(out.Code), accessKeyId, securityToken, at: Date.now() });
        const text = JSON.stringify(out);
        res.writeHead(status, { "content-type": "application/json;charset=utf-8", "content-length": Buffer.byteLength(text), ...extraHeaders });
        res.end(text);
    }
}

/**
 * Start an emulator on 127.0.0.1 with a random port.
 * @param opts Accepted credentials (default {@link TEST_CREDENTIALS}) and latency (default 0 ms).
 */
export async function startEmulator(opts: EmulatorOptions = {}): Promise<Emulator> {
    // RPC parameters may travel in the query string (older callers; this library sends them in the body), and a
    // 24 KB Base64 command in a URL needs more than Node's 16 KB header limit.
    const server = http.createServer({ maxHeaderSize: 128 * 1024 });
    server.keepAliveTimeout = 1000;
    await new Promise<void>((resolve, reject) => { server.once("error", reject); server.listen(0, "127.0.0.1", () => resolve()); });
    return new Emulator(server, opts);
}
