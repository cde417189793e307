// The VPC layout rules that the stack config and the Network component both apply: CIDRs parse, VPC, pod
// and service CIDRs are disjoint and outside the ranges Alibaba reserves, the pod and service CIDRs are sized as
// kubeadm requires, vSwitches sit inside the VPC (given, or carved in zone order) and leave room for the
// masters' fixed addresses. Sources: docs/upstream.md#vpc-cidr-ranges and #kubeadm-network-limits.
import { carveVSwitchCidrs, carvedVSwitchPrefix, contains, formatCidr, overlaps, parseCidr, VSWITCH_MAX_PREFIX, VSWITCH_MIN_PREFIX, type Cidr } from "./cidr";
import { masterPlacementProblem } from "./alibaba";
import { exampleZone } from "./regions";
import type { Report } from "./problems";

/** What the layout rules look at. */
export interface NetworkLayoutInput {
    zones: readonly string[];
    vpcCidr: string;
    podCidr: string;
    /** Checked when given. */
    serviceCidr?: string;
    /** One per zone; carved from the VPC when absent. */
    vswitchCidrs?: readonly string[];
    /** CIDRs outside the VPC allowed to the API. */
    apiAllowedCidrs?: readonly string[];
    /** Masters placed round-robin over the zones. Default 0 (no placement check). */
    controlPlaneCount?: number;
    /** The region, for the example of a zone id in messages. Default: an example of cn-hangzhou. */
    region?: string;
}

/** Where each input sits, for the paths problems are reported at. */
export interface NetworkLayoutPaths {
    zones: string;
    vpcCidr: string;
    podCidr: string;
    serviceCidr: string;
    vswitchCidrs: string;
    apiAllowedCidrs: string;
}

/** Paths of a component's flat arguments. */
export const FLAT_NETWORK_PATHS: Readonly<NetworkLayoutPaths> = {
    zones: "zones", vpcCidr: "vpcCidr", podCidr: "podCidr", serviceCidr: "serviceCidr", vswitchCidrs: "vswitchCidrs", apiAllowedCidrs: "apiAllowedCidrs",
};

/**
 * Ranges Alibaba Cloud refuses as VPC CIDRs. 100.64.0.0/10 also holds Alibaba's own services (the metadata
 * service 100.100.100.200, VPC DNS 100.100.2.136/138, the internal mirrors) and no VPC route may point into it.
 */
export const RESERVED_RANGES: ReadonlyArray<{ cidr: string; what: string }> = [
    { cidr: "100.64.0.0/10", what: "the range of Alibaba Cloud's own services (metadata service, VPC DNS, internal endpoints)" },
    { cidr: "224.0.0.0/4", what: "the multicast range" },
    { cidr: "127.0.0.0/8", what: "the loopback range" },
    { cidr: "169.254.0.0/16", what: "the link-local range" },
];

/** The reserved range `c` overlaps, or undefined. */
export function reservedRangeOf(c: Cidr, ranges: ReadonlyArray<{ cidr: string; what: string }> = RESERVED_RANGES): { cidr: string; what: string } | undefined {
    return ranges.find((r) => overlaps(c, parseCidr(r.cidr) as Cidr));
}

/** Why a pod CIDR overlapping a reserved range cannot be used, or undefined (no VPC route may point into those ranges). */
export function podCidrReservedProblem(pod: Cidr): string | undefined {
    const r = reservedRangeOf(pod);
    return r ? `overlaps ${r.cidr}, ${r.what}, which no VPC route may point into (each node's pod CIDR is a route entry); use an RFC 1918 range such as 172.16.0.0/16` : undefined;
}

/**
 * Ranges a service CIDR may not overlap: cluster IPs are ordinary unicast addresses that kube-proxy translates on
 * every node, and the kernel treats "this network" (0.0.0.0/8), loopback, link-local (where the metadata service
 * of many clouds and node-local DNS caches live) and multicast addresses specially, so services there are not
 * reachable as services. 100.64.0.0/10 is left alone: no VPC route points at a cluster IP.
 */
