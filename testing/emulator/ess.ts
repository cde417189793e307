/**
 * ESS 2014-08-28 actions of the emulator: scaling groups, their instances, configurations and
 * asynchronous scaling activities.
 *
 * Sources (public):
 *  [GO]   aliyun/alibaba-cloud-sdk-go services/ess: remove_instances.go@d5c3d8e, detach_instances.go,
 *         attach_instances.go, scale_with_adjustment.go, describe_scaling_activities.go,
 *         struct_scaling_activity.go, struct_scaling_instance.go (@21c4618), modify_scaling_group.go@1334f3e,
 *         set_instances_protection.go@dbe30d7, enter_standby.go / exit_standby.go@cd941e9.
 *  [RM]   alibabacloud.com/help/en/auto-scaling/developer-reference/api-ess-2022-02-22-removeinstances
 *         (also doc-detail/25955): group Active, no activity in progress; "If the difference between ...
 *         TotalCapacity and the number of ECS instances that you call this operation to remove is less
 *         than the value of the MinSize parameter, the call fails"; "A successful call only means that
 *         Auto Scaling accepts the request. The scaling activity may still fail"; InstanceId.N 1–20.
 *  [PROT] .../api-ess-2022-02-22-setinstancesprotection: protected instances are never removed by
 *         scale-in and "maintain their health status even when they undergo stopping or restarting".
 *  [STBY] .../api-ess-2022-02-22-enterstandby: standby instances are not removed by scale-in, their health
 *         status is not updated, and "You can remove an instance that is in the Standby state from a scaling group".
 *  [LIFE] .../api-ess-2022-02-22-describescalinginstances: LifecycleState InService, Pending, Pending:Wait,
 *         Protected, Standby, Removing, Removing:Wait, …
 *  [POL]  RemovalPolicy.N: OldestInstance (earliest added), NewestInstance (latest added),
 *         OldestScalingConfiguration (created from the earliest configuration); defaults
 *         OldestScalingConfiguration then OldestInstance (terraform-provider-alicloud
 *         website/docs/r/ess_scaling_group.html.markdown `removal_policies`; help doc-detail/254822).
 *  [MAX]  ModifyScalingGroup (https://www.alibabacloud.com/help/en/auto-scaling/developer-reference/api-ess-2014-08-28-modifyscalinggroup):
 *         "If the number of instances in the scaling group is greater than the value of MaxSize, Auto Scaling
 *         automatically removes instances".
 *  [SUSP] SuspendProcesses / ResumeProcesses (…/api-ess-2014-08-28-suspendprocesses, …-resumeprocesses: ScalingGroupId,
 *         Process.N = ScaleIn | ScaleOut | HealthCheck | AlarmNotification | ScheduledAction, ClientToken) and
 *         "Suspend and resume scaling group processes" (https://www.alibabacloud.com/help/en/auto-scaling/suspend-a-scaling-process):
 *         a suspended scale-out makes Auto Scaling reject manual additions and scale-out rules run by hand or by tasks.
 *  [EXP]  Expected number of instances (https://www.alibabacloud.com/help/en/auto-scaling/user-guide/expected-number-of-instances):
 *         with it, "Auto Scaling executes scaling activities in the scaling group to ensure that the number of instances
 *         matches the specified expected number of instances. No manual intervention is required" (without it, failed
 *         scaling activities must be retried by hand). Every group the emulator makes has a desired capacity.
 *  [TF]   terraform-provider-alicloud alicloud/service_alicloud_ess.go:793-850 (waits for the
 *         RemoveInstances activity, fails on Failed/Rejected, retries the members still there) and
 *         resource_alicloud_ess_attachment.go:115-308 (ScalingActivityInProgress, IncorrectCapacity.*,
 *         IncorrectInstanceStatus).
 */
import { ActivityFault, ActivityPlan, ApiError, EmuActivity, EmuInstance, EmuScalingGroup, EmuScalingInstance, EmulatorState, ScalingLifecycleState, intParam, isoMinute, isoTime, listParam, page, required } from "./state";

type Handler = (st: EmulatorState, p: Record<string, string>) => Record<string, unknown>;

/** [RM] "Valid values of N: 1 to 20" (RemoveInstances; the same batch size for Detach/Attach/Protection/Standby). */
const MAX_INSTANCES_PER_CALL = 20;

function groupOr404(st: EmulatorState, id: string): EmuScalingGroup {
    const g = st.scalingGroups.get(id);
    if (!g) throw new ApiError(404, "InvalidScalingGroupId.NotFound", `The specified scaling group does not exist: ${id}.`);
    return g;
}

function members(st: EmulatorState, groupId: string): EmuScalingInstance[] {
    return [...st.scalingInstances.values()].filter((s) => s.scalingGroupId === groupId).sort((a, b) => a.seq - b.seq);
}

/** Status of an activity now. Activities a test pushed by hand (no plan) end Successful at `endsAt`. */
function activityOf(a: EmuActivity, now: number): EmuActivity["statusCode"] {
    return a.statusCode === "InProgress" && !a.plan && now >= a.endsAt ? "Successful" : a.statusCode;
}

function inProgress(st: EmulatorState, g: EmuScalingGroup, now = st.now()): boolean {
    return st.activities.some((a) => a.scalingGroupId === g.scalingGroupId && activityOf(a, now) === "InProgress");
}

