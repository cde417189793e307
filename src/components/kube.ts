// Plain Kubernetes objects → typed @pulumi/kubernetes resources, and → multi-document YAML.
// The add-on components (PodNetwork, ClusterAutoscaler) build plain objects with pure functions,
// apply them here and hand the same objects to the offline synth.
import * as pulumi from "@pulumi/pulumi";
import * as k8s from "@pulumi/kubernetes";
import { stringify } from "yaml";

/** Object metadata the add-ons set. Values may be Pulumi inputs until the object is resolved. */
export interface KubeMetadata {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
}

/** A Kubernetes object as plain data: what `kubectl apply -f` would take. */
export type KubeObject = { apiVersion: string; kind: string; metadata: KubeMetadata; [k: string]: unknown };

/**
 * Builds a KubeObject checked against a `@pulumi/kubernetes` input type `T`, e.g.
 * `kubeObject<k8s.types.input.apps.v1.DaemonSet>({...})`: the compiler then rejects misspelt or
 * misplaced fields, which the Kubernetes JSON schemas alone would accept.
 */
export function kubeObject<T>(o: T & { apiVersion: string; kind: string; metadata: KubeMetadata }): KubeObject {
    return o as unknown as KubeObject;
}

/**
 * Applies `f` to `value` directly when it is a plain value, or inside `apply` when it is an Output
 * or a Promise. Pure builders therefore return plain objects for plain inputs (easy to test) and
 * Pulumi inputs only when the value is not known yet (e.g. an ESS group id during preview).
 */
export function mapInput<T, U>(value: pulumi.Input<T>, f: (t: T) => U): pulumi.Input<U> {
    if (pulumi.Output.isInstance(value) || value instanceof Promise) {
        return pulumi.output(value).apply((v) => f(v as T));
    }
    return f(value as T);
}

/** Label kubeadm (>= 1.24) puts on control-plane nodes; the CCM and the autoscaler run there. */
export const CONTROL_PLANE_LABEL = "node-role.kubernetes.io/control-plane";

/**
 * The pod spec fields of a cluster-critical add-on that runs on the masters' host network (the CCM, the
 * autoscaler): they read the masters' RAM role credentials from the metadata service as a host process does
 * (pods are blocked from it: docs/security.md#metadata-block).
 */
export function onMasterHostNetwork(serviceAccountName: string) {
    return {
        hostNetwork: true,
        priorityClassName: "system-cluster-critical",
        serviceAccountName,
        nodeSelector: { [CONTROL_PLANE_LABEL]: "" },
    };
}

type Create = (name: string, obj: KubeObject, opts: pulumi.CustomResourceOptions) => pulumi.CustomResource;

/** Casts a plain object to the args type of one resource class (the object already has that shape). */
function as<T>(obj: KubeObject): T {
    return obj as unknown as T;
}

/** apiVersion/kind → typed resource class. Anything else is refused, so no untyped YAML sneaks in. */
const CREATORS: Record<string, Create> = {
    "v1/Namespace": (n, o, p) => new k8s.core.v1.Namespace(n, as<k8s.core.v1.NamespaceArgs>(o), p),
    "v1/ServiceAccount": (n, o, p) => new k8s.core.v1.ServiceAccount(n, as<k8s.core.v1.ServiceAccountArgs>(o), p),
    "v1/ConfigMap": (n, o, p) => new k8s.core.v1.ConfigMap(n, as<k8s.core.v1.ConfigMapArgs>(o), p),
    "v1/Secret": (n, o, p) => new k8s.core.v1.Secret(n, as<k8s.core.v1.SecretArgs>(o), p),
    "rbac.authorization.k8s.io/v1/ClusterRole": (n, o, p) => new k8s.rbac.v1.ClusterRole(n, as<k8s.rbac.v1.ClusterRoleArgs>(o), p),
    "rbac.authorization.k8s.io/v1/ClusterRoleBinding": (n, o, p) =>
        new k8s.rbac.v1.ClusterRoleBinding(n, as<k8s.rbac.v1.ClusterRoleBindingArgs>(o), p),
    "rbac.authorization.k8s.io/v1/Role": (n, o, p) => new k8s.rbac.v1.Role(n, as<k8s.rbac.v1.RoleArgs>(o), p),
    "rbac.authorization.k8s.io/v1/RoleBinding": (n, o, p) => new k8s.rbac.v1.RoleBinding(n, as<k8s.rbac.v1.RoleBindingArgs>(o), p),
    "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy": (n, o, p) =>
        new k8s.admissionregistration.v1.ValidatingAdmissionPolicy(n, as<k8s.admissionregistration.v1.ValidatingAdmissionPolicyArgs>(o), p),
    "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicyBinding": (n, o, p) =>
        new k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding(n, as<k8s.admissionregistration.v1.ValidatingAdmissionPolicyBindingArgs>(o), p),
    "apps/v1/DaemonSet": (n, o, p) => new k8s.apps.v1.DaemonSet(n, as<k8s.apps.v1.DaemonSetArgs>(o), p),
    "apps/v1/Deployment": (n, o, p) => new k8s.apps.v1.Deployment(n, as<k8s.apps.v1.DeploymentArgs>(o), p),
};

