/**
 * The components used directly: each checks its arguments with the stack config's rules and throws an
 * InputPropertiesError whose message and `errors` name every problem by property path, before it registers
 * anything (not even itself); and takes what a program holds (Outputs, Pulumi secrets, inputs as written, the
 * provider's region) without a TypeError after registering. World: Pulumi mocks.
 */
import * as assert from "node:assert/strict";
import * as pulumi from "@pulumi/pulumi";
import { parseClusterConfig, type ClusterConfig } from "../src/config";
import type { NodeCommandIds } from "../src/rules";
import { installMocks, type Recorder } from "../testing/mockRuntime";

const CA_HASH = `sha256:${"cd".repeat(32)}`;
const TOKEN = "abcdef.0123456789abcdef";

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

describe("components used directly with what a program holds: Outputs, Pulumi secrets, inputs as written", () => {
    let recorder: Recorder;
    let m: {
        ExistingNode: typeof import("../src/components/existingNode").ExistingNode;
        NodePool: typeof import("../src/components/nodePool").NodePool;
    };
    before(async () => {
        recorder = installMocks({ stack: "component-inputs-test" });
        m = { ...await import("../src/components/existingNode"), ...await import("../src/components/nodePool") };
    });
    beforeEach(() => recorder.resources.splice(0));

    const config = (): ClusterConfig => parseClusterConfig({
        name: "dev", kubernetesVersion: "1.36.3", zones: ["cn-hangzhou-h", "cn-hangzhou-i"],
        nodePools: [{ name: "general", instanceType: "ecs.g7.xlarge", size: 2 }],
        existingNodes: [{ instanceId: "i-bp1exampleexample01", mode: "manual", connection: { host: "192.168.16.20", password: "hunter2-secret" } }],
    }, "cn-hangzhou");
    const join = (c: ClusterConfig) => ({
        config: c, apiEndpoint: "192.168.0.10:6443", caCertHash: CA_HASH, masterInstanceId: "i-master0",
        commands: { "list-nodes": "c-list" } as unknown as NodeCommandIds,
    });
    const registered = async () => {
        await recorder.settle();
        return recorder.resources.map((r) => `${r.type} ${r.name}`);
    };

    /** Either it works, or an InputPropertiesError and nothing registered; never a TypeError after registering. */
    async function worksOrRefusesCleanly(create: () => unknown): Promise<void> {
        try {
            create();
        } catch (err) {
            assert.ok(pulumi.InputPropertiesError.isInstance(err) || pulumi.InputPropertyError.isInstance(err), `an input error, got ${String(err)}`);
            assert.deepEqual(await registered(), [], "nothing registered");
            return;
        }
        await registered();
    }

    it("ExistingNode checks `connection` with the config's rules (an empty host is refused, nothing registered)", async () => {
        const c = config();
        let error: unknown;
        try {
            new m.ExistingNode("e-empty-host", { ...join(c), node: { ...c.existingNodes[0], connection: undefined }, token: TOKEN, connection: { host: "" } });
        } catch (err) {
            error = err;
        }
        assert.ok(pulumi.InputPropertiesError.isInstance(error), `an InputPropertiesError, got ${String(error)}`);
        assert.ok(error.errors.some((e) => e.propertyPath === "connection.host"), error.message);
        assert.deepEqual(await registered(), []);
    });

    it("ExistingNode does not drop node.connection in silence: it runs over SSH or says to pass `connection`", async () => {
        const c = config(); // existingNodes[0] has an SSH connection, as parseClusterConfig returns it
        let error: unknown;
        try {
            new m.ExistingNode("e-node-conn", { ...join(c), node: c.existingNodes[0], token: TOKEN, attachCommandId: "c-attach" });
        } catch (err) {
            error = err;
        }
        if (error !== undefined) {
            assert.ok(pulumi.InputPropertiesError.isInstance(error) && /connection/.test(error.message), String(error));
            assert.deepEqual(await registered(), []);
        } else {
            assert.ok((await registered()).some((r) => r.startsWith("command:remote:Command ")),
                "node.connection is set, yet the node would be attached over Cloud Assistant and no SSH command is registered");
        }
    });

    it("ExistingNode with an ExistingNodeInput (README's type for existing nodes: no labels/taints): no TypeError after registering", async () => {
        const c = config();
        await worksOrRefusesCleanly(() => new m.ExistingNode("e-raw", {
            ...join(c), node: { instanceId: "i-bp1exampleexample02", mode: "manual" } as never, token: TOKEN, attachCommandId: "c-attach",
        }));
    });

    it("Cluster given an Output where the config wants a string: an InputPropertiesError with the path, not a DataCloneError", async () => {
        // validateClusterConfig → checkableCopy → structuredClone(raw) throws on any Output/function in the config.
        const { Cluster } = await import("../src/components/cluster");
        let error: unknown;
        try {
            new Cluster("outputs", {
                region: "cn-hangzhou",
                config: { name: "outputs", kubernetesVersion: "1.36.3", zones: ["cn-hangzhou-h"], existingNodes: [{ instanceId: pulumi.output("i-bp1exampleexample04") as never }] },
            });
        } catch (err) {
            error = err;
        }
        assert.ok(pulumi.InputPropertiesError.isInstance(error), `an InputPropertiesError, got ${String(error)}`);
        assert.ok(error.errors.some((e) => e.propertyPath === "existingNodes.0.instanceId"), error.message);
        assert.deepEqual(await registered(), []);
    });

    it("Cluster takes an existing node's SSH key as a Pulumi secret (config.requireSecret), the way a program holds secrets", async () => {
        // configTypes.ts types connection.privateKey/password as plain strings and validation refuses anything else, so a
        // program that holds the key as a secret Output (requireSecret) cannot pass it; it would have to read the secret
        // config in plain text (config.require, which Pulumi warns about) for the Cluster to wrap it again.
        const { Cluster } = await import("../src/components/cluster");
        let error: unknown;
        try {
            new Cluster("sshsecret", {
                region: "cn-hangzhou",
                config: {
                    name: "sshsecret", kubernetesVersion: "1.36.3", zones: ["cn-hangzhou-h"],
                    existingNodes: [{ instanceId: "i-bp1exampleexample03", connection: { host: "192.168.16.20", privateKey: pulumi.secret("-----BEGIN OPENSSH PRIVATE KEY-----") as never } }],
                },
            });
        } catch (err) {
            error = err;
        }
        assert.equal(error, undefined, `a secret privateKey is refused: ${String(error)}`);
        await recorder.settle();
        const ssh = recorder.resources.find((r) => r.type === "command:remote:Command");
        assert.ok(ssh && ssh.secretInputs.some((k) => k.startsWith("connection")), "the SSH command takes the connection, as a secret");
    });

    it("NodePool with a NodePoolInput (no labels/taints/systemDisk): no TypeError after registering", async () => {
        const c = config();
        await worksOrRefusesCleanly(() => new m.NodePool("p-raw", {
            ...join(c), pool: { name: "raw", instanceType: "ecs.g7.xlarge", size: 2 } as never,
            vswitchIds: ["vsw-1"], securityGroupIds: ["sg-1"], imageId: "img",
        }));
    });
});

describe("Cluster used directly with the default alicloud provider", () => {
    it("a Cluster region other than the provider's alicloud:region is refused before anything is registered", async () => {
        // The resources go to the provider's region (cn-hangzhou) while the zones, the dynamic providers' OpenAPI calls
        // and the scripts use args.region: `pulumi up` creates the VPC, then fails on the first vSwitch.
        const recorder = installMocks({ stack: "cluster-region-test", config: { "alicloud:region": "cn-hangzhou" } });
        const { Cluster } = await import("../src/components/cluster");
        let error: unknown;
        try {
            new Cluster("elsewhere", { region: "ap-southeast-1", config: { name: "elsewhere", kubernetesVersion: "1.36.3", zones: ["ap-southeast-1a"] } });
        } catch (err) {
            error = err;
        }
        await recorder.settle();
        assert.ok(pulumi.InputPropertiesError.isInstance(error) && /region/.test(error.message),
            `refused (region vs alicloud:region), got ${String(error)}; registered ${recorder.resources.length} resources`);
        assert.deepEqual(recorder.resources.map((r) => r.name), []);
    });
});