export const SERVICE_CIDR_RESERVED_RANGES: ReadonlyArray<{ cidr: string; what: string }> = [
    { cidr: "0.0.0.0/8", what: "\"this network\" (0.0.0.0/8)" },
    ...RESERVED_RANGES.filter((r) => r.cidr !== "100.64.0.0/10"),
];

/** kubeadm refuses an IPv4 service subnet larger than /12 (`MaximumBitsForServiceSubnet` = 20). */
export const SERVICE_CIDR_MIN_PREFIX = 12;
/** kubeadm needs at least 10 addresses in the service subnet (`MinimumAddressesInServiceSubnet`): /28 at the smallest. */
export const SERVICE_CIDR_MAX_PREFIX = 28;
/** kubeadm needs at least 14 addresses in the pod subnet (`MinimumAddressesInPodSubnet`): /28 at the smallest. */
export const POD_CIDR_MAX_PREFIX = 28;
/** kubeadm refuses a node mask more than 16 bits longer than the pod subnet's (`PodSubnetNodeMaskMaxDiff`). */
export const NODE_MASK_MAX_DIFF = 16;

/** Why `mask` cannot be the per-node pod CIDR size inside `pod`, or undefined (kube-controller-manager and kubeadm rules). */
export function nodeCidrMaskProblem(pod: Cidr, podText: string, mask: number): string | undefined {
    if (!Number.isInteger(mask) || mask <= pod.prefix || mask > 30) {
        return `/${mask} must be finer than network.podCidr's /${pod.prefix} and at most /30`;
    }
    if (mask - pod.prefix > NODE_MASK_MAX_DIFF) {
        return `/${mask} is ${mask - pod.prefix} bits longer than network.podCidr's /${pod.prefix} (${podText}); kubeadm allows at most ${NODE_MASK_MAX_DIFF}: use /${pod.prefix + NODE_MASK_MAX_DIFF} or a smaller pod CIDR`;
    }
    return undefined;
}

/** Parses a CIDR, reporting at `path` when it is not one. */
export function cidrOrReport(text: string, path: string, report: Report): Cidr | undefined {
    const c = parseCidr(text);
    if (typeof c === "string") {
        report(path, c);
        return undefined;
    }
    return c;
}

/**
 * Checks the layout and returns the vSwitch CIDRs, one per zone (given or carved; empty when they cannot
 * be known). Every problem is reported; nothing throws.
 */
