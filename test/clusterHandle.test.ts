// Attaching to a cluster through its handle, in the Pulumi mock graph (testing/mockRuntime: every resource recorded
// with its inputs; nothing runs): a NodePool and an ExistingNode declared beside a Cluster, not in its config, and a
// NodePool of a second program that reads the handle from the Cluster's stack through a StackReference, each
// register with the cluster's admission membership (the ConfigMap the admission service reads) and give the masters'
// role the read of their scaling group; their userdata asks the Cluster's admission endpoints. A pool or node that
// would join through admission without being registered is refused before anything is registered.
import * as assert from "node:assert/strict";
import * as fs from "fs";
import * as path from "path";
import * as pulumi from "@pulumi/pulumi";
import * as YAML from "yaml";
import { installMocks, type RecordedResource, type Recorder } from "../testing/mockRuntime";
import type { ClusterHandle } from "../src/components/clusterHandle";
import { attachedPoolUnderMocks } from "../testing/attachedPool";
import { headerValue } from "./tools";

const DEV = YAML.parse(fs.readFileSync(path.join(__dirname, "..", "stacks", "Pulumi.dev.yaml"), "utf8")).config;
const REGION: string = DEV["alicloud:region"];
const GPU = { name: "gpu", instanceType: "ecs.g7.xlarge", size: 1 };

async function components() {
    return {
        ...(await import("../src/components/cluster")), ...(await import("../src/components/nodePool")),
        ...(await import("../src/components/existingNode")), ...(await import("../src/components/clusterHandle")), ...(await import("../src/components/nodeImage")),
    };
}

function resolved<T>(value: T): Promise<pulumi.Unwrap<T>> {
    return new Promise((resolve) => pulumi.output(value).apply((v) => resolve(v as pulumi.Unwrap<T>)));
}

/** The handle's secrets: the CA pin and the kubeconfig; its names, ids and endpoints stay readable. */
const HANDLE_SECRETS = ["admission.kubeconfig", "join.caCertHash"];

/** The paths of the values in `value` that are secret Outputs (`join.caCertHash`, `placement.vswitchIds[0]`, …), sorted. */
async function secretPaths(value: unknown, at = ""): Promise<string[]> {
    if (pulumi.Output.isInstance(value)) return (await pulumi.isSecret(value)) ? [at] : [];
    if (Array.isArray(value)) return (await Promise.all(value.map((v, k) => secretPaths(v, `${at}[${k}]`)))).flat();
    if (typeof value !== "object" || value === null) return [];
    return (await Promise.all(Object.entries(value).map(([k, v]) => secretPaths(v, at ? `${at}.${k}` : k)))).flat().sort();
}

/** The registration ConfigMap of `name` (kube-system), and the scaling group id it names. */
function registration(recorder: Recorder, name: string): RecordedResource {
    const found = recorder.ofType("kubernetes:core/v1:ConfigMap").filter((r) => (r.rawInputs.metadata as { name: string }).name === name);
    assert.equal(found.length, 1, `one ConfigMap ${name}`);
    return found[0];
}

/** What an attached pool registers, read from the recorded state: the registration, the masters' policy, the userdata. */
function assertPoolAttached(recorder: Recorder, resourceName: string, roleName: unknown, admissionEndpoints: string[]): void {
    const group = recorder.ofType("alicloud:ess/scalingGroup:ScalingGroup").find((r) => r.name === `${resourceName}-group`)!;
    const cm = registration(recorder, "alicloud-kubeadm-admission-pool-gpu");
    assert.deepEqual(cm.rawInputs.metadata, {
        name: "alicloud-kubeadm-admission-pool-gpu", namespace: "kube-system",
        labels: { "alicloud-kubeadm/admission-pool": "true", "alicloud-kubeadm/cluster": "dev" },
    });
    assert.deepEqual(cm.rawInputs.data, { pool: "gpu", scalingGroupId: group.id });
    // Written with the cluster's own kubeconfig, which stays a secret.
    const provider = recorder.ofType("pulumi:providers:kubernetes").find((r) => r.name === `${resourceName}-k8s`)!;
    assert.ok(cm.provider?.includes(`${resourceName}-k8s`), "the registration goes through the pool's provider");
    assert.ok(provider.secretInputs.includes("kubeconfig"));
    // The masters' role may read the group's members, and only this group.
    const policy = recorder.ofType("alicloud:ram/policy:Policy").find((r) => r.name === `${resourceName}-admission-policy`)!;
    const doc = JSON.parse(policy.rawInputs.policyDocument as string) as { Statement: Array<{ Action: string[]; Resource: string[] }> };
    const membership = doc.Statement.find((s) => s.Action.includes("ess:DescribeScalingInstances"))!;
    assert.deepEqual(membership.Resource, [`acs:ess:${REGION}:*:scalinggroup/${group.id}`]);
    const attachment = recorder.ofType("alicloud:ram/rolePolicyAttachment:RolePolicyAttachment").find((r) => r.name === `${resourceName}-admission-policy`)!;
    assert.deepEqual([attachment.rawInputs.roleName, attachment.rawInputs.policyName, attachment.rawInputs.policyType], [roleName, policy.rawInputs.policyName, "Custom"]);
    // Its nodes ask the cluster's admission endpoints (no token).
    const configuration = recorder.ofType("alicloud:ess/scalingConfiguration:ScalingConfiguration").find((r) => r.name === `${resourceName}-config`)!;
    assert.equal(headerValue(configuration.rawInputs.userData as string, "AK_ADMISSION_ENDPOINTS"), admissionEndpoints.join(","));
    assert.equal(recorder.resources.filter((r) => r.name.startsWith(resourceName) && /token/i.test(r.name)).length, 0);
}

