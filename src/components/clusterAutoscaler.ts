// ClusterAutoscaler: upstream Cluster Autoscaler, alicloud provider, one `--nodes` per autoscaled ESS group.
// Flags, RBAC, versions and known-broken releases: /work/shared/reference/autoscaler-ccm-flannel.md section A.
import * as pulumi from "@pulumi/pulumi";
import type * as k8s from "@pulumi/kubernetes";
import { applyObjects, CONTROL_PLANE_LABEL, durationSeconds, kubeObject, mapInput, parseVersion, resolveObjects, type KubeObject } from "./kube";

/** Upstream image repository; its builds include the alicloud provider. No Alibaba mirror is documented. */
export const DEFAULT_AUTOSCALER_IMAGE_REPOSITORY = "registry.k8s.io/autoscaling/cluster-autoscaler";
/** Namespace of the autoscaler (its leader-election lease and status ConfigMap live here too). */
export const AUTOSCALER_NAMESPACE = "kube-system";
const NAME = "cluster-autoscaler";

/** Latest cluster-autoscaler patch seen per Kubernetes minor (the CA minor must match the control plane's). */
export const AUTOSCALER_LATEST_PATCH: Readonly<Record<number, string>> = {
    28: "1.28.7", 29: "1.29.5", 30: "1.30.7", 31: "1.31.5", 32: "1.32.7", 33: "1.33.6", 34: "1.34.5", 35: "1.35.2", 36: "1.36.1",
};

/** Expanders usable with alicloud (`price` is GCE/Equinix only, `grpc` needs an external server). */
export const AUTOSCALER_EXPANDERS: readonly string[] = ["random", "most-pods", "least-waste", "least-nodes", "priority"];

/** Scale-down behaviour, passed as flags. Defaults are the autoscaler's own (reference A6). */
export interface AutoscalerSettings {
    /**
     * `--scale-down-utilization-threshold`: a node whose max(cpu, memory) *requests* / allocatable
     * (the "reservation rate") stays below this is a scale-down candidate. In (0, 1]. Default 0.5.
     */
    scaleDownUtilizationThreshold: number;
    /** `--scale-down-unneeded-time`: how long a node must be unneeded before removal. Default `10m`. */
    scaleDownUnneededTime: string;
    /** `--scale-down-delay-after-add`: pause of scale-down evaluation after a scale-up. Default `10m`. */
    scaleDownDelayAfterAdd: string;
    /** `--expander`: one of {@link AUTOSCALER_EXPANDERS}, or a comma-separated chain. Default `random`. */
    expander: string;
    /** `--balance-similar-node-groups`. Default false. */
    balanceSimilarNodeGroups: boolean;
    /** `--skip-nodes-with-local-storage`: never remove nodes whose pods use emptyDir/hostPath. Default true. */
    skipNodesWithLocalStorage: boolean;
}

/** The autoscaler's own flag defaults (tag 1.31.0 main.go), used for every unset setting. */
export const DEFAULT_AUTOSCALER_SETTINGS: Readonly<AutoscalerSettings> = {
    scaleDownUtilizationThreshold: 0.5,
    scaleDownUnneededTime: "10m",
    scaleDownDelayAfterAdd: "10m",
    expander: "random",
    balanceSimilarNodeGroups: false,
    skipNodesWithLocalStorage: true,
};

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
    /** Kubernetes version, e.g. `1.34.2`; picks the autoscaler version when `version` is unset. Required. */
    kubernetesVersion: string;
    /** Autoscaled pools, each becoming one `--nodes=<min>:<max>:<scalingGroupId>`. Required, at least one. */
    pools: AutoscaledPool[];
    /** Scale-down settings. Default {@link DEFAULT_AUTOSCALER_SETTINGS} per field. */
    settings?: Partial<AutoscalerSettings>;
    /**
     * Cluster Autoscaler version (`1.34.5`): image tag and RBAC flavour. Default: {@link autoscalerVersionFor}
     * the Kubernetes version. Known-broken releases are refused ({@link refusedAutoscalerVersion}).
     */
    version?: string;
    /** Image repository; the tag is `v<version>`. Default {@link DEFAULT_AUTOSCALER_IMAGE_REPOSITORY}. */
    imageRepository?: string;
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
    image: string;
    pools: { name: string; min: number; max: number }[];
    settings: AutoscalerSettings;
    accessKeySecretName?: string;
}

/**
 * The autoscaler version for a Kubernetes version: the latest known patch of the same minor
 * (`1.34.2` → `1.34.5`), or undefined when no release of that minor is known (set `version` then).
 */
export function autoscalerVersionFor(kubernetesVersion: string): string | undefined {
    const v = parseVersion(kubernetesVersion);
    return v && v[0] === 1 ? AUTOSCALER_LATEST_PATCH[v[1]] : undefined;
}

/**
 * Why an autoscaler version must not be used, or undefined when it may. 1.32.0–1.32.2 and 1.33.0
 * fail on every call: they cannot parse Alibaba's Location `DescribeEndpoints` response.
 */
