/**
 * PoolCapacity: owns the desired capacity of one ESS scaling group (a fixed-size node pool).
 *
 * - create / update: `ModifyScalingGroup(MaxSize, DesiredCapacity)` (ESS 2014-08-28), then a
 *   bounded wait until that many of the group's instances are Ready nodes carrying
 *   `alicloud-kubeadm/pool=<name>` (checked with kubectl on master 0 over Cloud Assistant), with progress
 *   `waiting for 3/5 nodes Ready` in the Pulumi log. A failed ESS scaling activity (e.g. no stock) fails
 *   the wait at once with ESS's message.
 * - shrinking (fewer wanted than the group has) and delete: first handed to the removal flow (`scaleInPool`: drain → reset → delete Node →
 *   ESS RemoveInstances), so ESS never releases an undrained node; then MaxSize follows.
 * - `mode: "observe"` (autoscaled pools, where the Cluster Autoscaler owns the capacity): create and
 *   update do nothing; delete still drains and removes every node of the pool before the group goes.
 *
 * The ScalingGroup resource ignores `desiredCapacity` (and, for fixed pools, `maxSize`) drift, so
 * Pulumi and this resource never fight: lowering MaxSize below the group's size would make ESS release
 * instances without a drain.
 */
import * as pulumi from "@pulumi/pulumi";
import { modifyScalingGroup, scalingActivities, scalingGroupMembers } from "../cloud/ess";
import { OpenApiError } from "../cloud/openapi";
import { listNodes, POOL_LABEL, providerIdOf } from "../cloud/operations";
import type { ClusterAccessArgs, ClusterAccessInputs } from "./access";
import { scaleInPool, type RemovalOptions, type RemovalReport } from "../removal";
import { logInfo, pulumiLog } from "./log";

/** Bump when the provider's behaviour changes: Pulumi cannot see code changes of a dynamic provider. */
export const POOL_CAPACITY_PROVIDER_VERSION = "1";

export interface PoolCapacityInputs extends ClusterAccessInputs {
    /** ESS scaling group (`asg-…`). */
    scalingGroupId: string;
    /** Pool name: nodes carry `alicloud-kubeadm/pool=<poolName>`. */
    poolName: string;
    /** `fixed`: this resource sets the capacity. `observe`: only delete acts (autoscaled pools). Default `fixed`. */
    mode?: "fixed" | "observe";
    /** Nodes wanted (fixed mode). Default 0. */
    size?: number;
    /** The group's MinSize (passed to the removal flow). Default 0. */
    minSize?: number;
    /** Route table with the pod routes, cleaned on removal. Default none. */
    routeTableId?: string;
    /** Bound on the wait for Ready nodes, seconds. Default 1200. */
    readyTimeoutSeconds?: number;
    /** Pause between checks, seconds. Default 15. */
    pollSeconds?: number;
    /** First Cloud Assistant poll delay, ms (≤ 1000). Default 1000; tests lower it. */
    pollIntervalMs?: number;
    /** `kubectl drain --timeout` when shrinking, seconds. Default 600. */
    drainTimeoutSeconds?: number;
    /** Changes when the provider's code changes. */
    providerVersion?: string;
}

