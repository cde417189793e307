// A pool's spec hash: what decides what a new node of the pool becomes, reduced to one short value that the scaling
// configuration carries as a tag, so ESS puts it on every instance it creates from then on (docs/upstream.md#ess-config-tags,
// #ess-config-changes). An instance whose tag differs from the configuration's is outdated: it was made from an earlier
// spec. The tag is read from the instance (DescribeInstances), never from anything the node says about itself.
import { createHash } from "crypto";

/**
 * The tag (on the scaling configuration, hence on the instances ESS creates) holding the pool's spec hash. Under
 * `node-restriction.kubernetes.io/`, like the pool label: should it ever become a Node label, only a server-side writer
 * (the admission service) could set it, never a kubelet (docs/upstream.md#kubelet-node-labels).
 */
export const SPEC_TAG = "node-restriction.kubernetes.io/alicloud-kubeadm-spec";

/**
 * The `joinedSpec` a NodeMembership's state records for an existing node whose replacement started its removal and did
 * not attach it again: it is out of the cluster (docs/rotation.md#existing-nodes). Never a spec hash (those are hex).
 */
export const EXISTING_NODE_REMOVED = "removed";

/**
 * An autoscaled pool's spec hash, on its scaling configuration's tags and, the same key and value, among the labels its
 * kubelets register (`--node-labels`). The Cluster Autoscaler copies every configuration tag into its scale-from-zero
 * template as a label (docs/upstream.md#autoscaler-template), so the tag must be a label the pool's Nodes carry too:
 * {@link SPEC_TAG}, which no kubelet may set, would be a template label no Node has. A label the node registers itself
 * is its own claim, and nothing reads it: whether a member is outdated is read from its instance's tag (DescribeInstances),
 * which ESS set and the node cannot change (docs/rotation.md#knowing-what-is-outdated).
 */
export const AUTOSCALED_SPEC_LABEL = "alicloud-kubeadm/spec";

/** Hex digits of the spec hash: 64 bits of SHA-256, plenty to tell a pool's specs apart. */
export const SPEC_HASH_LENGTH = 16;

/** Everything that decides what a new node of a pool becomes. */
export interface PoolSpec {
    /** The image the scaling configuration boots. */
    imageId: string;
    /** The instance types, in order of preference. */
    instanceTypes: readonly string[];
    /** System disk category and size. */
    systemDisk: { category: string; size: number };
    /** The cluster's Kubernetes version. */
    kubernetesVersion: string;
    /** The labels the node registers with (the pool's, the pool label, the autoscaled marker). */
    labels: Readonly<Record<string, string>>;
    /** The taints it registers with, `key=value:Effect`. */
    taints: readonly string[];
    /**
     * The pool's userdata script as rendered with no secret in it (the token, the CA pin and the endpoints replaced by
     * fixed stand-ins): a changed script, package source or kubelet setting is a changed spec; a rotated token is not.
     */
    userdata: string;
}

/** JSON with object keys sorted at every level: the same spec gives the same text whatever order it was built in. */
function canonical(value: unknown): string {
    if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
    if (value !== null && typeof value === "object") {
        const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
        return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
    }
    return JSON.stringify(value);
}

/** The pool's spec hash: {@link SPEC_HASH_LENGTH} hex digits of SHA-256 over the canonical spec. */
export function poolSpecHash(spec: PoolSpec): string {
    return createHash("sha256").update(canonical(spec)).digest("hex").slice(0, SPEC_HASH_LENGTH);
}

/**
 * Everything that decides what an existing node becomes when it (re-)attaches. No Kubernetes version: an existing node's
 * kubelet follows the control plane in place (docs/upgrades.md#nodes), so a version is never a reason to replace one.
 */
export interface ExistingNodeSpec {
    /** `manual` or `auto`. */
    mode: string;
    /** The image of the new system disk (`auto`); "" otherwise. */
    imageId: string;
    /** The labels it registers with (the attach script adds the pool label). */
    labels: Readonly<Record<string, string>>;
    /** The taints, `key=value:Effect`. */
    taints: readonly string[];
    /** The attach script rendered with {@link SPEC_STAND_IN} for the token, the endpoints, the pins and the version. */
    script: string;
}

/** An existing node's spec hash, {@link SPEC_HASH_LENGTH} hex digits like a pool's (docs/rotation.md#existing-nodes). */
export function existingNodeSpecHash(spec: ExistingNodeSpec): string {
    return createHash("sha256").update(canonical({ existingNode: spec })).digest("hex").slice(0, SPEC_HASH_LENGTH);
}

/**
 * Whether an instance is outdated: its spec tag (as ESS put it at creation: {@link SPEC_TAG} for a fixed pool,
 * {@link AUTOSCALED_SPEC_LABEL} for an autoscaled one) differs from the pool's current hash. An instance without the
 * tag was created before pools carried it, or attached by hand: outdated too (nothing says what it was made from). With
 * no current hash (state written before it existed) nothing is outdated. Either key counts: a pool that changes mode
 * changes its labels (the autoscaled marker), hence its hash, so an instance is never current under the wrong key.
 */
export function isOutdated(instanceTags: Readonly<Record<string, string>> | undefined, currentHash: string | undefined): boolean {
    if (!currentHash) return false;
    return instanceTags?.[SPEC_TAG] !== currentHash && instanceTags?.[AUTOSCALED_SPEC_LABEL] !== currentHash;
}

/**
 * What stands in for the per-cluster secrets and addresses when a pool's userdata is rendered for its spec hash: valid
 * in form (the renderer checks them), the same for every cluster, and no secret.
 */
export const SPEC_STAND_IN = {
    endpoint: "192.0.2.1:6443",
    pin: `sha256:${"0".repeat(64)}`,
    token: "abcdef.0123456789abcdef",
    /** An existing node's script is hashed at one fixed version: its kubelet's version moves in place, never by a replacement. */
    version: "1.31.0",
} as const;
