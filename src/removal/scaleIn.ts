/**
 * Pool scale-in: bring an ESS pool down to a target size through the removal core, choosing the victims
 * (victims.ts) from the group's members and the cluster's Nodes and pods.
 */
import { describeInstances } from "../cloud/ecs";
import { stayingMembers, waitForIdleGroup } from "../cloud/ess";
import { listNodesAt, nodeOfInstance, workloadPods, type NodeInfo } from "../cloud/operations";
import { allSettled } from "../cloud/wait";
import { removeNodes } from "./batch";
import { beginRun, type RemovalOptions, type RemovalReport } from "./types";
import { chooseVictims, type PoolMember } from "./victims";
import { isOutdated } from "../rules";

/** The pool to scale in. */
export interface ScaleInPool {
    scalingGroupId: string;
    /** Pool name (the pool label of its nodes: `operations.ts` poolNodes). */
    poolName: string;
    /** Members to keep. */
    targetSize: number;
    /** Never go below this many members. */
    minSize: number;
    /** Release (default) or keep the removed instances. */
    essAction?: "release" | "keep";
    /** The pool's current spec hash: members whose instance carries another are outdated and go first. Default none. */
    specHash?: string;
    /**
     * NotReady (or Node-less) members go before Ready ones, outdated or not: a shrink that no rollout waits on (a new
     * node not Ready yet is not a surge awaited). Default false: outdated first.
     */
    notReadyFirst?: boolean;
}

/**
 * Scales an ESS pool in to `targetSize` (never below `minSize`) through the removal core: waits until no
 * scaling activity of the group runs (a launch still in progress would make its members unremovable),
 * chooses victims (outdated first, then NotReady, then fewest workload pods, then newest) and removes them.
 */
export async function scaleInPool(pool: ScaleInPool, opts: RemovalOptions): Promise<RemovalReport[]> {
    const log = opts.log ?? (() => undefined);
    await waitForIdleGroup(opts.region, pool.scalingGroupId, { pollMs: opts.pollIntervalMs, timeoutMs: (opts.activityTimeoutSeconds ?? 1200) * 1000, log, clock: opts.clock });
    const keep = Math.max(pool.targetSize, pool.minSize, 0);
    const members = await readPoolMembers(pool, opts);
    const count = members.length - keep;
    if (count <= 0) {
        log(`pool ${pool.poolName}: ${members.length} member(s), target ${keep}: nothing to remove`);
        return [];
    }
    const victims = chooseVictims(members, count, pool.notReadyFirst);
    log(`pool ${pool.poolName}: removing ${victims.length} of ${members.length} node(s): ${victims.map((v) => v.instanceId).join(", ")}`);
    return removeMembers(pool, victims, opts);
}

/**
 * The group's staying members as victim choice sees them: each with its Node (by provider id or IP, among every
 * Node), readiness, workload pods, instance IP and status, and whether it is outdated (its instance's spec tag).
 * Members ESS is taking out (an earlier removal, a health check) are leaving anyway: not listed.
 */
export async function readPoolMembers(pool: Pick<ScaleInPool, "scalingGroupId" | "specHash">, opts: RemovalOptions): Promise<Array<PoolMember & { outdated: boolean }>> {
    return (await readPool(pool, opts)).members;
}

/**
 * {@link readPoolMembers}, with every Node of the cluster as the same listing showed them and the listing master's
 * clock (`masterNow`, undefined from an earlier release's list-nodes) (no Nodes and no time when the group is empty).
 */
export async function readPool(pool: Pick<ScaleInPool, "scalingGroupId" | "specHash">, opts: RemovalOptions):
    Promise<{ members: Array<PoolMember & { outdated: boolean }>; nodes: NodeInfo[]; masterNow?: number }> {
    const instances = await stayingMembers(opts.region, pool.scalingGroupId);
    if (instances.length === 0) return { members: [], nodes: [] };
    const access = beginRun(opts).access;
    // Every Node, not only those labelled with the pool: a member's Node is found by its provider id or its IP, and
    // one without the label (a kubelet set up by hand) is still its Node, never a reason to treat it as Node-less.
    const [{ nodes, masterNow }, ips, workload] = await allSettled([listNodesAt(access), describeInstances(opts.region, instances.map((i) => i.instanceId)), workloadPods(access)]);
    const members = instances.map((i) => {
        const inst = ips.get(i.instanceId);
        const node = nodeOfInstance(nodes, opts.region, { instanceId: i.instanceId, privateIp: inst?.privateIp });
        return { instanceId: i.instanceId, nodeName: node?.name ?? null, ready: node?.ready ?? false, workloadPods: node ? workload.get(node.name) ?? 0 : 0, createdAt: i.creationTime,
            marked: !!node?.removing, podCidr: node?.podCidr, instance: { privateIp: inst?.privateIp ?? "", status: inst?.status ?? "gone" },
            outdated: isOutdated(inst?.tags, pool.specHash), readySince: node?.readySince ?? "", heldBy: node?.heldBy ?? "" };
    });
    return { members, nodes, masterNow };
}

/**
 * Removes the chosen members through the removal core (drain, leave ESS, routes).
 * @param replaced the victims released with the desired capacity kept (`replace`: ESS launches one for each), the others
 *   go as `pool.essAction` says. Default none.
 */
export function removeMembers(pool: Pick<ScaleInPool, "scalingGroupId" | "essAction">, victims: readonly PoolMember[], opts: RemovalOptions,
    replaced: ReadonlySet<string> = new Set()): Promise<RemovalReport[]> {
    // The Node's readiness goes along with its name: given a name, the removal core does not look the Node up
    // again, and a NotReady node must be drained without waiting for pods its kubelet never confirms.
    return removeNodes(victims.map((v) => ({
        instanceId: v.instanceId, kind: "scale-out", scalingGroupId: pool.scalingGroupId,
        essAction: replaced.has(v.instanceId) ? "replace" as const : pool.essAction, nodeName: v.nodeName, instance: v.instance,
        ...(v.nodeName === null ? {} : { nodeReady: v.ready, nodePodCidr: v.podCidr }),
    })), opts);
}
