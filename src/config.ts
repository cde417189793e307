// The stack configuration contract: the `alicloud-kubeadm:cluster` object and `alicloud:region`, parsed
// into a typed, defaulted ClusterConfig.
//
// Shape and defaults live in one zod schema (each default written once); every rule is a function of
// src/rules, shared with the components (which check their own arguments with the same rules when used
// without this config). validateClusterConfig reports every problem at once, each at its property path with
// its reason, so a user fixes a config in one pass.
//
// This module is the parser of the stack config and of the slices of it the components take: what it returns
// is marked validated (src/validated.ts), and a component given such a value checks nothing again. A component
// used directly with a value of its own runs the parser of its slice once (parseNodePool, parseExistingNode,
// parseNodeJoinConfig, parseControlPlaneConfig).
import { z } from "zod";
import {
    apiAccessProblems, autoscalerMinorWarning, BACKUP_DEFAULTS, checkBackup, autoscalerVersionFor, checkExemptNamespaces, checkImageDigests, DEFAULT_AUTOSCALER_IMAGE_REPOSITORY, autoscalerSettingsProblems, checkBake, checkNetworkLayout, checkTaints, cloudTagProblems, CLUSTER_TAG, DEFAULT_AUTOSCALER_SETTINGS,
    DEFAULT_ROUTE_ENTRY_QUOTA, defaultMirrors, dnsLabelProblem, durationProblem, essNameProblem, GO_DURATION_ERE, goRegexProblem, hostNamePartProblem, imageReferenceProblem, imageRepositoryProblem,
    masterInstanceTypeWarning, nodeFlagsSizeProblems, nodeImages, reservedPoolNameProblem,
    INSTANCE_ID_PATTERN, instanceTypeProblem, joinPath, kubernetesSupportWarning, kubernetesVersionProblem, MAX_SCALING_GROUP_INSTANCES,
    nodeCidrCount, nodeCidrMaskProblem, nodeLabelProblems, packageMirrorProblem, parseCidr, regionOfZone, regionProblem, regionWarning,
    readmitAfterProblem, replaceSystemDiskProblem, resolveAutoscalerVersion, resourceNamePrefixProblem, scaleFromZeroProblem, scalingConfigurationTags, zoneProblem,
    collect, formatProblem, identityCertificateProblem, joinTagProblem, imageIdProblem, type Problem, type Report, type Taint,
    apiAllowedCidrProblems, architectureProblems, autoscalerPatchProblem, autoscalerPatchWarning, DEFAULT_BAKE_INSTANCE_TYPE, instanceTypeListProblems,
    joinTagCarriedProblem, kubernetesPatchProblem, kubernetesPatchWarning, mixedArchitectureProblem, nameAsTagValueProblem, natOffProblems, POOL_LABEL,
    SECRET_STAND_IN, SSH_SECRET_FIELDS, sshConnectionContentProblems, sshTarget, zoneWarning, imageOsProblem, imageSizeGiB,
    managedTaintWarning, observedLabelWarning, parseTaint, nodeBatchSizeProblem, parseRollout, type Rollout, parseHealthRepair, type HealthRepair,
} from "./rules";
import { markValidated, validatedByParser, type Validated } from "./validated";

import type {
    ClusterConfig, ClusterConfigFields, ClusterConfigInput, ExistingNodeConfig, ExistingNodeFields, NodeJoinConfig, NodeJoinFields, NodePoolConfig, NodePoolFields,
    ParsedClusterConfig, ParsedExistingNode, ParsedNodePool,
} from "./configTypes";

export type { Taint } from "./rules";
export type {
    ClusterConfig, ClusterConfigFields, ClusterConfigInput, Disk, DiskCategory, DiskInput, ExistingNodeConfig, ExistingNodeInput, ImageSources,
    ExistingNodeFields, NodeJoinConfig, NodeJoinFields, NodePoolConfig, NodePoolFields, NodePoolInput, PodSecurityConfig, SshConnection, SshConnectionInput, TaintInput, UpgradeConfig,
} from "./configTypes";
export { isChinaRegion, parseTaint, identityCertificateProblem } from "./rules";
export { isValidated, type Validated } from "./validated";

/** Longest cluster and pool name: they prefix every resource name (and ESS names are at most 64 characters). */
export const MAX_NAME_LENGTH = 40;

