/**
 * One table for the error codes every caller branches on: the OpenAPI's synchronous codes and Cloud
 * Assistant's per-instance codes, each in one class. Providers, the removal core and doctor ask this
 * module, never a list of their own. Sources: docs/upstream.md#cas-error-codes, #cas-sync-errors,
 * #ecs-not-found, #ess-activities, #vpc-route-tasks, #api-retries.
 */

/** What a caller does about an error. */
export type ErrorClass =
    /** The resource does not exist (any more): a removal step counts as done, a lookup as "absent". */
    | "not-found"
    /** Cloud Assistant cannot run a command on the instance now: the agent is down, upgrading, or the command was never delivered. */
    | "agent-unreachable"
    /** The instance is not Running, so no command can run on it. */
    | "instance-not-running"
    /** Transient on the service's side (throttling, 5xx): retry with backoff. */
    | "retry-later"
    /** Another operation on the same resource is in progress (an ESS activity, a route-table task): retry after it ends. */
    | "conflict"
    /** A command ran out of time: killed on the instance (`ExecutionTimeout`) or no final result in time (`ClientWaitTimeout`, the runner's own). */
    | "timeout"
    /** Anything else: a real failure to report. */
    | "fatal";

// Plain arrays and objects, not Sets or Maps: Pulumi's function serialization captures them by value.
const AGENT_UNREACHABLE = ["ClientNotRunning", "ClientNotResponse", "ClientIsUpgrading", "ClientNeedUpgrade", "DeliveryTimeout",
    // The runner's own code for RunCommand refusing a Running instance synchronously: its agent is not ready yet.
    "InvalidInstance.NotMatch"];
const INSTANCE_NOT_RUNNING = ["InstanceNotRunning"];
const TIMEOUT = ["ExecutionTimeout", "ClientWaitTimeout"];
const NOT_FOUND_EXACT = ["InstanceNotExists", "InstanceReleased"];
const RETRY_LATER = ["ServiceUnavailable", "InternalError", "InternalError.Dispatch", "SystemBusy", "OperationFailed.SystemBusy", "UnknownError"];
const CONFLICT = [
    // ESS runs one scaling activity at a time per group.
    "ScalingActivityInProgress", "IncorrectScalingGroupStatus", "InvalidOperation.Conflict",
    // A VPC route table runs one route change at a time.
    "TaskConflict", "OperationConflict", "IncorrectRouteEntryStatus", "IncorrectVpcStatus", "IncorrectVRouterStatus",
    // Idempotent request still running.
    "IdempotentProcessing",
];

/** The class of an error code (synchronous API code or per-instance Cloud Assistant code). */
export function classify(code: string): ErrorClass {
    if (AGENT_UNREACHABLE.includes(code)) return "agent-unreachable";
    if (INSTANCE_NOT_RUNNING.includes(code)) return "instance-not-running";
    if (NOT_FOUND_EXACT.includes(code) || /NotFound$/.test(code) || /\.NotExist$/.test(code)) return "not-found";
    if (/Throttling/.test(code) || RETRY_LATER.includes(code)) return "retry-later";
    if (CONFLICT.includes(code)) return "conflict";
    if (TIMEOUT.includes(code)) return "timeout";
    return "fatal";
}

/** True when a command cannot run on the instance now (agent unreachable or instance not running). */
export function cannotRunCommands(code: string): boolean {
    const c = classify(code);
    return c === "agent-unreachable" || c === "instance-not-running";
}

/** The codes of one class that this table knows by name (for retry policies that need a list). */
export function codesOf(cls: "conflict" | "agent-unreachable" | "retry-later"): string[] {
    return cls === "conflict" ? [...CONFLICT] : cls === "retry-later" ? [...RETRY_LATER] : [...AGENT_UNREACHABLE];
}
