// The handle a Cluster exports for what is built outside it (docs/architecture.md, "Attaching to a cluster"): a
// NodePool, an ExistingNode or a NodeImage declared in the same program beside the Cluster, or in another program
// that reads the handle from the Cluster's stack through a StackReference. It carries three things, all plain data
// or Inputs (so it survives a stack output):
//  - the join context (what a node needs to join: the config's join slice, endpoint, CA pin, admission endpoints,
//    the masters and the saved commands), with where a pool's instances go and what they boot;
//  - the admission membership: where the admission service reads which scaling groups and instances may join.
//    A registration is a ConfigMap in kube-system, one per pool or node, which the running service re-reads, so a
//    pool attached later is admitted without a restart; the kubeconfig (secret) to write it with;
//  - RAM: the masters' role, which the service reads a joining instance's membership with; an attached pool adds a
//    policy naming its own scaling group (`ess:DescribeScalingInstances`), as the Cluster's admission policy does
//    for the pools of its config.
import * as alicloud from "@pulumi/alicloud";
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { ADMISSION_NAME, NAMESPACE, POOL_REGISTRATION_LABEL } from "../admission/kube";
import { ramPolicy, type Report } from "../rules";
import type { JoinArgs } from "./joinArgs";
import { admissionPoolRegistration } from "./admission";
import { applyObjects, kubeObject, type KubeObject } from "./kube";
import type { NodeImageArgs } from "./nodeImage";

export { POOL_REGISTRATION_LABEL };

/** The format of {@link ClusterHandle} this library writes and reads. */
export const CLUSTER_HANDLE_FORMAT = 1;

/** Name of an existing node's registration ConfigMap. */
export const nodeRegistrationName = (instanceId: string): string => `${ADMISSION_NAME}-node-${instanceId}`;

/** Where a pool's instances go and what they boot, as the Cluster's own pools have it. */
export interface ClusterPlacement {
    /** vSwitches of the cluster, one per zone, in zone order. */
    vswitchIds: pulumi.Input<string>[];
    /** Security groups of the nodes (the cluster security group). */
    securityGroupIds: pulumi.Input<string>[];
    /** The image the Cluster's pools boot (the baked image with `image.bake`, else the base image). */
    imageId: pulumi.Input<string>;
    /** The base image (`image.id`, or the one `image.nameRegex` found): what an existing node's new disk boots in mode `auto`. */
    baseImageId: pulumi.Input<string>;
    /** Cloud tags of the Cluster's resources (the cluster tag and the config's `tags`). */
    tags: Record<string, string>;
}

/** Where the admission service reads which scaling groups and instances may join. */
export interface AdmissionMembership {
    /** The cluster's name (the registrations' `alicloud-kubeadm/cluster` label). */
    clusterName: string;
    /** Namespace of the registrations: `kube-system`. */
    namespace: string;
    /** A kubeconfig that may write the registrations: the Cluster's stack kubeconfig (secret). */
    kubeconfig: pulumi.Input<string>;
    /** Names of the pools the Cluster registers itself (its config's pools): an attached pool takes another name. */
    pools: string[];
    /** Instance ids of the existing nodes the Cluster registers itself (its config's). */
    existingNodes: string[];
}

/** The masters' RAM role, which the admission service reads a joining instance's pool membership with. */
export interface ClusterRam {
    /** Name of the masters' RAM role. */
    roleName: pulumi.Input<string>;
    /** Region id of the cluster (the policies' resource names). */
    region: string;
}

/**
 * What a NodePool, an ExistingNode or a NodeImage built outside a Cluster attaches to it through:
 * `cluster.handle` in the same program; in another, export it (`export const cluster = myCluster.handle`) and read
 * it with {@link clusterHandleOf}. Plain data and Inputs only, so it passes through a stack output.
 */
export interface ClusterHandle {
    /** The handle's format: {@link CLUSTER_HANDLE_FORMAT}. */
    format: number;
    /** The join context: what every node needs to join (the config's join slice, endpoint, CA pin, admission endpoints, masters, saved commands, route table). */
    join: JoinArgs;
    /** Where a pool's instances go and what they boot, as the Cluster's own pools have it. */
    placement: ClusterPlacement;
    /** The arguments of a NodeImage for this cluster (its Kubernetes version and image sources, the base image, the build's vSwitch). */
    nodeImage: NodeImageArgs;
    /** The saved attach command of the Cluster, when it has existing nodes in mode `manual`; else undefined (an attached node makes its own). */
    attachCommandId?: pulumi.Input<string>;
    /** Where the admission service reads which scaling groups and instances may join. */
    admission: AdmissionMembership;
    /** The masters' RAM role the admission service reads with. */
    ram: ClusterRam;
}

/** True when a component's arguments attach it through a cluster handle (`cluster` is set). */
export function attachesThroughHandle<A extends { cluster: unknown }>(args: object | A): args is A {
    return typeof args === "object" && args !== null && "cluster" in args && args.cluster !== undefined;
}

/** An attached component's handle and the values its arguments set: keys given as undefined do not hide the handle's. */
export function handleAndGiven<A extends { cluster: ClusterHandle }>(args: A): { cluster: ClusterHandle; given: Partial<Omit<A, "cluster">> } {
    const { cluster, ...own } = args;
    return { cluster, given: Object.fromEntries(Object.entries(own).filter(([, v]) => v !== undefined)) as Partial<Omit<A, "cluster">> };
}

