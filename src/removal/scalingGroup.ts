/**
 * The ESS step of a removal: drained pool members leave their scaling group, one batch (≤ 20, one call)
 * at a time per group, because ESS runs one scaling activity at a time per group.
 *
 * Right before each call the batch is read again — its members (one already gone has left) and the
 * cluster's Nodes: a member whose Node registered after its drain (a node that was still joining) or came
 * back (a kubelet nobody reset) goes through the Kubernetes side again first. Only then is a released victim
 * still without a Node fenced: protected (so ESS's health check keeps it), stopped on its own (one whose stop
 * fails is held back alone), and the Nodes read once more; a fenced victim whose batch does not leave is
 * started again and its protection lifted. A protected member (fixed pools: PoolCapacity protects them,
 * so ESS never picks one itself) is unprotected right before the call. The call
 * lowers the desired capacity by exactly the members it takes (`DecreaseDesiredCapacity`), so ESS never
 * chooses a victim of its own. The activity it starts is waited for: `Successful` is done; `Warning` means
 * the members still present failed; `Failed` / `Rejected` fail the batch. docs/upstream.md#ess-remove,
 * #ess-activities, #ess-protection.
 */
import { describeInstances, startInstance, stopInstanceAndWait } from "../cloud/ecs";
import { isLeaving, scalingGroupMembers, setInstancesProtection, waitForActivity, waitForIdleGroup, leaveScalingGroup as essLeave, type ScalingGroupMember } from "../cloud/ess";
import { listNodes, nameAllowsInstance, type NodeInfo } from "../cloud/operations";
import { OpenApiError } from "../cloud/openapi";
import { kubernetesSide, nodeOf } from "./steps";
import { RemovalError, skipStep, type NodeRemoval, type RemovalRun } from "./types";

/** ESS takes up to 20 instances in one RemoveInstances / DetachInstances call. */
export const ESS_BATCH = 20;

/** The group's fix line of every ESS failure. */
function fixOf(group: string): string {
    return `look at scaling group ${group} in the ESS console (scaling activities, each member's state), then run again`;
}

/**
 * The members of the batch that are still in the group, a removal ESS is already running waited out. Members ESS
 * still shows leaving with no activity in progress (a lifecycle hook holding them, `Removing:Wait`) are not ours to
 * take out: they fail with what they are.
 */
async function presentMembers(batch: readonly NodeRemoval[], group: string, run: RemovalRun, failed: Map<NodeRemoval, Error>): Promise<ScalingGroupMember[]> {
    const ids = batch.map((r) => r.target.instanceId);
    let members = await scalingGroupMembers(run.opts.region, group, { instanceIds: ids });
    if (!members.some(isLeaving)) return members;
    batch[0].log(`${group}: ESS is already taking ${members.filter(isLeaving).map((m) => m.instanceId).join(", ")} out; waiting`);
    await waitForIdleGroup(run.opts.region, group, activityWait(run, batch[0]));
    members = await scalingGroupMembers(run.opts.region, group, { instanceIds: ids });
    const held = members.filter(isLeaving);
    for (const m of held) {
        const r = batch.find((x) => x.target.instanceId === m.instanceId)!;
        failed.set(r, new RemovalError([m.instanceId], "leave-scaling-group",
            new Error(`ESS shows it ${m.lifecycleState} in ${group}, with no scaling activity in progress: something holds its removal (a lifecycle hook waiting for its timeout or a callback)`),
            `complete or abandon the lifecycle action of ${m.instanceId} in the ESS console (or wait for the hook's timeout), then run again`));
    }
    return members.filter((m) => !isLeaving(m));
}

function activityWait(run: RemovalRun, r: NodeRemoval) {
    return { pollMs: run.opts.pollIntervalMs, timeoutMs: (run.opts.activityTimeoutSeconds ?? 1200) * 1000, log: r.log, clock: run.opts.clock };
}

/**
 * A Node this run drained: the drain succeeded on that very Node, and it is still cordoned with the removal mark.
 * A mark and cordon alone may be an earlier run's drain that failed halfway, pods still on it.
 */
function drained(r: NodeRemoval, node: NodeInfo): boolean {
    return r.facts.drainedNode === node.name && node.unschedulable && node.removing !== "";
}

/** The fence of one batch: the victims stopped, those held back (their stop failed), those refused (a Ready Node has their IP), and those this run protected. */
interface Fence {
    stopped: NodeRemoval[];
    heldBack: NodeRemoval[];
    refused: NodeRemoval[];
    protectedHere: string[];
}

