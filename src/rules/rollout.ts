// A pool's rollout settings: how `pulumi up` replaces the outdated nodes of a fixed pool (docs/rotation.md).
import { parseDuration } from "./formats";
import type { Report } from "./problems";

/** A pool's rollout as written in the config (every field optional). */
export interface RolloutInput {
    /** Nodes launched above the pool's size before outdated ones are removed. Default 1. */
    maxSurge?: number;
    /** Ready nodes the pool may be short of its size while outdated ones are removed. Default 0. */
    maxUnavailable?: number;
    /** How long one node's drain may take (a Go duration, e.g. `10m`). Default `10m`. */
    drainTimeout?: string;
    /**
     * What a drain that runs out of time does: `pause` (the rollout stops with the pod named; the next `pulumi up`
     * resumes) or `force` (the drain is retried deleting the pods that block it, PodDisruptionBudgets bypassed).
     * Default `pause`.
     */
    onDrainTimeout?: "pause" | "force";
    /**
     * Replace one node first: while no outdated node has left yet, the surge is one node and one outdated node leaves,
     * and the new node is validated (`validate`) before the rest follow. Default true.
     */
    canary?: boolean;
    /**
     * How long to wait after each batch of outdated nodes left, before validating and going on (a Go duration, 0 to
     * 24h: pods evicted onto the new nodes get time to start, or to fail). Default `30s`.
     */
    soak?: string;
    /**
     * Validate the cluster before the rollout starts, after each surge and after each batch (docs/rotation.md#validation):
     * every new node of the pool Ready, every Deployment of kube-system and kube-flannel with all its replicas
     * available, every pod of theirs on a Ready Node Ready; retried for as long as a node's Ready wait
     * (`PoolTimeouts.readyTimeoutSeconds`, 20 minutes), then the rollout pauses naming what failed. Default true.
     */
    validate?: boolean;
}

/** A pool's rollout with its defaults applied. */
export interface Rollout {
    maxSurge: number;
    maxUnavailable: number;
    drainTimeoutSeconds: number;
    onDrainTimeout: "pause" | "force";
    /** One node replaced and validated before the rest. Default (read from state written without it) true. */
    canary?: boolean;
    /** Wait after each batch, seconds. Default (read from state written without it) 30. */
    soakSeconds?: number;
    /** Validate the cluster before, between and after batches. Default (read from state written without it) true. */
    validate?: boolean;
}

/** The defaults: surge 1, unavailable 0, a 10-minute drain that pauses when it runs out, a canary, 30 s of soak, validation. */
export const DEFAULT_ROLLOUT: Required<Rollout> = { maxSurge: 1, maxUnavailable: 0, drainTimeoutSeconds: 600, onDrainTimeout: "pause", canary: true, soakSeconds: 30, validate: true };

/** A rollout with every field set (fields missing from a rollout built by hand, or recorded by an older version, take their defaults). */
export function rolloutWithDefaults(r: Rollout): Required<Rollout> {
    return { ...DEFAULT_ROLLOUT, ...Object.fromEntries(Object.entries(r).filter(([, v]) => v !== undefined)) } as Required<Rollout>;
}

/** Largest surge or unavailability a rollout takes (ESS's RemoveInstances batch; more buys nothing). */
export const MAX_ROLLOUT_STEP = 20;

/**
 * Checks a pool's rollout and returns it with its defaults, or undefined when anything was reported (at
 * `maxSurge`, `maxUnavailable`, `drainTimeout`, `onDrainTimeout`, `canary`, `soak`, `validate`, or "" for the whole).
 */
export function parseRollout(input: RolloutInput | undefined, report: Report): Required<Rollout> | undefined {
    const r = input ?? {};
    let ok = true;
    const bad = (path: string, reason: string) => {
        ok = false;
        report(path, reason);
    };
    const count = (path: "maxSurge" | "maxUnavailable") => {
        const v = r[path];
        if (v === undefined) return DEFAULT_ROLLOUT[path];
        if (!Number.isInteger(v) || v < 0 || v > MAX_ROLLOUT_STEP) bad(path, `must be an integer in 0..${MAX_ROLLOUT_STEP}, got ${v}`);
        return v;
    };
    const maxSurge = count("maxSurge");
    const maxUnavailable = count("maxUnavailable");
    if (ok && maxSurge === 0 && maxUnavailable === 0) {
        bad("", "maxSurge and maxUnavailable are both 0: no outdated node could ever be replaced; set maxSurge: 1 (a node added before one is removed) or maxUnavailable: 1");
    }
    const duration = (path: "drainTimeout" | "soak", min: number, fallback: number, example: string) => {
        const text = r[path];
        if (text === undefined) return fallback;
        const s = parseDuration(text);
        if (s === undefined || s < min || s > 86400) {
            bad(path, `"${text}" must be a duration from ${min === 0 ? "0" : `${min}s`} to 24h, like ${example}`);
            return fallback;
        }
        return Math.ceil(s);
    };
    const drainTimeoutSeconds = duration("drainTimeout", 1, DEFAULT_ROLLOUT.drainTimeoutSeconds, "10m or 1h");
    const soakSeconds = duration("soak", 0, DEFAULT_ROLLOUT.soakSeconds, "30s, 5m or 0 (none)");
    const onDrainTimeout = r.onDrainTimeout ?? DEFAULT_ROLLOUT.onDrainTimeout;
    if (onDrainTimeout !== "pause" && onDrainTimeout !== "force") bad("onDrainTimeout", `must be "pause" or "force", got ${JSON.stringify(onDrainTimeout)}`);
    const flag = (path: "canary" | "validate") => {
        const v = r[path];
        if (v === undefined) return DEFAULT_ROLLOUT[path];
        if (typeof v !== "boolean") bad(path, `must be true or false, got ${JSON.stringify(v)}`);
        return v;
    };
    const canary = flag("canary");
    const validate = flag("validate");
    return ok ? { maxSurge, maxUnavailable, drainTimeoutSeconds, onDrainTimeout, canary, soakSeconds, validate } : undefined;
}
