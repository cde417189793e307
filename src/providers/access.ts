// What every dynamic resource that runs node operations is given: the region, master 0 (where the
// Kubernetes-side operations run) and the cluster's saved commands. Written once, extended by each.
import type * as pulumi from "@pulumi/pulumi";
import type { NodeCommandIds } from "../rules";

/** The plain inputs a provider receives. */
export interface ClusterAccessInputs {
    /** Region id, e.g. `cn-hangzhou`. */
    region: string;
    /** Master 0: the Kubernetes-side operations (kubectl, kubeadm token) run there. */
    masterInstanceId: string;
    /** The cluster's saved commands (the NodeCommands component's `ids`). */
    commands: NodeCommandIds;
}

/** The same, as the arguments of the resource's class. */
export type ClusterAccessArgs = { [K in keyof ClusterAccessInputs]: pulumi.Input<ClusterAccessInputs[K]> };
