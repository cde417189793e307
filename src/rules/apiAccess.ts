// Who may reach the API server from outside the VPC. `pulumi up` itself must reach it (the add-ons are
// applied through a Kubernetes provider once /readyz answers), so a public endpoint that no real address may
// reach would fail halfway, after the network and the masters exist.
import { contains, parseCidr } from "./cidr";
import type { Report } from "./problems";

/** The IPv4 documentation ranges (RFC 5737): examples only, no real client has these addresses. */
export const DOCUMENTATION_CIDRS = ["192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24"] as const;

const HOW = "set it to the public address of the machine running `pulumi up` (and of anyone using kubectl), e.g. " +
    "`pulumi config set --path 'alicloud-kubeadm:cluster.network.apiAllowedCidrs[0]' <your-public-ip>/32`, " +
    "or set controlPlane.publicEndpoint to false and run Pulumi from inside the VPC";

/** True when the CIDR lies inside one of the documentation ranges. */
export function isDocumentationCidr(text: string): boolean {
    const c = parseCidr(text);
    return typeof c !== "string" && DOCUMENTATION_CIDRS.some((d) => contains(parseCidr(d) as Exclude<ReturnType<typeof parseCidr>, string>, c));
}

/**
 * The API access of a cluster config: a public endpoint needs at least one allowed CIDR that is not a
 * documentation range (error); a documentation range among others, and the whole internet, are warnings.
 * Paths: `network.apiAllowedCidrs[.<i>]`.
 */
export function apiAccessProblems(publicEndpoint: boolean, apiAllowedCidrs: readonly string[], problem: Report, warn: Report): void {
    const path = "network.apiAllowedCidrs";
    if (!publicEndpoint) {
        warn("controlPlane.publicEndpoint", "false: the API server has an internal endpoint inside the VPC this stack creates, and `pulumi up` must " +
            "reach it to apply the add-ons. The first `pulumi up` fails after the masters and pools exist unless it runs where the new VPC is " +
            "reachable (CEN, VPN Gateway or Express Connect set up for its CIDR beforehand, or a runner in that VPC); otherwise set it to true " +
            "with network.apiAllowedCidrs for the first run (README \"Deploying for real\").");
    }
    const docs = apiAllowedCidrs.map(isDocumentationCidr);
    if (publicEndpoint && apiAllowedCidrs.length === 0) {
        problem(path, `controlPlane.publicEndpoint is true but no address outside the VPC may reach the API server, not even the machine running \`pulumi up\`, which must: ${HOW}`);
        return;
    }
    if (publicEndpoint && docs.every(Boolean)) {
        problem(path, `${apiAllowedCidrs.join(", ")} ${apiAllowedCidrs.length === 1 ? "is a documentation range" : "are documentation ranges"} (RFC 5737): no real address may reach the API server: ${HOW}`);
        return;
    }
    apiAllowedCidrs.forEach((cidr, i) => {
        if (docs[i]) {
            warn(`${path}.${i}`, `${cidr} is a documentation range (RFC 5737): no real client has such an address; replace it`);
        } else if (cidr.trim() === "0.0.0.0/0") {
            warn(`${path}.${i}`, "0.0.0.0/0 lets every address reach the API server's port 6443 (requests still need credentials); narrow it to the addresses of the machine running `pulumi up` and of kubectl users");
        }
    });
}

/**
 * Rules a security group holds. The only per-group figure Alibaba published is 100 inbound and outbound rules
 * together, not adjustable (its security group limits FAQ); the current rules page gives 1,000 across all groups of a
 * network interface and no per-group figure. The harsher one is modelled (docs/upstream.md#security-group-rules).
 */
export const MAX_SECURITY_GROUP_RULES = 100;

/**
 * Checks the allowed CIDRs as security-group rules (paths `network.apiAllowedCidrs.<i>`): each becomes a rule of the
 * API group (TCP 6443, accept, priority 1), beside `api-from-vpc` (the VPC CIDR, the same port) and, with a public
 * load balancer and the NAT gateway, the NAT EIP's rule. Two rules with the same CIDR are one rule to the cloud (the
 * provider names a rule by group, direction, protocol, ports, NIC type, CIDR, policy and priority), so the second
 * resource would adopt, and on removal delete, the first one's rule: a repeat (or the VPC CIDR itself) is refused.
 * A CIDR inside another, or inside the VPC, is a warning: its rule admits nobody new. More rules than a group holds
 * is refused. Unparsable CIDRs are left to the layout check, which reports them.
 */
export function apiAllowedCidrProblems(apiAllowedCidrs: readonly string[], vpcCidr: string, natEipRule: boolean, problem: Report, warn: Report): void {
    const path = "network.apiAllowedCidrs";
    const rules = 1 + apiAllowedCidrs.length + (natEipRule ? 1 : 0);
    if (rules > MAX_SECURITY_GROUP_RULES) {
        problem(path, `${apiAllowedCidrs.length} CIDRs make ${rules} rules in the API security group (with the VPC's${natEipRule ? " and the NAT EIP's" : ""}), ` +
            `above the ${MAX_SECURITY_GROUP_RULES} a security group holds: merge them into wider CIDRs`);
    }
    const vpc = parseCidr(vpcCidr);
    const parsed = apiAllowedCidrs.map((text) => parseCidr(text.trim()));
    parsed.forEach((c, i) => {
        if (typeof c === "string") return;
        const same = parsed.findIndex((d) => typeof d !== "string" && d.base === c.base && d.prefix === c.prefix);
        if (same < i) {
            problem(`${path}.${i}`, `${apiAllowedCidrs[i]} repeats ${path}.${same}: the cloud keeps one rule per CIDR, so the two would be one rule that ` +
                "removing either deletes; list it once");
            return;
        }
        if (typeof vpc !== "string" && vpc.base === c.base && vpc.prefix === c.prefix) {
            problem(`${path}.${i}`, `${apiAllowedCidrs[i]} is network.vpcCidr, which the API security group already admits (its api-from-vpc rule); ` +
                "the two would be one rule: remove it");
            return;
        }
        const wider = parsed.findIndex((d, j) => j !== i && typeof d !== "string" && d.prefix < c.prefix && contains(d, c));
        if (wider >= 0) {
            warn(`${path}.${i}`, `${apiAllowedCidrs[i]} is inside ${path}.${wider} (${apiAllowedCidrs[wider]}), which already admits it: remove it`);
        } else if (typeof vpc !== "string" && contains(vpc, c)) {
            warn(`${path}.${i}`, `${apiAllowedCidrs[i]} is inside network.vpcCidr (${vpcCidr}), which the API security group already admits: remove it ` +
                "(apiAllowedCidrs are for addresses outside the VPC)");
        }
    });
}
