/**
 * Removing several nodes: one Node listing for all of them; the Kubernetes side of each, a few at a time;
 * as each finishes, a drained pool member queues for its scaling group, whose batches (scalingGroup.ts) run
 * one after another per group while other nodes still drain (a member that had no Node waits until every
 * drain has ended); then the pod routes of every node that left. A
 * node whose step failed goes no further, and neither do the members of a group after one of its batches
 * failed (a victim held back alone because its machine could not be stopped does not count); every other
 * node is finished, and one error lists each failure at the end.
 */
import { deletePodRoutes } from "./routes";
import { ESS_BATCH, leaveGroupBatch } from "./scalingGroup";
import { deleteNodesAfterLeaving, describeTargets, findNodes, kubernetesSide } from "./steps";
import { beginRemoval, beginRun, notApplicable, RemovalError, type NodeRemoval, type RemovalOptions, type RemovalReport, type RemovalRun, type RemovalTarget } from "./types";

/** Runs `work` over `items`, `concurrency` at a time, to the end (failures are the work's to record). */
async function eachLimited<T>(items: readonly T[], concurrency: number, work: (item: T) => Promise<void>): Promise<void> {
    let next = 0;
    const worker = async () => {
        while (next < items.length) await work(items[next++]);
    };
    await Promise.all(Array.from({ length: Math.min(Math.max(1, concurrency), items.length) }, worker));
}

interface GroupQueue {
    waiting: NodeRemoval[];
    /** Members of this group whose Kubernetes side has not ended yet. */
    pending: number;
    /** The running worker, if any. */
    worker?: Promise<void>;
    /** Why later members fail without a call (an earlier batch failed). */
    broken?: string;
}

/**
 * One queue per scaling group: members join as their Kubernetes side ends; a worker takes up to
 * {@link ESS_BATCH} of them (same action) per call while no other call of that group runs, once a batch is
 * full or no drain of that group is pending any more (a batch of one while nineteen still drain would cost a
 * scaling activity of its own). After a failed batch, the group's other members fail without a call.
 */
class GroupQueues {
    private readonly queues: Map<string, GroupQueue>;
    /** Members that had no Node to drain: held until every drain of the run has ended (see {@link release}). */
    private readonly held: NodeRemoval[];
    private draining: boolean;

    // Fields set here, not as class fields: Pulumi serializes this class by value from the repository's sources,
    // and a class field's initializer is not part of what it captures.
    constructor(private readonly run: RemovalRun, private readonly failed: Map<NodeRemoval, Error>, members: readonly NodeRemoval[]) {
        this.queues = new Map();
        this.held = [];
        this.draining = true;
        for (const r of members) this.queueOf(r.target.scalingGroupId!).pending += 1;
    }

    private queueOf(group: string): GroupQueue {
        const q = this.queues.get(group) ?? { waiting: [], pending: 0 };
        this.queues.set(group, q);
        return q;
    }

    /**
     * A member's Kubernetes side ended: queue it (`ok`) or only count it out. One that had no Node (still
     * joining, or never joined) waits until no drain of this run is running: a node that registers late would
     * otherwise receive the evicted pods of the others after the last look at it.
     */
    done(r: NodeRemoval, ok: boolean): void {
        const q = this.queueOf(r.target.scalingGroupId!);
        q.pending -= 1;
        if (ok && this.draining && !r.facts.drainedNode) {
            this.held.push(r);
        } else if (ok) {
            q.waiting.push(r);
        }
        this.kick(r.target.scalingGroupId!, q);
    }

    /** Every drain of the run has ended: the held members go. */
    release(): void {
        this.draining = false;
        for (const r of this.held.splice(0)) this.queueOf(r.target.scalingGroupId!).waiting.push(r);
        for (const [group, q] of this.queues) this.kick(group, q);
    }

    /** Starts the group's worker when there is a batch to send and none is being sent. */
    private kick(group: string, q: GroupQueue): void {
        if (!q.worker && this.ready(q)) q.worker = this.work(group, q);
    }

    /** A batch is worth a call: full, or nothing more of the group will come (no drain pending, no held member). */
    private ready(q: GroupQueue): boolean {
        if (q.waiting.length === 0) return false;
        return q.waiting.length >= ESS_BATCH || (q.pending === 0 && !this.held.some((r) => q === this.queues.get(r.target.scalingGroupId!)));
    }