describe("attaching a pool, an existing node and a node image to a cluster through its handle (mock graph)", function () {
    this.timeout(120_000);
    let handle: pulumi.Unwrap<ClusterHandle>;

    it("a pool and an existing node declared beside the Cluster register with its admission membership and its masters' role", async () => {
        const recorder = installMocks({ stack: "handle-same-program", config: DEV });
        const { Cluster, NodePool, ExistingNode, NodeImage } = await components();
        const cluster = new Cluster("dev", { region: REGION, config: DEV["alicloud-kubeadm:cluster"] });
        new NodePool("gpu", { cluster: cluster.handle, pool: GPU });
        new ExistingNode("batch", { cluster: cluster.handle, node: { instanceId: "i-bp1batch00000001" } });
        new NodeImage("gpu-image", { cluster: cluster.handle, instanceType: "ecs.g7.xlarge" });
        await recorder.settle();
        handle = await resolved(cluster.handle);
        // The handle as the stack exports it (`export const cluster = myCluster.handle`): which of its values are secret.
        assert.deepEqual(await secretPaths(cluster.handle), HANDLE_SECRETS);

        const role = recorder.ofType("alicloud:ram/role:Role")[0];
        const masters = recorder.ofType("alicloud:ecs/instance:Instance");
        const endpoints = await resolved(cluster.handle.join.admissionEndpoints!);
        assert.equal(endpoints.length, masters.length);
        assertPoolAttached(recorder, "gpu", role.rawInputs.roleName, endpoints);
        const node = registration(recorder, "alicloud-kubeadm-admission-node-i-bp1batch00000001");
        assert.deepEqual(node.rawInputs.data, { instanceId: "i-bp1batch00000001", pool: "existing" });
        assert.equal((node.rawInputs.metadata as { labels: Record<string, string> }).labels["alicloud-kubeadm/admission-pool"], "true", "read with the pools' registrations");
        // The cluster has no manual existing node, so the attached manual node saves its own attach command.
        assert.ok(recorder.ofType("alicloud:ecs/command:Command").some((c) => c.name === "batch-attach"));
        // The image is built for the cluster: its Kubernetes version, from its base image, in its first vSwitch.
        const pipeline = recorder.ofType("alicloud:ecs/ecsImagePipeline:EcsImagePipeline").find((r) => r.name === "gpu-image-pipeline")!;
        const vswitches = recorder.ofType("alicloud:vpc/switch:Switch");
        assert.deepEqual([pipeline.rawInputs.vswitchId, pipeline.rawInputs.baseImage, pipeline.rawInputs.instanceType], [vswitches[0].id, handle.placement.baseImageId, "ecs.g7.xlarge"]);
        assert.match(pipeline.rawInputs.description as string, new RegExp(`Kubernetes v${DEV["alicloud-kubeadm:cluster"].kubernetesVersion}`));
        // The Cluster registers the pools of its config, the attached pool itself: each once.
        assert.deepEqual(recorder.ofType("kubernetes:core/v1:ConfigMap").map((c) => (c.rawInputs.metadata as { name?: string }).name)
            .filter((n) => n?.startsWith("alicloud-kubeadm-admission-pool-")).sort(), ["elastic", "general", "gpu"].map((p) => `alicloud-kubeadm-admission-pool-${p}`));
    });

    it("existing nodes attached through a handle wait for the admission service's DaemonSet; those that may be replaced in place go one at a time, after the Cluster's own", async () => {
        const recorder = installMocks({ stack: "handle-replace-chain", config: DEV });
        const { Cluster, ExistingNode } = await components();
        const config = { ...DEV["alicloud-kubeadm:cluster"], existingNodes: [{ instanceId: "i-bp1own000000001", rollout: "replace" }] };
        const cluster = new Cluster("dev", { region: REGION, config });
        for (const [name, rollout] of [["a", "replace"], ["b", "report"], ["c", "replace"]] as const) {
            new ExistingNode(name, { cluster: cluster.handle, node: { instanceId: `i-bp1${name.repeat(12)}`, rollout } });
        }
        await recorder.settle();
        const memberships = recorder.resources.filter((r) => r.name.endsWith("-membership"));
        const urn = (name: string) => memberships.find((m) => m.name === name)!.urn;
        const waitsFor = (name: string) => memberships.filter((m) => memberships.find((n) => n.name === name)!.dependencies.includes(m.urn)).map((m) => m.name);
        assert.ok(urn("dev-node-i-bp1own000000001-membership"));
        assert.deepEqual(["a", "b", "c"].map((n) => waitsFor(`${n}-membership`)), [["dev-node-i-bp1own000000001-membership"], [], ["a-membership"]]);
        const daemonSet = recorder.ofType("kubernetes:apps/v1:DaemonSet").find((r) => r.name.includes("-admission-"))!;
        assert.ok(["a", "b", "c"].every((n) => memberships.find((m) => m.name === `${n}-membership`)!.dependencies.includes(daemonSet.urn)));
    });

    it("a pool of a second program reads the handle from the cluster's stack (StackReference) and registers the same way; the CA pin and kubeconfig stay secret", async () => {
        assert.ok(handle, "the first program ran");
        const recorder = await attachedPoolUnderMocks(handle as unknown as Record<string, unknown>, "gpu");
        assertPoolAttached(recorder, "gpu", handle.ram.roleName, handle.join.admissionEndpoints as string[]);
        const configuration = recorder.ofType("alicloud:ess/scalingConfiguration:ScalingConfiguration")[0];
        assert.ok(configuration.secretInputs.includes("userData"));
        // Read from the stack (whose output arrives here as plain values), the handle has the Cluster's secrets again, and no others.
        installMocks({ stack: "handle-second-program", stackOutputs: { "acme/infra/dev": { cluster: handle } } });
        const { clusterHandleOf } = await components();
        const attached = await clusterHandleOf(new pulumi.StackReference("acme/infra/dev"));
        assert.deepEqual(await secretPaths(attached), HANDLE_SECRETS);
        await assert.rejects(clusterHandleOf(new pulumi.StackReference("acme/infra/dev"), "other"),
            /the stack has no output "other": export the Cluster's handle there \(`export const other = myCluster.handle`\)/);
    });

    it("a NodePool given the join context but nothing that registers it, an autoscaled or same-named attached pool, an ExistingNode likewise, and a handle of another format are refused before anything is registered", async () => {
        const recorder = installMocks({ stack: "handle-misuse" });
        const { NodePool, ExistingNode } = await components();
        const h = handle as unknown as ClusterHandle;
        const refused = (make: () => unknown, pattern: RegExp) => assert.throws(make, (err: Error) => {
            assert.ok(err instanceof pulumi.InputPropertiesError, err.message);
            assert.match(err.message, pattern);
            return true;
        });
        refused(() => new NodePool("stray", { ...h.join, pool: GPU, vswitchIds: h.placement.vswitchIds, securityGroupIds: h.placement.securityGroupIds, imageId: "img" }),
            /admissionEndpoints: the pool joins through the admission service, but nothing registers its scaling group with it.*attach the pool with `cluster: <Cluster>.handle`/);
        refused(() => new NodePool("elastic2", { cluster: h, pool: { name: "burst", instanceType: "ecs.c7.xlarge", autoscale: { min: 0, max: 3 } } }),
            /pool.autoscale: the Cluster's autoscaler scales only the pools of its config.*give pool burst a size, or declare it in the Cluster's config/);
        refused(() => new NodePool("general2", { cluster: h, pool: { ...GPU, name: "general" } }), /pool.name: the cluster already has a pool general/);
        refused(() => new ExistingNode("stray-node", { ...h.join, node: { instanceId: "i-bp1stray0000001" }, attachCommandId: "c-x" }),
            /admissionEndpoints: the node joins through the admission service, but nothing registers its instance with it/);
        refused(() => new NodePool("future", { cluster: { ...h, format: 2 }, pool: GPU }), /cluster.format: is 2; this library reads handles of format 1/);
        await recorder.settle();
        assert.deepEqual(recorder.resources.map((r) => r.name), [], "nothing registered");
    });
});
