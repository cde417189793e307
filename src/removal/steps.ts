/**
 * The Kubernetes side of one node's removal: find its Node → drain → clear userdata (existing nodes) →
 * kubeadm reset on the node → leave etcd (control-plane members) → delete the Node. Each step is
 * idempotent: a target already gone counts as done, with a warning. Whether a Node exists is always read
 * from the cluster (its provider id), never guessed from a command's output.
 */
import { CommandError } from "../cloud/cloudAssistant";
import { describeInstance, getUserData, setUserData } from "../cloud/ecs";
import { cannotRunCommands, classify } from "../cloud/errors";
import { deleteNode, drainNode, listNodes, providerIdOf, removeEtcdMember, resetNode, type NodeInfo } from "../cloud/operations";
import { OpenApiError } from "../cloud/openapi";
import { keepsRunning, notApplicable, RemovalError, runStep, skipStep, type NodeRemoval, type RemovalRun } from "./types";

/** The no-op userdata left on a removed existing node, so a reboot or re-image cannot rejoin it. */
export const CLEARED_USERDATA = "#!/bin/sh\n# alicloud-kubeadm: this node was removed from its cluster; its join userdata was cleared.\n";

/** On a NotReady node (or one whose machine this run stopped) the kubelet never confirms pod deletion: stop waiting for evicted pods after this long, seconds. */
const NOT_READY_SKIP_WAIT_SECONDS = 60;

function isGone(err: unknown): boolean {
    return err instanceof OpenApiError && classify(err.code) === "not-found";
}

/** The Node of an instance in a listing, by provider id (the stable link), or undefined. */
export function nodeOf(nodes: readonly NodeInfo[], region: string, instanceId: string): NodeInfo | undefined {
    return nodes.find((n) => n.providerId === providerIdOf(region, instanceId));
}

/**
 * Looks up the Nodes of the removals that do not know theirs yet, with one listing for all of them
 * (`find-node`). A control-plane member is always looked up: its Node name is its etcd member's name.
 */
export async function findNodes(removals: readonly NodeRemoval[], run: RemovalRun): Promise<void> {
    const unknown = removals.filter((r) => r.target.nodeName === undefined || r.target.kind === "control-plane");
    if (unknown.length === 0) return;
    let nodes: NodeInfo[];
    try {
        nodes = await listNodes(run.access);
    } catch (err) {
        // One listing for every node: its failure is each one's find-node failure.
        throw new RemovalError(unknown.map((r) => r.target.instanceId), "find-node", err as Error, "check that a master is Running with its Cloud Assistant agent online");
    }
    for (const r of unknown) {
        const node = nodeOf(nodes, run.opts.region, r.target.instanceId);
        r.facts.name = node?.name ?? null;
        r.facts.ready = node?.ready;
        r.facts.podCidr = node?.podCidr ?? "";
    }
}

/** Whether the instance's Node exists now (a fresh listing). */
async function nodeExists(r: NodeRemoval, run: RemovalRun): Promise<NodeInfo | undefined> {
    return nodeOf(await listNodes(run.access), run.opts.region, r.target.instanceId);
}

/** Advice for a failed drain, from what kubectl printed. */
function drainFix(name: string, output: string): string {
    if (/disruption budget|global timeout reached|Too Many Requests/i.test(output)) {
        return `a PodDisruptionBudget or a slow pod blocks eviction from ${name}: free it, raise drainTimeoutSeconds, or set force: true to delete pods without a controller`;
    }
    if (/cannot delete Pods (not managed|declare no controller)|--force/i.test(output)) {
        return `${name} runs pods without a controller: delete them, or set force: true to let the drain delete them`;
    }
    return `read the drain output above (the full log is /var/log/alicloud-kubeadm/drain-${name}.log on the master that ran it), fix the cause, then retry`;
}

/**
 * Annotates (alicloud-kubeadm/removing), cordons and drains through the eviction API, so
 * PodDisruptionBudgets hold. When the drain fails, a fresh listing decides: a Node that no longer exists
 * was deleted meanwhile (done); any other failure stops the removal.
 */
