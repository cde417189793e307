/**
 * The ESS step of a removal: drained pool members leave their scaling group, one batch (≤ 20, one call)
 * at a time per group, because ESS runs one scaling activity at a time per group.
 *
 * Right before each call the batch is read again — its members (one already gone has left) and the
 * cluster's Nodes: a member whose Node registered after its drain (a node that was still joining) or came
 * back (a kubelet nobody reset) goes through the Kubernetes side again first. A protected member (fixed
 * pools: PoolCapacity protects them, so ESS never picks one itself) is unprotected only then. The call
 * lowers the desired capacity by exactly the members it takes (`DecreaseDesiredCapacity`), so ESS never
 * chooses a victim of its own. The activity it starts is waited for: `Successful` is done; `Warning` means
 * the members still present failed; `Failed` / `Rejected` fail the batch. docs/upstream.md#ess-remove,
 * #ess-activities, #ess-protection.
 */
import { stopInstancesAndWait } from "../cloud/ecs";
import { scalingGroupMembers, setInstancesProtection, waitForActivity, waitForIdleGroup, leaveScalingGroup as essLeave, type ScalingGroupMember } from "../cloud/ess";
import { listNodes, type NodeInfo } from "../cloud/operations";
import { OpenApiError } from "../cloud/openapi";
import { kubernetesSide, nodeOf } from "./steps";
import { RemovalError, skipStep, type NodeRemoval, type RemovalRun } from "./types";

/** ESS takes up to 20 instances in one RemoveInstances / DetachInstances call. */
export const ESS_BATCH = 20;

/** Member states ESS is taking the instance out in (by an earlier run's call, or its own health check). */
const LEAVING = ["Removing", "Removing:Wait"];

/** The group's fix line of every ESS failure. */
function fixOf(group: string): string {
    return `look at scaling group ${group} in the ESS console (scaling activities, each member's state), then run again`;
}

/** The members of the batch that are still in the group (waiting out a removal ESS is already running). */
async function presentMembers(batch: readonly NodeRemoval[], group: string, run: RemovalRun): Promise<ScalingGroupMember[]> {
    const ids = batch.map((r) => r.target.instanceId);
    let members = await scalingGroupMembers(run.opts.region, group, { instanceIds: ids });
    if (members.some((m) => LEAVING.includes(m.lifecycleState))) {
        batch[0].log(`${group}: ESS is already taking ${members.filter((m) => LEAVING.includes(m.lifecycleState)).map((m) => m.instanceId).join(", ")} out; waiting`);
        await waitForIdleGroup(run.opts.region, group, activityWait(run, batch[0]));
        members = await scalingGroupMembers(run.opts.region, group, { instanceIds: ids });
    }
    return members;
}

function activityWait(run: RemovalRun, r: NodeRemoval) {
    return { pollMs: run.opts.pollIntervalMs ?? 1000, timeoutMs: (run.opts.activityTimeoutSeconds ?? 1200) * 1000, log: r.log };
}

/**
 * A Node this run drained: the drain succeeded on that very Node, and it is still cordoned with the removal mark.
 * A mark and cordon alone may be an earlier run's drain that failed halfway, pods still on it.
 */
function drained(r: NodeRemoval, node: NodeInfo): boolean {
    return r.facts.drainedNode === node.name && node.unschedulable && node.removing !== "";
}

/**
 * Released victims that had no Node to drain (never joined, or still joining) are stopped first: a machine
 * still joining could otherwise register its Node after the last look, during the scaling activity, and take
 * pods until ESS releases it. Stopped, it cannot; a Node it registered before is drained next.
 */
async function fenceNodeless(batch: readonly NodeRemoval[], run: RemovalRun): Promise<void> {
    const nodeless = batch.filter((r) => (r.target.essAction ?? "release") === "release" && !r.facts.drainedNode);
    if (nodeless.length === 0) return;
    nodeless[0].log(`stopping ${nodeless.map((r) => r.target.instanceId).join(", ")} (no Node was drained: a node still joining must not register while it is released)`);
    await stopInstancesAndWait(run.opts.region, nodeless.map((r) => r.target.instanceId), { pollMs: run.opts.pollIntervalMs });
}

/**
 * Victims with a Node that is not drained now (one that registered late, or a deleted one its kubelet
 * registered again) go through the Kubernetes side again, at most twice; those still with an undrained
 * Node afterwards fail. Returns the batch left to take out of the group.
 */
async function drainLateNodes(batch: NodeRemoval[], run: RemovalRun, failed: Map<NodeRemoval, Error>): Promise<NodeRemoval[]> {
    let left = batch;
    for (let pass = 0; ; pass++) {
        const nodes = await listNodes(run.access);
        const undrained = (r: NodeRemoval) => { const n = nodeOf(nodes, run.opts.region, r.target.instanceId); return n && !drained(r, n) ? n : undefined; };
        const late = left.filter(undrained);
        if (late.length === 0) return left;
        for (const r of late) {
            const node = undrained(r)!;
            if (pass >= 2) {
                failed.set(r, new RemovalError([r.target.instanceId], "leave-scaling-group", new Error(`its Node ${node.name} keeps coming back after the drain`),
                    `its kubelet still runs: run \`kubeadm reset -f\` on ${r.target.instanceId}, then run again`));
                continue;
            }
            r.warn(`${r.target.instanceId}: Node ${node.name} appeared after the drain (the node was still joining, or its kubelet registered it again); draining it before it leaves ESS`);
            r.facts.name = node.name;
            r.facts.ready = node.ready;
            r.facts.podCidr = node.podCidr;
            try {
                await kubernetesSide(r, run);
            } catch (err) {
                failed.set(r, err as Error);
            }
        }
        left = left.filter((r) => !failed.has(r));
    }
}

