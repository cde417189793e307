// Kubernetes labels and taints: the keys this project sets, what a kubelet may register, and the grammar.

/**
 * Label (and scaling-configuration tag) naming a node's pool, set by the admission service on the Nodes it
 * admitted, from its own record of the instance's scaling group: under `node-restriction.kubernetes.io/`, which
 * NodeRestriction lets no kubelet set (docs/upstream.md#kubelet-node-labels), so a node cannot claim another
 * pool. The same literal as src/admission/nodes.ts (the service is shipped on its own).
 */
export const POOL_LABEL = "node-restriction.kubernetes.io/alicloud-kubeadm-pool";
/**
 * The pool label before {@link POOL_LABEL}: nodes set it themselves (a node joined before, a control-plane
 * member, a pool joining with a token). Read where a Node has no {@link POOL_LABEL} (see {@link nodePool}).
 */
export const LEGACY_POOL_LABEL = "alicloud-kubeadm/pool";
/** The taint a node joining through admission registers with until the service sets its pool label. */
export const POOL_PENDING_TAINT = "startup-taint.cluster-autoscaler.kubernetes.io/alicloud-kubeadm-pool";

/**
 * A Node's pool: {@link POOL_LABEL}, or for a Node without it (joined before the service set it, or not through
 * admission) {@link LEGACY_POOL_LABEL}. A Node carrying both is in the pool the service said.
 */
export function nodePool(labels: { pool?: string; legacyPool?: string }): string {
    return labels.pool || labels.legacyPool || "";
}
/**
 * The taint a rollout puts on a pool's outdated Nodes before it surges (`alicloud-kubeadm/outdated=<pool>:PreferNoSchedule`):
 * the scheduler then prefers the new nodes for the pods the rollout's drains evict. Its value is the pool, so one
 * pool's rollout clears only its own. Set and cleared only by PoolCapacity (docs/rotation.md#prefer-not-schedule).
 */
export const OUTDATED_TAINT = "alicloud-kubeadm/outdated";
/**
 * The Cluster Autoscaler's annotation that keeps a Node from being scaled down (docs/upstream.md#autoscaler-scale-down-disabled).
 * A rollout of an autoscaled pool puts it on the pool's current Nodes, with {@link SCALE_DOWN_HELD} naming the pool, and
 * takes both off when the rollout ends (docs/rotation.md#autoscaled-pools).
 */
export const SCALE_DOWN_DISABLED = "cluster-autoscaler.kubernetes.io/scale-down-disabled";
/** The mark beside {@link SCALE_DOWN_DISABLED} saying a rollout set it, for `<pool>`: an annotation without it is somebody else's. */
export const SCALE_DOWN_HELD = "alicloud-kubeadm/scale-down-held";
/** Label (and scaling-configuration tag) on the nodes of autoscaled pools. */
export const AUTOSCALED_LABEL = "alicloud-kubeadm/autoscaled";
/** Cloud tag on every resource of a cluster: `alicloud-kubeadm/cluster=<name>`. */
export const CLUSTER_TAG = "alicloud-kubeadm/cluster";
/** Cloud tag on the masters: `alicloud-kubeadm/role=control-plane`. */
export const ROLE_TAG = "alicloud-kubeadm/role";
/** Label keys under this prefix are set by alicloud-kubeadm only. */
export const RESERVED_LABEL_PREFIX = "alicloud-kubeadm/";
/** Pool label value of the control-plane members' nodes. */
export const CONTROL_PLANE_POOL = "control-plane";
/** Pool label value of existing nodes (`…alicloud-kubeadm-pool=existing`). */
export const EXISTING_POOL = "existing";

/**
 * Why `name` cannot be a pool's name, or undefined: the pool label values of the masters
 * ({@link CONTROL_PLANE_POOL}) and of existing nodes ({@link EXISTING_POOL}) are taken, and a pool of the
 * same name would be mixed up with them (its nodes listed, drained and counted as theirs).
 */
export function reservedPoolNameProblem(name: string): string | undefined {
    return name === CONTROL_PLANE_POOL || name === EXISTING_POOL
        ? `"${name}" is the pool label value alicloud-kubeadm gives ${name === EXISTING_POOL ? "existing nodes" : "the masters"} (${LEGACY_POOL_LABEL}=${name}); choose another pool name`
        : undefined;
}

