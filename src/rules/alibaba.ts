// Alibaba Cloud limits and conventions the config and the components both rely on: ESS names and tags,
// tag keys and values, resource names, instance types, vSwitch reserved addresses, the masters' fixed
// addresses, the route-table quota. Sources: docs/upstream.md#alibaba-cloud-ess, #alibaba-cloud-vpc and #alibaba-tags.
import { formatIp, parseCidr, sizeOf, type Cidr } from "./cidr";
import { AUTOSCALED_LABEL, POOL_LABEL, RESERVED_LABEL_PREFIX } from "./labels";
import type { Report } from "./problems";
import { AUTOSCALED_SPEC_LABEL, SPEC_TAG } from "./spec";

/** ESS scaling group and scaling configuration names (`<cluster>-<pool>`) are at most 64 characters. */
export const MAX_ESS_NAME_LENGTH = 64;
/** ESS allows at most 20 tags on a scaling configuration. */
export const MAX_SCALING_CONFIGURATION_TAGS = 20;
/** ESS allows at most 2000 instances in a scaling group. */
export const MAX_SCALING_GROUP_INSTANCES = 2000;
/** Alibaba Cloud's default quota of custom entries per VPC route table (raise it in the Quota Center). */
export const DEFAULT_ROUTE_ENTRY_QUOTA = 200;
/** Addresses Alibaba reserves in every vSwitch (the first 3 and the last 1): a host offset must be below size − 4. */
export const VSWITCH_RESERVED_ADDRESSES = 4;
/** ECS accepts 32 KiB of userdata before Base64 (docs/upstream.md#ecs-userdata-limit). */
export const USERDATA_HARD_LIMIT_BYTES = 32 * 1024;
/** Host offset of the first master in its vSwitch: masters get base + 10, + 11, … (fixed, so the endpoint is known early). */
export const MASTER_IP_OFFSET = 10;

/** Tags per resource: ECS instances, VPC resources, scaling groups and scaling configurations all take at most 20. */
export const MAX_RESOURCE_TAGS = 20;
/** Tag keys of ECS and VPC resources are at most 128 characters. */
export const MAX_TAG_KEY_LENGTH = 128;
/** ESS (scaling-configuration) tag keys are at most 64 characters. */
export const MAX_ESS_TAG_KEY_LENGTH = 64;
/** Tag values are at most 128 characters (and may be empty). */
export const MAX_TAG_VALUE_LENGTH = 128;

/** Prefixes Alibaba Cloud reserves for its own tags (compared case-insensitively: the harsher reading). */
const RESERVED_TAG_PREFIX = /^(aliyun|acs:)/i;
const URL_IN_TAG = /https?:\/\//i;

/**
 * Why `key` cannot be a tag key on Alibaba Cloud, or undefined: not empty, at most `maxLength` characters
 * (128; 64 on ESS scaling configurations), not starting with `aliyun` or `acs:`, without `http://`/`https://`.
 */
export function tagKeyProblem(key: string, maxLength = MAX_TAG_KEY_LENGTH): string | undefined {
    if (key.length === 0) {
        return "a tag key must not be empty";
    }
    if (RESERVED_TAG_PREFIX.test(key)) {
        return `tag key "${key}": Alibaba Cloud reserves keys starting with aliyun or acs: (ESS and the tag service refuse them)`;
    }
    if (URL_IN_TAG.test(key)) {
        return `tag key "${key}" must not contain http:// or https://`;
    }
    return key.length > maxLength ? `tag key "${key}" has ${key.length} characters; at most ${maxLength} are allowed${maxLength === MAX_ESS_TAG_KEY_LENGTH ? " on scaling configurations" : ""}` : undefined;
}

/** Why `value` cannot be a tag value, or undefined: at most 128 characters, not starting with `aliyun` or `acs:`, no URL. */
export function tagValueProblem(value: string): string | undefined {
    if (RESERVED_TAG_PREFIX.test(value)) {
        return `tag value "${value}" must not start with aliyun or acs: (ESS refuses it)`;
    }
    if (URL_IN_TAG.test(value)) {
        return `tag value "${value}" must not contain http:// or https://`;
    }
    return value.length > MAX_TAG_VALUE_LENGTH ? `tag value has ${value.length} characters; at most ${MAX_TAG_VALUE_LENGTH} are allowed` : undefined;
}