/** Fail like ESS when the group cannot take a membership change right now ([RM]: Active, no activity in progress). */
function assertIdle(st: EmulatorState, g: EmuScalingGroup): void {
    if (g.lifecycleState !== "Active") throw new ApiError(403, "IncorrectScalingGroupStatus", `The current status of the specified scaling group does not support this action (${g.lifecycleState}).`);
    if (inProgress(st, g)) {
        throw new ApiError(403, "ScalingActivityInProgress", "You cannot delete a scaling group or launch a new scaling activity while there is a scaling activity in progress for the specified scaling group.");
    }
}

/** End every planned activity whose time has come (called by each ESS action, by timers and by `Emulator` helpers). */
export function settleActivities(st: EmulatorState, now = st.now()): void {
    for (const a of st.activities) {
        if (a.plan && a.statusCode === "InProgress" && now >= a.endsAt) finish(st, a);
    }
    // [EXP]: with an expected number of instances ESS keeps trying to reach it; a launch that failed is tried again
    // `st.launchRetryMs` later, once no activity runs (when is not documented).
    for (const g of st.scalingGroups.values()) {
        if (g.retryLaunchAt === undefined || now < g.retryLaunchAt || inProgress(st, g, now)) continue;
        g.retryLaunchAt = undefined;
        reconcile(st, g);
    }
}

/**
 * Start a scaling activity. It stays `InProgress` for `st.activityDurationMs` (ESS activities are
 * asynchronous: [RM]) and its membership change happens when it ends, not before. Members leaving are
 * `Removing` meanwhile, members joining `Pending` ([LIFE]). A fault queued with `failNextActivity`
 * decides how it ends.
 */
function startActivity(st: EmulatorState, g: EmuScalingGroup, description: string, plan: ActivityPlan, outcomeIfNoFault?: ActivityFault): EmuActivity {
    const now = st.now();
    const faults = st.activityFaults.get(g.scalingGroupId);
    const outcome = faults?.shift() ?? outcomeIfNoFault;
    const a: EmuActivity = {
        scalingActivityId: st.nextId("asa-emu"), scalingGroupId: g.scalingGroupId, description, cause: `A user request ${description}.`,
        startedAt: now, endsAt: now + st.activityDurationMs, statusCode: "InProgress",
        totalCapacity: members(st, g.scalingGroupId).length, createdInstances: [...plan.launched], destroyedInstances: [], plan, outcome,
    };
    if (["remove", "detach", "scale", "healthCheck"].includes(plan.kind)) {
        for (const id of plan.instanceIds) { const si = st.scalingInstances.get(id); if (si) si.lifecycleState = "Removing"; }
    }
    st.activities.push(a);
    if (st.activityDurationMs <= 0) finish(st, a);
    else setTimeout(() => settleActivities(st), st.activityDurationMs + 1).unref();
    return a;
}

const DEFAULT_FAULT_CODE: Record<ActivityFault["status"], string> = { Failed: "OperationFailed", Rejected: "OperationDenied", Warning: "PartialFailed" };

/**
 * End an activity: apply its planned change, fully (Successful), partly (Warning: the `keep` members
 * stay as they were) or not at all (Failed, Rejected), and fill `StatusCode`, `StatusMessage`,
 * `ErrorCode`, `ErrorMessage` ([GO] struct_scaling_activity.go).
 */
function finish(st: EmulatorState, a: EmuActivity): void {
    const plan = a.plan as ActivityPlan;
    const o = a.outcome;
    const status = o?.status ?? "Successful";
    const affected = [...plan.instanceIds, ...plan.launched];
    const keep = status === "Failed" || status === "Rejected" ? affected
        : status === "Warning" ? (o?.keep ?? affected.slice(-1)) : [];
    const g = st.scalingGroups.get(a.scalingGroupId);
    const destroyed: string[] = [];
    let notRemoved = 0, notJoined = 0;
    for (const id of plan.instanceIds) {
        const si = st.scalingInstances.get(id);
        if (!si) continue;
        if (keep.includes(id)) { si.lifecycleState = plan.before[id] ?? "InService"; notRemoved += 1; continue; }
        if (plan.kind === "enterStandby") si.lifecycleState = "Standby";
        else if (plan.kind === "exitStandby") si.lifecycleState = "InService";
        else if (removeMember(st, id, plan.release, plan.recycle)) destroyed.push(id);
    }
    for (const id of plan.launched) {
        const si = st.scalingInstances.get(id);
        if (!si) continue;
        if (keep.includes(id)) {
            // A launch or attach that did not happen: the member leaves again; an instance ESS created is released.
            st.scalingInstances.delete(id);
            if (plan.kind !== "attach") st.instances.delete(id);
            notJoined += 1;
            continue;
        }
        si.lifecycleState = "InService";
    }
    // DesiredCapacity moved when the request was accepted; what did not happen is given back (not documented).
    if (g && plan.decrease) g.desiredCapacity = Math.min(g.maxSize, g.desiredCapacity + notRemoved);
    if (g && plan.kind === "attach") g.desiredCapacity = Math.max(g.minSize, g.desiredCapacity - notJoined);
    a.statusCode = status;
    a.endsAt = Math.max(a.endsAt, a.startedAt);
    a.totalCapacity = members(st, a.scalingGroupId).length;
    a.destroyedInstances = destroyed;
    a.createdInstances = plan.kind === "attach" ? [] : plan.launched.filter((id) => !keep.includes(id));
    if (status === "Successful") {
        a.statusMessage = "\"Successful\"";
    } else {
        a.errorCode = o?.errorCode ?? DEFAULT_FAULT_CODE[status as ActivityFault["status"]];
        a.errorMessage = o?.message ?? `The scaling activity ended ${status}.`;
        a.statusMessage = a.errorMessage;
    }
    if (g && plan.kind === "scale" && plan.launched.some((id) => keep.includes(id))) g.retryLaunchAt = Math.max(a.endsAt, st.now()) + st.launchRetryMs;
    if (g && (plan.reconcileAfter || g.pendingReconcile) && status !== "Failed" && status !== "Rejected") {
        g.pendingReconcile = false;
        reconcile(st, g);
    }
}

