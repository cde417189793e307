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
}

/** A pool's rollout with its defaults applied. */
export interface Rollout {
    maxSurge: number;
    maxUnavailable: number;
    drainTimeoutSeconds: number;
    onDrainTimeout: "pause" | "force";
}

/** The defaults: one node of surge, never a Ready node fewer than the pool's size, a 10-minute drain, pause when it runs out. */
export const DEFAULT_ROLLOUT: Rollout = { maxSurge: 1, maxUnavailable: 0, drainTimeoutSeconds: 600, onDrainTimeout: "pause" };

/** Largest surge or unavailability a rollout takes (ESS's RemoveInstances batch; more buys nothing). */
export const MAX_ROLLOUT_STEP = 20;

/**
 * Checks a pool's rollout and returns it with its defaults, or undefined when anything was reported (at
 * `maxSurge`, `maxUnavailable`, `drainTimeout`, `onDrainTimeout`, or "" for the whole).
 */
export function parseRollout(input: RolloutInput | undefined, report: Report): Rollout | undefined {
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
    let drainTimeoutSeconds = DEFAULT_ROLLOUT.drainTimeoutSeconds;
    if (r.drainTimeout !== undefined) {
        const s = parseDuration(r.drainTimeout);
        if (s === undefined || s < 1 || s > 86400) bad("drainTimeout", `"${r.drainTimeout}" must be a duration from 1s to 24h, like 10m or 1h`);
        else drainTimeoutSeconds = Math.ceil(s);
    }
    const onDrainTimeout = r.onDrainTimeout ?? DEFAULT_ROLLOUT.onDrainTimeout;
    if (onDrainTimeout !== "pause" && onDrainTimeout !== "force") bad("onDrainTimeout", `must be "pause" or "force", got ${JSON.stringify(onDrainTimeout)}`);
    return ok ? { maxSurge, maxUnavailable, drainTimeoutSeconds, onDrainTimeout } : undefined;
}
