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
    type Cidr,
} from "./cidr";
import { autoscalerVersionFor, refusedAutoscalerVersion } from "./clusterAutoscaler";
import { isLabelValue, kubeletMaySetLabel, labelKeyProblem } from "./labels";
export { isChinaRegion } from "./labels";

/** Lowest Kubernetes minor supported: kubeadm config API v1beta4 arrived in 1.31. */
export const MIN_KUBERNETES_MINOR = 31;
/** Alibaba Cloud's default quota of custom entries per VPC route table (raise it in the Quota Center). */
export const DEFAULT_ROUTE_ENTRY_QUOTA = 200;

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const INSTANCE_ID = /^i-[a-z0-9]{8,30}$/;
const VERSION = /^(\d+)\.(\d+)\.(\d+)$/;
const DURATION = /^(\d+(\.\d+)?(ns|us|ms|s|m|h))+$/;

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
    checkZones(c.zones, problem);
    if (![1, 3, 5].includes(c.controlPlane.count)) {
        problem("controlPlane.count", `must be 1, 3 or 5 (an odd etcd quorum), got ${c.controlPlane.count}`);
    } else if (c.controlPlane.count > 1 && c.zones.length < 2) {
        problem("controlPlane.count", `${c.controlPlane.count} masters sit behind an NLB, which needs at least 2 zones; list another zone or use 1 master`);
    }
    const pools = checkPools(c.nodePools, problem);
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

function checkZones(zones: string[], problem: Report): void {
    if (zones.length === 0) {
        problem("zones", "needs at least one zone, e.g. [cn-hangzhou-h]");
    }
    const seen = new Set<string>();
    zones.forEach((zone, i) => {
        if (seen.has(zone)) {
            problem(`zones.${i}`, `"${zone}" is listed twice`);
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

function checkPools(pools: ParsedPool[], problem: Report): NodePoolConfig[] {
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
        vswitchCidrs = n.vswitchCidrs;
    } else if (vpc && c.zones.length > 0 && vpc.prefix >= 8 && vpc.prefix <= 28) {
        if (carvedVSwitchPrefix(vpc, c.zones.length) === undefined) {
            problem("network.vpcCidr", `${n.vpcCidr} is too small to carve ${c.zones.length} vSwitches (at most /${VSWITCH_MAX_PREFIX} each); use a larger VPC or set network.vswitchCidrs`);
        } else {
            vswitchCidrs = carveVSwitchCidrs(n.vpcCidr, c.zones.length);
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