/**
 * Released victims that still have no Node (never joined, or still joining) — read right after every late
 * Node of the batch was drained — are stopped before the call: a machine still joining could otherwise
 * register its Node during the scaling activity and take pods until ESS releases it. First they are
 * protected from scale-in (those in service): a protected member keeps its health status while stopped,
 * so ESS's health check does not release it before the call and launch a replacement the desired capacity
 * still counts (docs/upstream.md#ess-protection). Each is stopped on its own: one already gone is done; one
 * whose stop fails is held back from this batch and fails alone. Fills in `fence` as it goes.
 */
async function fenceNodeless(fence: Fence, todo: readonly NodeRemoval[], members: readonly ScalingGroupMember[], nodes: readonly NodeInfo[], group: string, run: RemovalRun,
    failed: Map<NodeRemoval, Error>): Promise<void> {
    let nodeless = todo.filter((r) => r.target.essAction !== "keep" && !r.facts.drainedNode);
    // A Ready Node with the instance's IP whose provider id names another instance is nobody this run can drain, yet it
    // may be this machine's kubelet (set up by hand): never stop it. A Node named after another instance is that
    // instance's whatever addresses its kubelet wrote (docs/security.md#node-names), so it keeps no victim from leaving.
    for (const r of nodeless) {
        const other = r.facts.privateIp
            ? nodes.find((n) => n.ready && n.internalIp === r.facts.privateIp && nameAllowsInstance(n.name, r.target.instanceId)) : undefined;
        if (!other) continue;
        fence.refused.push(r);
        failed.set(r, new RemovalError([r.target.instanceId], "leave-scaling-group",
            new Error(`the Ready Node ${other.name} (provider id "${other.providerId}") has its IP ${r.facts.privateIp}: it may be this machine's, so it is not stopped or released`),
            `if that Node is this instance's or stale, drain and delete it (kubectl drain ${other.name}; kubectl delete node ${other.name}: a provider id cannot be changed once set), then run again`));
    }
    nodeless = nodeless.filter((r) => !fence.refused.includes(r));
    if (nodeless.length === 0) return;
    const ids = nodeless.map((r) => r.target.instanceId);
    fence.protectedHere = members.filter((m) => ids.includes(m.instanceId) && m.lifecycleState === "InService").map((m) => m.instanceId);
    if (fence.protectedHere.length > 0) await setInstancesProtection(run.opts.region, group, fence.protectedHere, true, run.opts.clock);
    nodeless[0].log(`stopping ${ids.join(", ")} (no Node to drain: a node still joining must not register while it is released)`);
    await Promise.all(nodeless.map(async (r) => {
        const id = r.target.instanceId;
        try {
            await stopInstanceAndWait(run.opts.region, id, { pollMs: run.opts.pollIntervalMs, clock: run.opts.clock });
            r.facts.machineStopped = true;
            fence.stopped.push(r);
        } catch (err) {
            fence.heldBack.push(r);
            failed.set(r, new RemovalError([id], "leave-scaling-group", new Error(`it could not be stopped before its release: ${(err as Error).message}`),
                `${id} was not released (a machine still joining must be stopped first) and stays a member: look at it in the ECS console (a lock, an operation in progress), then run again`));
        }
    }));
}

/**
 * Undoes the fence of the victims that did not leave and are still members, not leaving: the protection
 * this run set is lifted, and a stopped machine is started again, so that ESS's health check does not
 * release a stopped member and launch a replacement, and the node is as it was (its kubelet may register
 * its Node now; a later run drains it).
 */
async function undoFence(fence: Fence, group: string, run: RemovalRun): Promise<void> {
    const rs = [...fence.stopped, ...fence.heldBack].filter((r) => !r.facts.leftGroup);
    if (rs.length === 0) return;
    const ids = rs.map((r) => r.target.instanceId);
    try {
        const stayed = (await scalingGroupMembers(run.opts.region, group, { instanceIds: ids })).filter((m) => !isLeaving(m));
        const lift = stayed.filter((m) => m.lifecycleState === "Protected" && fence.protectedHere.includes(m.instanceId)).map((m) => m.instanceId);
        if (lift.length > 0) await setInstancesProtection(run.opts.region, group, lift, false, run.opts.clock);
        for (const [id, inst] of await describeInstances(run.opts.region, stayed.map((m) => m.instanceId))) {
            if (inst.status !== "Stopped" && inst.status !== "Stopping") continue;
            rs[0].log(`starting ${id} again: it stays in ${group}`);
            await startInstance(run.opts.region, id);
            rs.filter((r) => r.target.instanceId === id).forEach((r) => { r.facts.machineStopped = false; });
        }
    } catch (err) {
        rs[0].warn(`${group}: could not start ${ids.join(", ")} again (${(err as Error).message}): start them in the ECS console, or ESS's health check replaces them`);
    }
}