    private async work(group: string, q: GroupQueue): Promise<void> {
        try {
            await this.drain(group, q);
        } finally {
            // Synchronously after the last look at `waiting`: a member added later starts a new worker.
            q.worker = undefined;
        }
        this.kick(group, q);
    }

    private async drain(group: string, q: GroupQueue): Promise<void> {
        await Promise.resolve(); // members added in the same turn go in the same batch
        while (this.ready(q)) {
            if (q.broken) {
                const rest = q.waiting.splice(0);
                const err = new RemovalError(rest.map((r) => r.target.instanceId), "leave-scaling-group", new Error(`not attempted: ${q.broken}`),
                    `fix the failed batch of ${group} first, then run again`);
                rest.forEach((r) => this.failed.set(r, err));
                return;
            }
            const action = q.waiting[0].target.essAction ?? "release";
            const batch = q.waiting.filter((r) => (r.target.essAction ?? "release") === action).slice(0, ESS_BATCH);
            q.waiting = q.waiting.filter((r) => !batch.includes(r));
            const heldBack = await leaveGroupBatch(batch, this.run, this.failed);
            // A victim held back (its machine could not be stopped) fails alone; any other failure stops the group.
            const failedHere = batch.filter((r) => this.failed.has(r) && !heldBack.includes(r));
            if (failedHere.length > 0) q.broken = `an earlier batch of ${group} failed (${failedHere.map((r) => r.target.instanceId).join(", ")})`;
        }
    }

    /** Resolves once every queue is empty and no call runs. */
    async settled(): Promise<void> {
        for (;;) {
            const running = [...this.queues.values()].map((q) => q.worker).filter((w): w is Promise<void> => w !== undefined);
            if (running.length === 0) return;
            await Promise.all(running);
        }
    }
}

/**
 * Removes nodes: see the module comment. `removeNode(t)` is `removeNodes([t])`.
 * @throws the RemovalError of a single failed node; for several, one Error listing each failure
 */
export async function removeNodes(targets: RemovalTarget[], opts: RemovalOptions): Promise<RemovalReport[]> {
    const run = beginRun(opts, targets);
    const removals = targets.map((t) => beginRemoval(t, opts));
    const failed = new Map<NodeRemoval, Error>();
    const record = (rs: readonly NodeRemoval[]) => (err: unknown) => rs.forEach((r) => failed.set(r, err as Error));
    await describeTargets(removals, run).then(() => findNodes(removals, run)).catch(record(removals));
    const sides = removals.filter((r) => !failed.has(r));
    const groups = new GroupQueues(run, failed, sides.filter((r) => r.target.scalingGroupId));
    await eachLimited(sides, opts.concurrency ?? 10, async (r) => {
        let ok = true;
        try {
            await kubernetesSide(r, run);
        } catch (err) {
            failed.set(r, err as Error);
            ok = false;
        }
        if (r.target.scalingGroupId) groups.done(r, ok);
        else if (ok) notApplicable(r, "leave-scaling-group", "not an ESS member");
    });
    groups.release();
    await groups.settled();
    await deleteNodesAfterLeaving(removals.filter((r) => !failed.has(r)), run, failed);
    // Routes after the Nodes: the CCM writes a route for every Node with a podCIDR, and forgets a deleted Node's only in memory.
    const left = removals.filter((r) => !failed.has(r));
    await deletePodRoutes(left, run).catch(record(left));
    for (const r of removals.filter((x) => !failed.has(x))) r.log(`${r.target.instanceId} removed (${r.report.done.join(", ") || "nothing left to do"})`);
    const failures = [...new Set(failed.values())];
    if (failures.length === 1 && targets.length === 1) throw failures[0];
    if (failures.length > 0) {
        throw new Error(`${failed.size} of ${targets.length} node removal(s) failed:\n${failures.map((f) => f.message).join("\n")}`);
    }
    return removals.map((r) => r.report);
}

/** Removes one node: {@link removeNodes} of one. */
export async function removeNode(target: RemovalTarget, opts: RemovalOptions): Promise<RemovalReport> {
    return (await removeNodes([target], opts))[0];
}

export { ESS_BATCH };
