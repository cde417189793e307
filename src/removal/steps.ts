/**
 * The Kubernetes side of one node's removal: find its Node → drain → clear userdata (existing nodes) →
 * kubeadm reset on the node (a join still running there stopped first) → leave etcd (control-plane members) →
 * delete the Node (and, for a machine that keeps running, check it did not register again). Each step is
 * idempotent: a target already gone counts as done, with a warning. Whether a Node exists is always read
 * from the cluster (its provider id, or the instance's private IP), never guessed from a command's output.
 */
import { CommandError, stopRunningInvocations } from "../cloud/cloudAssistant";
import { describeInstance, describeInstances, getUserData, setUserData } from "../cloud/ecs";
import { cannotRunCommands, classify } from "../cloud/errors";
import { deleteNodes, drainNode, listNodes, nodeOfInstance, providerIdOf, removeEtcdMember, resetNode, type NodeInfo } from "../cloud/operations";
import { OpenApiError } from "../cloud/openapi";
import { keepsRunning, notApplicable, RemovalError, runStep, skipStep, type NodeRemoval, type RemovalRun, type RemovalStep } from "./types";

/** The no-op userdata left on a removed existing node, so a reboot or re-image cannot rejoin it. */
export const CLEARED_USERDATA = "#!/bin/sh\n# alicloud-kubeadm: this node was removed from its cluster; its join userdata was cleared.\n";

/** On a NotReady node (or one whose machine this run stopped) the kubelet never confirms pod deletion: stop waiting for evicted pods after this long, seconds. */
const NOT_READY_SKIP_WAIT_SECONDS = 60;

function isGone(err: unknown): boolean {
    return err instanceof OpenApiError && classify(err.code) === "not-found";
}

/** The Node of a removal's instance in a listing: by provider id, or by its private IP (src/cloud/operations.ts `nodeOfInstance`). */
export function nodeOf(nodes: readonly NodeInfo[], r: NodeRemoval, run: RemovalRun): NodeInfo | undefined {
    return nodeOfInstance(nodes, run.opts.region, { instanceId: r.target.instanceId, privateIp: r.facts.privateIp });
}

/**
 * Reads the instances of the removals (one DescribeInstances per 100): each one's private IP (its Node is matched
 * by it too) and status (a machine that is stopped or gone cannot confirm its pods' deletion).
 */
export async function describeTargets(all: readonly NodeRemoval[], run: RemovalRun): Promise<void> {
    for (const r of all.filter((x) => x.target.instance)) {
        r.facts.privateIp = r.target.instance!.privateIp;
        r.facts.instanceStatus = r.target.instance!.status;
    }
    const removals = all.filter((r) => !r.target.instance);
    if (removals.length === 0) return;
    let found: Map<string, { privateIp: string; status: string }>;
    try {
        found = await describeInstances(run.opts.region, removals.map((r) => r.target.instanceId));
    } catch (err) {
        throw new RemovalError(removals.map((r) => r.target.instanceId), "find-node", err as Error, "allow ecs:DescribeInstances for the caller, then run again");
    }
    for (const r of removals) {
        const inst = found.get(r.target.instanceId);
        r.facts.privateIp = inst?.privateIp ?? "";
        r.facts.instanceStatus = inst?.status ?? "gone";
    }
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
        const node = nodeOf(nodes, r, run);
        r.facts.name = node?.name ?? null;
        r.facts.ready = node?.ready;
        r.facts.podCidr = node?.podCidr ?? "";
    }
}

/** Whether the instance's Node exists now (a fresh listing). */
async function nodeExists(r: NodeRemoval, run: RemovalRun): Promise<NodeInfo | undefined> {
    return nodeOf(await listNodes(run.access), r, run);
}

/** Why the machine cannot confirm its pods' deletion (stopped, released, or its Node NotReady); undefined when it can. */
function cannotConfirmDeletion(r: NodeRemoval): string | undefined {
    if (r.facts.machineStopped) return "this run stopped its machine";
    const st = r.facts.instanceStatus;
    if (st === "gone") return "its instance no longer exists";
    if (st !== undefined && st !== "Running") return `its instance is ${st}`;
    if (r.facts.ready === false) return "its Node is NotReady";
    return undefined;
}

