/** In-memory state of the OpenAPI emulator and the helpers its product handlers share. */
import * as crypto from "crypto";

/** An error the emulator answers with, shaped like the real gateway's `{RequestId, Code, Message}`. */
export class ApiError extends Error {
    constructor(readonly status: number, readonly code: string, message: string) {
        super(message);
    }
}

/** Per-instance Cloud Assistant failure an offline agent produces (DescribeInvocationResults `ErrorCode`). */
export type AgentFailure = "ClientNotRunning" | "ClientNotResponse" | "DeliveryTimeout";

/**
 * Where the login password of an instance's current system disk comes from.
 * `instance`: unchanged from before (ReplaceSystemDisk without Password/PasswordInherit keeps it:
 * ecs20140526 ReplaceSystemDiskRequest.password "Default value: The password remains unchanged");
 * `request`: set by the `Password` parameter; `image`: the image's preset password
 * (`PasswordInherit=true`); `none`: `PasswordInherit=true` on an image without a preset password.
 */
export type PasswordSource = "instance" | "request" | "image" | "none";

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
    /** The system disk's category (DescribeDisks `Category`). Default `cloud_essd`. */
    systemDiskCategory?: string;
    vpcId: string;
    vSwitchId: string;
    privateIp: string;
    /** Whether the Cloud Assistant agent is online. */
    agentOnline: boolean;
    /**
     * Per-instance error code a command gets while the agent is offline. `DeliveryTimeout`: the
     * command is never delivered; it stays `Pending` for `EmulatorState.deliveryTimeoutMs`, then ends
     * `Aborted` / `DeliveryTimeout` (see ecs.ts).
     */
    agentFailure: AgentFailure;
    tags: Record<string, string>;
    creationTime: string;
    /** Times the user data "ran" (first boot, and each boot after ReplaceSystemDisk). */
    userDataRuns: number;
    /** Set by ReplaceSystemDisk: the next StartInstance runs the user data. */
    pendingUserDataRun: boolean;
    /**
     * A Stop/Start in progress with `transitionReads`: the status it ends in, how many more DescribeInstances answers
     * show the intermediate one, and what happens when it ends.
     */
    pendingTransition?: { to: InstanceStatus; reads: number; done: () => void };
    /** SSH key pair bound to the instance, "" when none (DescribeInstances `KeyPairName`). Default "". */
    keyPairName: string;
    /** Where the current system disk's login password comes from. Default `instance`. */
    passwordSource: PasswordSource;
    /**
     * When the instance was last started (DescribeInstances `StartTime`): set at creation and by each
     * StartInstance. The SDK models disagree on its precision (ecs20140526 DescribeInstancesResponseBody
     * `startTime`, TypeScript/Python/.NET: "yyyy-MM-ddTHH:mmZ", example `2017-12-10T04:04Z`; Java/PHP:
     * "yyyy-MM-ddTHH:mm:ssZ"): the coarser one, minutes, is modelled. Whether a reboot changes it is not
     * documented; only a start does here.
     */
    startTime: string;
}

/** What a command handler returns: exit code (default 0), output (default ""), run time (default 0 ms). */
export interface CommandReply { exitCode?: number; output?: string; delayMs?: number }

/**
 * What a function handler receives. `script` is the final script the agent runs: for
 * CreateCommand/InvokeCommand (and RunCommand with `EnableParameter=true`) the `{{name}}`
 * parameters are already substituted. `commandId` is the saved or RunCommand-created command.
 */
export interface CommandContext { instanceId: string; script: string; invokeId: string; instance: EmuInstance; commandId: string; parameters: Record<string, string> }

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
    /** Agent in `DeliveryTimeout`: `Pending` until this time, then `Aborted` / `DeliveryTimeout`. */
    deliveryTimeoutAt?: number;
    /** The script this instance runs (built-in `{{ACS::…}}` parameters differ per instance). */
    script?: string;
}

/** One RunCommand or InvokeCommand invocation. */
export interface EmuInvocation {
    invokeId: string;
    commandId: string;
    /** The script with custom parameters substituted (per-instance built-ins are in each record's `script`). */
    script: string;
    timeoutSeconds: number;
    createdAt: number;
    records: EmuInvocationRecord[];
    /** The command content as submitted (before substitution); DescribeInvocations returns it as `CommandContent`. */
    content?: string;
    /** The `Parameters` JSON string as passed ("" when none); DescribeInvocations returns it as `Parameters`. */
    parameters?: string;
    commandName?: string;
    commandType?: string;
    commandDescription?: string;
    workingDir?: string;
    username?: string;
}

