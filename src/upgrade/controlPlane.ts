/**
 * The control plane to a new version, one master at a time (docs/upgrades.md#what-pulumi-up-does): an etcd backup first,
 * then for each master, master 0 first — install the target kubeadm; on the first, `kubeadm upgrade plan` and
 * `kubeadm upgrade apply`, on each other `kubeadm upgrade node`; drain; kubelet and kubectl; restart; uncordon; the health
 * gate (first this master's static pods restarted by its kubelet and Ready, then every API server, etcd member and its
 * Node) — and only then the next master. Each step is decided from what is read before it (observe, then decide), so a run
 * that was interrupted resumes at the step that is not done yet, and a step that is done is never run twice.
 *
 * CoreDNS and kube-proxy are moved by kubeadm's addon phase, which kubeadm runs only once every control-plane instance
 * runs the new version: on `upgrade apply` of a single master, or on the last master's `upgrade node`
 * (docs/upstream.md#kubeadm-upgrade). So the last master's `upgrade node` also runs again when kube-proxy is not at the
 * target yet (an interrupted addon phase).
 */
import { drainNode, uncordonNode, type ClusterAccess } from "../cloud/operations";
import { backupBeforeChange } from "../recovery/backup";
import { gateWait, waitForGate, waitForStaticPods, type GateOptions } from "./gate";
import { asStep, runUpgradeStep, UpgradeError } from "./run";
import { nodeOfInstance, readClusterStatus, readInstanceVersions, runningVersionOf, type ClusterStatus, type InstanceVersions } from "./status";

/** Everything one control-plane upgrade needs. */
export interface ControlPlaneUpgrade {
    /** The masters, master 0 first (the order they are upgraded in). */
    access: ClusterAccess;
    /** The version to reach, `x.y.z`. */
    target: string;
    /** The saved upgrade command (rendered for `target`). */
    upgradeCommandId: string;
    /** Drain timeout per master, seconds. Default 600. */
    drainTimeoutSeconds?: number;
    gate?: GateOptions;
    /** Progress (the Pulumi log). */
    log?: (message: string) => void;
    warn?: (message: string) => void;
}

/** kube-proxy (moved by kubeadm's addon phase with the version) is at `target`, or not installed. */
export function addonsAt(s: ClusterStatus, target: string): boolean {
    return s.addons["kube-proxy"] === undefined || s.addons["kube-proxy"] === target;
}

/**
 * The control plane runs `target` by what the cluster says (kubeadm-config, every API server that answers, every master's
 * kubelet and the add-ons), no master left cordoned by an upgrade: nothing to read on the instances, nothing to do. (A
 * master that is down — say, stopped for its new instance type — is not asked.)
 */
export function runsTarget(s: ClusterStatus, region: string, masters: readonly string[], target: string): boolean {
    return s.clusterConfig === target && addonsAt(s, target) && s.apiServers.every((a) => a.version === target) &&
        masters.every((m) => { const n = nodeOfInstance(s, region, m); return n !== undefined && n.kubelet === target && !n.mark; });
}

/** What is left to do on one master, in order (empty: it is done). */
export function masterSteps(s: ClusterStatus, v: InstanceVersions, region: string, instanceId: string, target: string, last: boolean):
    Array<"kubeadm" | "plan" | "apply" | "node" | "drain" | "kubelet" | "uncordon"> {
    const node = nodeOfInstance(s, region, instanceId);
    const steps: Array<"kubeadm" | "plan" | "apply" | "node" | "drain" | "kubelet" | "uncordon"> = [];
    const apply = s.clusterConfig !== target;
    const node_ = !apply && (v.apiserver !== target || (last && !addonsAt(s, target)));
    const kubelet = v.kubelet !== target || node?.kubelet !== target;
    if ((apply || node_) && v.kubeadm !== target) steps.push("kubeadm");
    if (apply) steps.push("plan", "apply");
    else if (node_) steps.push("node");
    if (kubelet) steps.push("drain", "kubelet");
    if (kubelet || node?.mark) steps.push("uncordon");
    return steps;
}

/**
 * Moves every master to `u.target`, one at a time.
 * @returns the cluster's status once every master passed its gate
 * @throws UpgradeError naming the master, the step and the fix
 */
