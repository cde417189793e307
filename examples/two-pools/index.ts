// A cluster with two pools from one config object: a fixed pool and an autoscaled one. It exports the cluster's
// handle, which examples/attached-pool reads from this stack to attach a pool of its own.
import * as pulumi from "@pulumi/pulumi";
import { Cluster } from "alicloud-kubeadm";

const settings = new pulumi.Config();

const cluster = new Cluster("demo", {
    region: "ap-southeast-1",
    config: {
        name: "demo",
        kubernetesVersion: "1.36.3",
        zones: ["ap-southeast-1a", "ap-southeast-1b"],
        controlPlane: { count: 1, publicEndpoint: true },
        // Who may reach the API server from outside the VPC: at least the machine running `pulumi up`.
        network: { apiAllowedCidrs: [settings.require("apiAllowedCidr")] },
        nodePools: [
            { name: "general", instanceType: "ecs.g7.xlarge", size: 2 },
            { name: "elastic", instanceType: "ecs.c7.xlarge", autoscale: { min: 0, max: 10 } },
        ],
    },
});

export const kubeconfig = cluster.kubeconfig;
// What another program attaches through (its CA pin and kubeconfig stay secrets in the stack's outputs).
export const handle = cluster.handle;
