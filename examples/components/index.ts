// A cluster whose nodes are components rather than entries of the config schema: the Cluster's config holds only
// the control plane, and a baked node image, two pools and an existing node are declared beside it with their own
// typed arguments, attached through the handle the Cluster exports.
import * as pulumi from "@pulumi/pulumi";
import { Cluster, ExistingNode, NodeImage, NodePool } from "alicloud-kubeadm";

const settings = new pulumi.Config();

const cluster = new Cluster("lab", {
    region: "ap-southeast-1",
    config: {
        name: "lab",
        kubernetesVersion: "1.36.3",
        zones: ["ap-southeast-1a", "ap-southeast-1b"],
        controlPlane: { count: 3, publicEndpoint: true },
        network: { apiAllowedCidrs: [settings.require("apiAllowedCidr")] },
    },
});

// The node runtime baked into an image for this cluster's Kubernetes version and image sources.
const image = new NodeImage("lab-workers", { cluster: cluster.handle, instanceType: "ecs.g7.large" });

export const pools = [
    new NodePool("lab-web", { cluster: cluster.handle, pool: { name: "web", instanceType: "ecs.c7.xlarge", size: 3 }, imageId: image.imageId }),
    new NodePool("lab-data", {
        cluster: cluster.handle,
        pool: { name: "data", instanceTypes: ["ecs.g7.2xlarge", "ecs.g6.2xlarge"], size: 2, systemDisk: { size: 120 } },
    }),
].map((p) => p.scalingGroupId);

export const existing = new ExistingNode("lab-build", {
    cluster: cluster.handle,
    node: { instanceId: settings.require("buildInstanceId"), labels: { "example.com/role": "build" } },
}).providerId;
export const kubeconfig = cluster.kubeconfig;
