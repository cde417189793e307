/**
 * The last step of a removal: the pod routes still pointing at the removed instances. The CCM deletes
 * a deleted node's route only from its memory of the node, so a route can stay behind. One listing of
 * the table for every node removed, then DeleteRouteEntries in batches, one route task at a time per
 * table, waiting until the routes are gone. docs/upstream.md#vpc-route-tasks, #ccm-stale-routes.
 */
import { customRouteEntries, deleteRouteEntries, type RouteEntry } from "../cloud/vpc";
import { contains, parseCidr } from "../rules";
import { notApplicable, RemovalError, type NodeRemoval, type RemovalRun } from "./types";

/**
 * Whether a route to the removed instance is one of its pod routes: its destination lies in the cluster's pod
 * CIDR, or (without one) is the podCIDR its Node had. Any other route through the machine is the user's.
 */
function isPodRoute(e: RouteEntry, r: NodeRemoval, podCidr: string | undefined): boolean {
    const dest = parseCidr(e.destinationCidrBlock);
    const pods = podCidr ? parseCidr(podCidr) : undefined;
    if (typeof dest !== "string" && pods && typeof pods !== "string") return contains(pods, dest);
    return !!r.facts.podCidr && r.facts.podCidr === e.destinationCidrBlock;
}

/** Deletes the routes whose next hop is one of the removals' instances; every removal gets `delete-route` done or not applicable. */
export async function deletePodRoutes(removals: readonly NodeRemoval[], run: RemovalRun): Promise<void> {
    const table = run.opts.routeTableId;
    if (!table || removals.length === 0) return;
    const ids = removals.map((r) => r.target.instanceId);
    try {
        const toInstances = (await customRouteEntries(run.opts.region, table)).filter((e) => ids.includes(e.nextHopId));
        const entries = toInstances.filter((e) => isPodRoute(e, removals.find((r) => r.target.instanceId === e.nextHopId)!, run.opts.podCidr));
        for (const r of removals) {
            const mine = entries.filter((e) => e.nextHopId === r.target.instanceId);
            const others = toInstances.filter((e) => e.nextHopId === r.target.instanceId && !entries.includes(e));
            if (others.length > 0) {
                r.warn(`${r.target.instanceId}: route${others.length > 1 ? "s" : ""} ${others.map((e) => e.destinationCidrBlock).join(", ")} still point${others.length > 1 ? "" : "s"} at it ` +
                    `and ${run.opts.podCidr ? `lie${others.length > 1 ? "" : "s"} outside the pod CIDR ${run.opts.podCidr}` : "cannot be told from a pod route"}: left alone (delete ${others.length > 1 ? "them" : "it"} in the VPC console if unwanted)`);
            }
            if (mine.length === 0) notApplicable(r, "delete-route", "no pod route points at the instance");
            else r.log(`deleting pod route${mine.length > 1 ? "s" : ""} ${mine.map((e) => e.destinationCidrBlock).join(", ")} → ${r.target.instanceId}`);
        }
        if (entries.length === 0) return;
        await deleteRouteEntries(run.opts.region, table, entries, { pollMs: run.opts.pollIntervalMs, clock: run.opts.clock });
        for (const r of removals.filter((x) => entries.some((e) => e.nextHopId === x.target.instanceId))) r.report.done.push("delete-route");
    } catch (err) {
        throw new RemovalError(ids, "delete-route", err as Error, `delete the routes with next hop ${ids.join(", ")} from ${table} in the VPC console, or run again`);
    }
}
