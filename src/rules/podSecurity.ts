// Pod security: the system namespaces (exempt from Pod Security's `baseline` and from the policy that keeps
// host-access pods off the masters), what puts a pod on a master (the node labels and taint kubeadm gives
// control-plane nodes), and the config rule for more exempt namespaces. Sources: docs/upstream.md#pod-security-admission,
// #kubeadm-control-plane-node.
import { dnsLabelProblem } from "./formats";
import { CONTROL_PLANE_POOL, POOL_LABEL } from "./labels";
import type { Report } from "./problems";

/**
 * Namespaces whose pods need host access by design: kube-system (kube-proxy, CoreDNS, the CCM, the Cluster
 * Autoscaler and the admission service, all on the host network of the masters) and flannel's. Who may create pods
 * there is cluster-admin's business (RBAC).
 */
export const SYSTEM_NAMESPACES: readonly string[] = ["kube-system", "kube-flannel"];

/** The taint kubeadm puts on control-plane nodes (`NoSchedule`). */
export const CONTROL_PLANE_TAINT = "node-role.kubernetes.io/control-plane";

/**
 * Node label keys that select masters: kubeadm's control-plane role label (and the one before 1.24), and the label
 * kubeadm adds to control-plane nodes to keep them out of external load balancers. The masters' pool label value
 * ({@link POOL_LABEL}={@link CONTROL_PLANE_POOL}) selects them too.
 */
export const MASTER_LABEL_KEYS: readonly string[] = [CONTROL_PLANE_TAINT, "node-role.kubernetes.io/master", "node.kubernetes.io/exclude-from-external-load-balancers"];
export { CONTROL_PLANE_POOL, POOL_LABEL };

/** `podSecurity.exemptNamespaces` (reported at the index): each a namespace name (DNS-1123 label), once; the system namespaces are exempt already. */
export function checkExemptNamespaces(namespaces: readonly string[], report: Report, warn: Report): void {
    namespaces.forEach((ns, i) => {
        const problem = dnsLabelProblem(ns, 63);
        if (problem) report(`${i}`, `${problem}: a namespace name`);
        else if (namespaces.indexOf(ns) !== i) report(`${i}`, `"${ns}" is listed twice; remove one`);
        else if (SYSTEM_NAMESPACES.includes(ns)) warn(`${i}`, `"${ns}" is a system namespace, exempt already; remove it`);
        else warn(`${i}`, `pods in "${ns}" may run with host access on the masters (their RAM role's credentials, ` +
            "the cluster CA key): only namespaces where nobody but cluster administrators creates pods belong here");
    });
}
