// PodNetwork: flannel (backend `alloc`) + the Alibaba Cloud Controller Manager route controller.
// KCM gives each node a podCIDR inside `podCidr`; flannel turns it into cni0 + SNAT (`--ip-masq`);
// CCM writes one VPC route entry per node (podCIDR → instance) into the Network's route table.
// Every flag, rule and image, with its source: docs/upstream.md#flannel and #cloud-controller-manager-alibaba.
import * as pulumi from "@pulumi/pulumi";
import type * as k8s from "@pulumi/kubernetes";
import {
    DEFAULT_CCM_IMAGE, DEFAULT_FLANNEL_CNI_PLUGIN_IMAGE, DEFAULT_FLANNEL_IMAGE, imageReferenceProblem, kubernetesVersionProblem, parseCidr, parseDuration,
    parseVersion, podCidrReservedProblem, regionProblem, collect, type Problem,
} from "../rules";
import { validatedByParser } from "../validated";
import { throwIfProblems } from "./args";
import { applyObjects, kubeObject, onMasterHostNetwork, mapInput, resolveObjects, type KubeObject } from "./kube";

export { DEFAULT_CCM_IMAGE, DEFAULT_FLANNEL_CNI_PLUGIN_IMAGE, DEFAULT_FLANNEL_IMAGE };

/** CCM route reconciliation period, as in CCM's docs/examples (the flag's own default is 5m; minimum 1m). */
export const DEFAULT_ROUTE_RECONCILIATION_PERIOD = "3m";

/** Namespace of flannel (as in kube-flannel.yml, labelled for privileged pod security). */
export const FLANNEL_NAMESPACE = "kube-flannel";
/** Namespace of the CCM, its ServiceAccount and its cloud-config ConfigMap. */
export const CCM_NAMESPACE = "kube-system";
/** Where the CCM reads its cloud-config (ConfigMap `cloud-config`, key `cloud-config.conf`). */
const CCM_CLOUD_CONFIG_PATH = "/etc/kubernetes/config/cloud-config.conf";

/** Container images of the pod network. */
export interface PodNetworkImages {
    /** flanneld image (also runs the install-cni init container). Default {@link DEFAULT_FLANNEL_IMAGE}. */
    flannel?: string;
    /** flannel CNI plugin image (init container copying `/flannel` to `/opt/cni/bin`). Default {@link DEFAULT_FLANNEL_CNI_PLUGIN_IMAGE}. */
    flannelCniPlugin?: string;
    /** Cloud Controller Manager image. Default {@link DEFAULT_CCM_IMAGE}. */
    ccm?: string;
}

/** Arguments of {@link PodNetwork}; every field documents its default. */
export interface PodNetworkArgs {
    /** The cluster's pod CIDR: kubeadm `networking.podSubnet`, flannel `Network` and CCM `--cluster-cidr`. Required. */
    podCidr: string;
    /** VPC route table the CCM writes pod routes into (cloud-config `routeTableIDs`), from the Network component. Required. */
    routeTableId: pulumi.Input<string>;
    /** Region id, e.g. `cn-hangzhou`. Required. Images do not depend on it (see {@link PodNetworkImages}). */
    region: string;
    /** Kubernetes version, e.g. `1.36.3`. Required; must be >= 1.24 (the control-plane node label the CCM is pinned to). */
    kubernetesVersion: string;
    /** Image overrides. Default: upstream flannel images and Alibaba's CCM image, in every region. */
    images?: PodNetworkImages;
    /** CCM `--route-reconciliation-period` (Go duration, >= 1m). Default {@link DEFAULT_ROUTE_RECONCILIATION_PERIOD}. */
    routeReconciliationPeriod?: string;
    /**
     * Opt-in: name of an existing Secret in `kube-system` with keys `access-key-id` and `access-key-secret`,
     * passed to the CCM as env `ACCESS_KEY_ID` / `ACCESS_KEY_SECRET`. Default none: the CCM uses the
     * control-plane ECS RAM role from the metadata service.
     */
    ccmAccessKeySecretName?: string;
}

/** PodNetworkArgs after defaults and validation (route table id kept apart: it may be unknown until deploy). */
export interface ResolvedPodNetworkArgs {
    podCidr: string;
    region: string;
    kubernetesVersion: string;
    images: Required<PodNetworkImages>;
    routeReconciliationPeriod: string;
    ccmAccessKeySecretName?: string;
}

