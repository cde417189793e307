// A pool added to a running cluster from a second program: the cluster's handle is read from its stack through a
// StackReference, and the pool registers itself with the cluster's admission service (its scaling group) and the
// masters' RAM role (a policy naming the group), so its nodes join without a change to the cluster's stack.
import * as pulumi from "@pulumi/pulumi";
import { clusterHandleOf, ExistingNode, NodePool } from "alicloud-kubeadm";

export = async () => {
    const settings = new pulumi.Config();
    // The stack of examples/two-pools, e.g. "acme/two-pools/prod".
    const infra = new pulumi.StackReference(settings.require("clusterStack"));
    const cluster = await clusterHandleOf(infra, "handle");

    // A fixed pool (the cluster's autoscaler scales the pools of the cluster's own config).
    const gpu = new NodePool("gpu", {
        cluster,
        pool: {
            name: "gpu", instanceType: "ecs.gn7i-c8g1.2xlarge", size: 1,
            labels: { "example.com/accelerator": "a10" },
            taints: [{ key: "example.com/gpu", value: "true", effect: "NoSchedule" }],
        },
    });
    // An instance that already runs in the cluster's VPC, joined over Cloud Assistant.
    const batch = new ExistingNode("batch-0", { cluster, node: { instanceId: settings.require("batchInstanceId") } });

    return { gpuScalingGroupId: gpu.scalingGroupId, batchProviderId: batch.providerId };
};
