/**
 * Health repair of a fixed pool (docs/rotation.md#health-repair): which members are not Ready, since when, and
 * whether any may be replaced now. The decision ({@link planHealthRepair}) is pure; {@link repairPool} reads the
 * pool, decides on the listing master's clock, and removes the chosen members through the removal core (drain as far as
 * a NotReady node allows, leave ESS, routes). PoolCapacity refills the pool afterwards, as for any missing member.
 *
 * As Cluster API's MachineHealthCheck does (docs/upstream.md#machine-health-check): a member is unhealthy once its
 * Node's Ready condition has not been True for longer than the timeout, counted from the condition's
 * `lastTransitionTime` (as the API server holds it, never anything else the node says of itself; written by the kubelet
 * (False) or the controller manager (Unknown), each with its own clock, and compared here with the clock of the master
 * that listed the Nodes, read in the same call: never the Pulumi machine's, which may be hours off),
 * or, with no Node or no Ready condition at all, from the instance's creation (ESS's record); and more members not
 * Ready than `maxUnhealthy`, counting those still within the timeout and those missing from the group (a refill that
 * has not come), repairs nothing. Nor does a repair run while no worker Node of the cluster is Ready (an outage, not a
 * bad node), nor touch a member an upgrade or a resize cordoned (its drain mark; each mark is undone only by what set it).
 */
import { waitForIdleGroup } from "../cloud/ess";
import { CONTROL_PLANE_POOL, type HealthRepair } from "../rules";
import { readPool, removeMembers } from "./scaleIn";
import type { NodeInfo } from "../cloud/operations";
import type { RemovalOptions, RemovalReport } from "./types";
import type { PoolMember } from "./victims";

/** A member that is not Ready, as the plan sees it. */
export interface UnhealthyMember {
    member: PoolMember;
    /** Why it counts as not Ready, and since when (for the Pulumi log). */
    reason: string;
    /** Milliseconds it has been so (0 when unknown or in the future). */
    forMs: number;
    /** Past the timeout and its instance runs: it may be replaced. */
    repairable: boolean;
}

/** What one repair does. */
export type HealthPlan =
    /** Every member is Ready. */
    | { kind: "healthy" }
    /** Members are not Ready, none may be replaced now (within the timeout, instance not running, time unknown). */
    | { kind: "wait"; unhealthy: UnhealthyMember[] }
    /** Replace `victims` (each past the timeout with its instance running; never more than `maxUnhealthy`). */
    | { kind: "repair"; victims: PoolMember[]; unhealthy: UnhealthyMember[] }
    /** More members not Ready than `maxUnhealthy`: nothing is replaced; `reason` says so. */
    | { kind: "breaker"; unhealthy: UnhealthyMember[]; reason: string };

/** Milliseconds since `iso` at `now`; undefined when `iso` is not a time. Never negative (a time ahead of the clock is now). */
function elapsed(iso: string | undefined, now: number): number | undefined {
    const t = iso ? Date.parse(iso) : NaN;
    return Number.isNaN(t) ? undefined : Math.max(0, now - t);
}

/** How a member that is not Ready looks to the repair. */
function assess(m: PoolMember, repair: HealthRepair, now: number): UnhealthyMember {
    const timeoutMs = repair.notReadyTimeoutSeconds * 1000;
    // A Node that never posted a Ready condition counts from its instance's creation, as a member with no Node does:
    // otherwise a kubelet that registers and then never reports would be "unknown" forever and never replaced.
    const since = m.nodeName === null || !m.readySince ? m.createdAt : m.readySince;
    const forMs = elapsed(since, now);
    const what = m.nodeName === null ? "no Node registered since its instance was created"
        : m.readySince ? `Node ${m.nodeName} not Ready since its Ready condition last changed` : `Node ${m.nodeName} without a Ready condition since its instance was created`;
    const status = m.instance?.status;
    if (m.heldBy) {
        return { member: m, forMs: forMs ?? 0, repairable: false, reason: `${what}; its Node is cordoned by ${m.heldBy} (left to the step that set the mark)` };
    }
    if (forMs === undefined) {
        return { member: m, forMs: 0, repairable: false, reason: `${what}, at a time not known (left alone)` };
    }
    const minutes = `${Math.floor(forMs / 60000)} min`;
    if (status !== undefined && status !== "Running") {
        return { member: m, forMs, repairable: false, reason: `${what} ${minutes} ago; its instance is ${status} (left alone: only a running instance is repaired)` };
    }
    return { member: m, forMs, repairable: forMs > timeoutMs, reason: `${what} ${minutes} ago` };
}

/**
 * Decides one repair from the members read and the time now (ms since the epoch).
 * A member is not Ready when it has no Node or its Node's Ready condition is not True; it is replaced when that has
 * lasted longer than `notReadyTimeoutSeconds` and its instance runs. When more members than `maxUnhealthy` are not
 * Ready (however long), nothing is: a pool where that many fail at once has a cause no new node mends (the control
 * plane, the network, an image), and replacing them would take its last pods' nodes.
 */
