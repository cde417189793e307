/**
 * The removal core: one safe, resumable sequence for taking any node out of the cluster
 * (DESIGN.md §1). Every step is idempotent — a target already gone counts as done, with a warning —
 * and retried on transient errors; a step that fails stops that node's removal with an error naming
 * the instance, the step and the fix, so nothing later runs (no release of an undrained node).
 * Running the same `pulumi up` / `destroy` again resumes.
 *
 *   drain → clear userdata (existing nodes) → kubeadm reset on the node → delete Node
 *         → ESS RemoveInstances / DetachInstances (pool members) → delete a left-over pod route
 */

/** How the node came into the cluster; decides which steps apply. */
export type NodeKind = "existing" | "scale-out" | "autoscaled" | "control-plane";

/** One node to remove. */
export interface RemovalTarget {
    instanceId: string;
    kind: NodeKind;
    /** ESS group of pool members (`scale-out`, `autoscaled`). */
    scalingGroupId?: string;
    /** For ESS members: `release` = RemoveInstances (instance released, desired capacity decreased),
     * `keep` = DetachInstances (instance stays). Default `release`. */
    essAction?: "release" | "keep";
}

/** Where and how to remove. */
export interface RemovalOptions {
    region: string;
    /** Master that runs kubectl (master 0). */
    masterInstanceId: string;
    /** Route table holding the pod routes; when set, a route left behind for the instance is deleted. */
    routeTableId?: string;
    /** `kubectl drain --timeout`, seconds. Default 600. */
    drainTimeoutSeconds?: number;
    /** Drain with `--force` (deletes pods without a controller). Default false. */
    force?: boolean;
    /** Nodes removed at once by {@link removeNodes}. Default 5. */
    concurrency?: number;
    /** First Cloud Assistant poll delay, ms. Default 1000 (tests lower it). */
    pollIntervalMs?: number;
    /** Progress for the Pulumi log (`draining i-…`). */
    log?: (message: string) => void;
    /** Warnings for the Pulumi log (a step skipped because its target is gone). */
    warn?: (message: string) => void;
}

/** The steps, in order. */
export const REMOVAL_STEPS = ["drain", "clear-userdata", "reset", "delete-node", "leave-scaling-group", "delete-route"] as const;
export type RemovalStep = (typeof REMOVAL_STEPS)[number];

/** What happened to one node. */
export interface RemovalReport {
    instanceId: string;
    /** Steps that acted. */
    done: RemovalStep[];
    /** Steps skipped because their target was already gone or does not apply, with the reason. */
    skipped: Array<{ step: RemovalStep; reason: string }>;
}

/** A step failed: removal of that node stopped there. */
export class RemovalError extends Error {
    constructor(
        public readonly instanceId: string,
        public readonly step: RemovalStep,
        public readonly cause: Error,
        fix: string,
    ) {
        super(`removing ${instanceId}: step "${step}" failed: ${cause.message}\n  fix: ${fix}\n  ` +
            "Later steps did not run for this node; run the same `pulumi up` / `pulumi destroy` again to resume.");
        this.name = "RemovalError";
    }
}
