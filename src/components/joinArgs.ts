// What every component that joins nodes (NodePool, ExistingNode) is given: the cluster's config and join
// material, and where the node operations run. Written once, extended by each.
import type * as pulumi from "@pulumi/pulumi";
import type { ClusterConfig } from "../config";
import type { NodeCommandIds } from "../rules";

export interface JoinArgs {
    /** The validated cluster config (region, Kubernetes version, cluster name, image sources). Required. */
    config: ClusterConfig;
    /** API endpoint `host:6443` the nodes join through. Required. */
    apiEndpoint: pulumi.Input<string>;
    /** `sha256:<hex>` CA pin from JoinInfo (secret). Required. */
    caCertHash: pulumi.Input<string>;
    /** Master 0 (kubeadm init ran there). Required. */
    masterInstanceId: pulumi.Input<string>;
    /**
     * Every master, master 0 first: bootstrap tokens and the Kubernetes-side operations of joins and removals
     * run on the first that can run commands, so a removal completes with master 0 stopped. Default `[masterInstanceId]`.
     */
    masterInstanceIds?: pulumi.Input<string[]>;
    /** The cluster's saved commands (NodeCommands `ids`). Required. */
    commands: pulumi.Input<NodeCommandIds>;
    /**
     * Join through the admission service (cloud identity, no token in userdata): `<master private IP>:10443` of
     * every master (src/components/admission.ts). Default: none (the nodes join with bootstrap tokens).
     */
    admissionEndpoints?: pulumi.Input<string[]>;
    /** `sha256:<hex>` of the admission service's key (AdmissionCertificate `pin`). Required with `admissionEndpoints`. */
    admissionPin?: pulumi.Input<string>;
    /** Route table of the pod routes (a route left behind is deleted when a node is removed). Default none. */
    routeTableId?: pulumi.Input<string>;
}
