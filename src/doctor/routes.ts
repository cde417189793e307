/**
 * Routes check: the VPC route entries the CCM route controller writes (one per node: podCIDR →
 * instance) against each Node's podCIDR — missing, stale (instance gone), conflicting — and the
 * Nodes' NetworkUnavailable condition (docs/upstream.md#ccm-routes, #ccm-stale-routes).
 */
import { contains, formatCidr, overlaps, parseCidr, Cidr } from "../rules/cidr";
import { DoctorContext, RouteView } from "./context";
import { Finding } from "./types";
import { allSettled } from "../cloud/wait";

const cidrOf = (text: string): Cidr | undefined => { const c = parseCidr(text); return typeof c === "string" ? undefined : c; };

/**
 * Runs the Routes check.
 * @param ctx Shared reads of this doctor run.
 * @returns Findings; throws when the route table or the Nodes cannot be read.
 */
export async function checkRoutes(ctx: DoctorContext): Promise<Finding[]> {
    const { info } = ctx;
    const cluster = cidrOf(info.podCidr);
    if (!cluster) return [{ check: "routes", status: "problem", subject: "clusterInfo.podCidr", evidence: `"${info.podCidr}" is not a CIDR block`, next: "check the stack output clusterInfo" }];
    const [entries, nodes] = await allSettled([ctx.routes(), ctx.nodes()]);
    const out: Finding[] = [];
    const add = (status: Finding["status"], subject: string, evidence: string, next: string) => out.push({ check: "routes", status, subject, evidence, next });
    const ours = entries.filter((e) => { const c = cidrOf(e.destinationCidrBlock); return c !== undefined && contains(cluster, c); });
    const instances = await ctx.instances(ours.filter((e) => e.nextHopType === "Instance").map((e) => e.nextHopId));
    const table = `route table ${info.routeTableId}`;
    const matched = new Set<RouteView>();

    for (const n of nodes) {
        const nu = n.networkUnavailable === "True" ? `; NetworkUnavailable=True (${n.networkUnavailableReason || "no reason"})` : "";
        if (!n.podCidr) {
            add("problem", `node ${n.name}`, `has no podCIDR: kube-controller-manager did not allocate one (pod CIDR ${info.podCidr} exhausted, or --allocate-node-cidrs off)${nu}`, "check kube-controller-manager's logs on the masters (`kubectl -n kube-system logs kube-controller-manager-<master>`)");
            continue;
        }
        const mine = cidrOf(n.podCidr);
        const id = DoctorContext.instanceIdOf(n.providerId);
        const exact = ours.filter((e) => e.destinationCidrBlock === n.podCidr);
        exact.forEach((e) => matched.add(e));
        const overlapping = mine ? ours.filter((e) => e.destinationCidrBlock !== n.podCidr && overlaps(mine, cidrOf(e.destinationCidrBlock) as Cidr)) : [];
        for (const e of overlapping) {
            matched.add(e);
            add("problem", `route ${e.destinationCidrBlock}`, `overlaps node ${n.name}'s podCIDR ${n.podCidr} and points at ${e.nextHopId} (${e.routeEntryId}): traffic to some of its pods goes to the wrong instance`,
                `delete route entry ${e.routeEntryId} from ${table} (VPC console or \`aliyun vpc DeleteRouteEntry --RouteEntryId ${e.routeEntryId}\`); the CCM re-creates the right one`);
        }
        const wrongHop = exact.filter((e) => e.nextHopId !== id);
        for (const e of wrongHop) {
            add("problem", `route ${e.destinationCidrBlock}`, `conflicting: node ${n.name} owns ${n.podCidr} but the route points at ${e.nextHopType} ${e.nextHopId}${id ? `, not ${id}` : ""} (${e.routeEntryId})`,
                `delete route entry ${e.routeEntryId}; the CCM then creates the route to ${id || "the node's instance"} within its reconcile period (5 min)`);
        }
        if (exact.length === 0) {
            add("problem", `node ${n.name}`, `no route for its podCIDR ${n.podCidr} in ${table}${nu}${id ? "" : " — the node has no valid provider id, so the CCM skips it"}`,
                "check the CCM: `kubectl -n kube-system logs ds/cloud-controller-manager | grep -i route` (route table quota, RAM permission vpc:CreateRouteEntry, routeTableIDs in its cloud config)");
        } else if (nu && wrongHop.length === 0) {
            add("problem", `node ${n.name}`, `route exists, but the node still reports${nu.slice(1)}`, "the CCM did not update the condition: check `kubectl -n kube-system logs ds/cloud-controller-manager`");
        }
    }

    for (const e of ours) {
        if (matched.has(e)) continue;
        const inst = e.nextHopType === "Instance" ? instances.get(e.nextHopId) ?? null : undefined;
        if (e.nextHopType === "Instance" && !inst) {
            add("problem", `route ${e.destinationCidrBlock}`, `stale: points at instance ${e.nextHopId}, which no longer exists (${e.routeEntryId})`,
                `delete route entry ${e.routeEntryId} (the CCM removes routes of deleted nodes only from its in-memory cache, so a restart can leave them): \`aliyun vpc DeleteRouteEntry --RouteEntryId ${e.routeEntryId}\``);
        } else {
            add("warning", `route ${e.destinationCidrBlock}`, `stale: points at ${e.nextHopType} ${e.nextHopId}, but no Node has podCIDR ${e.destinationCidrBlock} (${e.routeEntryId})`,
                `if that instance left the cluster, delete route entry ${e.routeEntryId}; it uses a slot of the route table quota`);
        }
    }
    if (out.length === 0) add("ok", table, `${ours.length} route(s) inside ${formatCidr(cluster)} match the podCIDRs of ${nodes.length} Node(s); no NetworkUnavailable`, "");
    return out;
}
