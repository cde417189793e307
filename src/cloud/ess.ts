/**
 * ESS (Auto Scaling, API 2014-08-28), typed: scaling groups, their members and activities, capacity and
 * membership changes. Paging is done here once per listing. Sources: docs/upstream.md#alibaba-cloud-ess.
 */
import { codesOf } from "./errors";
import { callApi, type RetryOptions } from "./openapi";
import { type Clock, waitFor } from "./wait";

/** A member of a scaling group. */
export interface ScalingGroupMember {
    instanceId: string;
    /** ISO 8601. */
    creationTime: string;
    /** `InService`, `Pending`, `Pending:Wait`, `Protected`, `Standby`, `Removing`, `Removing:Wait`, … */
    lifecycleState: string;
    /** `AutoCreated` or `Attached`. */
    creationType: string;
}

/** A scaling group's state and capacity. */
export interface ScalingGroup {
    scalingGroupId: string;
    lifecycleState: string;
    minSize: number;
    maxSize: number;
    desiredCapacity: number;
    totalCapacity: number;
    /** Members InService. */
    activeCapacity: number;
    pendingCapacity: number;
    removingCapacity: number;
    /** Processes suspended (SuspendProcesses): `ScaleIn`, `ScaleOut`, `HealthCheck`, … ([] when none, or not reported). */
    suspendedProcesses: string[];
}

/** A scaling activity. */
export interface ScalingActivity {
    scalingActivityId: string;
    /** `InProgress`, `Successful`, `Warning` (partly successful), `Failed`, `Rejected`. */
    statusCode: string;
    /** ISO 8601. */
    startTime: string;
    errorCode: string;
    /** `ErrorMessage`, else `StatusMessage` (unquoted). */
    message: string;
    description: string;
}

/**
 * Member states ESS is taking the instance out in (by a removal activity, its health check, or a lifecycle hook
 * holding the removal): leaving anyway, so neither counted nor chosen. docs/upstream.md#ess-lifecycle-states.
 */
export const LEAVING_STATES: readonly string[] = ["Removing", "Removing:Wait"];

/** Whether ESS is taking the member out. */
export function isLeaving(m: Pick<ScalingGroupMember, "lifecycleState">): boolean {
    return LEAVING_STATES.includes(m.lifecycleState);
}

/** ESS answers "busy" while another activity runs (one at a time per group): wait and retry. */
export const ESS_BUSY_RETRY: RetryOptions = { retryableCodes: codesOf("conflict"), maxAttempts: 30, totalTimeoutMs: 600_000, maxDelayMs: 20_000 };

/** Instances per DescribeScalingInstances page (the API's default page is 10). */
const PAGE = 50;
/** ScalingGroupId.N / InstanceId.N take at most 20 values per call. */
const IDS_PER_CALL = 20;

interface RawMember { InstanceId: string; CreationTime?: string; LifecycleState?: string; CreationType?: string }

/**
 * Every member of a scaling group (all pages), or only those of `instanceIds` (20 per call).
 * Stops when a page is short or the total is reached.
 */
export async function scalingGroupMembers(region: string, scalingGroupId: string, opts: { instanceIds?: readonly string[]; retry?: RetryOptions } = {}): Promise<ScalingGroupMember[]> {
    const out: ScalingGroupMember[] = [];
    const filters = opts.instanceIds === undefined ? [undefined]
        : Array.from({ length: Math.ceil(opts.instanceIds.length / IDS_PER_CALL) }, (_, k) => opts.instanceIds!.slice(k * IDS_PER_CALL, (k + 1) * IDS_PER_CALL));
    for (const ids of filters) {
        for (let page = 1; ; page++) {
            const res = await callApi("ess", "DescribeScalingInstances", { ScalingGroupId: scalingGroupId, InstanceId: ids ? [...ids] : undefined, PageSize: PAGE, PageNumber: page },
                { region, retry: opts.retry });
            const rows = (res.ScalingInstances as { ScalingInstance?: RawMember[] } | undefined)?.ScalingInstance ?? [];
            out.push(...rows.map((r) => ({ instanceId: r.InstanceId, creationTime: r.CreationTime ?? "", lifecycleState: r.LifecycleState ?? "", creationType: r.CreationType ?? "" })));
            if (rows.length < PAGE || page * PAGE >= Number(res.TotalCount ?? 0)) {
                break;
            }
        }
    }
    return out;
}

/** The members of the group that stay: every member ESS is not taking out ({@link LEAVING_STATES}). */
export async function stayingMembers(region: string, scalingGroupId: string, opts: { instanceIds?: readonly string[]; retry?: RetryOptions } = {}): Promise<ScalingGroupMember[]> {
    return (await scalingGroupMembers(region, scalingGroupId, opts)).filter((m) => !isLeaving(m));
}

