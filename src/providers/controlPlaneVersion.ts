/**
 * ControlPlaneVersion: the version the cluster runs, read from the cluster, and the resource that moves the control plane
 * to the configured one (docs/upgrades.md). Its outputs are facts read on the masters — the version every API server
 * serves (`runningVersion` is the oldest of them) and every Node's kubelet — never an echo of the config: all node join
 * material and the autoscaler's image take their version from `runningVersion`, so nothing hands a newer kubelet to a
 * node before every API server runs it.
 *
 * - preview (`diff`): when the config asks for another version than the one recorded, the cluster is read and the move
 *   refused before anything changes — a downgrade, a minor skipped, an autoscaler without a release for the target or
 *   pinned to another minor, kubelets outside the skew the target allows, an unhealthy cluster — each at its property
 *   path with the fix; deprecated APIs the target removes are a warning.
 * - `pulumi up` (create, update): the same checks on what the cluster runs now, then src/upgrade/controlPlane.ts: an etcd
 *   backup, then one master at a time with a health gate. Decided from the cluster's state, so an interrupted `pulumi up`
 *   resumes at the next step. The outputs are read again at the end.
 * - `pulumi refresh` (read): the outputs read again.
 */
import * as pulumi from "@pulumi/pulumi";
import { clusterAccess, dynamicResourceProps, type ClusterAccessInputs, type ResourceArgs } from "./access";
import { diffInputs, inputDiff } from "./diff";
import { withCarriedOutputs } from "./partialUpdate";
import { pulumiLog } from "./log";
import { formatProblem, type Problem } from "../rules";
import type { Clock } from "../cloud/wait";
import { apiServerVersionsOf, kubeletVersionsOf, preflight, readClusterStatus, resizeMasters, runningVersionOf, upgradeControlPlane, type ClusterStatus } from "../upgrade";

export interface ControlPlaneVersionInputs extends ClusterAccessInputs {
    /** The version the config asks for (`kubernetesVersion`): the control plane is moved there. Required. */
    targetVersion: string;
    /** The saved upgrade command, rendered for `targetVersion` (src/shell/upgrade.sh). Required. */
    upgradeCommandId: string;
    /** Some pool autoscales: the target needs a Cluster Autoscaler release of its minor. Required. */
    autoscaled: boolean;
    /** `autoscaler.version` when pinned, "" when not. Required. */
    autoscalerVersion: string;
    /**
     * `controlPlane.instanceType`: every master is resized to it one at a time (src/upgrade/instanceType.ts); the masters'
     * ECS instances ignore it after they are created. Default: the masters' types are left as they are.
     */
    instanceType?: string;
    /** Drain timeout per master, seconds. Default 600. */
    drainTimeoutSeconds?: number;
    /** How long the health gate after each master waits, seconds. Default 600. */
    gateTimeoutSeconds?: number;
    /** How often the health gate looks, seconds. Default 10. */
    gateIntervalSeconds?: number;
    providerVersion?: string;
}

/** What the resource reads from the cluster. */
export interface ControlPlaneVersionOutputs {
    /** The version the oldest API server serves: what nodes join with and the autoscaler runs. */
    runningVersion: string;
    /** Each API server (by its master's Node name) → the version it serves. */
    apiServerVersions: Record<string, string>;
    /** Each Node → its kubelet version. */
    kubeletVersions: Record<string, string>;
}

/**
 * 1: the first version. 2: after a master's steps, its static pods restarted by its kubelet and Ready before the health
 * gate and the next master (the saved static-pods operation).
 */
export const CONTROL_PLANE_VERSION_PROVIDER_VERSION = "2";

/**
 * Another target, another command (a new target's) or other masters is an update: it checks and, when the cluster does
 * not run the target, upgrades. The drain and gate bounds and the poll delay alone are no change (read only while
 * upgrading).
 */
const CONTROL_PLANE_VERSION_DIFF = inputDiff<ControlPlaneVersionInputs>()({
    replace: [],
    update: ["targetVersion", "upgradeCommandId", "autoscaled", "autoscalerVersion", "instanceType", "region", "masterInstanceId", "masterInstanceIds", "commands", "providerVersion"],
    ignore: ["drainTimeoutSeconds", "gateTimeoutSeconds", "gateIntervalSeconds", "pollIntervalMs"],
});

/** The refusal `pulumi preview` and `pulumi up` stop with: every problem at its property path. */
export class UpgradeRefused extends Error {
    constructor(public readonly problems: Problem[]) {
        super(`ControlPlaneVersion: the cluster cannot move to the configured version:\n  ${problems.map(formatProblem).join("\n  ")}`);
        this.name = "UpgradeRefused";
    }
}

function outputsOf(s: ClusterStatus): ControlPlaneVersionOutputs {
    return { runningVersion: runningVersionOf(s) ?? "", apiServerVersions: apiServerVersionsOf(s), kubeletVersions: kubeletVersionsOf(s) };
}

const intentOf = (i: ControlPlaneVersionInputs) => ({ target: i.targetVersion, autoscaled: i.autoscaled, autoscalerVersion: i.autoscalerVersion || undefined });

