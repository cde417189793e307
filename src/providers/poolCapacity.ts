/**
 * PoolCapacity: owns the desired capacity of one ESS scaling group (a fixed-size node pool).
 *
 * - create / update: surplus members are first drained and removed through the removal flow
 *   (`scaleInPool`: drain → reset → delete Node → ESS RemoveInstances, which lowers the desired capacity
 *   by exactly the members it takes), so ESS never releases an undrained node; then
 *   `ModifyScalingGroup(MaxSize, DesiredCapacity)` (ESS 2014-08-28), never below the members left; then a
 *   bounded wait until that many of the group's instances are Ready nodes carrying
 *   the pool's label (`node-restriction.kubernetes.io/alicloud-kubeadm-pool=<name>`, set by the admission service, or
 *   on a node joined before it `alicloud-kubeadm/pool=<name>`; checked with kubectl on a master over Cloud Assistant), with progress
 *   `waiting for 3/5 nodes Ready` in the Pulumi log. A failed ESS scaling activity (e.g. no stock) fails
 *   the wait at once with ESS's message. Every member is then protected from scale-in, so ESS has no victim
 *   to choose even if the capacity dropped behind our back. For a fixed pool ModifyScalingGroup only ever raises
 *   the capacity: what leaves, leaves through RemoveInstances of drained members, so no second run or program
 *   sharing the group can leave a member above a capacity this resource lowered.
 * - `mode: "observe"` (autoscaled pools, where the Cluster Autoscaler owns the capacity): create does
 *   nothing; update lifts protections (a pool switched from fixed), sets a changed maximum (a lower one with the
 *   scale-out process suspended, resumed on every exit path, while the members above it are drained and removed),
 *   uncordons survivors and, with `rollout`, replaces outdated members (within the pool's bounds, its current Nodes
 *   held from the autoscaler's scale-down meanwhile); delete still drains and removes every node of the pool before the group goes.
 *
 * The ScalingGroup resource ignores `desiredCapacity`, `protectedInstances` (and, for fixed pools,
 * `maxSize`) drift, so Pulumi and this resource never fight: lowering MaxSize below the group's size
 * would make ESS release instances without a drain.
 */
import * as pulumi from "@pulumi/pulumi";
import { describeScalingGroups, modifyScalingGroup, scaleOutProcess, scalingActivities, scalingGroupMembers, setInstancesProtection, stayingMembers, waitForIdleGroup } from "../cloud/ess";
import { clearOutdatedTaint, holdScaleDown, instanceOfProviderId, nodeOfInstance, poolNodes, taintOutdated, uncordonNode } from "../cloud/operations";
import { describeInstances } from "../cloud/ecs";
import { clusterAccess, dynamicResourceProps, type ClusterAccessInputs, type ResourceArgs } from "./access";
import { diffInputs, inputDiff } from "./diff";
import { planRotationRound, readClusterHealth, readPoolMembers, removeMembers, rolloutPreview, scaleInPool, soak, validateRollout, type PoolLimits, type PoolMember, type RemovalOptions, type RemovalReport } from "../removal";
import { ATTACH_LOG, checkHealthRepair, isOutdated, MAX_SCALING_GROUP_INSTANCES, OUTDATED_TAINT, parseRollout, rolloutWithDefaults, SCALE_DOWN_DISABLED, SPEC_HASH_LENGTH, type HealthRepair, type Rollout } from "../rules";
import { repairPool } from "../removal/health";
import { logInfo, pulumiLog } from "./log";
import { PartialUpdateError } from "./partialUpdate";
import { withPacingLog } from "./pacing";
import { allSettled, SYSTEM_CLOCK, waitFor, type Clock } from "../cloud/wait";

/**
 * Bump when the provider's behaviour changes: Pulumi cannot see code changes of a dynamic provider.
 * 2: the pool label the admission service sets. 3: capacity changes that never let ESS choose (a lower maximum and
 * a pool's deletion with scale-out suspended, a fixed pool's capacity only raised), Nodes matched by provider id or
 * IP, pacing of every cloud call. 4: outdated members (spec hash) removed first by a shrink, and replaced by a rollout.
 * 5: a rollout taints outdated Nodes PreferNoSchedule before it surges, and clears the taint from the Nodes it keeps
 * (saved command `outdated-taint`); a rollout's canary, soak and validation gates (saved command `cluster-validate`);
 * `healthRepair` replaces members NotReady past a timeout; all in the same unreleased version.
 * 6: autoscaled pools (`mode: observe`) roll out too: the spec hash under AUTOSCALED_SPEC_LABEL, a surge within
 * `maxSize`, removals within `minSize`, the current Nodes held from autoscaler scale-down while the rollout runs (the
 * saved command `outdated-taint` holds and releases them); the preview says what the rollout will do.
 * 7: an autoscaled pool's rollout removes its victims beyond the surge keeping the desired capacity (ESS replaces them),
 * and a run resumes with the desired capacity as the size when that is more than the members; a fixed pool's shrink during
 * a rollout keeps the new members not Ready yet as its surge.
 * 8: an autoscaled pool's rollout that stops after it began (a pause, a wait that runs out) leaves where it began (spec,
 * size, and the pool as it left it) in the state, as a partial failure of the update, and the run that resumes it uses
 * that size moved by what changed since (the autoscaler): its own surge is not counted in the size again, even under a
 * spec changed meanwhile. A fixed pool's shrink that no rollout waits on (no `rollout`), and a lowered
 * `maxSize`'s (a rollout under way goes on after it), remove NotReady members before Ready outdated ones.
 */
export const POOL_CAPACITY_PROVIDER_VERSION = "8";

/** The outputs of a PoolCapacity that are secrets: none (ids, sizes and names only). */
export const POOL_CAPACITY_SECRET_OUTPUTS = [] as const;

