// Victim choice when a pool shrinks: the nodes that cost the least to remove.

/** A pool member as victim selection sees it. */
export interface PoolMember {
    instanceId: string;
    /** Node name, or null when the instance has no Node. */
    nodeName: string | null;
    ready: boolean;
    /** Pods on the node not owned by a DaemonSet. */
    workloadPods: number;
    /** An earlier removal marked (and cordoned) it and did not finish. Default false. */
    marked?: boolean;
    /** Instance creation time, ISO 8601. */
    createdAt: string;
    /** The Node's podCIDR, when known. */
    podCidr?: string;
    /** The instance's private IP and status, as read for the choice (handed to the removal). */
    instance?: { privateIp: string; status: string };
    /** Made from an earlier spec of the pool (its instance's spec tag is not the configuration's). Default false. */
    outdated?: boolean;
    /** Its Node's Ready condition `lastTransitionTime` from the API server (ISO 8601; "" or absent: unknown, or no Node). */
    readySince?: string;
    /** An upgrade's or a resize's drain mark on its Node (see NodeInfo.heldBy); "" or absent when none. */
    heldBy?: string;
}

/**
 * Picks `count` members to remove: outdated before current (a shrink during a rollout never removes a current node
 * while an outdated one stays), then NotReady (or Node-less), then those an unfinished removal already cordoned,
 * then fewest workload pods, then newest. Deterministic for equal keys (instance id).
 * @param notReadyFirst NotReady (or Node-less) members before Ready ones whatever their spec, then as above: for a shrink
 *   that no rollout waits on (a new node not Ready yet goes before a Ready outdated one, which would cost a Ready node)
 */
export function chooseVictims(members: readonly PoolMember[], count: number, notReadyFirst = false): PoolMember[] {
    const ready = (m: PoolMember) => Number(m.ready && m.nodeName !== null);
    const sorted = [...members].sort((a, b) =>
        (notReadyFirst ? ready(a) - ready(b) : 0) ||
        Number(!a.outdated) - Number(!b.outdated) ||
        ready(a) - ready(b) ||
        Number(!a.marked) - Number(!b.marked) ||
        a.workloadPods - b.workloadPods ||
        b.createdAt.localeCompare(a.createdAt) ||
        a.instanceId.localeCompare(b.instanceId));
    return sorted.slice(0, Math.max(0, count));
}
