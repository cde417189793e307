/**
 * The checks before anything changes, run at `pulumi preview` (the provider's diff) and again when `pulumi up` starts:
 * the skew rules against what the cluster runs (src/rules/upgrade.ts), its health (every API server, every etcd member,
 * every Node not cordoned by an unfinished upgrade), and the deprecated APIs the target removes (a warning).
 */
import type { ClusterAccess } from "../cloud/operations";
import { healthProblems, removedApis, removedApisWarning, upgradeKind, upgradeProblems, type Problem } from "../rules";
import { kubeletVersionsOf, readClusterStatus, readEtcd, runningVersionOf, type ClusterStatus } from "./status";

/** What the preflight found. */
export interface Preflight {
    status: ClusterStatus;
    running: string;
    problems: Problem[];
    warnings: string[];
}

/** What the config asks for, besides the version. */
export interface UpgradeIntent {
    target: string;
    autoscaled: boolean;
    autoscalerVersion?: string;
}

/** Reads the cluster and decides whether it may move to `intent.target`. */
export async function preflight(access: ClusterAccess, intent: UpgradeIntent): Promise<Preflight> {
    const status = await readClusterStatus(access);
    const running = runningVersionOf(status);
    if (!running) {
        return { status, running: "", problems: [{ path: "kubernetesVersion", reason: "no API server answered: the cluster's version cannot be read, so nothing was changed. Check the masters (`npm run doctor -- --stack <stack>`), then run `pulumi up` again" }], warnings: [] };
    }
    if (upgradeKind(running, intent.target) === "none") return { status, running, problems: [], warnings: [] };
    const problems = upgradeProblems({ running, target: intent.target, kubelets: kubeletVersionsOf(status), autoscaled: intent.autoscaled, autoscalerVersion: intent.autoscalerVersion });
    if (problems.length === 0) {
        const etcd = await readEtcd(access, status);
        // A Node cordoned by an upgrade's drain is that upgrade's step in progress: not a reason to refuse its resumption.
        problems.push(...healthProblems({
            apiServers: status.apiServers, etcd, masters: access.masterInstanceIds.length,
            nodes: status.nodes.filter((n) => !(n.mark && n.unschedulable)),
        }, intent.target));
    }
    const warning = removedApisWarning(removedApis(status.deprecatedMetrics, intent.target), intent.target);
    return { status, running, problems, warnings: warning ? [warning] : [] };
}
