/** ESS 2014-08-28 actions of the emulator: scaling groups, their instances, configurations and activities. */
import { ApiError, EmuActivity, EmuInstance, EmuScalingGroup, EmulatorState, intParam, isoTime, listParam, page, required } from "./state";

type Handler = (st: EmulatorState, p: Record<string, string>) => Record<string, unknown>;

function groupOr404(st: EmulatorState, id: string): EmuScalingGroup {
    const g = st.scalingGroups.get(id);
    if (!g) throw new ApiError(404, "InvalidScalingGroupId.NotFound", `The specified scaling group does not exist: ${id}.`);
    return g;
}

function members(st: EmulatorState, groupId: string) {
    return [...st.scalingInstances.values()].filter((s) => s.scalingGroupId === groupId).sort((a, b) => a.seq - b.seq);
}

function activityOf(a: EmuActivity, now: number): EmuActivity["statusCode"] {
    return a.statusCode === "InProgress" && now >= a.endsAt ? "Successful" : a.statusCode;
}

/** Fail like ESS when the group cannot take a membership change right now. */
function assertIdle(st: EmulatorState, g: EmuScalingGroup): void {
    if (g.lifecycleState !== "Active") throw new ApiError(403, "IncorrectScalingGroupStatus", `The current status of the specified scaling group does not support this action (${g.lifecycleState}).`);
    const now = Date.now();
    if (st.activities.some((a) => a.scalingGroupId === g.scalingGroupId && activityOf(a, now) === "InProgress")) {
        throw new ApiError(403, "ScalingActivityInProgress", "You cannot delete a scaling group or launch a new scaling activity while there is a scaling activity in progress for the specified scaling group.");
    }
}

function record(st: EmulatorState, g: EmuScalingGroup, description: string, created: string[], destroyed: string[]): string {
    const now = Date.now();
    const a: EmuActivity = {
        scalingActivityId: st.nextId("asa-emu"), scalingGroupId: g.scalingGroupId, description, cause: `A user request ${description}.`,
        startedAt: now, endsAt: now + st.activityDurationMs, statusCode: st.activityDurationMs > 0 ? "InProgress" : "Successful",
        totalCapacity: members(st, g.scalingGroupId).length, createdInstances: created, destroyedInstances: destroyed,
    };
    st.activities.push(a);
    return a.scalingActivityId;
}

/** Launch one auto-created instance from the group's active configuration. */
export function launchInstance(st: EmulatorState, g: EmuScalingGroup): EmuInstance {
    const cfg = st.scalingConfigurations.get(g.activeScalingConfigurationId);
    const id = st.nextId("i-emu");
    const inst: EmuInstance = {
        instanceId: id, regionId: g.regionId, zoneId: `${g.regionId}-a`, instanceName: `ess-${id}`, hostName: `ess-${id}`,
        instanceType: cfg?.instanceType ?? "ecs.g7.large", imageId: cfg?.imageId ?? "emu-image", status: "Running",
        userData: cfg?.userData ?? "", systemDiskId: st.nextId("d-emu"), vpcId: g.vpcId, vSwitchId: g.vSwitchIds[0] ?? "vsw-emu",
        privateIp: `10.0.${Math.floor(st.nextSeq() / 250) % 250}.${(st.nextSeq() % 250) + 2}`, agentOnline: true,
        agentFailure: "ClientNotRunning", tags: {}, creationTime: isoTime(), userDataRuns: 1, pendingUserDataRun: false,
    };
    st.instances.set(id, inst);
    st.scalingInstances.set(id, {
        instanceId: id, scalingGroupId: g.scalingGroupId, scalingConfigurationId: g.activeScalingConfigurationId, creationType: "AutoCreated",
        entrusted: true, lifecycleState: "InService", healthStatus: "Healthy", creationTime: isoTime(), seq: st.nextSeq(),
    });
    st.onUserDataRun?.(inst);
    return inst;
}

/** Take instances out of a group; auto-created and entrusted ones are released (or stopped with recycle). */
function removeMembers(st: EmulatorState, ids: string[], release: boolean, recycle: boolean): void {
    for (const id of ids) {
        const si = st.scalingInstances.get(id);
        st.scalingInstances.delete(id);
        if (!si || !release || !(si.creationType === "AutoCreated" || si.entrusted)) continue;
        const inst = st.instances.get(id);
        if (!inst) continue;
        if (recycle) inst.status = "Stopped";
        else st.instances.delete(id);
    }
}