/** The kinds applyObjects accepts, as `apiVersion/kind`. */
export const SUPPORTED_KINDS: readonly string[] = Object.keys(CREATORS);

/**
 * The Pulumi resource name of one object: `<prefix>-<kind>-<namespace|cluster>-<name>`, lowercased,
 * with characters outside `[a-z0-9.-]` (e.g. the `:` of `system:cloud-controller-manager`) turned into `-`.
 */
export function resourceName(prefix: string, obj: KubeObject): string {
    const scope = obj.metadata.namespace ?? "cluster";
    return `${prefix}-${obj.kind}-${scope}-${obj.metadata.name}`.toLowerCase().replace(/[^a-z0-9.-]/g, "-");
}

const WORKLOAD_KINDS = ["DaemonSet", "Deployment"];

/**
 * Which objects each object waits for, by index: namespaced objects wait for their Namespace when
 * it is in the same batch; workloads also wait for every non-workload object (ServiceAccount, RBAC,
 * ConfigMap), so their first pods start with identity, permissions and config in place.
 */
export function applyDependencies(objects: KubeObject[]): number[][] {
    const nsIndex = new Map(objects.flatMap((o, i) => (o.kind === "Namespace" ? [[o.metadata.name, i] as const] : [])));
    const supporting = objects.flatMap((o, i) => (WORKLOAD_KINDS.includes(o.kind) || o.kind === "Namespace" ? [] : [i]));
    return objects.map((o) => {
        const ns = o.metadata.namespace === undefined ? undefined : nsIndex.get(o.metadata.namespace);
        const deps = ns === undefined ? [] : [ns];
        return WORKLOAD_KINDS.includes(o.kind) ? [...deps, ...supporting] : deps;
    });
}

/**
 * Creates one typed `@pulumi/kubernetes` resource per object (Namespace, ServiceAccount, ConfigMap,
 * Secret, ClusterRole, ClusterRoleBinding, Role, RoleBinding, DaemonSet, Deployment), with the
 * `dependsOn` of {@link applyDependencies}, and returns them in the order of `objects`. `opts` should
 * carry `parent` and the Kubernetes `provider`; its `dependsOn`, if any, must be a plain list or a
 * single resource. Throws before creating anything on an unsupported kind or a resource-name collision.
 */
