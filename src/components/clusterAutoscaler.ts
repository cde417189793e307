// ClusterAutoscaler: upstream Cluster Autoscaler, alicloud provider, one `--nodes` per autoscaled ESS group.
// Versions, known-broken releases, expanders and defaults are rules (src/rules/autoscaler.ts), shared with
// the stack config; flags and RBAC with their sources: docs/upstream.md#cluster-autoscaler-alicloud-provider.
import * as pulumi from "@pulumi/pulumi";
import type * as k8s from "@pulumi/kubernetes";
import {
    AUTOSCALER_EXPANDERS, AUTOSCALER_LATEST_PATCH, DEFAULT_AUTOSCALER_IMAGE_REPOSITORY, DEFAULT_AUTOSCALER_SETTINGS, autoscalerSettingsProblems,
    autoscalerVersionFor, autoscalerVersionWhileRunning, collect, dnsLabelProblem, imageRepositoryProblem, kubernetesVersionProblem, MAX_SCALING_GROUP_INSTANCES, parseVersion,
    refusedAutoscalerVersion, regionProblem, resolveAutoscalerVersion, type AutoscalerSettings, type Problem,
} from "../rules";
import { validatedByParser } from "../validated";
import { throwIfProblems } from "./args";
import { applyObjects, CONTROL_PLANE_LABEL, kubeObject, onMasterHostNetwork, mapInput, resolveObjects, type KubeObject } from "./kube";

export {
    AUTOSCALER_EXPANDERS, AUTOSCALER_LATEST_PATCH, DEFAULT_AUTOSCALER_IMAGE_REPOSITORY, DEFAULT_AUTOSCALER_SETTINGS, autoscalerVersionFor,
    refusedAutoscalerVersion, type AutoscalerSettings,
};

/** Namespace of the autoscaler (its leader-election lease and status ConfigMap live here too). */
export const AUTOSCALER_NAMESPACE = "kube-system";
const NAME = "cluster-autoscaler";

/** One autoscaled node pool: an ESS scaling group built from a scaling configuration. */
export interface AutoscaledPool {
    /** Pool name (for error messages). Required, unique. */
    name: string;
    /** Lower bound the autoscaler keeps (0 = scale to zero). Required. */
    min: number;
    /** Upper bound (>= min). Required. */
    max: number;
    /** ESS scaling group id (`asg-…`). Required. */
    scalingGroupId: pulumi.Input<string>;
}

/** Arguments of {@link ClusterAutoscaler}; every field documents its default. */
export interface ClusterAutoscalerArgs {
    /** Region id, e.g. `cn-hangzhou`: env `REGION_ID`. Required. */
    region: string;
    /** Kubernetes version, e.g. `1.36.3`; picks the autoscaler version when `version` is unset. Required. */
    kubernetesVersion: string;
    /** Autoscaled pools, each becoming one `--nodes=<min>:<max>:<scalingGroupId>`. Required, at least one. */
    pools: AutoscaledPool[];
    /** Scale-down settings. Default {@link DEFAULT_AUTOSCALER_SETTINGS} per field. */
    settings?: Partial<AutoscalerSettings>;
    /**
     * Cluster Autoscaler version (`1.36.1`): image tag and RBAC flavour. Default: {@link autoscalerVersionFor}
     * the Kubernetes version. Known-broken releases are refused ({@link refusedAutoscalerVersion}).
     */
    version?: string;
    /** Image repository; the tag is `v<version>`. Default {@link DEFAULT_AUTOSCALER_IMAGE_REPOSITORY}. */
    imageRepository?: string;
    /**
     * The version the control plane runs (ControlPlaneVersion `runningVersion`): while it is older than
     * `kubernetesVersion`'s minor, the image is the autoscaler release of the running minor, never one ahead of the API
     * servers (docs/upgrades.md). Default `kubernetesVersion`.
     */
    runningVersion?: pulumi.Input<string>;
    /**
     * Opt-in: name of an existing Secret in `kube-system` with keys `access-key-id` and `access-key-secret`
     * (env `ACCESS_KEY_ID` / `ACCESS_KEY_SECRET`). Default none: the control-plane ECS RAM role.
     */
    accessKeySecretName?: string;
}