/**
 * Takes one batch (same group, same action) out of its scaling group; see the module comment. Nodes that
 * fail are put in `failed` with their RemovalError; the others are done or skipped.
 */
export async function leaveGroupBatch(batch: NodeRemoval[], run: RemovalRun, failed: Map<NodeRemoval, Error>): Promise<void> {
    const group = batch[0].target.scalingGroupId!;
    const action = batch[0].target.essAction ?? "release";
    const failAll = (rs: readonly NodeRemoval[], err: Error) => {
        const e = err instanceof RemovalError ? err : new RemovalError(rs.map((r) => r.target.instanceId), "leave-scaling-group", err, fixOf(group));
        for (const r of rs) failed.set(r, e);
    };
    let members: ScalingGroupMember[];
    let todo: NodeRemoval[];
    try {
        members = await presentMembers(batch, group, run);
        const isMember = (r: NodeRemoval) => members.some((m) => m.instanceId === r.target.instanceId);
        for (const r of batch) {
            const m = members.find((x) => x.instanceId === r.target.instanceId);
            if (m && m.creationType !== "AutoCreated") r.facts.attachedMember = true;
        }
        for (const r of batch.filter((x) => !isMember(x))) {
            r.facts.leftGroup = true;
            skipStep(r, "leave-scaling-group", `${r.target.instanceId} is no longer in ${group}`);
        }
        // The Nodes are read after the members, right before the call.
        if (batch.some(isMember)) await fenceNodeless(batch.filter(isMember), run);
        todo = batch.some(isMember) ? await drainLateNodes(batch.filter(isMember), run, failed) : [];
    } catch (err) {
        if (err instanceof OpenApiError && err.code === "InvalidScalingGroupId.NotFound") {
            for (const r of batch.filter((x) => !failed.has(x))) {
                r.facts.leftGroup = true;
                skipStep(r, "leave-scaling-group", `scaling group ${group} no longer exists`);
            }
            return;
        }
        failAll(batch.filter((r) => !failed.has(r)), err as Error);
        return;
    }
    const present = todo;
    if (present.length === 0) return;
    const ids = present.map((r) => r.target.instanceId);
    try {
        const protectedIds = members.filter((m) => m.lifecycleState === "Protected").map((m) => m.instanceId);
        if (protectedIds.length > 0) await setInstancesProtection(run.opts.region, group, protectedIds, false);
        present[0].log(`${action === "keep" ? "detaching" : "releasing"} ${ids.join(", ")} from ${group}`);
        const activityId = await essLeave(run.opts.region, group, ids, action);
        const activity = await waitForActivity(run.opts.region, group, activityId, activityWait(run, present[0]));
        if (activity.statusCode === "Failed" || activity.statusCode === "Rejected") {
            throw new Error(`scaling activity ${activityId} ended ${activity.statusCode}${activity.errorCode ? ` (${activity.errorCode})` : ""}: ${activity.message || activity.description}`);
        }
        await settle(present, group, run, failed, activity.statusCode === "Warning" ? `scaling activity ${activityId} ended Warning: ${activity.message}` : "");
    } catch (err) {
        // Refused (a member is pending, in standby, or protected again meanwhile), or not a member any more (a retry
        // after a lost answer: DetachInstances has no ClientToken): what left, left; the others failed.
        if (!(err instanceof OpenApiError && ["IncorrectInstanceStatus", "InvalidInstanceId.NotFound"].includes(err.code))) {
            failAll(present, err as Error);
            return;
        }
        await settle(present, group, run, failed, `ESS refused to take them out (${err.code}: ${err.serverMessage})`).catch((e) => failAll(present, e as Error));
    }
}

/** After a call: members gone are done; those still present failed with `why` (or, when `why` is "", are done). */
async function settle(present: NodeRemoval[], group: string, run: RemovalRun, failed: Map<NodeRemoval, Error>, why: string): Promise<void> {
    const left = (r: NodeRemoval) => {
        r.facts.leftGroup = true;
        r.report.done.push("leave-scaling-group");
    };
    if (!why) {
        present.forEach(left);
        return;
    }
    const ids = present.map((r) => r.target.instanceId);
    let still = await scalingGroupMembers(run.opts.region, group, { instanceIds: ids });
    if (still.some((m) => LEAVING.includes(m.lifecycleState))) {
        // An activity we did not see (a lost answer) is taking them out: wait for it.
        await waitForIdleGroup(run.opts.region, group, activityWait(run, present[0]));
        still = await scalingGroupMembers(run.opts.region, group, { instanceIds: ids });
    }
    const stayed = present.filter((r) => still.some((m) => m.instanceId === r.target.instanceId));
    present.filter((x) => !stayed.includes(x)).forEach(left);
    if (stayed.length === 0) return;
    const states = stayed.map((r) => `${r.target.instanceId} ${still.find((m) => m.instanceId === r.target.instanceId)?.lifecycleState}`).join(", ");
    const err = new RemovalError(stayed.map((r) => r.target.instanceId), "leave-scaling-group", new Error(`${why}; still in ${group}: ${states}`), fixOf(group));
    for (const r of stayed) failed.set(r, err);
}