/**
 * The ECS tag ESS puts on the instances it creates: `acs:autoscaling:scalingGroupId=<group id>` ("ESS occupies one
 * ECS tag by default: acs:autoscaling:scalingGroupId:<scaling group ID>",
 * https://help.aliyun.com/zh/ack/ack-managed-and-ack-dedicated/user-guide/create-an-ack-dedicated-cluster, node pool
 * tags; the DescribeInstances sample response carries it too). Tags with the `acs:` prefix are the cloud's own.
 */
export const SCALING_GROUP_TAG = "acs:autoscaling:scalingGroupId";

/**
 * Launch one auto-created instance from the group's active configuration (a member in `lifecycle`). It carries
 * the configuration's tags ("It will be applied for ECS instances finally", @pulumi/alicloud 3.108.0
 * ess/scalingConfiguration.d.ts `tags`) and {@link SCALING_GROUP_TAG}, copied at creation: a configuration changed
 * later reaches only instances created afterwards ("ECS instances that are created based on the original settings of
 * the scaling configuration are not affected", https://www.alibabacloud.com/help/en/auto-scaling/latest/modify-a-scaling-configuration;
 * no source says a change re-tags running instances, and leaving them as they were is the harsher reading for a spec tag).
 */
export function launchInstance(st: EmulatorState, g: EmuScalingGroup, lifecycle: ScalingLifecycleState = "InService"): EmuInstance {
    const cfg = st.scalingConfigurations.get(g.activeScalingConfigurationId);
    const id = st.nextId("i-emu");
    const inst: EmuInstance = {
        instanceId: id, regionId: g.regionId, zoneId: `${g.regionId}-a`, instanceName: `ess-${id}`, hostName: `ess-${id}`,
        instanceType: cfg?.instanceType ?? "ecs.g7.large", imageId: cfg?.imageId ?? "emu-image", status: "Running",
        userData: cfg?.userData ?? "", systemDiskId: st.nextId("d-emu"), vpcId: g.vpcId, vSwitchId: g.vSwitchIds[0] ?? "vsw-emu",
        privateIp: `10.0.${Math.floor(st.nextSeq() / 250) % 250}.${(st.nextSeq() % 250) + 2}`, agentOnline: true,
        agentFailure: "ClientNotRunning", tags: { ...(cfg?.tags ?? {}), [SCALING_GROUP_TAG]: g.scalingGroupId }, creationTime: isoTime(), userDataRuns: 1,
        pendingUserDataRun: false, keyPairName: "", passwordSource: "instance", startTime: isoMinute(),
    };
    st.instances.set(id, inst);
    st.scalingInstances.set(id, {
        instanceId: id, scalingGroupId: g.scalingGroupId, scalingConfigurationId: g.activeScalingConfigurationId, creationType: "AutoCreated",
        entrusted: true, lifecycleState: lifecycle, healthStatus: "Healthy", creationTime: isoTime(), seq: st.nextSeq(),
    });
    st.onUserDataRun?.(inst);
    return inst;
}

/**
 * Take one member out of its group. Auto-created and entrusted members are released (or stopped with
 * recycle); manually attached, non-entrusted ones are only detached ([RM]).
 * @returns Whether the ECS instance was released or stopped.
 */
function removeMember(st: EmulatorState, id: string, release: boolean, recycle: boolean): boolean {
    const si = st.scalingInstances.get(id);
    st.scalingInstances.delete(id);
    const releases = !!si && release && (si.creationType === "AutoCreated" || si.entrusted);
    if (si) st.onMemberLeft?.(id, si.scalingGroupId, releases);
    if (!si || !releases) return false;
    const inst = st.instances.get(id);
    if (!inst) return false;
    if (recycle) inst.status = "Stopped";
    else st.instances.delete(id);
    return true;
}

/**
 * Members ESS itself would remove on a scale-in, in order. Only `InService` members are candidates:
 * Protected ([PROT]) and Standby ([STBY]) never are, nor members still joining or leaving. The group's
 * RemovalPolicies order them ([POL]); a final tie-break is the oldest member.
 * Manually attached members (no scaling configuration) rank as the OLDEST configuration: no source says
 * where ESS puts them; ranking them first is the harsher choice (ESS picks a node the user brought).
 */