async function drain(r: NodeRemoval, run: RemovalRun): Promise<void> {
    const id = r.target.instanceId;
    const name = r.facts.name;
    if (!name) {
        skipStep(r, "drain", `no Node has provider id ${providerIdOf(run.opts.region, id)} (already deleted, or never registered)`);
        return;
    }
    await runStep(r, "drain", (err) => drainFix(name, err instanceof CommandError ? err.outputTail : ""), async () => {
        r.log(`draining ${id} (node ${name})`);
        try {
            await drainNode(run.access, name, {
                timeoutSeconds: run.opts.drainTimeoutSeconds ?? 600, force: run.opts.force ?? false,
                skipWaitSeconds: r.facts.ready === false || r.facts.machineStopped ? NOT_READY_SKIP_WAIT_SECONDS : 0,
            });
            r.report.done.push("drain");
            r.facts.drainedNode = name;
        } catch (err) {
            if (await nodeExists(r, run)) throw err;
            r.facts.name = null; // deleted meanwhile (by an earlier run, by hand, or by the CCM)
            skipStep(r, "drain", `Node ${name} no longer exists`);
        }
    });
}

/** Existing nodes: clear the join userdata so a reboot or re-image cannot rejoin the cluster. */
async function clearUserdata(r: NodeRemoval, run: RemovalRun): Promise<void> {
    const id = r.target.instanceId;
    if (r.target.kind !== "existing") {
        notApplicable(r, "clear-userdata", `not an existing node (${r.target.kind})`);
        return;
    }
    await runStep(r, "clear-userdata", `allow ecs:ModifyInstanceAttribute for the caller, or clear the userdata of ${id} in the ECS console`, async () => {
        try {
            const current = await getUserData(run.opts.region, id);
            if (current === "" || current === CLEARED_USERDATA) {
                skipStep(r, "clear-userdata", "userdata already cleared");
                return;
            }
            r.log(`clearing the join userdata of ${id}`);
            await setUserData(run.opts.region, id, CLEARED_USERDATA);
            r.report.done.push("clear-userdata");
        } catch (err) {
            if (isGone(err)) {
                skipStep(r, "clear-userdata", `instance ${id} no longer exists`);
                return;
            }
            throw err;
        }
    });
}

/**
 * `kubeadm reset` on the node, plus what it leaves behind. Runs whenever the machine may still hold kubelet
 * credentials: a node with a Node, and every node whose machine keeps running or holds an etcd member, even
 * when its Node was deleted by hand. A machine that keeps running but cannot run commands fails the step
 * (its credentials would let it register again) unless `removeWithoutReset`; a pool node that is released
 * next, or a control-plane member (its etcd member is removed in the next step), is skipped with a warning.
 */
async function reset(r: NodeRemoval, run: RemovalRun): Promise<void> {
    const { target } = r;
    const id = target.instanceId;
    const mustReset = keepsRunning(target);
    if (releasedWithGroup(r)) {
        // Nothing to clean on a machine that is destroyed; its drained, cordoned Node is held until the instance
        // has left (see removeNodeObject). Were ESS to refuse, the member stays a whole node to uncordon.
        notApplicable(r, "reset", "the instance is released with its group membership");
        return;
    }
    const fix = `start ${id} and bring its Cloud Assistant agent online (\`systemctl restart aliyun.service\`), then run again; ` +
        "or set removeWithoutReset: true to remove it without a reset (its kubelet credentials stay on it: run `kubeadm reset -f` there before it runs again)";
    await runStep(r, "reset", fix, async () => {
        try {
            r.log(`resetting ${id}: kubeadm reset, CNI config, cni0, iptables`);
            await resetNode(run.access, id);
            r.report.done.push("reset");
        } catch (err) {
            const code = err instanceof CommandError ? err.errorCode : "";
            if (classify(code) === "not-found") {
                skipStep(r, "reset", `instance ${id} no longer exists`);
                return;
            }
            if (!cannotRunCommands(code)) throw err;
            r.facts.resetSkipped = true;
            if (!mustReset) {
                skipStep(r, "reset", `${id} cannot run commands (${code}); ${target.kind === "control-plane" ? "its etcd member is removed next" : "it is released next"}`);
                return;
            }
            if (!run.opts.removeWithoutReset) throw err;
            skipStep(r, "reset", `${id} cannot run commands (${code}) and removeWithoutReset is set: its kubelet credentials stay on it; ` +
                "run `kubeadm reset -f` there before it runs again, or it registers its Node again");
        }
    });
}

/**
 * Control-plane members: make sure the member left etcd. `kubeadm reset` only warns when it cannot leave
 * etcd (and a member that could not run it never tried), so the member — matched by its name (the Node's)
 * or its peer address — is removed through the etcd of another Ready master whatever the reset did.
 */