export function refusedAutoscalerVersion(version: string): string | undefined {
    const v = parseVersion(version);
    if (!v || v[0] !== 1) {
        return `"${version}" is not a cluster-autoscaler version (expected e.g. 1.34.5)`;
    }
    const [, minor, patch] = v;
    if ((minor === 32 && patch <= 2) || (minor === 33 && patch === 0)) {
        const fixed = minor === 32 ? "1.32.3" : "1.33.1";
        return `cluster-autoscaler ${version} cannot parse the Location DescribeEndpoints response on Alibaba Cloud ` +
            `("failed to unmarshal endpoint response … Protocols", kubernetes/autoscaler#8168) and never scales; ` +
            `use ${fixed} or later (latest ${AUTOSCALER_LATEST_PATCH[minor]})`;
    }
    return undefined;
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
export function autoscalerProblems(args: ClusterAutoscalerArgs): pulumi.InputPropertyErrorDetails[] {
    const problems: pulumi.InputPropertyErrorDetails[] = [];
    const problem = (propertyPath: string, reason: string) => problems.push({ propertyPath, reason });
    if (args.pools.length === 0) {
        problem("pools", "at least one autoscaled pool is required (do not create a ClusterAutoscaler without one)");
    }
    const names = new Set<string>();
    args.pools.forEach((p, i) => {
        if (names.has(p.name)) {
            problem(`pools[${i}].name`, `"${p.name}" appears twice`);
        }
        names.add(p.name);
        if (!Number.isInteger(p.min) || p.min < 0) {
            problem(`pools[${i}].min`, `must be an integer >= 0, got ${p.min}`);
        }
        if (!Number.isInteger(p.max) || p.max < p.min) {
            problem(`pools[${i}].max`, `must be an integer >= min (${p.min}), got ${p.max}`);
        }
    });
    const s = { ...DEFAULT_AUTOSCALER_SETTINGS, ...args.settings };
    if (!(s.scaleDownUtilizationThreshold > 0 && s.scaleDownUtilizationThreshold <= 1)) {
        problem("settings.scaleDownUtilizationThreshold", `must be in (0, 1], got ${s.scaleDownUtilizationThreshold}`);
    }
    for (const key of ["scaleDownUnneededTime", "scaleDownDelayAfterAdd"] as const) {
        if (durationSeconds(s[key]) === undefined) {
            problem(`settings.${key}`, `"${s[key]}" must be a duration like 10m or 1h30m`);
        }
    }
    for (const e of s.expander.split(",")) {
        if (!AUTOSCALER_EXPANDERS.includes(e)) {
            problem("settings.expander", `"${e}" is not one of ${AUTOSCALER_EXPANDERS.join(", ")} (comma-separated to chain)`);
        }
    }
    if (args.version !== undefined) {
        const refused = refusedAutoscalerVersion(args.version);
        if (refused) {
            problem("version", refused);
        }
    } else if (!autoscalerVersionFor(args.kubernetesVersion)) {
        problem("kubernetesVersion", `no known cluster-autoscaler release for Kubernetes "${args.kubernetesVersion}" ` +
            `(known minors: 1.${Object.keys(AUTOSCALER_LATEST_PATCH).join(", 1.")}); set version explicitly`);
    }
    if (args.accessKeySecretName !== undefined && !/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(args.accessKeySecretName)) {
        problem("accessKeySecretName", `"${args.accessKeySecretName}" is not a valid Secret name`);
    }
    return problems;
}

/** Applies defaults; throws `pulumi.InputPropertiesError` listing every problem. */
export function resolveClusterAutoscalerArgs(args: ClusterAutoscalerArgs): ResolvedClusterAutoscalerArgs {
    const problems = autoscalerProblems(args);
    if (problems.length > 0) {
        throw new pulumi.InputPropertiesError({ message: "invalid ClusterAutoscaler arguments", errors: problems });
    }
    const version = (args.version ?? autoscalerVersionFor(args.kubernetesVersion) ?? "").replace(/^v/, "");
    return {
        region: args.region,
        version,
        image: `${args.imageRepository ?? DEFAULT_AUTOSCALER_IMAGE_REPOSITORY}:v${version}`,
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
                        priorityClassName: "system-cluster-critical",
                        serviceAccountName: NAME,
                        nodeSelector: { [CONTROL_PLANE_LABEL]: "" },
                        tolerations: [{ key: CONTROL_PLANE_LABEL, operator: "Exists", effect: "NoSchedule" }],
                        containers: [{
                            name: NAME, image: args.image,
                            command: ["./cluster-autoscaler"],
                            args: autoscalerArgs(args, groupIds),
                            // REGION_ID alone → credentials from the ECS RAM role via the metadata service (reference A2).
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
        super("alicloud-kubeadm:index:ClusterAutoscaler", name, {}, opts);
        const resolved = resolveClusterAutoscalerArgs(args);
        const objects = autoscalerObjects(resolved, args.pools.map((p) => p.scalingGroupId));
        this.version = resolved.version;
        this.resources = applyObjects(name, objects, { parent: this, provider: opts?.provider });
        this.manifests = resolveObjects(objects);
        this.registerOutputs({ manifests: this.manifests });
    }
}
