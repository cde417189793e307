/** In-memory state of the OpenAPI emulator and the helpers its product handlers share. */
import * as crypto from "crypto";

/** An error the emulator answers with, shaped like the real gateway's `{RequestId, Code, Message}`. */
export class ApiError extends Error {
    constructor(readonly status: number, readonly code: string, message: string) {
        super(message);
    }
}

/** ECS instance status values the emulator uses. */
export type InstanceStatus = "Pending" | "Starting" | "Running" | "Stopping" | "Stopped";

/** One ECS instance. */
export interface EmuInstance {
    instanceId: string;
    regionId: string;
    zoneId: string;
    instanceName: string;
    hostName: string;
    instanceType: string;
    imageId: string;
    status: InstanceStatus;
    /** Base64 user data, "" when none. */
    userData: string;
    systemDiskId: string;
    vpcId: string;
    vSwitchId: string;
    privateIp: string;
    /** Whether the Cloud Assistant agent is online. */
    agentOnline: boolean;
    /** Per-instance error code a command gets while the agent is offline. */
    agentFailure: "ClientNotRunning" | "ClientNotResponse";
    tags: Record<string, string>;
    creationTime: string;
    /** Times the user data "ran" (first boot, and each boot after ReplaceSystemDisk). */
    userDataRuns: number;
    /** Set by ReplaceSystemDisk: the next StartInstance runs the user data. */
    pendingUserDataRun: boolean;
}

/** What a command handler returns: exit code (default 0), output (default ""), run time (default 0 ms). */
export interface CommandReply { exitCode?: number; output?: string; delayMs?: number }

/** What a function handler receives. */
export interface CommandContext { instanceId: string; script: string; invokeId: string; instance: EmuInstance }

/** Static reply, or a function computing one (may be async). */
export type CommandHandler = CommandReply | ((ctx: CommandContext) => CommandReply | Promise<CommandReply>);

/** One instance's part of an invocation. */
export interface EmuInvocationRecord {
    instanceId: string;
    startedAt: number;
    /** Set once the handler has answered: when the command finishes. */
    doneAt?: number;
    reply?: CommandReply;
    /** Terminal status decided at creation (agent offline, instance not running). */
    fixed?: { status: string; errorCode: string; errorInfo: string };
}

/** One RunCommand invocation. */
export interface EmuInvocation {
    invokeId: string;
    commandId: string;
    script: string;
    timeoutSeconds: number;
    createdAt: number;
    records: EmuInvocationRecord[];
}

/** One ESS scaling group. */
export interface EmuScalingGroup {
    scalingGroupId: string;
    scalingGroupName: string;
    regionId: string;
    minSize: number;
    maxSize: number;
    desiredCapacity: number;
    lifecycleState: "Active" | "Inactive" | "Deleting";
    activeScalingConfigurationId: string;
    vSwitchIds: string[];
    vpcId: string;
    removalPolicies: string[];
    creationTime: string;
}

/** An instance's membership in a scaling group. */
export interface EmuScalingInstance {
    instanceId: string;
    scalingGroupId: string;
    scalingConfigurationId: string;
    creationType: "AutoCreated" | "Attached";
    entrusted: boolean;
    lifecycleState: "InService" | "Pending" | "Removing";
    healthStatus: "Healthy" | "Unhealthy";
    creationTime: string;
    seq: number;
}

/** One ESS scaling configuration. */
export interface EmuScalingConfiguration {
    scalingConfigurationId: string;
    scalingConfigurationName: string;
    scalingGroupId: string;
    imageId: string;
    instanceType: string;
    userData: string;
    lifecycleState: "Active" | "Inactive";
}

/** One ESS scaling activity. */
export interface EmuActivity {
    scalingActivityId: string;
    scalingGroupId: string;
    description: string;
    cause: string;
    startedAt: number;
    endsAt: number;
    statusCode: "Successful" | "Warning" | "Failed" | "InProgress" | "Rejected";
    totalCapacity: number;
    createdInstances: string[];
    destroyedInstances: string[];
}

/** One VPC route entry. */
export interface EmuRouteEntry {
    routeEntryId: string;
    routeTableId: string;
    destinationCidrBlock: string;
    nextHopType: string;
    nextHopId: string;
    routeEntryName: string;
    type: "Custom" | "System";
    status: "Available" | "Pending" | "Deleting";
}

/** One VPC route table. */
export interface EmuRouteTable {
    routeTableId: string;
    vpcId: string;
    vRouterId: string;
    routeTableType: "System" | "Custom";
    routeTableName: string;
    entries: EmuRouteEntry[];
}