export function planHealthRepair(members: readonly PoolMember[], repair: HealthRepair, now: number, pool: PoolView): HealthPlan {
    const unhealthy = members.filter((m) => !(m.ready && m.nodeName !== null)).map((m) => assess(m, repair, now));
    // Members missing from the group (a repair whose refill failed, a member ESS took out) are not Ready either: as
    // Cluster API counts a Machine whose replacement is not there yet.
    const missing = Math.max(0, pool.size - members.length);
    const notReady = unhealthy.length + missing;
    if (unhealthy.length === 0) return { kind: "healthy" };
    if (notReady > repair.maxUnhealthy) {
        return {
            kind: "breaker", unhealthy,
            reason: `${notReady} of ${Math.max(pool.size, members.length)} member(s) are not Ready${missing > 0 ? ` (${missing} missing from the group)` : ""}, ` +
                `more than healthRepair.maxUnhealthy = ${repair.maxUnhealthy}: that looks like an outage (control plane, network, image), not a bad node, so none is replaced`,
        };
    }
    if (pool.readyWorkers === 0) {
        return {
            kind: "breaker", unhealthy,
            reason: "no worker Node of the cluster is Ready: that looks like an outage (workers cut off from the API server), not a bad node, so none is replaced",
        };
    }
    const victims = unhealthy.filter((u) => u.repairable).map((u) => u.member);
    return victims.length > 0 ? { kind: "repair", victims, unhealthy } : { kind: "wait", unhealthy };
}

/** What the plan knows of the pool and the cluster beyond the members read. */
export interface PoolView {
    /** The pool's size: members below it count as not Ready. */
    size: number;
    /** Ready worker Nodes in the whole cluster (Nodes with a pool label but the masters', this pool's included); 0 stops every repair. */
    readyWorkers: number;
}

/** Ready worker Nodes: those with a pool label other than the masters' (`control-plane`). */
export function readyWorkers(nodes: readonly NodeInfo[]): number {
    return nodes.filter((n) => n.ready && n.pool !== "" && n.pool !== CONTROL_PLANE_POOL).length;
}

/** The pool a repair acts on. */
export interface RepairPool {
    scalingGroupId: string;
    poolName: string;
    /** The pool's spec hash (the members' `outdated`, for the removal's log); default none. */
    specHash?: string;
    /** The pool's size (members below it count as not Ready); default the members read. */
    size?: number;
}

/**
 * One health repair of a fixed pool: waits until no scaling activity runs, reads the members (their Nodes, Ready
 * conditions and instances, and the listing master's clock), plans on that clock, and removes the members to replace through the removal core, which
 * releases their instances (ESS lowers the desired capacity by each; the caller raises it back to the pool's size).
 * The circuit breaker and the members left waiting go to the Pulumi log (`opts.warn`). Idempotent: a removal that
 * stopped midway is found again by the next run (the member is still not Ready, or has no Node any more).
 * @returns the reports of the members removed (none when nothing was)
 * @throws a removal's error, naming the instance, the step and the fix
 */
export async function repairPool(pool: RepairPool, repair: HealthRepair, opts: RemovalOptions): Promise<RemovalReport[]> {
    const log = opts.log ?? (() => undefined);
    const warn = opts.warn ?? log;
    await waitForIdleGroup(opts.region, pool.scalingGroupId, { pollMs: opts.pollIntervalMs, timeoutMs: (opts.activityTimeoutSeconds ?? 1200) * 1000, log, clock: opts.clock });
    const { members, nodes, masterNow } = await readPool(pool, opts);
    if (members.length === 0) return [];
    if (masterNow === undefined) {
        warn(`pool ${pool.poolName}: health repair skipped: the master's list-nodes printed no time (a saved command of an earlier release), ` +
            "and a NotReady time is never measured on this machine's clock. fix: run `pulumi up` again once the saved commands are updated");
        return [];
    }
    const plan = planHealthRepair(members, repair, masterNow, { size: pool.size ?? members.length, readyWorkers: readyWorkers(nodes) });
    const listed = (us: readonly UnhealthyMember[]) => us.map((u) => `${u.member.instanceId} (${u.reason})`).join("; ");
    if (plan.kind === "healthy") return [];
    if (plan.kind === "breaker") {
        warn(`pool ${pool.poolName}: health repair: ${plan.reason}: ${listed(plan.unhealthy)}.\n  fix: find what they share (\`npm run doctor\`); ` +
            "once at most maxUnhealthy are not Ready, `pulumi up` replaces those past the timeout");
        return [];
    }
    const waiting = plan.unhealthy.filter((u) => !u.repairable);
    if (waiting.length > 0) {
        warn(`pool ${pool.poolName}: health repair: not replaced (yet): ${listed(waiting)}; timeout ${repair.notReadyTimeoutSeconds} s`);
    }
    if (plan.kind === "wait") return [];
    log(`pool ${pool.poolName}: health repair: replacing ${listed(plan.unhealthy.filter((u) => u.repairable))}`);
    try {
        return await removeMembers({ scalingGroupId: pool.scalingGroupId, essAction: "release" }, plan.victims, opts);
    } catch (err) {
        throw new Error(`pool ${pool.poolName}: health repair stopped: ${(err as Error).message}`);
    }
}
