/**
 * Worker nodes to the version the control plane runs, in place (docs/upgrades.md#nodes): in batches, each node drained
 * through the eviction API (PodDisruptionBudgets hold), the target kubeadm, `kubeadm upgrade node` (its kubelet
 * configuration), kubelet and kubectl, restart, uncordon, then the gate (its Node Ready with the new kubelet). Only after
 * the control plane runs the target: a kubelet is never newer than the API servers. Decided from what is read, so an
 * interrupted run resumes: a node whose kubelet moved but that is still cordoned by the drain is uncordoned and gated.
 */
import { drainNode, uncordonNode, type ClusterAccess } from "../cloud/operations";
import { compareVersions } from "../rules";
import { waitForGate, type GateOptions } from "./gate";
import { asStep, runUpgradeStep, UpgradeError } from "./run";
import { instanceOfNode, readClusterStatus, runningVersionOf, type ClusterStatus, type NodeStatus } from "./status";

/** Everything one node upgrade needs. */
export interface NodesUpgrade {
    access: ClusterAccess;
    /** The version to reach: the one the control plane runs. */
    target: string;
    /** The saved upgrade command (rendered for `target`). */
    upgradeCommandId: string;
    /** Nodes upgraded at once. Default 1. */
    batchSize?: number;
    /** Drain timeout per node, seconds. Default 600. */
    drainTimeoutSeconds?: number;
    gate?: GateOptions;
    log?: (message: string) => void;
}

/** The worker Nodes left to move (older kubelet, or moved but still cordoned by the drain), in name order. */
export function nodesToUpgrade(s: ClusterStatus, target: string): NodeStatus[] {
    return s.nodes.filter((n) => !n.controlPlane && instanceOfNode(n) !== undefined &&
        (compareVersions(n.kubelet, target) < 0 || (n.mark !== "" && n.kubelet === target)))
        .sort((a, b) => a.name.localeCompare(b.name));
}

async function upgradeNode(u: NodesUpgrade, n: NodeStatus): Promise<void> {
    const id = instanceOfNode(n)!;
    const log = u.log ?? (() => undefined);
    if (compareVersions(n.kubelet, u.target) < 0) {
        log(`node ${n.name}: drain, kubeadm, kubeadm upgrade node, kubelet ${n.kubelet} → ${u.target}`);
        await asStep(id, "drain", () => drainNode(u.access, n.name, { timeoutSeconds: u.drainTimeoutSeconds ?? 600, force: false, skipWaitSeconds: 0, mark: "upgrading" }));
        for (const step of ["kubeadm", "node", "kubelet"] as const) await asStep(id, step, () => runUpgradeStep(u.access, u.upgradeCommandId, id, step));
    }
    await asStep(id, "uncordon", () => uncordonNode(u.access, n.name, "upgrading"));
    await asStep(id, "health gate", () => waitForGate(u.access, id, u.target, false, u.gate));
    log(`node ${n.name} runs kubelet ${u.target}`);
}

/**
 * Moves every worker Node to `u.target` in place, `batchSize` at a time; a batch with a failed node stops the run
 * after the batch's other nodes finished.
 * @returns the cluster's status after the last batch
 * @throws UpgradeError (the first failed node's) or Error when the control plane does not run the target yet
 */
export async function upgradeNodes(u: NodesUpgrade): Promise<ClusterStatus> {
    let s = await readClusterStatus(u.access);
    const running = runningVersionOf(s);
    if (!running || compareVersions(running, u.target) < 0) {
        throw new Error(`the control plane runs ${running ?? "no API server"}, not ${u.target}: nodes are upgraded only after every API server runs the target`);
    }
    const todo = nodesToUpgrade(s, u.target);
    if (todo.length === 0) return s;
    const size = Math.max(1, u.batchSize ?? 1);
    (u.log ?? (() => undefined))(`upgrading ${todo.length} node(s) in place to ${u.target}, ${size} at a time`);
    for (let k = 0; k < todo.length; k += size) {
        const results = await Promise.allSettled(todo.slice(k, k + size).map((n) => upgradeNode(u, n)));
        const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
        if (failed) throw failed.reason instanceof UpgradeError ? failed.reason : new Error(String(failed.reason));
    }
    s = await readClusterStatus(u.access);
    return s;
}