// The schema is built twice: strict (unknown keys are reported, catching typos) and lenient (unknown
// keys stripped), so that a typo does not hide the cross-field problems from the same run. Nested objects
// take `.prefault({})`: their fields' own defaults then apply, so every default is written once.
function buildSchema(obj: typeof z.strictObject) {
    /** A string that must not be empty (an empty value is as good as a missing one). */
    const text = () => z.string().min(1);
    const diskSchema = obj({
        /** Disk category as the ECS API spells it. Default `cloud_essd`. */
        category: z.enum(["cloud_essd", "cloud_auto", "cloud_efficiency", "cloud_ssd", "cloud_essd_entry"]).default("cloud_essd"),
        /** Size in GiB. Default 40 for masters and nodes. */
        size: z.number().int().min(20).max(2048).default(40),
    });

    const taintSchema = z.union([
        z.string(),
        obj({
            key: text(),
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
        name: text(),
        /** One instance type. Autoscaled pools must use exactly one (the autoscaler's template reads one). */
        instanceType: text().optional(),
        /** Several instance types, in order of preference (fixed-size pools only). */
        instanceTypes: z.array(text()).min(1).optional(),
        /** Fixed number of nodes, owned by Pulumi. Exclusive with `autoscale`. */
        size: z.number().int().optional(),
        /** Bounds for the Cluster Autoscaler. Exclusive with `size`. */
        autoscale: obj({ min: z.number().int(), max: z.number().int() }).optional(),
        systemDisk: diskSchema.prefault({}),
        /** Image for this pool; default the cluster's `image`. */
        imageId: text().optional(),
        /** Bootstrap token lifetime, a Go duration, for `NodePool` used directly without admission. Default `0` = never expires. No effect in a Cluster (a warning). */
        tokenTtl: z.string().optional(),
        /** How `pulumi up` replaces outdated nodes (fixed and autoscaled pools): src/rules/rollout.ts, docs/rotation.md. */
        rollout: obj({
            maxSurge: z.number().int().optional(),
            maxUnavailable: z.number().int().optional(),
            drainTimeout: z.string().optional(),
            onDrainTimeout: z.enum(["pause", "force"]).optional(),
            canary: z.boolean().optional(),
            soak: z.string().optional(),
            validate: z.boolean().optional(),
        }).optional(),
        /** How `pulumi up` replaces nodes that stay NotReady (fixed pools): src/rules/healthRepair.ts, docs/rotation.md#health-repair. */
        healthRepair: obj({
            notReadyTimeout: z.string().optional(),
            maxUnhealthy: z.number().optional(),
        }).optional(),
        ...nodeShape,
    });

    const existingNodeSchema = obj({
        instanceId: text(),
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
        /**
         * What `pulumi up` does when the node's spec (labels, taints, `auto` image, attach script) changed: `report`
         * warns that the node keeps its old spec; `replace` takes it out through the removal flow (drain, reset, Node
         * deleted) and attaches it again, one existing node at a time, the cluster validated before and after each.
         */
        rollout: z.enum(["replace", "report"]).default("report"),
        /** SSH access: the attach script runs over SSH instead of Cloud Assistant (mode manual only). */
        connection: obj({
            host: text(),
            port: z.number().int().min(1).max(65535).default(22),
            user: text().default("root"),
            privateKey: text().optional(),
            privateKeyPassword: text().optional(),
            password: text().optional(),
            agentSocketPath: text().optional(),
        }).optional(),
        ...nodeShape,
    });

    const d = DEFAULT_AUTOSCALER_SETTINGS;
    return obj({
        name: text(),
        kubernetesVersion: text(),
        zones: z.array(text()),
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
            instanceType: text().default("ecs.g7.large"),
            publicEndpoint: z.boolean().default(false),
            systemDisk: diskSchema.prefault({}),
            /** ECS deletion protection on masters. Default false; the prod stack turns it on. */
            deletionProtection: z.boolean().default(false),
        }).prefault({}),
        /** OS image for masters and nodes: an image id, or a name pattern resolved among system images. */
        image: obj({
            id: text().optional(),
            nameRegex: text().default("^ubuntu_24_04_x64"),
            /** Bake the node runtime into a custom image (NodeImage) that masters and pools boot. Default false. */
            bake: z.boolean().default(false),
            /** Instance type of the image build. Default {@link DEFAULT_BAKE_INSTANCE_TYPE}. */
            bakeInstanceType: text().optional(),
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
            /** Node.js image of the admission service (src/components/admission.ts DEFAULT_ADMISSION_IMAGE). */
            admission: z.string().optional(),
        }).prefault({}),
        /**
         * Node admission by cloud identity (docs/admission.md): pools and existing nodes join with a single-use
         * token from the admission service on the masters instead of a token in their userdata.
         */
        admission: obj({
            /**
             * PEM of the ECS instance identity signing certificate(s) (Alibaba's; several during a rotation).
             * Default: Alibaba's published certificate, vendored in src/admission/alibabaCertificate.ts.
             */
            identityCertificate: z.string().optional(),
            /** `key=value`: instances carrying this ECS tag may join through the one-line manual path. Default: off. */
            joinTag: z.string().optional(),
            /**
             * Seconds: while a Node of an instance exists, the instance joins again only once that Node's heartbeat is
             * this old and the instance was started after it (or an operator allowed it). Default 300.
             */
            readmitAfterSeconds: z.number().optional(),
            /** Accept instance identity signatures with a SHA-1 digest (docs/security.md#sha-1). Default true. */
            allowSha1: z.boolean().default(true),
        }).prefault({}),
        /** Pod security (docs/security.md#pod-security). */
        podSecurity: obj({
            /**
             * Namespaces besides the system ones (src/rules/podSecurity.ts SYSTEM_NAMESPACES) whose pods may run with host
             * access on the masters. Default none.
             */
            exemptNamespaces: z.array(z.string()).default([]),
        }).prefault({}),
        /** Upgrades (docs/upgrades.md#nodes); the rules are src/rules/upgrade.ts. */
        upgrade: obj({
            /** Worker nodes drained and upgraded in place at once. Default 1. */
            nodeBatchSize: z.number().default(1),
        }).prefault({}),
        /** etcd backups to the stack's OSS bucket (docs/disaster-recovery.md#backups); the rules are src/rules/backup.ts. */
        backup: obj({
            intervalMinutes: z.number().default(BACKUP_DEFAULTS.intervalMinutes),
            hourlyRetentionDays: z.number().default(BACKUP_DEFAULTS.hourlyRetentionDays),
            dailyRetentionDays: z.number().default(BACKUP_DEFAULTS.dailyRetentionDays),
            keyGeneration: z.number().default(BACKUP_DEFAULTS.keyGeneration),
        }).prefault({}),
        /** Free-form tags put on every cloud resource, besides `alicloud-kubeadm/cluster=<name>`. */
        tags: z.record(z.string(), z.string()).default({}),
    });
}

const clusterSchema = buildSchema(z.strictObject);
const lenientSchema = buildSchema(z.object as typeof z.strictObject);

// The exported types are written out in configTypes.ts (no schema-library type in the public declarations);
// these assignments fail to compile when the schema and those types disagree in either direction.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const schemaInputIsClusterConfigInput: Same<z.input<typeof clusterSchema>, ClusterConfigInput> = true;
const schemaOutputIsParsedClusterConfig: Same<z.output<typeof clusterSchema>, ParsedClusterConfig> = true;
void schemaInputIsClusterConfigInput;
void schemaOutputIsParsedClusterConfig;

type Parsed = ParsedClusterConfig;
type ParsedPool = ParsedNodePool;

export interface ValidationResult {
    /** Present only when there are no errors. */
    config?: ClusterConfig;
    /** Every problem: its property path and its reason. */
    problems: Problem[];
    /** Things that work but deserve attention, the same way. */
    warningProblems: Problem[];
    /** `problems` as printed, each `<property.path>: <reason>` ({@link formatProblem}). */
    errors: string[];
    /** `warningProblems` as printed. */
    warnings: string[];
}

/** A ValidationResult from structured problems: the printed forms made by the one formatter. */
function validationResult(problems: Problem[], warningProblems: Problem[], config?: ClusterConfig): ValidationResult {
    return { ...(config ? { config } : {}), problems, warningProblems, errors: problems.map(formatProblem), warnings: warningProblems.map(formatProblem) };
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
    const { problems: errors, report: problem } = collect();
    const { problems: warnings, report: warn } = collect();
    if (!region) {
        problem("alicloud:region", "is not set (run `pulumi config set alicloud:region cn-hangzhou`)");
    } else {
        const regionReason = regionProblem(region);
        if (regionReason) {
            problem("alicloud:region", regionReason);
        }
        const unknown = regionWarning(region);
        if (unknown) {
            warn("alicloud:region", unknown);
        }
    }
    if (raw === undefined || raw === null) {
        problem("alicloud-kubeadm:cluster", "is not set (copy stacks/Pulumi.dev.yaml for a starting point)");
        return validationResult(errors, warnings);
    }
    const strict = clusterSchema.safeParse(raw, { reportInput: true });
    const shapePaths: string[] = [];
    if (!strict.success) {
        for (const issue of strict.error.issues.flatMap((i) => unwrapUnion(i))) {
            const path = issue.path.length ? issue.path.join(".") : "alicloud-kubeadm:cluster";
            problem(path, describeIssue(issue));
            // An unknown key silences nothing but itself: the object's other fields are still checked.
            shapePaths.push(...(issue.code === "unrecognized_keys" ? issue.keys.map((k) => joinPath(path, k)) : [path]));
        }
    }
    const c = strict.success ? strict.data as Parsed : checkableCopy(raw);
    if (!c) {
        return validationResult(errors, warnings);
    }
    // The rules below see a copy with every badly typed value replaced; they do not report again where the
    // schema already did.
    const ruleProblem: Report = (path, reason) => {
        if (!shapePaths.some((p) => path === p || path.startsWith(`${p}.`))) {
            problem(path, reason);
        }
    };
    return checkRules(c, region, ruleProblem, warn, errors, warnings, shapePaths);
}