/** Every problem in the arguments, as property path + reason (empty when valid). */
export function podNetworkProblems(args: PodNetworkArgs): Problem[] {
    const { problems, report } = collect();
    const cidr = typeof args.podCidr === "string" ? parseCidr(args.podCidr) : "is required: the cluster's pod CIDR, e.g. 172.16.0.0/16";
    if (typeof cidr === "string") {
        report("podCidr", cidr);
    } else {
        const reserved = podCidrReservedProblem(cidr);
        if (reserved) {
            report("podCidr", reserved);
        }
    }
    const region = typeof args.region === "string" ? regionProblem(args.region) : "is required: a region id, e.g. cn-hangzhou";
    if (region) {
        report("region", region);
    }
    for (const key of ["flannel", "flannelCniPlugin", "ccm"] as const) {
        const image = args.images?.[key];
        const reason = image === undefined ? undefined : typeof image === "string" ? imageReferenceProblem(image) : "must be an image reference (a plain string)";
        if (reason) {
            report(`images.${key}`, reason);
        }
    }
    const version = typeof args.kubernetesVersion === "string" ? kubernetesVersionProblem(args.kubernetesVersion) : "is required: a full version like \"1.36.3\"";
    if (version) {
        report("kubernetesVersion", version);
    }
    const period = args.routeReconciliationPeriod ?? DEFAULT_ROUTE_RECONCILIATION_PERIOD;
    const seconds = parseDuration(period);
    if (seconds === undefined || seconds < 60) {
        report("routeReconciliationPeriod", `"${period}" must be a duration of at least 1m (e.g. 3m); CCM refuses shorter periods`);
    }
    if (args.ccmAccessKeySecretName !== undefined && !/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(args.ccmAccessKeySecretName)) {
        report("ccmAccessKeySecretName", `"${args.ccmAccessKeySecretName}" is not a valid Secret name`);
    }
    return problems;
}

/** Applies defaults; throws `pulumi.InputPropertiesError` listing every problem (arguments from a validated config are not checked again). */
export function resolvePodNetworkArgs(args: PodNetworkArgs): ResolvedPodNetworkArgs {
    if (!validatedByParser(args)) throwIfProblems("PodNetwork", podNetworkProblems(args));
    return {
        podCidr: args.podCidr,
        region: args.region,
        kubernetesVersion: args.kubernetesVersion,
        images: {
            flannel: args.images?.flannel ?? DEFAULT_FLANNEL_IMAGE,
            flannelCniPlugin: args.images?.flannelCniPlugin ?? DEFAULT_FLANNEL_CNI_PLUGIN_IMAGE,
            ccm: args.images?.ccm ?? DEFAULT_CCM_IMAGE,
        },
        routeReconciliationPeriod: args.routeReconciliationPeriod ?? DEFAULT_ROUTE_RECONCILIATION_PERIOD,
        ccmAccessKeySecretName: args.ccmAccessKeySecretName,
    };
}

/** flannel `net-conf.json`: backend `alloc` (no encapsulation; CCM's VPC routes carry pod traffic). */
export function flannelNetConf(podCidr: string): string {
    return JSON.stringify({ Network: podCidr, EnableNFTables: false, Backend: { Type: "alloc" } }, null, 2);
}

/** flannel `cni-conf.json`, copied verbatim to /etc/cni/net.d/10-flannel.conflist (bridge cni0 built by the plugin). */
export const FLANNEL_CNI_CONF = JSON.stringify({
    name: "cbr0",
    cniVersion: "0.3.1",
    plugins: [
        { type: "flannel", delegate: { hairpinMode: true, isDefaultGateway: true } },
        { type: "portmap", capabilities: { portMappings: true } },
    ],
}, null, 2);

/**
 * The install-cni init command for a flannel image: `/opt/bin/install-conf` from v0.28.9 (and for
 * tags that are not a version), `cp -f` for older tags whose manifests used it.
 */
