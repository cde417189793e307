// Moving a running cluster to another Kubernetes version: what the version-skew policy allows between the version the
// control plane runs and the one the config asks for, the health an upgrade starts from, and the APIs the target
// removes. Sources: docs/upstream.md#version-skew-policy, #kubeadm-upgrade, #deprecated-api-metric.
import { AUTOSCALER_LATEST_PATCH, autoscalerVersionFor } from "./autoscaler";
import { parseVersion } from "./formats";
import type { Problem } from "./problems";

/** A kubelet may be up to three minors older than the oldest kube-apiserver, never newer (skew policy, since 1.28). */
export const KUBELET_MAX_MINORS_BEHIND = 3;

/** Worker nodes upgraded in place at once: at most this many (`upgrade.nodeBatchSize`). Default 1. */
export const MAX_NODE_UPGRADE_BATCH = 20;

/** Why `upgrade.nodeBatchSize` is refused, or undefined. */
export function nodeBatchSizeProblem(n: number): string | undefined {
    if (Number.isInteger(n) && n >= 1 && n <= MAX_NODE_UPGRADE_BATCH) return undefined;
    return `must be a whole number from 1 to ${MAX_NODE_UPGRADE_BATCH} (worker nodes drained and upgraded at once), got ${n}`;
}

/** `a` against `b` (full `x.y.z`, an optional `v`): negative, zero or positive; unparsable versions compare equal. */
export function compareVersions(a: string, b: string): number {
    const x = parseVersion(a);
    const y = parseVersion(b);
    if (!x || !y) return 0;
    return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
}

/** The minor of a version (`1.36.3` → 36), or NaN. */
export function minorOf(version: string): number {
    return parseVersion(version)?.[1] ?? NaN;
}

/** The oldest of some versions (`undefined` for none). */
export function oldestVersion(versions: readonly string[]): string | undefined {
    return [...versions].sort(compareVersions)[0];
}

/** What a move from `running` to `target` is: nothing, a patch, or one minor (anything else is refused). */
export function upgradeKind(running: string, target: string): "none" | "patch" | "minor" | "refused" {
    const c = compareVersions(target, running);
    if (c === 0) return "none";
    if (c < 0) return "refused";
    const d = minorOf(target) - minorOf(running);
    return d === 0 ? "patch" : d === 1 ? "minor" : "refused";
}

/** What the upgrade rules look at: read from the cluster (running, kubelets) and from the config (target, autoscaler). */
export interface UpgradeFacts {
    /** The version the oldest API server serves. */
    running: string;
    /** `kubernetesVersion` of the config. */
    target: string;
    /** Node name → kubelet version, every Node. */
    kubelets: Readonly<Record<string, string>>;
    /** Some pool autoscales (the Cluster Autoscaler runs). */
    autoscaled: boolean;
    /** `autoscaler.version` when pinned. */
    autoscalerVersion?: string;
}

/** Up to five names, then how many more. */
function some(names: readonly string[]): string {
    return names.length <= 5 ? names.join(", ") : `${names.slice(0, 5).join(", ")} and ${names.length - 5} more`;
}

/**
 * Why the cluster cannot move from `running` to `target` (none when it may, or when there is nothing to move), each
 * at the property to change and with the fix: a downgrade, a minor skipped, an autoscaler without a release for the
 * target or pinned to another minor, Nodes whose kubelets would fall outside the skew the target allows.
 */
export function upgradeProblems(f: UpgradeFacts): Problem[] {
    const problems: Problem[] = [];
    const kind = upgradeKind(f.running, f.target);
    if (kind === "none") return problems;
    const r = minorOf(f.running);
    const t = minorOf(f.target);
    if (compareVersions(f.target, f.running) < 0) {
        problems.push({ path: "kubernetesVersion", reason: `is ${f.target}, older than the ${f.running} the control plane runs: kubeadm does not downgrade. ` +
            `Set kubernetesVersion back to ${f.running} (to go back, restore an etcd backup taken before the upgrade: docs/disaster-recovery.md)` });
        return problems;
    }
    if (t - r > 1) {
        problems.push({ path: "kubernetesVersion", reason: `is ${f.target}, but the control plane runs ${f.running}: kubeadm upgrades one minor at a time. ` +
            `Set kubernetesVersion to a 1.${r + 1}.x release, \`pulumi up\`, then to ${f.target}` });
    }
    if (f.autoscaled) {
        const pinned = f.autoscalerVersion === undefined ? undefined : minorOf(f.autoscalerVersion);
        if (pinned !== undefined && pinned !== t) {
            problems.push({ path: "autoscaler.version", reason: `is ${f.autoscalerVersion}, a Cluster Autoscaler for Kubernetes 1.${pinned}, but kubernetesVersion moves the cluster to 1.${t}: ` +
                `upstream supports an autoscaler only with its own minor. Set autoscaler.version to a 1.${t}.x release${AUTOSCALER_LATEST_PATCH[t] ? ` (${AUTOSCALER_LATEST_PATCH[t]})` : ""}, or remove it` });
        } else if (pinned === undefined && !AUTOSCALER_LATEST_PATCH[t]) {
            problems.push({ path: "kubernetesVersion", reason: `is ${f.target}, but there is no Cluster Autoscaler release for 1.${t} this project knows, and the autoscaled pools need one: ` +
                `stay on 1.${r}, or set autoscaler.version to a 1.${t}.x release once one is published` });
        }
    }
    const behind = Object.entries(f.kubelets).filter(([, v]) => t - minorOf(v) > KUBELET_MAX_MINORS_BEHIND).map(([n, v]) => `${n} (${v})`);
    if (behind.length > 0) {
        problems.push({ path: "kubernetesVersion", reason: `is ${f.target}, but the kubelets of ${some(behind)} would be more than ${KUBELET_MAX_MINORS_BEHIND} minors older than the API servers, ` +
            `which the skew policy forbids: upgrade or replace those nodes first (each at most ${KUBELET_MAX_MINORS_BEHIND} minors behind 1.${t})` });
    }
    return problems;
}

