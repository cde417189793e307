/** VPC 2016-04-28 actions of the emulator: route tables and route entries. */
import { ApiError, EmuRouteTable, EmulatorState, isoTime, page, required, tokenPage } from "./state";

type Handler = (st: EmulatorState, p: Record<string, string>) => Record<string, unknown>;

function tableOr404(st: EmulatorState, id: string): EmuRouteTable {
    const t = st.routeTables.get(id);
    if (!t) throw new ApiError(404, "InvalidRouteTableId.NotFound", `The specified route table does not exist: ${id}.`);
    return t;
}

const describeRouteTableList: Handler = (st, p) => {
    let list = [...st.routeTables.values()];
    if (p.VpcId) list = list.filter((t) => t.vpcId === p.VpcId);
    if (p.RouteTableId) list = list.filter((t) => t.routeTableId === p.RouteTableId);
    if (p.VRouterId) list = list.filter((t) => t.vRouterId === p.VRouterId);
    const pg = page(list, p, 50, 10);
    return {
        Success: true, Code: "200", Message: "successful", TotalCount: pg.TotalCount, PageNumber: pg.PageNumber, PageSize: pg.PageSize,
        RouterTableList: { RouterTableListType: pg.items.map((t) => ({
            RouteTableId: t.routeTableId, RouteTableName: t.routeTableName, RouteTableType: t.routeTableType, VpcId: t.vpcId,
            VRouterId: t.vRouterId, RouterId: t.vRouterId, RouterType: "VRouter", Status: "Available", CreationTime: isoTime(), Description: "",
        })) },
    };
};

const describeRouteEntryList: Handler = (st, p) => {
    const t = tableOr404(st, required(p, "RouteTableId"));
    let list = t.entries;
    if (p.DestinationCidrBlock) list = list.filter((e) => e.destinationCidrBlock === p.DestinationCidrBlock);
    if (p.RouteEntryId) list = list.filter((e) => e.routeEntryId === p.RouteEntryId);
    if (p.RouteEntryType) list = list.filter((e) => e.type === p.RouteEntryType);
    if (p.NextHopId) list = list.filter((e) => e.nextHopId === p.NextHopId);
    const pg = tokenPage(list, p, "MaxResult", 100, 10);
    return {
        NextToken: pg.NextToken,
        RouteEntrys: { RouteEntry: pg.items.map((e) => ({
            RouteEntryId: e.routeEntryId, RouteTableId: e.routeTableId, DestinationCidrBlock: e.destinationCidrBlock, Type: e.type, Status: e.status,
            RouteEntryName: e.routeEntryName, Description: "", IpVersion: "ipv4",
            NextHops: { NextHop: [{ NextHopType: e.nextHopType, NextHopId: e.nextHopId, Enabled: 1, Weight: 0, NextHopRegionId: "" }] },
        })) },
    };
};

const createRouteEntry: Handler = (st, p) => {
    const t = tableOr404(st, required(p, "RouteTableId"));
    const cidr = required(p, "DestinationCidrBlock");
    const nextHopType = p.NextHopType ?? "Instance";
    const nextHopId = required(p, "NextHopId");
    if (!/^\d{1,3}(\.\d{1,3}){3}\/\d{1,2}$/.test(cidr)) throw new ApiError(400, "InvalidDestinationCidrBlock.Malformed", `The specified DestinationCidrBlock ${cidr} is not valid.`);
    if (t.entries.some((e) => e.destinationCidrBlock === cidr)) throw new ApiError(400, "InvalidCIDRBlock.Duplicate", `Specified CIDR block is already exists: ${cidr}.`);
    if (nextHopType === "Instance" && !st.instances.has(nextHopId)) throw new ApiError(404, "InvalidInstanceId.NotFound", `The specified next hop instance does not exist: ${nextHopId}.`);
    const routeEntryId = st.nextId("rte-emu");
    t.entries.push({ routeEntryId, routeTableId: t.routeTableId, destinationCidrBlock: cidr, nextHopType, nextHopId, routeEntryName: p.RouteEntryName ?? "", type: "Custom", status: "Available" });
    return { RouteEntryId: routeEntryId };
};

const deleteRouteEntry: Handler = (st, p) => {
    const t = tableOr404(st, p.RouteTableId ?? [...st.routeTables.values()].find((x) => x.entries.some((e) => e.routeEntryId === p.RouteEntryId))?.routeTableId ?? "");
    const idx = t.entries.findIndex((e) => (p.RouteEntryId ? e.routeEntryId === p.RouteEntryId : e.destinationCidrBlock === p.DestinationCidrBlock && (!p.NextHopId || e.nextHopId === p.NextHopId)));
    if (idx < 0) throw new ApiError(404, "InvalidRouteEntry.NotFound", "The specified route entry does not exist.");
    if (t.entries[idx].type === "System") throw new ApiError(403, "Forbidden.SystemRouteEntry", "A system route entry cannot be deleted.");
    t.entries.splice(idx, 1);
    return {};
};

/** VPC action table. */
export const VPC_ACTIONS: Record<string, Handler> = {
    DescribeRouteTableList: describeRouteTableList,
    DescribeRouteEntryList: describeRouteEntryList,
    CreateRouteEntry: createRouteEntry,
    DeleteRouteEntry: deleteRouteEntry,
};