export interface PoolCapacityInputs extends ClusterAccessInputs {
    /** ESS scaling group (`asg-…`). Required. */
    scalingGroupId: string;
    /** Pool name: the pool label of its nodes (`operations.ts` poolNodes). Required. */
    poolName: string;
    /** `fixed`: this resource sets the capacity. `observe`: only delete acts (autoscaled pools). Default `fixed`. */
    mode?: "fixed" | "observe";
    /** Nodes wanted (fixed mode). Default 0. */
    size?: number;
    /** The group's MinSize (passed to the removal flow). Default 0. */
    minSize?: number;
    /**
     * `observe` mode: the group's MaxSize (the autoscaled pool's maximum). Lowered only after the members above
     * it were drained and removed: ESS would release them undrained. Default: left as it is.
     */
    maxSize?: number;
    /** Route table with the pod routes, cleaned on removal. Default none. */
    routeTableId?: string;
    /** The cluster's pod CIDR: a removal deletes only routes to the instance inside it. Default none (only the route to its Node's podCIDR). */
    podCidr?: string;
    /** Bound on the wait for Ready nodes, seconds. Default 1200. */
    readyTimeoutSeconds?: number;
    /** Pause between checks, seconds. Default 15. */
    pollSeconds?: number;
    /** `kubectl drain --timeout` when shrinking, seconds. Default 600. */
    drainTimeoutSeconds?: number;
    /**
     * The spec hash on the scaling configuration's tags (SPEC_TAG; an autoscaled pool's AUTOSCALED_SPEC_LABEL), which
     * ESS puts on the instances it creates; members whose instance carries another are outdated: removed first by a
     * shrink, and replaced when `rollout` is set. Default none (nothing is outdated: state written before it existed).
     */
    specHash?: string;
    /**
     * Replace outdated members on create and update (fixed pools) or update (autoscaled pools): validate, surge a
     * canary, wait Ready, drain and remove outdated ones, soak and validate between batches; docs/rotation.md. A field
     * left out takes its default (`DEFAULT_ROLLOUT`). Default none: outdated members are only reported in the Pulumi log.
     */
    rollout?: Rollout;
    /**
     * Fixed pools: on create and update, replace members not Ready for longer than `notReadyTimeoutSeconds` whose
     * instance runs (removal flow, then the pool refills), unless more than `maxUnhealthy` are not Ready
     * (src/removal/health.ts, docs/rotation.md#health-repair). Default none: nothing is repaired.
     */
    healthRepair?: HealthRepair;
    /** Changes when the provider's code changes. */
    providerVersion?: string;
}

/** The arguments of a PoolCapacity (documented in {@link PoolCapacityInputs}). */
export type PoolCapacityArgs = ResourceArgs<PoolCapacityInputs>;

export interface PoolCapacityOutputs {
    /** Instances of the group that were Ready nodes when the wait ended. */
    readyInstanceIds: string[];
    /**
     * An autoscaled pool's rollout that a run stopped after it began (a pause, a wait that ran out): what the next run
     * resumes it with. Absent once it ends, and in state written before version 8.
     */
    rolloutStart?: RolloutStart;
}

/**
 * Where an autoscaled pool's rollout began, kept in PoolCapacity's state across the runs that stop before it ends
 * (docs/rotation.md#autoscaled-pools): without it, a resumed run would read the pool's size back from ESS, its own
 * surge included, and surge again on top of it, run after run.
 */
export interface RolloutStart {
    /** The spec it rolls to (a record left by a rollout to another spec is taken over by the rollout to this one). */
    specHash: string;
    /** The pool's size when it began (its Ready floor is this less `maxUnavailable`). */
    size: number;
    /**
     * The pool as the run that stopped left it (its members, or the desired capacity when that is more): what the next
     * run compares the pool with, so that only a change made since (the autoscaler's) moves the size.
     */
    seen: number;
}

/** An autoscaled pool's rollout that stopped after it began: the error that stopped it, and where it began. */
export class RolloutStopped extends Error {
    constructor(readonly stoppedBy: Error, readonly start: RolloutStart) {
        super(stoppedBy.message);
        this.stack = stoppedBy.stack;
    }
}

/** The ids of the group's scaling activities now: those that end later are the ones this run started. */
async function activityIds(region: string, scalingGroupId: string): Promise<Set<string>> {
    return new Set((await scalingActivities(region, scalingGroupId)).map((a) => a.scalingActivityId));
}

/**
 * A scaling activity of the group that failed and was not there before this run set the capacity (an older
 * failure, e.g. before the user added instance types, is history); described, or undefined when none.
 */
async function failedActivity(region: string, scalingGroupId: string, before: ReadonlySet<string>): Promise<string | undefined> {
    const failed = (await scalingActivities(region, scalingGroupId)).find((a) => ["Failed", "Rejected"].includes(a.statusCode) && !before.has(a.scalingActivityId));
    if (!failed) return undefined;
    const code = failed.errorCode ? `${failed.errorCode}: ` : "";
    return `${failed.scalingActivityId} ${failed.statusCode}: ${code}${failed.message || failed.description}`;
}

/**
 * Runs `work` with the group's scale-out process suspended (no member can be added: not by the Cluster Autoscaler,
 * another run, or ESS itself), and resumes it on every exit path; a failure to resume is reported with its fix.
 * @param keepSuspended leave it suspended when `work` succeeds (the group is deleted next)
 */
async function withScaleOutSuspended<T>(inputs: PoolCapacityInputs, log: (m: string) => void, work: () => Promise<T>, keepSuspended = false): Promise<T> {
    const { region, scalingGroupId, poolName } = inputs;
    await scaleOutProcess(region, scalingGroupId, true);
    let result: { value: T } | undefined;
    let failure: unknown;
    try {
        result = { value: await work() };
    } catch (err) {
        failure = err;
    }
    if (!result || !keepSuspended) {
        try {
            await scaleOutProcess(region, scalingGroupId, false);
        } catch (err) {
            const fix = `pool ${poolName}: the scale-out process of ${scalingGroupId} could not be resumed (${(err as Error).message}); ` +
                "resume it in the ESS console (scaling group → processes) or run `pulumi up` again";
            if (failure === undefined) throw new Error(fix);
            log(fix);
        }
    }
    if (!result) throw failure;
    return result.value;
}

/** Rounds of removal before a shrink gives up on a group that keeps gaining members. */
const SHRINK_ROUNDS = 3;

/**
 * Drains and removes the group's members above max(`size`, `minSize`) through the removal flow, reading the
 * members again after each round: one that appeared meanwhile (a launch already under way, an ESS health
 * replacement, an out-of-band scale-out) goes the same way. Gives up after {@link SHRINK_ROUNDS} rounds.
 * @param notReadyFirst NotReady members go before Ready outdated ones (no rollout waits on a new node not Ready yet)
 */
