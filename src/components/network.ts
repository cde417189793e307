// Network: the VPC, one vSwitch per zone, optional NAT egress, and the security groups (masters, nodes, NLB).
// The VPC's system route table is exposed because the Cloud Controller Manager writes one pod route
// per node into it (docs/architecture.md "Pod network").
import * as alicloud from "@pulumi/alicloud";
import * as pulumi from "@pulumi/pulumi";
import {
    checkNetworkLayout, CLUSTER_TAG, collect, dnsLabelProblem, hostNamePartProblem, regionOfZone, regionProblem, resourceNamePrefixProblem,
    securityGroupMatrix, zoneProblem, type Problem, type SecurityGroupName,
} from "../rules";
import { validatedByParser } from "../validated";
import { checkTags, isKnown, throwIfProblems } from "./args";

export interface NetworkArgs {
    /** Cluster name; prefixes every resource name. Required. */
    clusterName: string;
    /**
     * Region id, e.g. `ap-southeast-1`: the zones are checked against it. Default: the region of the first zone
     * (every zone must then belong to it); the provider's region is where the resources are created either way.
     */
    region?: string;
    /** Zones, one vSwitch each, in order. Required, at least one. */
    zones: string[];
    /** VPC CIDR. Required. */
    vpcCidr: string;
    /** Pod CIDR: pod-to-pod traffic between nodes arrives from pod IPs (docs/security.md#security-groups). Required. */
    podCidr: string;
    /** vSwitch CIDRs, one per zone. Default: carved from `vpcCidr` (see `carveVSwitchCidrs`). */
    vswitchCidrs?: string[];
    /** Create an Enhanced NAT gateway with an EIP and one SNAT entry per vSwitch. Default true. */
    natGateway?: boolean;
    /** CIDRs outside the VPC allowed to reach the API server on TCP 6443. Default none. */
    apiAllowedCidrs?: string[];
    /** Tags for every resource. Default `{ "alicloud-kubeadm/cluster": clusterName }`. */
    tags?: Record<string, string>;
}

export interface NetworkResources {
    vpc: alicloud.vpc.Network;
    vswitches: alicloud.vpc.Switch[];
    natGateway?: alicloud.vpc.NatGateway;
    natEip?: alicloud.ecs.EipAddress;
    snatEntries: alicloud.vpc.SnatEntry[];
    /** The masters' group. */
    masterSecurityGroup: alicloud.ecs.SecurityGroup;
    /** The pool nodes' group (named `cluster` before masters and nodes were separated). */
    clusterSecurityGroup: alicloud.ecs.SecurityGroup;
    /** The NLB's group. */
    apiSecurityGroup: alicloud.ecs.SecurityGroup;
    /** Every rule of the three groups, as in {@link securityGroupMatrix}. */
    securityGroupRules: alicloud.ecs.SecurityGroupRule[];
}

/**
 * Checks NetworkArgs with the stack config's rules (paths relative to the args, e.g. `vswitchCidrs.0`, `zones.1`):
 * the name, the zones (against `region` when given), the layout, the tags. Returns the vSwitch CIDRs (given or
 * carved; empty when they cannot be known). Values that are not known yet (Outputs) are left to the cloud.
 */
function checkNetworkArgs(args: NetworkArgs): { problems: Problem[]; vswitchCidrs: string[] } {
    const { problems, report } = collect();
    if (typeof args.clusterName !== "string") {
        report("clusterName", "is required: the cluster name (a DNS-1123 label starting with a letter)");
    } else {
        const name = dnsLabelProblem(args.clusterName, 40) ?? resourceNamePrefixProblem(args.clusterName) ?? hostNamePartProblem(args.clusterName);
        if (name) {
            report("clusterName", name);
        }
    }
    const region = args.region !== undefined && isKnown(args.region) ? args.region : undefined;
    const regionReason = region === undefined ? undefined : regionProblem(region);
    if (regionReason) {
        report("region", regionReason);
    }
    const layoutKnown = Array.isArray(args.zones) && args.zones.every((z) => typeof z === "string") &&
        [args.vpcCidr, args.podCidr].every((v) => typeof v === "string") &&
        (args.vswitchCidrs === undefined || (Array.isArray(args.vswitchCidrs) && args.vswitchCidrs.every((v) => typeof v === "string"))) &&
        (args.apiAllowedCidrs === undefined || (Array.isArray(args.apiAllowedCidrs) && args.apiAllowedCidrs.every((v) => typeof v === "string")));
    if (!Array.isArray(args.zones)) {
        report("zones", "is required: a list of zone ids, e.g. [cn-hangzhou-h]");
    }
    // Without a region, the first zone's region (when recognisable) is the one every zone must belong to.
    const zonesRegion = region !== undefined ? (regionReason ? undefined : region)
        : Array.isArray(args.zones) && typeof args.zones[0] === "string" ? regionOfZone(args.zones[0]) : undefined;
    if (zonesRegion && Array.isArray(args.zones)) {
        args.zones.forEach((zone, i) => {
            const reason = typeof zone === "string" ? zoneProblem(zone, zonesRegion) : undefined;
            if (reason) {
                report(`zones.${i}`, reason);
            }
        });
    }
    const given = Array.isArray(args.vswitchCidrs) && args.vswitchCidrs.every((v) => typeof v === "string") ? [...args.vswitchCidrs] : undefined;
    if (!layoutKnown && Array.isArray(args.zones) && given === undefined) {
        report("vpcCidr", "the vSwitches are carved from vpcCidr when the program runs, so it must be a plain string (not an Output); or give vswitchCidrs");
    }
    const vswitchCidrs = layoutKnown ? checkNetworkLayout(args, report) : given ?? [];
    checkTags(args.tags, report);
    return { problems, vswitchCidrs };
}

