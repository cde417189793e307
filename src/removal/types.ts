// The removal core's vocabulary: what is removed, how, and what happened.
import type { ClusterAccess } from "../cloud/operations";
import type { Clock } from "../cloud/wait";
import type { NodeCommandIds } from "../rules";

/** How the node came into the cluster; decides which steps apply. */
export type NodeKind = "existing" | "scale-out" | "autoscaled" | "control-plane";

/** One node to remove. */
export interface RemovalTarget {
    instanceId: string;
    kind: NodeKind;
    /** ESS group of pool members (`scale-out`, `autoscaled`). */
    scalingGroupId?: string;
    /** For ESS members: `release` = RemoveInstances (instance released, desired capacity decreased),
     * `replace` = RemoveInstances keeping the desired capacity (released; ESS launches a replacement after the activity),
     * `keep` = DetachInstances (instance stays). Default `release`. */
    essAction?: "release" | "replace" | "keep";
    /** The Node's name when the caller knows it; `null` when known to be absent. Default: looked up by provider id. */
    nodeName?: string | null;
    /** Whether that Node is Ready (a NotReady node's pods never finish terminating). Default: looked up. */
    nodeReady?: boolean;
    /** That Node's `spec.podCIDR`, given with its name (its pod route's destination). Default: looked up. */
    nodePodCidr?: string;
    /** The instance's private IP and status, when the caller read them (DescribeInstances). Default: read at the start of the run. */
    instance?: { privateIp: string; status: string };
    /**
     * The saved join command (attach, control-plane join) that may still run on the instance: a running invocation
     * of it is stopped and waited out before the reset, or the join would register the Node again afterwards.
     * Default none (nothing to stop).
     */
    joinCommandId?: string;
}

/** Where and how to remove. */
export interface RemovalOptions {
    /** Region id of the cluster, e.g. `cn-hangzhou`. Required. */
    region: string;
    /**
     * Every master, master 0 first: the Kubernetes-side operations (kubectl with the admin kubeconfig) run on
     * the first that can run commands, so a removal completes with master 0 stopped. Required.
     */
    masterInstanceIds: readonly string[];
    /** The cluster's saved commands (drain, reset, delete-node, …). Required. */
    commands: NodeCommandIds;
    /** Route table holding the pod routes; when set, a route left behind for the instance is deleted. Default none: no route is deleted. */
    routeTableId?: string;
    /**
     * The cluster's pod CIDR: only routes to the instance whose destination lies inside it are pod routes and
     * deleted (a user's own route through the machine, e.g. a NAT instance's `0.0.0.0/0`, stays). Without it
     * (state written before it existed) only a route to the podCIDR its Node had in this run is deleted. Default none: the podCIDR the Node had.
     */
    podCidr?: string;
    /**
     * Called once per node just before the removal's first step that changes it (the drain's cordon, or clearing its
     * userdata when it has no Node): what came before only read. Default none.
     */
    onChange?: (instanceId: string) => void;
    /** `kubectl drain --timeout`, seconds. Default 600. */
    drainTimeoutSeconds?: number;
    /** Drain with `--force` (deletes pods without a controller). Default false. */
    force?: boolean;
    /**
     * Drain with `--force --disable-eviction`: pods are deleted, not evicted, so PodDisruptionBudgets do not hold
     * (a rollout's `onDrainTimeout: force`, after a drain that ran out of time). Default false.
     */
    disableEviction?: boolean;
    /** Nodes removed at once by removeNodes. Default 5. */
    concurrency?: number;
    /** First Cloud Assistant poll delay, ms; also the first pause of the ESS activity and route waits. Default 1000 (tests lower it). */
    pollIntervalMs?: number;
    /**
     * A node whose machine keeps running (an existing node, a pool node detached with `keep`) and that cannot
     * run commands (stopped, Cloud Assistant agent offline) is removed anyway, without `kubeadm reset`. Its
     * kubelet credentials stay on it, so its kubelet registers the Node again when it next runs, until
     * `kubeadm reset -f` is run on it. Default false: the removal fails at the reset step with the fix.
     */
    removeWithoutReset?: boolean;
    /** Bound on the wait for one ESS scaling activity, seconds. Default 1200. */
    activityTimeoutSeconds?: number;
    /**
     * The clock the removal's waits (ESS activities, an instance stopping, a join stopped, routes gone) and the retries
     * of its ESS and route calls while another activity or route task runs pause on and read their time bounds from. Default the real one (`SYSTEM_CLOCK`); a test passes one
     * that steps the emulator, so that what it waits for ends when the test says, not when the machine gets to it.
     */
    clock?: Clock;
    /** Progress for the Pulumi log (`draining i-…`). Default: nothing logged. */
    log?: (message: string) => void;
    /** Warnings for the Pulumi log (a step skipped because its target is gone). Default: nothing logged. */
    warn?: (message: string) => void;
}

/** The steps, in order. `find-node` only looks; it is named so that its failure is not reported as a drain's. */
export const REMOVAL_STEPS = ["find-node", "drain", "clear-userdata", "reset", "leave-etcd", "delete-node", "leave-scaling-group", "delete-route"] as const;
export type RemovalStep = (typeof REMOVAL_STEPS)[number];

/** What happened to one node. */
export interface RemovalReport {
    instanceId: string;
    /** Steps that acted. */
    done: RemovalStep[];
    /** Steps skipped because their target was already gone or does not apply, with the reason. */
    skipped: Array<{ step: RemovalStep; reason: string }>;
}