/** Bring the group's member count to its desired capacity (launch newest, remove oldest). */
function reconcile(st: EmulatorState, g: EmuScalingGroup): { created: string[]; destroyed: string[] } {
    const created: string[] = [], destroyed: string[] = [];
    while (members(st, g.scalingGroupId).length < g.desiredCapacity) created.push(launchInstance(st, g).instanceId);
    const extra = members(st, g.scalingGroupId).length - g.desiredCapacity;
    if (extra > 0) {
        const victims = members(st, g.scalingGroupId).slice(0, extra).map((m) => m.instanceId);
        removeMembers(st, victims, true, false);
        destroyed.push(...victims);
    }
    return { created, destroyed };
}

function groupView(st: EmulatorState, g: EmuScalingGroup): Record<string, unknown> {
    const m = members(st, g.scalingGroupId);
    return {
        ScalingGroupId: g.scalingGroupId, ScalingGroupName: g.scalingGroupName, RegionId: g.regionId, MinSize: g.minSize, MaxSize: g.maxSize,
        DesiredCapacity: g.desiredCapacity, LifecycleState: g.lifecycleState, ActiveScalingConfigurationId: g.activeScalingConfigurationId,
        TotalCapacity: m.length, ActiveCapacity: m.filter((x) => x.lifecycleState === "InService").length, PendingCapacity: m.filter((x) => x.lifecycleState === "Pending").length,
        RemovingCapacity: m.filter((x) => x.lifecycleState === "Removing").length, StandbyCapacity: 0, ProtectedCapacity: 0, StoppedCapacity: 0,
        TotalInstanceCount: m.length, VpcId: g.vpcId, VSwitchId: g.vSwitchIds[0] ?? "", VSwitchIds: { VSwitchId: g.vSwitchIds },
        RemovalPolicies: { RemovalPolicy: g.removalPolicies }, DefaultCooldown: 300, MultiAZPolicy: "PRIORITY", ScalingPolicy: "release",
        CreationTime: g.creationTime,
    };
}

function capacityCheck(g: EmuScalingGroup, total: number, removing: number): void {
    if (total - removing < g.minSize) {
        throw new ApiError(403, "IncorrectCapacity.MinSize", `To remove ${removing} instance(s), the total capacity (${total}) minus the removed instances must not be less than MinSize (${g.minSize}).`);
    }
}

function removeOrDetach(st: EmulatorState, p: Record<string, string>, detach: boolean): Record<string, unknown> {
    const g = groupOr404(st, required(p, "ScalingGroupId"));
    assertIdle(st, g);
    const ignoreInvalid = p.IgnoreInvalidInstance === "true";
    let ids = listParam(p, "InstanceId");
    if (ids.length === 0) throw new ApiError(400, "MissingInstanceId", 'The input parameter "InstanceId" that is mandatory for processing this request is not supplied.');
    const invalid = ids.filter((id) => st.scalingInstances.get(id)?.scalingGroupId !== g.scalingGroupId);
    if (invalid.length && !ignoreInvalid) throw new ApiError(404, "InvalidInstanceId.NotFound", `The specified instance is not in scaling group ${g.scalingGroupId}: ${invalid.join(", ")}.`);
    ids = ids.filter((id) => !invalid.includes(id));
    const decrease = p.DecreaseDesiredCapacity !== "false";
    const total = members(st, g.scalingGroupId).length;
    if (decrease) capacityCheck(g, total, ids.length);
    if (detach) removeMembers(st, ids, false, false);
    else removeMembers(st, ids, true, (p.RemovePolicy ?? "release") === "recycle");
    if (decrease) g.desiredCapacity = Math.max(g.minSize, g.desiredCapacity - ids.length);
    const { created } = decrease ? { created: [] as string[] } : reconcile(st, g);
    return { ScalingActivityId: record(st, g, `${detach ? "detaches" : "removes"} ${ids.length} instance(s)`, created, detach ? [] : ids) };
}

const describeScalingGroups: Handler = (st, p) => {
    const ids = listParam(p, "ScalingGroupId");
    let list = [...st.scalingGroups.values()].filter((g) => g.regionId === (p.RegionId ?? g.regionId));
    if (ids.length) list = list.filter((g) => ids.includes(g.scalingGroupId));
    if (p.ScalingGroupName) list = list.filter((g) => g.scalingGroupName === p.ScalingGroupName);
    const pg = page(list, p, 50, 10);
    return { TotalCount: pg.TotalCount, PageNumber: pg.PageNumber, PageSize: pg.PageSize, ScalingGroups: { ScalingGroup: pg.items.map((g) => groupView(st, g)) } };
};