async function removeSurplus(inputs: PoolCapacityInputs, size: number, minSize: number, opts: RemovalOptions, log: (m: string) => void,
    likelyCause: string, rerun: string, notReadyFirst = false): Promise<RemovalReport[]> {
    const { region, scalingGroupId, poolName } = inputs;
    const keep = Math.max(size, minSize);
    const reports: RemovalReport[] = [];
    for (let round = 0; ; round++) {
        await waitForIdleGroup(region, scalingGroupId, { pollMs: opts.pollIntervalMs, log });
        const members = await stayingMembers(region, scalingGroupId);
        if (members.length <= keep) return reports;
        if (round === SHRINK_ROUNDS) {
            throw new Error(`pool ${poolName}: ${scalingGroupId} still has ${members.length} member(s) (${members.map((m) => m.instanceId).join(", ")}) ` +
                `after ${SHRINK_ROUNDS} rounds of removal, ${keep} wanted: something keeps adding members (${likelyCause}).\n  fix: stop it, then run ${rerun} again.`);
        }
        log(`pool ${poolName}: ${members.length} instance(s) in ${scalingGroupId}, ${keep} wanted: draining and removing the surplus`);
        reports.push(...await scaleInPool({ scalingGroupId, poolName, targetSize: size, minSize, essAction: "release", specHash: inputs.specHash, notReadyFirst }, opts));
    }
}

/**
 * Brings the group to `size` instances and waits (bounded) until `size` of them are Ready pool nodes.
 * Going by the group's actual members, not the last recorded size: surplus members (a shrink, or an
 * out-of-band scale-out) are drained and removed through the removal flow, which lowers the desired
 * capacity by exactly the members it takes; the members are read again, and a member that appeared
 * meanwhile (an ESS health replacement) goes the same way. Only then is the capacity set — desired and
 * max never below the members actually there, nor the minimum, and only ever raised ({@link setFixedCapacity}) —
 * so ESS never picks a victim itself.
 * Survivors a failed earlier removal left cordoned are uncordoned; finally every member is protected
 * from scale-in (docs/upstream.md#ess-protection), the second guard against ESS choosing a victim.
 * With `healthRepair`, members not Ready past its timeout are replaced first (removed here, refilled with the rest).
 * @param log progress for the Pulumi log
 * @param clock what a rollout's soak and validation and the Ready waits wait on (tests step their own; health repair
 *   reads the time from the masters' clock). Default the system clock.
 * @throws on a failed scaling activity or when the wait runs out, naming the instances not Ready yet
 */
export async function setPoolCapacity(inputs: PoolCapacityInputs, log: (m: string) => void = () => undefined, clock: Clock = SYSTEM_CLOCK): Promise<PoolCapacityOutputs> {
    const { region, scalingGroupId } = inputs;
    const size = inputs.size ?? 0;
    const keep = Math.max(size, inputs.minSize ?? 0);
    const started = clock.now();
    const opts = removalOptions(inputs);
    // Without a rollout, nothing waits on a new node not Ready yet: it goes before a Ready outdated one. With one, its
    // surge is kept ({@link rolloutSurge}) and the outdated go first.
    const noRollout = !inputs.rollout || !inputs.specHash;
    await removeSurplus(inputs, size + await rolloutSurge(inputs, size, opts), inputs.minSize ?? 0, opts, log, "an out-of-band scale-out?", "`pulumi up`", noRollout);
    await uncordonSurvivors(inputs, log);
    if (inputs.healthRepair) await repairPool({ scalingGroupId, poolName: inputs.poolName, specHash: inputs.specHash, size }, inputs.healthRepair, opts);
    await rollOut(inputs, opts, log, clock);
    const before = await activityIds(region, scalingGroupId);
    await setFixedCapacity(inputs, keep, log);
    let outs: PoolCapacityOutputs;
    try {
        outs = await waitForReadyNodes(inputs, size, started, before, log, clock);
    } catch (err) {
        // A wait that gives up still leaves the members protected: ESS must not pick one if the capacity drops.
        await protectMembers(inputs, true, log).catch(() => undefined);
        throw err;
    }
    await protectMembers(inputs, true, log);
    return outs;
}

/**
 * The members above `size` that a rollout under way keeps: its surge (at most `rollout.maxSurge`, and no more than the
 * outdated members), and at least the members made from the spec that are not Ready nodes yet, while members are
 * outdated: a `maxSurge` lowered while the surge was not Ready would otherwise take Ready outdated nodes as surplus in
 * its place (outdated go first), below `size − maxUnavailable`. A run that stopped after the surge (a new node not Ready yet, a
 * drain that paused) is resumed by {@link rollOut}, which waits for the new nodes and removes outdated ones within
 * its floor and with its drain options; taking the surge as surplus instead would remove Ready outdated nodes below
 * `size − maxUnavailable`, run after run while a new node stays NotReady, or drain a blocked node without them.
 */
async function rolloutSurge(inputs: PoolCapacityInputs, size: number, opts: RemovalOptions): Promise<number> {
    const { specHash, rollout } = inputs;
    if (!specHash || !rollout) return 0;
    if ((await stayingMembers(inputs.region, inputs.scalingGroupId)).length <= size) return 0;
    const members = await readPoolMembers({ scalingGroupId: inputs.scalingGroupId, specHash }, opts);
    const outdated = members.filter((m) => m.outdated).length;
    if (outdated === 0) return 0;
    const newNotReady = members.filter((m) => !m.outdated && !(m.ready && m.nodeName !== null)).length;
    return Math.min(members.length - size, Math.max(Math.min(rollout.maxSurge, outdated), newNotReady));
}

/**
 * A pool's rollout (docs/rotation.md): while members are outdated (their instance's spec tag is not `specHash`), round
 * after round: raise the pool to its size plus the surge and wait until the new members are Ready nodes (a new node
 * that never gets Ready stops the rollout there, naming it); then drain and remove, through the removal core, as many
 * outdated members as keep the Ready nodes at `size − maxUnavailable` or more (NotReady ones first). Before each surge
 * the outdated members' Nodes carry {@link OUTDATED_TAINT} (PreferNoSchedule), so the pods the drains evict go to the
 * new nodes; when the rollout ends, or there is none, no Node of the pool keeps it.
 * Its gates (src/removal/rolloutGates.ts): the cluster is validated before the first round, after each surge that
 * launched nodes (the canary's first) and after each batch, which is soaked first; a validation that keeps failing
 * pauses the rollout naming what failed. Everything is read again each round, so a run that stops anywhere is
 * resumed by the next (which soaks first when members made from the spec are there already, then validates). Without `rollout`, outdated members are only reported.
 * An autoscaled pool (`mode: observe`, docs/rotation.md#autoscaled-pools): its size is its members when the run
 * starts; the surge raises the desired capacity, never above `maxSize` (at the maximum the round removes first within
 * `maxUnavailable`, or pauses); no removal goes below `minSize`; and its current Nodes carry the Cluster Autoscaler's
 * scale-down-disabled annotation while the rollout runs, so the autoscaler never scales the surge down.
 */
