// The stack configuration contract: the `alicloud-kubeadm:cluster` object and `alicloud:region`, parsed
// into a typed, defaulted ClusterConfig.
//
// Shape and defaults live in one zod schema (each default written once); every rule is a function of
// src/rules, shared with the components (which check their own arguments with the same rules when used
// without this config). validateClusterConfig reports every problem at once, each as
// `<property.path>: <reason>`, so a user fixes a config in one pass.
import { z } from "zod";
import {
    checkNetworkLayout, checkTaints, CLUSTER_TAG, DEFAULT_AUTOSCALER_SETTINGS, DEFAULT_ROUTE_ENTRY_QUOTA, dnsLabelProblem, durationProblem,
    essNameProblem, imageReferenceProblem, imageRepositoryProblem, INSTANCE_ID_PATTERN, kubernetesVersionProblem, MAX_SCALING_GROUP_INSTANCES,
    nodeCidrCount, nodeLabelProblems, packageMirrorProblem, parseCidr, replaceSystemDiskProblem, resolveAutoscalerVersion, autoscalerSettingsProblems,
    scalingConfigurationTags, tagKeyProblem, joinPath, type Report, type Taint,
} from "./rules";

export type { Taint } from "./rules";
export { isChinaRegion, parseTaint } from "./rules";

/** Longest cluster and pool name: they prefix every resource name (and ESS names are at most 64 characters). */
export const MAX_NAME_LENGTH = 40;

// The schema is built twice: strict (unknown keys are reported, catching typos) and lenient (unknown
// keys stripped), so that a typo does not hide the cross-field problems from the same run. Nested objects
// take `.prefault({})`: their fields' own defaults then apply, so every default is written once.
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
        /** Kubelet labels; `alicloud-kubeadm/pool=<name>` is always added. */
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
        systemDisk: diskSchema.prefault({}),
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
        /**
         * On removal, when the instance cannot run commands (stopped, Cloud Assistant agent offline), remove it
         * without `kubeadm reset`: its kubelet credentials stay on it, and it registers its Node again when it next
         * runs until `kubeadm reset -f` is run there. Default false: the removal fails with the fix. Set it with a
         * `pulumi up` before the removal: a removal uses the settings Pulumi last recorded.
         */
        removeWithoutReset: z.boolean().default(false),
        ...nodeShape,
    });

    const d = DEFAULT_AUTOSCALER_SETTINGS;
    return obj({
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
        }).prefault({}),
        controlPlane: obj({
            count: z.number().int().default(1),
            instanceType: z.string().default("ecs.g7.large"),
            publicEndpoint: z.boolean().default(false),
            systemDisk: diskSchema.prefault({}),
            /** ECS deletion protection on masters. Default false; the prod stack turns it on. */
            deletionProtection: z.boolean().default(false),
        }).prefault({}),
        /** OS image for masters and nodes: an image id, or a name pattern resolved among system images. */
        image: obj({
            id: z.string().optional(),
            nameRegex: z.string().default("^ubuntu_24_04_x64"),
        }).prefault({}),
        nodePools: z.array(poolSchema).default([]),
        existingNodes: z.array(existingNodeSchema).default([]),
        autoscaler: obj({
            scaleDownUtilizationThreshold: z.number().default(d.scaleDownUtilizationThreshold),
            scaleDownUnneededTime: z.string().default(d.scaleDownUnneededTime),
            scaleDownDelayAfterAdd: z.string().default(d.scaleDownDelayAfterAdd),
            expander: z.string().default(d.expander),
            balanceSimilarNodeGroups: z.boolean().default(d.balanceSimilarNodeGroups),
            skipNodesWithLocalStorage: z.boolean().default(d.skipNodesWithLocalStorage),
            /** Cluster Autoscaler version. Default: the latest patch of the Kubernetes minor. */
            version: z.string().optional(),
        }).prefault({}),
        /**
         * Image and package sources. Defaults (src/rules/images.ts): upstream flannel and autoscaler images
         * everywhere (no Alibaba mirror exists), Alibaba's CCM image, and for Kubernetes images and packages
         * the region's default mirrors (Alibaba's in mainland China, upstream elsewhere).
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
        }).prefault({}),
        /** Free-form tags put on every cloud resource, besides `alicloud-kubeadm/cluster=<name>`. */
        tags: z.record(z.string(), z.string()).default({}),
    });
}