/**
 * Victims with a Node that is not drained now (one that registered late, or a deleted one its kubelet
 * registered again) go through the Kubernetes side again, at most twice; those still with an undrained
 * Node afterwards fail. Returns the batch left to take out of the group.
 */
async function drainLateNodes(batch: NodeRemoval[], run: RemovalRun, failed: Map<NodeRemoval, Error>): Promise<{ left: NodeRemoval[]; nodes: NodeInfo[] }> {
    let left = batch;
    for (let pass = 0; ; pass++) {
        const nodes = await listNodes(run.access);
        const undrained = (r: NodeRemoval) => { const n = nodeOf(nodes, r, run); return n && !drained(r, n) ? n : undefined; };
        const late = left.filter(undrained);
        if (late.length === 0) return { left, nodes };
        for (const r of late) {
            const node = undrained(r)!;
            if (pass >= 2) {
                failed.set(r, new RemovalError([r.target.instanceId], "leave-scaling-group", new Error(`its Node ${node.name} keeps coming back after the drain`),
                    `its kubelet still runs: run \`kubeadm reset -f\` on ${r.target.instanceId}, then run again`));
                continue;
            }
            r.warn(`${r.target.instanceId}: Node ${node.name} appeared after the drain (the node was still joining, or its kubelet registered it again); ` +
                `draining it before it leaves ESS${r.facts.machineStopped ? " (its machine is stopped: evicted pods are not waited for)" : ""}`);
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
 * @returns the victims held back from the batch (their stop failed): failed alone, the group's later batches still go
 */
export async function leaveGroupBatch(batch: NodeRemoval[], run: RemovalRun, failed: Map<NodeRemoval, Error>): Promise<NodeRemoval[]> {
    const group = batch[0].target.scalingGroupId!;
    const fence: Fence = { stopped: [], heldBack: [], refused: [], protectedHere: [] };
    try {
        await leaveGroup(batch, group, run, failed, fence);
    } finally {
        await undoFence(fence, group, run);
    }
    return [...fence.heldBack, ...fence.refused];
}

/** {@link leaveGroupBatch} up to the fence's undoing: the fence is filled in as it is set up. */
async function leaveGroup(batch: NodeRemoval[], group: string, run: RemovalRun, failed: Map<NodeRemoval, Error>, fence: Fence): Promise<void> {
    const action = batch[0].target.essAction ?? "release";
    const failAll = (rs: readonly NodeRemoval[], err: Error) => {
        const e = err instanceof RemovalError ? err : new RemovalError(rs.map((r) => r.target.instanceId), "leave-scaling-group", err, fixOf(group));
        for (const r of rs) failed.set(r, e);
    };
    let members: ScalingGroupMember[];
    let todo: NodeRemoval[];
    try {
        members = await presentMembers(batch.filter((r) => !failed.has(r)), group, run, failed);
        const isMember = (r: NodeRemoval) => members.some((m) => m.instanceId === r.target.instanceId);
        for (const r of batch) {
            const m = members.find((x) => x.instanceId === r.target.instanceId);
            if (m && m.creationType !== "AutoCreated") r.facts.attachedMember = true;
        }
        for (const r of batch.filter((x) => !isMember(x) && !failed.has(x))) {
            r.facts.leftGroup = true;
            skipStep(r, "leave-scaling-group", `${r.target.instanceId} is no longer in ${group}`);
        }
        // The Nodes are read after the members, right before the call: late Nodes are drained first, then the
        // victims still without one are stopped, then the Nodes are read once more (one registered between the
        // last listing and the stop is drained on its stopped machine, without waiting for its pods).
        const late = batch.some(isMember) ? await drainLateNodes(batch.filter(isMember), run, failed) : { left: [], nodes: [] };
        todo = late.left;
        await fenceNodeless(fence, todo, members, late.nodes, group, run, failed);
        todo = todo.filter((r) => !fence.heldBack.includes(r) && !fence.refused.includes(r));
        if (fence.stopped.length > 0) todo = (await drainLateNodes(todo, run, failed)).left;
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
        const protectedIds = ids.filter((id) => fence.protectedHere.includes(id) || members.some((m) => m.instanceId === id && m.lifecycleState === "Protected"));
        if (protectedIds.length > 0) await setInstancesProtection(run.opts.region, group, protectedIds, false, run.opts.clock);
        present[0].log(`${action === "keep" ? "detaching" : "releasing"} ${ids.join(", ")} from ${group}`);
        const activityId = await essLeave(run.opts.region, group, ids, action, run.opts.clock);
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
    if (still.some(isLeaving)) {
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