/** One saved Cloud Assistant command (CreateCommand, or RunCommand with KeepCommand=true). */
export interface EmuCommand {
    commandId: string;
    name: string;
    description: string;
    type: string;
    /** Decoded content as created (with its `{{name}}` placeholders). */
    content: string;
    enableParameter: boolean;
    /** Custom parameter names found in the content when EnableParameter=true (first spelling wins). */
    parameterNames: string[];
    timeoutSeconds: number;
    workingDir: string;
    launcher: string;
    creationTime: string;
    invokeTimes: number;
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
    /** A DesiredCapacity change arrived while an activity ran: ESS reconciles when it ends. */
    pendingReconcile?: boolean;
    /** A launch failed: when ESS tries again to reach the desired capacity, once no activity runs (ess.ts [EXP]). */
    retryLaunchAt?: number;
    /** Processes suspended with SuspendProcesses (`ScaleIn`, `ScaleOut`, `HealthCheck`, `AlarmNotification`, `ScheduledAction`). */
    suspendedProcesses?: string[];
}

/** Lifecycle states of a scaling-group member. */
export type ScalingLifecycleState = "InService" | "Pending" | "Pending:Wait" | "Protected" | "Standby" | "Removing" | "Removing:Wait" | "Stopped";

/** An instance's membership in a scaling group. */
export interface EmuScalingInstance {
    instanceId: string;
    scalingGroupId: string;
    scalingConfigurationId: string;
    creationType: "AutoCreated" | "Attached";
    entrusted: boolean;
    /**
     * ESS lifecycle state (DescribeScalingInstances `LifecycleState`, api-ess-2022-02-22-describescalinginstances):
     * `Pending`/`Pending:Wait` while being added, `Protected` after SetInstancesProtection, `Standby` after
     * EnterStandby, `Removing`/`Removing:Wait` while a removal activity runs.
     */
    lifecycleState: ScalingLifecycleState;
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
    /** `Tags` (key → value): ESS puts them on the instances; the Cluster Autoscaler reads them as template labels. */
    tags?: Record<string, string>;
}

/** Final status of a scaling activity (DescribeScalingActivities `StatusCode`). */
export type ActivityStatus = "Successful" | "Warning" | "Failed" | "InProgress" | "Rejected";

/** How a test makes the next scaling activity of a group end (see `Emulator.failNextActivity`). */
export interface ActivityFault {
    status: "Failed" | "Rejected" | "Warning";
    /** `ErrorCode` of the activity. Default `OperationFailed` (Failed), `OperationDenied` (Rejected), `PartialFailed` (Warning). */
    errorCode?: string;
    /** `ErrorMessage` and `StatusMessage`. */
    message?: string;
    /** Warning only: instances whose planned change does NOT happen (default: the last planned one). */
    keep?: string[];
}

/** What an activity changes when it ends (emulator bookkeeping; absent on activities tests push by hand). */
export interface ActivityPlan {
    kind: "scale" | "remove" | "detach" | "attach" | "enterStandby" | "exitStandby" | "healthCheck";
    /** Members leaving (remove/detach/scale-in/health check) or changing state (standby). */
    instanceIds: string[];
    /** Instances launched (scale-out) or attached at the start, `Pending` until the end. */
    launched: string[];
    /** Release auto-created / entrusted members on removal (RemoveInstances, scale-in). */
    release: boolean;
    /** RemovePolicy=recycle: stop instead of release. */
    recycle: boolean;
    /** Lower DesiredCapacity by the number of members actually removed. */
    decrease: boolean;
    /** Lifecycle state of each affected member before the activity (restored when it does not happen). */
    before: Record<string, ScalingLifecycleState>;
    /** Bring the group back to DesiredCapacity when the activity ends (RemoveInstances with DecreaseDesiredCapacity=false, health check). */
    reconcileAfter: boolean;
}

