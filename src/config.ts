// The stack configuration contract (DESIGN.md §5): the `alicloud-kubeadm:cluster` object and
// `alicloud:region`, parsed into a typed, defaulted ClusterConfig.
//
// Shape and defaults live in one zod schema; rules that relate fields to each other (CIDR math,
// capacity, uniqueness) are plain functions below it. validateClusterConfig reports every problem
// at once, each as `<property.path>: <reason>`, so a user fixes a config in one pass.
import { z } from "zod";
import {
    carveVSwitchCidrs,
    carvedVSwitchPrefix,
    contains,
    formatCidr,
    nodeCidrCount,
    overlaps,
    parseCidr,
    VSWITCH_MAX_PREFIX,
    VSWITCH_MIN_PREFIX,
    sizeOf,
    type Cidr,
} from "./rules/cidr";
import { autoscalerVersionFor, refusedAutoscalerVersion } from "./components/clusterAutoscaler";
import { isLabelValue, kubeletMaySetLabel, labelKeyProblem } from "./rules/labels";
export { isChinaRegion } from "./rules/labels";

/** Lowest Kubernetes minor supported: kubeadm config API v1beta4 arrived in 1.31. */
export const MIN_KUBERNETES_MINOR = 31;
/** ESS scaling group and scaling configuration names (`<name>-<pool>`) are at most 64 characters. */
export const MAX_ESS_NAME_LENGTH = 64;
/** ESS allows at most 20 tags on a scaling configuration (same as components/nodePool.ts). */
export const MAX_SCALING_CONFIGURATION_TAGS = 20;
/** Tag keys Alibaba Cloud reserves for itself (case-insensitive). */
const RESERVED_TAG_KEY = /^(aliyun|acs:)/i;
/** Labels alicloud-kubeadm adds to pool nodes and their scaling configuration (components/nodePool.ts). */
const POOL_LABEL_KEY = "alicloud-kubeadm/pool";
const AUTOSCALED_LABEL_KEY = "alicloud-kubeadm/autoscaled";
const CLUSTER_TAG_KEY = "alicloud-kubeadm/cluster";
/** Host offset of master 0 in its vSwitch (components/controlPlane.ts masterPrivateIp: base + 10 + n). */
const MASTER_IP_OFFSET = 10;
/** Addresses Alibaba reserves in every vSwitch (the first 3 and the last 1): a host offset must be below size − 4. */
const VSWITCH_RESERVED_ADDRESSES = 4;

