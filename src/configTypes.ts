// The cluster configuration's types, written out: what a stack file (or a program) gives, and what the
// components read after defaults. src/config.ts checks at compile time that its schema parses exactly these
// shapes; they are written here rather than inferred from the schema so that the package's public
// declarations name no type of the schema library (a consumer compiles them without skipLibCheck).
import type { AutoscalerSettings, HealthRepair, HealthRepairInput, Rollout, RolloutInput, Taint } from "./rules";
import type { Validated } from "./validated";

/** Disk category as the ECS API spells it. */
export type DiskCategory = "cloud_essd" | "cloud_auto" | "cloud_efficiency" | "cloud_ssd" | "cloud_essd_entry";

/** A system disk as written (defaults: `cloud_essd`, 40 GiB). */
export interface DiskInput {
    /** Disk category. Default `cloud_essd`. */
    category?: DiskCategory;
    /** Size, GiB, 20–2048. Default 40. */
    size?: number;
}

/** A system disk after defaults. */
export interface Disk {
    category: DiskCategory;
    size: number;
}

/** A taint as written: an object, or `key[=value]:Effect`. */
export type TaintInput = string | Taint;

/**
 * SSH access to an existing node (mode `manual`): the attach script then runs over SSH instead of Cloud
 * Assistant. `password`, `privateKey` and `privateKeyPassword` become Pulumi secrets.
 */
export interface SshConnectionInput {
    /** Address the machine running Pulumi reaches the instance at. Required. */
    host: string;
    /** Default 22. */
    port?: number;
    /** Default `root`; another user needs passwordless sudo. */
    user?: string;
    /** PEM private key (secret: `pulumi config set --secret --path …`). Default none (the agent or the password). */
    privateKey?: string;
    /** Passphrase of the private key (secret). Default none. */
    privateKeyPassword?: string;
    /** Password (secret). Default none. */
    password?: string;
    /** SSH agent socket path. Default: the `SSH_AUTH_SOCK` of the machine running Pulumi. */
    agentSocketPath?: string;
}

/** The connection after defaults. */
export interface SshConnection extends SshConnectionInput {
    port: number;
    user: string;
}

/** A node pool as written. */
export interface NodePoolInput {
    /** Pool name: a DNS-1123 label, unique in the cluster, no `--`, not `existing` or `control-plane`. Required. */
    name: string;
    /** One instance type (`ecs.<family>.<size>`). Autoscaled pools must use exactly one. Required unless `instanceTypes`. */
    instanceType?: string;
    /** Several instance types, in order of preference (fixed-size pools only). Required unless `instanceType`. */
    instanceTypes?: string[];
    /** Fixed number of nodes, owned by Pulumi. Exclusive with `autoscale`. Required: this or `autoscale`. */
    size?: number;
    /** Bounds for the Cluster Autoscaler, in nodes. Exclusive with `size`. Required: this or `size`. */
    autoscale?: {
        /** Fewest nodes, ≥ 0. Required. */
        min: number;
        /** Most nodes, ≥ `min`, ≤ 1000 (ESS). Required. */
        max: number;
    };
    /** System disk of each node. Default `{ category: cloud_essd, size: 40 }` (GiB). */
    systemDisk?: DiskInput;
    /** Image for this pool's nodes only. Default: the cluster's `image`. */
    imageId?: string;
    /** Bootstrap token lifetime, a Go duration, for `NodePool` used directly without admission. Default `0` = never expires. No effect in a Cluster (a warning). */
    tokenTtl?: string;
    /** Kubelet labels (ones the kubelet may set). Default `{}`. */
    labels?: Record<string, string>;
    /** Taints, `{key, value?, effect}` or `"key[=value]:Effect"`. Default `[]`. */
    taints?: TaintInput[];
    /**
     * How `pulumi up` replaces the pool's outdated nodes (a changed image, instance types, userdata, version, labels
     * or taints); an autoscaled pool's stays within `autoscale.min`/`max`, its current nodes held from the autoscaler's
     * scale-down meanwhile. Default none: outdated nodes are reported, never replaced. Given, each field
     * defaults to `maxSurge: 1`, `maxUnavailable: 0`, `drainTimeout: "10m"`, `onDrainTimeout: "pause"`, `canary: true`,
     * `soak: "30s"`, `validate: true` (docs/rotation.md).
     */
    rollout?: RolloutInput;
    /**
     * Replace the pool's nodes that stay NotReady (or never get Ready) while their instance runs, on each `pulumi up`,
     * through the removal flow (drain, leave ESS, routes), then refill the pool: fixed pools only. Default none:
     * nothing is repaired. Given, each field defaults to `notReadyTimeout: "10m"`, `maxUnhealthy: 1`; more members not
     * Ready than `maxUnhealthy` and nothing is repaired (docs/rotation.md#health-repair).
     */
    healthRepair?: HealthRepairInput;
}