const LABEL_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/**
 * Labels the kubelet may set on its own Node with --node-labels (NodeRestriction, docs/upstream.md#kubelet-node-labels):
 * in the kubernetes.io / k8s.io namespaces only these keys, and the kubelet.kubernetes.io and node.kubernetes.io prefixes.
 */
const KUBELET_ALLOWED_KEYS = [
    "kubernetes.io/hostname", "kubernetes.io/arch", "kubernetes.io/os",
    "beta.kubernetes.io/arch", "beta.kubernetes.io/os", "beta.kubernetes.io/instance-type", "node.kubernetes.io/instance-type",
    "failure-domain.beta.kubernetes.io/region", "failure-domain.beta.kubernetes.io/zone",
    "topology.kubernetes.io/region", "topology.kubernetes.io/zone",
];

/** Why `key` is not a valid label key, or undefined when it is. */
export function labelKeyProblem(key: string): string | undefined {
    const slash = key.lastIndexOf("/");
    const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
    const name = slash >= 0 ? key.slice(slash + 1) : key;
    if (prefix !== undefined && (prefix.length > 253 || !DNS1123_SUBDOMAIN.test(prefix))) {
        return "prefix must be a DNS subdomain";
    }
    if (name.length > 63 || !LABEL_NAME.test(name)) {
        return "name must be at most 63 characters of [A-Za-z0-9-_.], starting and ending alphanumeric";
    }
    return undefined;
}

/** True for an empty value or at most 63 characters of [A-Za-z0-9-_.], starting and ending alphanumeric. */
export function isLabelValue(value: string): boolean {
    return value === "" || (value.length <= 63 && LABEL_NAME.test(value));
}

/** True when the kubelet may self-apply `key` (see KUBELET_ALLOWED_KEYS). */
export function kubeletMaySetLabel(key: string): boolean {
    const slash = key.lastIndexOf("/");
    const prefix = slash >= 0 ? key.slice(0, slash) : "";
    const within = (ns: string) => prefix === ns || prefix.endsWith(`.${ns}`);
    if (!within("kubernetes.io") && !within("k8s.io")) {
        return true;
    }
    return KUBELET_ALLOWED_KEYS.includes(key) || within("kubelet.kubernetes.io") || within("node.kubernetes.io");
}

/** Why a node label `key` cannot be registered by the kubelet (validity, NodeRestriction), or undefined. */
export function nodeLabelKeyProblem(key: string): string | undefined {
    const reason = labelKeyProblem(key);
    if (reason) {
        return `label key "${key}": ${reason}`;
    }
    if (!kubeletMaySetLabel(key)) {
        return `label "${key}" is in a kubernetes.io/k8s.io namespace the kubelet may not set (NodeRestriction); use your own prefix or node.kubernetes.io/`;
    }
    return undefined;
}

/**
 * Checks node labels as a user gives them: valid keys the kubelet may set, valid values, and none of
 * the keys alicloud-kubeadm sets itself. Reports at `<key>`.
 */
export function nodeLabelProblems(labels: Record<string, string>, report: (path: string, reason: string) => void): void {
    for (const [key, value] of Object.entries(labels)) {
        const reason = nodeLabelKeyProblem(key);
        if (reason) {
            report(key, reason);
        } else if (key.startsWith(RESERVED_LABEL_PREFIX)) {
            report(key, `is set by alicloud-kubeadm (${RESERVED_LABEL_PREFIX}* is reserved); remove it`);
        }
        if (!isLabelValue(value)) {
            report(key, `label value "${value}" must be empty or at most 63 characters of [A-Za-z0-9-_.], starting and ending alphanumeric`);
        }
    }
}

/** A node taint (kubelet `--register-with-taints`). */
export interface Taint {
    key: string;
    value?: string;
    effect: "NoSchedule" | "PreferNoSchedule" | "NoExecute";
}

/** The taint grammar of `--register-with-taints`: `key[=value]:Effect`. */
const TAINT_TEXT = /^([^=:]+)(?:=([^:]*))?:(NoSchedule|PreferNoSchedule|NoExecute)$/;

