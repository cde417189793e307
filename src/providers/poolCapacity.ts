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
 *   to choose even if the capacity dropped behind our back.
 * - `mode: "observe"` (autoscaled pools, where the Cluster Autoscaler owns the capacity): create does
 *   nothing; update lifts protections (a pool switched from fixed) and uncordons survivors; delete still
 *   drains and removes every node of the pool before the group goes.
 *
 * The ScalingGroup resource ignores `desiredCapacity`, `protectedInstances` (and, for fixed pools,
 * `maxSize`) drift, so Pulumi and this resource never fight: lowering MaxSize below the group's size
 * would make ESS release instances without a drain.
 */
import * as pulumi from "@pulumi/pulumi";
import { describeScalingGroups, modifyScalingGroup, scalingActivities, scalingGroupMembers, setInstancesProtection, waitForIdleGroup, type ScalingGroupMember } from "../cloud/ess";
import { poolNodes, providerIdOf, uncordonNode } from "../cloud/operations";
import { clusterAccess, dynamicResourceProps, type ClusterAccessInputs, type ResourceArgs } from "./access";
import { diffInputs, inputDiff } from "./diff";
import { scaleInPool, type RemovalOptions, type RemovalReport } from "../removal";
import { ATTACH_LOG, MAX_SCALING_GROUP_INSTANCES } from "../rules";
import { logInfo, pulumiLog } from "./log";

/** Bump when the provider's behaviour changes: Pulumi cannot see code changes of a dynamic provider. */
export const POOL_CAPACITY_PROVIDER_VERSION = "2";

/** The outputs of a PoolCapacity that are secrets: none (ids, sizes and names only). */
export const POOL_CAPACITY_SECRET_OUTPUTS = [] as const;

export interface PoolCapacityInputs extends ClusterAccessInputs {
    /** ESS scaling group (`asg-…`). */
    scalingGroupId: string;
    /** Pool name: the pool label of its nodes (`operations.ts` poolNodes). */
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
    /** Changes when the provider's code changes. */
    providerVersion?: string;
}

/** The arguments of a PoolCapacity (documented in {@link PoolCapacityInputs}). */
export type PoolCapacityArgs = ResourceArgs<PoolCapacityInputs>;

export interface PoolCapacityOutputs {
    /** Instances of the group that were Ready nodes when the wait ended. */
    readyInstanceIds: string[];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));


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

/** Member states ESS is taking the instance out in: leaving anyway, not counted. */
const LEAVING = ["Removing", "Removing:Wait"];

/** The members that stay (not being taken out). */
async function stayingMembers(region: string, scalingGroupId: string): Promise<ScalingGroupMember[]> {
    return (await scalingGroupMembers(region, scalingGroupId)).filter((m) => !LEAVING.includes(m.lifecycleState));
}

/** Rounds of removal before a shrink gives up on a group that keeps gaining members. */
const SHRINK_ROUNDS = 3;

/**
 * Drains and removes the group's members above max(`size`, `minSize`) through the removal flow, reading the
 * members again after each round: one that appeared meanwhile (a launch already under way, an ESS health
 * replacement, an out-of-band scale-out) goes the same way. Gives up after {@link SHRINK_ROUNDS} rounds.
 */
async function removeSurplus(inputs: PoolCapacityInputs, size: number, minSize: number, opts: RemovalOptions, log: (m: string) => void,
    likelyCause: string, rerun: string): Promise<RemovalReport[]> {
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
        reports.push(...await scaleInPool({ scalingGroupId, poolName, targetSize: size, minSize, essAction: "release" }, opts));
    }
}

/**
 * Brings the group to `size` instances and waits (bounded) until `size` of them are Ready pool nodes.
 * Going by the group's actual members, not the last recorded size: surplus members (a shrink, or an
 * out-of-band scale-out) are drained and removed through the removal flow, which lowers the desired
 * capacity by exactly the members it takes; the members are read again, and a member that appeared
 * meanwhile (an ESS health replacement) goes the same way. Only then is the capacity set — desired and
 * max never below the members actually there, nor the minimum — so ESS never picks a victim itself.
 * Survivors a failed earlier removal left cordoned are uncordoned; finally every member is protected
 * from scale-in (docs/upstream.md#ess-protection), the second guard against ESS choosing a victim.
 * @param log progress for the Pulumi log
 * @throws on a failed scaling activity or when the wait runs out, naming the instances not Ready yet
 */