/**
 * The config with every value of the wrong type (or an unknown key) replaced, so that the cross-field rules
 * still run and every problem is reported in one pass: an optional or defaulted value is dropped, a
 * required one becomes an empty value of its type. Undefined when the shape is beyond repair (not an object).
 */
function checkableCopy(raw: unknown): Parsed | undefined {
    if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
        return undefined;
    }
    let copy = plainCopy(raw) as Record<string, unknown>;
    for (let round = 0; round < 5; round++) {
        const result = lenientSchema.safeParse(copy);
        if (result.success) {
            return result.data as Parsed;
        }
        for (const issue of result.error.issues) {
            copy = replaceAt(copy, issue.path as PropertyKey[], issue.code === "invalid_type" ? issue.expected : undefined);
        }
    }
    return undefined;
}

/** A deep copy of plain objects and arrays; any other value (an Output, a function) is kept as it is, for the schema to refuse by path. */
function plainCopy(value: unknown): unknown {
    if (Array.isArray(value)) return value.map(plainCopy);
    if (typeof value === "object" && value !== null && Object.getPrototypeOf(value) === Object.prototype) {
        return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plainCopy(v)]));
    }
    return value;
}

/**
 * `obj` with the value at `path` deleted (a defaulted key then takes its default), or, when nothing is
 * there (a required key), set to an empty value of the `expected` type.
 */
function replaceAt(obj: Record<string, unknown>, path: PropertyKey[], expected: string | undefined): Record<string, unknown> {
    let parent: unknown = obj;
    for (const key of path.slice(0, -1)) {
        parent = (parent as Record<PropertyKey, unknown> | undefined)?.[key];
    }
    if (path.length === 0 || typeof parent !== "object" || parent === null) {
        return obj;
    }
    const container = parent as Record<PropertyKey, unknown>;
    const last = path[path.length - 1];
    if (container[last] !== undefined) {
        delete container[last];
    } else {
        // A placeholder the rules can read; whatever they say about it is not reported (the schema spoke first).
        const empty: Record<string, unknown> = { string: "-", number: 0, boolean: false, array: [], object: {} };
        container[last] = expected !== undefined && expected in empty ? structuredClone(empty[expected]) : "-";
    }
    return obj;
}