/** An existing ECS instance as written. */
export interface ExistingNodeInput {
    /** The instance (`i-…`), in the cluster's VPC. Required. */
    instanceId: string;
    /** `manual`: attach over Cloud Assistant (or SSH with `connection`); `auto`: userdata + system disk replacement. Default `manual`. */
    mode?: "manual" | "auto";
    /** Must be `true` for `mode: auto`, which wipes the system disk. Default false. */
    replaceSystemDisk?: boolean;
    /** On removal, remove a node that cannot run commands without `kubeadm reset`. Default false. */
    removeWithoutReset?: boolean;
    /**
     * When its spec (labels, taints, the `auto` image, the attach script) changes: `report` (a warning in the Pulumi
     * log; the node keeps what it joined with) or `replace` (drained, reset and attached again by `pulumi up`, one
     * existing node at a time; `auto` mode replaces its system disk again). Default `report` (docs/rotation.md#existing-nodes).
     */
    rollout?: "replace" | "report";
    /** Run the attach script over SSH (mode `manual` only). Default: Cloud Assistant. */
    connection?: SshConnectionInput;
    /** Kubelet labels. Default `{}`. */
    labels?: Record<string, string>;
    /** Taints, as for pools. Default `[]`. */
    taints?: TaintInput[];
}

/** The `alicloud-kubeadm:cluster` object as written in a stack file (defaults not yet applied; README "Configuration"). */
export interface ClusterConfigInput {
    /** Cluster name: a DNS-1123 label starting with a letter, ≤ 40 characters, no `--`; prefixes every resource. Required. */
    name: string;
    /** Kubernetes version, full and quoted (`"1.36.3"`), ≥ 1.31. Required. */
    kubernetesVersion: string;
    /** Zones of the region, one vSwitch each (masters spread over them). Required, at least one. */
    zones: string[];
    /** The VPC and its address ranges. Default: every field's default. */
    network?: {
        /** The VPC's CIDR. Default `192.168.0.0/16`. */
        vpcCidr?: string;
        /** Pods' CIDR (kubeadm `podSubnet`, the CCM's `--cluster-cidr`, flannel's `Network`). Default `172.16.0.0/16`. */
        podCidr?: string;
        /** Services' CIDR. Default `10.96.0.0/12`. */
        serviceCidr?: string;
        /** Prefix length of each node's pod CIDR, bits. Default 24. */
        nodeCidrMaskSize?: number;
        /** One vSwitch CIDR per zone, inside the VPC. Default: carved from `vpcCidr` (16 equal parts). */
        vswitchCidrs?: string[];
        /** An Enhanced NAT gateway with an EIP and SNAT for every vSwitch. Default true. */
        natGateway?: boolean;
        /** CIDRs outside the VPC allowed to the API port 6443. Default `[]` (none). */
        apiAllowedCidrs?: string[];
        /** Custom route entries the route table may hold (one pod route per node), entries. Default 200. */
        routeEntryQuota?: number;
    };
    /** The masters. Default: every field's default. */
    controlPlane?: {
        /** Number of masters: 1, 3 or 5. Default 1. */
        count?: number;
        /** Instance type of the masters. Default `ecs.g7.large`. */
        instanceType?: string;
        /** A public API endpoint (an EIP, or an Internet NLB with 3 or 5 masters). Default false. */
        publicEndpoint?: boolean;
        /** System disk of each master. Default `{ category: cloud_essd, size: 40 }` (GiB). */
        systemDisk?: DiskInput;
        /** Deletion protection on the masters and the NLB. Default false. */
        deletionProtection?: boolean;
    };
    /** The image masters and nodes boot. Default: the newest system image matching `^ubuntu_24_04_x64`. */
    image?: {
        /** An image id. Default none (`nameRegex` picks one). */
        id?: string;
        /** A pattern among system images, the newest match is used. Default `^ubuntu_24_04_x64`. */
        nameRegex?: string;
        /** Bake the node runtime into a custom image (NodeImage) that masters and pools boot. Default false. */
        bake?: boolean;
        /** Instance type of the image build (only with `bake`). Default `ecs.g7.large`. */
        bakeInstanceType?: string;
    };
    /** ESS node pools. Default `[]`. */
    nodePools?: NodePoolInput[];
    /** Existing ECS instances joined as nodes. Default `[]`. */
    existingNodes?: ExistingNodeInput[];
    /** The Cluster Autoscaler's settings (used when a pool autoscales). Default: every setting's default. */
    autoscaler?: Partial<AutoscalerSettings> & {
        /** The autoscaler's version, a full `x.y.z`. Default: the latest patch of the Kubernetes minor. */
        version?: string;
    };
    /** Image and package sources. Default: the region's (src/rules/images.ts). */
    images?: ImageSources;
    /** Node admission by cloud identity (docs/admission.md). Default: every field's default. */
    admission?: AdmissionConfig;
    /** etcd backups to the stack's OSS bucket (docs/disaster-recovery.md#backups). Default: every field's default. */
    backup?: Partial<BackupConfig>;
    /** Pod security (docs/security.md#pod-security). Default: every field's default. */
    podSecurity?: PodSecurityConfig;
    /** How `pulumi up` moves the cluster to a new kubernetesVersion (docs/upgrades.md). Default: every field's default. */
    upgrade?: UpgradeConfig;
    /** Cloud tags on every resource, besides `alicloud-kubeadm/cluster=<name>`. Default `{}`. */
    tags?: Record<string, string>;
}