export function scaleInVictims(st: EmulatorState, g: EmuScalingGroup, count: number, state: ScalingLifecycleState = "InService"): string[] {
    const cfgOrder = [...st.scalingConfigurations.values()].filter((c) => c.scalingGroupId === g.scalingGroupId).map((c) => c.scalingConfigurationId);
    const cfgRank = (id: string) => (id ? cfgOrder.indexOf(id) : -1);
    const key = (s: EmuScalingInstance): number[] => [...g.removalPolicies.map((policy) => {
        if (policy === "OldestScalingConfiguration") return cfgRank(s.scalingConfigurationId);
        if (policy === "NewestInstance") return -s.seq;
        return s.seq; // OldestInstance; CustomPolicy (a function ESS calls) is not modelled
    }), s.seq];
    const candidates = members(st, g.scalingGroupId).filter((s) => s.lifecycleState === state);
    candidates.sort((a, b) => {
        const ka = key(a), kb = key(b);
        for (let k = 0; k < ka.length; k++) if (ka[k] !== kb[k]) return ka[k] - kb[k];
        return 0;
    });
    return candidates.slice(0, count).map((s) => s.instanceId);
}

/**
 * Bring the member count to DesiredCapacity with one activity: launch (members `Pending` until it ends)
 * or pick victims by the removal policies and release them. When protected/standby members leave too
 * few victims, the activity removes what it can and ends `Warning` (not sourced: the outcome ESS reports
 * for an unreachable capacity is not documented). Nothing to do, or nothing possible → no activity.
 * A suspended `ScaleOut` (`ScaleIn`) process defers the launch (the removal) until it is resumed: the Expected
 * Number of Instances feature keeps the desired capacity and acts on it later (the suspension page's table is
 * explicit only for rules and manual additions; deferring, not dropping, is the harsher reading).
 * Members above MaxSize: ESS removes them ([MAX]); protected members are not removed by a scale-in ([PROT]), but no
 * source says what ESS does when only protected members are left above MaxSize, so it removes those too (harsher).
 */
function reconcile(st: EmulatorState, g: EmuScalingGroup): EmuActivity | undefined {
    const total = members(st, g.scalingGroupId).length;
    const suspended = (process: string) => (g.suspendedProcesses ?? []).includes(process);
    if (total < g.desiredCapacity) {
        if (suspended("ScaleOut")) {
            g.pendingReconcile = true;
            return undefined;
        }
        const launched: string[] = [];
        for (let k = total; k < g.desiredCapacity; k++) launched.push(launchInstance(st, g, "Pending").instanceId);
        return startActivity(st, g, `adds ${launched.length} ECS instance(s) to reach the desired capacity ${g.desiredCapacity}`,
            { kind: "scale", instanceIds: [], launched, release: false, recycle: false, decrease: false, before: {}, reconcileAfter: false });
    }
    if (total > g.desiredCapacity) {
        const overMax = Math.max(0, total - g.maxSize);
        if (suspended("ScaleIn") && overMax === 0) {
            g.pendingReconcile = true;
            return undefined;
        }
        const want = total - g.desiredCapacity;
        const victims = scaleInVictims(st, g, want);
        if (victims.length < overMax) victims.push(...scaleInVictims(st, g, overMax - victims.length, "Protected"));
        if (victims.length === 0) return undefined;
        const before = Object.fromEntries(victims.map((id) => [id, (st.scalingInstances.get(id) as EmuScalingInstance).lifecycleState]));
        const short: ActivityFault | undefined = victims.length < want
            ? { status: "Warning", errorCode: "PartialFailed", keep: [], message: `Only ${victims.length} of ${want} instance(s) can be removed: the others are protected, in standby, or changing.` }
            : undefined;
        return startActivity(st, g, `removes ${victims.length} ECS instance(s) to reach the desired capacity ${g.desiredCapacity}`,
            { kind: "scale", instanceIds: victims, launched: [], release: true, recycle: false, decrease: false, before, reconcileAfter: false }, short);
    }
    return undefined;
}

function groupView(st: EmulatorState, g: EmuScalingGroup): Record<string, unknown> {
    const m = members(st, g.scalingGroupId);
    const count = (...states: string[]) => m.filter((x) => states.includes(x.lifecycleState)).length;
    return {
        ScalingGroupId: g.scalingGroupId, ScalingGroupName: g.scalingGroupName, RegionId: g.regionId, MinSize: g.minSize, MaxSize: g.maxSize,
        DesiredCapacity: g.desiredCapacity, LifecycleState: g.lifecycleState, ActiveScalingConfigurationId: g.activeScalingConfigurationId,
        TotalCapacity: m.length, ActiveCapacity: count("InService"), PendingCapacity: count("Pending", "Pending:Wait"),
        RemovingCapacity: count("Removing", "Removing:Wait"), StandbyCapacity: count("Standby"), ProtectedCapacity: count("Protected"), StoppedCapacity: count("Stopped"),
        TotalInstanceCount: m.length, VpcId: g.vpcId, VSwitchId: g.vSwitchIds[0] ?? "", VSwitchIds: { VSwitchId: g.vSwitchIds },
        RemovalPolicies: { RemovalPolicy: g.removalPolicies }, DefaultCooldown: 300, MultiAZPolicy: "PRIORITY", ScalingPolicy: "release",
        CreationTime: g.creationTime, SuspendedProcesses: { SuspendedProcess: [...(g.suspendedProcesses ?? [])] },
    };
}

function instanceIdsParam(p: Record<string, string>): string[] {
    const ids = listParam(p, "InstanceId");
    if (ids.length === 0) throw new ApiError(400, "MissingInstanceId", 'The input parameter "InstanceId" that is mandatory for processing this request is not supplied.');
    // The limit is documented ([RM]); the code for exceeding it is not.
    if (ids.length > MAX_INSTANCES_PER_CALL) throw new ApiError(400, "InvalidParameter.InstanceId", `At most ${MAX_INSTANCES_PER_CALL} instances per call (InstanceId.N, N = 1 to 20).`);
    return ids;
}

