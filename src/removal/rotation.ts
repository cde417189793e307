/**
 * One round of a pool's rollout, decided from what was read (pure): how many members the pool should have
 * before anything leaves (the surge), and which outdated members may leave now without the pool's Ready nodes
 * falling below `size − maxUnavailable`. Only outdated members are ever chosen; NotReady ones first (their leaving
 * costs no Ready node), then the removal order of victims.ts. With a canary, the rollout's first replacement is one
 * node: while no outdated member has left yet, one node surges and one leaves. An autoscaled pool's round also keeps
 * within `autoscale.min` / `max` ({@link PoolLimits}).
 */
import { chooseVictims, type PoolMember } from "./victims";

/** How far a rollout may go: see src/rules/rollout.ts. */
export interface RolloutBounds {
    maxSurge: number;
    maxUnavailable: number;
    /** Replace one node first (see {@link inCanary}). Default false. */
    canary?: boolean;
}

/** What a round does. */
export type RotationRound =
    | { kind: "done" }
    /**
     * Raise the pool to `members` first (only ever raised; a no-op when it has them), then wait until its Ready nodes
     * are `members` less the outdated NotReady ones (the new nodes are validated Ready before anything leaves), then
     * plan again with `surged`.
     */
    | { kind: "surge"; members: number }
    | { kind: "remove"; victims: PoolMember[] }
    /** Nothing may leave now: why. */
    | { kind: "blocked"; reason: string };

/**
 * Whether a round is the canary's: the rollout has one and no outdated member has left yet (the pool still has as many
 * outdated members as its size). Read from state, so a run that resumes after the canary's replacement goes on at full
 * width, and one that resumes before it replaces the canary first.
 */
export function inCanary(size: number, outdated: number, bounds: RolloutBounds): boolean {
    return !!bounds.canary && outdated >= size;
}

/**
 * An autoscaled pool's bounds (`autoscale.min` / `max`, the autoscaler's `--nodes`): a surge never takes the pool above
 * `max`, and no removal leaves it below `min`. A fixed pool has none.
 */
export interface PoolLimits {
    min: number;
    max: number;
}

/**
 * Members the pool has during a round: its size plus the surge it still needs (no more than the outdated left; one in
 * the canary's round), and never above `limits.max`: at the maximum the surge is 0 (never below `size` either).
 */
export function surgeTarget(size: number, outdated: number, bounds: RolloutBounds, limits?: PoolLimits): number {
    const surge = inCanary(size, outdated, bounds) ? Math.min(bounds.maxSurge, 1) : bounds.maxSurge;
    const target = size + Math.min(surge, outdated);
    return limits ? Math.min(target, Math.max(limits.max, size)) : target;
}

/**
 * What a rollout of a pool with `members` members (`outdated` of them outdated) does next, in words, for the preview:
 * it surges, or (an autoscaled pool at its maximum) removes first within `maxUnavailable`, or pauses; or, resumed with
 * its surge there, removes outdated ones.
 * @param size the pool's size for the rollout; default `members` (a rollout resumed with its surge there has fewer)
 */
export function rolloutPreview(members: number, outdated: number, bounds: RolloutBounds, limits?: PoolLimits, size = members): string {
    if (outdated === 0) return "no node is outdated: nothing to replace";
    const surge = surgeTarget(size, outdated, bounds, limits) - members;
    const head = `${outdated} of ${members} node(s) outdated`;
    const canary = inCanary(size, outdated, bounds) ? " (the canary first)" : " at a time";
    if (surge > 0) return `${head}: surges ${surge} node(s)${canary}${limits ? ` (autoscale.max ${limits.max})` : ""}, then removes outdated ones`;
    if (members > size) return `${head}: resumes the rollout begun at ${size} node(s), its surge there: removes outdated ones`;
    const why = bounds.maxSurge === 0 ? "maxSurge is 0" : `the pool is at autoscale.max (${limits?.max})`;
    if (bounds.maxUnavailable === 0) {
        return `${head}, and ${why}: no node can surge and maxUnavailable is 0, so the rollout pauses before it changes anything; ` +
            "raise autoscale.max or set rollout.maxUnavailable: 1";
    }
    return `${head}, and ${why}: no surge; it removes first, up to ${bounds.maxUnavailable} node(s) at a time (maxUnavailable), then refills the pool`;
}

/**
 * Plans one round. `members` are the group's staying members, each with `outdated` set from its instance's tag.
 * @param surged the pool was already raised to {@link surgeTarget} in this round and its new members waited for
 *   (every round starts with the surge, so a run that resumes after a fault waits for nodes an earlier run launched)
 */
export function planRotationRound(members: ReadonlyArray<PoolMember & { outdated: boolean }>, size: number, bounds: RolloutBounds, surged: boolean,
    limits?: PoolLimits): RotationRound {
    const outdated = members.filter((m) => m.outdated);
    if (outdated.length === 0) return { kind: "done" };
    if (!surged) return { kind: "surge", members: surgeTarget(size, outdated.length, bounds, limits) };
    const isReady = (m: PoolMember) => m.ready && m.nodeName !== null;
    let ready = members.filter(isReady).length;
    const floor = size - bounds.maxUnavailable;
    const victims: PoolMember[] = [];
    // An autoscaled pool never goes below autoscale.min (the autoscaler's bound, and ESS's MinSize).
    const most = Math.min(inCanary(size, outdated.length, bounds) ? 1 : outdated.length, members.length - (limits?.min ?? 0));
    for (const m of chooseVictims(outdated, outdated.length)) {
        if (victims.length >= most) break;
        if (!isReady(m)) {
            victims.push(m);
        } else if (ready - 1 >= floor) {
            victims.push(m);
            ready -= 1;
        }
    }
    if (victims.length > 0) return { kind: "remove", victims };
    const atMax = limits && members.length >= limits.max ? ` (the pool is at autoscale.max ${limits.max}: no node can surge)` : "";
    const reason = most <= 0
        ? `the pool has ${members.length} member(s), autoscale.min is ${limits?.min}: removing an outdated node would go below it${atMax}`
        : `${members.filter(isReady).length} Ready node(s) of ${members.length} member(s); removing an outdated Ready node would leave fewer than ` +
            `size − maxUnavailable = ${floor}${atMax}`;
    return { kind: "blocked", reason };
}
