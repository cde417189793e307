// A pool's health repair settings: which of a fixed pool's unhealthy nodes `pulumi up` replaces (docs/rotation.md#health-repair).
import { parseDuration } from "./formats";
import type { Report } from "./problems";

/** A pool's health repair as written in the config (every field optional). */
export interface HealthRepairInput {
    /**
     * How long a member may go without being Ready before it is replaced (a Go duration, 2m–24h): measured from its
     * Node's Ready condition `lastTransitionTime`, or, for an instance with no Node, from the instance's creation.
     * Default `10m`.
     */
    notReadyTimeout?: string;
    /**
     * The circuit breaker: when more of the pool's members than this are not Ready (past the timeout or not yet),
     * nothing is repaired (that is an outage, not a bad node) and the Pulumi log says why; otherwise every member
     * past the timeout is replaced, so never more than this many in one `pulumi up`. An integer, 1–20. Default 1.
     */
    maxUnhealthy?: number;
}

/** A pool's health repair with its defaults applied. */
export interface HealthRepair {
    /** Seconds a member may go without being Ready before it is replaced. */
    notReadyTimeoutSeconds: number;
    /** More members not Ready than this: nothing is repaired. */
    maxUnhealthy: number;
}

/** The defaults: ten minutes NotReady (Cluster API's default `nodeStartupTimeout`), one node at a time. */
export const DEFAULT_HEALTH_REPAIR: HealthRepair = { notReadyTimeoutSeconds: 600, maxUnhealthy: 1 };

/** Shortest `notReadyTimeout`: below it a kubelet restart or a reboot would cost the node. */
export const MIN_NOT_READY_TIMEOUT_SECONDS = 120;

/** Largest `maxUnhealthy` (one ESS RemoveInstances batch; more would not be one repair). */
export const MAX_UNHEALTHY = 20;

/**
 * Checks a pool's health repair and returns it with its defaults, or undefined when anything was reported (at
 * `notReadyTimeout` or `maxUnhealthy`). A health repair already parsed (a pool config built by hand) is checked as
 * it is ({@link checkHealthRepair}), not taken for one written without a timeout.
 */
export function parseHealthRepair(input: HealthRepairInput | HealthRepair | undefined, report: Report): HealthRepair | undefined {
    if (typeof input === "object" && input !== null && "notReadyTimeoutSeconds" in input) {
        let ok = true;
        checkHealthRepair(input, (path, reason) => {
            ok = false;
            report(path, reason);
        });
        return ok ? { notReadyTimeoutSeconds: input.notReadyTimeoutSeconds, maxUnhealthy: input.maxUnhealthy } : undefined;
    }
    const r: HealthRepairInput = input ?? {};
    let ok = true;
    let notReadyTimeoutSeconds = DEFAULT_HEALTH_REPAIR.notReadyTimeoutSeconds;
    if (r.notReadyTimeout !== undefined) {
        const s = typeof r.notReadyTimeout === "string" ? parseDuration(r.notReadyTimeout) : undefined;
        if (s === undefined || s < MIN_NOT_READY_TIMEOUT_SECONDS || s > 86400) {
            ok = false;
            report("notReadyTimeout", `${JSON.stringify(r.notReadyTimeout)} must be a duration from 2m to 24h, like 10m or 1h (shorter would replace a node that is only rebooting)`);
        } else {
            notReadyTimeoutSeconds = Math.ceil(s);
        }
    }
    const maxUnhealthy = r.maxUnhealthy ?? DEFAULT_HEALTH_REPAIR.maxUnhealthy;
    if (!Number.isInteger(maxUnhealthy) || maxUnhealthy < 1 || maxUnhealthy > MAX_UNHEALTHY) {
        ok = false;
        report("maxUnhealthy", `must be an integer in 1..${MAX_UNHEALTHY} (a count of nodes; percentages are not taken), got ${JSON.stringify(r.maxUnhealthy)}`);
    }
    return ok ? { notReadyTimeoutSeconds, maxUnhealthy } : undefined;
}

/**
 * Checks a health repair in its parsed form (a provider's inputs given directly): the same rules, reported at
 * `notReadyTimeoutSeconds` and `maxUnhealthy`.
 */
export function checkHealthRepair(repair: Partial<HealthRepair>, report: Report): void {
    const seconds = repair.notReadyTimeoutSeconds;
    const asWritten: HealthRepairInput = { maxUnhealthy: repair.maxUnhealthy, ...(seconds === undefined ? {} : { notReadyTimeout: `${seconds}s` }) };
    parseHealthRepair(asWritten, (path, reason) => report(path === "notReadyTimeout" ? "notReadyTimeoutSeconds" : path, reason));
}