function incorrectInstanceStatus(si: EmuScalingInstance, action: string): ApiError {
    return new ApiError(403, "IncorrectInstanceStatus", `The current status of the specified instance does not support this action: ${si.instanceId} is ${si.lifecycleState} (${action}).`);
}

/**
 * RemoveInstances / DetachInstances ([RM], [GO]): the group must be Active and idle
 * (`ScalingActivityInProgress`); members are checked one by one: not a member → 404
 * `InvalidInstanceId.NotFound`; a member that cannot leave → 403 `IncorrectInstanceStatus` and nothing is
 * removed. Removable: InService and Standby ([STBY]); Protected only when
 * `st.protectedMembersRemovable` (see state.ts: the current doc says protected members are immune);
 * never Pending/Pending:Wait/Removing/Removing:Wait (harsher choice; not documented per state).
 * `IgnoreInvalidInstance=true` skips both kinds instead. TotalCapacity − n < MinSize → 403
 * `IncorrectCapacity.MinSize` ([RM] states it without regard to DecreaseDesiredCapacity).
 * The response carries `ScalingActivityId`; the members leave when that activity ends, Successful or
 * `Warning`/`Failed`/`Rejected` as arranged by `failNextActivity`. DecreaseDesiredCapacity (default
 * true) lowers DesiredCapacity when the request is accepted (given back for members the activity did not
 * remove); with false, ESS launches replacements after the activity. RemoveInstances releases auto-created/entrusted members; DetachInstances never
 * releases. Only RemoveInstances has a ClientToken ([GO]).
 */
function removeOrDetach(st: EmulatorState, p: Record<string, string>, detach: boolean): Record<string, unknown> {
    settleActivities(st);
    const g = groupOr404(st, required(p, "ScalingGroupId"));
    assertIdle(st, g);
    const ignoreInvalid = p.IgnoreInvalidInstance === "true";
    let ids = instanceIdsParam(p);
    const invalid = ids.filter((id) => st.scalingInstances.get(id)?.scalingGroupId !== g.scalingGroupId);
    if (invalid.length && !ignoreInvalid) throw new ApiError(404, "InvalidInstanceId.NotFound", `The specified instance is not in scaling group ${g.scalingGroupId}: ${invalid.join(", ")}.`);
    ids = ids.filter((id) => !invalid.includes(id));
    const removable = (s: EmuScalingInstance) => s.lifecycleState === "InService" || s.lifecycleState === "Standby" || (s.lifecycleState === "Protected" && st.protectedMembersRemovable);
    const refused = ids.map((id) => st.scalingInstances.get(id) as EmuScalingInstance).filter((s) => !removable(s));
    if (refused.length && !ignoreInvalid) throw incorrectInstanceStatus(refused[0], detach ? "DetachInstances" : "RemoveInstances");
    ids = ids.filter((id) => !refused.some((s) => s.instanceId === id));
    const total = members(st, g.scalingGroupId).length;
    if (total - ids.length < g.minSize) {
        throw new ApiError(403, "IncorrectCapacity.MinSize", `To remove ${ids.length} instance(s), the total capacity (${total}) minus the removed instances must not be less than MinSize (${g.minSize}).`);
    }
    const decrease = p.DecreaseDesiredCapacity !== "false";
    if (decrease) g.desiredCapacity = Math.max(g.minSize, g.desiredCapacity - ids.length);
    const before = Object.fromEntries(ids.map((id) => [id, (st.scalingInstances.get(id) as EmuScalingInstance).lifecycleState]));
    const a = startActivity(st, g, `${detach ? "detaches" : "removes"} ${ids.length} instance(s)`, {
        kind: detach ? "detach" : "remove", instanceIds: ids, launched: [], release: !detach, recycle: !detach && (p.RemovePolicy ?? "release") === "recycle",
        decrease, before, reconcileAfter: !decrease,
    });
    return { ScalingActivityId: a.scalingActivityId };
}

const describeScalingGroups: Handler = (st, p) => {
    settleActivities(st);
    const ids = listParam(p, "ScalingGroupId");
    let list = [...st.scalingGroups.values()].filter((g) => g.regionId === (p.RegionId ?? g.regionId));
    if (ids.length) list = list.filter((g) => ids.includes(g.scalingGroupId));
    if (p.ScalingGroupName) list = list.filter((g) => g.scalingGroupName === p.ScalingGroupName);
    const pg = page(list, p, 50, 10);
    return { TotalCount: pg.TotalCount, PageNumber: pg.PageNumber, PageSize: pg.PageSize, ScalingGroups: { ScalingGroup: pg.items.map((g) => groupView(st, g)) } };
};