/**
 * Checks the user's cloud tags (reported at `<key>`, and at "" for the count). Every resource also carries
 * `alicloud-kubeadm/cluster`, and masters and scaling groups one tag more (role, pool): so at most 18 of
 * the user's. Fixed pools' scaling configurations carry these tags too, so with `essKeys` keys are held to 64.
 */
export function cloudTagProblems(tags: Record<string, string>, essKeys: boolean, report: Report): void {
    const ours = 2;
    const count = Object.keys(tags).length;
    if (count + ours > MAX_RESOURCE_TAGS) {
        report("", `${count} tags + alicloud-kubeadm/cluster + one role or pool tag = ${count + ours} on the masters and scaling groups; Alibaba Cloud allows at most ${MAX_RESOURCE_TAGS} per resource: keep at most ${MAX_RESOURCE_TAGS - ours}`);
    }
    for (const [key, value] of Object.entries(tags)) {
        if (key.startsWith(RESERVED_LABEL_PREFIX)) {
            report(key, `tag key "${key}": ${RESERVED_LABEL_PREFIX}* tags are set by alicloud-kubeadm (cluster, role, pool) and would replace or be replaced by its own; remove it or use another prefix`);
            continue;
        }
        const reason = tagKeyProblem(key, essKeys ? MAX_ESS_TAG_KEY_LENGTH : MAX_TAG_KEY_LENGTH) ?? tagValueProblem(value);
        if (reason) {
            report(key, essKeys && key.length > MAX_ESS_TAG_KEY_LENGTH && !tagKeyProblem(key) ? `${reason} (fixed pools' scaling configurations carry the cloud tags)` : reason);
        }
    }
}

/**
 * Why the cluster name cannot prefix resource names, or undefined. The security groups (and the VPC, its
 * vSwitches, the masters and the NLB) are named `<name>…`, and security group names must start with a letter.
 */
export function resourceNamePrefixProblem(name: string): string | undefined {
    return /^[a-zA-Z]/.test(name) ? undefined
        : `"${name}" must start with a letter: it prefixes the names of the security groups (and the VPC, vSwitches, masters and load balancer), which Alibaba Cloud requires to start with a letter`;
}

/** An ECS instance type: `ecs.<family>.<size>`, e.g. ecs.g7.xlarge, ecs.gn7i-c8g1.2xlarge. */
const INSTANCE_TYPE = /^ecs\.[a-z0-9]+(-[a-z0-9]+)*\.[a-z0-9]+(-[a-z0-9]+)*$/;

/** Why `type` is not an ECS instance type, or undefined. */
export function instanceTypeProblem(type: string): string | undefined {
    return INSTANCE_TYPE.test(type) ? undefined : `"${type}" is not an ECS instance type (expected ecs.<family>.<size>, e.g. ecs.g7.xlarge)`;
}

/**
 * Instance-type sizes that have 1 vCPU in every family that offers them (`ecs.n1.tiny`, `ecs.t5-lc1m2.small`,
 * `ecs.e4.small`, …). `medium` is not among them: `ecs.n1.medium` has 2.
 */
const ONE_VCPU_SIZE = /\.(nano|micro|tiny|small)$/;

/**
 * The warning for a master instance type with 1 vCPU, or undefined: kubeadm's preflight check `NumCPU` requires
 * 2 CPUs on a control-plane node, so `kubeadm init` (and a control-plane join) stops there. A warning, not an
 * error: the vCPU count is read from the size's name, not from the cloud.
 */
export function masterInstanceTypeWarning(type: string): string | undefined {
    return ONE_VCPU_SIZE.test(type) && !instanceTypeProblem(type)
        ? `${type} has 1 vCPU, and kubeadm's preflight (NumCPU) requires 2 on a control-plane node: kubeadm init would stop there; use a "large" or bigger size (e.g. ecs.g7.large)`
        : undefined;
}