export function flannelInstallCniCommand(flannelImage: string): string[] {
    const tag = /:v?(\d+\.\d+\.\d+)$/.exec(flannelImage)?.[1];
    const v = tag ? parseVersion(tag) : undefined;
    const older = v !== undefined && (v[0] === 0 && (v[1] < 28 || (v[1] === 28 && v[2] < 9)));
    return older
        ? ["cp", "-f", "/etc/kube-flannel/cni-conf.json", "/etc/cni/net.d/10-flannel.conflist"]
        : ["/opt/bin/install-conf", "/etc/kube-flannel/cni-conf.json", "/etc/cni/net.d/10-flannel.conflist"];
}

/** flannel as in kube-flannel.yml v0.28.9, with backend `alloc` and `--set-node-network-unavailable=false`. */
export function flannelObjects(args: ResolvedPodNetworkArgs): KubeObject[] {
    const ns = FLANNEL_NAMESPACE;
    const labels = { app: "flannel", "k8s-app": "flannel" };
    const hostPath = (name: string, path: string, type?: string) => ({ name, hostPath: { path, ...(type ? { type } : {}) } });
    return [
        kubeObject<k8s.types.input.core.v1.Namespace>({
            apiVersion: "v1", kind: "Namespace",
            metadata: { name: ns, labels: { "k8s-app": "flannel", "pod-security.kubernetes.io/enforce": "privileged" } },
        }),
        kubeObject<k8s.types.input.core.v1.ServiceAccount>({
            apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "flannel", namespace: ns, labels },
        }),
        kubeObject<k8s.types.input.rbac.v1.ClusterRole>({
            apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", metadata: { name: "flannel", labels },
            rules: [
                { apiGroups: [""], resources: ["pods"], verbs: ["get"] },
                { apiGroups: [""], resources: ["nodes"], verbs: ["get", "list", "watch"] },
                { apiGroups: [""], resources: ["nodes/status"], verbs: ["patch"] },
            ],
        }),
        kubeObject<k8s.types.input.rbac.v1.ClusterRoleBinding>({
            apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRoleBinding", metadata: { name: "flannel", labels },
            roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "flannel" },
            subjects: [{ kind: "ServiceAccount", name: "flannel", namespace: ns }],
        }),
        kubeObject<k8s.types.input.core.v1.ConfigMap>({
            apiVersion: "v1", kind: "ConfigMap", metadata: { name: "kube-flannel-cfg", namespace: ns, labels },
            data: { "cni-conf.json": FLANNEL_CNI_CONF, "net-conf.json": flannelNetConf(args.podCidr) },
        }),
        kubeObject<k8s.types.input.apps.v1.DaemonSet>({
            apiVersion: "apps/v1", kind: "DaemonSet", metadata: { name: "kube-flannel-ds", namespace: ns, labels },
            spec: {
                selector: { matchLabels: { app: "flannel" } },
                template: {
                    metadata: { labels },
                    spec: {
                        affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [
                            { matchExpressions: [{ key: "kubernetes.io/os", operator: "In", values: ["linux"] }] },
                        ] } } },
                        hostNetwork: true,
                        priorityClassName: "system-node-critical",
                        // NoSchedule taints include CCM's node.cloudprovider.kubernetes.io/uninitialized.
                        tolerations: [{ operator: "Exists", effect: "NoSchedule" }],
                        serviceAccountName: "flannel",
                        initContainers: [
                            {
                                name: "install-cni-plugin", image: args.images.flannelCniPlugin,
                                command: ["cp"], args: ["-f", "/flannel", "/opt/cni/bin/flannel"],
                                volumeMounts: [{ name: "cni-plugin", mountPath: "/opt/cni/bin" }],
                            },
                            {
                                name: "install-cni", image: args.images.flannel,
                                command: flannelInstallCniCommand(args.images.flannel),
                                volumeMounts: [{ name: "cni", mountPath: "/etc/cni/net.d" }, { name: "flannel-cfg", mountPath: "/etc/kube-flannel/" }],
                            },
                        ],
                        containers: [{
                            name: "kube-flannel", image: args.images.flannel,
                            command: ["/opt/bin/flanneld"],
                            // --set-node-network-unavailable=false: CCM owns NetworkUnavailable until the VPC route exists (flannel #1431).
                            args: ["--ip-masq", "--kube-subnet-mgr", "--set-node-network-unavailable=false", "--healthz-port=8081"],
                            resources: { requests: { cpu: "100m", memory: "50Mi" } },
                            securityContext: { privileged: false, capabilities: { add: ["NET_ADMIN", "NET_RAW"] } },
                            env: [
                                { name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
                                { name: "POD_NAMESPACE", valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } } },
                                { name: "EVENT_QUEUE_DEPTH", value: "5000" },
                                { name: "CONT_WHEN_CACHE_NOT_READY", value: "false" },
                            ],
                            livenessProbe: { httpGet: { path: "/healthz", port: 8081 }, initialDelaySeconds: 10, periodSeconds: 10 },
                            readinessProbe: { httpGet: { path: "/readyz", port: 8081 }, periodSeconds: 10 },
                            volumeMounts: [
                                { name: "run", mountPath: "/run/flannel" },
                                { name: "flannel-cfg", mountPath: "/etc/kube-flannel/" },
                                { name: "xtables-lock", mountPath: "/run/xtables.lock" },
                            ],
                        }],
                        volumes: [
                            hostPath("run", "/run/flannel"),
                            hostPath("cni-plugin", "/opt/cni/bin"),
                            hostPath("cni", "/etc/cni/net.d"),
                            { name: "flannel-cfg", configMap: { name: "kube-flannel-cfg" } },
                            hostPath("xtables-lock", "/run/xtables.lock", "FileOrCreate"),
                        ],
                    },
                },
            },
        }),
    ];
}