/** Parses `key[=value]:Effect`; returns the reason when `text` is not a taint. */
export function parseTaint(text: string): Taint | string {
    const m = TAINT_TEXT.exec(text);
    if (!m) {
        return `"${text}" is not a taint (expected key[=value]:NoSchedule|PreferNoSchedule|NoExecute)`;
    }
    return m[2] === undefined ? { key: m[1], effect: m[3] as Taint["effect"] } : { key: m[1], value: m[2], effect: m[3] as Taint["effect"] };
}

/** `key[=value]:Effect`, the kubelet flag's form. */
export function formatTaint(t: Taint): string {
    return `${t.key}${t.value ? `=${t.value}` : ""}:${t.effect}`;
}

/**
 * Checks taints given as objects or `key[=value]:Effect` strings; reports at `<index>` / `<index>.key` /
 * `<index>.value` and returns the valid ones, normalised to objects. Taint keys are label-shaped but are
 * not held to the kubelet's label rule: NodeRestriction limits the labels a node registers with, not its
 * taints, so `node-role.kubernetes.io/…` taints are fine. Two taints with the same key and effect are
 * refused (the API server rejects such a Node, so the kubelet could never register it).
 */
export function checkTaints(taints: ReadonlyArray<string | Taint>, report: (path: string, reason: string) => void): Taint[] {
    const out: Taint[] = [];
    const seen = new Map<string, number>();
    taints.forEach((t, i) => {
        const taint = typeof t === "string" ? parseTaint(t) : t;
        if (typeof taint === "string") {
            report(String(i), taint);
            return;
        }
        let ok = true;
        const keyProblem = labelKeyProblem(taint.key);
        if (keyProblem) {
            report(`${i}.key`, `taint key "${taint.key}": ${keyProblem}`);
            ok = false;
        }
        if (taint.value !== undefined && !isLabelValue(taint.value)) {
            report(`${i}.value`, `taint value "${taint.value}" must be at most 63 characters of [A-Za-z0-9-_.]`);
            ok = false;
        }
        if (ok && taint.key === OUTDATED_TAINT) {
            report(`${i}.key`, `taint key "${OUTDATED_TAINT}" is the rollout's own (it marks outdated nodes and removes the mark itself): use another key`);
            ok = false;
        }
        const id = `${taint.key}:${taint.effect}`;
        if (ok && seen.has(id)) {
            report(String(i), `repeats taint ${seen.get(id)} (key ${taint.key}, effect ${taint.effect}): the API server refuses a Node with two taints of the same key and effect, so the node would never register; keep one`);
            ok = false;
        }
        if (ok) {
            seen.set(id, i);
            out.push(taint);
        }
    });
    return out;
}

/**
 * The warning for a node label that describes the instance itself, or undefined: the kubernetes.io keys a kubelet
 * may set are the ones it sets from the machine (host name, OS, architecture) and the cloud controller manager sets
 * from the cloud (instance type, region, zone). A `--node-labels` value replaces the kubelet's own at registration,
 * so the Node would carry a false value (docs/upstream.md#kubelet-node-labels).
 */
export function observedLabelWarning(key: string): string | undefined {
    return KUBELET_ALLOWED_KEYS.includes(key)
        ? `${key} describes the instance itself (the kubelet and the cloud controller manager set it); a value given here replaces the real one on the Node, ` +
            "so selectors on it would match the wrong nodes: remove it and select on the real value"
        : undefined;
}

/**
 * Taint keys the node lifecycle controller and the cloud controller manager set and remove from conditions (not
 * ready, unreachable, pressure, not yet initialised, shut down): a node registered with one loses it when the
 * condition clears (docs/upstream.md#node-managed-taints).
 */
const MANAGED_TAINT_KEYS: readonly string[] = [
    "node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable", "node.kubernetes.io/unschedulable", "node.kubernetes.io/memory-pressure",
    "node.kubernetes.io/disk-pressure", "node.kubernetes.io/pid-pressure", "node.kubernetes.io/network-unavailable",
    "node.cloudprovider.kubernetes.io/uninitialized", "node.cloudprovider.kubernetes.io/shutdown",
];

/** The warning for a taint whose key Kubernetes manages itself, or undefined. */
export function managedTaintWarning(key: string): string | undefined {
    return MANAGED_TAINT_KEYS.includes(key)
        ? `${key} is set and removed by Kubernetes from the node's conditions, so this taint disappears once the condition clears; use a key of your own`
        : undefined;
}
