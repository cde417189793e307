/**
 * Removing several nodes: the Kubernetes side of each, a few at a time; then the ESS members of each group
 * leave in batches (one scaling activity per batch; batches of one group one after another, because ESS
 * runs one activity at a time per group); then the left-over routes. A node whose step failed goes no
 * further; every other node is finished, and one error lists each failure at the end.
 */
import { ESS_BUSY_RETRY, leaveScalingGroup as essLeave, scalingGroupMembers } from "../cloud/ess";
import { OpenApiError } from "../cloud/openapi";
import { deletePodRoutes, kubernetesSide } from "./steps";
import { beginRemoval, notApplicable, RemovalError, skipStep, type NodeRemoval, type RemovalOptions, type RemovalReport, type RemovalTarget } from "./types";

/** ESS takes up to 20 instances in one RemoveInstances / DetachInstances call. */
export const ESS_BATCH = 20;

/**
 * Pool members leave their ESS group, `release` (RemoveInstances: instance released, desired capacity
 * decreased) or `keep` (DetachInstances). One call for the whole batch.
 */
async function leaveScalingGroup(group: string, essAction: "release" | "keep", nodes: NodeRemoval[], opts: RemovalOptions): Promise<void> {
    const ids = nodes.map((n) => n.target.instanceId);
    const fix = `check scaling group ${group} (ESS console: scaling activities), then retry`;
    let present: string[];
    try {
        const members = await scalingGroupMembers(opts.region, group, { instanceIds: ids });
        present = ids.filter((id) => members.some((m) => m.instanceId === id && m.lifecycleState !== "Removing"));
    } catch (err) {
        throw new RemovalError(ids, "leave-scaling-group", err as Error, fix);
    }
    for (const n of nodes.filter((x) => !present.includes(x.target.instanceId))) {
        skipStep(n, "leave-scaling-group", `${n.target.instanceId} is no longer in ${group}`);
    }
    if (present.length === 0) {
        return;
    }
    nodes[0].log(`${essAction === "keep" ? "detaching" : "releasing"} ${present.join(", ")} from ${group}`);
    try {
        await essLeave(opts.region, group, present, essAction);
    } catch (err) {
        // Left meanwhile (ESS was already removing them, or the group is gone): done.
        if (err instanceof OpenApiError && ["IncorrectInstanceStatus", "InvalidInstanceId.NotFound", "InvalidScalingGroupId.NotFound"].includes(err.code)) {
            for (const n of nodes.filter((x) => present.includes(x.target.instanceId))) {
                skipStep(n, "leave-scaling-group", `${n.target.instanceId} already left ${group} (${err.code})`);
            }
            return;
        }
        throw new RemovalError(present, "leave-scaling-group", err as Error, fix);
    }
    for (const n of nodes.filter((x) => present.includes(x.target.instanceId))) {
        n.report.done.push("leave-scaling-group");
    }
}

/** Runs `work` over `items`, `concurrency` at a time; collects the errors instead of stopping. */
async function eachLimited<T>(items: T[], concurrency: number, work: (item: T) => Promise<void>): Promise<Error[]> {
    const failures: Error[] = [];
    let next = 0;
    const worker = async () => {
        while (next < items.length) {
            const item = items[next++];
            try {
                await work(item);
            } catch (err) {
                failures.push(err as Error);
            }
        }
    };
    await Promise.all(Array.from({ length: Math.min(Math.max(1, concurrency), items.length) }, worker));
    return failures;
}

/**
 * The ESS batches of the removals that reached the ESS step, grouped by scaling group (batches of
 * one group run one after another; groups in parallel). Within a group, `release` and `keep` members
 * go in separate calls (RemoveInstances vs DetachInstances).
 */
function essBatchesByGroup(removals: NodeRemoval[]): NodeRemoval[][][] {
    const byGroup = new Map<string, Map<string, NodeRemoval[]>>();
    for (const r of removals) {
        if (!r.target.scalingGroupId) {
            notApplicable(r, "leave-scaling-group", "not an ESS member");
            continue;
        }
        const actions = byGroup.get(r.target.scalingGroupId) ?? new Map<string, NodeRemoval[]>();
        const action = r.target.essAction ?? "release";
        actions.set(action, [...(actions.get(action) ?? []), r]);
        byGroup.set(r.target.scalingGroupId, actions);
    }
    return [...byGroup.values()].map((actions) => [...actions.values()].flatMap((members) =>
        Array.from({ length: Math.ceil(members.length / ESS_BATCH) }, (_, k) => members.slice(k * ESS_BATCH, (k + 1) * ESS_BATCH))));
}

/**
 * Removes nodes: see the module comment. `removeNode(t)` is `removeNodes([t])`.
 * @throws the RemovalError of a single failed node; for several, one Error listing each failure
 */
export async function removeNodes(targets: RemovalTarget[], opts: RemovalOptions): Promise<RemovalReport[]> {
    const concurrency = opts.concurrency ?? 5;
    const removals = targets.map((t) => beginRemoval(t, opts));
    const failed = new Set<NodeRemoval>();
    const track = (rs: NodeRemoval[], work: () => Promise<void>) => work().catch((err) => {
        rs.forEach((r) => failed.add(r));
        throw err;
    });
    const failures = await eachLimited(removals, concurrency, (r) => track([r], () => kubernetesSide(r, opts)));
    failures.push(...await eachLimited(essBatchesByGroup(removals.filter((x) => !failed.has(x))), Number.MAX_SAFE_INTEGER, async (batches) => {
        for (const batch of batches) {
            await track(batch, () => leaveScalingGroup(batch[0].target.scalingGroupId!, batch[0].target.essAction ?? "release", batch, opts));
        }
    }));
    failures.push(...await eachLimited(removals.filter((x) => !failed.has(x)), concurrency, (r) => track([r], async () => {
        await deletePodRoutes(r, opts);
        r.log(`${r.target.instanceId} removed (${r.report.done.join(", ") || "nothing left to do"})`);
    })));
    if (failures.length === 1 && targets.length === 1) {
        throw failures[0];
    }
    if (failures.length > 0) {
        throw new Error(`${failed.size} of ${targets.length} node removal(s) failed:\n${failures.map((f) => f.message).join("\n")}`);
    }
    return removals.map((r) => r.report);
}

/** Removes one node: {@link removeNodes} of one. */
export async function removeNode(target: RemovalTarget, opts: RemovalOptions): Promise<RemovalReport> {
    return (await removeNodes([target], opts))[0];
}

export { ESS_BUSY_RETRY };