/** CCM `cloud-config.conf`: JSON, every key under `Global`; `routeTableIDs` pins the route table (CCM issue #77). */
export function ccmCloudConfig(routeTableId: string): string {
    return JSON.stringify({ Global: { routeTableIDs: routeTableId } });
}

/**
 * ClusterRole `system:cloud-controller-manager`: what the node and route controllers of CCM v2.14.0 call
 * (docs/upstream.md#ccm-rbac): Nodes (watched through the cache, patched with labels and taints, deleted when the
 * instance is gone), their status (addresses, NetworkUnavailable) and events. No Secrets, Services or anything else.
 */
export const CCM_CLUSTER_ROLE_RULES: k8s.types.input.rbac.v1.PolicyRule[] = [
    { apiGroups: [""], resources: ["nodes"], verbs: ["get", "list", "watch", "patch", "delete"] },
    { apiGroups: [""], resources: ["nodes/status"], verbs: ["patch"] },
    { apiGroups: [""], resources: ["events"], verbs: ["create", "patch", "update"] },
];

/** Lease name of the CCM's leader election (`--leader-elect-resource-name` default, in kube-system). */
export const CCM_LEASE = "ccm";

/** Role `cloud-controller-manager` in kube-system: its leader-election lease only. */
export const CCM_ROLE_RULES: k8s.types.input.rbac.v1.PolicyRule[] = [
    { apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["create"] },
    { apiGroups: ["coordination.k8s.io"], resources: ["leases"], resourceNames: [CCM_LEASE], verbs: ["get", "update"] },
];

/**
 * Alibaba Cloud Controller Manager, node + route controllers only, as a DaemonSet on control-plane
 * nodes. Credentials: the control-plane RAM role (metadata service) unless `ccmAccessKeySecretName`.
 * `routeTableId` may be an Output; only the cloud-config ConfigMap data waits for it.
 */
