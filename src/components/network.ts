// Network: the VPC, one vSwitch per zone, optional NAT egress, and the security groups (masters, nodes, NLB).
// The VPC's system route table is exposed because the Cloud Controller Manager writes one pod route
// per node into it (docs/architecture.md "Pod network").
import * as alicloud from "@pulumi/alicloud";
import * as pulumi from "@pulumi/pulumi";
import { checkNetworkLayout, CLUSTER_TAG, collect, securityGroupMatrix, type Problem, type SecurityGroupName } from "../rules";
import { throwIfProblems } from "./args";

export interface NetworkArgs {
    /** Cluster name; prefixes every resource name. Required. */
    clusterName: string;
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

/** Checks NetworkArgs with the stack config's layout rules (paths relative to the args, e.g. `vswitchCidrs.0`). */
export function networkArgProblems(args: NetworkArgs): Problem[] {
    const { problems, report } = collect();
    checkNetworkLayout(args, report);
    return problems;
}

function throwOnProblems(name: string, args: NetworkArgs): string[] {
    const { problems, report } = collect();
    const vswitchCidrs = checkNetworkLayout(args, report);
    throwIfProblems(`Network "${name}"`, problems);
    return vswitchCidrs;
}

/**
 * Creates the network resources under `parent`. Throws InputPropertiesError (nothing created) on bad args.
 */
export function createNetwork(name: string, args: NetworkArgs, parent: pulumi.Resource): NetworkResources {
    const vswitchCidrs = throwOnProblems(name, args);
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
        throwOnProblems(name, args); // before super(): bad input registers nothing, not even this component
        super("alicloud-kubeadm:index:Network", name, {}, opts);
        const r = createNetwork(name, args, this);
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