export async function upgradeControlPlane(u: ControlPlaneUpgrade): Promise<ClusterStatus> {
    const log = u.log ?? (() => undefined);
    let s = await asStep(u.access.masterInstanceIds[0], "status", () => readClusterStatus(u.access));
    // The masters in the cluster (with a Node). One without is not a member yet (a new cluster's, joined after this by
    // ControlPlaneMember) or is being replaced: it joins with the join command of the version the others run.
    const masters = u.access.masterInstanceIds.filter((m) => nodeOfInstance(s, u.access.region, m) !== undefined);
    if (masters.length === 0) return s;
    checkSavedCommands(u);
    // Nothing left to do, but an earlier run may have stopped while a master's static pods waited for their restart (the
    // last master's, say): they must be back before what comes after this (the join material, a resize) moves. A master
    // whose Node is not Ready (down: its kubelet does not answer) is not asked, as runsTarget does not ask it; the health
    // gate of whatever touches another master next names it.
    const whenBack = async () => {
        for (const m of masters) if (nodeOfInstance(s, u.access.region, m)?.ready) await staticPodsBack(u, s, m, log);
        return s;
    };
    if (runsTarget(s, u.access.region, masters, u.target)) return whenBack();
    const versions = new Map<string, InstanceVersions>();
    for (const m of masters) versions.set(m, await asStep(m, "status", () => readInstanceVersions(u.access, u.upgradeCommandId, m)));
    const todo = masters.filter((m, i) => masterSteps(s, versions.get(m)!, u.access.region, m, u.target, i === masters.length - 1).length > 0);
    if (todo.length === 0) return whenBack();
    log(`upgrading the control plane from ${runningVersionOf(s) ?? "?"} to ${u.target}, one master at a time: ${todo.join(", ")}`);
    await asStep(masters[0], "backup", () => backupBeforeChange(u.access, `upgrading the control plane to ${u.target}`, log, u.warn));
    for (const [i, m] of masters.entries()) {
        const last = i === masters.length - 1;
        // Read again for each master: the previous one changed the cluster (kubeadm-config, the add-ons).
        s = await asStep(m, "status", () => readClusterStatus(u.access));
        const v = i === 0 ? versions.get(m)! : await asStep(m, "status", () => readInstanceVersions(u.access, u.upgradeCommandId, m));
        const steps = masterSteps(s, v, u.access.region, m, u.target, last);
        const node = nodeOfInstance(s, u.access.region, m);
        if (!node) throw new UpgradeError(m, "status", NO_NODE);
        if (steps.length === 0) {
            // Done by an earlier run, which may have stopped before this master's static pods came back: they must
            // have, before a later master is touched or the run returns.
            await staticPodsBack(u, s, m, log);
            continue;
        }
        log(`master ${m} (${i + 1}/${masters.length}): ${steps.join(", ")}, then the health gate`);
        for (const step of steps) {
            log(`master ${m}: ${step}`);
            if (step === "drain") {
                await asStep(m, step, () => drainNode(u.access, node.name, { timeoutSeconds: u.drainTimeoutSeconds ?? 600, force: false, skipWaitSeconds: 0, mark: "upgrading" }));
            } else if (step === "uncordon") {
                await asStep(m, step, () => uncordonAfterRestart(u, node.name));
            } else {
                await asStep(m, step, () => runUpgradeStep(u.access, u.upgradeCommandId, m, step));
            }
        }
        await staticPodsBack(u, s, m, log);
        s = await asStep(m, "health gate", () => waitForGate(u.access, m, u.target, true, u.gate));
        log(`master ${m} runs ${u.target}: its static pods restarted and Ready, every API server ready, every etcd member healthy, its Node Ready`);
    }
    return s;
}

const NO_NODE = "the master has no Node in the cluster (it did not join, or its Node was deleted)";

/**
 * Waits until the static pods of master `m` (its Node in `s`) are the ones its running kubelet runs, Ready (step "static
 * pods"). A master without a Node fails (step "status"): its static pods cannot be asked for.
 */
async function staticPodsBack(u: Pick<ControlPlaneUpgrade, "access" | "gate">, s: ClusterStatus, m: string, log: (message: string) => void): Promise<void> {
    const node = nodeOfInstance(s, u.access.region, m);
    if (!node) throw new UpgradeError(m, "status", NO_NODE);
    await asStep(m, "static pods", () => waitForStaticPods(u.access, node.name, { ...u.gate, log }));
}

/** Fails (step "saved commands", before anything is changed) when the static-pods gate could not run: its saved command is missing. */
function checkSavedCommands(u: Pick<ControlPlaneUpgrade, "access">): void {
    if (!u.access.commands["static-pods"]) {
        throw new UpgradeError(u.access.masterInstanceIds[0], "saved commands", "the saved command static-pods is missing from this resource's commands " +
            "(commands[\"static-pods\"]: an earlier alicloud-kubeadm's); nothing was changed");
    }
}

/**
 * Uncordons a master's Node right after its kubelet restarted: the new kubelet restarts the master's static pods, so its
 * API server — the only one of a single master, and the one this master's admin kubeconfig may reach — refuses for a
 * while (seen on real nodes: `connect: connection refused` on the uncordon). Tried again at the gate's pace until the
 * gate's time is up; then the last error.
 */
function uncordonAfterRestart(u: ControlPlaneUpgrade, node: string): Promise<"uncordoned" | "not-marked"> {
    return gateWait(u.gate ?? {}, async () => {
        try {
            return { done: true, value: await uncordonNode(u.access, node, "upgrading") };
        } catch (err) {
            return { done: false, state: (err as Error).message };
        }
    }, (state, seconds) => `still failing after ${seconds} s: ${state}`);
}

/**
 * A ClusterConfiguration change on existing masters (docs/upgrades.md#cluster-configuration): after kubeadm-config was
 * edited, `kubeadm upgrade node phase control-plane` on each master in turn, each followed by its static pods restarted
 * and Ready and the health gate.
 */
export async function reconfigureControlPlane(u: Omit<ControlPlaneUpgrade, "drainTimeoutSeconds">): Promise<void> {
    const log = u.log ?? (() => undefined);
    checkSavedCommands(u);
    for (const [i, m] of u.access.masterInstanceIds.entries()) {
        log(`master ${m} (${i + 1}/${u.access.masterInstanceIds.length}): rewriting its static pod manifests from kubeadm-config`);
        await asStep(m, "control-plane", () => runUpgradeStep(u.access, u.upgradeCommandId, m, "control-plane"));
        const s = await asStep(m, "status", () => readClusterStatus(u.access));
        await staticPodsBack(u, s, m, log);
        await asStep(m, "health gate", () => waitForGate(u.access, m, u.target, true, u.gate));
    }
}
