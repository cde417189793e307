// The VPC layout rules that the stack config and the Network component both apply: CIDRs parse, VPC, pod
// and service CIDRs are disjoint, vSwitches sit inside the VPC (given, or carved in zone order) and leave
// room for the masters' fixed addresses.
import { carveVSwitchCidrs, carvedVSwitchPrefix, contains, formatCidr, overlaps, parseCidr, VSWITCH_MAX_PREFIX, VSWITCH_MIN_PREFIX, type Cidr } from "./cidr";
import { masterPlacementProblem } from "./alibaba";
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
        report(paths.zones, "needs at least one zone");
    }
    const vpc = cidrOrReport(n.vpcCidr, paths.vpcCidr, report);
    const pod = cidrOrReport(n.podCidr, paths.podCidr, report);
    const svc = n.serviceCidr === undefined ? undefined : cidrOrReport(n.serviceCidr, paths.serviceCidr, report);
    const vpcSized = vpc !== undefined && vpc.prefix >= 8 && vpc.prefix <= 28;
    if (vpc && !vpcSized) {
        report(paths.vpcCidr, `a VPC CIDR must be between /8 and /28, got /${vpc.prefix}`);
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