/** ClusterAutoscalerArgs after defaults and validation (group ids kept apart: they may be unknown until deploy). */
export interface ResolvedClusterAutoscalerArgs {
    region: string;
    version: string;
    /** The image: its tag follows the running version (`runningVersion`). */
    image: pulumi.Input<string>;
    pools: { name: string; min: number; max: number }[];
    settings: AutoscalerSettings;
    accessKeySecretName?: string;
}

/**
 * The upstream generic ClusterRole (aws/examples/cluster-autoscaler-autodiscover.yaml) for an autoscaler
 * version: the alicloud standard rules plus jobs and leases; `volumeattachments` from 1.33; DRA from 1.36.
 */
export function autoscalerClusterRoleRules(version: string): k8s.types.input.rbac.v1.PolicyRule[] {
    const minor = parseVersion(version)?.[1] ?? 0;
    const storage = ["storageclasses", "csinodes", "csidrivers", "csistoragecapacities", ...(minor >= 33 ? ["volumeattachments"] : [])];
    return [
        { apiGroups: [""], resources: ["events", "endpoints"], verbs: ["create", "patch"] },
        { apiGroups: [""], resources: ["pods/eviction"], verbs: ["create"] },
        { apiGroups: [""], resources: ["pods/status"], verbs: ["update"] },
        { apiGroups: [""], resources: ["endpoints"], resourceNames: [NAME], verbs: ["get", "update"] },
        { apiGroups: [""], resources: ["nodes"], verbs: ["watch", "list", "get", "update"] },
        { apiGroups: [""], resources: ["namespaces", "pods", "services", "replicationcontrollers", "persistentvolumeclaims", "persistentvolumes"],
            verbs: ["watch", "list", "get"] },
        { apiGroups: ["extensions"], resources: ["replicasets", "daemonsets"], verbs: ["watch", "list", "get"] },
        { apiGroups: ["policy"], resources: ["poddisruptionbudgets"], verbs: ["watch", "list"] },
        { apiGroups: ["apps"], resources: ["statefulsets", "replicasets", "daemonsets"], verbs: ["watch", "list", "get"] },
        { apiGroups: ["storage.k8s.io"], resources: storage, verbs: ["watch", "list", "get"] },
        { apiGroups: ["batch", "extensions"], resources: ["jobs"], verbs: ["get", "list", "watch", "patch"] },
        { apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["create"] },
        { apiGroups: ["coordination.k8s.io"], resourceNames: [NAME], resources: ["leases"], verbs: ["get", "update"] },
        ...(minor >= 36 ? [{ apiGroups: ["resource.k8s.io"], resources: ["deviceclasses", "resourceslices", "resourceclaims"], verbs: ["watch", "list", "get"] }] : []),
    ];
}

/** Role `cluster-autoscaler` in kube-system: its status and priority-expander ConfigMaps. */
export const AUTOSCALER_ROLE_RULES: k8s.types.input.rbac.v1.PolicyRule[] = [
    { apiGroups: [""], resources: ["configmaps"], verbs: ["create", "list", "watch"] },
    { apiGroups: [""], resources: ["configmaps"], resourceNames: ["cluster-autoscaler-status", "cluster-autoscaler-priority-expander"],
        verbs: ["delete", "get", "update", "watch"] },
];