function checkRules(c: Parsed, region: string | undefined, problem: Report, warn: Report, errors: Problem[], warnings: Problem[],
    shapePaths: readonly string[] = []): ValidationResult {

    const nameProblem = dnsLabelProblem(c.name, MAX_NAME_LENGTH) ?? resourceNamePrefixProblem(c.name) ?? hostNamePartProblem(c.name) ??
        nameAsTagValueProblem(c.name, CLUSTER_TAG);
    if (nameProblem) {
        problem("name", nameProblem);
    }
    const versionProblem = kubernetesVersionProblem(c.kubernetesVersion) ?? kubernetesPatchProblem(c.kubernetesVersion);
    if (versionProblem) {
        problem("kubernetesVersion", versionProblem);
    }
    const support = kubernetesSupportWarning(c.kubernetesVersion) ?? kubernetesPatchWarning(c.kubernetesVersion);
    if (support) {
        warn("kubernetesVersion", support);
    }
    // A zone id given as the region was reported above; the zones are checked against the region it names.
    checkZones(c.zones, region && regionProblem(region) ? regionOfZone(region) : region, problem, warn);
    const masterCountOk = [1, 3, 5].includes(c.controlPlane.count);
    if (!masterCountOk) {
        problem("controlPlane.count", `must be 1, 3 or 5 (an odd etcd quorum), got ${c.controlPlane.count}`);
    } else if (c.controlPlane.count > 1 && c.zones.length < 2) {
        problem("controlPlane.count", `${c.controlPlane.count} masters sit behind an NLB, which needs at least 2 zones; list another zone or use 1 master`);
    }
    const masterType = instanceTypeProblem(c.controlPlane.instanceType);
    if (masterType) {
        problem("controlPlane.instanceType", masterType);
    }
    const masterCpus = masterInstanceTypeWarning(c.controlPlane.instanceType);
    if (masterCpus) {
        warn("controlPlane.instanceType", masterCpus);
    }
    cloudTagProblems(c.tags, c.nodePools.some((p) => p.autoscale === undefined), (path, reason) => problem(joinPath("tags", path), reason));
    checkImageSelection(c, problem);
    checkBake(c.image, c.nodePools, problem, warn);
    const cloudTags = clusterTags(c);
    const names = new Set<string>();
    const pools = c.nodePools.map((pool, i) => {
        const at = (path: string, reason: string) => problem(joinPath(`nodePools.${i}`, path), reason);
        if (names.has(pool.name)) {
            at("name", `"${pool.name}" is used by another pool; pool names must be unique`);
        }
        names.add(pool.name);
        // A size or autoscale the schema refused was given all the same: "set exactly one" would be a second, false problem.
        const given = (key: string) => shapePaths.some((p) => p === `nodePools.${i}.${key}` || p.startsWith(`nodePools.${i}.${key}.`));
        if (pool.tokenTtl !== undefined) {
            warn(`nodePools.${i}.tokenTtl`, "has no effect: the cluster's pools join by cloud identity and hold no token (docs/admission.md); remove it");
        }
        return checkPool(pool, c.name, cloudTags, at, { size: given("size"), autoscale: given("autoscale") });
    });
    checkImages(c.images, problem);
    const autoscalerVersion = c.autoscaler.version ?? autoscalerVersionFor(c.kubernetesVersion);
    checkImageDigests(c.images, c.nodePools.some((p) => p.autoscale) && autoscalerVersion
        ? `${c.images.clusterAutoscalerRepository ?? DEFAULT_AUTOSCALER_IMAGE_REPOSITORY}:v${autoscalerVersion.replace(/^v/, "")}` : undefined, warn);
    checkAdmission(c, problem);
    const batch = nodeBatchSizeProblem(c.upgrade.nodeBatchSize);
    if (batch) problem("upgrade.nodeBatchSize", batch);
    checkExemptNamespaces(c.podSecurity.exemptNamespaces, (p, r) => problem(joinPath("podSecurity.exemptNamespaces", p), r),
        (p, r) => warn(joinPath("podSecurity.exemptNamespaces", p), r));
    const ids = new Set<string>();
    const existing = c.existingNodes.map((node, i) => {
        const at = (path: string, reason: string) => problem(joinPath(`existingNodes.${i}`, path), reason);
        if (ids.has(node.instanceId)) {
            at("instanceId", `${node.instanceId} is listed twice`);
        }
        ids.add(node.instanceId);
        return checkExistingNode(node, at);
    });
    checkSshTargets(c.existingNodes, problem);
    const vswitchCidrs = checkNetworkLayout({ ...c.network, zones: c.zones, controlPlaneCount: masterCountOk ? c.controlPlane.count : 0, region }, problem, {
        zones: "zones", vpcCidr: "network.vpcCidr", podCidr: "network.podCidr", serviceCidr: "network.serviceCidr",
        vswitchCidrs: "network.vswitchCidrs", apiAllowedCidrs: "network.apiAllowedCidrs",
    });
    checkNodeCapacity(c, pools, existing.length, problem, warn);
    apiAccessProblems(c.controlPlane.publicEndpoint, c.network.apiAllowedCidrs, problem, warn);
    apiAllowedCidrProblems(c.network.apiAllowedCidrs, c.network.vpcCidr,
        c.controlPlane.publicEndpoint && c.network.natGateway && c.controlPlane.count > 1, problem, warn);
    if (region) {
        natOffProblems({
            region, vpcCidr: c.network.vpcCidr, natGateway: c.network.natGateway, publicEndpoint: c.controlPlane.publicEndpoint,
            controlPlaneCount: c.controlPlane.count, autoscaled: c.nodePools.some((p) => p.autoscale !== undefined), images: c.images,
        }, problem, warn);
    }
    architectureProblems({
        image: c.image.id ?? c.image.nameRegex, imagePath: c.image.id !== undefined ? "image.id" : "image.nameRegex",
        controlPlaneInstanceType: c.controlPlane.instanceType, bake: c.image.bake,
        bakeInstanceType: c.image.bakeInstanceType ?? DEFAULT_BAKE_INSTANCE_TYPE, bakeInstanceTypeGiven: c.image.bakeInstanceType !== undefined,
        ccmImage: c.images.cloudControllerManager,
        pools: c.nodePools.map((p) => ({
            instanceTypes: p.instanceTypes ?? (p.instanceType ? [p.instanceType] : []), imageId: p.imageId, instanceTypeGiven: p.instanceTypes === undefined,
        })),
    }, problem);
    if (!c.image.bake) {
        c.nodePools.forEach((p, i) => {
            const disk = p.imageId === undefined ? systemDiskSizeProblem(c.image.id ?? c.image.nameRegex, c.image.id !== undefined ? "image.id" : "image.nameRegex", p.systemDisk.size) : undefined;
            if (disk) {
                problem(`nodePools.${i}.systemDisk.size`, disk);
            }
        });
    }
    nodeSettingWarnings([...c.nodePools.map((p, i) => ({ at: `nodePools.${i}`, node: p })), ...c.existingNodes.map((n, i) => ({ at: `existingNodes.${i}`, node: n }))], warn);
    checkBackup(c.backup, problem);
    autoscalerSettingsProblems(c.autoscaler, (path, reason) => problem(`autoscaler.${path}`, reason));
    if (pools.some((p) => p.autoscale) && (c.autoscaler.version !== undefined || !versionProblem)) {
        const { problem: refused } = resolveAutoscalerVersion(c.autoscaler.version, c.kubernetesVersion);
        const versionRefused = refused ?? (c.autoscaler.version === undefined ? undefined : autoscalerPatchProblem(c.autoscaler.version));
        if (versionRefused) {
            problem("autoscaler.version", versionRefused);
        }
        const mismatch = c.autoscaler.version === undefined || versionRefused ? undefined
            : autoscalerMinorWarning(c.autoscaler.version, c.kubernetesVersion) ?? autoscalerPatchWarning(c.autoscaler.version);
        if (mismatch) {
            warn("autoscaler.version", mismatch);
        }
    }

    if (errors.length > 0 || !region) {
        return validationResult(errors, warnings);
    }
    // Nothing was reported: the config and every pool and node in it are valid.
    const fields: ClusterConfigFields = {
        ...c, region, network: { ...c.network, vswitchCidrs },
        nodePools: pools.map((p) => markValidated(p)), existingNodes: existing.map((n) => markValidated(n)),
    };
    return validationResult(errors, warnings, markValidated(fields));
}

/** The Pulumi config namespace of this project: the stack program reads `alicloud-kubeadm:cluster` and nothing else of it. */
export const CONFIG_NAMESPACE = "alicloud-kubeadm";
/** The one key of {@link CONFIG_NAMESPACE}. */
export const CLUSTER_CONFIG_KEY = `${CONFIG_NAMESPACE}:cluster`;

/** The stack's config as the stack program reads it, and what is wrong with it beyond the cluster object. */
export interface StackConfig {
    /** The parsed `alicloud-kubeadm:cluster` value (any shape; undefined when unset or not JSON). */
    cluster: unknown;
    /** `alicloud:region`. */
    region: string | undefined;
    /** Keys of the namespace that would be ignored, and a cluster value that does not parse: the key and the reason. */
    problems: Problem[];
    /** Things that work but deserve attention, the same way (none today). */
    warningProblems: Problem[];
    /** `problems` as printed, each `<key>: <reason>` ({@link formatProblem}). */
    errors: string[];
    /** `warningProblems` as printed. */
    warnings: string[];
}

/**
 * Reads the stack's whole config (`pulumi.runtime.allConfig()`: full key → string, objects JSON-encoded).
 * Beyond what the cluster schema checks, it catches what Pulumi would pass over in silence: other keys of
 * the `alicloud-kubeadm` namespace (a block dedented out of the cluster object, or `pulumi config set
 * alicloud-kubeadm:cluster.x.y v` without `--path`), and a cluster value stored as a string that is not JSON
 * (reported with the place of the error, never the value). The value of a secret key is never put in a message.
 * @param secretKeys the keys whose values are secrets; default: `PULUMI_CONFIG_SECRET_KEYS`, the list Pulumi
 *   gives the program (when it is not readable, no value is echoed at all)
 */
