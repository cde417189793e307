/**
 * VPC, typed: the custom route entries of a route table (the pod routes) and their deletion. Sources:
 * docs/upstream.md#alibaba-cloud-vpc.
 */
import { codesOf } from "./errors";
import { callApi, type RetryOptions } from "./openapi";
import { type Clock, waitFor } from "./wait";

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

/**
 * Route changes are retried while the VPC runs another route task: ours from another operation (each dynamic
 * resource runs on its own), or the CCM's, which writes the same table. docs/upstream.md#vpc-route-tasks.
 */
export const ROUTE_TASK_RETRY: RetryOptions = {
    retryableCodes: [...codesOf("conflict"), ...codesOf("retry-later")], maxAttempts: 30, totalTimeoutMs: 300_000, baseDelayMs: 1000, maxDelayMs: 10_000,
};

/** DeleteRouteEntries takes up to 50 entries per call. */
const ENTRIES_PER_CALL = 50;

/** Route changes of this process, one after another per route table (plain object: see errors.ts). */
const routeTableQueues: Record<string, Promise<unknown>> = {};

/** Runs `work` after every earlier route change of this process on the same table has ended. */
function onRouteTable<T>(routeTableId: string, work: () => Promise<T>): Promise<T> {
    const run = (routeTableQueues[routeTableId] ?? Promise.resolve()).catch(() => undefined).then(work);
    routeTableQueues[routeTableId] = run.catch(() => undefined);
    return run;
}

interface FailedEntry { RouteEntryId?: string; DstCidrBlock?: string; NextHop?: string; FailedCode?: string; FailedMessage?: string }

/** One DeleteRouteEntries call; returns the entries it could not delete now (gone ones count as deleted). */
async function deleteBatch(region: string, routeTableId: string, batch: readonly RouteEntry[], retryBaseMs: number, clock: Clock | undefined): Promise<Array<{ entry: RouteEntry; code: string; message: string }>> {
    const params: Record<string, string> = {};
    batch.forEach((e, k) => {
        params[`RouteEntries.${k + 1}.RouteTableId`] = routeTableId;
        params[`RouteEntries.${k + 1}.RouteEntryId`] = e.routeEntryId;
    });
    const res = await onRouteTable(routeTableId, () => callApi("vpc", "DeleteRouteEntries", params, { region, retry: { ...ROUTE_TASK_RETRY, baseDelayMs: retryBaseMs, clock } }));
    const raw = res.FailedRouteEntries as FailedEntry[] | { FailedRouteEntry?: FailedEntry[] } | undefined;
    const failed = Array.isArray(raw) ? raw : raw?.FailedRouteEntry ?? [];
    return failed.filter((f) => f.FailedCode !== "VPC_ROUTER_ENTRY_NOT_EXIST").map((f) => ({
        entry: batch.find((e) => e.routeEntryId === f.RouteEntryId || (e.destinationCidrBlock === f.DstCidrBlock && e.nextHopId === f.NextHop)) ?? batch[0],
        code: f.FailedCode ?? "", message: f.FailedMessage ?? "",
    }));
}

/**
 * Deletes route entries of one table and waits until they are gone: DeleteRouteEntries (≤ 50 per call),
 * one call at a time per table in this process, retried while the VPC runs another route task; an entry
 * still `Pending` or being changed is tried again, one already deleted or `Deleting` is done once it is no
 * longer listed. `pollMs` is the first pause of the wait and of the conflict retries (default 1000; tests lower it);
 * both wait on `clock` (default the real one; a test's steps the emulator).
 * docs/upstream.md#vpc-route-tasks, #vpc-delete-route.
 * @throws when an entry cannot be deleted (the per-entry code) or is still listed after `timeoutMs`
 */
export async function deleteRouteEntries(region: string, routeTableId: string, entries: readonly RouteEntry[], opts: { timeoutMs?: number; pollMs?: number; clock?: Clock } = {}): Promise<void> {
    let pending = entries.filter((e) => e.status !== "Deleting");
    let waiting = [...entries];
    await waitFor(async () => {
        for (let k = 0; k < pending.length; k += ENTRIES_PER_CALL) {
            for (const f of await deleteBatch(region, routeTableId, pending.slice(k, k + ENTRIES_PER_CALL), Math.min(1000, opts.pollMs ?? 1000), opts.clock)) {
                if (!codesOf("conflict").includes(f.code)) {
                    throw new Error(`VPC refused to delete route ${f.entry.destinationCidrBlock} → ${f.entry.nextHopId} from ${routeTableId}: ${f.code} ${f.message}`);
                }
            }
        }
        const ids = new Set(waiting.map((e) => e.routeEntryId));
        const listed = (await customRouteEntries(region, routeTableId)).filter((e) => ids.has(e.routeEntryId));
        waiting = listed;
        pending = listed.filter((e) => e.status !== "Deleting");
        return listed.length === 0 ? { done: true, value: undefined }
            : { done: false, state: `routes still in ${routeTableId}: ${listed.map((e) => `${e.destinationCidrBlock} → ${e.nextHopId} (${e.status})`).join(", ")}` };
    }, { timeoutMs: opts.timeoutMs ?? 300_000, firstDelayMs: opts.pollMs ?? 300, clock: opts.clock }, (state) => new Error(state));
}