async function rollOut(inputs: PoolCapacityInputs, opts: RemovalOptions, log: (m: string) => void, clock: Clock, progress: RolloutProgress = {}): Promise<void> {
    const { region, scalingGroupId, poolName, specHash } = inputs;
    if (!specHash) return;
    const autoscaled = inputs.mode === "observe";
    const rollout = inputs.rollout && rolloutWithDefaults(inputs.rollout);
    const gate = {
        poolName, log, clock, timeoutMs: (inputs.readyTimeoutSeconds ?? 1200) * 1000, pollMs: (inputs.pollSeconds ?? 15) * 1000,
        // One reading: the pool (ESS, ECS and two listings) and the cluster's health, read side by side.
        read: async () => {
            const [members, health] = await allSettled([readPoolMembers({ scalingGroupId, specHash }, opts), readClusterHealth(clusterAccess(inputs))]);
            return { members, health };
        },
    };
    const validate = (when: string) => (rollout?.validate ? validateRollout(gate, when) : Promise.resolve());
    let size = inputs.size ?? 0;
    const limits = autoscaled ? await poolLimits(inputs) : undefined;
    let surged = false;
    for (let round = 0; ; round++) {
        await waitForIdleGroup(region, scalingGroupId, { pollMs: opts.pollIntervalMs, log });
        const members = await readPoolMembers({ scalingGroupId, specHash }, opts);
        const outdated = members.filter((m) => m.outdated);
        if (outdated.length === 0 || !rollout) await clearTaint(inputs, log);
        if (outdated.length === 0) {
            // An autoscaled pool's last batch may have gone first (maxUnavailable): ESS replaces it (or, for a run of an
            // earlier version, it is refilled here) to the size it had; the run ends once those are Ready nodes.
            if (autoscaled && round > 0) {
                const before = await activityIds(region, scalingGroupId);
                if (members.length < size) await raiseDesired(inputs, size, log);
                await waitForReadyNodes(inputs, size, clock.now(), before, log, clock);
            }
            if (round > 0) log(`pool ${poolName}: rollout done: every node made from spec ${specHash}`);
            return;
        }
        if (!rollout) {
            log(`pool ${poolName}: ${outdated.length} of ${members.length} node(s) outdated (not made from spec ${specHash}): ` +
                `${outdated.map((m) => m.instanceId).join(", ")}; give the pool a \`rollout\` to replace them (docs/rotation.md)`);
            return;
        }
        if (round === 0) {
            // An autoscaled pool's size is what it has when the run starts: its members, or the desired capacity when
            // that is more (the rollout's removals keep it, so a run stopped after one still knows the size); a run that
            // resumes it takes the size from the record the run before left, moved by what changed since ({@link rolloutStart}).
            if (autoscaled) {
                progress.start = rolloutStart(progress.present ?? await poolPresent(inputs), specHash, limits!, progress.recorded);
                size = progress.start.size;
            }
            log(`pool ${poolName}: rolling out spec ${specHash}: ${outdated.length} of ${members.length} node(s) outdated (maxSurge ${rollout.maxSurge}, ` +
                `maxUnavailable ${rollout.maxUnavailable}${rollout.canary ? ", a canary first" : ""}${limits ? `, autoscale ${limits.min}–${limits.max}` : ""})`);
            // A rollout under way (members made from the spec already) may follow a batch whose soak the run before cut
            // short (stopped, cancelled, failed): soak in full before validating, as after any batch.
            if (outdated.length < members.length) await soak(poolName, rollout.soakSeconds, "resuming a rollout under way", log, clock);
            await validate("before the rollout");
        }
        const plan = planRotationRound(members, size, rollout, surged, limits);
        if (plan.kind === "done") return;
        if (plan.kind === "blocked") {
            throw new Error(`pool ${poolName}: the rollout cannot go on: ${plan.reason}.\n  fix: bring the pool's NotReady nodes back (\`npm run doctor\`), ` +
                `or allow more (\`rollout.maxSurge\` / \`rollout.maxUnavailable\`${limits ? " / `autoscale.max`" : ""}), then run \`pulumi up\` again: it resumes`);
        }
        const current = () => members.flatMap((m) => (m.outdated || m.nodeName === null ? [] : [m.nodeName]));
        if (plan.kind === "surge") {
            const names = outdated.flatMap((m) => (m.nodeName === null ? [] : [m.nodeName]));
            const tainted = await taintOutdated(clusterAccess(inputs), poolName, names);
            if (round === 0) log(`pool ${poolName}: ${tainted} outdated node(s) tainted ${OUTDATED_TAINT}=${poolName}:PreferNoSchedule, so evicted pods go to new nodes`);
            if (autoscaled) await hold(inputs, current(), log);
            const before = await activityIds(region, scalingGroupId);
            if (autoscaled) await raiseDesired(inputs, plan.members, log);
            else await setFixedCapacity(inputs, plan.members, log);
            const notReadyOutdated = outdated.filter((m) => !(m.ready && m.nodeName !== null)).length;
            await waitForReadyNodes(inputs, plan.members - notReadyOutdated, clock.now(), before, log, clock);
            if (autoscaled) {
                // The surge's new Nodes are held as soon as they are Ready, before anything leaves.
                const now = await readPoolMembers({ scalingGroupId, specHash }, opts);
                await hold(inputs, now.flatMap((m) => (m.outdated || m.nodeName === null ? [] : [m.nodeName])), log);
            } else {
                await protectMembers(inputs, true, log);
            }
            if (plan.members > members.length) await validate(`after the surge to ${plan.members} member(s)`);
            surged = true;
            continue;
        }
        log(`pool ${poolName}: replacing outdated node(s) ${plan.victims.map((v) => v.instanceId).join(", ")}`);
        // An autoscaled pool's victims beyond its surge leave with the desired capacity kept (ESS launches their
        // replacements itself): it never drops below the pool's size, so a run stopped before the refill is resumed
        // with the size the rollout started with, never a smaller one (whose floor would be lower).
        const surplus = Math.max(0, members.length - size);
        const replaced = new Set(autoscaled ? plan.victims.slice(surplus).map((v) => v.instanceId) : []);
        await removeOutdated(inputs, plan.victims, { ...opts, drainTimeoutSeconds: rollout.drainTimeoutSeconds }, rollout.onDrainTimeout, log, replaced);
        const batch = `replacing ${plan.victims.length} outdated node(s)`;
        await soak(poolName, rollout.soakSeconds, batch, log, clock);
        await validate(`after ${batch}`);
        surged = false;
    }
}