/** Every problem in the arguments, as property path + reason (empty when valid). */
export function autoscalerProblems(args: ClusterAutoscalerArgs): Problem[] {
    const { problems, report } = collect();
    const region = typeof args.region === "string" ? regionProblem(args.region) : "is required: a region id, e.g. cn-hangzhou";
    if (region) {
        report("region", region);
    }
    const pools = Array.isArray(args.pools) ? args.pools : [];
    if (pools.length === 0) {
        report("pools", "at least one autoscaled pool is required (do not create a ClusterAutoscaler without one)");
    }
    const names = new Set<string>();
    pools.forEach((p, i) => {
        const name = typeof p.name === "string" ? dnsLabelProblem(p.name, 63) : "is required: the pool's name";
        if (name) {
            report(`pools.${i}.name`, name);
        } else if (names.has(p.name)) {
            report(`pools.${i}.name`, `"${p.name}" appears twice`);
        }
        names.add(p.name);
        if (!Number.isInteger(p.min) || p.min < 0) {
            report(`pools.${i}.min`, `must be an integer >= 0, got ${p.min}`);
        }
        if (!Number.isInteger(p.max) || p.max < p.min) {
            report(`pools.${i}.max`, `must be an integer >= min (${p.min}), got ${p.max}`);
        } else if (p.max > MAX_SCALING_GROUP_INSTANCES) {
            report(`pools.${i}.max`, `ESS allows at most ${MAX_SCALING_GROUP_INSTANCES} instances per group, got ${p.max}`);
        }
        if (p.scalingGroupId === undefined || p.scalingGroupId === "") {
            report(`pools.${i}.scalingGroupId`, "is required: the pool's ESS scaling group id (NodePool.scalingGroupId)");
        }
    });
    autoscalerSettingsProblems({ ...DEFAULT_AUTOSCALER_SETTINGS, ...args.settings }, (path, reason) => report(`settings.${path}`, reason));
    const k8sVersion = typeof args.kubernetesVersion === "string" ? kubernetesVersionProblem(args.kubernetesVersion) : "is required: a full version like \"1.36.3\"";
    if (k8sVersion) {
        report("kubernetesVersion", k8sVersion);
    }
    const { problem } = k8sVersion && args.version === undefined ? { problem: undefined } : resolveAutoscalerVersion(args.version, args.kubernetesVersion);
    if (problem) {
        report("version", problem);
    }
    if (args.imageRepository !== undefined) {
        const reason = typeof args.imageRepository === "string" ? imageRepositoryProblem(args.imageRepository) : "must be an image repository (a plain string)";
        if (reason) {
            report("imageRepository", reason);
        }
    }
    if (args.accessKeySecretName !== undefined && !/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(args.accessKeySecretName)) {
        report("accessKeySecretName", `"${args.accessKeySecretName}" is not a valid Secret name`);
    }
    return problems;
}

/** Applies defaults; throws `pulumi.InputPropertiesError` listing every problem. */
export function resolveClusterAutoscalerArgs(args: ClusterAutoscalerArgs): ResolvedClusterAutoscalerArgs {
    if (!validatedByParser(args)) throwIfProblems("ClusterAutoscaler", autoscalerProblems(args)); // from a validated config: not checked again
    const version = resolveAutoscalerVersion(args.version, args.kubernetesVersion).version as string;
    return {
        region: args.region,
        version,
        image: args.runningVersion === undefined ? `${args.imageRepository ?? DEFAULT_AUTOSCALER_IMAGE_REPOSITORY}:v${version}`
            : pulumi.output(args.runningVersion).apply((running) =>
                `${args.imageRepository ?? DEFAULT_AUTOSCALER_IMAGE_REPOSITORY}:v${running ? autoscalerVersionWhileRunning(version, running) : version}`),
        pools: args.pools.map(({ name, min, max }) => ({ name, min, max })),
        settings: { ...DEFAULT_AUTOSCALER_SETTINGS, ...args.settings },
        accessKeySecretName: args.accessKeySecretName,
    };
}

/** The container arguments: provider, one `--nodes` per pool (same order as `pools`), scale-down flags. */
export function autoscalerArgs(args: ResolvedClusterAutoscalerArgs, groupIds: pulumi.Input<string>[]): pulumi.Input<string>[] {
    if (groupIds.length !== args.pools.length) {
        throw new Error(`autoscalerArgs: ${args.pools.length} pools but ${groupIds.length} scaling group ids`);
    }
    const s = args.settings;
    return [
        "--v=4",
        "--stderrthreshold=info",
        "--cloud-provider=alicloud",
        // Metrics and health on the master's loopback only (host network; the default is :8085 on every address).
        "--address=127.0.0.1:8085",
        ...args.pools.map((p, i) => mapInput(groupIds[i], (id) => `--nodes=${p.min}:${p.max}:${id}`)),
        `--scale-down-utilization-threshold=${s.scaleDownUtilizationThreshold}`,
        `--scale-down-unneeded-time=${s.scaleDownUnneededTime}`,
        `--scale-down-delay-after-add=${s.scaleDownDelayAfterAdd}`,
        `--expander=${s.expander}`,
        `--balance-similar-node-groups=${s.balanceSimilarNodeGroups}`,
        `--skip-nodes-with-local-storage=${s.skipNodesWithLocalStorage}`,
    ];
}

/**
 * ServiceAccount, generic RBAC for the autoscaler version, Role/RoleBinding and the Deployment on
 * control-plane nodes. `groupIds[i]` is the ESS group of `args.pools[i]`; Outputs are allowed.
 */
