/** VPC 2016-04-28 actions of the emulator: route tables and route entries. */
import { ApiError, EmuRouteEntry, EmuRouteTable, EmulatorState, isoTime, page, required, tokenPage } from "./state";

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
    settleRoutes(st);
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

/**
 * Route-entry changes are asynchronous tasks and one runs at a time per VPC:
 * - DeleteRouteEntry/DeleteRouteEntries: "You can delete only routes that are in the Available state";
 *   "You cannot delete a route entry of a virtual private cloud (VPC) in which a vSwitch or another route
 *   entry is being created or deleted"; the entry shows `Deleting` until it is gone
 *   (alibabacloud.com/help/en/vpc/developer-reference/api-vpc-2016-04-28-deleterouteentry and
 *   ...-deleterouteentries). Error table of the same page: 400 `IncorrectRouteEntryStatus` "Some route entry
 *   status blocked this operation" (routes in Pending or Modifying state), 400 `InvalidRouteEntry.NotFound`,
 *   400 `OperationDenied` for a system route.
 * - Terraform: "The VPC service handles route entry operations as serialized asynchronous tasks and
 *   rejects concurrent submissions with TaskConflict" and retries TaskConflict, OperationConflict,
 *   IncorrectRouteEntryStatus, SystemBusy, … (terraform-provider-alicloud alicloud/resource_alicloud_route_entry.go:69-80, :168, :326).
 * - New entries are `Pending` until their task ends (Status enum Pending | Available | Modifying | Deleting:
 *   aliyun/alibabacloud-cpp-sdk vpc-20160428/include/alibabacloud/models/DescribeRouteEntryListResponseBody.hpp).
 * The emulator keeps a VPC busy for `st.routeTaskMs` (default 0: no window) after each change; a change in
 * that window gets the next code of `st.routeConflictCodes` (rotating; all four HTTP 400: the status of
 * TaskConflict/OperationConflict/SystemBusy is not documented, and 400 is the harsher guess because
 * clients retry 5xx on their own).
 */
const CONFLICT_MESSAGES: Record<string, string> = {
    TaskConflict: "The operation is too frequent, please wait a moment and try again.",
    OperationConflict: "The operation conflicts with another operation in progress. Try again later.",
    IncorrectRouteEntryStatus: "Some route entry status blocked this operation.",
    SystemBusy: "The system is busy. Try again later.",
};

/** End the route tasks that are due: `Pending` entries become `Available`, `Deleting` ones disappear. */
export function settleRoutes(st: EmulatorState, now = st.now()): void {
    for (const t of st.routeTables.values()) {
        for (let k = t.entries.length - 1; k >= 0; k--) {
            const e = t.entries[k];
            if (e.until === undefined || now < e.until) continue;
            if (e.status === "Deleting") t.entries.splice(k, 1);
            else { e.status = "Available"; delete e.until; }
        }
    }
}

/** Refuse a route change while another one runs in the same VPC. */
function assertRouteTaskFree(st: EmulatorState, vpcId: string): void {
    if (st.now() < (st.routeTaskUntil.get(vpcId) ?? 0)) {
        const codes = st.routeConflictCodes.length ? st.routeConflictCodes : ["TaskConflict"];
        const code = codes[st.routeConflictSeq++ % codes.length];
        throw new ApiError(400, code, CONFLICT_MESSAGES[code] ?? "Another route entry task is in progress in this VPC.");
    }
}

/** Start a route task in a VPC; returns when it ends (undefined when `routeTaskMs` is 0). */
function beginRouteTask(st: EmulatorState, vpcId: string): number | undefined {
    if (st.routeTaskMs <= 0) return undefined;
    const until = st.now() + st.routeTaskMs;
    st.routeTaskUntil.set(vpcId, until);
    setTimeout(() => settleRoutes(st), st.routeTaskMs + 1).unref();
    return until;
}

/** Collect `Name.1.Field`, `Name.2.Field`, … into objects. */
function objectListParam(p: Record<string, string>, name: string): Record<string, string>[] {
    const out: Record<string, string>[] = [];
    for (let n = 1; ; n++) {
        const prefix = `${name}.${n}.`;
        const keys = Object.keys(p).filter((k) => k.startsWith(prefix));
        if (keys.length === 0) break;
        out.push(Object.fromEntries(keys.map((k) => [k.slice(prefix.length), p[k]])));
    }
    return out;
}

const CIDR = /^\d{1,3}(\.\d{1,3}){3}\/\d{1,2}$/;