/** Everything the emulator keeps. Tests may read and change it directly. */
export class EmulatorState {
    readonly instances = new Map<string, EmuInstance>();
    readonly invocations = new Map<string, EmuInvocation>();
    readonly scalingGroups = new Map<string, EmuScalingGroup>();
    readonly scalingInstances = new Map<string, EmuScalingInstance>();
    readonly scalingConfigurations = new Map<string, EmuScalingConfiguration>();
    readonly activities: EmuActivity[] = [];
    readonly routeTables = new Map<string, EmuRouteTable>();
    /** Registered Cloud Assistant handlers; the most recently registered match wins. */
    readonly handlers: { pattern: RegExp; handler: CommandHandler }[] = [];
    /** When true, RunCommand on a non-Running instance fails synchronously with `InvalidInstance.NotMatch`
     * instead of a per-instance `InstanceNotRunning` result (the real API's choice is unconfirmed). */
    syncNotMatchForStoppedInstances = false;
    /** Largest page DescribeInvocationResults returns whatever MaxResults asks (forces NextToken paging). Default 50. */
    invocationResultsPageCap = 50;
    /** How long StopInstance/StartInstance stay in `Stopping`/`Starting` (ms). Default 0: the final state at once. */
    transitionMs = 0;
    /** How long ESS scaling activities stay `InProgress` (ms). Default 0: they finish at once. */
    activityDurationMs = 0;
    /** Called when an instance "runs" its user data (first boot after ReplaceSystemDisk). */
    onUserDataRun?: (instance: EmuInstance) => void;
    private seq = 0;

    /** A fresh id with a prefix, e.g. `i-emu0000000000000001`. */
    nextId(prefix: string): string {
        this.seq += 1;
        return `${prefix}${String(this.seq).padStart(16, "0")}`;
    }

    /** Sequence number for ordering (oldest first). */
    nextSeq(): number {
        this.seq += 1;
        return this.seq;
    }
}

/** A request id like the gateway's (upper-case UUID). */
export function requestId(): string {
    return crypto.randomUUID().toUpperCase();
}

/** ISO time without milliseconds, as ECS prints it. */
export function isoTime(ms: number = Date.now()): string {
    return new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** Collect `Name.1`, `Name.2`, … into an array. */
export function listParam(params: Record<string, string>, name: string): string[] {
    const out: string[] = [];
    for (let i = 1; params[`${name}.${i}`] !== undefined; i++) out.push(params[`${name}.${i}`]);
    return out;
}

/** Read a required parameter or fail like the gateway (`MissingParameter`). */
export function required(params: Record<string, string>, name: string): string {
    const v = params[name];
    if (v === undefined || v === "") throw new ApiError(400, `Missing${name}`, `The input parameter "${name}" that is mandatory for processing this request is not supplied.`);
    return v;
}

/** Read an integer parameter with a default and bounds (`InvalidParameter` outside). */
export function intParam(params: Record<string, string>, name: string, dflt: number, min: number, max: number): number {
    const raw = params[name];
    if (raw === undefined || raw === "") return dflt;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min || n > max) throw new ApiError(400, `InvalidParameter.${name}`, `The specified parameter "${name}" is not valid (${min}..${max}).`);
    return n;
}

/** Page a list the PageNumber/PageSize way. */
export function page<T>(items: T[], params: Record<string, string>, maxSize: number, dflt = 10): { items: T[]; TotalCount: number; PageNumber: number; PageSize: number } {
    const PageSize = intParam(params, "PageSize", dflt, 1, maxSize);
    const PageNumber = intParam(params, "PageNumber", 1, 1, 1_000_000);
    return { items: items.slice((PageNumber - 1) * PageSize, PageNumber * PageSize), TotalCount: items.length, PageNumber, PageSize };
}

/** Page a list the NextToken/MaxResults way (the token is an opaque offset). */
export function tokenPage<T>(items: T[], params: Record<string, string>, maxName: string, maxSize: number, dflt: number, cap = maxSize): { items: T[]; NextToken: string; MaxResults: number } {
    const max = Math.min(cap, intParam(params, maxName, dflt, 1, maxSize));
    const start = params.NextToken ? Number(Buffer.from(params.NextToken, "base64").toString()) : 0;
    if (!Number.isInteger(start) || start < 0) throw new ApiError(400, "InvalidNextToken", "The specified NextToken is not valid.");
    const end = start + max;
    return { items: items.slice(start, end), NextToken: end < items.length ? Buffer.from(String(end)).toString("base64") : "", MaxResults: max };
}