export function checkNetworkLayout(n: NetworkLayoutInput, report: Report, paths: NetworkLayoutPaths = FLAT_NETWORK_PATHS): string[] {
    if (n.zones.length === 0) {
        report(paths.zones, `needs at least one zone (one vSwitch each), e.g. [${exampleZone(n.region ?? "cn-hangzhou")}]`);
    }
    n.zones.forEach((zone, i) => {
        const first = n.zones.indexOf(zone);
        if (first < i) {
            report(`${paths.zones}.${i}`, `"${zone}" is listed twice (also ${paths.zones}.${first}): each zone gets one vSwitch; list every zone once`);
        }
    });
    const vpc = cidrOrReport(n.vpcCidr, paths.vpcCidr, report);
    const pod = cidrOrReport(n.podCidr, paths.podCidr, report);
    const svc = n.serviceCidr === undefined ? undefined : cidrOrReport(n.serviceCidr, paths.serviceCidr, report);
    const vpcSized = vpc !== undefined && vpc.prefix >= 8 && vpc.prefix <= 28;
    if (vpc && !vpcSized) {
        report(paths.vpcCidr, `a VPC CIDR must be between /8 and /28, got /${vpc.prefix}`);
    }
    const reserved = (c: Cidr | undefined, path: string, why: string) => {
        const r = c && reservedRangeOf(c);
        if (r) {
            report(path, `overlaps ${r.cidr}, ${r.what}, which ${why}`);
        }
    };
    reserved(vpc, paths.vpcCidr, "Alibaba Cloud does not allow in a VPC; use an RFC 1918 range such as 192.168.0.0/16 or 10.0.0.0/8");
    const podReserved = pod && podCidrReservedProblem(pod);
    if (podReserved) {
        report(paths.podCidr, podReserved);
    }
    if (pod && pod.prefix > POD_CIDR_MAX_PREFIX) {
        report(paths.podCidr, `/${pod.prefix} has ${2 ** (32 - pod.prefix)} addresses; kubeadm needs at least 14 (/${POD_CIDR_MAX_PREFIX} or larger)`);
    }
    const svcReserved = svc && reservedRangeOf(svc, SERVICE_CIDR_RESERVED_RANGES);
    if (svcReserved) {
        report(paths.serviceCidr, `overlaps ${svcReserved.cidr}, ${svcReserved.what}, which cannot hold cluster IPs; use an RFC 1918 range such as 10.96.0.0/12`);
    }
    if (svc && svc.prefix < SERVICE_CIDR_MIN_PREFIX) {
        report(paths.serviceCidr, `/${svc.prefix} is too large: kubeadm refuses an IPv4 service CIDR larger than /${SERVICE_CIDR_MIN_PREFIX}`);
    } else if (svc && svc.prefix > SERVICE_CIDR_MAX_PREFIX) {
        report(paths.serviceCidr, `/${svc.prefix} has ${2 ** (32 - svc.prefix)} addresses; kubeadm needs at least 10 (/${SERVICE_CIDR_MAX_PREFIX} or larger)`);
    }
    const named: Array<[string, string | undefined, Cidr | undefined]> = [
        [paths.vpcCidr, n.vpcCidr, vpc], [paths.podCidr, n.podCidr, pod], [paths.serviceCidr, n.serviceCidr, svc],
    ];
    for (let i = 0; i < named.length; i++) {
        for (let j = 0; j < i; j++) {
            const [pathA, , a] = named[i];
            const [pathB, textB, b] = named[j];
            if (a && b && overlaps(a, b)) {
                report(pathA, `overlaps ${pathB} (${textB})`);
            }
        }
    }
    (n.apiAllowedCidrs ?? []).forEach((text, i) => cidrOrReport(text, `${paths.apiAllowedCidrs}.${i}`, report));
    const masters = n.controlPlaneCount ?? 0;

    if (n.vswitchCidrs) {
        const given = n.vswitchCidrs;
        if (given.length !== n.zones.length) {
            report(paths.vswitchCidrs, `needs one CIDR per zone (${n.zones.length}), got ${given.length}`);
        }
        const parsed = given.map((text, i) => cidrOrReport(text, `${paths.vswitchCidrs}.${i}`, report));
        parsed.forEach((v, i) => {
            if (!v) {
                return;
            }
            const path = `${paths.vswitchCidrs}.${i}`;
            if (v.prefix < VSWITCH_MIN_PREFIX || v.prefix > VSWITCH_MAX_PREFIX) {
                report(path, `a vSwitch CIDR must be between /${VSWITCH_MIN_PREFIX} and /${VSWITCH_MAX_PREFIX}, got /${v.prefix}`);
            }
            if (vpc && !contains(vpc, v)) {
                report(path, `${formatCidr(v)} is not inside ${paths.vpcCidr} (${n.vpcCidr})`);
            }
            parsed.slice(0, i).forEach((w, j) => {
                if (w && overlaps(v, w)) {
                    report(path, `overlaps ${paths.vswitchCidrs}.${j} (${given[j]})`);
                }
            });
            const placement = masterPlacementProblem(v, i, n.zones.length, masters);
            if (placement) {
                report(path, placement);
            }
        });
        return [...given];
    }
    if (!vpc || !vpcSized || n.zones.length === 0) {
        return [];
    }
    if (carvedVSwitchPrefix(vpc, n.zones.length) === undefined) {
        report(paths.vpcCidr, `${n.vpcCidr} is too small to carve ${n.zones.length} vSwitches (at most /${VSWITCH_MAX_PREFIX} each); use a larger VPC or set ${paths.vswitchCidrs}`);
        return [];
    }
    const carved = carveVSwitchCidrs(n.vpcCidr, n.zones.length);
    const placement = masterPlacementProblem(parseCidr(carved[0]) as Cidr, 0, n.zones.length, masters);
    if (placement) {
        report(paths.vpcCidr, `carved vSwitches: ${placement}; use a larger VPC or set ${paths.vswitchCidrs}`);
    }
    return carved;
}
