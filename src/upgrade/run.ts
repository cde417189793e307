/**
 * One step of the saved upgrade command (src/shell/upgrade.sh) on one instance, and the error a failed step stops with:
 * the instance, the step and the fix, and that `pulumi up` resumes there.
 */
import { runOnInstance } from "../cloud/cloudAssistant";
import { OPERATIONS, operationParameters } from "../rules";
import type { ClusterAccess } from "../cloud/operations";

/** The steps of the upgrade command. */
export type UpgradeStep = "status" | "kubeadm" | "plan" | "apply" | "node" | "control-plane" | "kubelet";

/** Runs `step` of the saved upgrade command on `instanceId`; returns its output. @throws CommandError when it did not succeed */
export async function runUpgradeStep(access: Pick<ClusterAccess, "region" | "pollIntervalMs">, commandId: string, instanceId: string, step: UpgradeStep): Promise<string> {
    return runOnInstance({
        region: access.region, instanceId, commandId, parameters: operationParameters("upgrade", { upgradeStep: step }), name: `alicloud-kubeadm upgrade ${step}`,
        timeoutSeconds: OPERATIONS.upgrade.timeoutSeconds, pollIntervalMs: access.pollIntervalMs, pollMaxIntervalMs: 10_000,
    });
}

/** What to do when a step fails, by step. */
const FIXES: Record<string, string> = {
    "backup": "fix the etcd backup (`npm run doctor` shows the last one; docs/disaster-recovery.md#backups)",
    "kubeadm": "check that the instance reaches the package mirror of the target minor (AK_K8S_REPO_URL in the saved upgrade command); the instance's log is /var/log/alicloud-kubeadm/upgrade-<version>.log",
    "plan": "read kubeadm's errors above (a preflight check, the skew, an unhealthy component) and fix what it names",
    "apply": "read kubeadm's output above and /var/log/alicloud-kubeadm/upgrade-<version>.log on that master (kubeadm rolls a static pod back when it does not come up)",
    "node": "read kubeadm's output above and /var/log/alicloud-kubeadm/upgrade-<version>.log on that instance",
    "control-plane": "read kubeadm's output above; the manifests kubeadm replaced are backed up under /etc/kubernetes/tmp on that master",
    "drain": "a PodDisruptionBudget or a pod without a controller keeps the drain from finishing: let the pods move (scale the workload, relax the budget), then run `pulumi up` again",
    "kubelet": "check the package mirror and `journalctl -u kubelet` on that instance",
    "uncordon": "run `kubectl uncordon` on the Node by hand if the API server refuses it",
    "static pods": "the master's kubelet did not run its new etcd, kube-apiserver, kube-controller-manager or kube-scheduler pod, Ready, in time (the message names which): `crictl ps -a`, `crictl logs` of it and `journalctl -u kubelet` on that master; the next master is not touched until they are",
    "saved commands": "give the resource the saved commands of this version (the Cluster component's NodeCommands)",
    "health gate": "`npm run doctor -- --stack <stack>` shows which API server, etcd member or Node is not healthy; repair it",
    "stop": "check the instance in the ECS console (it must stop and start again); the provider's message names the state it was left in",
    "resize": "the instance type may be sold out in the zone or not allowed for the instance (DescribeResourcesModification lists the types it may change to): pick another controlPlane.instanceType, or set it back",
    "start": "check the instance in the ECS console: it must start (a stock shortage of the new type shows there); start it, then run `pulumi up` again",
};

/** A step that failed: names the instance, the step and the fix; `pulumi up` resumes at that step. */
export class UpgradeError extends Error {
    constructor(public readonly instanceId: string, public readonly step: string, cause: string) {
        super(`${instanceId}: step "${step}" failed: ${cause}. Fix: ${FIXES[step] ?? "see the message above"}; then run \`pulumi up\` again: it resumes at this step (docs/upgrades.md#when-a-step-fails)`);
        this.name = "UpgradeError";
    }
}

/** Runs `fn` as step `step` of `instanceId`, turning any failure into an {@link UpgradeError}. */
export async function asStep<T>(instanceId: string, step: string, fn: () => Promise<T>): Promise<T> {
    try {
        return await fn();
    } catch (err) {
        if (err instanceof UpgradeError) throw err;
        throw new UpgradeError(instanceId, step, (err as Error).message.split("\n").slice(0, 12).join("\n"));
    }
}
