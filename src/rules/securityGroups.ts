// The security-group matrix (docs/security.md#security-groups): which traffic each group admits, as data, so
// src/components/network.ts creates exactly these rules and the tests compare them with the documented table.
// Alibaba security groups are stateful (replies pass); a lower priority number wins, and at equal priority a
// drop rule wins over an accept rule (docs/security.md cites the ECS documentation).

/** The cluster's groups: `master` on the masters, `node` on pool nodes (Pulumi name `<network>-cluster-sg`), `api` on the NLB. */
export type SecurityGroupName = "master" | "node" | "api";

/** Where a rule admits traffic from: a CIDR, or every member of one of the cluster's groups. */
export type RuleSource = { cidr: string } | { group: SecurityGroupName };

/** One rule of the matrix. */
export interface SecurityGroupRuleSpec {
    /** Pulumi name suffix: the rule resource is `<network name>-<name>`. */
    name: string;
    group: SecurityGroupName;
    direction: "ingress" | "egress";
    protocol: "tcp" | "udp" | "icmp" | "all";
    /** `from/to`; `-1/-1` for all. */
    ports: string;
    source: RuleSource;
    policy: "accept" | "drop";
    priority: number;
    description: string;
}

/** Inputs of the matrix: the network layout. */
export interface SecurityGroupLayout {
    vpcCidr: string;
    podCidr: string;
    /** vSwitch CIDRs, zone order (nodes, masters and the NLB's own addresses live there). */
    vswitchCidrs: string[];
    /** CIDRs outside the VPC allowed to reach the API (TCP 6443). */
    apiAllowedCidrs: string[];
}

/** The API server's port. */
export const API_PORT = 6443;
/** Port reserved on the masters for the node admission service (next issue), from the node vSwitches. */
export const ADMISSION_PORT = 10443;

/** Every rule of the cluster's security groups (the NAT EIP rule for a public NLB is added by the control plane). */
export function securityGroupMatrix(l: SecurityGroupLayout): SecurityGroupRuleSpec[] {
    const rules: SecurityGroupRuleSpec[] = [];
    const add = (r: Omit<SecurityGroupRuleSpec, "direction" | "policy" | "priority"> & Partial<SecurityGroupRuleSpec>) =>
        rules.push({ direction: "ingress", policy: "accept", priority: 1, ...r });
    const api = `${API_PORT}/${API_PORT}`;
    // Masters.
    add({ name: "masters-api-from-vpc", group: "master", protocol: "tcp", ports: api, source: { cidr: l.vpcCidr },
        description: "API from the VPC (pool and existing nodes, masters, the NLB's own addresses)" });
    add({ name: "masters-api-from-pods", group: "master", protocol: "tcp", ports: api, source: { cidr: l.podCidr }, description: "API from pods" });
    l.apiAllowedCidrs.forEach((cidr, i) => add({ name: `masters-api-allowed-${i}`, group: "master", protocol: "tcp", ports: api, source: { cidr },
        description: `API from ${cidr}` }));
    add({ name: "masters-etcd", group: "master", protocol: "tcp", ports: "2379/2380", source: { group: "master" }, description: "etcd between masters" });
    add({ name: "masters-kubelet", group: "master", protocol: "tcp", ports: "10250/10250", source: { group: "master" }, description: "kubelet from masters" });
    for (const protocol of ["udp", "tcp"] as const) {
        add({ name: `masters-dns-${protocol}-from-pods`, group: "master", protocol, ports: "53/53", source: { cidr: l.podCidr }, description: "cluster DNS (CoreDNS may run on masters) from pods" });
        add({ name: `masters-dns-${protocol}-from-nodes`, group: "master", protocol, ports: "53/53", source: { group: "node" }, description: "cluster DNS from host-network pods on nodes" });
    }
    l.vswitchCidrs.forEach((cidr, i) => add({ name: `masters-admission-from-vsw-${i}`, group: "master", protocol: "tcp", ports: `${ADMISSION_PORT}/${ADMISSION_PORT}`,
        source: { cidr }, description: `node admission service (reserved) from vSwitch ${cidr}` }));
    add({ name: "masters-icmp-from-vpc", group: "master", protocol: "icmp", ports: "-1/-1", source: { cidr: l.vpcCidr }, description: "ICMP (path MTU, reachability) from the VPC" });
    add({ name: "masters-egress", group: "master", direction: "egress", protocol: "all", ports: "-1/-1", source: { cidr: "0.0.0.0/0" },
        description: "egress open (pod IPs on any port: webhooks, aggregated APIs; cloud APIs; images)" });
    // Nodes.
    add({ name: "nodes-from-masters", group: "node", protocol: "all", ports: "-1/-1", source: { group: "master" },
        description: "everything from masters (kubelet, webhooks and aggregated APIs on pod IPs)" });
    add({ name: "nodes-kubelet-drop-vpc", group: "node", protocol: "tcp", ports: "10250/10250", source: { cidr: l.vpcCidr }, policy: "drop", priority: 2,
        description: "kubelet only from masters" });
    add({ name: "nodes-kubelet-drop-pods", group: "node", protocol: "tcp", ports: "10250/10250", source: { cidr: l.podCidr }, policy: "drop", priority: 2,
        description: "kubelet only from masters" });
    add({ name: "nodes-from-nodes", group: "node", protocol: "all", ports: "-1/-1", source: { group: "node" }, priority: 3,
        description: "node to node (NodePorts, host-network pods; not the kubelet)" });
    add({ name: "cluster-from-pods", group: "node", protocol: "all", ports: "-1/-1", source: { cidr: l.podCidr }, priority: 3,
        description: "pod to pod between nodes (flannel alloc routes pod source IPs through the VPC; not the kubelet)" });
    add({ name: "nodes-icmp-from-vpc", group: "node", protocol: "icmp", ports: "-1/-1", source: { cidr: l.vpcCidr }, description: "ICMP (path MTU, reachability) from the VPC" });
    // `cluster-from-pods` and `cluster-egress` keep the names they had in the single group this one replaces.
    add({ name: "cluster-egress", group: "node", direction: "egress", protocol: "all", ports: "-1/-1", source: { cidr: "0.0.0.0/0" }, description: "egress open" });
    // The NLB in front of the masters (it does not keep client addresses: the masters see its own, in the vSwitches).
    add({ name: "api-from-vpc", group: "api", protocol: "tcp", ports: api, source: { cidr: l.vpcCidr }, description: "API from the VPC" });
    l.apiAllowedCidrs.forEach((cidr, i) => add({ name: `api-allowed-${i}`, group: "api", protocol: "tcp", ports: api, source: { cidr }, description: `API from ${cidr}` }));
    return rules;
}
