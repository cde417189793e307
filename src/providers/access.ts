// What every dynamic resource that runs node operations is given: the region, the masters (where the
// Kubernetes-side operations run) and the cluster's saved commands. Written once, extended by each.
import type * as pulumi from "@pulumi/pulumi";
import type { ClusterAccess } from "../cloud/operations";
import type { NodeCommandIds } from "../rules";

/** The plain inputs a provider receives. */
export interface ClusterAccessInputs {
    /** Region id, e.g. `cn-hangzhou`. Required. */
    region: string;
    /** Master 0 (kubeadm init ran there). Required. */
    masterInstanceId: string;
    /**
     * Every master, master 0 first: the Kubernetes-side operations (kubectl, kubeadm token) run on the first
     * that can run commands. Default `[masterInstanceId]` (and for state written before it existed).
     */
    masterInstanceIds?: string[];
    /** The cluster's saved commands (the NodeCommands component's `ids`). Required. */
    commands: NodeCommandIds;
    /** First Cloud Assistant poll delay, ms (≤ 1000). Default 1000; tests lower it. */
    pollIntervalMs?: number;
}

/**
 * The arguments of a dynamic resource's class, derived from its provider's `Inputs` (one doc per field, written
 * there): each may be a Pulumi Input; `providerVersion` is the class's own.
 */
export type ResourceArgs<T> = { [K in keyof Omit<T, "providerVersion">]: pulumi.Input<T[K]> };

/**
 * What a dynamic resource's class registers: its outputs (unknown until its provider answers), its provider's
 * version and its arguments, with the outputs it declares secret itself (whatever its caller passes in).
 */
export function dynamicResourceProps(outputs: readonly string[], providerVersion: string, args: object, secretOutputs: readonly string[],
    opts: pulumi.CustomResourceOptions | undefined): [Record<string, unknown>, pulumi.CustomResourceOptions] {
    return [{ ...Object.fromEntries(outputs.map((o) => [o, undefined])), providerVersion, ...args }, { ...opts, additionalSecretOutputs: [...secretOutputs] }];
}

/** The same, as the arguments of the resource's class. */
export type ClusterAccessArgs = ResourceArgs<ClusterAccessInputs>;

/** Where a provider's operations run: every master known, master 0 first. */
export function clusterAccess(inputs: ClusterAccessInputs): ClusterAccess {
    const masters = inputs.masterInstanceIds?.length ? inputs.masterInstanceIds : [inputs.masterInstanceId];
    return { region: inputs.region, masterInstanceIds: masters, commands: inputs.commands, pollIntervalMs: inputs.pollIntervalMs };
}