/** Checks a handle's shape (at `cluster`): the format, and the parts an attached component reads. */
export function clusterHandleProblems(handle: unknown, report: Report): handle is ClusterHandle {
    if (typeof handle !== "object" || handle === null) {
        report("cluster", "must be a Cluster's handle: `<Cluster>.handle`, or `await clusterHandleOf(stackReference)` in another program");
        return false;
    }
    const h = handle as Partial<ClusterHandle>;
    if (h.format !== CLUSTER_HANDLE_FORMAT) {
        report("cluster.format", `is ${JSON.stringify(h.format)}; this library reads handles of format ${CLUSTER_HANDLE_FORMAT}: ` +
            "run `pulumi up` on the cluster's stack with the same alicloud-kubeadm version as this program, so that it exports the handle this version reads");
        return false;
    }
    let ok = true;
    for (const part of ["join", "placement", "nodeImage", "admission", "ram"] as const) {
        if (typeof h[part] !== "object" || h[part] === null) {
            report(`cluster.${part}`, "is missing: pass the whole handle the Cluster exports (`<Cluster>.handle`), not a part of it");
            ok = false;
        }
    }
    return ok;
}

/**
 * The ClusterHandle another program exported (`export const cluster = myCluster.handle`), read through a
 * StackReference: `const cluster = await clusterHandleOf(new pulumi.StackReference("org/infra/prod"))` in an
 * async program. The CA pin and the kubeconfig stay secrets. Throws, naming the fix, when the stack has no such
 * output or it is not a handle of this format.
 */
export async function clusterHandleOf(reference: pulumi.StackReference, outputName = "cluster"): Promise<ClusterHandle> {
    const details = await reference.getOutputDetails(outputName);
    const value = details.value ?? details.secretValue;
    const problems: string[] = [];
    if (value === undefined) {
        problems.push(`the stack has no output "${outputName}": export the Cluster's handle there (\`export const ${outputName} = myCluster.handle\`) and run \`pulumi up\` on it`);
    } else {
        clusterHandleProblems(value, (path, reason) => problems.push(`${path.replace(/^cluster/, outputName)}: ${reason}`));
    }
    if (problems.length > 0) {
        throw new Error(`clusterHandleOf: ${problems.join("; ")}`);
    }
    const handle = value as ClusterHandle;
    return {
        ...handle,
        join: { ...handle.join, caCertHash: pulumi.secret(handle.join.caCertHash) },
        admission: { ...handle.admission, kubeconfig: pulumi.secret(handle.admission.kubeconfig) },
    };
}

/**
 * An existing node's admission registration: the instance that may join, and the pool its Node belongs to (labelled
 * like a pool's, so the service reads both in one list).
 */
export function nodeRegistration(clusterName: string, instanceId: string, pool: string): KubeObject {
    return kubeObject<k8s.types.input.core.v1.ConfigMap>({
        apiVersion: "v1", kind: "ConfigMap",
        metadata: { name: nodeRegistrationName(instanceId), namespace: NAMESPACE, labels: { [POOL_REGISTRATION_LABEL]: "true", "alicloud-kubeadm/cluster": clusterName } },
        data: { instanceId, pool },
    });
}

/** The Kubernetes provider an attached component writes its registration with (from the handle's kubeconfig). */
function registrationProvider(name: string, handle: ClusterHandle, parent: pulumi.Resource): k8s.Provider {
    return new k8s.Provider(`${name}-k8s`, { kubeconfig: handle.admission.kubeconfig }, { parent });
}

/**
 * Registers an attached pool with the cluster's admission service: its registration (which the running service
 * re-reads) and a policy on the masters' role that lets the service read the group's membership. Returns what the
 * pool's first nodes must wait for.
 */
export function registerPool(name: string, handle: ClusterHandle, pool: string, scalingGroupId: pulumi.Input<string>, parent: pulumi.Resource): pulumi.Resource[] {
    const { clusterName } = handle.admission;
    const policy = new alicloud.ram.Policy(`${name}-admission-policy`, {
        policyName: `${clusterName}-admission-${pool}`,
        policyDocument: pulumi.output(scalingGroupId).apply((id) => JSON.stringify(ramPolicy("admission", { region: handle.ram.region, scalingGroupIds: [id] }))),
        description: `alicloud-kubeadm ${clusterName}: admission reads pool ${pool}`,
    }, { parent });
    const attachment = new alicloud.ram.RolePolicyAttachment(`${name}-admission-policy`, {
        roleName: handle.ram.roleName,
        policyName: policy.policyName,
        policyType: "Custom",
    }, { parent });
    const registration = applyObjects(`${name}-admission`, [admissionPoolRegistration(pool, scalingGroupId, clusterName)],
        { parent, provider: registrationProvider(name, handle, parent), dependsOn: [attachment] });
    return [attachment, ...registration];
}

/** Registers an attached existing node with the cluster's admission service (the masters' role already reads any instance). */
export function registerNode(name: string, handle: ClusterHandle, instanceId: string, pool: string, parent: pulumi.Resource): pulumi.Resource[] {
    return applyObjects(`${name}-admission`, [nodeRegistration(handle.admission.clusterName, instanceId, pool)],
        { parent, provider: registrationProvider(name, handle, parent) });
}