/** The health an upgrade needs, read from the cluster. */
export interface ClusterHealth {
    /** Each API server (the kube-apiserver pod of each master): its Node, the version it serves, whether `/readyz` answered ok. */
    apiServers: ReadonlyArray<{ node: string; version: string; ready: boolean }>;
    /** Each etcd member and whether it answered healthy. */
    etcd: ReadonlyArray<{ name: string; healthy: boolean }>;
    /** Each Node: Ready or not. */
    nodes: ReadonlyArray<{ name: string; ready: boolean }>;
    /** How many masters the stack has. */
    masters: number;
}

/** Why the cluster is not healthy enough to upgrade (none when it is), at `kubernetesVersion`, with the fix. */
export function healthProblems(h: ClusterHealth, target: string): Problem[] {
    const bad: string[] = [];
    if (h.apiServers.length < h.masters) bad.push(`${h.apiServers.length} of ${h.masters} API servers found`);
    const notReady = h.apiServers.filter((a) => !a.ready).map((a) => a.node);
    if (notReady.length > 0) bad.push(`API server /readyz failing on ${some(notReady)}`);
    const sick = h.etcd.filter((m) => !m.healthy).map((m) => m.name);
    if (h.etcd.length === 0) bad.push("no etcd member answered");
    else if (sick.length > 0) bad.push(`etcd members not healthy: ${some(sick)}`);
    const down = h.nodes.filter((n) => !n.ready).map((n) => n.name);
    if (down.length > 0) bad.push(`Nodes NotReady: ${some(down)}`);
    if (bad.length === 0) return [];
    return [{ path: "kubernetesVersion", reason: `is ${target}, but the cluster is not healthy enough to upgrade (${bad.join("; ")}): ` +
        "nothing was changed. Repair it first (`npm run doctor -- --stack <stack>` names each problem; a NotReady node can be removed), then run `pulumi up` again" }];
}

/** One deprecated API that clients still request: `group/version resource`, and the release that removes it. */
export interface DeprecatedApi {
    api: string;
    removedRelease: string;
}

/**
 * The deprecated APIs that the target minor removes and that clients still request, from the API server's
 * `apiserver_requested_deprecated_apis` gauge (Prometheus text, one series per API requested since the API server
 * started; `removed_release` labels the minor that removes it).
 */
export function removedApis(metrics: string, target: string): DeprecatedApi[] {
    const t = minorOf(target);
    const out = new Map<string, DeprecatedApi>();
    for (const line of metrics.split("\n")) {
        const m = /^apiserver_requested_deprecated_apis\{([^}]*)\}\s+1(\.0+)?\s*$/.exec(line.trim());
        if (!m) continue;
        const labels = Object.fromEntries([...m[1].matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]));
        const removed = labels.removed_release ?? "";
        if (!/^1\.\d+$/.test(removed) || Number(removed.split(".")[1]) > t) continue;
        const api = `${labels.group ? `${labels.group}/` : ""}${labels.version ?? "?"} ${labels.resource ?? "?"}${labels.subresource ? `/${labels.subresource}` : ""}`;
        out.set(api, { api, removedRelease: removed });
    }
    return [...out.values()].sort((a, b) => a.api.localeCompare(b.api));
}

/** The warning for deprecated APIs the target removes, or undefined when none is requested. */
export function removedApisWarning(apis: readonly DeprecatedApi[], target: string): string | undefined {
    if (apis.length === 0) return undefined;
    return `kubernetesVersion ${target}: clients still request APIs that ${target.split(".").slice(0, 2).join(".")} or earlier removes — ` +
        `${apis.map((a) => `${a.api} (removed in ${a.removedRelease})`).join(", ")}: move those clients and manifests to the replacement APIs, ` +
        "or their requests fail once the API servers run the new version (docs/upgrades.md#deprecated-apis)";
}

/**
 * Skew outside the policy between the API servers and the kubelets (for doctor): API servers more than one minor
 * apart, a kubelet newer than the oldest API server or more than {@link KUBELET_MAX_MINORS_BEHIND} minors older.
 */
export function skewFindings(apiServers: readonly string[], kubelets: Readonly<Record<string, string>>): string[] {
    const findings: string[] = [];
    const oldest = oldestVersion(apiServers);
    const newest = [...apiServers].sort(compareVersions).pop();
    if (!oldest || !newest) return findings;
    if (minorOf(newest) - minorOf(oldest) > 1) findings.push(`API servers run ${oldest} and ${newest}: more than one minor apart`);
    for (const [node, v] of Object.entries(kubelets)) {
        if (compareVersions(v, oldest) > 0 && minorOf(v) > minorOf(oldest)) findings.push(`${node}: kubelet ${v} is newer than the oldest API server (${oldest})`);
        else if (minorOf(oldest) - minorOf(v) > KUBELET_MAX_MINORS_BEHIND) findings.push(`${node}: kubelet ${v} is more than ${KUBELET_MAX_MINORS_BEHIND} minors older than the API servers (${oldest})`);
    }
    return findings;
}

/**
 * The Cluster Autoscaler version to run while the control plane runs `running`: the configured one (`configured`,
 * pinned or picked for the configured Kubernetes version) once the API servers run its minor, else the release for the
 * running minor — its minor is never ahead of the API servers' (the autoscaler supports only its own minor).
 */
export function autoscalerVersionWhileRunning(configured: string, running: string): string {
    if (!(minorOf(configured) > minorOf(running))) return configured;
    return autoscalerVersionFor(running) ?? configured;
}