/**
 * An autoscaled pool's rollout across runs: the record the run before left (`recorded`), the pool before this run changed
 * it (`present`, {@link poolPresent}), and this run's record once it knows its size (`start`).
 */
interface RolloutProgress {
    recorded?: RolloutStart;
    present?: number;
    start?: RolloutStart;
}

/**
 * An autoscaled pool's rollout as a run starts or resumes it, from what ESS shows before the run changes anything
 * (`present`: the members, or the desired capacity when that is more) and the record a run before left. Without a record
 * (a crash, version 7) the size is `present`, within `autoscale.max`. With one, the recorded size grown by what the pool
 * grew since that run stopped (`present − seen`: the autoscaler's scale-up), never lowered by what it lost (that may be
 * the rollout's own NotReady surge, removed by the autoscaler), but never above `present` (so a surge launches no more
 * than `maxSurge`) and within `autoscale.min`–`max`. A record left by a rollout to another spec
 * is taken over (re-keyed): a rollout to a spec that replaced a bad one starts from the pool as the first one began it,
 * not from the first one's surge.
 */
export function rolloutStart(present: number, specHash: string, limits: PoolLimits, recorded?: RolloutStart): RolloutStart {
    const resumed = recorded && Number.isInteger(recorded.size) && Number.isInteger(recorded.seen);
    // Grown since (the autoscaler's scale-up): counted. Shrunk since: never below the recorded size, but never above what
    // ESS shows either — the pool may have lost the rollout's own surge (a NotReady surge node the autoscaler removed
    // lowers the desired capacity too), which must not shrink the size, and so the floor, on every paused run.
    const moved = resumed ? Math.max(limits.min, Math.min(present, Math.max(recorded.size, recorded.size + present - recorded.seen))) : present;
    return { specHash, size: Math.min(moved, limits.max), seen: present };
}

/** An autoscaled pool's bounds: `minSize`, and `maxSize` (the group's MaxSize when not given). */
async function poolLimits(inputs: PoolCapacityInputs): Promise<PoolLimits> {
    const max = inputs.maxSize ?? (await describeScalingGroups(inputs.region, [inputs.scalingGroupId])).get(inputs.scalingGroupId)?.maxSize ?? 0;
    return { min: inputs.minSize ?? 0, max };
}

/**
 * An autoscaled pool's surge: raises the group's desired capacity to `members` (only ever raised, and never above
 * the group's MaxSize, which {@link setMaxSize} set to the pool's maximum); ESS launches, as for an autoscaler's scale-up.
 */
async function raiseDesired(inputs: PoolCapacityInputs, members: number, log: (m: string) => void): Promise<void> {
    const { region, scalingGroupId, poolName } = inputs;
    const group = (await describeScalingGroups(region, [scalingGroupId])).get(scalingGroupId);
    if (!group) throw new Error(`pool ${poolName}: ESS group ${scalingGroupId} does not exist\n  fix: check the pool's scaling group (it was deleted outside Pulumi?), then run \`pulumi up\` again.`);
    const desired = Math.min(members, group.maxSize);
    if (desired <= group.desiredCapacity) return;
    await modifyScalingGroup(region, scalingGroupId, { desiredCapacity: desired });
    log(`pool ${poolName}: ESS group ${scalingGroupId} desired capacity raised to ${desired} (the rollout's surge)`);
}

/** Holds an autoscaled pool's current Nodes from the Cluster Autoscaler's scale-down while its rollout runs. */
async function hold(inputs: PoolCapacityInputs, nodes: readonly string[], log: (m: string) => void): Promise<void> {
    const held = await holdScaleDown(clusterAccess(inputs), inputs.poolName, nodes);
    if (held > 0) log(`pool ${inputs.poolName}: ${held} current node(s) annotated ${SCALE_DOWN_DISABLED}=true while the rollout runs`);
}

/** Removes the rollout's taint and scale-down hold from every Node of the pool that carries them (the rollout is over, or there is none). */
async function clearTaint(inputs: PoolCapacityInputs, log: (m: string) => void): Promise<void> {
    const { cleared, released } = await clearOutdatedTaint(clusterAccess(inputs), inputs.poolName);
    if (cleared > 0) log(`pool ${inputs.poolName}: ${OUTDATED_TAINT} removed from ${cleared} node(s) the pool keeps`);
    if (released > 0) log(`pool ${inputs.poolName}: ${SCALE_DOWN_DISABLED} removed from ${released} node(s): the Cluster Autoscaler may scale them down again`);
}

/**
 * Removes outdated victims through the removal core. A drain that fails pauses the rollout with the removal's error
 * (the node, the step and kubectl's words: the pod that blocked eviction); with `force`, the victims whose drain
 * failed are drained once more deleting their pods instead of evicting them (PodDisruptionBudgets bypassed). The victims in `replaced` leave with the desired capacity kept.
 */
async function removeOutdated(inputs: PoolCapacityInputs, victims: PoolMember[], opts: RemovalOptions, onDrainTimeout: "pause" | "force", log: (m: string) => void,
    replaced: ReadonlySet<string>): Promise<void> {
    const pool = { scalingGroupId: inputs.scalingGroupId, essAction: "release" as const };
    try {
        await removeMembers(pool, victims, opts, replaced);
    } catch (err) {
        const message = (err as Error).message;
        if (onDrainTimeout !== "force" || !/step "drain" failed/.test(message)) {
            throw new Error(`pool ${inputs.poolName}: rollout paused: ${message}\n  The next \`pulumi up\` resumes the rollout where it stopped` +
                (onDrainTimeout === "pause" ? " (or set rollout.onDrainTimeout: force to delete the pods that block a drain)." : "."));
        }
        const left = new Set((await stayingMembers(inputs.region, inputs.scalingGroupId)).map((m) => m.instanceId));
        const again = victims.filter((v) => left.has(v.instanceId));
        log(`pool ${inputs.poolName}: the drain of ${again.map((v) => v.instanceId).join(", ")} failed; onDrainTimeout force: draining again deleting the pods that block it`);
        await removeMembers(pool, again, { ...opts, disableEviction: true }, replaced);
    }
}