/** The scaling groups among `ids` that exist, keyed by id. */
export async function describeScalingGroups(region: string, ids: readonly string[], retry?: RetryOptions): Promise<Map<string, ScalingGroup>> {
    const out = new Map<string, ScalingGroup>();
    const unique = [...new Set(ids)];
    for (let k = 0; k < unique.length; k += IDS_PER_CALL) {
        const res = await callApi("ess", "DescribeScalingGroups", { ScalingGroupId: unique.slice(k, k + IDS_PER_CALL), PageSize: 50 }, { region, retry });
        for (const g of (res.ScalingGroups as { ScalingGroup?: Array<Record<string, unknown>> } | undefined)?.ScalingGroup ?? []) {
            const n = (key: string) => Number(g[key] ?? 0);
            out.set(String(g.ScalingGroupId), {
                scalingGroupId: String(g.ScalingGroupId), lifecycleState: String(g.LifecycleState ?? ""), minSize: n("MinSize"), maxSize: n("MaxSize"),
                desiredCapacity: n("DesiredCapacity"), totalCapacity: n("TotalCapacity"), activeCapacity: n("ActiveCapacity"),
                pendingCapacity: n("PendingCapacity"), removingCapacity: n("RemovingCapacity"),
                suspendedProcesses: ((g.SuspendedProcesses as { SuspendedProcess?: string[] } | undefined)?.SuspendedProcess ?? []).map(String),
            });
        }
    }
    return out;
}

/**
 * The tags of the group's active scaling configuration (the ones ESS puts on the instances it creates now), or
 * undefined when the group has no active configuration. DescribeScalingConfigurations answers `Tags.Tag[]` with
 * `Key`/`Value` (docs/upstream.md#ess-config-tags).
 */
export async function activeConfigurationTags(region: string, scalingGroupId: string, retry?: RetryOptions): Promise<Record<string, string> | undefined> {
    const res = await callApi("ess", "DescribeScalingConfigurations", { ScalingGroupId: scalingGroupId, PageSize: 50 }, { region, retry });
    const rows = (res.ScalingConfigurations as { ScalingConfiguration?: Array<Record<string, unknown>> } | undefined)?.ScalingConfiguration ?? [];
    const active = rows.find((c) => c.LifecycleState === "Active");
    if (!active) return undefined;
    const tags = (active.Tags as { Tag?: Array<{ Key?: string; Value?: string }> } | undefined)?.Tag ?? [];
    return Object.fromEntries(tags.map((t) => [String(t.Key ?? ""), String(t.Value ?? "")]));
}

/** The group's most recent activities, newest first (`activityIds` narrows to those). */
export async function scalingActivities(region: string, scalingGroupId: string,
    opts: { pageSize?: number; activityIds?: readonly string[]; statusCode?: string; retry?: RetryOptions } = {}): Promise<ScalingActivity[]> {
    const res = await callApi("ess", "DescribeScalingActivities", {
        ScalingGroupId: scalingGroupId, ScalingActivityId: opts.activityIds ? [...opts.activityIds] : undefined, PageSize: opts.pageSize ?? 10,
        StatusCode: opts.statusCode,
    }, { region, retry: opts.retry });
    const rows = (res.ScalingActivities as { ScalingActivity?: Array<Record<string, unknown>> } | undefined)?.ScalingActivity ?? [];
    return rows.map((a) => ({
        scalingActivityId: String(a.ScalingActivityId ?? ""), statusCode: String(a.StatusCode ?? ""), startTime: String(a.StartTime ?? ""),
        errorCode: String(a.ErrorCode ?? ""), message: String(a.ErrorMessage || a.StatusMessage || "").replace(/^"|"$/g, ""), description: String(a.Description ?? ""),
    })).sort((a, b) => Date.parse(b.startTime) - Date.parse(a.startTime));
}

/** Sets any of MinSize, MaxSize and DesiredCapacity (retried while another activity runs). */
export async function modifyScalingGroup(region: string, scalingGroupId: string, sizes: { minSize?: number; maxSize?: number; desiredCapacity?: number }): Promise<void> {
    await callApi("ess", "ModifyScalingGroup", {
        ScalingGroupId: scalingGroupId, MinSize: sizes.minSize, MaxSize: sizes.maxSize, DesiredCapacity: sizes.desiredCapacity,
    }, { region, retry: ESS_BUSY_RETRY });
}

/**
 * Takes members out of the group: `release` (RemoveInstances: released, desired capacity decreased), `replace`
 * (RemoveInstances keeping the desired capacity: released, and ESS launches as many after the activity,
 * docs/upstream.md#ess-remove) or `keep` (DetachInstances: the instance stays). Returns the scaling activity it
 * started ("" when none was reported).
 */