export function autoscalerObjects(args: ResolvedClusterAutoscalerArgs, groupIds: pulumi.Input<string>[]): KubeObject[] {
    const ns = AUTOSCALER_NAMESPACE;
    const labels = { app: NAME };
    const subjects = [{ kind: "ServiceAccount", name: NAME, namespace: ns }];
    const accessKeyEnv = args.accessKeySecretName === undefined ? [] : [
        { name: "ACCESS_KEY_ID", valueFrom: { secretKeyRef: { name: args.accessKeySecretName, key: "access-key-id" } } },
        { name: "ACCESS_KEY_SECRET", valueFrom: { secretKeyRef: { name: args.accessKeySecretName, key: "access-key-secret" } } },
    ];
    return [
        kubeObject<k8s.types.input.core.v1.ServiceAccount>({ apiVersion: "v1", kind: "ServiceAccount", metadata: { name: NAME, namespace: ns, labels } }),
        kubeObject<k8s.types.input.rbac.v1.ClusterRole>({
            apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", metadata: { name: NAME, labels },
            rules: autoscalerClusterRoleRules(args.version),
        }),
        kubeObject<k8s.types.input.rbac.v1.ClusterRoleBinding>({
            apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRoleBinding", metadata: { name: NAME, labels },
            roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: NAME }, subjects,
        }),
        kubeObject<k8s.types.input.rbac.v1.Role>({
            apiVersion: "rbac.authorization.k8s.io/v1", kind: "Role", metadata: { name: NAME, namespace: ns, labels },
            rules: AUTOSCALER_ROLE_RULES,
        }),
        kubeObject<k8s.types.input.rbac.v1.RoleBinding>({
            apiVersion: "rbac.authorization.k8s.io/v1", kind: "RoleBinding", metadata: { name: NAME, namespace: ns, labels },
            roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: NAME }, subjects,
        }),
        kubeObject<k8s.types.input.apps.v1.Deployment>({
            apiVersion: "apps/v1", kind: "Deployment", metadata: { name: NAME, namespace: ns, labels },
            spec: {
                replicas: 1,
                selector: { matchLabels: labels },
                template: {
                    metadata: { labels },
                    spec: {
                        ...onMasterHostNetwork(NAME),
                        tolerations: [{ key: CONTROL_PLANE_LABEL, operator: "Exists", effect: "NoSchedule" }],
                        containers: [{
                            name: NAME, image: args.image,
                            command: ["./cluster-autoscaler"],
                            args: autoscalerArgs(args, groupIds),
                            // REGION_ID alone → credentials from the ECS RAM role via the metadata service (docs/upstream.md#autoscaler-credentials).
                            env: [{ name: "REGION_ID", value: args.region }, ...accessKeyEnv],
                            resources: { requests: { cpu: "100m", memory: "300Mi" }, limits: { cpu: "100m", memory: "300Mi" } },
                        }],
                    },
                },
            },
        }),
    ];
}

/**
 * Cluster Autoscaler for the autoscaled ESS pools, as typed `@pulumi/kubernetes` resources.
 * Create it only when at least one pool autoscales. Pass the Kubernetes provider in `opts.provider`.
 */
export class ClusterAutoscaler extends pulumi.ComponentResource {
    /** Every object applied, resolved: what the offline synth writes as YAML. */
    public readonly manifests: pulumi.Output<KubeObject[]>;
    /** The Kubernetes resources created, for `dependsOn`. */
    public readonly resources: pulumi.CustomResource[];
    /** The autoscaler version deployed. */
    public readonly version: string;

    constructor(name: string, args: ClusterAutoscalerArgs, opts?: pulumi.ComponentResourceOptions) {
        const resolved = resolveClusterAutoscalerArgs(args); // before super(): bad input registers nothing, not even this component
        super("alicloud-kubeadm:index:ClusterAutoscaler", name, {}, opts);
        const objects = autoscalerObjects(resolved, args.pools.map((p) => p.scalingGroupId));
        this.version = resolved.version;
        this.resources = applyObjects(name, objects, { parent: this, provider: opts?.provider });
        this.manifests = resolveObjects(objects);
        this.registerOutputs({ manifests: this.manifests });
    }
}
