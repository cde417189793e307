// What every component that joins nodes (NodePool, ExistingNode, the attach command) is given: the join context.
// Everything a node needs to join — region, Kubernetes version and image sources (`config`), the endpoint, the CA
// pin, the admission endpoints, and where the node operations run — built once by the Cluster (joinContext) and
// passed down; the node scripts are rendered from it (nodeScriptParams). Written once, extended by each.
import type * as pulumi from "@pulumi/pulumi";
import { nodeJoinConfig, type ClusterConfig, type NodeJoinConfig } from "../config";
import type { NodeCommandIds } from "../rules";

export interface JoinArgs {
    /**
     * What the node scripts are rendered from: the cluster's name, region, Kubernetes version, image sources, baking
     * and pod CIDR. A validated config (`parseClusterConfig(...)`, or the Cluster's slice of it) is taken as it is;
     * anything else is checked first. Required.
     */
    config: NodeJoinConfig;
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
    /**
     * The Kubernetes version nodes install and join with: the version the control plane runs (ControlPlaneVersion
     * `runningVersion`), so no node gets a kubelet newer than an API server while the control plane moves
     * (docs/upgrades.md). Default `config.kubernetesVersion`.
     */
    kubernetesVersion?: pulumi.Input<string>;
}

/** A join slice with the version nodes join with (`version`, else the slice's own). */
export function withNodeVersion<C extends { kubernetesVersion: string }>(config: C, version: string | undefined): C {
    return version ? { ...config, kubernetesVersion: version } : config;
}

/** The join context of a cluster: its validated config's slice and the join material, built once. */
export function joinContext(config: ClusterConfig, material: Omit<JoinArgs, "config">): JoinArgs {
    return { config: nodeJoinConfig(config), ...material };
}