export async function setPoolCapacity(inputs: PoolCapacityInputs, log: (m: string) => void = () => undefined): Promise<PoolCapacityOutputs> {
    const { region, scalingGroupId, poolName } = inputs;
    const size = inputs.size ?? 0;
    const keep = Math.max(size, inputs.minSize ?? 0);
    const started = Date.now();
    const opts = removalOptions(inputs);
    await removeSurplus(inputs, size, inputs.minSize ?? 0, opts, log, "an out-of-band scale-out?", "`pulumi up`");
    await uncordonSurvivors(inputs, log);
    // Read right before the call: a member that appeared since stays (it is counted), never ESS's victim.
    const present = (await stayingMembers(region, scalingGroupId)).length;
    const desired = Math.max(keep, present);
    const before = await activityIds(region, scalingGroupId);
    await modifyScalingGroup(region, scalingGroupId, { maxSize: Math.max(desired, 1), desiredCapacity: desired });
    log(`pool ${poolName}: ESS group ${scalingGroupId} desired capacity set to ${desired}`);
    let outs: PoolCapacityOutputs;
    try {
        outs = await waitForReadyNodes(inputs, size, started, before, log);
    } catch (err) {
        // A wait that gives up still leaves the members protected: ESS must not pick one if the capacity drops.
        await protectMembers(inputs, true, log).catch(() => undefined);
        throw err;
    }
    await protectMembers(inputs, true, log);
    return outs;
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
        .filter((n) => n.removing && members.some((m) => n.providerId === providerIdOf(inputs.region, m.instanceId)));
    for (const node of marked) {
        if ((await uncordonNode(access, node.name)) === "uncordoned") log(`pool ${inputs.poolName}: uncordoned ${node.name}: it stays in the pool (an earlier removal of it did not finish)`);
    }
}

async function waitForReadyNodes(inputs: PoolCapacityInputs, size: number, started: number, before: ReadonlySet<string>, log: (m: string) => void): Promise<PoolCapacityOutputs> {
    const { region, scalingGroupId, poolName } = inputs;
    const timeoutMs = (inputs.readyTimeoutSeconds ?? 1200) * 1000;
    const pollMs = (inputs.pollSeconds ?? 15) * 1000;
    const access = clusterAccess(inputs);
    let last = "";
    for (;;) {
        const members = (await stayingMembers(region, scalingGroupId)).map((m) => m.instanceId);
        const nodes = await poolNodes(access, poolName);
        const readyIds = new Set(nodes.filter((n) => n.ready).map((n) => n.providerId));
        const ready = members.filter((id) => readyIds.has(providerIdOf(region, id)));
        const progress = `pool ${poolName}: waiting for ${ready.length}/${size} nodes Ready (${members.length} instance(s) in ${scalingGroupId})`;
        if (ready.length >= size) {
            log(`pool ${poolName}: ${ready.length}/${size} nodes Ready`);
            return { readyInstanceIds: ready.slice().sort() };
        }
        const failure = await failedActivity(region, scalingGroupId, before);
        if (failure) {
            throw new Error(`pool ${poolName}: ESS could not scale ${scalingGroupId} out: ${failure}\n  fix: for no stock, add instance types ` +
                "(`instanceTypes`) or zones; for quota, raise it; then run `pulumi up` again (the desired capacity stays set).");
        }
        if (Date.now() - started + pollMs > timeoutMs) {
            const missing = members.filter((id) => !readyIds.has(providerIdOf(region, id)));
            throw new Error(`pool ${poolName}: only ${ready.length}/${size} nodes Ready after ${Math.round(timeoutMs / 1000)} s. ` +
                `Not Ready: ${missing.length ? missing.join(", ") : `(ESS has only ${members.length} instance(s))`}.\n` +
                `  fix: look at ${ATTACH_LOG} on those instances (or run \`npm run doctor\`); ` +
                "`pulumi up` again resumes the wait.");
        }
        if (progress !== last) log(progress);
        last = progress;
        await sleep(pollMs);
    }
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
    if (!group || group.maxSize === maxSize) return;
    if (maxSize < group.maxSize) {
        await waitForIdleGroup(region, scalingGroupId, { pollMs: inputs.pollIntervalMs, log });
        const present = (await stayingMembers(region, scalingGroupId)).length;
        if (present > maxSize) {
            await modifyScalingGroup(region, scalingGroupId, { maxSize: present, desiredCapacity: Math.max(present, inputs.minSize ?? 0) });
            log(`pool ${poolName}: ${present} member(s), maximum now ${maxSize}: draining and removing the surplus before ESS sees the lower maximum`);
            // In rounds, as a shrink: a member that appears meanwhile (a health replacement) is removed the same way.
            await removeSurplus(inputs, maxSize, Math.min(inputs.minSize ?? 0, maxSize), removalOptions(inputs), log, "the Cluster Autoscaler, a health replacement?", "`pulumi up`");
        }
    }
    await modifyScalingGroup(region, scalingGroupId, { maxSize });
    log(`pool ${poolName}: ESS group ${scalingGroupId} maximum set to ${maxSize}`);
}