/** Checks NetworkArgs with the stack config's layout rules (paths relative to the args, e.g. `vswitchCidrs.0`). */
export function networkArgProblems(args: NetworkArgs): Problem[] {
    return checkNetworkArgs(args).problems;
}

/**
 * The vSwitch CIDRs of valid arguments: those of validated ones (the Cluster's, from its config) as they are,
 * any others once checked. Throws InputPropertiesError listing every problem.
 */
function parseNetworkArgs(name: string, args: NetworkArgs): string[] {
    if (validatedByParser(args) && args.vswitchCidrs !== undefined) {
        return args.vswitchCidrs;
    }
    const { problems, vswitchCidrs } = checkNetworkArgs(args);
    throwIfProblems(`Network "${name}"`, problems);
    return vswitchCidrs;
}

/**
 * Creates the network resources under `parent`. Throws InputPropertiesError (nothing created) on bad args.
 */
export function createNetwork(name: string, args: NetworkArgs, parent: pulumi.Resource): NetworkResources {
    return createNetworkResources(name, args, parseNetworkArgs(name, args), parent);
}

function createNetworkResources(name: string, args: NetworkArgs, vswitchCidrs: string[], parent: pulumi.Resource): NetworkResources {
    const opts = { parent };
    const tags = args.tags ?? { [CLUSTER_TAG]: args.clusterName };

    const vpc = new alicloud.vpc.Network(`${name}-vpc`, {
        vpcName: args.clusterName,
        cidrBlock: args.vpcCidr,
        description: `alicloud-kubeadm cluster ${args.clusterName}`,
        tags,
    }, opts);

    const vswitches = args.zones.map((zone, i) => new alicloud.vpc.Switch(`${name}-vsw-${zone}`, {
        vpcId: vpc.id,
        zoneId: zone,
        cidrBlock: vswitchCidrs[i],
        vswitchName: `${args.clusterName}-${zone}`,
        tags,
    }, opts));

    let natGateway: alicloud.vpc.NatGateway | undefined;
    let natEip: alicloud.ecs.EipAddress | undefined;
    const snatEntries: alicloud.vpc.SnatEntry[] = [];
    if (args.natGateway ?? true) {
        natGateway = new alicloud.vpc.NatGateway(`${name}-nat`, {
            vpcId: vpc.id,
            vswitchId: vswitches[0].id,
            natType: "Enhanced",
            networkType: "internet",
            paymentType: "PayAsYouGo",
            natGatewayName: `${args.clusterName}-nat`,
            tags,
        }, opts);
        natEip = new alicloud.ecs.EipAddress(`${name}-nat-eip`, {
            addressName: `${args.clusterName}-nat`,
            internetChargeType: "PayByTraffic",
            paymentType: "PayAsYouGo",
            bandwidth: "100",
            tags,
        }, opts);
        const association = new alicloud.ecs.EipAssociation(`${name}-nat-eip`, {
            allocationId: natEip.id,
            instanceId: natGateway.id,
            instanceType: "Nat",
        }, opts);
        for (const [i, zone] of args.zones.entries()) {
            snatEntries.push(new alicloud.vpc.SnatEntry(`${name}-snat-${zone}`, {
                snatTableId: natGateway.snatTableIds,
                sourceVswitchId: vswitches[i].id,
                snatIp: natEip.ipAddress,
                snatEntryName: `${args.clusterName}-${zone}`,
            }, { parent, dependsOn: [association] }));
        }
    }

    // Three groups (docs/security.md#security-groups): the masters', the pool nodes' (it keeps the resource
    // name of the single group it replaces, so existing stacks update it in place) and the NLB's.
    const masterSecurityGroup = new alicloud.ecs.SecurityGroup(`${name}-master-sg`, {
        vpcId: vpc.id,
        securityGroupName: `${args.clusterName}-masters`,
        description: "alicloud-kubeadm: masters (API, etcd between masters, kubelet from masters, DNS from pods)",
        tags,
    }, opts);
    const clusterSecurityGroup = new alicloud.ecs.SecurityGroup(`${name}-cluster-sg`, {
        vpcId: vpc.id,
        securityGroupName: `${args.clusterName}-cluster`,
        description: "alicloud-kubeadm: pool nodes (all from masters, nodes and pods; kubelet only from masters)",
        tags,
    }, opts);
    const apiSecurityGroup = new alicloud.ecs.SecurityGroup(`${name}-api-sg`, {
        vpcId: vpc.id,
        securityGroupName: `${args.clusterName}-api`,
        description: "alicloud-kubeadm: Kubernetes API server (TCP 6443)",
        tags,
    }, opts);
    const groups: Record<SecurityGroupName, alicloud.ecs.SecurityGroup> = { master: masterSecurityGroup, node: clusterSecurityGroup, api: apiSecurityGroup };
    const securityGroupRules = securityGroupMatrix({
        vpcCidr: args.vpcCidr, podCidr: args.podCidr, vswitchCidrs, apiAllowedCidrs: args.apiAllowedCidrs ?? [],
    }).map((r) => new alicloud.ecs.SecurityGroupRule(`${name}-${r.name}`, {
        securityGroupId: groups[r.group].id,
        type: r.direction, ipProtocol: r.protocol, portRange: r.ports, nicType: "intranet", policy: r.policy, priority: r.priority,
        ...("cidr" in r.source ? { cidrIp: r.source.cidr } : { sourceSecurityGroupId: groups[r.source.group].id }),
        description: r.description,
    }, opts));

    return { vpc, vswitches, natGateway, natEip, snatEntries, masterSecurityGroup, clusterSecurityGroup, apiSecurityGroup, securityGroupRules };
}