/** Advice for a failed drain, from what kubectl printed and why the machine cannot confirm deletions. */
function drainFix(name: string, output: string, noConfirm?: string): string {
    if (noConfirm && /global timeout reached/i.test(output)) {
        return `${noConfirm}, so evicted pods are not confirmed deleted: the drain only waited ${NOT_READY_SKIP_WAIT_SECONDS} s for them; ` +
            `look at the pods still on ${name} (\`kubectl get pods -A --field-selector spec.nodeName=${name}\`), delete them with --force if the machine is gone, then run again`;
    }
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
        skipStep(r, "drain", `no Node has provider id ${providerIdOf(run.opts.region, id)}${r.facts.privateIp ? ` or IP ${r.facts.privateIp}` : ""} (already deleted, or never registered)`);
        return;
    }
    const noConfirm = cannotConfirmDeletion(r);
    await runStep(r, "drain", (err) => drainFix(name, err instanceof CommandError ? err.outputTail : "", noConfirm), async () => {
        r.log(noConfirm ? `draining ${id} (node ${name}): ${noConfirm}, so its pods cannot confirm their deletion: evicting them without waiting more than ${NOT_READY_SKIP_WAIT_SECONDS} s`
            : `draining ${id} (node ${name})`);
        try {
            await drainNode(run.access, name, {
                timeoutSeconds: run.opts.drainTimeoutSeconds ?? 600, force: run.opts.disableEviction ? "delete" : run.opts.force ?? false,
                skipWaitSeconds: noConfirm ? NOT_READY_SKIP_WAIT_SECONDS : 0,
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
            await stopJoin(r, run);
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
 * A join (the saved attach or control-plane join command) still running on the machine is stopped and waited out
 * before the reset: finishing afterwards, it would register the Node again with fresh credentials.
 */
async function stopJoin(r: NodeRemoval, run: RemovalRun): Promise<void> {
    const joinCommand = r.target.joinCommandId;
    if (!joinCommand || r.facts.instanceStatus === "gone") return;
    const stopped = await stopRunningInvocations(run.opts.region, r.target.instanceId, joinCommand, { pollMs: run.opts.pollIntervalMs, clock: run.opts.clock });
    if (stopped.length > 0) r.warn(`${r.target.instanceId}: its join (${stopped.join(", ")}) was still running: stopped it before the reset`);
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
        const via = masters.map((m) => nodeOfInstance(nodes, run.opts.region, { instanceId: m })).find((n) => n?.ready);
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
        await deleteNodes(run.access, [name]);
        r.facts.name = null;
        r.report.done.push("delete-node");
    });
}

/**
 * A machine that keeps running must not be back as a Node after its removal: a join that ran to its end around
 * the reset registers it again, with fresh credentials. One fresh listing; a Node found goes the whole way again
 * once (drain, reset, delete); found a second time, the removal fails with the fix.
 */
async function checkNotBack(r: NodeRemoval, run: RemovalRun, again = true): Promise<void> {
    const back = await runStepValue(r, "delete-node", () => nodeExists(r, run));
    if (!back) return;
    const id = r.target.instanceId;
    if (!again) {
        throw new RemovalError([id], "delete-node", new Error(`Node ${back.name} registered again after the reset`),
            `something on ${id} keeps joining it (a join script still running, a kubelet with credentials): stop it, run \`kubeadm reset -f\` there, then run again`);
    }
    r.warn(`${id}: Node ${back.name} registered again after the reset (a join still finishing); removing it again`);
    Object.assign(r.facts, { name: back.name, ready: back.ready, podCidr: back.podCidr || r.facts.podCidr });
    await drain(r, run);
    await reset(r, run);
    if (r.facts.name) await deleteNodeNamed(r, run, r.facts.name);
    await checkNotBack(r, run, false);
}

/**
 * The Nodes of released pool nodes whose deletion waited for them to leave their group (the instances are gone:
 * their kubelets too), in one delete-node command for the whole run. A member attached by hand is reset first.
 * Failures are each node's own, recorded in `failed`.
 */
export async function deleteNodesAfterLeaving(removals: readonly NodeRemoval[], run: RemovalRun, failed: Map<NodeRemoval, Error>): Promise<void> {
    // Left in this run or found gone from the group (a re-run after the call).
    const due = removals.filter((r) => r.facts.deleteAfterLeaving && r.facts.leftGroup);
    const ready: NodeRemoval[] = [];
    for (const r of due) {
        try {
            if (r.facts.attachedMember) await resetAfterLeaving(r, run);
            ready.push(r);
        } catch (err) {
            failed.set(r, err as Error);
        }
    }
    if (ready.length === 0) return;
    const names = ready.map((r) => r.facts.deleteAfterLeaving!);
    try {
        await deleteNodes(run.access, names);
    } catch (err) {
        const e = new RemovalError(ready.map((r) => r.target.instanceId), "delete-node", err as Error, `check the masters, then \`kubectl delete node ${names.join(" ")}\``);
        for (const r of ready) failed.set(r, e);
        return;
    }
    for (const r of ready) {
        r.facts.name = null;
        r.facts.deleteAfterLeaving = undefined;
        r.report.done.push("delete-node");
    }
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

/** Reads for a step: a failure is that step's, with the masters' fix. */
async function runStepValue<T>(r: NodeRemoval, step: RemovalStep, read: () => Promise<T>): Promise<T> {
    let value: T | undefined;
    await runStep(r, step, "check that a master is Running with its Cloud Assistant agent online, then run again", async () => { value = await read(); });
    return value as T;
}

/** The Kubernetes side of one node: drain, clear userdata, reset, leave etcd, delete the Node, and see that it stays deleted. */
export async function kubernetesSide(r: NodeRemoval, run: RemovalRun): Promise<void> {
    const name = r.facts.name;
    run.opts.onChange?.(r.target.instanceId);
    await drain(r, run);
    await clearUserdata(r, run);
    await reset(r, run);
    await leaveEtcd(r, run, r.facts.name ?? name);
    await removeNodeObject(r, run);
    if (!releasedWithGroup(r) && r.facts.instanceStatus !== "gone") await checkNotBack(r, run);
}