const describeScalingInstances: Handler = (st, p) => {
    const ids = listParam(p, "InstanceId");
    let list = [...st.scalingInstances.values()].sort((a, b) => a.seq - b.seq);
    if (p.ScalingGroupId) list = list.filter((s) => s.scalingGroupId === p.ScalingGroupId);
    if (ids.length) list = list.filter((s) => ids.includes(s.instanceId));
    if (p.CreationType) list = list.filter((s) => s.creationType === p.CreationType);
    if (p.LifecycleState) list = list.filter((s) => s.lifecycleState === p.LifecycleState);
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

const modifyScalingGroup: Handler = (st, p) => {
    const g = groupOr404(st, required(p, "ScalingGroupId"));
    const min = intParam(p, "MinSize", g.minSize, 0, 2000);
    const max = intParam(p, "MaxSize", g.maxSize, 0, 2000);
    const desired = intParam(p, "DesiredCapacity", g.desiredCapacity, 0, 2000);
    if (min > max) throw new ApiError(400, "InvalidParameter.Conflict", `MinSize (${min}) must not exceed MaxSize (${max}).`);
    if (desired < min || desired > max) throw new ApiError(400, "InvalidParameter.Conflict", `DesiredCapacity (${desired}) must be between MinSize (${min}) and MaxSize (${max}).`);
    Object.assign(g, { minSize: min, maxSize: max, desiredCapacity: desired });
    if (p.ScalingGroupName) g.scalingGroupName = p.ScalingGroupName;
    const { created, destroyed } = reconcile(st, g);
    if (created.length || destroyed.length) record(st, g, `changes the desired capacity to ${desired}`, created, destroyed);
    return {};
};

const scaleWithAdjustment: Handler = (st, p) => {
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
    if (target < g.minSize) throw new ApiError(403, "IncorrectCapacity.MinSize", `The target capacity (${target}) is below MinSize (${g.minSize}).`);
    g.desiredCapacity = target;
    const { created, destroyed } = reconcile(st, g);
    return { ScalingActivityId: record(st, g, `adjusts the capacity to ${target}`, created, destroyed), ActivityType: "Normal" };
};

const attachInstances: Handler = (st, p) => {
    const g = groupOr404(st, required(p, "ScalingGroupId"));
    assertIdle(st, g);
    const ids = listParam(p, "InstanceId");
    for (const id of ids) {
        const i = st.instances.get(id);
        if (!i) throw new ApiError(404, "InvalidInstanceId.NotFound", `The specified instance does not exist: ${id}.`);
        if (i.status !== "Running") throw new ApiError(403, "IncorrectInstanceStatus", `The current status of instance ${id} (${i.status}) does not support this operation.`);
        if (st.scalingInstances.has(id)) throw new ApiError(403, "InstanceAlreadyAttached", `Instance ${id} is already in a scaling group.`);
    }
    if (members(st, g.scalingGroupId).length + ids.length > g.maxSize) throw new ApiError(403, "IncorrectCapacity.MaxSize", `Attaching ${ids.length} instance(s) would exceed MaxSize (${g.maxSize}).`);
    for (const id of ids) {
        st.scalingInstances.set(id, { instanceId: id, scalingGroupId: g.scalingGroupId, scalingConfigurationId: "", creationType: "Attached", entrusted: p.Entrusted === "true", lifecycleState: "InService", healthStatus: "Healthy", creationTime: isoTime(), seq: st.nextSeq() });
    }
    g.desiredCapacity = Math.min(g.maxSize, g.desiredCapacity + ids.length);
    return { ScalingActivityId: record(st, g, `attaches ${ids.length} instance(s)`, [], []) };
};

const describeScalingActivities: Handler = (st, p) => {
    const ids = listParam(p, "ScalingActivityId");
    const now = Date.now();
    let list = st.activities.filter((a) => (!p.ScalingGroupId || a.scalingGroupId === p.ScalingGroupId) && (!ids.length || ids.includes(a.scalingActivityId)));
    if (p.StatusCode) list = list.filter((a) => activityOf(a, now) === p.StatusCode);
    list = [...list].reverse();
    const pg = page(list, p, 50, 10);
    return {
        TotalCount: pg.TotalCount, PageNumber: pg.PageNumber, PageSize: pg.PageSize,
        ScalingActivities: { ScalingActivity: pg.items.map((a) => {
            const status = activityOf(a, now);
            return {
                ScalingActivityId: a.scalingActivityId, ScalingGroupId: a.scalingGroupId, Description: a.description, Cause: a.cause,
                StartTime: isoTime(a.startedAt), EndTime: status === "InProgress" ? "" : isoTime(a.endsAt), Progress: status === "InProgress" ? 50 : 100,
                StatusCode: status, StatusMessage: status === "InProgress" ? "" : "\"Successful\"", TotalCapacity: String(a.totalCapacity),
                ScalingInstanceNumber: a.createdInstances.length + a.destroyedInstances.length,
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
            UserData: c.userData,
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
};
