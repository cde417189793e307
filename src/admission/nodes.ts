// The Node side of an admission: whether an instance whose Node object exists may be admitted again (only a
// machine that is really new: its Node's heartbeat is stale and the instance was started after it, or an operator
// allowed it), and the pool label the service sets on the Node it admitted (kubelets cannot set it: NodeRestriction
// refuses a kubelet any `node-restriction.kubernetes.io/` label). Node built-ins only (shipped in the service's
// ConfigMap); the constants are the same literals as src/rules/labels.ts (test/admissionNodes.test.ts checks).

/** The pool label: `node-restriction.kubernetes.io/alicloud-kubeadm-pool=<pool>`, set by the admission service only. */
export const POOL_LABEL = "node-restriction.kubernetes.io/alicloud-kubeadm-pool";
/** The pool label of nodes joined before the service set it (the node asserted it itself); read where the new one is absent. */
export const LEGACY_POOL_LABEL = "alicloud-kubeadm/pool";
/**
 * The taint a joining node registers with, removed by the service when it sets {@link POOL_LABEL}: no pod lands
 * on the node before its pool label is there. Under the Cluster Autoscaler's startup-taint prefix, so the
 * autoscaler treats the node as still starting (not as a node that cannot take the pending pods) and leaves the
 * taint out of its templates.
 */
export const POOL_PENDING_TAINT = "startup-taint.cluster-autoscaler.kubernetes.io/alicloud-kubeadm-pool";
/**
 * Annotation by which an operator lets an instance whose Node exists be admitted again: an RFC 3339 time until
 * which it may (at most 24 hours ahead; later values are ignored). `kubectl annotate node <name>
 * alicloud-kubeadm/readmit-until=$(date -u -d '+15 min' +%FT%TZ)`.
 */
export const READMIT_UNTIL_ANNOTATION = "alicloud-kubeadm/readmit-until";
/** Default of `admission.readmitAfterSeconds`: how stale a Node's heartbeat must be before its instance may join again. */
export const DEFAULT_READMIT_AFTER_SECONDS = 300;
const MAX_READMIT_WINDOW_MS = 24 * 3600_000;

/** What the service reads of an existing Node (kube.ts; modelled in tests). */
export interface NodeRecord {
    /** Ready condition True. */
    ready: boolean;
    /**
     * The newest sign of life, ms: the node's Lease in kube-node-lease (`renewTime`, every 10 s by default) or the
     * Ready condition's `lastHeartbeatTime`, whichever is later. Undefined when the node never reported.
     */
    lastHeartbeat?: number;
    /** The Node's creationTimestamp, ms (the heartbeat of a node that never reported). */
    createdAt?: number;
    /** The value of {@link READMIT_UNTIL_ANNOTATION}, ms, when set and readable. */
    readmitUntil?: number;
}

/**
 * Why an instance whose Node exists may not be admitted again, or undefined when it may. It may when an operator
 * allowed it ({@link READMIT_UNTIL_ANNOTATION} in the future, ≤ 24 h ahead), or when both hold: the Node's last
 * heartbeat is older than `staleAfterMs` (nothing has renewed it: no kubelet runs with its credentials), and the
 * instance was started after that heartbeat (the machine was restarted, e.g. with a new system disk). `startedAt`
 * is the ECS `StartTime` read to the minute: the instance counts as started after the heartbeat only when the
 * start of its minute is (a start in the same minute as the heartbeat is refused).
 */
export function readmissionRefusal(nodeName: string, node: NodeRecord, startedAt: number | undefined, staleAfterMs: number, now: number): string | undefined {
    if (node.readmitUntil !== undefined && now < node.readmitUntil && node.readmitUntil - now <= MAX_READMIT_WINDOW_MS) return undefined;
    const heartbeat = node.lastHeartbeat ?? node.createdAt;
    const at = (ms: number | undefined) => (ms === undefined ? "never" : new Date(ms).toISOString());
    if (heartbeat === undefined || now - heartbeat < staleAfterMs) {
        return `Node ${nodeName} exists${node.ready ? " and is Ready" : ""} and its heartbeat is fresh (${at(heartbeat)}, less than ${Math.round(staleAfterMs / 1000)} s ago): ` +
            "a kubelet still runs with that identity";
    }
    if (startedAt === undefined || startedAt <= heartbeat) {
        return `Node ${nodeName} exists (last heartbeat ${at(heartbeat)}) and the instance was not started after it (ECS StartTime ${at(startedAt)}): ` +
            "only a restarted machine may take the identity over";
    }
    return undefined;
}
