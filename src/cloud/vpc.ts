/**
 * VPC, typed: the custom route entries of a route table (the pod routes) and their deletion. Sources:
 * docs/upstream.md#alibaba-cloud-vpc.
 */
import { callApi, type RetryOptions } from "./openapi";

/** One route entry. */
export interface RouteEntry {
    routeEntryId: string;
    destinationCidrBlock: string;
    nextHopType: string;
    nextHopId: string;
    status: string;
}

interface RawRouteEntry {
    RouteEntryId?: string;
    DestinationCidrBlock?: string;
    Status?: string;
    NextHops?: { NextHop?: Array<{ NextHopType?: string; NextHopId?: string }> };
}

/** The custom entries of a route table (all pages; `nextHopId` narrows to one next hop). */
export async function customRouteEntries(region: string, routeTableId: string, opts: { nextHopId?: string; retry?: RetryOptions } = {}): Promise<RouteEntry[]> {
    const out: RouteEntry[] = [];
    let token = "";
    do {
        const res = await callApi("vpc", "DescribeRouteEntryList", {
            RouteTableId: routeTableId, RouteEntryType: "Custom", NextHopId: opts.nextHopId, MaxResult: 100, NextToken: token || undefined,
        }, { region, retry: opts.retry });
        for (const e of (res.RouteEntrys as { RouteEntry?: RawRouteEntry[] } | undefined)?.RouteEntry ?? []) {
            const hop = e.NextHops?.NextHop?.[0] ?? {};
            out.push({ routeEntryId: e.RouteEntryId ?? "", destinationCidrBlock: e.DestinationCidrBlock ?? "", nextHopType: hop.NextHopType ?? "", nextHopId: hop.NextHopId ?? "", status: e.Status ?? "" });
        }
        token = String(res.NextToken ?? "");
    } while (token);
    return out;
}

/** Deletes one route entry (by id, with its destination and next hop). */
export async function deleteRouteEntry(region: string, routeTableId: string, entry: RouteEntry): Promise<void> {
    await callApi("vpc", "DeleteRouteEntry", {
        RouteTableId: routeTableId, RouteEntryId: entry.routeEntryId, DestinationCidrBlock: entry.destinationCidrBlock, NextHopId: entry.nextHopId,
    }, { region });
}