/** What a pool's tag and label rules look at. */
export interface PoolTagInput {
    name: string;
    labels: Record<string, string>;
    /** Present for autoscaled pools. */
    autoscale?: unknown;
}

/** The labels a pool's nodes register with: the pool's own, the pool label, the autoscaled marker. */
export function poolNodeLabels(pool: PoolTagInput): Record<string, string> {
    return { ...pool.labels, [POOL_LABEL]: pool.name, ...(pool.autoscale ? { [AUTOSCALED_LABEL]: "true" } : {}) };
}

/**
 * The scaling configuration's tags, and the problems ESS would refuse them for (reported at `labels` /
 * `labels.<key>`). Autoscaled pools carry exactly the node labels, because the Cluster Autoscaler copies
 * the tags into its scale-from-zero node template (the spec hash, {@link AUTOSCALED_SPEC_LABEL}, is a label of theirs
 * too); fixed pools carry the cloud tags plus the node labels, and the spec hash under {@link SPEC_TAG}. The spec hash
 * is counted here, not returned: it is known only once the image is.
 */
export function scalingConfigurationTags(pool: PoolTagInput, cloudTags: Record<string, string>, report: Report): Record<string, string> {
    const labels = poolNodeLabels(pool);
    const tags = pool.autoscale ? labels : { ...cloudTags, ...labels };
    // The configuration also carries the pool's spec hash (SPEC_TAG, or AUTOSCALED_SPEC_LABEL), added where the hash is known (NodePool).
    const count = Object.keys(tags).length + 1;
    if (count > MAX_SCALING_CONFIGURATION_TAGS) {
        const parts = pool.autoscale
            ? `${Object.keys(pool.labels).length} labels + ${POOL_LABEL} + ${AUTOSCALED_LABEL} + ${AUTOSCALED_SPEC_LABEL}`
            : `${Object.keys(pool.labels).length} labels + ${POOL_LABEL} + ${SPEC_TAG} + ${Object.keys(cloudTags).length} cloud tags`;
        report("labels", `the scaling configuration would carry ${count} tags (${parts}); ESS allows at most ${MAX_SCALING_CONFIGURATION_TAGS}: remove labels${pool.autoscale ? "" : " or tags"}`);
    }
    for (const [key, value] of Object.entries(pool.labels)) {
        if (RESERVED_TAG_PREFIX.test(key)) {
            report(`labels.${key}`, `label key "${key}" becomes a scaling-configuration tag, and ESS refuses tag keys starting with aliyun or acs:`);
        } else if (key.length > MAX_ESS_TAG_KEY_LENGTH) {
            report(`labels.${key}`, `label key "${key}" (${key.length} characters) becomes a scaling-configuration tag, and ESS takes keys of at most ${MAX_ESS_TAG_KEY_LENGTH}`);
        }
        if (RESERVED_TAG_PREFIX.test(value)) {
            report(`labels.${key}`, `label value "${value}" becomes a scaling-configuration tag value, and ESS refuses values starting with aliyun or acs:`);
        }
    }
    return tags;
}

/** ESS takes at most 10 instance types in one scaling configuration (docs/upstream.md#ess-limits). */
export const MAX_SCALING_CONFIGURATION_INSTANCE_TYPES = 10;

/**
 * Checks a pool's list of instance types as ESS takes it (reported at the index): at most
 * {@link MAX_SCALING_CONFIGURATION_INSTANCE_TYPES}, each listed once (a repeat is an order of preference that says
 * nothing, and the harsher reading is that ESS refuses it).
 */