/** One ESS scaling activity. */
export interface EmuActivity {
    scalingActivityId: string;
    scalingGroupId: string;
    description: string;
    cause: string;
    startedAt: number;
    endsAt: number;
    statusCode: ActivityStatus;
    totalCapacity: number;
    createdInstances: string[];
    destroyedInstances: string[];
    /** Set when the activity ends (struct_scaling_activity.go `StatusMessage`). */
    statusMessage?: string;
    /** `ErrorCode` / `ErrorMessage` of a Failed, Rejected or Warning activity. */
    errorCode?: string;
    errorMessage?: string;
    /** The membership change applied when the activity ends. */
    plan?: ActivityPlan;
    /** How the activity ends (from `failNextActivity`); Successful when absent. */
    outcome?: ActivityFault;
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
    status: "Available" | "Pending" | "Modifying" | "Deleting";
    /** While `Pending`/`Deleting`: when the route task ends (then `Available`, or gone). */
    until?: number;
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
/** A custom image (DescribeImages / DeleteImage). */
export interface EmuImage {
    imageId: string;
    imageName: string;
    /** `Available`, `Creating`, … */
    status: string;
}

/** An ECS Image Builder execution (DescribeImagePipelineExecutions); tests move it along by editing it. */
export interface EmuImageBuild {
    executionId: string;
    /** `PREPARING`, `BUILDING`, `SUCCESS`, `FAILED`, `CANCELLED`, … */
    status: string;
    /** "" until the image exists; may stay "" (the field is not documented as always set). */
    imageId: string;
    errorInfo: string;
}

let generations = 0;

/** An id {@link EmulatorState.nextId} makes: a prefix, `-emu`, the generation (4 digits or more), the sequence (12). */
const MINTED_ID = "[a-z]+-emu(\\d{4,})(\\d{12})";

/**
 * The generation of the emulator that minted `id` (an id of the form {@link EmulatorState.nextId} makes), else undefined.
 * Test hygiene, not a cloud behaviour: an id of another generation in a request means a loop of an earlier emulator's
 * test is still calling (it reads the endpoint at call time, so it now reaches this emulator).
 */
export function idGeneration(id: string): number | undefined {
    const m = new RegExp(`^${MINTED_ID}$`).exec(id);
    return m ? Number(m[1]) : undefined;
}

/** The ids of the form {@link EmulatorState.nextId} makes (of any generation) that `text` names. */
export function mintedIds(text: string): string[] {
    return text.match(new RegExp(`\\b${MINTED_ID}\\b`, "g")) ?? [];
}

export class EmulatorState {
    readonly instances = new Map<string, EmuInstance>();
    /** Custom images of the account by id. */
    readonly images = new Map<string, EmuImage>();
    /** Image Builder executions by id. */
    readonly imageBuilds = new Map<string, EmuImageBuild>();
    readonly invocations = new Map<string, EmuInvocation>();
    readonly scalingGroups = new Map<string, EmuScalingGroup>();
    readonly scalingInstances = new Map<string, EmuScalingInstance>();
    readonly scalingConfigurations = new Map<string, EmuScalingConfiguration>();
    readonly activities: EmuActivity[] = [];
    readonly routeTables = new Map<string, EmuRouteTable>();
    /** Saved Cloud Assistant commands by id (CreateCommand; RunCommand with KeepCommand=true). */
    readonly commands = new Map<string, EmuCommand>();
    /** Faults for the next scaling activity of a group (`Emulator.failNextActivity`). */
    readonly activityFaults = new Map<string, ActivityFault[]>();
    /** Per VPC: until when a route-entry task runs (`routeTaskMs`). */
    readonly routeTaskUntil = new Map<string, number>();
    /** Registered Cloud Assistant handlers; the most recently registered match wins. */
    readonly handlers: { pattern: RegExp; handler: CommandHandler }[] = [];
    /** When true, RunCommand on a non-Running instance fails synchronously with `InvalidInstance.NotMatch`
     * instead of a per-instance `InstanceNotRunning` result (the real API's choice is unconfirmed). */
    syncNotMatchForStoppedInstances = false;
    /**
     * Per-action rate limits: action (or `*`: each action on its own) → calls per `rateWindowMs`. Default none (off).
     * ECS throttles each API operation per account and region, every client of the account counting (the console,
     * RAM users, Terraform...), and an operation throttled in one time unit may be called again in the next
     * (https://www.alibabacloud.com/help/en/elastic-compute-service/latest/api-throttling); Quota Center states the
     * limits as calls per time unit ("5/1 s", "200/60 s", https://help.aliyun.com/en/openapi/throttling-and-quota-management).
     * So: a fixed window per action; a call over the limit gets HTTP 400 `Throttling.User` "Request was denied due to
     * user flow control." (the code and status the SDKs and Terraform handle: docs/upstream.md#api-retries) and is not
     * applied; refused calls do not count. No retry hint is sent (none is documented: the harsher case). Set with
     * `Emulator.rateLimit`.
     */
    rateLimits: Record<string, number> = {};
    /** The window of `rateLimits`, ms. Default 1000. */
    rateWindowMs = 1000;
    /** Calls counted in the current window, per action. */
    readonly rateCounts = new Map<string, { window: number; count: number }>();
    /**
     * Most InstanceId.N one RunCommand/InvokeCommand takes. Default 100 (the current InvokeCommandRequest model);
     * older API references say 50 (https://www.alibabacloud.com/help/doc-detail/64841.htm) and older still 20. Over it:
     * 403 `InstanceIds.ExceedLimit` "The number of instance IDs exceeds the upper limit." (the same pages' error tables).
     */
    maxInstancesPerInvocation = 100;
    /**
     * Largest page DescribeInvocationResults returns whatever MaxResults asks (forces NextToken paging). Default 50: the
     * API reference's "Maximum value: 50" for MaxResults (docs/upstream.md#cas-results).
     */
    invocationResultsPageCap = 50;
    /**
     * How far the emulator's clock runs ahead of the wall clock (ms). `Emulator.advance` moves it, so a test steps an
     * asynchronous operation (a scaling activity, a route task, a command's delivery or run) past its end without
     * sleeping and without a window a loaded machine could miss. Default 0.
     */
    clockOffsetMs = 0;
    /**
     * Where `Emulator.stopClock` stopped the wall clock's part of the emulator's time (ms since the epoch); from then
     * on only `clockOffsetMs` moves it. Default undefined: the wall clock runs.
     */
    clockStoppedAt: number | undefined = undefined;
    /** The emulator's time (ms since the epoch): the wall clock (or where it was stopped) plus `clockOffsetMs`. */
    now(): number {
        return (this.clockStoppedAt ?? Date.now()) + this.clockOffsetMs;
    }
    /** How long StopInstance/StartInstance stay in `Stopping`/`Starting` (ms). Default 0: the final state at once. */
    transitionMs = 0;
    /**
     * How many DescribeInstances answers show an instance in `Stopping`/`Starting` after StopInstance/StartInstance
     * before the final status (takes precedence over `transitionMs`). The same asynchrony counted in reads rather than
     * time, for tests that watch the intermediate status on a loaded machine. Default 0.
     */
    transitionReads = 0;
    /**
     * How long after a failed launch ESS tries again to reach the desired capacity (the expected number of instances
     * feature keeps trying; how soon is not documented), ms. Default 30000.
     */
    launchRetryMs = 30_000;
    /** How long ESS scaling activities stay `InProgress` (ms). Default 0: they finish at once. */
    activityDurationMs = 0;
    /**
     * How long an undeliverable command (agent in `DeliveryTimeout`) stays `Pending` before it ends
     * `Aborted` / `DeliveryTimeout` (ms). Default 60000: the InvocationStatus doc says a command must
     * reach the instance "within 1 minute" (alibabacloud-csharp-sdk
     * ecs-20140526/core/Models/DescribeInvocationResultsResponseBody.cs, `Aborted`).
     */
    deliveryTimeoutMs = 60_000;
    /**
     * Whether RemoveInstances/DetachInstances may remove a `Protected` member. Default false: the
     * current SetInstancesProtection reference says protected instances "become immune to manual
     * deletion attempts by using the Auto Scaling console or API operations"
     * (alibabacloud.com/help/en/auto-scaling/developer-reference/api-ess-2022-02-22-setinstancesprotection);
     * the older 2014-08-28 page says RemoveInstances can still remove them. The harsher one is the default.
     */
    protectedMembersRemovable = false;
    /** Images that carry a preset password (ReplaceSystemDisk `PasswordInherit=true` needs one). Default none: public images have none. */
    readonly presetPasswordImages = new Set<string>();
    /** How long a route entry change keeps its VPC busy (entry `Pending`/`Deleting`), ms. Default 0. */
    routeTaskMs = 0;
    /**
     * Codes a route change gets while another one runs in the same VPC; used in rotation. Default the
     * four codes Terraform retries for this (resource_alicloud_route_entry.go:69-80, :326), all HTTP 400.
     */
    routeConflictCodes: string[] = ["TaskConflict", "OperationConflict", "IncorrectRouteEntryStatus", "SystemBusy"];
    /** Rotation counter of `routeConflictCodes`. */
    routeConflictSeq = 0;
    /** Primary ENIs whose source/destination check was turned off (ModifyNetworkInterfaceAttribute); on by default (ecs.ts). */
    readonly sourceDestCheckOff = new Set<string>();
    /** Called when an instance "runs" its user data (first boot after ReplaceSystemDisk). */
    onUserDataRun?: (instance: EmuInstance) => void;
    /** Test hook (not a cloud behaviour): called when a member leaves its scaling group, before its instance is released. */
    onMemberLeft?: (instanceId: string, scalingGroupId: string, released: boolean) => void;
    /** Test hook (not a cloud behaviour): called when a StopInstance is accepted, as the machine begins to shut down. */
    onStopInstance?: (instance: EmuInstance) => void;
    private seq = 0;
    /** This state's number in the process (1, 2, …): part of every id it mints, see {@link idGeneration}. */
    readonly generation = ++generations;

    /** A fresh id with a prefix: the generation in 4 digits (or more), the sequence in 12, e.g. `i-emu0003000000000001`. */
    nextId(prefix: string): string {
        this.seq += 1;
        return `${prefix}${String(this.generation).padStart(4, "0")}${String(this.seq).padStart(12, "0")}`;
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

/** ISO time to the minute (`2017-12-10T04:04Z`), as DescribeInstances prints `StartTime` (see EmuInstance.startTime). */
export function isoMinute(ms: number = Date.now()): string {
    return new Date(ms).toISOString().replace(/:\d{2}\.\d{3}Z$/, "Z");
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
