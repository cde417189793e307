// PodSecurity: keeps pods with host access off the masters, whatever Pod Security's namespace labels say. A pod on
// a master's host network reaches the metadata service through OUTPUT, which the metadata block never sees (the
// masters' RAM role: route table, scaling groups, network interfaces); a privileged or hostPath pod there reads the
// CA key, etcd's keys and admin.conf. Pod Security Admission (`baseline`, the API server's admission config written
// by src/shell/control_plane_policy.sh) refuses such pods in every namespace but the system ones, unless a namespace
// is labelled otherwise; this ValidatingAdmissionPolicy refuses them on every route onto a master in any namespace
// but the system ones and `podSecurity.exemptNamespaces`: `spec.nodeName` of a master, a nodeSelector or node
// affinity on the masters' labels (or their names), a toleration of the control-plane taint (a key-less
// `operator: Exists` included). Existing clusters get it with `pulumi up`. See docs/security.md#pod-security.
import * as pulumi from "@pulumi/pulumi";
import type * as k8s from "@pulumi/kubernetes";
import { checkExemptNamespaces, CONTROL_PLANE_POOL, joinPath, CONTROL_PLANE_TAINT, MASTER_LABEL_KEYS, POOL_LABEL, SYSTEM_NAMESPACES } from "../rules";
import { checkArgs } from "./args";
import { applyObjects, kubeObject, type KubeObject } from "./kube";

/** Name of the policy and of its binding. */
export const POD_SECURITY_POLICY = "alicloud-kubeadm-no-host-access-on-masters";

/** The Node names of masters: provider ids `<region>.<instance-id>` (no character that needs escaping in CEL). */
const NODE_NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;

export interface PodSecurityArgs {
    /** Cluster name (labels). Required. */
    clusterName: string;
    /** The masters' Node names (`<region>.<instance-id>`, their provider ids). Required. */
    masterNodeNames: pulumi.Input<string[]>;
    /** Namespaces besides {@link SYSTEM_NAMESPACES} whose pods may run with host access on the masters. Default none. */
    exemptNamespaces?: string[];
}

const list = (values: readonly string[]) => `[${values.map((v) => `'${v}'`).join(", ")}]`;
/** `c.securityContext.privileged` of every container list of the pod (containers, init, ephemeral). */
const privileged = ["containers", "initContainers", "ephemeralContainers"].map((l) =>
    `(has(object.spec.${l}) && object.spec.${l}.exists(c, has(c.securityContext) && has(c.securityContext.privileged) && c.securityContext.privileged))`).join(" || ");

/** Why a route puts a pod on a master, for the refusal. */
const ROUTES = [
    ["byNodeName", "spec.nodeName is a master"],
    ["bySelector", "spec.nodeSelector selects the masters"],
    ["byAffinity", "spec.affinity.nodeAffinity selects the masters"],
    ["byToleration", `a toleration of the control-plane taint ${CONTROL_PLANE_TAINT}:NoSchedule (a key-less operator: Exists included)`],
] as const;

/**
 * The policy and its binding as plain objects.
 * @param a the masters' Node names and the exempt namespaces (system namespaces are always exempt)
 */