const describeScalingInstances: Handler = (st, p) => {
    settleActivities(st);
    const ids = listParam(p, "InstanceId");
    let list = [...st.scalingInstances.values()].sort((a, b) => a.seq - b.seq);
    if (p.ScalingGroupId) list = list.filter((s) => s.scalingGroupId === p.ScalingGroupId);
    if (ids.length) list = list.filter((s) => ids.includes(s.instanceId));
    if (p.CreationType) list = list.filter((s) => s.creationType === p.CreationType);
    if (p.LifecycleState) list = list.filter((s) => s.lifecycleState === p.LifecycleState);
    if (p.HealthStatus) list = list.filter((s) => s.healthStatus === p.HealthStatus);
    const pg = page(list, p, 50, 10);
    return {
        TotalCount: pg.TotalCount, PageNumber: pg.PageNumber, PageSize: pg.PageSize,
        ScalingInstances: { ScalingInstance: pg.items.map((s) => ({
            InstanceId: s.instanceId, ScalingGroupId: s.scalingGroupId, ScalingConfigurationId: s.scalingConfigurationId, HealthStatus: s.healthStatus,
            LifecycleState: s.lifecycleState, CreationType: s.creationType, Entrusted: s.entrusted, CreationTime: s.creationTime, CreatedTime: s.creationTime,
            ZoneId: st.instances.get(s.instanceId)?.zoneId ?? "", WeightedCapacity: 1, WarmupState: "NoNeedWarmup",
        })) },
    };
};

/**
 * ModifyScalingGroup ([GO] modify_scaling_group.go: MinSize, MaxSize, DesiredCapacity, RemovalPolicy.1–3;
 * the response has no ScalingActivityId and the request no ClientToken). A DesiredCapacity the members
 * do not match makes ESS launch, or pick victims by RemovalPolicies and release them, in a scaling
 * activity of its own (see {@link reconcile}; listed by DescribeScalingActivities). While another
 * activity runs, the change is accepted and ESS reconciles when that one ends (not documented; accepting
 * and acting later is the harsher case for a caller that assumes nothing happens after its own activity).
 * A MaxSize below the group's desired capacity, without a DesiredCapacity, lowers the desired capacity to it:
 * ESS removes instances until the group fits, by its removal policies and without a drain (Alibaba's
 * ModifyScalingGroup reference, https://www.alibabacloud.com/help/en/auto-scaling/developer-reference/api-ess-2014-08-28-modifyscalinggroup:
 * "If the number of instances in the scaling group is greater than the value of MaxSize, Auto Scaling
 * automatically removes instances"). Whether ESS waits for a running activity first is not documented: it
 * reconciles when that ends, as for DesiredCapacity.
 */
const modifyScalingGroup: Handler = (st, p) => {
    settleActivities(st);
    const g = groupOr404(st, required(p, "ScalingGroupId"));
    const min = intParam(p, "MinSize", g.minSize, 0, 2000);
    const max = intParam(p, "MaxSize", g.maxSize, 0, 2000);
    const desired = intParam(p, "DesiredCapacity", p.DesiredCapacity === undefined ? Math.max(min, Math.min(g.desiredCapacity, max)) : g.desiredCapacity, 0, 2000);
    if (min > max) throw new ApiError(400, "InvalidParameter.Conflict", `MinSize (${min}) must not exceed MaxSize (${max}).`);
    if (desired < min || desired > max) throw new ApiError(400, "InvalidParameter.Conflict", `DesiredCapacity (${desired}) must be between MinSize (${min}) and MaxSize (${max}).`);
    Object.assign(g, { minSize: min, maxSize: max, desiredCapacity: desired });
    if (p.ScalingGroupName) g.scalingGroupName = p.ScalingGroupName;
    const policies = [1, 2, 3].map((k) => p[`RemovalPolicy.${k}`]).filter((x): x is string => !!x);
    if (policies.length) g.removalPolicies = policies;
    if (inProgress(st, g)) g.pendingReconcile = true;
    else reconcile(st, g);
    return {};
};

/** ScaleWithAdjustment ([GO]: ClientToken, returns ScalingActivityId): like a DesiredCapacity change, in an activity. */
const scaleWithAdjustment: Handler = (st, p) => {
    settleActivities(st);
    const g = groupOr404(st, required(p, "ScalingGroupId"));
    assertIdle(st, g);
    const type = required(p, "AdjustmentType");
    const value = Number(required(p, "AdjustmentValue"));
    const current = members(st, g.scalingGroupId).length;
    let target: number;
    if (type === "QuantityChangeInCapacity") target = current + value;
    else if (type === "TotalCapacity") target = value;
    else if (type === "PercentChangeInCapacity") target = Math.round(current * (1 + value / 100));
    else throw new ApiError(400, "InvalidParameter.AdjustmentType", `The specified AdjustmentType ${type} is not valid.`);
    if (target > g.maxSize) throw new ApiError(403, "IncorrectCapacity.MaxSize", `The target capacity (${target}) exceeds MaxSize (${g.maxSize}).`);
    // [SUSP]: a scale-out run by hand is rejected while the process is suspended; the code is not documented.
    if (target > current && (g.suspendedProcesses ?? []).includes("ScaleOut")) {
        throw new ApiError(403, "IncorrectScalingGroupStatus", "The scale-out process of the specified scaling group is suspended.");
    }
    if (target < g.minSize) throw new ApiError(403, "IncorrectCapacity.MinSize", `The target capacity (${target}) is below MinSize (${g.minSize}).`);
    g.desiredCapacity = target;
    const a = reconcile(st, g) ?? startActivity(st, g, `adjusts the capacity to ${target}`,
        { kind: "scale", instanceIds: [], launched: [], release: false, recycle: false, decrease: false, before: {}, reconcileAfter: false });
    return { ScalingActivityId: a.scalingActivityId, ActivityType: "Normal" };
};

const PROCESSES = ["ScaleIn", "ScaleOut", "HealthCheck", "AlarmNotification", "ScheduledAction"];

