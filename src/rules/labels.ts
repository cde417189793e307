// Kubernetes label and taint rules, shared by the config validator and the userdata renderer.

const LABEL_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/**
 * Labels the kubelet may set on its own Node with --node-labels (NodeRestriction; kubelet flag
 * reference): in the kubernetes.io / k8s.io namespaces only these keys, and the kubelet.kubernetes.io
 * and node.kubernetes.io prefixes.
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

/** True for region ids in mainland China, where Alibaba mirrors are the default package and image sources. */
export function isChinaRegion(region: string): boolean {
    return region.startsWith("cn-") && region !== "cn-hongkong";
}
