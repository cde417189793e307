/**
 * Pool scale-in: bring an ESS pool down to a target size through the removal core, choosing the victims
 * (victims.ts) from the group's members and the cluster's Nodes and pods.
 */
import { scalingGroupMembers, waitForIdleGroup } from "../cloud/ess";
import { poolNodes, providerIdOf, workloadPods } from "../cloud/operations";
import { removeNodes } from "./batch";
import { beginRun, type RemovalOptions, type RemovalReport } from "./types";
import { chooseVictims, type PoolMember } from "./victims";

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
}

/** Members ESS is taking out (an earlier removal, a health check): leaving anyway, neither counted nor chosen. */
const LEAVING = ["Removing", "Removing:Wait"];

/**
 * Scales an ESS pool in to `targetSize` (never below `minSize`) through the removal core: waits until no
 * scaling activity of the group runs (a launch still in progress would make its members unremovable),
 * chooses victims (NotReady first, then fewest workload pods, then newest) and removes them.
 */
export async function scaleInPool(pool: ScaleInPool, opts: RemovalOptions): Promise<RemovalReport[]> {
    const log = opts.log ?? (() => undefined);
    await waitForIdleGroup(opts.region, pool.scalingGroupId, { pollMs: opts.pollIntervalMs, timeoutMs: (opts.activityTimeoutSeconds ?? 1200) * 1000, log });
    const instances = (await scalingGroupMembers(opts.region, pool.scalingGroupId)).filter((m) => !LEAVING.includes(m.lifecycleState));
    const keep = Math.max(pool.targetSize, pool.minSize, 0);
    const count = instances.length - keep;
    if (count <= 0) {
        log(`pool ${pool.poolName}: ${instances.length} member(s), target ${keep}: nothing to remove`);
        return [];
    }
    const access = beginRun(opts).access;
    const nodes = await poolNodes(access, pool.poolName);
    const workload = await workloadPods(access);
    const members: PoolMember[] = instances.map((i) => {
        const node = nodes.find((n) => n.providerId === providerIdOf(opts.region, i.instanceId));
        return { instanceId: i.instanceId, nodeName: node?.name ?? null, ready: node?.ready ?? false, workloadPods: node ? workload.get(node.name) ?? 0 : 0, createdAt: i.creationTime,
            marked: !!node?.removing, podCidr: node?.podCidr };
    });
    const victims = chooseVictims(members, count);
    log(`pool ${pool.poolName}: removing ${victims.length} of ${instances.length} node(s): ${victims.map((v) => v.instanceId).join(", ")}`);
    // The Node's readiness goes along with its name: given a name, the removal core does not look the Node up
    // again, and a NotReady node must be drained without waiting for pods its kubelet never confirms.
    return removeNodes(victims.map((v) => ({
        instanceId: v.instanceId, kind: "scale-out", scalingGroupId: pool.scalingGroupId, essAction: pool.essAction, nodeName: v.nodeName,
        ...(v.nodeName === null ? {} : { nodeReady: v.ready, nodePodCidr: v.podCidr }),
    })), opts);
}