/** Alibaba Cloud's default quota of custom entries per VPC route table (raise it in the Quota Center). */
export const DEFAULT_ROUTE_ENTRY_QUOTA = 200;

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const INSTANCE_ID = /^i-[a-z0-9]{8,30}$/;
const VERSION = /^(\d+)\.(\d+)\.(\d+)$/;
const DURATION = /^(\d+(\.\d+)?(ns|us|ms|s|m|h))+$/;
/** `registry[:port]/path` without tag or digest (a tag is appended by the consumer). */
const IMAGE_REPOSITORY = /^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(\/[a-z0-9]+([._-]+[a-z0-9]+)*)*$/;
/** A full image reference: repository plus `:tag` and/or `@sha256:<hex>`. */
const IMAGE_REFERENCE = /^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(\/[a-z0-9]+([._-]+[a-z0-9]+)*)*(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[a-f0-9]{64})?$/;
const HTTPS_URL = /^https:\/\/[A-Za-z0-9.-]+(:\d+)?(\/[^\s'"\\]*)?$/;

// The schema is built twice: strict (unknown keys are reported, catching typos) and lenient (unknown
// keys stripped), so that a typo does not hide the cross-field problems from the same run.
function buildSchema(obj: typeof z.strictObject) {
    const diskSchema = obj({
        /** Disk category as the ECS API spells it. Default `cloud_essd`. */
        category: z.enum(["cloud_essd", "cloud_auto", "cloud_efficiency", "cloud_ssd", "cloud_essd_entry"]).default("cloud_essd"),
        /** Size in GiB. Default 40 for masters and nodes. */
        size: z.number().int().min(20).max(2048).default(40),
    });

    const taintSchema = z.union([
        z.string(),
        obj({
            key: z.string(),
            value: z.string().optional(),
            effect: z.enum(["NoSchedule", "PreferNoSchedule", "NoExecute"]),
        }),
    ]);

    const nodeShape = {
        /** Kubelet labels; `alicloud-kubeadm/pool=<name>` is always added for pools. */
        labels: z.record(z.string(), z.string()).default({}),
        /** Taints registered by the kubelet, as objects or `key[=value]:Effect` strings. */
        taints: z.array(taintSchema).default([]),
    };

    const poolSchema = obj({
        name: z.string(),
        /** One instance type. Autoscaled pools must use exactly one (the autoscaler's template reads one). */
        instanceType: z.string().optional(),
        /** Several instance types, in order of preference (fixed-size pools only). */
        instanceTypes: z.array(z.string()).min(1).optional(),
        /** Fixed number of nodes, owned by Pulumi. Exclusive with `autoscale`. */
        size: z.number().int().optional(),
        /** Bounds for the Cluster Autoscaler. Exclusive with `size`. */
        autoscale: obj({ min: z.number().int(), max: z.number().int() }).optional(),
        systemDisk: diskSchema.default({ category: "cloud_essd", size: 40 }),
        /** Image for this pool; default the cluster's `image`. */
        imageId: z.string().optional(),
        /** Bootstrap token lifetime, a Go duration. Default `0` = never expires (ESS userdata is static). */
        tokenTtl: z.string().default("0"),
        ...nodeShape,
    });

    const existingNodeSchema = obj({
        instanceId: z.string(),
        /** `manual`: run the attach script over Cloud Assistant; `auto`: userdata + system disk replacement. */
        mode: z.enum(["manual", "auto"]).default("manual"),
        /** Required to be `true` for `mode: auto`, which wipes the system disk. */
        replaceSystemDisk: z.boolean().default(false),
        ...nodeShape,
    });

    const clusterSchema = obj({
        name: z.string(),
        kubernetesVersion: z.string(),
        zones: z.array(z.string()),
        network: obj({
            vpcCidr: z.string().default("192.168.0.0/16"),
            podCidr: z.string().default("172.16.0.0/16"),
            serviceCidr: z.string().default("10.96.0.0/12"),
            /** Per-node pod CIDR size. Default 24 (256 addresses, kubeadm's default). */
            nodeCidrMaskSize: z.number().int().default(24),
            /** One vSwitch CIDR per zone, in zone order. Default: carved from vpcCidr. */
            vswitchCidrs: z.array(z.string()).optional(),
            /** Create an Enhanced NAT gateway with an EIP and SNAT for every vSwitch. Default true. */
            natGateway: z.boolean().default(true),
            /** CIDRs outside the VPC allowed to reach the API server on 6443. Default none. */
            apiAllowedCidrs: z.array(z.string()).default([]),
            /** Custom route entries allowed in the route table (one per node). Default 200. */
            routeEntryQuota: z.number().int().positive().default(DEFAULT_ROUTE_ENTRY_QUOTA),
        }).default({
            vpcCidr: "192.168.0.0/16", podCidr: "172.16.0.0/16", serviceCidr: "10.96.0.0/12", nodeCidrMaskSize: 24,
            natGateway: true, apiAllowedCidrs: [], routeEntryQuota: DEFAULT_ROUTE_ENTRY_QUOTA,
        }),
        controlPlane: obj({
            count: z.number().int().default(1),
            instanceType: z.string().default("ecs.g7.large"),
            publicEndpoint: z.boolean().default(false),
            systemDisk: diskSchema.default({ category: "cloud_essd", size: 40 }),
            /** ECS deletion protection on masters. Default false; the prod stack turns it on. */
            deletionProtection: z.boolean().default(false),
        }).default({
            count: 1, instanceType: "ecs.g7.large", publicEndpoint: false,
            systemDisk: { category: "cloud_essd", size: 40 }, deletionProtection: false,
        }),
        /** OS image for masters and nodes: an image id, or a name pattern resolved among system images. */
        image: obj({
            id: z.string().optional(),
            nameRegex: z.string().default("^ubuntu_24_04_x64"),
        }).default({ nameRegex: "^ubuntu_24_04_x64" }),
        nodePools: z.array(poolSchema).default([]),
        existingNodes: z.array(existingNodeSchema).default([]),
        autoscaler: obj({
            scaleDownUtilizationThreshold: z.number().default(0.5),
            scaleDownUnneededTime: z.string().default("10m"),
            scaleDownDelayAfterAdd: z.string().default("10m"),
            expander: z.string().default("least-waste"),
            balanceSimilarNodeGroups: z.boolean().default(false),
            skipNodesWithLocalStorage: z.boolean().default(true),
            /** Cluster Autoscaler version. Default: the latest patch of the Kubernetes minor. */
            version: z.string().optional(),
        }).default({
            scaleDownUtilizationThreshold: 0.5, scaleDownUnneededTime: "10m", scaleDownDelayAfterAdd: "10m",
            expander: "least-waste", balanceSimilarNodeGroups: false, skipNodesWithLocalStorage: true,
        }),
        /**
         * Image and package sources (DESIGN.md §6). Defaults: upstream flannel and autoscaler images
         * everywhere (no Alibaba mirror exists), Alibaba's CCM image, and for Kubernetes images and
         * packages the region's default mirrors (Alibaba's in China regions, upstream elsewhere).
         */
        images: obj({
            /** flanneld image (also runs the install-cni init container). */
            flannel: z.string().optional(),
            /** flannel CNI plugin image (init container). */
            flannelCniPlugin: z.string().optional(),
            /** Alibaba Cloud Controller Manager image. */
            cloudControllerManager: z.string().optional(),
            /** Cluster Autoscaler image repository; the tag `v<version>` is appended. */
            clusterAutoscalerRepository: z.string().optional(),
            /** kubeadm `imageRepository`: control-plane and pause images. */
            kubernetesRepository: z.string().optional(),
            /** Base URL of the package mirror (Kubernetes and containerd packages). */
            packageMirror: z.string().optional(),
        }).default({}),
        /** Free-form tags put on every cloud resource, besides `alicloud-kubeadm/cluster=<name>`. */
        tags: z.record(z.string(), z.string()).default({}),
    });
    return clusterSchema;
}

const clusterSchema = buildSchema(z.strictObject);
const lenientSchema = buildSchema(z.object as typeof z.strictObject);

/** The `alicloud-kubeadm:cluster` object as written in a stack file (defaults not yet applied). */
export type ClusterConfigInput = z.input<typeof clusterSchema>;

export interface Taint {
    key: string;
    value?: string;
    effect: "NoSchedule" | "PreferNoSchedule" | "NoExecute";
}

type Parsed = z.output<typeof clusterSchema>;
type ParsedPool = Parsed["nodePools"][number];

/** A node pool after defaults: taints normalised, exactly one of `size` / `autoscale`. */
export type NodePoolConfig = Omit<ParsedPool, "taints"> & { taints: Taint[]; instanceTypes: string[] };
export type ExistingNodeConfig = Omit<Parsed["existingNodes"][number], "taints"> & { taints: Taint[] };

/** The typed, defaulted, validated cluster configuration every component reads. */
export interface ClusterConfig extends Omit<Parsed, "nodePools" | "existingNodes" | "network"> {
    region: string;
    network: Parsed["network"] & { vswitchCidrs: string[] };
    nodePools: NodePoolConfig[];
    existingNodes: ExistingNodeConfig[];
}

export interface ValidationResult {
    /** Present only when there are no errors. */
    config?: ClusterConfig;
    /** Every problem, each `<property.path>: <reason>`. */
    errors: string[];
    /** Things that work but deserve attention, same format. */
    warnings: string[];
}

/** Thrown by parseClusterConfig; `problems` lists every `<property.path>: <reason>`. */
export class ClusterConfigError extends Error {
    constructor(public readonly problems: string[]) {
        super(`invalid alicloud-kubeadm:cluster configuration (${problems.length} problem${problems.length === 1 ? "" : "s"}):\n` +
            problems.map((p) => `  - ${p}`).join("\n"));
        this.name = "ClusterConfigError";
    }
}

/** Parses `text` as `key[=value]:Effect`. */
export function parseTaint(text: string): Taint | string {
    const m = /^([^=:]+)(?:=([^:]*))?:(NoSchedule|PreferNoSchedule|NoExecute)$/.exec(text);
    if (!m) {
        return `"${text}" is not a taint (expected key[=value]:NoSchedule|PreferNoSchedule|NoExecute)`;
    }
    return m[2] === undefined ? { key: m[1], effect: m[3] as Taint["effect"] } : { key: m[1], value: m[2], effect: m[3] as Taint["effect"] };
}

/**
 * Checks and defaults a raw cluster object. Never throws for bad input: every problem is returned.
 * @param raw the `alicloud-kubeadm:cluster` config value (any shape)
 * @param region the `alicloud:region` config value
 */
export function validateClusterConfig(raw: unknown, region: string | undefined): ValidationResult {
    const errors: string[] = [];
    const warnings: string[] = [];
    if (!region) {
        errors.push("alicloud:region: is not set (run `pulumi config set alicloud:region cn-hangzhou`)");
    }
    if (raw === undefined || raw === null) {
        errors.push("alicloud-kubeadm:cluster: is not set (copy stacks/Pulumi.dev.yaml for a starting point)");
        return { errors, warnings };
    }
    const strict = clusterSchema.safeParse(raw, { reportInput: true });
    const parsed = strict.success ? strict : lenientSchema.safeParse(raw);
    if (!strict.success) {
        for (const issue of strict.error.issues.flatMap((i) => unwrapUnion(i))) {
            errors.push(`${issue.path.length ? issue.path.join(".") : "alicloud-kubeadm:cluster"}: ${describeIssue(issue)}`);
        }
    }
    if (!parsed.success) {
        return { errors, warnings };
    }
    const c = parsed.data as Parsed;
    const problem = (path: string, reason: string) => errors.push(`${path}: ${reason}`);
    const warn = (path: string, reason: string) => warnings.push(`${path}: ${reason}`);

    checkName(c.name, problem);
    checkVersion(c.kubernetesVersion, problem);
    checkZones(c.zones, region, problem);
    if (![1, 3, 5].includes(c.controlPlane.count)) {
        problem("controlPlane.count", `must be 1, 3 or 5 (an odd etcd quorum), got ${c.controlPlane.count}`);
    } else if (c.controlPlane.count > 1 && c.zones.length < 2) {
        problem("controlPlane.count", `${c.controlPlane.count} masters sit behind an NLB, which needs at least 2 zones; list another zone or use 1 master`);
    }
    const pools = checkPools(c.nodePools, c.name, problem);
    checkTags(c, pools, problem);
    checkImages(c.images, problem);
    const existing = checkExistingNodes(c.existingNodes, problem);
    const vswitchCidrs = checkNetwork(c, pools, existing.length, problem, warn);
    checkAutoscaler(c.autoscaler, c.kubernetesVersion, pools, problem);

    if (errors.length > 0 || !region) {
        return { errors, warnings };
    }
    return {
        config: { ...c, region, network: { ...c.network, vswitchCidrs }, nodePools: pools, existingNodes: existing },
        errors,
        warnings,
    };
}

/** Like validateClusterConfig, but throws ClusterConfigError listing every problem. */
export function parseClusterConfig(raw: unknown, region: string | undefined): ClusterConfig {
    const result = validateClusterConfig(raw, region);
    if (!result.config) {
        throw new ClusterConfigError(result.errors);
    }
    return result.config;
}

type Report = (path: string, reason: string) => void;

/**
 * A union failure (e.g. a taint given as an object with a bad effect) is reported through the branch
 * that matched the input's type, so the message names the real field instead of "Invalid input".
 */
function unwrapUnion(issue: z.core.$ZodIssue): z.core.$ZodIssue[] {
    if (issue.code !== "invalid_union" || issue.errors.length === 0) {
        return [issue];
    }
    const branch = issue.errors.find((b) => !b.some((i) => i.code === "invalid_type" && i.path.length === 0)) ?? issue.errors[0];
    return branch.flatMap((i) => unwrapUnion({ ...i, path: [...issue.path, ...i.path] } as z.core.$ZodIssue));
}

function describeIssue(issue: z.core.$ZodIssue): string {
    switch (issue.code) {
        case "invalid_type":
            return issue.input === undefined ? `is required (${issue.expected})` : `must be ${issue.expected}`;
        case "unrecognized_keys":
            return `unknown key${issue.keys.length > 1 ? "s" : ""} ${issue.keys.map((k) => `"${k}"`).join(", ")} (check the spelling against README's config reference)`;
        case "invalid_value":
            return `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(", ")}`;
        default:
            return issue.message;
    }
}

function checkName(name: string, problem: Report): void {
    if (!DNS1123_LABEL.test(name) || name.length > 40) {
        problem("name", `"${name}" must be a DNS-1123 label of at most 40 characters (lowercase letters, digits, '-')`);
    }
}

function checkVersion(version: string, problem: Report): void {
    const m = VERSION.exec(version);
    if (!m) {
        problem("kubernetesVersion", `"${version}" must be a full version like "1.34.2" (quote it in YAML)`);
    } else if (Number(m[1]) !== 1 || Number(m[2]) < MIN_KUBERNETES_MINOR) {
        problem("kubernetesVersion", `${version} is older than 1.${MIN_KUBERNETES_MINOR}; kubeadm config v1beta4 needs 1.${MIN_KUBERNETES_MINOR} or newer`);
    }
}

function checkZones(zones: string[], region: string | undefined, problem: Report): void {
    if (zones.length === 0) {
        problem("zones", `needs at least one zone, e.g. [${region ?? "cn-hangzhou"}-h]`);
    }
    const seen = new Set<string>();
    zones.forEach((zone, i) => {
        if (seen.has(zone)) {
            problem(`zones.${i}`, `"${zone}" is listed twice`);
        }
        if (region && !zone.startsWith(`${region}-`)) {
            problem(`zones.${i}`, `"${zone}" is not a zone of region ${region} (zone ids start with "${region}-", e.g. ${region}-h)`);
        }
        seen.add(zone);
    });
}

function checkLabelKey(key: string, path: string, problem: Report): void {
    const reason = labelKeyProblem(key);
    if (reason) {
        problem(path, `label key "${key}": ${reason}`);
    } else if (!kubeletMaySetLabel(key)) {
        problem(path, `label "${key}" is in a kubernetes.io/k8s.io namespace the kubelet may not set (NodeRestriction); use your own prefix or node.kubernetes.io/`);
    }
}

function checkLabels(labels: Record<string, string>, path: string, problem: Report): void {
    for (const [key, value] of Object.entries(labels)) {
        checkLabelKey(key, `${path}.${key}`, problem);
        if (!isLabelValue(value)) {
            problem(`${path}.${key}`, `label value "${value}" must be empty or at most 63 characters of [A-Za-z0-9-_.], starting and ending alphanumeric`);
        }
    }
}

function checkTaints(taints: Array<string | Taint>, path: string, problem: Report): Taint[] {
    const out: Taint[] = [];
    taints.forEach((t, i) => {
        const taint = typeof t === "string" ? parseTaint(t) : t;
        if (typeof taint === "string") {
            problem(`${path}.${i}`, taint);
            return;
        }
        const before = out.length;
        checkLabelKey(taint.key, `${path}.${i}.key`, (p, r) => problem(p, r.replace("label key", "taint key").replace(/label "/, "taint \"")));
        if (taint.value !== undefined && !isLabelValue(taint.value)) {
            problem(`${path}.${i}.value`, `taint value "${taint.value}" must be at most 63 characters of [A-Za-z0-9-_.]`);
        }
        if (out.length === before) {
            out.push(taint);
        }
    });
    return out;
}

function checkPools(pools: ParsedPool[], clusterName: string, problem: Report): NodePoolConfig[] {
    const names = new Set<string>();
    return pools.map((pool, i) => {
        const path = `nodePools.${i}`;
        if (!DNS1123_LABEL.test(pool.name) || pool.name.length > 40) {
            problem(`${path}.name`, `"${pool.name}" must be a DNS-1123 label of at most 40 characters`);
        }
        if (names.has(pool.name)) {
            problem(`${path}.name`, `"${pool.name}" is used by another pool; pool names must be unique`);
        }
        names.add(pool.name);
        const essName = `${clusterName}-${pool.name}`;
        if (essName.length > MAX_ESS_NAME_LENGTH) {
            problem(`${path}.name`, `the scaling group and scaling configuration are named "${essName}" (${essName.length} characters); ESS allows at most ${MAX_ESS_NAME_LENGTH}, so name + "-" + pool name must fit: shorten the pool name to at most ${Math.max(MAX_ESS_NAME_LENGTH - clusterName.length - 1, 0)} characters`);
        }
        if ((pool.size === undefined) === (pool.autoscale === undefined)) {
            problem(path, "set exactly one of `size` (fixed) or `autoscale: { min, max }`");
        }
        if (pool.size !== undefined && pool.size < 0) {
            problem(`${path}.size`, `must be 0 or more, got ${pool.size}`);
        }
        if (pool.autoscale) {
            const { min, max } = pool.autoscale;
            if (min < 0) {
                problem(`${path}.autoscale.min`, `must be 0 or more, got ${min}`);
            }
            if (max < min) {
                problem(`${path}.autoscale.max`, `must be at least autoscale.min (${min}), got ${max}`);
            }
            if (max > 2000) {
                problem(`${path}.autoscale.max`, `ESS allows at most 2000 instances per group, got ${max}`);
            }
        }
        if (pool.size !== undefined && pool.size > 2000) {
            problem(`${path}.size`, `ESS allows at most 2000 instances per group, got ${pool.size}`);
        }
        const types = pool.instanceTypes ?? (pool.instanceType ? [pool.instanceType] : []);
        if (pool.instanceType && pool.instanceTypes) {
            problem(path, "set `instanceType` or `instanceTypes`, not both");
        } else if (types.length === 0) {
            problem(`${path}.instanceType`, "is required (e.g. ecs.g7.xlarge)");
        } else if (pool.autoscale && types.length > 1) {
            problem(`${path}.instanceTypes`, "an autoscaled pool takes exactly one instance type: the Cluster Autoscaler builds its scale-from-zero template from one (use `instanceType`)");
        }
        checkLabels(pool.labels, `${path}.labels`, problem);
        if ("alicloud-kubeadm/pool" in pool.labels) {
            problem(`${path}.labels.alicloud-kubeadm/pool`, "is set by alicloud-kubeadm to the pool name; remove it");
        }
        if (!DURATION.test(pool.tokenTtl) && pool.tokenTtl !== "0") {
            problem(`${path}.tokenTtl`, `"${pool.tokenTtl}" must be a duration like 0 (never expires), 24h or 30m`);
        }
        const taints = checkTaints(pool.taints, `${path}.taints`, problem);
        return { ...pool, instanceTypes: types, taints };
    });
}

/**
 * ESS tag rules, mirroring components/nodePool.ts `scalingConfigurationTags` so bad input fails before
 * any resource: autoscaled pools tag the scaling configuration with exactly the node labels, fixed pools
 * with the cloud tags plus the node labels; at most 20 tags, no key starting with `aliyun` or `acs:`.
 */
function checkTags(c: Parsed, pools: NodePoolConfig[], problem: Report): void {
    for (const key of Object.keys(c.tags)) {
        if (RESERVED_TAG_KEY.test(key)) {
            problem(`tags.${key}`, `tag key "${key}": Alibaba Cloud reserves keys starting with aliyun or acs: (ESS and the tag service refuse them)`);
        }
    }
    const cloudTags = { ...c.tags, [CLUSTER_TAG_KEY]: c.name };
    pools.forEach((pool, i) => {
        const path = `nodePools.${i}.labels`;
        const labels = { ...pool.labels, [POOL_LABEL_KEY]: pool.name, ...(pool.autoscale ? { [AUTOSCALED_LABEL_KEY]: "true" } : {}) };
        const tags = pool.autoscale ? labels : { ...cloudTags, ...labels };
        const count = Object.keys(tags).length;
        if (count > MAX_SCALING_CONFIGURATION_TAGS) {
            const parts = pool.autoscale
                ? `${Object.keys(pool.labels).length} labels + ${POOL_LABEL_KEY} + ${AUTOSCALED_LABEL_KEY}`
                : `${Object.keys(pool.labels).length} labels + ${POOL_LABEL_KEY} + ${Object.keys(cloudTags).length} cloud tags (tags + ${CLUSTER_TAG_KEY})`;
            problem(path, `the scaling configuration would carry ${count} tags (${parts}); ESS allows at most ${MAX_SCALING_CONFIGURATION_TAGS}: remove labels${pool.autoscale ? "" : " or tags"}`);
        }
        for (const key of Object.keys(pool.labels)) {
            if (RESERVED_TAG_KEY.test(key)) {
                problem(`${path}.${key}`, `label key "${key}" becomes a scaling-configuration tag, and ESS refuses tag keys starting with aliyun or acs:`);
            }
        }
    });
}

function checkImages(images: Parsed["images"], problem: Report): void {
    for (const key of ["flannel", "flannelCniPlugin", "cloudControllerManager"] as const) {
        const value = images[key];
        if (value !== undefined && !IMAGE_REFERENCE.test(value)) {
            problem(`images.${key}`, `"${value}" is not an image reference (expected registry/path:tag, e.g. registry.cn-hangzhou.aliyuncs.com/my-ns/flannel:v0.28.9)`);
        }
    }
    for (const key of ["clusterAutoscalerRepository", "kubernetesRepository"] as const) {
        const value = images[key];
        if (value !== undefined && !IMAGE_REPOSITORY.test(value)) {
            problem(`images.${key}`, `"${value}" is not an image repository (expected registry/path without tag or digest, e.g. registry.cn-hangzhou.aliyuncs.com/my-ns)`);
        }
    }
    if (images.packageMirror !== undefined && !HTTPS_URL.test(images.packageMirror)) {
        problem("images.packageMirror", `"${images.packageMirror}" must be an https URL (e.g. https://mirrors.cloud.aliyuncs.com)`);
    }
}

function checkExistingNodes(nodes: Parsed["existingNodes"], problem: Report): ExistingNodeConfig[] {
    const ids = new Set<string>();
    return nodes.map((node, i) => {
        const path = `existingNodes.${i}`;
        if (!INSTANCE_ID.test(node.instanceId)) {
            problem(`${path}.instanceId`, `"${node.instanceId}" is not an ECS instance id (expected i-…, e.g. i-bp1exampleexample01)`);
        }
        if (ids.has(node.instanceId)) {
            problem(`${path}.instanceId`, `${node.instanceId} is listed twice`);
        }
        ids.add(node.instanceId);
        if (node.mode === "auto" && !node.replaceSystemDisk) {
            problem(`${path}.replaceSystemDisk`, "mode auto replaces the instance's system disk (all data on it is lost); set replaceSystemDisk: true to confirm, or use mode: manual");
        }
        checkLabels(node.labels, `${path}.labels`, problem);
        return { ...node, taints: checkTaints(node.taints, `${path}.taints`, problem) };
    });
}

function cidrAt(text: string, path: string, problem: Report): Cidr | undefined {
    const c = parseCidr(text);
    if (typeof c === "string") {
        problem(path, c);
        return undefined;
    }
    return c;
}

/** CIDR rules; returns the vSwitch CIDRs (given or carved), one per zone. */
function checkNetwork(c: Parsed, pools: NodePoolConfig[], existingCount: number, problem: Report, warn: Report): string[] {
    const n = c.network;
    const vpc = cidrAt(n.vpcCidr, "network.vpcCidr", problem);
    const pod = cidrAt(n.podCidr, "network.podCidr", problem);
    const svc = cidrAt(n.serviceCidr, "network.serviceCidr", problem);
    if (vpc && (vpc.prefix < 8 || vpc.prefix > 28)) {
        problem("network.vpcCidr", `a VPC CIDR must be between /8 and /28, got /${vpc.prefix}`);
    }
    const named: Array<[string, string, Cidr | undefined]> = [
        ["network.vpcCidr", n.vpcCidr, vpc], ["network.podCidr", n.podCidr, pod], ["network.serviceCidr", n.serviceCidr, svc],
    ];
    for (let i = 0; i < named.length; i++) {
        for (let j = 0; j < i; j++) {
            const [pathA, , a] = named[i];
            const [pathB, textB, b] = named[j];
            if (a && b && overlaps(a, b)) {
                problem(pathA, `overlaps ${pathB} (${textB})`);
            }
        }
    }

    let vswitchCidrs: string[] = [];
    if (n.vswitchCidrs) {
        if (n.vswitchCidrs.length !== c.zones.length) {
            problem("network.vswitchCidrs", `needs one CIDR per zone (${c.zones.length}), got ${n.vswitchCidrs.length}`);
        }
        const parsed: Array<Cidr | undefined> = n.vswitchCidrs.map((text, i) => cidrAt(text, `network.vswitchCidrs.${i}`, problem));
        parsed.forEach((v, i) => {
            if (!v) {
                return;
            }
            if (v.prefix < VSWITCH_MIN_PREFIX || v.prefix > VSWITCH_MAX_PREFIX) {
                problem(`network.vswitchCidrs.${i}`, `a vSwitch CIDR must be between /${VSWITCH_MIN_PREFIX} and /${VSWITCH_MAX_PREFIX}, got /${v.prefix}`);
            }
            if (vpc && !contains(vpc, v)) {
                problem(`network.vswitchCidrs.${i}`, `${formatCidr(v)} is not inside network.vpcCidr (${n.vpcCidr})`);
            }
            parsed.slice(0, i).forEach((w, j) => {
                if (w && overlaps(v, w)) {
                    problem(`network.vswitchCidrs.${i}`, `overlaps network.vswitchCidrs.${j} (${n.vswitchCidrs![j]})`);
                }
            });
        });
        parsed.forEach((v, i) => {
            const reason = v && masterRoomProblem(v, i, c.zones.length, c.controlPlane.count);
            if (reason) {
                problem(`network.vswitchCidrs.${i}`, reason);
            }
        });
        vswitchCidrs = n.vswitchCidrs;
    } else if (vpc && c.zones.length > 0 && vpc.prefix >= 8 && vpc.prefix <= 28) {
        if (carvedVSwitchPrefix(vpc, c.zones.length) === undefined) {
            problem("network.vpcCidr", `${n.vpcCidr} is too small to carve ${c.zones.length} vSwitches (at most /${VSWITCH_MAX_PREFIX} each); use a larger VPC or set network.vswitchCidrs`);
        } else {
            vswitchCidrs = carveVSwitchCidrs(n.vpcCidr, c.zones.length);
            const reason = masterRoomProblem(parseCidr(vswitchCidrs[0]) as Cidr, 0, c.zones.length, c.controlPlane.count);
            if (reason) {
                problem("network.vpcCidr", `carved vSwitches: ${reason}; use a larger VPC or set network.vswitchCidrs`);
            }
        }
    }

    if (pod) {
        const mask = n.nodeCidrMaskSize;
        if (mask <= pod.prefix || mask > 30) {
            problem("network.nodeCidrMaskSize", `/${mask} must be finer than network.podCidr's /${pod.prefix} and at most /30`);
        } else {
            const needed = c.controlPlane.count + existingCount +
                pools.reduce((sum, p) => sum + (p.autoscale ? Math.max(p.autoscale.max, 0) : Math.max(p.size ?? 0, 0)), 0);
            const available = nodeCidrCount(pod, mask);
            if (available < needed) {
                problem("network.nodeCidrMaskSize", `/${mask} gives ${available} node CIDRs in ${n.podCidr}, but masters + existing nodes + pool maximums need ${needed}; use a larger podCidr or a larger mask size`);
            }
            if (needed > n.routeEntryQuota) {
                warn("network.routeEntryQuota", `up to ${needed} nodes need ${needed} pod routes, above the route table quota of ${n.routeEntryQuota}; raise the VPC route entry quota before scaling that far`);
            } else if (needed >= 0.8 * n.routeEntryQuota) {
                warn("network.routeEntryQuota", `up to ${needed} nodes use ${Math.round((100 * needed) / n.routeEntryQuota)}% of the route table quota (${n.routeEntryQuota} entries, one pod route per node)`);
            }
        }
    }

    n.apiAllowedCidrs.forEach((text, i) => cidrAt(text, `network.apiAllowedCidrs.${i}`, problem));
    if (c.controlPlane.publicEndpoint && n.apiAllowedCidrs.length === 0) {
        warn("network.apiAllowedCidrs", "controlPlane.publicEndpoint is true but no CIDR is allowed to reach 6443 from outside the VPC");
    }
    return vswitchCidrs;
}

/**
 * Masters get fixed private IPs: base + 10 + n in their zone's vSwitch (controlPlane.ts masterPrivateIp,
 * masters spread round-robin over the zones). The highest offset must stay clear of the addresses
 * Alibaba reserves at the end of a vSwitch.
 */
function masterRoomProblem(v: Cidr, zoneIndex: number, zoneCount: number, masterCount: number): string | undefined {
    if (zoneCount === 0 || ![1, 3, 5].includes(masterCount) || zoneIndex >= zoneCount) {
        return undefined;
    }
    const mastersHere = Math.floor(masterCount / zoneCount) + (zoneIndex < masterCount % zoneCount ? 1 : 0);
    if (mastersHere === 0) {
        return undefined;
    }
    const highest = MASTER_IP_OFFSET + mastersHere - 1;
    const size = sizeOf(v);
    if (highest < size - VSWITCH_RESERVED_ADDRESSES) {
        return undefined;
    }
    const need = 32 - Math.ceil(Math.log2(highest + VSWITCH_RESERVED_ADDRESSES + 1));
    return `${formatCidr(v)} (${size} addresses) is too small for the ${mastersHere} master${mastersHere === 1 ? "" : "s"} placed in its zone: ` +
        `masters take the fixed addresses base + ${MASTER_IP_OFFSET}${mastersHere > 1 ? `…${highest}` : ""}, which must be below base + ` +
        `${size - VSWITCH_RESERVED_ADDRESSES} (Alibaba reserves ${VSWITCH_RESERVED_ADDRESSES} addresses of every vSwitch); use /${need} or larger`;
}

function checkAutoscaler(a: Parsed["autoscaler"], kubernetesVersion: string, pools: NodePoolConfig[], problem: Report): void {
    if (!(a.scaleDownUtilizationThreshold > 0 && a.scaleDownUtilizationThreshold <= 1)) {
        problem("autoscaler.scaleDownUtilizationThreshold", `must be in (0, 1], got ${a.scaleDownUtilizationThreshold}`);
    }
    for (const key of ["scaleDownUnneededTime", "scaleDownDelayAfterAdd"] as const) {
        if (!DURATION.test(a[key])) {
            problem(`autoscaler.${key}`, `"${a[key]}" must be a duration like 10m or 1h30m`);
        }
    }
    const expanders = ["random", "most-pods", "least-waste", "least-nodes", "priority"];
    for (const e of a.expander.split(",")) {
        if (!expanders.includes(e)) {
            problem("autoscaler.expander", `"${e}" is not one of ${expanders.join(", ")} (comma-separated to chain)`);
        }
    }
    if (pools.some((p) => p.autoscale)) {
        const version = a.version ?? autoscalerVersionFor(kubernetesVersion);
        const refused = version === undefined
            ? `no known cluster-autoscaler release for Kubernetes ${kubernetesVersion}; set autoscaler.version`
            : refusedAutoscalerVersion(version);
        if (refused) {
            problem("autoscaler.version", refused);
        }
    }
}

/**
 * `images.kubernetesRepository` / `images.packageMirror` as render parameters; unset keys are left out so
 * the renderer's region defaults apply (and the scripts of existing stacks render unchanged).
 */
export function nodeMirrors(config: ClusterConfig): { imageRepository?: string; packageMirror?: string } {
    const { kubernetesRepository, packageMirror } = config.images;
    return {
        ...(kubernetesRepository !== undefined ? { imageRepository: kubernetesRepository } : {}),
        ...(packageMirror !== undefined ? { packageMirror } : {}),
    };
}