/**
 * Before the group is deleted: MinSize 0 (so ESS accepts removing every member) and MaxSize at the
 * current capacity (so the Cluster Autoscaler cannot add a node that would then be released undrained
 * with the group), then every node drained and removed through the removal flow. A group already gone is fine.
 */
export async function drainPool(inputs: PoolCapacityInputs, opts: RemovalOptions = removalOptions(inputs)): Promise<RemovalReport[]> {
    const group = (await describeScalingGroups(inputs.region, [inputs.scalingGroupId])).get(inputs.scalingGroupId);
    if (!group) {
        (opts.warn ?? (() => undefined))(`pool ${inputs.poolName}: ESS group ${inputs.scalingGroupId} is already gone; nothing to drain`);
        return [];
    }
    await modifyScalingGroup(inputs.region, inputs.scalingGroupId, { minSize: 0, maxSize: Math.max(group.totalCapacity, group.desiredCapacity, 1) });
    return removeSurplus(inputs, 0, 0, opts, opts.log ?? (() => undefined), "the Cluster Autoscaler, a scaling rule?", "`pulumi destroy` / `pulumi up`");
}

type State = PoolCapacityInputs & PoolCapacityOutputs;

/**
 * Only a different group is a replacement (which must drain the old group before its nodes go): switching a pool
 * between fixed and autoscaled (mode) is an update, never a delete that would drain every node of the pool, and so
 * is a new command id (a changed script).
 */
const POOL_CAPACITY_DIFF = inputDiff<PoolCapacityInputs>()({
    replace: ["scalingGroupId", "region"],
    update: ["mode", "size", "minSize", "maxSize", "poolName", "masterInstanceId", "masterInstanceIds", "commands", "routeTableId", "podCidr",
        "readyTimeoutSeconds", "pollSeconds", "pollIntervalMs", "drainTimeoutSeconds", "providerVersion"],
    ignore: [],
});

export const poolCapacityProvider: pulumi.dynamic.ResourceProvider = {
    async check(_olds: PoolCapacityInputs, news: PoolCapacityInputs) {
        const failures = [];
        if ((news.mode ?? "fixed") === "fixed" && !(Number.isInteger(news.size ?? 0) && (news.size ?? 0) >= 0 && (news.size ?? 0) <= MAX_SCALING_GROUP_INSTANCES)) {
            failures.push({ property: "size", reason: `must be an integer in 0..${MAX_SCALING_GROUP_INSTANCES}, got ${news.size}` });
        }
        return { inputs: news, failures };
    },
    async create(inputs: PoolCapacityInputs) {
        const outs = (inputs.mode ?? "fixed") === "observe" ? { readyInstanceIds: [] } : await setPoolCapacity(inputs, logInfo);
        return { id: `${inputs.scalingGroupId}/capacity`, outs: { ...inputs, ...outs } };
    },
    async diff(_id: string, olds: State, news: PoolCapacityInputs) {
        return { ...diffInputs(POOL_CAPACITY_DIFF, olds, news), deleteBeforeReplace: true };
    },
    async update(_id: string, olds: State, news: PoolCapacityInputs) {
        if ((news.mode ?? "fixed") === "observe") {
            // Switched from fixed: the Cluster Autoscaler owns the pool now, and its RemoveInstances must not meet
            // a member this resource protected. An autoscaled pool's protections otherwise are the user's.
            if ((olds.mode ?? "fixed") === "fixed") await protectMembers(news, false, logInfo);
            await setMaxSize(news, logInfo);
            await uncordonSurvivors(news, logInfo);
            return { outs: { ...news, readyInstanceIds: [] } };
        }
        return { outs: { ...news, ...(await setPoolCapacity(news, logInfo)) } };
    },
    async delete(_id: string, props: State) {
        await drainPool(props);
    },
};

/** The desired capacity of an ESS node pool, with Ready-node waits and drained scale-in. */
export class PoolCapacity extends pulumi.dynamic.Resource {
    /** Group instances that were Ready nodes when the last create/update finished. */
    declare readonly readyInstanceIds: pulumi.Output<string[]>;

    constructor(name: string, args: PoolCapacityArgs, opts?: pulumi.CustomResourceOptions) {
        super(poolCapacityProvider, name, ...dynamicResourceProps(["readyInstanceIds"], POOL_CAPACITY_PROVIDER_VERSION, args, POOL_CAPACITY_SECRET_OUTPUTS, opts));
    }
}