export function podSecurityObjects(a: { clusterName: string; masterNodeNames: string[]; exemptNamespaces?: string[] }): KubeObject[] {
    const bad = a.masterNodeNames.find((n) => !NODE_NAME.test(n));
    if (bad !== undefined) throw new Error(`PodSecurity: "${bad}" is not a Node name`);
    const labels = { "app.kubernetes.io/managed-by": "alicloud-kubeadm", "alicloud-kubeadm/cluster": a.clusterName };
    const exempt = [...new Set([...SYSTEM_NAMESPACES, ...(a.exemptNamespaces ?? [])])];
    const affinity = "object.spec.affinity.nodeAffinity";
    const required = `${affinity}.requiredDuringSchedulingIgnoredDuringExecution`;
    const preferred = `${affinity}.preferredDuringSchedulingIgnoredDuringExecution`;
    // Every node selector term of the pod's node affinity, required and preferred.
    const terms = `(has(${required}) ? ${required}.nodeSelectorTerms : []) + (has(${preferred}) ? ${preferred}.map(p, p.preference) : [])`;
    const message = "alicloud-kubeadm: a pod with host access (hostNetwork, hostPID, hostIPC, a privileged container or a hostPath volume) " +
        `may run on a master only in ${exempt.join(", ")} (system namespaces and podSecurity.exemptNamespaces)`;
    return [
        kubeObject<k8s.types.input.admissionregistration.v1.ValidatingAdmissionPolicy>({
            apiVersion: "admissionregistration.k8s.io/v1", kind: "ValidatingAdmissionPolicy", metadata: { name: POD_SECURITY_POLICY, labels },
            spec: {
                failurePolicy: "Fail",
                // Tolerations may be added to a running pod, and ephemeral containers through their subresource.
                matchConstraints: { resourceRules: [{ apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE", "UPDATE"], resources: ["pods", "pods/ephemeralcontainers"] }] },
                variables: [
                    { name: "masters", expression: list(a.masterNodeNames) },
                    { name: "masterKeys", expression: list(MASTER_LABEL_KEYS) },
                    {
                        name: "hostAccess", expression: "(has(object.spec.hostNetwork) && object.spec.hostNetwork) || (has(object.spec.hostPID) && object.spec.hostPID) || " +
                            `(has(object.spec.hostIPC) && object.spec.hostIPC) || (has(object.spec.volumes) && object.spec.volumes.exists(v, has(v.hostPath))) || ${privileged}`,
                    },
                    { name: "byNodeName", expression: "has(object.spec.nodeName) && object.spec.nodeName in variables.masters" },
                    {
                        name: "bySelector", expression: "has(object.spec.nodeSelector) && (object.spec.nodeSelector.exists(k, k in variables.masterKeys) || " +
                            "('kubernetes.io/hostname' in object.spec.nodeSelector && object.spec.nodeSelector['kubernetes.io/hostname'] in variables.masters) || " +
                            `('${POOL_LABEL}' in object.spec.nodeSelector && object.spec.nodeSelector['${POOL_LABEL}'] == '${CONTROL_PLANE_POOL}'))`,
                    },
                    {
                        name: "byAffinity", expression: `has(object.spec.affinity) && has(${affinity}) && (${terms}).exists(t, ` +
                            "(has(t.matchExpressions) && t.matchExpressions.exists(e, e.operator in ['In', 'Exists'] && (e.key in variables.masterKeys || " +
                            "(has(e.values) && ((e.key == 'kubernetes.io/hostname' && e.values.exists(v, v in variables.masters)) || " +
                            `(e.key == '${POOL_LABEL}' && '${CONTROL_PLANE_POOL}' in e.values)))))) || ` +
                            "(has(t.matchFields) && t.matchFields.exists(f, f.key == 'metadata.name' && f.operator == 'In' && has(f.values) && f.values.exists(v, v in variables.masters))))",
                    },
                    {
                        name: "byToleration", expression: "has(object.spec.tolerations) && object.spec.tolerations.exists(t, " +
                            "(!has(t.effect) || t.effect == '' || t.effect == 'NoSchedule') && " +
                            `((has(t.key) && t.key in ['${CONTROL_PLANE_TAINT}', 'node-role.kubernetes.io/master']) || ((!has(t.key) || t.key == '') && has(t.operator) && t.operator == 'Exists')))`,
                    },
                ],
                validations: ROUTES.map(([name, why]) => ({ expression: `!variables.hostAccess || !variables.${name}`, message: `${message}: ${why}` })),
            },
        }),
        kubeObject<k8s.types.input.admissionregistration.v1.ValidatingAdmissionPolicyBinding>({
            apiVersion: "admissionregistration.k8s.io/v1", kind: "ValidatingAdmissionPolicyBinding", metadata: { name: POD_SECURITY_POLICY, labels },
            spec: {
                policyName: POD_SECURITY_POLICY, validationActions: ["Deny"],
                matchResources: { namespaceSelector: { matchExpressions: [{ key: "kubernetes.io/metadata.name", operator: "NotIn", values: exempt }] } },
            },
        }),
    ];
}

/** The policy that keeps pods with host access off the masters (see the module comment). Needs a Kubernetes provider (opts.provider). */
export class PodSecurity extends pulumi.ComponentResource {
    constructor(name: string, args: PodSecurityArgs, opts?: pulumi.ComponentResourceOptions) {
        checkArgs(`PodSecurity "${name}"`, (report) =>
            checkExemptNamespaces(args.exemptNamespaces ?? [], (p, r) => report(joinPath("exemptNamespaces", p), r), () => undefined));
        super("alicloud-kubeadm:index:PodSecurity", name, {}, opts);
        const shape = podSecurityObjects({ ...args, masterNodeNames: [] });
        const rendered = pulumi.output(args.masterNodeNames).apply((masterNodeNames) => podSecurityObjects({ ...args, masterNodeNames }));
        applyObjects(name, [{ ...shape[0], spec: rendered.apply((o) => o[0].spec) }, shape[1]], { parent: this });
        this.registerOutputs({});
    }
}
