// A pool attached to a cluster from a second program, in the Pulumi mock graph (mockRuntime): the first program
// builds a Cluster and exports its handle; the second reads it through a StackReference and declares a NodePool
// with it. For tests that take what the attached pool registers into another world (the real control plane).
import * as pulumi from "@pulumi/pulumi";
import { installMocks, type Recorder } from "./mockRuntime";
import type { ClusterConfigInput } from "../src/config";

/** The first program: a Cluster from `config` in `region`; its handle as the stack output holds it (plain values). */
export async function clusterHandleUnderMocks(region: string, config: ClusterConfigInput): Promise<Record<string, unknown>> {
    const recorder = installMocks({ stack: "cluster-program", config: { "alicloud:region": region } });
    const { Cluster } = await import("../src/components/cluster");
    const cluster = new Cluster(config.name, { region, config });
    await recorder.settle();
    return new Promise((resolve) => pulumi.output(cluster.handle).apply((h) => resolve(h as unknown as Record<string, unknown>)));
}

/**
 * The second program: reads the handle from stack `acme/infra/<stack>` and attaches pool `pool` (fixed, `size` 1);
 * `scalingGroupId` names the group the cloud gives it. Returns the recording.
 */
export async function attachedPoolUnderMocks(handle: Record<string, unknown>, pool: string, scalingGroupId?: string): Promise<Recorder> {
    const recorder = installMocks({
        stack: "pool-program", stackOutputs: { "acme/infra/cluster": { cluster: handle } },
        ids: scalingGroupId ? { [`alicloud:ess/scalingGroup:ScalingGroup::${pool}-group`]: scalingGroupId } : {},
    });
    const { NodePool } = await import("../src/components/nodePool");
    const { clusterHandleOf } = await import("../src/components/clusterHandle");
    new NodePool(pool, { cluster: await clusterHandleOf(new pulumi.StackReference("acme/infra/cluster")), pool: { name: pool, instanceType: "ecs.g7.xlarge", size: 1 } });
    await recorder.settle();
    return recorder;
}