export function readStackConfig(all: Readonly<Record<string, string>>, secretKeys: readonly string[] | undefined = secretKeysFromEnv()): StackConfig {
    const { problems, report: problem } = collect();
    const text = all[CLUSTER_CONFIG_KEY];
    let cluster: unknown;
    if (text !== undefined) {
        try {
            cluster = JSON.parse(text);
        } catch (err) {
            problem(CLUSTER_CONFIG_KEY, clusterTextProblem(text, err as Error));
        }
    }
    const fields = new Set(Object.keys(clusterSchema.shape));
    for (const key of Object.keys(all).sort()) {
        if (!key.startsWith(`${CONFIG_NAMESPACE}:`) || key === CLUSTER_CONFIG_KEY) {
            continue;
        }
        const rest = key.slice(CONFIG_NAMESPACE.length + 1);
        const value = all[key];
        const secret = secretKeys === undefined || secretKeys.includes(key);
        const shown = !secret && value.length <= 40 && !/[\s'"]/.test(value) ? value : "<value>";
        const set = secret ? "pulumi config set --secret --path" : "pulumi config set --path";
        if (/^cluster[.[]/.test(rest)) {
            problem(key, `is a key of its own, not a field of ${CLUSTER_CONFIG_KEY}, and is ignored: it was set without --path. ` +
                `Run \`pulumi config rm '${key}'\`, then \`${set} '${key}' ${shown}\``);
        } else if (fields.has(rest.split(/[.[]/)[0])) {
            problem(key, `is ignored: only ${CLUSTER_CONFIG_KEY} is read, and "${rest.split(/[.[]/)[0]}" is a field of it. In the stack file, indent this block ` +
                `under ${CLUSTER_CONFIG_KEY} (it has been dedented out of it); or run \`pulumi config rm '${key}'\`, then \`${set} '${CLUSTER_CONFIG_KEY}.${rest}' ${shown}\``);
        } else {
            problem(key, `is ignored: the ${CONFIG_NAMESPACE} namespace has only the key cluster (remove it with \`pulumi config rm '${key}'\`)`);
        }
    }
    return { cluster, region: all["alicloud:region"], problems, warningProblems: [], errors: problems.map(formatProblem), warnings: [] };
}

/** The secret config keys Pulumi lists for the program (`PULUMI_CONFIG_SECRET_KEYS`, a JSON array), or undefined when unreadable. */
function secretKeysFromEnv(): string[] | undefined {
    const text = process.env.PULUMI_CONFIG_SECRET_KEYS;
    if (text === undefined) {
        return process.env.PULUMI_CONFIG === undefined ? [] : undefined; // outside a Pulumi program: nothing is secret
    }
    try {
        const keys: unknown = JSON.parse(text);
        return Array.isArray(keys) && keys.every((k) => typeof k === "string") ? keys : undefined;
    } catch {
        return undefined;
    }
}

/**
 * The offset of the first character JSON.parse refuses, found without reading the error message's echo of the
 * input: the longest prefix that is still valid JSON so far (it fails only for running out) ends just before it.
 */
function jsonErrorOffset(text: string): number | undefined {
    const fine = (length: number): boolean => {
        try {
            JSON.parse(text.slice(0, length));
            return true;
        } catch (err) {
            const message = (err as Error).message;
            const at = /at position (\d+)/.exec(message);
            return /Unexpected end/.test(message) || (at !== null && Number(at[1]) >= length);
        }
    };
    if (fine(text.length)) {
        return undefined;
    }
    let lo = 0;
    let hi = text.length; // fine(lo) holds, fine(hi) does not
    while (hi - lo > 1) {
        const mid = (lo + hi) >> 1;
        if (fine(mid)) lo = mid;
        else hi = mid;
    }
    return hi - 1;
}

/** Why the cluster value (a string that is not JSON) cannot be read, without echoing it. */
function clusterTextProblem(text: string, _err: Error): string {
    if (!/^\s*[[{]/.test(text)) {
        return "is a plain string, not an object: write the cluster as a YAML object under config: in the stack file (see stacks/Pulumi.dev.yaml), " +
            "or set its fields with `pulumi config set --path 'alicloud-kubeadm:cluster.<field>' <value>`";
    }
    const offset = jsonErrorOffset(text);
    let where = "";
    if (offset !== undefined) {
        const before = text.slice(0, offset);
        where = ` at line ${before.split("\n").length}, column ${offset - before.lastIndexOf("\n")}`;
    }
    return `is stored as a JSON string that does not parse${where} (${text.length} characters): fix it, or write the cluster as a YAML object ` +
        "under config: in the stack file, or set it with `pulumi config set --path`";
}

/**
 * Parses the whole config a program hands to a component that takes one (ControlPlane): a validated config
 * (parseClusterConfig's, or the Cluster's) is returned as it is, anything else (one built by hand, an edited copy)
 * is checked once with the stack config's rules, reported relative to the config (`controlPlane.count`, `zones.1`,
 * `region`, …). Returns the config when it is valid, else undefined.
 */
export function parseControlPlaneConfig(config: ClusterConfig | ClusterConfigFields, report: Report): ClusterConfig | undefined {
    return unlessValidated(config, report, (fields) => controlPlaneConfigOf(fields, report));
}

/**
 * `value` when a parser made it; otherwise what `parse` makes of it, or undefined (a missing value is reported at
 * the argument itself).
 */
function unlessValidated<V extends object, F extends object>(value: V | F, report: Report, parse: (fields: F) => V | undefined): V | undefined {
    if (validatedByParser(value)) {
        return value as V;
    }
    if (typeof value !== "object" || value === null) {
        report("", "is required: the validated cluster config (parseClusterConfig)");
        return undefined;
    }
    return parse(value as F);
}

function controlPlaneConfigOf(config: ClusterConfigFields, report: Report): ClusterConfig | undefined {
    const { region, ...raw } = config as ClusterConfigFields & Record<string, unknown>;
    // An SSH secret the Cluster took as a Pulumi secret (an Output, an object here) was checked there: it stands in as present.
    const existingNodes = Array.isArray(raw.existingNodes) ? raw.existingNodes.map((n) => !n?.connection ? n : {
        ...n, connection: Object.fromEntries(Object.entries(n.connection).map(([k, v]) => [k, SSH_SECRET_FIELDS.includes(k) && typeof v === "object" && v !== null ? SECRET_STAND_IN : v])),
    }) : raw.existingNodes;
    const result = validateClusterConfig({ ...raw, existingNodes }, typeof region === "string" ? region : undefined);
    for (const p of result.problems) {
        report(p.path === "alicloud:region" ? "region" : p.path === CLUSTER_CONFIG_KEY ? "" : p.path, p.reason);
    }
    // The config as given (its Outputs in place), now known to be valid.
    return result.config ? markValidated(config) : undefined;
}

/** The slice of a validated config that the node-joining components read (the Cluster hands them this, built once). */
export function nodeJoinConfig(config: ClusterConfig): NodeJoinConfig {
    const { name, region, kubernetesVersion, images, image, network } = config;
    return markValidated({ name, region, kubernetesVersion, images, image: { bake: image.bake }, network: { podCidr: network.podCidr } });
}

/**
 * Parses what a node-joining component used directly (NodePool, ExistingNode) reads of the cluster's config: a
 * validated one is returned as it is; anything else is checked once (name, region, Kubernetes version, image
 * sources, pod CIDR present), reported relative to the config, and returned as a validated slice, or undefined.
 */
export function parseNodeJoinConfig(config: NodeJoinConfig | NodeJoinFields, report: Report): NodeJoinConfig | undefined {
    return unlessValidated(config, report, (fields) => nodeJoinConfigOf(fields, report));
}

function nodeJoinConfigOf(config: NodeJoinFields, report: Report): NodeJoinConfig | undefined {
    return parsed((r) => {
        const name = typeof config.name === "string" ? dnsLabelProblem(config.name, MAX_NAME_LENGTH) ?? resourceNamePrefixProblem(config.name) ?? hostNamePartProblem(config.name)
            : "must be a string";
        if (name) {
            r("name", name);
        }
        const region = typeof config.region === "string" ? regionProblem(config.region) : "must be a region id, e.g. cn-hangzhou";
        if (region) {
            r("region", region);
        }
        const version = typeof config.kubernetesVersion === "string" ? kubernetesVersionProblem(config.kubernetesVersion) ?? kubernetesPatchProblem(config.kubernetesVersion)
            : "must be a full version like \"1.36.3\"";
        if (version) {
            r("kubernetesVersion", version);
        }
        checkImages(config.images ?? {}, r);
        const { name: n, region: g, kubernetesVersion: v, images, image, network } = config;
        return { name: n, region: g, kubernetesVersion: v, images: images ?? {}, image: { bake: image?.bake === true }, network: { podCidr: network?.podCidr } };
    }, report);
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
            if (issue.input === undefined) {
                return `is required (${issue.expected})`;
            }
            if (SSH_SECRET_FIELDS.includes(String(issue.path[issue.path.length - 1] ?? ""))) {
                return `must be ${issue.expected} (the value given is not repeated: it is a secret)`;
            }
            if (issue.expected === "string" && typeof issue.input === "number") {
                // YAML reads `1.30` as the number 1.3: the quotes are what is missing.
                const version = /version$/i.test(String(issue.path[issue.path.length - 1] ?? ""));
                return `must be a string, got the number ${issue.input}: YAML reads unquoted numbers as numbers (1.30 becomes 1.3); ` +
                    `quote it${version ? ` and give the full version, e.g. "1.36.3"` : ""}`;
            }
            return `must be ${issue.expected}`;
        case "too_small":
            return issue.origin === "string" ? "must not be empty" : issue.message;
        case "unrecognized_keys":
            return `unknown key${issue.keys.length > 1 ? "s" : ""} ${issue.keys.map((k) => `"${k}"`).join(", ")} (check the spelling against README's config reference)`;
        case "invalid_value":
            return `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(", ")}`;
        default:
            return issue.message;
    }
}

function checkZones(zones: string[], region: string | undefined, problem: Report, warn: Report): void {
    // No zone at all, and a zone listed twice, are reported by checkNetworkLayout (the Network component's rule too).
    zones.forEach((zone, i) => {
        const reason = region ? zoneProblem(zone, region) : undefined;
        if (reason) {
            problem(`zones.${i}`, reason);
        }
        const unknown = region && !reason ? zoneWarning(zone, region) : undefined;
        if (unknown) {
            warn(`zones.${i}`, unknown);
        }
    });
}

/**
 * `image.id` (an image id or name, no spaces) and `image.nameRegex` (a pattern Go's regexp compiles), the one in
 * use naming an OS the node scripts set up, and the masters' system disk at least the image's size.
 */
function checkImageSelection(c: Pick<Parsed, "image" | "controlPlane">, problem: Report): void {
    const image = c.image;
    const id = image.id === undefined ? undefined : imageIdProblem(image.id);
    if (id) {
        problem("image.id", id);
    }
    const regex = goRegexProblem(image.nameRegex);
    if (regex) {
        problem("image.nameRegex", regex);
    }
    const used = image.id !== undefined ? "image.id" : "image.nameRegex";
    const os = imageOsProblem(image.id ?? image.nameRegex);
    if (os) {
        problem(used, os);
    }
    const disk = image.bake ? undefined : systemDiskSizeProblem(image.id ?? image.nameRegex, used, c.controlPlane.systemDisk.size);
    if (disk) {
        problem("controlPlane.systemDisk.size", disk);
    }
}

/** Why a system disk of `size` GiB cannot hold `image` (named at `imagePath`), or undefined: ECS takes a system disk only as large as its image or larger. */
function systemDiskSizeProblem(image: string, imagePath: string, size: number): string | undefined {
    const needed = imageSizeGiB(image);
    return needed !== undefined && size < needed
        ? `${size} GiB is smaller than the image ${image} (${imagePath}), which is ${needed} GiB; ECS refuses a system disk smaller than its image: use ${needed} or more`
        : undefined;
}

/** What a pool is checked from: the parsed config, or a NodePoolConfig a program built by hand. */
type PoolInput = Omit<ParsedPool, "taints" | "systemDisk" | "tokenTtl"> & Partial<Pick<ParsedPool, "systemDisk" | "tokenTtl">> & {
    taints: Array<string | Taint>;
};

/** Runs `check` with a report that notes whether anything was reported, and marks its result validated when nothing was. */
function parsed<T extends object>(check: (report: Report) => T, report: Report): Validated<T> | undefined {
    let clean = true;
    const value = check((path, reason) => {
        clean = false;
        report(path, reason);
    });
    return clean ? markValidated(value) : undefined;
}

/**
 * Parses one pool given directly (the NodePool component's `pool`): every problem is reported relative to the
 * pool (`name`, `size`, `labels.<key>`, `taints.0`, …); returns it normalised and validated, or undefined.
 */
export function parseNodePool(pool: PoolInput, clusterName: string, cloudTags: Record<string, string>, report: Report): NodePoolConfig | undefined {
    return parsed((r) => checkPool(pool, clusterName, cloudTags, r), report);
}

/** Checks one pool (reports relative to the pool) and returns it normalised. */
function checkPool(pool: PoolInput, clusterName: string, cloudTags: Record<string, string>, report: Report,
    invalid: { size?: boolean; autoscale?: boolean } = {}): NodePoolFields {
    const nameProblem = dnsLabelProblem(pool.name, MAX_NAME_LENGTH) ?? reservedPoolNameProblem(pool.name) ?? hostNamePartProblem(pool.name) ??
        essNameProblem(clusterName, pool.name) ?? nameAsTagValueProblem(pool.name, POOL_LABEL);
    if (nameProblem) {
        report("name", nameProblem);
    }
    // `invalid`: given, but of a type the caller already reported (so not missing).
    const hasSize = pool.size !== undefined || invalid.size === true;
    const hasAutoscale = pool.autoscale !== undefined || invalid.autoscale === true;
    if (hasSize === hasAutoscale) {
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
    if (pool.instanceType && pool.instanceTypes) {
        report("", "set `instanceType` or `instanceTypes`, not both");
    } else if (types.length === 0) {
        report("instanceType", "is required (e.g. ecs.g7.xlarge)");
    } else if (pool.autoscale && types.length > 1) {
        report("instanceTypes", "an autoscaled pool takes exactly one instance type: the Cluster Autoscaler builds its scale-from-zero template from one (use `instanceType`)");
    }
    if (!pool.instanceTypes) {
        const reason = pool.instanceType ? instanceTypeProblem(pool.instanceType) : undefined;
        if (reason) {
            report("instanceType", reason);
        }
    } else {
        pool.instanceTypes.forEach((t, i) => {
            const reason = instanceTypeProblem(t);
            if (reason) {
                report(`instanceTypes.${i}`, reason);
            }
        });
        instanceTypeListProblems(pool.instanceTypes, (path, reason) => report(joinPath("instanceTypes", path), reason));
        const mixed = mixedArchitectureProblem(pool.instanceTypes);
        if (mixed) {
            report(`instanceTypes.${mixed.index}`, mixed.reason);
        }
    }
    const imageId = pool.imageId === undefined ? undefined : imageIdProblem(pool.imageId) ?? imageOsProblem(pool.imageId);
    if (imageId) {
        report("imageId", imageId);
    }
    const disk = pool.imageId === undefined || !pool.systemDisk ? undefined : systemDiskSizeProblem(pool.imageId, "imageId", pool.systemDisk.size);
    if (disk) {
        report("systemDisk.size", disk);
    }
    nodeLabelProblems(pool.labels, (key, reason) => report(`labels.${key}`, reason));
    scalingConfigurationTags(pool, cloudTags, report);
    const tokenTtl = pool.tokenTtl ?? "0";
    if (!new RegExp(GO_DURATION_ERE).test(tokenTtl)) {
        report("tokenTtl", `"${tokenTtl}" must be a duration like 0 (never expires), 24h or 30m`);
    } else {
        const tooLong = durationProblem(tokenTtl);
        if (tooLong) {
            report("tokenTtl", tooLong);
        }
    }
    const taints = checkTaints(pool.taints, (path, reason) => report(`taints.${path}`, reason));
    nodeFlagsSizeProblems(pool.labels, taints, "userdata", report);
    const fromZero = scaleFromZeroProblem({ autoscale: pool.autoscale, taints });
    if (fromZero) {
        report("autoscale.min", fromZero);
    }
    let rollout: Rollout | undefined;
    if (pool.rollout !== undefined) {
        rollout = parseRollout(pool.rollout, (path, reason) => report(joinPath("rollout", path), reason));
    }
    let healthRepair: HealthRepair | undefined;
    if (pool.autoscale && pool.healthRepair !== undefined) {
        report("healthRepair", "health repair is for fixed pools (with `size`); in an autoscaled pool the Cluster Autoscaler removes unready nodes it does not need: remove healthRepair");
    } else if (!pool.autoscale && pool.healthRepair !== undefined) {
        healthRepair = parseHealthRepair(pool.healthRepair, (path, reason) => report(joinPath("healthRepair", path), reason));
    }
    const { instanceType: _one, rollout: _given, healthRepair: _repair, ...rest } = pool;
    return { ...rest, systemDisk: pool.systemDisk ?? { category: "cloud_essd", size: 40 }, tokenTtl, instanceTypes: types, taints, ...(rollout ? { rollout } : {}),
        ...(healthRepair ? { healthRepair } : {}) };
}

/** What an existing node is checked from: the parsed config, or an ExistingNodeConfig built by hand. */
type ExistingNodeToCheck = Omit<ParsedExistingNode, "taints"> & { taints: Array<string | Taint> };

/**
 * Parses one existing node given directly (the ExistingNode component's `node`): every problem is reported
 * relative to the node; returns it normalised and validated, or undefined.
 */
export function parseExistingNode(node: ExistingNodeToCheck, report: Report, viaSsh = false): ExistingNodeConfig | undefined {
    return parsed((r) => checkExistingNode(node, r, viaSsh), report);
}

/** Checks one existing node (reports relative to it) and returns it normalised. */
function checkExistingNode(node: ExistingNodeToCheck, report: Report, viaSsh = false): ExistingNodeFields {
    if (!INSTANCE_ID_PATTERN.test(node.instanceId)) {
        report("instanceId", `"${node.instanceId}" is not an ECS instance id (expected i-…, e.g. i-bp1exampleexample01)`);
    }
    const guard = replaceSystemDiskProblem(node.mode, node.replaceSystemDisk);
    if (guard) {
        report("replaceSystemDisk", guard);
    }
    if (node.connection && node.mode !== "manual") {
        report("connection", `a connection runs the attach script over SSH, which only mode manual does (this node is mode ${node.mode}): remove connection or use mode manual`);
    }
    if ((node.connection || viaSsh) && node.rollout === "replace") {
        report("rollout", "a node attached over SSH (connection) cannot be attached again by an update (its attach runs once, in a remote command): " +
            "use rollout: report, or attach it over Cloud Assistant (remove connection)");
    }
    if (node.connection) {
        sshConnectionContentProblems(node.connection, (path, reason) => report(joinPath("connection", path), reason));
    }
    nodeLabelProblems(node.labels, (key, reason) => report(`labels.${key}`, reason));
    const taints = checkTaints(node.taints, (path, reason) => report(`taints.${path}`, reason));
    // Manual mode passes them as the attach command's parameters; auto mode (and an SSH connection) in the script itself.
    nodeFlagsSizeProblems(node.labels, taints, node.mode === "manual" && !viaSsh && !node.connection ? "parameters" : "userdata", report);
    return { ...node, taints };
}

/** Labels and taints that Kubernetes keeps itself on every node: warned at the label or taint. */
function nodeSettingWarnings(nodes: Array<{ at: string; node: { labels: Record<string, string>; taints: Array<string | Taint> } }>, warn: Report): void {
    for (const { at, node } of nodes) {
        for (const key of Object.keys(node.labels)) {
            const reason = observedLabelWarning(key);
            if (reason) warn(`${at}.labels.${key}`, reason);
        }
        node.taints.forEach((t, j) => {
            const taint = typeof t === "string" ? parseTaint(t) : t;
            const reason = typeof taint === "string" ? undefined : managedTaintWarning(taint.key);
            if (reason) warn(`${at}.taints.${j}`, reason);
        });
    }
}

/**
 * Two existing nodes whose SSH connections dial the same address and port would run the attach script twice on one
 * machine, which then joins as whichever instance ran it last: reported at the second node's `connection.host`.
 * One address with different ports (a port-forward per node) is fine.
 */
function checkSshTargets(nodes: Parsed["existingNodes"], problem: Report): void {
    const seen = new Map<string, number>();
    nodes.forEach((node, i) => {
        const c = node.connection;
        if (!c || typeof c.host !== "string" || c.host.length === 0) return;
        const target = sshTarget(c.host, c.port);
        const first = seen.get(target);
        if (first !== undefined) {
            problem(`existingNodes.${i}.connection.host`, `${c.host} port ${c.port} is also existingNodes.${first}'s connection: two instances cannot be one machine; ` +
                "give each node its own address, or its own port when they sit behind one address (connection.port)");
        } else {
            seen.set(target, i);
        }
    });
}

/**
 * `admission.*`: the certificate, and the join tag, which must be a tag the cloud takes and not one the cluster puts
 * on its own instances: the cloud tags (masters, fixed pools) and every pool's labels (its scaling configuration's tags).
 */
function checkAdmission(c: Pick<Parsed, "admission" | "tags" | "nodePools">, problem: Report): void {
    const admission = c.admission;
    if (admission.identityCertificate !== undefined) {
        const reason = identityCertificateProblem(admission.identityCertificate);
        if (reason) problem("admission.identityCertificate", reason);
    }
    const readmit = admission.readmitAfterSeconds === undefined ? undefined : readmitAfterProblem(admission.readmitAfterSeconds);
    if (readmit) problem("admission.readmitAfterSeconds", readmit);
    if (admission.joinTag === undefined) {
        return;
    }
    const carried = new Map<string, string>();
    c.nodePools.forEach((p, i) => Object.entries(p.labels).forEach(([k, v]) => carried.set(`${k}=${v}`, `nodePools.${i}.labels.${k}`)));
    Object.entries(c.tags).forEach(([k, v]) => carried.set(`${k}=${v}`, `tags.${k}`));
    const joinTag = joinTagProblem(admission.joinTag) ?? joinTagCarriedProblem(admission.joinTag, carried);
    if (joinTag) {
        problem("admission.joinTag", joinTag);
    }
}

function checkImages(images: Parsed["images"], problem: Report): void {
    for (const key of ["flannel", "flannelCniPlugin", "cloudControllerManager", "admission"] as const) {
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

/**
 * Enough node pod CIDRs for every node the config can have, and the route-table quota: one pod route per
 * node. Nodes that always exist (masters, existing nodes, fixed pools, autoscale minimums) beyond the quota
 * are an error: their routes cannot be written and their pods get no network. Autoscale maximums beyond it
 * are a warning: the autoscaler can be kept below it, or the quota raised first.
 */
function checkNodeCapacity(c: Parsed, pools: NodePoolFields[], existingCount: number, problem: Report, warn: Report): void {
    const pod = parseCidr(c.network.podCidr);
    if (typeof pod === "string") {
        return;
    }
    const mask = c.network.nodeCidrMaskSize;
    const maskReason = nodeCidrMaskProblem(pod, c.network.podCidr, mask);
    if (maskReason) {
        problem("network.nodeCidrMaskSize", maskReason);
        return;
    }
    const count = (n: number | undefined) => Math.max(n ?? 0, 0);
    const always = c.controlPlane.count + existingCount + pools.reduce((sum, p) => sum + count(p.autoscale ? p.autoscale.min : p.size), 0);
    const needed = c.controlPlane.count + existingCount + pools.reduce((sum, p) => sum + count(p.autoscale ? p.autoscale.max : p.size), 0);
    const available = nodeCidrCount(pod, mask);
    if (available < needed) {
        problem("network.nodeCidrMaskSize", `/${mask} gives ${available} node CIDRs in ${c.network.podCidr}, but masters + existing nodes + pool maximums need ${needed}; use a larger podCidr or a larger mask size`);
    }
    const quota = c.network.routeEntryQuota;
    if (always > quota) {
        problem("network.routeEntryQuota", `masters, existing nodes, fixed pool sizes and autoscale minimums make ${always} nodes, each needing a pod route, ` +
            `above the route table quota of ${quota}: raise the VPC route entry quota in Quota Center and set routeEntryQuota to it, or make the pools smaller`);
    } else if (needed > quota) {
        warn("network.routeEntryQuota", `up to ${needed} nodes need ${needed} pod routes, above the route table quota of ${quota}; raise the VPC route entry quota before scaling that far`);
    } else if (needed >= 0.8 * quota) {
        warn("network.routeEntryQuota", `up to ${needed} nodes use ${Math.round((100 * needed) / quota)}% of the route table quota (${quota} entries, one pod route per node)`);
    }
}

/**
 * The images every node runs (pause, kube-proxy, flannel and its CNI plugin), from the one source
 * (src/rules/images.ts `nodeImages`): what NodeImage bakes, and what baked nodes check and pre-pull.
 */
export function nodeImageList(config: Pick<ClusterConfigFields, "region" | "kubernetesVersion" | "images">): string[] {
    return Object.values(nodeImages({
        kubernetesVersion: config.kubernetesVersion,
        imageRepository: config.images.kubernetesRepository ?? defaultMirrors(config.region).imageRepository,
        flannel: config.images.flannel,
        flannelCniPlugin: config.images.flannelCniPlugin,
    }));
}

/**
 * The parameters every node script of the cluster is rendered with (src/shell/render.ts `NodeParams` without
 * the endpoint): region, Kubernetes version and the package and image sources. Unset sources are left out so
 * the renderer's region defaults apply (and the scripts of existing stacks render unchanged).
 */
export function nodeScriptParams(config: Pick<ClusterConfigFields, "region" | "kubernetesVersion" | "images">): NodeScriptParams {
    const { kubernetesRepository, packageMirror } = config.images;
    return {
        region: config.region,
        kubernetesVersion: config.kubernetesVersion,
        ...(kubernetesRepository !== undefined ? { imageRepository: kubernetesRepository } : {}),
        ...(packageMirror !== undefined ? { packageMirror } : {}),
    };
}

/** What {@link nodeScriptParams} returns. */
export interface NodeScriptParams {
    region: string;
    kubernetesVersion: string;
    imageRepository?: string;
    packageMirror?: string;
}

/** `{ nodeImages }` for the userdata of nodes that boot the baked image (pools); `{}` without baking. */
export function bakedNodeImages(config: Pick<ClusterConfigFields, "region" | "kubernetesVersion" | "images"> & { image?: { bake: boolean } }): { nodeImages?: string[] } {
    return config.image?.bake ? { nodeImages: nodeImageList(config) } : {};
}