const createRouteEntry: Handler = (st, p) => {
    settleRoutes(st);
    const t = tableOr404(st, required(p, "RouteTableId"));
    const cidr = required(p, "DestinationCidrBlock");
    const nextHopType = p.NextHopType ?? "Instance";
    const nextHopId = required(p, "NextHopId");
    if (!CIDR.test(cidr)) throw new ApiError(400, "InvalidDestinationCidrBlock.Malformed", `The specified DestinationCidrBlock ${cidr} is not valid.`);
    assertRouteTaskFree(st, t.vpcId);
    if (t.entries.some((e) => e.destinationCidrBlock === cidr)) throw new ApiError(400, "InvalidCIDRBlock.Duplicate", `Specified CIDR block is already exists: ${cidr}.`);
    if (nextHopType === "Instance" && !st.instances.has(nextHopId)) throw new ApiError(404, "InvalidInstanceId.NotFound", `The specified next hop instance does not exist: ${nextHopId}.`);
    const routeEntryId = st.nextId("rte-emu");
    const until = beginRouteTask(st, t.vpcId);
    t.entries.push({ routeEntryId, routeTableId: t.routeTableId, destinationCidrBlock: cidr, nextHopType, nextHopId, routeEntryName: p.RouteEntryName ?? "", type: "Custom", status: until ? "Pending" : "Available", ...(until ? { until } : {}) });
    return { RouteEntryId: routeEntryId };
};

/** Why an entry cannot be deleted now, or "" (shared by DeleteRouteEntry and DeleteRouteEntries). */
function undeletable(e: EmuRouteEntry): { code: string; message: string } | undefined {
    if (e.type === "System") return { code: "OperationDenied", message: "Specified operation is denied as route entry type is system." };
    if (e.status !== "Available") return { code: "IncorrectRouteEntryStatus", message: `Specified routeEntry status error (${e.status}).` };
    return undefined;
}

function markDeleted(t: EmuRouteTable, e: EmuRouteEntry, until: number | undefined): void {
    if (until === undefined) t.entries.splice(t.entries.indexOf(e), 1);
    else { e.status = "Deleting"; e.until = until; }
}

const deleteRouteEntry: Handler = (st, p) => {
    settleRoutes(st);
    const t = tableOr404(st, p.RouteTableId ?? [...st.routeTables.values()].find((x) => x.entries.some((e) => e.routeEntryId === p.RouteEntryId))?.routeTableId ?? "");
    assertRouteTaskFree(st, t.vpcId);
    const e = t.entries.find((x) => (p.RouteEntryId ? x.routeEntryId === p.RouteEntryId : x.destinationCidrBlock === p.DestinationCidrBlock && (!p.NextHopId || x.nextHopId === p.NextHopId)));
    if (!e) throw new ApiError(400, "InvalidRouteEntry.NotFound", "Route entry not exists.");
    const why = undeletable(e);
    if (why) throw new ApiError(400, why.code, why.message);
    markDeleted(t, e, beginRouteTask(st, t.vpcId));
    return {};
};

/**
 * DeleteRouteEntries (aliyun/alibabacloud-typescript-sdk vpc-20160428/src/models/DeleteRouteEntriesRequest.ts,
 * DeleteRouteEntriesResponseBody.ts): `RouteEntries.N.RouteTableId` (required) with `RouteEntryId`, or
 * `DstCidrBlock` + `NextHop`; up to 50 entries; no ClientToken. Per-entry failures are reported, not
 * thrown: `FailedCount`, `FailedRouteEntries[]` {DstCidrBlock, NextHop, RouteEntryId, FailedCode,
 * FailedMessage} (e.g. `VPC_ROUTER_ENTRY_NOT_EXIST`), `SuccessCount`. A VPC already running a route task
 * fails the whole request (the doc's "You cannot repeatedly call DeleteRouteEntries within a specific period").
 */
/**
 * The shared start of DeleteRouteEntries and CreateRouteEntries: the `RouteEntries.N.*` items (1–50: the limit is
 * the model's "You can specify up to 50"; the code for exceeding it is not documented), their tables, and no route
 * task running in any of their VPCs (one task per VPC, as above).
 */