/**
 * Sets a fixed pool's desired capacity to max(`keep`, the members there), and MaxSize to fit it; both are only ever
 * raised (ESS launches; it has nothing to choose). A surplus leaves only through RemoveInstances of drained members,
 * which lowers the desired capacity by exactly those. A desired capacity above that (launches ESS could not make,
 * or another run's raise) is left as it is: lowering it while another run or program adds a member would leave
 * that member above the capacity, for ESS to choose, and no suspension of scale-out excludes a second run of this
 * code (each would resume the other's). It comes down as the surplus is drained and removed.
 */
async function setFixedCapacity(inputs: PoolCapacityInputs, keep: number, log: (m: string) => void): Promise<void> {
    const { region, scalingGroupId, poolName } = inputs;
    const group = (await describeScalingGroups(region, [scalingGroupId])).get(scalingGroupId);
    if (!group) throw new Error(`pool ${poolName}: ESS group ${scalingGroupId} does not exist\n  fix: check the pool's scaling group (it was deleted outside Pulumi?), then run \`pulumi up\` again.`);
    const present = (await stayingMembers(region, scalingGroupId)).length;
    const wanted = Math.max(keep, present);
    if (wanted < group.desiredCapacity) {
        log(`pool ${poolName}: ESS group ${scalingGroupId} asks for ${group.desiredCapacity} member(s), more than the ${wanted} wanted (launches it could not make, or ` +
            "another run's): left as it is, since lowering it could let ESS remove a member itself; members beyond the pool's size are drained and removed by the next run");
    }
    // Written only to raise: writing back the value read could undo a raise made since (by another run), below
    // the members it launched. A launch that failed is ESS's to try again (the expected number of instances).
    if (wanted <= group.desiredCapacity && group.maxSize >= Math.max(wanted, 1)) return;
    const desired = Math.max(wanted, group.desiredCapacity);
    await modifyScalingGroup(region, scalingGroupId, { maxSize: Math.max(group.maxSize, desired, 1), desiredCapacity: desired });
    log(`pool ${poolName}: ESS group ${scalingGroupId} desired capacity set to ${desired}`);
}

/**
 * Protects every member in service from scale-in (`protect`: fixed pools), or lifts every protection
 * (autoscaled pools: the Cluster Autoscaler removes members itself, and ESS refuses to remove a protected one).
 */
async function protectMembers(inputs: PoolCapacityInputs, protect: boolean, log: (m: string) => void): Promise<void> {
    const members = await scalingGroupMembers(inputs.region, inputs.scalingGroupId);
    const ids = members.filter((m) => m.lifecycleState === (protect ? "InService" : "Protected")).map((m) => m.instanceId);
    if (ids.length === 0) return;
    await setInstancesProtection(inputs.region, inputs.scalingGroupId, ids, protect);
    log(`pool ${inputs.poolName}: ${protect ? "protected" : "lifted the protection of"} ${ids.length} member(s) ${protect ? "from" : "against"} ESS scale-in`);
}

/**
 * Uncordons the pool's Nodes that a removal marked and cordoned but that stay members (a failed drain, then
 * a size reverted or other victims chosen). A cordon without the mark is somebody else's and is left alone.
 */
async function uncordonSurvivors(inputs: PoolCapacityInputs, log: (m: string) => void): Promise<void> {
    const access = clusterAccess(inputs);
    const members = await stayingMembers(inputs.region, inputs.scalingGroupId);
    const marked = (await poolNodes(access, inputs.poolName))
        .filter((n) => n.removing && members.some((m) => instanceOfProviderId(n.providerId) === m.instanceId));
    for (const node of marked) {
        if ((await uncordonNode(access, node.name)) === "uncordoned") log(`pool ${inputs.poolName}: uncordoned ${node.name}: it stays in the pool (an earlier removal of it did not finish)`);
    }
}

async function waitForReadyNodes(inputs: PoolCapacityInputs, size: number, started: number, before: ReadonlySet<string>, log: (m: string) => void,
    clock: Clock): Promise<PoolCapacityOutputs> {
    const { region, scalingGroupId, poolName } = inputs;
    const timeoutMs = (inputs.readyTimeoutSeconds ?? 1200) * 1000 - (clock.now() - started);
    const pollMs = (inputs.pollSeconds ?? 15) * 1000;
    const access = clusterAccess(inputs);
    let notReady: string[] = [];
    let count = 0;
    const ready = await waitFor(async () => {
        const members = (await stayingMembers(region, scalingGroupId)).map((m) => m.instanceId);
        const nodes = await poolNodes(access, poolName);
        const readyIds = members.filter((id) => nodeOfInstance(nodes, region, { instanceId: id })?.ready);
        notReady = members.filter((id) => !readyIds.includes(id));
        count = members.length;
        if (readyIds.length >= size) return { done: true, value: readyIds };
        const failure = await failedActivity(region, scalingGroupId, before);
        if (failure) {
            throw new Error(`pool ${poolName}: ESS could not scale ${scalingGroupId} out: ${failure}\n  fix: for no stock, add instance types ` +
                "(`instanceTypes`) or zones; for quota, raise it; then run `pulumi up` again (the desired capacity stays set).");
        }
        return { done: false, state: `pool ${poolName}: waiting for ${readyIds.length}/${size} nodes Ready (${members.length} instance(s) in ${scalingGroupId})` };
    }, { timeoutMs, firstDelayMs: pollMs, maxDelayMs: pollMs, factor: 1, log, logEveryMs: Infinity, clock },
    () => new Error(`pool ${poolName}: only ${count - notReady.length}/${size} nodes Ready after ${Math.round(inputs.readyTimeoutSeconds ?? 1200)} s. ` +
        `Not Ready: ${notReady.length ? notReady.join(", ") : `(ESS has only ${count} instance(s))`}.\n` +
        `  fix: look at ${ATTACH_LOG} on those instances (or run \`npm run doctor\`); ` +
        "`pulumi up` again resumes the wait."));
    log(`pool ${poolName}: ${ready.length}/${size} nodes Ready`);
    return { readyInstanceIds: ready.slice().sort() };
}

/** Removal options derived from the inputs. */
function removalOptions(inputs: PoolCapacityInputs): RemovalOptions {
    const log = pulumiLog();
    return {
        region: inputs.region, masterInstanceIds: clusterAccess(inputs).masterInstanceIds, commands: inputs.commands, routeTableId: inputs.routeTableId, podCidr: inputs.podCidr,
        drainTimeoutSeconds: inputs.drainTimeoutSeconds, pollIntervalMs: inputs.pollIntervalMs,
        log: (m) => log.info(m), warn: (m) => log.warn(m),
    };
}