/**
 * The cluster's network: VPC, one vSwitch per zone, an Enhanced NAT gateway with an EIP and SNAT for
 * every vSwitch (unless `natGateway: false`), and the masters', the pool nodes' and the NLB's security groups.
 */
export class Network extends pulumi.ComponentResource {
    public readonly vpcId: pulumi.Output<string>;
    /** vSwitch ids by zone. */
    public readonly vswitchIds: pulumi.Output<Record<string, string>>;
    /** The VPC's system route table; the CCM writes pod routes here. */
    public readonly routeTableId: pulumi.Output<string>;
    /** The masters' security group. */
    public readonly masterSecurityGroupId: pulumi.Output<string>;
    /** The pool nodes' security group (its historical name). */
    public readonly clusterSecurityGroupId: pulumi.Output<string>;
    public readonly apiSecurityGroupId: pulumi.Output<string>;
    /** The NAT gateway's EIP address, or undefined without a NAT gateway. */
    public readonly natEipAddress: pulumi.Output<string | undefined>;
    /** The resources, for programs that want to attach more to them. */
    public readonly resources: NetworkResources;

    constructor(name: string, args: NetworkArgs, opts?: pulumi.ComponentResourceOptions) {
        const vswitchCidrs = parseNetworkArgs(name, args); // before super(): bad input registers nothing, not even this component
        super("alicloud-kubeadm:index:Network", name, {}, opts);
        const r = createNetworkResources(name, args, vswitchCidrs, this);
        this.resources = r;
        this.vpcId = r.vpc.id;
        this.vswitchIds = pulumi.all(r.vswitches.map((v) => v.id)).apply((ids) =>
            Object.fromEntries(args.zones.map((zone, i) => [zone, ids[i]])));
        this.routeTableId = r.vpc.routeTableId;
        this.masterSecurityGroupId = r.masterSecurityGroup.id;
        this.clusterSecurityGroupId = r.clusterSecurityGroup.id;
        this.apiSecurityGroupId = r.apiSecurityGroup.id;
        this.natEipAddress = r.natEip ? r.natEip.ipAddress : pulumi.output(undefined);
        this.registerOutputs({
            vpcId: this.vpcId, vswitchIds: this.vswitchIds, routeTableId: this.routeTableId,
            masterSecurityGroupId: this.masterSecurityGroupId, clusterSecurityGroupId: this.clusterSecurityGroupId, apiSecurityGroupId: this.apiSecurityGroupId,
            natEipAddress: this.natEipAddress,
        });
    }
}