export interface PoolCapacityOutputs {
    /** Instances of the group that were Ready nodes when the wait ended. */
    readyInstanceIds: string[];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Member instance ids of a scaling group (every page). */
export async function groupInstanceIds(region: string, scalingGroupId: string): Promise<string[]> {
    return (await scalingGroupMembers(region, scalingGroupId)).map((m) => m.instanceId);
}

/** A scaling activity of the group that failed since `sinceMs`, described; undefined when none. */
async function failedActivity(region: string, scalingGroupId: string, sinceMs: number): Promise<string | undefined> {
    const failed = (await scalingActivities(region, scalingGroupId)).find((a) => ["Failed", "Rejected"].includes(a.statusCode) && Date.parse(a.startTime) >= sinceMs - 60_000);
    if (!failed) return undefined;
    const code = failed.errorCode ? `${failed.errorCode}: ` : "";
    return `${failed.scalingActivityId} ${failed.statusCode}: ${code}${failed.message || failed.description}`;
}

/**
 * Brings the group to `size` instances and waits (bounded) until `size` of them are Ready pool nodes.
 * Going by the group's actual members, not the last recorded size: surplus members (a shrink, or an
 * out-of-band scale-out) are drained and removed through the removal flow before ESS is told the new
 * capacity, because ESS itself would release the surplus without a drain.
 * @param log progress for the Pulumi log
 * @throws on a failed scaling activity or when the wait runs out, naming the instances not Ready yet
 */
export async function setPoolCapacity(inputs: PoolCapacityInputs, log: (m: string) => void = () => undefined): Promise<PoolCapacityOutputs> {
    const { region, scalingGroupId, poolName } = inputs;
    const size = inputs.size ?? 0;
    const started = Date.now();
    const members = await groupInstanceIds(region, scalingGroupId);
    if (members.length > size) {
        log(`pool ${poolName}: ${members.length} instance(s) in ${scalingGroupId}, ${size} wanted: draining and removing the surplus`);
        await shrinkPool(inputs, size);
    }
    await modifyScalingGroup(region, scalingGroupId, { maxSize: Math.max(size, 1), desiredCapacity: size });
    log(`pool ${poolName}: ESS group ${scalingGroupId} desired capacity set to ${size}`);
    return waitForReadyNodes(inputs, size, started, log);
}

async function waitForReadyNodes(inputs: PoolCapacityInputs, size: number, started: number, log: (m: string) => void): Promise<PoolCapacityOutputs> {
    const { region, scalingGroupId, poolName } = inputs;
    const timeoutMs = (inputs.readyTimeoutSeconds ?? 1200) * 1000;
    const pollMs = (inputs.pollSeconds ?? 15) * 1000;
    const access = { region, masterInstanceId: inputs.masterInstanceId, commands: inputs.commands, pollIntervalMs: inputs.pollIntervalMs };
    let last = "";
    for (;;) {
        const members = await groupInstanceIds(region, scalingGroupId);
        const nodes = await listNodes(access, `${POOL_LABEL}=${poolName}`);
        const readyIds = new Set(nodes.filter((n) => n.ready).map((n) => n.providerId));
        const ready = members.filter((id) => readyIds.has(providerIdOf(region, id)));
        const progress = `pool ${poolName}: waiting for ${ready.length}/${size} nodes Ready (${members.length} instance(s) in ${scalingGroupId})`;
        if (ready.length >= size) {
            log(`pool ${poolName}: ${ready.length}/${size} nodes Ready`);
            return { readyInstanceIds: ready.slice().sort() };
        }
        const failure = await failedActivity(region, scalingGroupId, started);
        if (failure) {
            throw new Error(`pool ${poolName}: ESS could not scale ${scalingGroupId} out: ${failure}\n  fix: for no stock, add instance types ` +
                "(`instanceTypes`) or zones; for quota, raise it; then run `pulumi up` again (the desired capacity stays set).");
        }
        if (Date.now() - started + pollMs > timeoutMs) {
            const missing = members.filter((id) => !readyIds.has(providerIdOf(region, id)));
            throw new Error(`pool ${poolName}: only ${ready.length}/${size} nodes Ready after ${Math.round(timeoutMs / 1000)} s. ` +
                `Not Ready: ${missing.length ? missing.join(", ") : `(ESS has only ${members.length} instance(s))`}.\n` +
                "  fix: look at /var/log/alicloud-kubeadm/attach-node.log on those instances (or run `npm run doctor`); " +
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
        region: inputs.region, masterInstanceId: inputs.masterInstanceId, commands: inputs.commands, routeTableId: inputs.routeTableId,
        drainTimeoutSeconds: inputs.drainTimeoutSeconds, pollIntervalMs: inputs.pollIntervalMs,
        log: (m) => log.info(m), warn: (m) => log.warn(m),
    };
}

/** Drains and removes nodes down to `targetSize` through the removal flow, then lowers MaxSize to match. */
export async function shrinkPool(inputs: PoolCapacityInputs, targetSize: number, opts: RemovalOptions = removalOptions(inputs)): Promise<RemovalReport[]> {
    const reports = await scaleInPool({ scalingGroupId: inputs.scalingGroupId, poolName: inputs.poolName, targetSize, minSize: inputs.minSize ?? 0, essAction: "release" }, opts);
    if ((inputs.mode ?? "fixed") === "fixed") {
        await modifyScalingGroup(inputs.region, inputs.scalingGroupId, { maxSize: Math.max(targetSize, 1), desiredCapacity: targetSize });
    }
    return reports;
}

/**
 * Before the group is deleted: MinSize 0 (so ESS accepts removing every member) and MaxSize at the
 * current member count (so the Cluster Autoscaler cannot add a node that would then be released
 * undrained with the group), then every node drained and removed through the removal flow. A group
 * already gone is fine.
 */
export async function drainPool(inputs: PoolCapacityInputs, opts: RemovalOptions = removalOptions(inputs)): Promise<RemovalReport[]> {
    try {
        const members = await groupInstanceIds(inputs.region, inputs.scalingGroupId);
        await modifyScalingGroup(inputs.region, inputs.scalingGroupId, { minSize: 0, maxSize: members.length });
    } catch (err) {
        if (err instanceof OpenApiError && err.code === "InvalidScalingGroupId.NotFound") {
            (opts.warn ?? (() => undefined))(`pool ${inputs.poolName}: ESS group ${inputs.scalingGroupId} is already gone; nothing to drain`);
            return [];
        }
        throw err;
    }
    return scaleInPool({ scalingGroupId: inputs.scalingGroupId, poolName: inputs.poolName, targetSize: 0, minSize: 0, essAction: "release" }, opts);
}

type State = PoolCapacityInputs & PoolCapacityOutputs;

export const poolCapacityProvider: pulumi.dynamic.ResourceProvider = {
    async check(_olds: PoolCapacityInputs, news: PoolCapacityInputs) {
        const failures = [];
        if ((news.mode ?? "fixed") === "fixed" && !(Number.isInteger(news.size ?? 0) && (news.size ?? 0) >= 0 && (news.size ?? 0) <= 2000)) {
            failures.push({ property: "size", reason: `must be an integer in 0..2000, got ${news.size}` });
        }
        return { inputs: news, failures };
    },
    async create(inputs: PoolCapacityInputs) {
        const outs = (inputs.mode ?? "fixed") === "observe" ? { readyInstanceIds: [] } : await setPoolCapacity(inputs, logInfo);
        return { id: `${inputs.scalingGroupId}/capacity`, outs: { ...inputs, ...outs } };
    },
    async diff(_id: string, olds: State, news: PoolCapacityInputs) {
        // Only a different group is a replacement: switching a pool between fixed and autoscaled (mode) is an
        // update, never a delete that would drain every node of the pool.
        const replaces = (["scalingGroupId", "region"] as const).filter((k) => (olds[k] ?? "") !== (news[k] ?? ""));
        const keys = ["mode", "size", "minSize", "poolName", "masterInstanceId", "commands", "routeTableId", "readyTimeoutSeconds", "pollSeconds", "pollIntervalMs", "drainTimeoutSeconds", "providerVersion"] as const;
        // A new command id (a changed script) is an update: never a replacement, which would drain the pool.
        const changed = replaces.length > 0 || keys.some((k) => JSON.stringify(olds[k]) !== JSON.stringify(news[k]));
        // Replacing (a new group) must drain the old group before its nodes go.
        return { changes: changed, replaces, deleteBeforeReplace: true };
    },
    async update(_id: string, _olds: State, news: PoolCapacityInputs) {
        if ((news.mode ?? "fixed") === "observe") return { outs: { ...news, readyInstanceIds: [] } };
        return { outs: { ...news, ...(await setPoolCapacity(news, logInfo)) } };
    },
    async delete(_id: string, props: State) {
        await drainPool(props);
    },
};

export interface PoolCapacityArgs extends ClusterAccessArgs {
    /** ESS scaling group id. */
    scalingGroupId: pulumi.Input<string>;
    /** Pool name (node label `alicloud-kubeadm/pool`). */
    poolName: pulumi.Input<string>;
    /** `fixed` (default): owns the capacity. `observe`: only drains the pool on delete (autoscaled pools). */
    mode?: pulumi.Input<"fixed" | "observe">;
    /** Nodes wanted in fixed mode. Default 0. */
    size?: pulumi.Input<number>;
    /** The group's MinSize. Default 0. */
    minSize?: pulumi.Input<number>;
    /** Route table of the pod routes (removal cleans a route left behind). Default none. */
    routeTableId?: pulumi.Input<string | undefined>;
    /** Bound on the wait for Ready nodes. Default 1200 s. */
    readyTimeoutSeconds?: pulumi.Input<number>;
    /** Pause between checks. Default 15 s. */
    pollSeconds?: pulumi.Input<number>;
    /** First Cloud Assistant poll delay. Default 1000 ms. */
    pollIntervalMs?: pulumi.Input<number>;
    /** Drain timeout when shrinking. Default 600 s. */
    drainTimeoutSeconds?: pulumi.Input<number>;
}

/** The desired capacity of an ESS node pool, with Ready-node waits and drained scale-in. */
export class PoolCapacity extends pulumi.dynamic.Resource {
    /** Group instances that were Ready nodes when the last create/update finished. */
    declare readonly readyInstanceIds: pulumi.Output<string[]>;

    constructor(name: string, args: PoolCapacityArgs, opts?: pulumi.CustomResourceOptions) {
        super(poolCapacityProvider, name, { readyInstanceIds: undefined, providerVersion: POOL_CAPACITY_PROVIDER_VERSION, ...args }, opts);
    }
}