export async function leaveScalingGroup(region: string, scalingGroupId: string, instanceIds: readonly string[], how: "release" | "replace" | "keep", clock?: Clock): Promise<string> {
    const res = await callApi("ess", how === "keep" ? "DetachInstances" : "RemoveInstances",
        { ScalingGroupId: scalingGroupId, InstanceId: [...instanceIds], DecreaseDesiredCapacity: how !== "replace" }, { region, retry: { ...ESS_BUSY_RETRY, clock } });
    return String(res.ScalingActivityId ?? "");
}

/**
 * Suspends (`suspend`) or resumes the group's scale-out process: while it is suspended ESS rejects scale-outs (the
 * Cluster Autoscaler's, a rule's) and defers its own launches, so the members counted stay the members there.
 * Idempotent (a ClientToken; suspending twice, or resuming a running process, is fine). docs/upstream.md#ess-suspend-processes.
 */
export async function scaleOutProcess(region: string, scalingGroupId: string, suspend: boolean): Promise<void> {
    await callApi("ess", suspend ? "SuspendProcesses" : "ResumeProcesses", { ScalingGroupId: scalingGroupId, Process: ["ScaleOut"] }, { region, retry: ESS_BUSY_RETRY });
}

/**
 * Protects members from scale-in (`protect`) or lifts it: protected members are never ESS's own victims
 * when the capacity drops; an explicit RemoveInstances still needs the protection lifted first.
 * 20 ids per call; takes effect at once (no activity). docs/upstream.md#ess-protection.
 */
export async function setInstancesProtection(region: string, scalingGroupId: string, instanceIds: readonly string[], protect: boolean, clock?: Clock): Promise<void> {
    for (let k = 0; k < instanceIds.length; k += IDS_PER_CALL) {
        await callApi("ess", "SetInstancesProtection", {
            ScalingGroupId: scalingGroupId, InstanceId: instanceIds.slice(k, k + IDS_PER_CALL), ProtectedFromScaleIn: protect,
        }, { region, retry: { ...ESS_BUSY_RETRY, clock } });
    }
}

/** How an activity wait polls and how long it lasts. */
export interface ActivityWait {
    /** First pause between polls, ms; grows ×1.5 up to 1 s, so the end is seen within a second. Default 500. */
    pollMs?: number;
    /** Give up after this long, ms. Default 1 200 000 (20 min). */
    timeoutMs?: number;
    /** Progress for the Pulumi log (after 30 s, then every 30 s). */
    log?: (message: string) => void;
    /** The clock the polls wait on and the time bound is read from (tests). Default the real one (`SYSTEM_CLOCK` in ./wait). */
    clock?: Clock;
}

/**
 * Waits until the scaling activity ends and returns it: `Successful`, `Warning` (partly done: re-read the
 * members), `Failed` or `Rejected`. docs/upstream.md#ess-activities.
 * @throws when it is still in progress after `timeoutMs`, or no longer listed
 */
export async function waitForActivity(region: string, scalingGroupId: string, activityId: string, wait: ActivityWait = {}): Promise<ScalingActivity> {
    const timeoutMs = wait.timeoutMs ?? 1_200_000;
    return waitFor(async () => {
        const [a] = await scalingActivities(region, scalingGroupId, { activityIds: [activityId], pageSize: 1 });
        if (!a) throw new Error(`scaling activity ${activityId} of ${scalingGroupId} is not listed (DescribeScalingActivities)`);
        return a.statusCode !== "InProgress" ? { done: true, value: a } : { done: false, state: `waiting for scaling activity ${activityId} of ${scalingGroupId}` };
    }, { timeoutMs, firstDelayMs: wait.pollMs ?? 500, maxDelayMs: Math.max(1000, wait.pollMs ?? 0), pauseFirst: true, log: wait.log, quietMs: 30_000, clock: wait.clock },
    () => new Error(`scaling activity ${activityId} of ${scalingGroupId} is still in progress after ${Math.round(timeoutMs / 1000)} s`));
}

/**
 * Waits until no scaling activity of the group is in progress (a launch, a health replacement, a removal
 * of an earlier run), so that its members are what they will stay. docs/upstream.md#ess-one-activity.
 */
export async function waitForIdleGroup(region: string, scalingGroupId: string, wait: ActivityWait = {}): Promise<void> {
    for (;;) {
        const [running] = await scalingActivities(region, scalingGroupId, { statusCode: "InProgress", pageSize: 1 });
        if (!running) return;
        await waitForActivity(region, scalingGroupId, running.scalingActivityId, wait);
    }
}
