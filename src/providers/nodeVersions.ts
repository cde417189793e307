/**
 * NodeVersions: the worker nodes follow the version the control plane runs (ControlPlaneVersion `runningVersion`), in
 * place, after the pools, the existing nodes and the admission service took that version for new nodes
 * (docs/upgrades.md#nodes): in batches, each drained through the eviction API, upgraded (kubeadm, `kubeadm upgrade
 * node`, kubelet and kubectl), uncordoned and gated on its Node Ready with the new kubelet (src/upgrade/nodes.ts).
 * Decided from the cluster's state: an interrupted `pulumi up` resumes with the nodes not done yet.
 */
import * as pulumi from "@pulumi/pulumi";
import { clusterAccess, dynamicResourceProps, type ClusterAccessInputs, type ResourceArgs } from "./access";
import { diffInputs, inputDiff } from "./diff";
import { withCarriedOutputs } from "./partialUpdate";
import { pulumiLog } from "./log";
import { kubeletVersionsOf, upgradeNodes } from "../upgrade";
import type { Clock } from "../cloud/wait";

export interface NodeVersionsInputs extends ClusterAccessInputs {
    /** The version the control plane runs (ControlPlaneVersion `runningVersion`): the nodes' target. Required. */
    version: string;
    /** The version the config asks for; the saved upgrade command is rendered for it. Nodes move only when `version` equals it. Required. */
    targetVersion: string;
    /** The saved upgrade command (src/shell/upgrade.sh). Required. */
    upgradeCommandId: string;
    /** Nodes upgraded at once. Default 1. */
    batchSize?: number;
    /** Drain timeout per node, seconds. Default 600. */
    drainTimeoutSeconds?: number;
    /** How long the gate after each node waits, seconds. Default 600. */
    gateTimeoutSeconds?: number;
    /** How often the gate looks, seconds. Default 10. */
    gateIntervalSeconds?: number;
    providerVersion?: string;
}

/** 1: the first version. */
export const NODE_VERSIONS_PROVIDER_VERSION = "1";

/** A new running version (or command) moves the nodes; the batch, drain and gate bounds alone are no change. */
const NODE_VERSIONS_DIFF = inputDiff<NodeVersionsInputs>()({
    replace: [],
    update: ["version", "targetVersion", "upgradeCommandId", "region", "masterInstanceId", "masterInstanceIds", "commands", "providerVersion"],
    ignore: ["batchSize", "drainTimeoutSeconds", "gateTimeoutSeconds", "gateIntervalSeconds", "pollIntervalMs"],
});

/**
 * Moves the worker nodes to `inputs.version` in place (when the control plane runs the target); returns every kubelet's version.
 * @param clock what the health gates read the time from and wait on (tests step their own). Default the real one.
 */
export async function reconcileNodeVersions(inputs: NodeVersionsInputs, log: (m: string) => void = () => undefined, clock?: Clock): Promise<{ kubeletVersions: Record<string, string> }> {
    if (inputs.version !== inputs.targetVersion) {
        log(`nodes stay on their version: the control plane runs ${inputs.version}, not the configured ${inputs.targetVersion} yet`);
        return { kubeletVersions: {} };
    }
    const s = await upgradeNodes({
        access: clusterAccess(inputs), target: inputs.version, upgradeCommandId: inputs.upgradeCommandId, batchSize: inputs.batchSize,
        drainTimeoutSeconds: inputs.drainTimeoutSeconds, gate: { timeoutMs: (inputs.gateTimeoutSeconds ?? 600) * 1000, intervalMs: (inputs.gateIntervalSeconds ?? 10) * 1000, clock }, log,
    });
    return { kubeletVersions: kubeletVersionsOf(s) };
}

export const nodeVersionsProvider: pulumi.dynamic.ResourceProvider = withCarriedOutputs({
    async create(inputs: NodeVersionsInputs) {
        return { id: `node-versions-${inputs.masterInstanceId}`, outs: { ...inputs, ...await reconcileNodeVersions(inputs, (m) => pulumiLog().info(m)) } };
    },
    async diff(_id: string, olds: NodeVersionsInputs, news: NodeVersionsInputs) {
        return diffInputs(NODE_VERSIONS_DIFF, olds, news);
    },
    async update(_id: string, _olds: NodeVersionsInputs, news: NodeVersionsInputs) {
        return { outs: { ...news, ...await reconcileNodeVersions(news, (m) => pulumiLog().info(m)) } };
    },
});

export type NodeVersionsArgs = ResourceArgs<NodeVersionsInputs>;

/** The worker nodes at the version the control plane runs, upgraded in place. */
export class NodeVersions extends pulumi.dynamic.Resource {
    /** Each Node's kubelet version after the nodes moved. */
    declare readonly kubeletVersions: pulumi.Output<Record<string, string>>;

    constructor(name: string, args: NodeVersionsArgs, opts?: pulumi.CustomResourceOptions) {
        super(nodeVersionsProvider, name, ...dynamicResourceProps(["kubeletVersions"], NODE_VERSIONS_PROVIDER_VERSION, args, [], opts));
    }
}