/**
 * Autoscaled pools: sets the group's MaxSize to `maxSize`. A lower maximum is applied in two steps, so ESS
 * never releases a member itself: MaxSize first drops only to the members there (the Cluster Autoscaler
 * cannot add more), the surplus is drained and removed through the removal flow, then MaxSize is set.
 */
async function setMaxSize(inputs: PoolCapacityInputs, log: (m: string) => void): Promise<void> {
    const { region, scalingGroupId, poolName, maxSize } = inputs;
    if (maxSize === undefined) return;
    const group = (await describeScalingGroups(region, [scalingGroupId])).get(scalingGroupId);
    if (!group) return;
    if (maxSize >= group.maxSize) {
        if (maxSize > group.maxSize) await modifyScalingGroup(region, scalingGroupId, { maxSize });
        // A run that died with the scale-out process suspended (a lower maximum half applied) left it so: resume it.
        if (group.suspendedProcesses.includes("ScaleOut")) await scaleOutProcess(region, scalingGroupId, false);
        if (maxSize > group.maxSize) log(`pool ${poolName}: ESS group ${scalingGroupId} maximum set to ${maxSize}`);
        return;
    }
    // ESS removes members above a lowered MaxSize itself, undrained: no member may be added (the Cluster Autoscaler
    // scaling out) between counting them and the change, so the count is made with scale-out suspended.
    await withScaleOutSuspended(inputs, log, async () => {
        await waitForIdleGroup(region, scalingGroupId, { pollMs: inputs.pollIntervalMs, log });
        const present = (await stayingMembers(region, scalingGroupId)).length;
        if (present > maxSize) {
            log(`pool ${poolName}: ${present} member(s), maximum now ${maxSize}: draining and removing the surplus before ESS sees the lower maximum`);
            // In rounds, as a shrink: a member that appears meanwhile (a health replacement) is removed the same way.
            // NotReady members first: a surge node not Ready yet goes before a Ready outdated one (the rollout, if any,
            // goes on after within the new maximum).
            await removeSurplus(inputs, maxSize, Math.min(inputs.minSize ?? 0, maxSize), removalOptions(inputs), log, "a health replacement?", "`pulumi up`", true);
        }
        const left = (await stayingMembers(region, scalingGroupId)).length;
        await modifyScalingGroup(region, scalingGroupId, { maxSize: Math.max(maxSize, left) });
        log(`pool ${poolName}: ESS group ${scalingGroupId} maximum set to ${Math.max(maxSize, left)}`);
    });
}

/**
 * Before the group is deleted: with scale-out suspended (nothing can join a group that is going, undrained),
 * MinSize 0 (so ESS accepts removing every member) and MaxSize at the members counted then, then every node
 * drained and removed through the removal flow. Scale-out stays suspended when the drain succeeds (the group is
 * deleted next) and is resumed when it fails. A group already gone is fine.
 */
export async function drainPool(inputs: PoolCapacityInputs, opts: RemovalOptions = removalOptions(inputs)): Promise<RemovalReport[]> {
    const group = (await describeScalingGroups(inputs.region, [inputs.scalingGroupId])).get(inputs.scalingGroupId);
    const log = opts.log ?? (() => undefined);
    if (!group) {
        (opts.warn ?? (() => undefined))(`pool ${inputs.poolName}: ESS group ${inputs.scalingGroupId} is already gone; nothing to drain`);
        return [];
    }
    return withScaleOutSuspended(inputs, opts.warn ?? log, async () => {
        await waitForIdleGroup(inputs.region, inputs.scalingGroupId, { pollMs: opts.pollIntervalMs, log });
        const present = (await stayingMembers(inputs.region, inputs.scalingGroupId)).length;
        await modifyScalingGroup(inputs.region, inputs.scalingGroupId, { minSize: 0, maxSize: Math.max(present, 1) });
        return removeSurplus(inputs, 0, 0, opts, log, "a health replacement, a scaling rule?", "`pulumi destroy` / `pulumi up`");
    }, true);
}

type State = PoolCapacityInputs & PoolCapacityOutputs;

/**
 * An autoscaled pool's update (`mode: observe`): after a switch from fixed, lifts the protections and the taint a
 * paused fixed rollout left; sets a changed maximum ({@link setMaxSize}); uncordons survivors; then its rollout, when it
 * has one ({@link rollOut}), or only reports outdated members.
 * @param olds `rolloutStart`: where a rollout that a run before stopped began (resumed with that size)
 * @param clock what a rollout's soak and validation wait on (tests step their own). Default the system clock.
 * @throws {@link RolloutStopped} when its rollout stopped after it knew its size (what the state keeps for the next run)
 */
export async function updateObservedPool(olds: Pick<State, "mode" | "rolloutStart">, news: PoolCapacityInputs, log: (m: string) => void = () => undefined,
    clock: Clock = SYSTEM_CLOCK): Promise<void> {
    // Switched from fixed: the Cluster Autoscaler owns the pool now, and its RemoveInstances must not meet
    // a member this resource protected. An autoscaled pool's protections otherwise are the user's.
    if ((olds.mode ?? "fixed") === "fixed") {
        await protectMembers(news, false, log);
        await clearTaint(news, log); // a fixed pool's rollout that paused: its taints stay no longer
    }
    // The pool before this run changes it: a lowered maximum's shrink (below) is this run's, not the autoscaler's.
    const progress: RolloutProgress = { recorded: olds.rolloutStart, present: news.rollout && news.specHash ? await poolPresent(news) : undefined };
    await setMaxSize(news, log);
    await uncordonSurvivors(news, log);
    try {
        await rollOut(news, removalOptions(news), log, clock, progress);
    } catch (err) {
        if (!progress.start) throw err;
        // The pool as this run leaves it (its surge there, or taken away with the victims beyond it). Unread (a failed
        // read), the record stays as the run before left it, or there is none: as after a crash.
        const seen = await poolPresent(news).catch(() => undefined);
        const start = seen === undefined ? progress.recorded : { ...progress.start, seen };
        throw start ? new RolloutStopped(err as Error, start) : err;
    }
}

/** An autoscaled pool as ESS shows it: its members, or the group's desired capacity when that is more (launches under way, victims ESS replaces). */
async function poolPresent(inputs: PoolCapacityInputs): Promise<number> {
    const { region, scalingGroupId } = inputs;
    const [members, groups] = await allSettled([stayingMembers(region, scalingGroupId), describeScalingGroups(region, [scalingGroupId])]);
    return Math.max(members.length, groups.get(scalingGroupId)?.desiredCapacity ?? 0);
}