/** etcd backups (src/rules/backup.ts BACKUP_DEFAULTS). */
export interface BackupConfig {
    /** Minutes between backups. Default 60. */
    intervalMinutes: number;
    /** Days OSS keeps hourly backups. Default 7. */
    hourlyRetentionDays: number;
    /** Days OSS keeps the daily copies. Default 365. */
    dailyRetentionDays: number;
    /** Generation of the backup key: raise it by one to rotate the key. Default 1. */
    keyGeneration: number;
}

/** Pod security (docs/security.md#pod-security). */
/** Upgrades (docs/upgrades.md#nodes). */
export interface UpgradeConfig {
    /** Worker nodes drained and upgraded in place at once, 1 to 20; the health gate runs after each batch. Default 1. */
    nodeBatchSize?: number;
}

export interface PodSecurityConfig {
    /** Namespaces besides kube-system and kube-flannel whose pods may run with host access on the masters. Default none. */
    exemptNamespaces?: string[];
}

/** Node admission by cloud identity (docs/admission.md). */
export interface AdmissionConfig {
    /** PEM of the ECS instance identity signing certificate(s). Default: Alibaba's, vendored (src/admission/alibabaCertificate.ts). */
    identityCertificate?: string;
    /** `key=value`: instances with this ECS tag may join through the one-line manual path. Default: off. */
    joinTag?: string;
    /** Seconds a Node's heartbeat must be stale (and its instance restarted since) before the instance joins again. Default 300. */
    readmitAfterSeconds?: number;
    /** Accept instance identity signatures with a SHA-1 digest (docs/security.md#sha-1). Default true. */
    allowSha1?: boolean;
}

/** Image and package sources; each unset one takes the region's default (src/rules/images.ts). */
export interface ImageSources {
    /** flannel's image, a full reference. Default: {@link DEFAULT_FLANNEL_IMAGE} (or the region's mirror). */
    flannel?: string;
    /** flannel's CNI plugin image. Default: {@link DEFAULT_FLANNEL_CNI_PLUGIN_IMAGE} (or the region's mirror). */
    flannelCniPlugin?: string;
    /** The Alibaba Cloud Controller Manager's image. Default: {@link DEFAULT_CCM_IMAGE}. */
    cloudControllerManager?: string;
    /** The Cluster Autoscaler's repository (the tag is its version). Default: `registry.k8s.io/autoscaling/cluster-autoscaler` (or the region's mirror). */
    clusterAutoscalerRepository?: string;
    /** kubeadm's image repository. Default: `registry.k8s.io`; mainland China regions: Alibaba's mirror. */
    kubernetesRepository?: string;
    /** Package mirror of apt/yum and the Kubernetes packages. Default: upstream; mainland China regions: Alibaba's mirror. */
    packageMirror?: string;
    /** Node.js image of the admission service. Default: {@link DEFAULT_ADMISSION_IMAGE} (pinned by digest). */
    admission?: string;
}