const clusterSchema = buildSchema(z.strictObject);
const lenientSchema = buildSchema(z.object as typeof z.strictObject);

/** The `alicloud-kubeadm:cluster` object as written in a stack file (defaults not yet applied). */
export type ClusterConfigInput = z.input<typeof clusterSchema>;

type Parsed = z.output<typeof clusterSchema>;
type ParsedPool = Parsed["nodePools"][number];
type ParsedExistingNode = Parsed["existingNodes"][number];

/** A node pool after defaults: taints normalised, instance types as a list, exactly one of `size` / `autoscale`. */
export type NodePoolConfig = Omit<ParsedPool, "taints"> & { taints: Taint[]; instanceTypes: string[] };
/** An existing node after defaults, taints normalised. */
export type ExistingNodeConfig = Omit<ParsedExistingNode, "taints"> & { taints: Taint[] };

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

/** The cloud tags of every resource of a cluster: the user's `tags` and `alicloud-kubeadm/cluster=<name>`. */
export function clusterTags(config: Pick<ClusterConfig, "name" | "tags">): Record<string, string> {
    return { ...config.tags, [CLUSTER_TAG]: config.name };
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
    const problem: Report = (path, reason) => errors.push(`${path}: ${reason}`);
    const warn: Report = (path, reason) => warnings.push(`${path}: ${reason}`);

    const nameProblem = dnsLabelProblem(c.name, MAX_NAME_LENGTH);
    if (nameProblem) {
        problem("name", nameProblem);
    }
    const versionProblem = kubernetesVersionProblem(c.kubernetesVersion);
    if (versionProblem) {
        problem("kubernetesVersion", versionProblem);
    }
    checkZones(c.zones, region, problem);
    const masterCountOk = [1, 3, 5].includes(c.controlPlane.count);
    if (!masterCountOk) {
        problem("controlPlane.count", `must be 1, 3 or 5 (an odd etcd quorum), got ${c.controlPlane.count}`);
    } else if (c.controlPlane.count > 1 && c.zones.length < 2) {
        problem("controlPlane.count", `${c.controlPlane.count} masters sit behind an NLB, which needs at least 2 zones; list another zone or use 1 master`);
    }
    for (const key of Object.keys(c.tags)) {
        const reason = tagKeyProblem(key);
        if (reason) {
            problem(`tags.${key}`, reason);
        }
    }
    const cloudTags = clusterTags(c);
    const names = new Set<string>();
    const pools = c.nodePools.map((pool, i) => {
        const at = (path: string, reason: string) => problem(joinPath(`nodePools.${i}`, path), reason);
        if (names.has(pool.name)) {
            at("name", `"${pool.name}" is used by another pool; pool names must be unique`);
        }
        names.add(pool.name);
        return checkPool(pool, c.name, cloudTags, at);
    });
    checkImages(c.images, problem);
    const ids = new Set<string>();
    const existing = c.existingNodes.map((node, i) => {
        const at = (path: string, reason: string) => problem(joinPath(`existingNodes.${i}`, path), reason);
        if (ids.has(node.instanceId)) {
            at("instanceId", `${node.instanceId} is listed twice`);
        }
        ids.add(node.instanceId);
        return checkExistingNode(node, at);
    });
    const vswitchCidrs = checkNetworkLayout({ ...c.network, zones: c.zones, controlPlaneCount: masterCountOk ? c.controlPlane.count : 0 }, problem, {
        zones: "zones", vpcCidr: "network.vpcCidr", podCidr: "network.podCidr", serviceCidr: "network.serviceCidr",
        vswitchCidrs: "network.vswitchCidrs", apiAllowedCidrs: "network.apiAllowedCidrs",
    });
    checkNodeCapacity(c, pools, existing.length, problem, warn);
    if (c.controlPlane.publicEndpoint && c.network.apiAllowedCidrs.length === 0) {
        warn("network.apiAllowedCidrs", "controlPlane.publicEndpoint is true but no CIDR is allowed to reach 6443 from outside the VPC");
    }
    autoscalerSettingsProblems(c.autoscaler, (path, reason) => problem(`autoscaler.${path}`, reason));
    if (pools.some((p) => p.autoscale)) {
        const { problem: versionRefused } = resolveAutoscalerVersion(c.autoscaler.version, c.kubernetesVersion);
        if (versionRefused) {
            problem("autoscaler.version", versionRefused);
        }
    }

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

/** What a pool is checked from: the parsed config, or a NodePoolConfig a program built by hand. */
type PoolInput = Omit<ParsedPool, "taints" | "systemDisk" | "tokenTtl"> & Partial<Pick<ParsedPool, "systemDisk" | "tokenTtl">> & {
    taints: Array<string | Taint>;
};

/**
 * Checks one pool (reports relative to the pool: `name`, `size`, `labels.<key>`, `taints.0`, …) and returns
 * it normalised. The NodePool component runs the same check on its `pool` argument.
 */
export function checkPool(pool: PoolInput, clusterName: string, cloudTags: Record<string, string>, report: Report): NodePoolConfig {
    const nameProblem = dnsLabelProblem(pool.name, MAX_NAME_LENGTH) ?? essNameProblem(clusterName, pool.name);
    if (nameProblem) {
        report("name", nameProblem);
    }
    if ((pool.size === undefined) === (pool.autoscale === undefined)) {
        report("", "set exactly one of `size` (fixed) or `autoscale: { min, max }`");
    }
    const bounded = (path: string, n: number) => {
        if (n < 0) {
            report(path, `must be 0 or more, got ${n}`);
        } else if (n > MAX_SCALING_GROUP_INSTANCES) {
            report(path, `ESS allows at most ${MAX_SCALING_GROUP_INSTANCES} instances per group, got ${n}`);
        }
    };
    if (pool.size !== undefined) {
        bounded("size", pool.size);
    }
    if (pool.autoscale) {
        const { min, max } = pool.autoscale;
        bounded("autoscale.min", min);
        if (max < min) {
            report("autoscale.max", `must be at least autoscale.min (${min}), got ${max}`);
        } else {
            bounded("autoscale.max", max);
        }
    }
    const types = pool.instanceTypes ?? (pool.instanceType ? [pool.instanceType] : []);
    // A normalised pool (what this function returns) carries both, the list being the one type.
    const normalised = pool.instanceTypes?.length === 1 && pool.instanceTypes[0] === pool.instanceType;
    if (pool.instanceType && pool.instanceTypes && !normalised) {
        report("", "set `instanceType` or `instanceTypes`, not both");
    } else if (types.length === 0) {
        report("instanceType", "is required (e.g. ecs.g7.xlarge)");
    } else if (pool.autoscale && types.length > 1) {
        report("instanceTypes", "an autoscaled pool takes exactly one instance type: the Cluster Autoscaler builds its scale-from-zero template from one (use `instanceType`)");
    }
    nodeLabelProblems(pool.labels, (key, reason) => report(`labels.${key}`, reason));
    scalingConfigurationTags(pool, cloudTags, report);
    const tokenTtl = pool.tokenTtl ?? "0";
    if (durationProblem(tokenTtl)) {
        report("tokenTtl", `"${tokenTtl}" must be a duration like 0 (never expires), 24h or 30m`);
    }
    const taints = checkTaints(pool.taints, (path, reason) => report(`taints.${path}`, reason));
    return { ...pool, systemDisk: pool.systemDisk ?? { category: "cloud_essd", size: 40 }, tokenTtl, instanceTypes: types, taints };
}

/** What an existing node is checked from: the parsed config, or an ExistingNodeConfig built by hand. */
type ExistingNodeInput = Omit<ParsedExistingNode, "taints"> & { taints: Array<string | Taint> };

/** Checks one existing node (reports relative to it) and returns it normalised. ExistingNode runs the same check. */
export function checkExistingNode(node: ExistingNodeInput, report: Report): ExistingNodeConfig {
    if (!INSTANCE_ID_PATTERN.test(node.instanceId)) {
        report("instanceId", `"${node.instanceId}" is not an ECS instance id (expected i-…, e.g. i-bp1exampleexample01)`);
    }
    const guard = replaceSystemDiskProblem(node.mode, node.replaceSystemDisk);
    if (guard) {
        report("replaceSystemDisk", guard);
    }
    nodeLabelProblems(node.labels, (key, reason) => report(`labels.${key}`, reason));
    return { ...node, taints: checkTaints(node.taints, (path, reason) => report(`taints.${path}`, reason)) };
}

function checkImages(images: Parsed["images"], problem: Report): void {
    for (const key of ["flannel", "flannelCniPlugin", "cloudControllerManager"] as const) {
        const reason = images[key] === undefined ? undefined : imageReferenceProblem(images[key]);
        if (reason) {
            problem(`images.${key}`, reason);
        }
    }
    for (const key of ["clusterAutoscalerRepository", "kubernetesRepository"] as const) {
        const reason = images[key] === undefined ? undefined : imageRepositoryProblem(images[key]);
        if (reason) {
            problem(`images.${key}`, reason);
        }
    }
    const mirror = images.packageMirror === undefined ? undefined : packageMirrorProblem(images.packageMirror);
    if (mirror) {
        problem("images.packageMirror", mirror);
    }
}

/** Enough node pod CIDRs for every node the config can have, and the route-table quota (one pod route per node). */
function checkNodeCapacity(c: Parsed, pools: NodePoolConfig[], existingCount: number, problem: Report, warn: Report): void {
    const pod = parseCidr(c.network.podCidr);
    if (typeof pod === "string") {
        return;
    }
    const mask = c.network.nodeCidrMaskSize;
    if (mask <= pod.prefix || mask > 30) {
        problem("network.nodeCidrMaskSize", `/${mask} must be finer than network.podCidr's /${pod.prefix} and at most /30`);
        return;
    }
    const needed = c.controlPlane.count + existingCount +
        pools.reduce((sum, p) => sum + (p.autoscale ? Math.max(p.autoscale.max, 0) : Math.max(p.size ?? 0, 0)), 0);
    const available = nodeCidrCount(pod, mask);
    if (available < needed) {
        problem("network.nodeCidrMaskSize", `/${mask} gives ${available} node CIDRs in ${c.network.podCidr}, but masters + existing nodes + pool maximums need ${needed}; use a larger podCidr or a larger mask size`);
    }
    const quota = c.network.routeEntryQuota;
    if (needed > quota) {
        warn("network.routeEntryQuota", `up to ${needed} nodes need ${needed} pod routes, above the route table quota of ${quota}; raise the VPC route entry quota before scaling that far`);
    } else if (needed >= 0.8 * quota) {
        warn("network.routeEntryQuota", `up to ${needed} nodes use ${Math.round((100 * needed) / quota)}% of the route table quota (${quota} entries, one pod route per node)`);
    }
}

/**
 * `images.kubernetesRepository` / `images.packageMirror` as render parameters; unset keys are left out so
 * the renderer's region defaults apply (and the scripts of existing stacks render unchanged).
 */
export function nodeMirrors(config: Pick<ClusterConfig, "images">): { imageRepository?: string; packageMirror?: string } {
    const { kubernetesRepository, packageMirror } = config.images;
    return {
        ...(kubernetesRepository !== undefined ? { imageRepository: kubernetesRepository } : {}),
        ...(packageMirror !== undefined ? { packageMirror } : {}),
    };
}