export function applyObjects(prefix: string, objects: KubeObject[], opts: pulumi.CustomResourceOptions): pulumi.CustomResource[] {
    const names = objects.map((o) => resourceName(prefix, o));
    objects.forEach((obj, i) => {
        if (!CREATORS[`${obj.apiVersion}/${obj.kind}`]) {
            throw new Error(`applyObjects: ${obj.apiVersion} ${obj.kind} "${obj.metadata.name}" is not supported; ` +
                `supported kinds: ${SUPPORTED_KINDS.join(", ")} (add a typed class to components/kube.ts)`);
        }
        if (names.indexOf(names[i]) !== i) {
            throw new Error(`applyObjects: two objects map to the resource name "${names[i]}"; give them distinct names`);
        }
    });
    const given = opts.dependsOn;
    if (given !== undefined && !Array.isArray(given) && !pulumi.Resource.isInstance(given)) {
        throw new Error("applyObjects: opts.dependsOn must be a resource or a plain list of resources");
    }
    const base = given === undefined ? [] : Array.isArray(given) ? given : [given];
    const deps = applyDependencies(objects);
    const created: pulumi.CustomResource[] = new Array(objects.length);
    const create = (i: number): pulumi.CustomResource => {
        if (!created[i]) {
            const obj = objects[i];
            const dependsOn = [...base, ...deps[i].map(create)];
            created[i] = CREATORS[`${obj.apiVersion}/${obj.kind}`](names[i], obj, { ...opts, dependsOn });
        }
        return created[i];
    };
    objects.forEach((_, i) => create(i));
    return created;
}

/** Multi-document YAML (`---` between objects), in the given order, as `kubectl apply -f` reads it; no anchors/aliases. */
export function toYaml(objects: KubeObject[]): string {
    return objects.map((o) => stringify(o, { lineWidth: 0, aliasDuplicateObjects: false })).join("---\n");
}

/** Resolves every nested Pulumi input of the objects: the value a component exposes as `manifests`. */
export function resolveObjects(objects: KubeObject[]): pulumi.Output<KubeObject[]> {
    return pulumi.output(objects) as unknown as pulumi.Output<KubeObject[]>;
}

/** A registered resource as the offline synth records it (type token, name, parent name, inputs). */
export interface RecordedKubeResource {
    type: string;
    name: string;
    parent?: string;
    inputs: Record<string, unknown>;
    /** The name the Kubernetes provider gave an object whose inputs leave it unnamed (no `metadata.name`). */
    autoName?: string;
}

/** Apply order by kind: namespaces and identities first, workloads last. */
const KIND_ORDER = ["Namespace", "ServiceAccount", "Secret", "ConfigMap", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "DaemonSet", "Deployment"];

/** A copy sorted for `kubectl apply`: by kind ({@link KIND_ORDER}), then namespace, then name. Deterministic. */
export function canonicalOrder(objects: KubeObject[]): KubeObject[] {
    const rank = (o: KubeObject) => (KIND_ORDER.indexOf(o.kind) + KIND_ORDER.length + 1) % (KIND_ORDER.length + 1);
    const key = (o: KubeObject) => `${o.metadata.namespace ?? ""}/${o.metadata.name}`;
    return [...objects].sort((a, b) => rank(a) - rank(b) || key(a).localeCompare(key(b)));
}

/**
 * The synth's `out/<stack>/manifests/` files from recorded registrations: every `kubernetes:*`
 * resource (providers are `pulumi:providers:*`, so excluded), grouped by parent component, as
 * `{ "<parent>.yaml": multi-doc YAML }` in {@link canonicalOrder}: registration order under mocks is
 * not deterministic. Recorded inputs of typed resources are exactly the applied objects.
 */
export function manifestFiles(resources: RecordedKubeResource[]): Record<string, string> {
    const groups = new Map<string, KubeObject[]>();
    for (const r of resources) {
        if (!r.type.startsWith("kubernetes:")) {
            continue;
        }
        const file = `${(r.parent ?? "root").replace(/[^A-Za-z0-9._-]/g, "-")}.yaml`;
        // An object the provider names (no metadata.name, e.g. the admission service's files) is shown with its name.
        const o = r.inputs as KubeObject;
        const named = o.metadata?.name === undefined && r.autoName !== undefined ? { ...o, metadata: { ...o.metadata, name: r.autoName } } : o;
        groups.set(file, [...(groups.get(file) ?? []), named as KubeObject]);
    }
    return Object.fromEntries([...groups.entries()].sort(([a], [b]) => a.localeCompare(b))
        .map(([file, objects]) => [file, toYaml(canonicalOrder(objects))]));
}
