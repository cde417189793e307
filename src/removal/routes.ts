/**
 * The last step of a removal: the pod routes still pointing at the removed instances. The CCM deletes
 * a deleted node's route only from its memory of the node, so a route can stay behind. One listing of
 * the table for every node removed, then DeleteRouteEntries in batches, one route task at a time per
 * table, waiting until the routes are gone. docs/upstream.md#vpc-route-tasks, #ccm-stale-routes.
 */
import { customRouteEntries, deleteRouteEntries } from "../cloud/vpc";
import { notApplicable, RemovalError, type NodeRemoval, type RemovalRun } from "./types";

/** Deletes the routes whose next hop is one of the removals' instances; every removal gets `delete-route` done or not applicable. */
export async function deletePodRoutes(removals: readonly NodeRemoval[], run: RemovalRun): Promise<void> {
    const table = run.opts.routeTableId;
    if (!table || removals.length === 0) return;
    const ids = removals.map((r) => r.target.instanceId);
    try {
        const entries = (await customRouteEntries(run.opts.region, table)).filter((e) => ids.includes(e.nextHopId));
        for (const r of removals) {
            const mine = entries.filter((e) => e.nextHopId === r.target.instanceId);
            if (mine.length === 0) notApplicable(r, "delete-route", "no route points at the instance");
            else r.log(`deleting pod route${mine.length > 1 ? "s" : ""} ${mine.map((e) => e.destinationCidrBlock).join(", ")} → ${r.target.instanceId}`);
        }
        if (entries.length === 0) return;
        await deleteRouteEntries(run.opts.region, table, entries, { pollMs: run.opts.pollIntervalMs });
        for (const r of removals.filter((x) => entries.some((e) => e.nextHopId === x.target.instanceId))) r.report.done.push("delete-route");
    } catch (err) {
        throw new RemovalError(ids, "delete-route", err as Error, `delete the routes with next hop ${ids.join(", ")} from ${table} in the VPC console, or run again`);
    }
}