/**
 * The preview's word on an autoscaled pool's rollout (a read of ESS and ECS only): whether it will surge, remove first
 * at `autoscale.max` within `maxUnavailable`, or pause there ({@link rolloutPreview}), with the size the run will take
 * ({@link rolloutStart}: a rollout a run before stopped resumes with its surge there). A spec hash not known yet (the
 * scaling configuration changes in the same preview) makes every member outdated. Undefined for a fixed pool, a pool
 * without `rollout`, or an empty one.
 * @param recorded where a rollout that a run before stopped began (the state's `rolloutStart`)
 */
export async function previewRollout(inputs: PoolCapacityInputs, recorded?: RolloutStart): Promise<string | undefined> {
    const { region, scalingGroupId, poolName, specHash, rollout } = inputs;
    if (inputs.mode !== "observe" || !rollout || !specHash) return undefined;
    const members = await stayingMembers(region, scalingGroupId);
    if (members.length === 0) return undefined;
    const known = new RegExp(`^[0-9a-f]{${SPEC_HASH_LENGTH}}$`).test(specHash);
    const instances = known ? await describeInstances(region, members.map((m) => m.instanceId)) : undefined;
    const outdated = members.filter((m) => !instances || isOutdated(instances.get(m.instanceId)?.tags, specHash)).length;
    const limits = await poolLimits(inputs);
    const { size } = rolloutStart(await poolPresent(inputs), specHash, limits, recorded);
    return `pool ${poolName}: rollout: ${rolloutPreview(members.length, outdated, rolloutWithDefaults(rollout), limits, size)}`;
}

/**
 * Only a different group is a replacement (which must drain the old group before its nodes go): switching a pool
 * between fixed and autoscaled (mode) is an update, never a delete that would drain every node of the pool, and so
 * is a new command id (a changed script).
 */
const POOL_CAPACITY_DIFF = inputDiff<PoolCapacityInputs>()({
    replace: ["scalingGroupId", "region"],
    update: ["mode", "size", "minSize", "maxSize", "poolName", "masterInstanceId", "masterInstanceIds", "commands", "routeTableId", "podCidr",
        "readyTimeoutSeconds", "pollSeconds", "pollIntervalMs", "drainTimeoutSeconds", "specHash", "rollout", "healthRepair", "providerVersion"],
    ignore: [],
});

export const poolCapacityProvider: pulumi.dynamic.ResourceProvider = withPacingLog({
    async check(_olds: PoolCapacityInputs, news: PoolCapacityInputs) {
        const failures = [];
        if ((news.mode ?? "fixed") === "fixed" && !(Number.isInteger(news.size ?? 0) && (news.size ?? 0) >= 0 && (news.size ?? 0) <= MAX_SCALING_GROUP_INSTANCES)) {
            failures.push({ property: "size", reason: `must be an integer in 0..${MAX_SCALING_GROUP_INSTANCES}, got ${news.size}` });
        }
        if (news.rollout !== undefined) {
            const { maxSurge, maxUnavailable, drainTimeoutSeconds, onDrainTimeout, canary, soakSeconds, validate } = news.rollout;
            // The parser's rules, on the parsed form (durations in seconds).
            parseRollout({ maxSurge, maxUnavailable, onDrainTimeout, canary, validate, drainTimeout: `${drainTimeoutSeconds}s`, ...(soakSeconds === undefined ? {} : { soak: `${soakSeconds}s` }) },
                (path, reason) => failures.push({ property: path ? `rollout.${path}` : "rollout", reason }));
        }
        if (news.healthRepair !== undefined && news.mode === "observe") {
            failures.push({ property: "healthRepair", reason: "health repair is for fixed pools (mode fixed); an autoscaled pool's unready nodes are the Cluster Autoscaler's" });
        } else if (news.healthRepair !== undefined) {
            checkHealthRepair(news.healthRepair, (path, reason) => failures.push({ property: `healthRepair.${path}`, reason }));
        }
        return { inputs: news, failures };
    },
    async create(inputs: PoolCapacityInputs) {
        const outs = (inputs.mode ?? "fixed") === "observe" ? { readyInstanceIds: [] } : await setPoolCapacity(inputs, logInfo);
        return { id: `${inputs.scalingGroupId}/capacity`, outs: { ...inputs, ...outs } };
    },
    async diff(_id: string, olds: State, news: PoolCapacityInputs) {
        const d = diffInputs(POOL_CAPACITY_DIFF, olds, news);
        // A rollout that a run before stopped (its record in the state) is a change still to make, inputs unchanged or not.
        if (olds.rolloutStart) d.changes = true;
        if (d.changes) {
            // What an autoscaled pool's rollout will do, said before `pulumi up` does it; a pause is a warning.
            const said = await previewRollout(news, olds.rolloutStart).catch((err: Error) =>
                `pool ${news.poolName}: the rollout could not be previewed (${err.message.split("\n")[0]}); \`pulumi up\` reads the pool again before it changes anything`);
            if (said && /pauses|could not/.test(said)) pulumiLog().warn(said);
            else if (said) pulumiLog().info(said);
        }
        return { ...d, deleteBeforeReplace: true };
    },
    async update(id: string, olds: State, news: PoolCapacityInputs) {
        if ((news.mode ?? "fixed") === "observe") {
            try {
                await updateObservedPool(olds, news, logInfo);
            } catch (err) {
                // A rollout stopped after it began: a partial update, whose outputs (the new inputs, the server's
                // `__provider` among them, and the record) the engine stores (docs/upstream.md#pulumi-partial-update-pool-capacity).
                throw err instanceof RolloutStopped ? new PartialUpdateError(err, id, { ...news, readyInstanceIds: [], rolloutStart: err.start }, err.message) : err;
            }
            return { outs: { ...news, readyInstanceIds: [] } };
        }
        return { outs: { ...news, ...(await setPoolCapacity(news, logInfo)) } };
    },
    async delete(_id: string, props: State) {
        await drainPool(props);
    },
});

/** The desired capacity of an ESS node pool, with Ready-node waits and drained scale-in. */
export class PoolCapacity extends pulumi.dynamic.Resource {
    /** Group instances that were Ready nodes when the last create/update finished. */
    declare readonly readyInstanceIds: pulumi.Output<string[]>;

    constructor(name: string, args: PoolCapacityArgs, opts?: pulumi.CustomResourceOptions) {
        super(poolCapacityProvider, name, ...dynamicResourceProps(["readyInstanceIds"], POOL_CAPACITY_PROVIDER_VERSION, args, POOL_CAPACITY_SECRET_OUTPUTS, opts));
    }
}