async function leaveEtcd(r: NodeRemoval, run: RemovalRun, nodeName: string | null): Promise<void> {
    const id = r.target.instanceId;
    if (r.target.kind !== "control-plane") {
        notApplicable(r, "leave-etcd", "not a control-plane member");
        return;
    }
    await runStep(r, "leave-etcd", `check etcd on the other masters (\`npm run doctor\` lists the members), then retry`, async () => {
        const peerIp = (await describeInstance(run.opts.region, id))?.privateIp ?? "";
        if (!nodeName && !peerIp) {
            skipStep(r, "leave-etcd", `neither a Node nor the instance of ${id} is left to name its etcd member; \`npm run doctor\` reports a stray member`);
            return;
        }
        const masters = run.opts.masterInstanceIds.filter((m) => m !== id);
        const nodes = await listNodes(run.access);
        const via = masters.map((m) => nodeOf(nodes, run.opts.region, m)).find((n) => n?.ready);
        if (!via) throw new Error(`no other master has a Ready Node to reach etcd through (masters: ${masters.join(", ") || "none"})`);
        const result = await removeEtcdMember(run.access, { member: nodeName ?? "", peerIp }, via.name);
        if (result === "absent") {
            notApplicable(r, "leave-etcd", "the reset took it out of etcd");
            return;
        }
        r.warn(`${id}: its etcd member was still there after the reset; removed it through ${via.name}`);
        r.report.done.push("leave-etcd");
    });
}

/**
 * Deletes the Node object. A pool node that is released next but could not be reset keeps its Node (drained
 * and cordoned) until it has left its group: its kubelet still runs, and would register a deleted Node again,
 * uncordoned, for pods to land on (see {@link deleteNodeAfterLeaving}).
 */
async function removeNodeObject(r: NodeRemoval, run: RemovalRun): Promise<void> {
    const name = r.facts.name;
    if (!name) {
        notApplicable(r, "delete-node", "no Node object");
        return;
    }
    if (releasedWithGroup(r)) {
        r.facts.deleteAfterLeaving = name;
        notApplicable(r, "delete-node", `Node ${name} is deleted once the instance has left its group (its kubelet runs until then)`);
        return;
    }
    await deleteNodeNamed(r, run, name);
}

async function deleteNodeNamed(r: NodeRemoval, run: RemovalRun, name: string): Promise<void> {
    await runStep(r, "delete-node", `check the masters, then \`kubectl delete node ${name}\``, async () => {
        await deleteNode(run.access, name);
        r.facts.name = null;
        r.report.done.push("delete-node");
    });
}

/** The Node of a released pool node whose deletion waited for it to leave its group (the instance is gone: its kubelet too). */
export async function deleteNodeAfterLeaving(r: NodeRemoval, run: RemovalRun): Promise<void> {
    const name = r.facts.deleteAfterLeaving;
    // Left in this run or found gone from the group (a re-run after the call).
    if (!name || !r.facts.leftGroup) return;
    if (r.facts.attachedMember) await resetAfterLeaving(r, run);
    await deleteNodeNamed(r, run, name);
    r.facts.deleteAfterLeaving = undefined;
}

/** A pool member released by its removal (RemoveInstances): not reset, its Node deleted after it left. */
function releasedWithGroup(r: NodeRemoval): boolean {
    return !!r.target.scalingGroupId && r.target.kind !== "control-plane" && !keepsRunning(r.target);
}

/**
 * A member attached by hand may leave its group still running (ESS releases only what it created or was
 * entrusted with): `kubeadm reset` on it before its Node goes, or its kubelet registers the Node again. One
 * ESS did release is gone (the reset is skipped); one that cannot run commands fails here, its Node kept.
 */
async function resetAfterLeaving(r: NodeRemoval, run: RemovalRun): Promise<void> {
    const id = r.target.instanceId;
    await runStep(r, "reset", `start ${id} and bring its Cloud Assistant agent online, then run again (it left its scaling group but still runs: ` +
        "it was attached, not created by ESS); or run `kubeadm reset -f` on it and delete its Node", async () => {
        try {
            r.log(`resetting ${id}: it left its group but was attached, not created by ESS, so it may still run`);
            await resetNode(run.access, id);
            r.report.done.push("reset");
        } catch (err) {
            if (classify(err instanceof CommandError ? err.errorCode : "") !== "not-found") throw err;
            skipStep(r, "reset", `instance ${id} no longer exists (ESS released it)`);
        }
    });
}

/** The Kubernetes side of one node: drain, clear userdata, reset, leave etcd, delete the Node. */
export async function kubernetesSide(r: NodeRemoval, run: RemovalRun): Promise<void> {
    const name = r.facts.name;
    await drain(r, run);
    await clearUserdata(r, run);
    await reset(r, run);
    await leaveEtcd(r, run, r.facts.name ?? name);
    await removeNodeObject(r, run);
}
