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
