/**
 * The components used directly (issue 17, "Errors for direct use"): each checks its arguments with the stack
 * config's rules and throws an InputPropertiesError whose message and `errors` name every problem by property
 * path, before it registers anything (not even itself).
 */
import * as assert from "node:assert/strict";
import * as pulumi from "@pulumi/pulumi";
import { parseClusterConfig, type ClusterConfig } from "../src/config";
import type { NodeCommandIds } from "../src/rules";
import { installMocks, type Recorder } from "../testing/mockRuntime";

const CA_HASH = `sha256:${"cd".repeat(32)}`;

describe("components used directly: argument errors by property path, nothing registered", () => {
    let recorder: Recorder;
    let m: {
        ControlPlane: typeof import("../src/components/controlPlane").ControlPlane;
        Network: typeof import("../src/components/network").Network;
        NodePool: typeof import("../src/components/nodePool").NodePool;
        PodNetwork: typeof import("../src/components/podNetwork").PodNetwork;
        ClusterAutoscaler: typeof import("../src/components/clusterAutoscaler").ClusterAutoscaler;
        ExistingNode: typeof import("../src/components/existingNode").ExistingNode;
        Cluster: typeof import("../src/components/cluster").Cluster;
    };

    before(async () => {
        recorder = installMocks({ stack: "component-args-test" });
        m = {
            ...await import("../src/components/controlPlane"),
            ...await import("../src/components/network"),
            ...await import("../src/components/nodePool"),
            ...await import("../src/components/podNetwork"),
            ...await import("../src/components/clusterAutoscaler"),
            ...await import("../src/components/existingNode"),
            ...await import("../src/components/cluster"),
        };
    });
    beforeEach(() => recorder.resources.splice(0));

    const config = (): ClusterConfig => parseClusterConfig({
        name: "dev", kubernetesVersion: "1.36.3", zones: ["cn-hangzhou-h", "cn-hangzhou-i"],
        nodePools: [{ name: "general", instanceType: "ecs.g7.xlarge", size: 2 }],
        existingNodes: [{ instanceId: "i-bp1exampleexample01", mode: "manual" }],
    }, "cn-hangzhou");
    const join = (c: ClusterConfig) => ({
        config: c, apiEndpoint: "192.168.0.10:6443", caCertHash: CA_HASH, masterInstanceId: "i-master0",
        commands: { "list-nodes": "c-list" } as unknown as NodeCommandIds,
    });

    /** Runs `create`, expects an InputPropertiesError with exactly `paths`, each in the message too; then nothing registered. */
    async function refused(create: () => unknown, paths: string[], reason?: RegExp): Promise<void> {
        assert.throws(create, (err: unknown) => {
            assert.ok(pulumi.InputPropertiesError.isInstance(err), `an InputPropertiesError, got ${String(err)}`);
            assert.deepEqual(err.errors.map((e) => e.propertyPath).sort(), [...paths].sort());
            for (const e of err.errors) {
                assert.ok(err.message.includes(`- ${e.propertyPath}: ${e.reason}`), `the message lists ${e.propertyPath}:\n${err.message}`);
            }
            if (reason) assert.match(err.message, reason);
            return true;
        });
        await recorder.settle();
        assert.deepEqual(recorder.resources.map((r) => `${r.type} ${r.name}`), []);
    }

    it("ControlPlane: its config by the stack config's rules (paths under config.), and one vSwitch id per zone", async () => {
        const c = config();
        const bad = { ...c, controlPlane: { ...c.controlPlane, count: 2, instanceType: "g7.large" }, zones: ["cn-hangzhou-h", "cn-shanghai-e"] };
        await refused(() => new m.ControlPlane("cp", {
            config: bad, vpcId: "vpc-1", vswitchIds: ["vsw-1"], securityGroupIds: ["sg-1"], apiSecurityGroupId: "sg-2", routeTableId: "vtb-1", imageId: "img",
            userdata: () => undefined, tags: {},
        }), ["config.controlPlane.count", "config.controlPlane.instanceType", "config.zones.1", "vswitchIds"]);
    });

    it("Network: zones against the region, a zone listed twice, a VPC too small to carve, a name with --", async () => {
        const args = { clusterName: "dev", vpcCidr: "192.168.0.0/16", podCidr: "172.16.0.0/16" };
        await refused(() => new m.Network("n1", { ...args, region: "ap-southeast-1", zones: ["ap-southeast-1a", "cn-hangzhou-h", "ap-southeast-1-b"] }),
            ["zones.1", "zones.2"], /"cn-hangzhou-h" is not a zone of region ap-southeast-1 \(it is a zone of cn-hangzhou\)/);
        await refused(() => new m.Network("n2", { ...args, zones: ["cn-hangzhou-h", "cn-hangzhou-h"] }), ["zones.1"], /listed twice \(also zones\.0\)/);
        await refused(() => new m.Network("n2b", { ...args, zones: ["cn-hangzhou-h", "cn-shanghai-e"] }), ["zones.1"], /not a zone of region cn-hangzhou/);
        await refused(() => new m.Network("n3", { ...args, vpcCidr: "10.0.0.0/28", zones: ["cn-hangzhou-h", "cn-hangzhou-i"] }), ["vpcCidr"], /too small to carve/);
        await refused(() => new m.Network("n4", { ...args, clusterName: "my--dev", zones: ["cn-hangzhou-h"] }), ["clusterName"], /consecutive hyphens/);
        await refused(() => new m.Network("n5", { ...args, zones: ["cn-hangzhou-h"], tags: { "acs:x": "y" } }), ["tags.acs:x"]);
    });

    it("NodePool: the pool and the parts of the config it reads", async () => {
        const c = config();
        await refused(() => new m.NodePool("p", {
            ...join({ ...c, name: "my--dev", images: { ...c.images, flannel: "ghcr.io/a..b/flannel:v1" } }),
            pool: { ...c.nodePools[0], name: "existing" }, vswitchIds: ["vsw-1"], securityGroupIds: ["sg-1"], imageId: "img",
        }), ["config.name", "config.images.flannel", "pool.name"]);
    });

    it("PodNetwork: images, a reserved pod CIDR and the region are checked before the component registers itself", async () => {
        await refused(() => new m.PodNetwork("pn", {
            podCidr: "100.96.0.0/16", routeTableId: "vtb-1", region: "cn-hangzhou-h", kubernetesVersion: "1.36.3", images: { flannel: "ghcr.io/flannel-io/flannel" },
        }), ["podCidr", "region", "images.flannel"], /with a tag or digest/);
    });

    it("ClusterAutoscaler: the image repository, the region and pool bounds before the component registers itself", async () => {
        await refused(() => new m.ClusterAutoscaler("ca", {
            region: "cn-hangzhou", kubernetesVersion: "1.36.3", imageRepository: "registry.example.com/ns/cluster-autoscaler:v1.36.1",
            pools: [{ name: "elastic", min: 0, max: 2001, scalingGroupId: "asg-1" }],
        }), ["imageRepository", "pools.0.max"]);
    });

    it("ExistingNode: poolName (a DNS label, not the masters' value), labels and taints over the attach command's parameters", async () => {
        const c = config();
        const node = { ...c.existingNodes[0], labels: Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`example.com/label-${i}`, "v".repeat(60)])) };
        const args = { ...join(c), token: "abcdef.0123456789abcdef", attachCommandId: "c-attach" };
        await refused(() => new m.ExistingNode("e1", { ...args, node, poolName: "Legacy_Nodes" }), ["poolName", "node.labels"]);
        await refused(() => new m.ExistingNode("e2", { ...args, node: c.existingNodes[0], poolName: "control-plane" }), ["poolName"], /pool label value of the masters/);
    });

    it("Cluster: the error's message itself lists every problem with its property path", async () => {
        await refused(() => new m.Cluster("bad", {
            region: "cn-hangzhou",
            config: { name: "bad", kubernetesVersion: "1.36.03", zones: ["cn-hangzhou-h", "cn-hangzhou-h"], tags: { "alicloud-kubeadm/team": "x" } },
        }), ["kubernetesVersion", "zones.1", "tags.alicloud-kubeadm/team"], /^invalid arguments of Cluster \(its config\) \(3 problems\):\n {2}- /);
    });
});