/** A node pool after the schema's defaults (before normalisation). */
export interface ParsedNodePool extends Required<Pick<NodePoolInput, "name" | "labels">> {
    tokenTtl?: string;
    instanceType?: string;
    instanceTypes?: string[];
    size?: number;
    autoscale?: { min: number; max: number };
    systemDisk: Disk;
    imageId?: string;
    taints: TaintInput[];
    rollout?: RolloutInput;
    healthRepair?: HealthRepairInput;
}

/** An existing node after the schema's defaults (before normalisation). */
export interface ParsedExistingNode {
    instanceId: string;
    mode: "manual" | "auto";
    replaceSystemDisk: boolean;
    removeWithoutReset: boolean;
    rollout: "replace" | "report";
    connection?: SshConnection;
    labels: Record<string, string>;
    taints: TaintInput[];
}

/** The cluster object after the schema's defaults (before the cross-field rules and normalisation). */
export interface ParsedClusterConfig {
    name: string;
    kubernetesVersion: string;
    zones: string[];
    network: {
        vpcCidr: string;
        podCidr: string;
        serviceCidr: string;
        nodeCidrMaskSize: number;
        vswitchCidrs?: string[];
        natGateway: boolean;
        apiAllowedCidrs: string[];
        routeEntryQuota: number;
    };
    controlPlane: {
        count: number;
        instanceType: string;
        publicEndpoint: boolean;
        systemDisk: Disk;
        deletionProtection: boolean;
    };
    image: { id?: string; nameRegex: string; bake: boolean; bakeInstanceType?: string };
    nodePools: ParsedNodePool[];
    existingNodes: ParsedExistingNode[];
    autoscaler: AutoscalerSettings & { version?: string };
    images: ImageSources;
    admission: AdmissionConfig & { allowSha1: boolean };
    podSecurity: { exemptNamespaces: string[] };
    upgrade: { nodeBatchSize: number };
    backup: BackupConfig;
    tags: Record<string, string>;
}

/**
 * A node pool as its parser returns it (`parseClusterConfig(...).nodePools[i]`, or NodePool's own check of a pool
 * given directly): taints normalised, instance types as one list, exactly one of `size` / `autoscale`.
 */
export type NodePoolConfig = Validated<NodePoolFields>;
/** The fields of a validated node pool. */
export type NodePoolFields = Omit<ParsedNodePool, "taints" | "instanceType" | "rollout" | "healthRepair"> & {
    taints: Taint[]; instanceTypes: string[]; /** The rollout, defaults applied. */ rollout?: Rollout;
    /** Fixed pools: the health repair, defaults applied. */ healthRepair?: HealthRepair;
};
/** An existing node as its parser returns it, taints normalised. */
export type ExistingNodeConfig = Validated<ExistingNodeFields>;
/** The fields of a validated existing node. */
export type ExistingNodeFields = Omit<ParsedExistingNode, "taints"> & { taints: Taint[] };

/** The fields of the validated cluster configuration. */
export interface ClusterConfigFields extends Omit<ParsedClusterConfig, "nodePools" | "existingNodes" | "network"> {
    region: string;
    network: ParsedClusterConfig["network"] & { vswitchCidrs: string[] };
    nodePools: NodePoolConfig[];
    existingNodes: ExistingNodeConfig[];
}

/** The typed, defaulted, validated cluster configuration: only parseClusterConfig / validateClusterConfig make one. */
export type ClusterConfig = Validated<ClusterConfigFields>;

/**
 * What a node-joining component (NodePool, ExistingNode, the attach command) reads of the cluster's config: its
 * name, region, Kubernetes version, image sources, whether nodes boot a baked image, and the pod CIDR. A validated
 * ClusterConfig is one; the Cluster hands each the slice `nodeJoinConfig(config)`.
 */
export type NodeJoinConfig = Validated<NodeJoinFields>;
/** The fields of {@link NodeJoinConfig}. */
export type NodeJoinFields = Pick<ClusterConfigFields, "name" | "region" | "kubernetesVersion" | "images"> & {
    image?: Pick<ClusterConfigFields["image"], "bake">;
    network: Pick<ClusterConfigFields["network"], "podCidr">;
};