/** SuspendProcesses / ResumeProcesses ([SUSP]): no activity; resuming lets ESS act on what it deferred. */
function processes(st: EmulatorState, p: Record<string, string>, suspend: boolean): Record<string, unknown> {
    settleActivities(st);
    const g = groupOr404(st, required(p, "ScalingGroupId"));
    const list = listParam(p, "Process");
    const bad = list.find((x) => !PROCESSES.includes(x));
    if (bad !== undefined) throw new ApiError(400, "InvalidParameter.Process", `The specified process ${bad} is not valid.`);
    const now = new Set(g.suspendedProcesses ?? []);
    for (const x of list) {
        if (suspend) now.add(x);
        else now.delete(x);
    }
    g.suspendedProcesses = [...now];
    if (!suspend && g.pendingReconcile && !inProgress(st, g)) {
        g.pendingReconcile = false;
        reconcile(st, g);
    }
    return {};
}

/** AttachInstances ([GO] attach_instances.go, no ClientToken): attached members are `Pending` until the activity ends. */
const attachInstances: Handler = (st, p) => {
    settleActivities(st);
    const g = groupOr404(st, required(p, "ScalingGroupId"));
    assertIdle(st, g);
    const ids = instanceIdsParam(p);
    for (const id of ids) {
        const i = st.instances.get(id);
        if (!i) throw new ApiError(404, "InvalidInstanceId.NotFound", `The specified instance does not exist: ${id}.`);
        if (i.status !== "Running") throw new ApiError(403, "IncorrectInstanceStatus", `The current status of instance ${id} (${i.status}) does not support this operation.`);
        if (st.scalingInstances.has(id)) throw new ApiError(403, "InstanceAlreadyAttached", `Instance ${id} is already in a scaling group.`);
    }
    if (members(st, g.scalingGroupId).length + ids.length > g.maxSize) throw new ApiError(403, "IncorrectCapacity.MaxSize", `Attaching ${ids.length} instance(s) would exceed MaxSize (${g.maxSize}).`);
    for (const id of ids) {
        st.scalingInstances.set(id, { instanceId: id, scalingGroupId: g.scalingGroupId, scalingConfigurationId: "", creationType: "Attached", entrusted: p.Entrusted === "true", lifecycleState: "Pending", healthStatus: "Healthy", creationTime: isoTime(), seq: st.nextSeq() });
    }
    g.desiredCapacity = Math.min(g.maxSize, g.desiredCapacity + ids.length);
    const a = startActivity(st, g, `attaches ${ids.length} instance(s)`,
        { kind: "attach", instanceIds: [], launched: ids, release: false, recycle: false, decrease: false, before: {}, reconcileAfter: false });
    return { ScalingActivityId: a.scalingActivityId };
};

function groupMembers(st: EmulatorState, g: EmuScalingGroup, ids: string[]): EmuScalingInstance[] {
    return ids.map((id) => {
        const si = st.scalingInstances.get(id);
        if (!si || si.scalingGroupId !== g.scalingGroupId) throw new ApiError(404, "InvalidInstanceId.NotFound", `The specified instance is not in scaling group ${g.scalingGroupId}: ${id}.`);
        return si;
    });
}

/**
 * SetInstancesProtection ([GO] set_instances_protection.go: ScalingGroupId, InstanceId.N, ProtectedFromScaleIn;
 * response RequestId only, no activity, no ClientToken; Terraform's `protected_instances`
 * reads them back as LifecycleState `Protected`, resource_alicloud_ess_scaling_group.go:505). Takes effect
 * at once. Protecting needs InService (or already Protected), unprotecting needs Protected (or already
 * InService); anything else → 403 `IncorrectInstanceStatus` (not documented per state; harsher choice).
 */
const setInstancesProtection: Handler = (st, p) => {
    settleActivities(st);
    const g = groupOr404(st, required(p, "ScalingGroupId"));
    const protect = required(p, "ProtectedFromScaleIn") === "true";
    const list = groupMembers(st, g, instanceIdsParam(p));
    for (const si of list) if (!["InService", "Protected"].includes(si.lifecycleState)) throw incorrectInstanceStatus(si, "SetInstancesProtection");
    for (const si of list) si.lifecycleState = protect ? "Protected" : "InService";
    return {};
};

/** EnterStandby / ExitStandby ([GO] enter_standby.go / exit_standby.go: ClientToken, returns ScalingActivityId). InService ⇄ Standby when the activity ends. */
function standby(st: EmulatorState, p: Record<string, string>, enter: boolean): Record<string, unknown> {
    settleActivities(st);
    const g = groupOr404(st, required(p, "ScalingGroupId"));
    assertIdle(st, g);
    const list = groupMembers(st, g, instanceIdsParam(p));
    for (const si of list) if (si.lifecycleState !== (enter ? "InService" : "Standby")) throw incorrectInstanceStatus(si, enter ? "EnterStandby" : "ExitStandby");
    const a = startActivity(st, g, `${enter ? "puts" : "takes"} ${list.length} instance(s) ${enter ? "into" : "out of"} standby`, {
        kind: enter ? "enterStandby" : "exitStandby", instanceIds: list.map((s) => s.instanceId), launched: [], release: false, recycle: false, decrease: false,
        before: Object.fromEntries(list.map((s) => [s.instanceId, s.lifecycleState])), reconcileAfter: false,
    });
    return { ScalingActivityId: a.scalingActivityId };
}