function routeBatch(st: EmulatorState, p: Record<string, string>): { items: Array<Record<string, string>>; tables: EmuRouteTable[]; until: Map<string, number | undefined> } {
    settleRoutes(st);
    const items = objectListParam(p, "RouteEntries");
    if (items.length === 0) throw new ApiError(400, "MissingParameter", "The input parameter \"RouteEntries\" that is mandatory for processing this request is not supplied.");
    if (items.length > 50) throw new ApiError(400, "InvalidParameter.RouteEntries", "You can specify up to 50 route entries.");
    const tables = items.map((it) => tableOr404(st, it.RouteTableId ?? ""));
    for (const vpcId of new Set(tables.map((t) => t.vpcId))) assertRouteTaskFree(st, vpcId);
    return { items, tables, until: new Map() };
}

const deleteRouteEntries: Handler = (st, p) => {
    const { items, tables, until } = routeBatch(st, p);
    const failed: Record<string, string>[] = [];
    let ok = 0;
    items.forEach((it, k) => {
        const t = tables[k];
        const e = t.entries.find((x) => (it.RouteEntryId ? x.routeEntryId === it.RouteEntryId : x.destinationCidrBlock === it.DstCidrBlock && (!it.NextHop || x.nextHopId === it.NextHop)));
        const why = !e ? { code: "VPC_ROUTER_ENTRY_NOT_EXIST", message: "vRouterEntry not exists" } : undeletable(e);
        if (why || !e) {
            failed.push({ DstCidrBlock: it.DstCidrBlock ?? e?.destinationCidrBlock ?? "", NextHop: it.NextHop ?? e?.nextHopId ?? "", RouteEntryId: it.RouteEntryId ?? "", FailedCode: why?.code ?? "", FailedMessage: why?.message ?? "" });
            return;
        }
        if (!until.has(t.vpcId)) until.set(t.vpcId, beginRouteTask(st, t.vpcId));
        markDeleted(t, e, until.get(t.vpcId));
        ok += 1;
    });
    return { SuccessCount: ok, FailedCount: failed.length, FailedRouteEntries: failed };
};

/**
 * CreateRouteEntries (vpc-20160428/src/models/CreateRouteEntriesRequest.ts, CreateRouteEntriesResponseBody.ts):
 * `RouteEntries.N.{RouteTableId, DstCidrBlock, NextHop, NextHopType, Name, Description}`, up to 50, no
 * ClientToken; per-entry failures (`VPC_ROUTE_ENTRY_CIDR_BLOCK_DUPLICATE`, …) in `FailedRouteEntries[]`,
 * the new ids in `RouteEntryIds[]`. One task per VPC, as above.
 */
const createRouteEntries: Handler = (st, p) => {
    const { items, tables, until } = routeBatch(st, p);
    const failed: Record<string, string>[] = [];
    const ids: string[] = [];
    items.forEach((it, k) => {
        const t = tables[k];
        const cidr = it.DstCidrBlock ?? "", hop = it.NextHop ?? "", hopType = it.NextHopType ?? "Instance";
        const why = !CIDR.test(cidr) ? { code: "InvalidDestinationCidrBlock.Malformed", message: `Specified CIDR block is not valid: ${cidr}` }
            : t.entries.some((e) => e.destinationCidrBlock === cidr) ? { code: "VPC_ROUTE_ENTRY_CIDR_BLOCK_DUPLICATE", message: `Specified CIDR block is already exists, entry.cidrBlock=${cidr}` }
                : hopType === "Instance" && !st.instances.has(hop) ? { code: "InvalidNextHop.NotFound", message: `Specified next hop does not exist: ${hop}` } : undefined;
        if (why) { failed.push({ DstCidrBlock: cidr, NextHop: hop, FailedCode: why.code, FailedMessage: why.message }); return; }
        if (!until.has(t.vpcId)) until.set(t.vpcId, beginRouteTask(st, t.vpcId));
        const u = until.get(t.vpcId);
        const routeEntryId = st.nextId("rte-emu");
        t.entries.push({ routeEntryId, routeTableId: t.routeTableId, destinationCidrBlock: cidr, nextHopType: hopType, nextHopId: hop, routeEntryName: it.Name ?? "", type: "Custom", status: u ? "Pending" : "Available", ...(u ? { until: u } : {}) });
        ids.push(routeEntryId);
    });
    return { SuccessCount: ids.length, FailedCount: failed.length, FailedRouteEntries: failed, RouteEntryIds: ids };
};

/** VPC action table. */
export const VPC_ACTIONS: Record<string, Handler> = {
    DescribeRouteTableList: describeRouteTableList,
    DescribeRouteEntryList: describeRouteEntryList,
    CreateRouteEntry: createRouteEntry,
    CreateRouteEntries: createRouteEntries,
    DeleteRouteEntry: deleteRouteEntry,
    DeleteRouteEntries: deleteRouteEntries,
};