/** A step failed: removal of that node (or that ESS batch) stopped there. */
export class RemovalError extends Error {
    constructor(
        public readonly instanceIds: string[],
        public readonly step: RemovalStep,
        public readonly cause: Error,
        fix: string,
    ) {
        super(`removing ${instanceIds.join(", ")}: step "${step}" failed: ${cause.message}\n  fix: ${fix}\n  ` +
            "Later steps did not run for this node; run the same `pulumi up` / `pulumi destroy` again to resume.");
        this.name = "RemovalError";
    }

    /** The first (for a single node: the only) instance. */
    get instanceId(): string {
        return this.instanceIds[0] ?? "";
    }
}

/** What a removal learns of the node's Kubernetes side as it goes. */
export interface NodeFacts {
    /** The Node's name; null when there is none. */
    name: string | null;
    /** Whether the Node is Ready; undefined when unknown. */
    ready?: boolean;
    /** The reset was skipped because the node could not run commands: its kubelet may still run. */
    resetSkipped?: boolean;
    /** A Node whose deletion waits until the instance has left its group (see steps.ts `removeNodeObject`). */
    deleteAfterLeaving?: string;
    /** The Node this run's drain succeeded on (undefined: none was drained; a Node registered again under that name later is another). */
    drainedNode?: string;
    /**
     * The member was attached to its group, not created by ESS: RemoveInstances may leave it running (ESS
     * releases only the instances it created, or entrusted ones), so it is reset before its held Node goes.
     */
    attachedMember?: boolean;
    /** The instance is no longer a member of its scaling group (it left in this run, or before it). */
    leftGroup?: boolean;
    /** This run stopped the machine (a released victim with no Node, fenced before its call): a drain does not wait for its pods. */
    machineStopped?: boolean;
    /** The Node's `spec.podCIDR` when seen in this run ("" unknown): the CCM's route to the node has it as destination. */
    podCidr?: string;
    /** The instance's private IP, read at the start of the run ("" when gone or unknown): its Node is matched by it too. */
    privateIp?: string;
    /** The instance's status at the start of the run (`Running`, `Stopped`, …; `gone` when it no longer exists; undefined when unknown). */
    instanceStatus?: string;
}

/** One node's removal in progress: its target, what is known of its Node, its report, and how it logs. */
export interface NodeRemoval {
    target: RemovalTarget;
    facts: NodeFacts;
    report: RemovalReport;
    log: (message: string) => void;
    warn: (message: string) => void;
}

/** One removal run (one or many nodes): its options and the one cluster access its operations share. */
export interface RemovalRun {
    opts: RemovalOptions;
    /** Shared, so that once a master fails to run a command the others are tried first for the rest of the run. */
    access: ClusterAccess;
}

/** Starts a removal run. */
export function beginRun(opts: RemovalOptions, targets: readonly RemovalTarget[] = []): RemovalRun {
    return { opts, access: { region: opts.region, masterInstanceIds: operatingMasters(opts.masterInstanceIds, targets), commands: opts.commands, pollIntervalMs: opts.pollIntervalMs } };
}

/**
 * The masters the run's operations may use: not a control-plane member being removed (its kubectl would drain,
 * reset and remove itself from etcd while it runs them, and stop answering halfway), unless no other is left.
 */
export function operatingMasters(masters: readonly string[], targets: readonly RemovalTarget[]): readonly string[] {
    const leaving = new Set(targets.filter((t) => t.kind === "control-plane").map((t) => t.instanceId));
    const others = masters.filter((m) => !leaving.has(m));
    return others.length > 0 ? others : masters;
}

/** Starts the bookkeeping of one node's removal. */
export function beginRemoval(target: RemovalTarget, opts: RemovalOptions): NodeRemoval {
    const log = opts.log ?? (() => undefined);
    return {
        target, facts: { name: target.nodeName ?? null, ready: target.nodeReady, podCidr: target.nodePodCidr },
        report: { instanceId: target.instanceId, done: [], skipped: [] }, log, warn: opts.warn ?? log,
    };
}

/** Whether the node's machine keeps running after it left: an existing node, or a pool node detached with `keep`. */
export function keepsRunning(target: RemovalTarget): boolean {
    return target.kind === "existing" || (target.kind !== "control-plane" && target.essAction === "keep");
}

/** Records a skipped step, with a warning in the Pulumi log (the target was gone: worth knowing). */
export function skipStep(r: NodeRemoval, step: RemovalStep, reason: string): void {
    r.report.skipped.push({ step, reason });
    r.warn(`${r.target.instanceId}: ${step} skipped: ${reason}`);
}

/** Records a step that does not apply to this kind of node (no warning). */
export function notApplicable(r: NodeRemoval, step: RemovalStep, reason: string): void {
    r.report.skipped.push({ step, reason });
}

/** Runs one step; any failure becomes a RemovalError naming the instance, the step and the fix (which may depend on the error). */
export async function runStep(r: NodeRemoval, step: RemovalStep, fix: string | ((err: unknown) => string), run: () => Promise<void>): Promise<void> {
    try {
        await run();
    } catch (err) {
        throw err instanceof RemovalError ? err : new RemovalError([r.target.instanceId], step, err as Error, typeof fix === "string" ? fix : fix(err));
    }
}