/**
 * One ESS health check of a group: InService members whose ECS instance is not Running are marked
 * Unhealthy and removed (released) in an activity, then replaced up to DesiredCapacity ("Unhealthy
 * instances are removed automatically", alibabacloud.com/help/doc-detail/25911). Protected ([PROT]) and
 * Standby ([STBY]) members are skipped. Skipped while an activity runs.
 * @returns The activity, or undefined when nothing was unhealthy (or the group was busy).
 */
export function runHealthCheck(st: EmulatorState, scalingGroupId: string): EmuActivity | undefined {
    settleActivities(st);
    const g = groupOr404(st, scalingGroupId);
    if (inProgress(st, g) || (g.suspendedProcesses ?? []).includes("HealthCheck")) return undefined;
    const sick = members(st, g.scalingGroupId).filter((s) => s.lifecycleState === "InService" && st.instances.get(s.instanceId)?.status !== "Running");
    if (sick.length === 0) return undefined;
    for (const s of sick) s.healthStatus = "Unhealthy";
    return startActivity(st, g, `removes ${sick.length} unhealthy instance(s)`, {
        kind: "healthCheck", instanceIds: sick.map((s) => s.instanceId), launched: [], release: true, recycle: false, decrease: false,
        before: Object.fromEntries(sick.map((s) => [s.instanceId, s.lifecycleState])), reconcileAfter: true,
    });
}

/**
 * DescribeScalingActivities ([GO] describe_scaling_activities.go: ScalingGroupId, ScalingActivityId.N,
 * StatusCode; fields per struct_scaling_activity.go), newest first.
 */
const describeScalingActivities: Handler = (st, p) => {
    settleActivities(st);
    const ids = listParam(p, "ScalingActivityId");
    const now = st.now();
    let list = st.activities.filter((a) => (!p.ScalingGroupId || a.scalingGroupId === p.ScalingGroupId) && (!ids.length || ids.includes(a.scalingActivityId)));
    if (p.StatusCode) list = list.filter((a) => activityOf(a, now) === p.StatusCode);
    list = [...list].reverse();
    const pg = page(list, p, 50, 10);
    return {
        TotalCount: pg.TotalCount, PageNumber: pg.PageNumber, PageSize: pg.PageSize,
        ScalingActivities: { ScalingActivity: pg.items.map((a) => {
            const status = activityOf(a, now);
            const running = status === "InProgress";
            return {
                ScalingActivityId: a.scalingActivityId, ScalingGroupId: a.scalingGroupId, Description: a.description, Cause: a.cause,
                StartTime: isoTime(a.startedAt), EndTime: running ? "" : isoTime(a.endsAt),
                Progress: running ? Math.min(99, Math.floor(((now - a.startedAt) / Math.max(1, a.endsAt - a.startedAt)) * 100)) : 100,
                StatusCode: status, StatusMessage: running ? "" : (a.statusMessage ?? "\"Successful\""),
                ErrorCode: a.errorCode ?? "", ErrorMessage: a.errorMessage ?? "", TotalCapacity: String(a.totalCapacity),
                ScalingInstanceNumber: a.createdInstances.length + a.destroyedInstances.length,
                CreatedCapacity: a.createdInstances.length, DestroyedCapacity: a.destroyedInstances.length,
                CreatedInstances: { CreatedInstance: a.createdInstances }, DestroyedInstances: { DestroyedInstance: a.destroyedInstances },
            };
        }) },
    };
};

const describeScalingConfigurations: Handler = (st, p) => {
    const ids = listParam(p, "ScalingConfigurationId");
    let list = [...st.scalingConfigurations.values()];
    if (p.ScalingGroupId) list = list.filter((c) => c.scalingGroupId === p.ScalingGroupId);
    if (ids.length) list = list.filter((c) => ids.includes(c.scalingConfigurationId));
    const pg = page(list, p, 50, 10);
    return {
        TotalCount: pg.TotalCount, PageNumber: pg.PageNumber, PageSize: pg.PageSize,
        ScalingConfigurations: { ScalingConfiguration: pg.items.map((c) => ({
            ScalingConfigurationId: c.scalingConfigurationId, ScalingConfigurationName: c.scalingConfigurationName, ScalingGroupId: c.scalingGroupId,
            LifecycleState: c.lifecycleState, ImageId: c.imageId, InstanceType: c.instanceType, InstanceTypes: { InstanceType: [c.instanceType] },
            UserData: c.userData, Tags: { Tag: Object.entries(c.tags ?? {}).map(([Key, Value]) => ({ Key, Value })) },
        })) },
    };
};

/** ESS action table. */
export const ESS_ACTIONS: Record<string, Handler> = {
    DescribeScalingGroups: describeScalingGroups,
    DescribeScalingInstances: describeScalingInstances,
    DescribeScalingActivities: describeScalingActivities,
    DescribeScalingConfigurations: describeScalingConfigurations,
    ModifyScalingGroup: modifyScalingGroup,
    ScaleWithAdjustment: scaleWithAdjustment,
    AttachInstances: attachInstances,
    RemoveInstances: (st, p) => removeOrDetach(st, p, false),
    DetachInstances: (st, p) => removeOrDetach(st, p, true),
    SetInstancesProtection: setInstancesProtection,
    SuspendProcesses: (st, p) => processes(st, p, true),
    ResumeProcesses: (st, p) => processes(st, p, false),
    EnterStandby: (st, p) => standby(st, p, true),
    ExitStandby: (st, p) => standby(st, p, false),
};