/**
 * Checks, then moves the control plane to `inputs.targetVersion` when it does not run it, then resizes the masters whose
 * instance type is not `inputs.instanceType` — each one master at a time with the health gate; returns what it then runs.
 * @param clock what the health gates and the instance waits read the time from and wait on (tests step their own). Default the real one.
 */
export async function reconcileControlPlaneVersion(inputs: ControlPlaneVersionInputs, log: (m: string) => void = () => undefined,
    warn: (m: string) => void = () => undefined, clock?: Clock): Promise<ControlPlaneVersionOutputs> {
    const access = clusterAccess(inputs);
    const gate = { timeoutMs: (inputs.gateTimeoutSeconds ?? 600) * 1000, intervalMs: (inputs.gateIntervalSeconds ?? 10) * 1000, clock };
    const resize = inputs.instanceType ? { access, instanceType: inputs.instanceType, drainTimeoutSeconds: inputs.drainTimeoutSeconds, gate, log, warn } : undefined;
    // A master an interrupted resize left drained or stopped comes back first (finishing a change already begun): the
    // checks and the version upgrade then start with every master up.
    if (resize) await resizeMasters({ ...resize, interruptedOnly: true });
    const pre = await preflight(access, intentOf(inputs));
    pre.warnings.forEach(warn);
    if (pre.problems.length > 0) throw new UpgradeRefused(pre.problems);
    let status = await upgradeControlPlane({
        access, target: inputs.targetVersion, upgradeCommandId: inputs.upgradeCommandId, drainTimeoutSeconds: inputs.drainTimeoutSeconds, gate, log, warn,
    });
    if (resize) {
        await resizeMasters(resize);
        status = await readClusterStatus(access);
    }
    return outputsOf(status);
}

/**
 * The preview's check: when the target differs from the running version recorded in the state, read the cluster and
 * refuse what the skew policy or its health forbids. A cluster that cannot be read is a warning here (`pulumi up` checks
 * again before it changes anything).
 */
export async function previewCheck(olds: Partial<ControlPlaneVersionInputs & ControlPlaneVersionOutputs>, news: ControlPlaneVersionInputs,
    warn: (m: string) => void = () => undefined): Promise<void> {
    if (!olds.runningVersion || olds.runningVersion === news.targetVersion) return;
    let pre;
    try {
        pre = await preflight(clusterAccess(news), intentOf(news));
    } catch (err) {
        warn(`ControlPlaneVersion: the cluster could not be read at preview (${(err as Error).message.split("\n")[0]}); \`pulumi up\` checks again before it changes anything`);
        return;
    }
    pre.warnings.forEach(warn);
    if (pre.problems.length > 0) throw new UpgradeRefused(pre.problems);
}

export const controlPlaneVersionProvider: pulumi.dynamic.ResourceProvider = withCarriedOutputs({
    async create(inputs: ControlPlaneVersionInputs) {
        const outs = await reconcileControlPlaneVersion(inputs, (m) => pulumiLog().info(m), (m) => pulumiLog().warn(m));
        return { id: `control-plane-version-${inputs.masterInstanceId}`, outs: { ...inputs, ...outs } };
    },
    async diff(_id: string, olds: ControlPlaneVersionInputs & ControlPlaneVersionOutputs, news: ControlPlaneVersionInputs) {
        const d = diffInputs(CONTROL_PLANE_VERSION_DIFF, olds, news);
        if (d.changes) await previewCheck(olds, news, (m) => pulumiLog().warn(m));
        return d;
    },
    async update(_id: string, _olds: ControlPlaneVersionInputs, news: ControlPlaneVersionInputs) {
        const outs = await reconcileControlPlaneVersion(news, (m) => pulumiLog().info(m), (m) => pulumiLog().warn(m));
        return { outs: { ...news, ...outs } };
    },
    async read(id: string, props: ControlPlaneVersionInputs & ControlPlaneVersionOutputs) {
        return { id, props: { ...props, ...outputsOf(await readClusterStatus(clusterAccess(props))) } };
    },
});

export type ControlPlaneVersionArgs = ResourceArgs<ControlPlaneVersionInputs>;

/** The version the cluster runs, read from it; the control plane moved to the configured version one master at a time. */
export class ControlPlaneVersion extends pulumi.dynamic.Resource {
    /** The version the oldest API server serves (node join material and the autoscaler follow it). */
    declare readonly runningVersion: pulumi.Output<string>;
    /** Each API server's version, by its master's Node name. */
    declare readonly apiServerVersions: pulumi.Output<Record<string, string>>;
    /** Each Node's kubelet version. */
    declare readonly kubeletVersions: pulumi.Output<Record<string, string>>;

    constructor(name: string, args: ControlPlaneVersionArgs, opts?: pulumi.CustomResourceOptions) {
        super(controlPlaneVersionProvider, name, ...dynamicResourceProps(["runningVersion", "apiServerVersions", "kubeletVersions"], CONTROL_PLANE_VERSION_PROVIDER_VERSION, args, [], opts));
    }
}