export function ccmObjects(args: ResolvedPodNetworkArgs, routeTableId: pulumi.Input<string>): KubeObject[] {
    const ns = CCM_NAMESPACE;
    const name = "cloud-controller-manager";
    const labels = { app: name };
    const accessKeyEnv = args.ccmAccessKeySecretName === undefined ? [] : [
        { name: "ACCESS_KEY_ID", valueFrom: { secretKeyRef: { name: args.ccmAccessKeySecretName, key: "access-key-id" } } },
        { name: "ACCESS_KEY_SECRET", valueFrom: { secretKeyRef: { name: args.ccmAccessKeySecretName, key: "access-key-secret" } } },
    ];
    return [
        kubeObject<k8s.types.input.core.v1.ServiceAccount>({
            apiVersion: "v1", kind: "ServiceAccount", metadata: { name, namespace: ns, labels },
        }),
        kubeObject<k8s.types.input.rbac.v1.ClusterRole>({
            apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", metadata: { name: "system:cloud-controller-manager", labels },
            rules: CCM_CLUSTER_ROLE_RULES,
        }),
        kubeObject<k8s.types.input.rbac.v1.ClusterRoleBinding>({
            apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRoleBinding", metadata: { name: "system:cloud-controller-manager", labels },
            roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "system:cloud-controller-manager" },
            subjects: [{ kind: "ServiceAccount", name, namespace: ns }],
        }),
        kubeObject<k8s.types.input.rbac.v1.Role>({
            apiVersion: "rbac.authorization.k8s.io/v1", kind: "Role", metadata: { name, namespace: ns, labels },
            rules: CCM_ROLE_RULES,
        }),
        kubeObject<k8s.types.input.rbac.v1.RoleBinding>({
            apiVersion: "rbac.authorization.k8s.io/v1", kind: "RoleBinding", metadata: { name, namespace: ns, labels },
            roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name },
            subjects: [{ kind: "ServiceAccount", name, namespace: ns }],
        }),
        kubeObject<k8s.types.input.core.v1.ConfigMap>({
            apiVersion: "v1", kind: "ConfigMap", metadata: { name: "cloud-config", namespace: ns, labels },
            data: { "cloud-config.conf": mapInput(routeTableId, ccmCloudConfig) },
        }),
        kubeObject<k8s.types.input.apps.v1.DaemonSet>({
            apiVersion: "apps/v1", kind: "DaemonSet", metadata: { name, namespace: ns, labels },
            spec: {
                selector: { matchLabels: labels },
                template: {
                    metadata: { labels },
                    spec: {
                        ...onMasterHostNetwork(name),
                        // As deploy/v2: tolerate every taint, notably node.cloudprovider.kubernetes.io/uninitialized
                        // (which this CCM removes) and the control-plane NoSchedule taint.
                        tolerations: [{ operator: "Exists" }],
                        securityContext: { runAsUser: 1200, runAsNonRoot: true },
                        containers: [{
                            name, image: args.images.ccm,
                            command: ["/cloud-controller-manager"],
                            // No --kubeconfig: in-cluster config from the ServiceAccount token.
                            args: [
                                `--cloud-config=${CCM_CLOUD_CONFIG_PATH}`,
                                "--metrics-bind-addr=0",
                                // pprof serves on :6060 of the host network unless turned off (docs/upstream.md#pitfall-ccm-pprof).
                                "--pprof-bind-addr=0",
                                "--controllers=node,route",
                                "--configure-cloud-routes=true",
                                `--cluster-cidr=${args.podCidr}`,
                                `--route-reconciliation-period=${args.routeReconciliationPeriod}`,
                            ],
                            ...(accessKeyEnv.length > 0 ? { env: accessKeyEnv } : {}),
                            securityContext: { readOnlyRootFilesystem: true, allowPrivilegeEscalation: false },
                            livenessProbe: { httpGet: { host: "127.0.0.1", path: "/healthz", port: 10258 },
                                initialDelaySeconds: 15, periodSeconds: 10, timeoutSeconds: 15, failureThreshold: 8 },
                            volumeMounts: [{ name: "cloud-config", mountPath: "/etc/kubernetes/config", readOnly: true }],
                        }],
                        volumes: [{ name: "cloud-config", configMap: { name: "cloud-config" } }],
                    },
                },
            },
        }),
    ];
}

/**
 * flannel + Alibaba Cloud Controller Manager as typed `@pulumi/kubernetes` resources.
 * Pass the Kubernetes provider in `opts.provider` (or `opts.providers.kubernetes`).
 */
export class PodNetwork extends pulumi.ComponentResource {
    /** Every object applied, flannel first, resolved: what the offline synth writes as YAML. */
    public readonly manifests: pulumi.Output<KubeObject[]>;
    /** The Kubernetes resources created, for `dependsOn`. */
    public readonly resources: pulumi.CustomResource[];

    constructor(name: string, args: PodNetworkArgs, opts?: pulumi.ComponentResourceOptions) {
        const resolved = resolvePodNetworkArgs(args); // before super(): bad input registers nothing, not even this component
        super("alicloud-kubeadm:index:PodNetwork", name, {}, opts);
        const objects = [...flannelObjects(resolved), ...ccmObjects(resolved, args.routeTableId)];
        this.resources = applyObjects(name, objects, { parent: this, provider: opts?.provider });
        this.manifests = resolveObjects(objects);
        this.registerOutputs({ manifests: this.manifests });
    }
}