export function instanceTypeListProblems(types: readonly string[], report: Report): void {
    if (types.length > MAX_SCALING_CONFIGURATION_INSTANCE_TYPES) {
        report("", `${types.length} instance types; a scaling configuration takes at most ${MAX_SCALING_CONFIGURATION_INSTANCE_TYPES}: keep the ${MAX_SCALING_CONFIGURATION_INSTANCE_TYPES} you prefer`);
    }
    types.forEach((t, j) => {
        const first = types.indexOf(t);
        if (first < j) {
            report(String(j), `${t} is listed twice (also instanceTypes.${first}): list each instance type once`);
        }
    });
}

/**
 * Why a name cannot be the value of the tag alicloud-kubeadm puts it in (`tagKey`: the cluster tag on every
 * resource, the pool tag on a pool's scaling configuration and instances), or undefined: Alibaba Cloud refuses tag
 * values starting with `aliyun` or `acs:` (docs/upstream.md#alibaba-tags). Reported at the name, which is what the user wrote.
 */
export function nameAsTagValueProblem(name: string, tagKey: string): string | undefined {
    return RESERVED_TAG_PREFIX.test(name)
        ? `"${name}" becomes the value of the tag ${tagKey}=${name}, and Alibaba Cloud refuses tag values starting with aliyun or acs:; choose a name that does not start with "aliyun"`
        : undefined;
}

/** Why `<cluster>-<pool>` is too long for ESS names, or undefined. */
export function essNameProblem(clusterName: string, poolName: string): string | undefined {
    const essName = `${clusterName}-${poolName}`;
    if (essName.length <= MAX_ESS_NAME_LENGTH) {
        return undefined;
    }
    return `the scaling group and scaling configuration are named "${essName}" (${essName.length} characters); ESS allows at most ${MAX_ESS_NAME_LENGTH}, ` +
        `so name + "-" + pool name must fit: shorten the pool name to at most ${Math.max(MAX_ESS_NAME_LENGTH - clusterName.length - 1, 0)} characters`;
}

/** Where master `index` goes: zones round-robin. */
export function masterZoneIndex(index: number, zoneCount: number): number {
    return index % zoneCount;
}

/**
 * The fixed private IP of master `index`: address {@link MASTER_IP_OFFSET} + n of its zone's vSwitch,
 * where n counts the masters before it in the same zone.
 */
export function masterPrivateIp(vswitchCidr: string, index: number, zoneCount: number): string {
    const c = parseCidr(vswitchCidr);
    if (typeof c === "string") {
        throw new Error(c);
    }
    return formatIp(c.base + MASTER_IP_OFFSET + Math.floor(index / zoneCount));
}

/**
 * Why the vSwitch of zone `zoneIndex` cannot hold the masters placed there (their fixed addresses must
 * stay clear of the addresses Alibaba reserves at the end of a vSwitch), or undefined.
 */
export function masterPlacementProblem(v: Cidr, zoneIndex: number, zoneCount: number, masterCount: number): string | undefined {
    if (zoneCount === 0 || zoneIndex >= zoneCount) {
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
    return `${formatIp(v.base)}/${v.prefix} (${size} addresses) is too small for the ${mastersHere} master${mastersHere === 1 ? "" : "s"} placed in its zone: ` +
        `masters take the fixed addresses base + ${MASTER_IP_OFFSET}${mastersHere > 1 ? `…${highest}` : ""}, which must be below base + ` +
        `${size - VSWITCH_RESERVED_ADDRESSES} (Alibaba reserves ${VSWITCH_RESERVED_ADDRESSES} addresses of every vSwitch); use /${need} or larger`;
}

/** The provider id a kubelet registers for an instance, `<region-id>.<instance-id>`: the CCM and the autoscaler match it exactly. */
export function providerIdOf(region: string, instanceId: string): string {
    return `${region}.${instanceId}`;
}

/** The replaceSystemDisk guard of `mode: auto` (it wipes the system disk), or undefined when confirmed. */
export function replaceSystemDiskProblem(mode: string, replaceSystemDisk: boolean | undefined): string | undefined {
    return mode === "auto" && replaceSystemDisk !== true
        ? "mode auto replaces the instance's system disk (all data on it is lost); set replaceSystemDisk: true to confirm, or use mode: manual"
        : undefined;
}
