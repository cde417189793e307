/**
 * `doctor`: looks at ESS, the Cluster Autoscaler, the Nodes, the VPC routes and the join material of a
 * cluster and says in plain words what is wrong. Read-only: Describe or List OpenAPI actions, and
 * RunCommand with read-only scripts (kubectl get/logs, kubeadm token list, tail of log files).
 */
import { checkAutoscaler } from "./autoscaler";
import { checkCerts } from "./certs";
import { DoctorContext, errorText, isLookError } from "./context";
import { checkEss } from "./ess";
import { checkJoinMaterial } from "./joinMaterial";
import { checkNodes } from "./nodes";
import { checkRoutes } from "./routes";
import { checkVersions } from "./versions";
import { CheckName, ClusterInfo, DoctorOptions, Finding } from "./types";

export * from "./types";
export { DoctorContext, redact } from "./context";
export { explainActivityError, ESS_ERROR_CODES } from "./ess";
export { parseAutoscalerStatus, parseCaTime } from "./autoscaler";
export { parseTokenList, parseEtcdMembers } from "./joinMaterial";
export { parseCertExpiry, CERT_WARNING_DAYS } from "./certs";
export { exitCodeOf, renderJson, renderTable, useColour, EXIT } from "./report";

/** Every check: name, what it looks at (for `--help`), and its implementation. */
export const CHECKS: { name: CheckName; title: string; looksAt: string; run: (ctx: DoctorContext) => Promise<Finding[]> }[] = [
    { name: "ess", title: "ESS", run: checkEss,
        looksAt: "per pool: the scaling group (missing, inactive, at max, desired vs in service, drift from the configured size) and its recent scaling activities (DescribeScalingActivities), failures explained by error code (no stock, disk category, quota, balance, vSwitch IPs, …); the nodes outdated per pool (their instances' spec tags) and the existing nodes outdated (as the last `pulumi up` recorded them)" },
    { name: "autoscaler", title: "Autoscaler", run: checkAutoscaler,
        looksAt: "the cluster-autoscaler Deployment, its cluster-autoscaler-status ConfigMap (cluster and node-group health, scale-up backoff, unregistered nodes) and its last log lines (blocked scale-up/scale-down and why), via kubectl on master 0" },
    { name: "nodes", title: "Nodes", run: checkNodes,
        looksAt: "every master, ESS and existing instance vs the Node objects: instances with no Node (with the tail of /var/log/alicloud-kubeadm/ from that instance), Nodes with no instance, NotReady Nodes, missing or wrong provider ids" },
    { name: "routes", title: "Routes", run: checkRoutes,
        looksAt: "VPC route entries inside the pod CIDR vs each Node's podCIDR: missing, stale (instance gone), conflicting; NetworkUnavailable conditions" },
    { name: "join", title: "Join material", run: checkJoinMaterial,
        looksAt: "how nodes join: pools and existing nodes join by cloud identity through the admission service (no token), so every bootstrap token left on master 0 (kubeadm token list) is named: one a pool or existing node of an older stack still uses and its expiry, one that never expires, one in a group kubeadm auto-approves; the identity signature digests recent joins used; control-plane /readyz; etcd members vs masters" },
    { name: "versions", title: "Versions", run: checkVersions,
        looksAt: "the configured kubernetesVersion, each API server's version (its pod's image tag) and each Node's kubelet, via kubectl on master 0: skew outside the version-skew policy, an upgrade left half-way" },
    { name: "certs", title: "Certificates", run: checkCerts,
        looksAt: "on every master: when each kubeadm certificate expires (PKI files and the kubeconfigs' client certificates), warning under 30 days, and whether the renewal timer is enabled" },
];

/**
 * Runs the checks (in parallel; they share one set of reads) and returns every finding, in check order.
 * A check that cannot look (API unreachable, no credentials, master 0 unreachable) yields one finding
 * with `couldNotLook: true` instead of throwing.
 * @param info The stack output `clusterInfo`.
 * @param opts See {@link DoctorOptions}; default: every check, 1 s first poll.
 * @returns Findings, never empty.
 */
export async function runDoctor(info: ClusterInfo, opts: DoctorOptions = {}): Promise<Finding[]> {
    const ctx = new DoctorContext(info, opts);
    const wanted = CHECKS.filter((c) => !opts.checks || opts.checks.includes(c.name));
    const results = await Promise.all(wanted.map(async (c): Promise<Finding[]> => {
        try {
            return await c.run(ctx);
        } catch (e) {
            const look = isLookError(e);
            return [{
                check: c.name, status: "problem", subject: c.title, couldNotLook: true,
                evidence: `could not look: ${errorText(e)}`,
                next: look ? "fix access (credentials, network to the OpenAPI endpoint, master 0's Cloud Assistant agent), then run doctor again"
                    : "the message above names what failed on master 0 (the join check's /readyz shows whether the API server answers); fix it and run doctor again",
            }];
        }
    }));
    return results.flat();
}
