// ControlPlane: the master ECS instances, their RAM role (CCM + Cluster Autoscaler permissions), and the
// API endpoint. Master 0 runs `kubeadm init` from its userdata; masters 1..n-1 are prepared by
// userdata and joined with `kubeadm join --control-plane` by ControlPlaneMember (over Cloud Assistant).
//
// Endpoint: one master → its fixed private IP (plus an EIP when publicEndpoint); several masters → an
// NLB on TCP 6443 across zones, internal unless publicEndpoint. The endpoint address is known before
// the masters exist (fixed private IP, EIP address or NLB DNS name), so it goes into master 0's userdata.
import * as alicloud from "@pulumi/alicloud";
import * as pulumi from "@pulumi/pulumi";
import { API_PORT, masterPrivateIp, masterZoneIndex, RAM_ACTIONS, ramPolicy, resolveAutoscalerVersion, ROLE_TAG, type Report } from "../rules";
import { parseControlPlaneConfig, type ClusterConfig } from "../config";
import { checkTags, isKnown, parseArgs } from "./args";
import { MasterReplacementGuard } from "../providers/masterGuard";

/** RAM actions the Alibaba Cloud Controller Manager's node and route controllers call (src/rules/ram.ts, docs/security.md#ram). */
export const CCM_ACTIONS: readonly string[] = RAM_ACTIONS.filter((a) => a.consumer === "ccm").map((a) => a.action);

/** RAM actions of the Cluster Autoscaler's alicloud provider, every version (src/rules/ram.ts picks the ones of the deployed version). */
export const AUTOSCALER_ACTIONS: readonly string[] = RAM_ACTIONS.filter((a) => a.consumer === "autoscaler").map((a) => a.action);

/** Trust policy letting ECS instances assume the role. */
export const ECS_TRUST_POLICY = JSON.stringify({
    Version: "1",
    Statement: [{ Action: "sts:AssumeRole", Effect: "Allow", Principal: { Service: ["ecs.aliyuncs.com"] } }],
});

export { masterPrivateIp, masterZoneIndex };

export interface ControlPlaneArgs {
    /** The validated cluster config (controlPlane, zones, network, region, name are read). Required. */
    config: ClusterConfig;
    /** vSwitch ids in zone order. Required. */
    vswitchIds: pulumi.Input<string>[];
    /** The VPC of the masters. Required. */
    vpcId: pulumi.Input<string>;
    /** Security groups of the masters: the master group (docs/security.md#security-groups). Required. */
    securityGroupIds: pulumi.Input<string>[];
    /** The VPC route table the CCM writes pod routes into: the only one its RAM policy lets it change. Required. */
    routeTableId: pulumi.Input<string>;
    /** The API security group, put on the NLB. Required. */
    apiSecurityGroupId: pulumi.Input<string>;
    /** The NAT gateway's EIP, allowed to a public NLB so nodes can reach it through NAT. Only used when `natGateway`. Default none. */
    natEipAddress?: pulumi.Input<string | undefined>;
    /** Whether the network has a NAT gateway (and so `natEipAddress`). Default false. */
    natGateway?: boolean;
    /** ECS image id for the masters. Required. */
    imageId: pulumi.Input<string>;
    /**
     * Renders the userdata of master `index` given the endpoint (`host:6443`) and the certificate SANs.
     * Master 0's runs `kubeadm init`; the others get none (ControlPlaneMember prepares and joins them). Required.
     */
    userdata: (index: number, endpoint: string, certSANs: string[], recordedCaCertHash?: string) => string | undefined;
    /**
     * The CA hash the stack recorded in an earlier `pulumi up` (none on the first): passed to master 0's userdata, so a
     * re-created master 0 joins that cluster or stops, never `kubeadm init` (docs/disaster-recovery.md). Masters ignore
     * userdata drift: it only matters to a master created later. Default none.
     */
    recordedCaCertHash?: pulumi.Input<string | undefined>;
    /** Tags for every resource. Required. */
    tags: Record<string, string>;
}

export interface ControlPlaneResources {
    masters: alicloud.ecs.Instance[];
    role: alicloud.ram.Role;
    /** `host:6443` that nodes join through (private address or NLB DNS name). */
    endpoint: pulumi.Output<string>;
    /** `https://host:6443` for the admin kubeconfig (public when publicEndpoint). */
    kubeconfigServer: pulumi.Output<string>;
    masterPrivateIps: string[];
    loadBalancer?: alicloud.nlb.LoadBalancer;
    eip?: alicloud.ecs.EipAddress;
}

/**
 * Parses the arguments: a validated config (the Cluster's, `parseClusterConfig`'s) is taken as it is, any other is
 * checked once with the stack config's rules (paths relative to the args: `config.controlPlane.count`); the
 * vSwitch ids (one per zone, when the list is known), the userdata function, the route table and the tags are
 * the component's own. Returns the config, validated, or undefined when anything was reported.
 */
export function parseControlPlaneArgs(args: ControlPlaneArgs, report: Report): ClusterConfig | undefined {
    const config = parseControlPlaneConfig(args.config, (path, reason) => report(path ? `config.${path}` : "config", reason));
    let valid = config !== undefined;
    controlPlaneOwnProblems(args, (path, reason) => {
        valid = false;
        report(path, reason);
    });
    return valid ? config : undefined;
}

/** Checks the arguments (see {@link parseControlPlaneArgs}). */
export function controlPlaneProblems(args: ControlPlaneArgs, report: Report): void {
    parseControlPlaneArgs(args, report);
}

function controlPlaneOwnProblems(args: ControlPlaneArgs, report: Report): void {
    const zones = Array.isArray(args.config?.zones) ? args.config.zones.length : 0;
    if (isKnown(args.vswitchIds) && Array.isArray(args.vswitchIds) && zones > 0 && args.vswitchIds.length !== zones) {
        report("vswitchIds", `needs one vSwitch id per zone of config.zones (${zones}), in zone order; got ${args.vswitchIds.length}`);
    }
    if (typeof args.userdata !== "function") {
        report("userdata", "is required: a function (index, endpoint, certSANs) => userdata of master index");
    }
    if (args.routeTableId === undefined || args.routeTableId === "") {
        report("routeTableId", "is required: the VPC route table the CCM writes pod routes into (Network.routeTableId); the CCM's RAM policy names only it");
    }
    checkTags(args.tags, report);
}

/** Creates the masters, their RAM role and the API endpoint under `parent`. */
export function createControlPlane(name: string, args: ControlPlaneArgs, parent: pulumi.Resource): ControlPlaneResources {
    const { config, tags } = args;
    const cp = config.controlPlane;
    const opts = { parent };
    const zoneCount = config.zones.length;

    // RAM role for the masters: the CCM and the Cluster Autoscaler run there with the instance's role.
    const role = new alicloud.ram.Role(`${name}-role`, {
        roleName: `${config.name}-control-plane`,
        assumeRolePolicyDocument: ECS_TRUST_POLICY,
        description: `alicloud-kubeadm ${config.name}: masters (cloud controller manager, cluster autoscaler)`,
    }, opts);
    // The CCM's policy names this cluster's route table; the autoscaler's is attached by attachAutoscalerPolicy
    // once the pools' scaling groups exist (docs/security.md#ram).
    attachRolePolicy(name, "ccm", role, config.name, pulumi.output(args.routeTableId).apply((routeTableId) =>
        JSON.stringify(ramPolicy("ccm", { region: config.region, routeTableId }))), parent);

    const masterPrivateIps = Array.from({ length: cp.count }, (_, i) =>
        masterPrivateIp(config.network.vswitchCidrs[masterZoneIndex(i, zoneCount)], i, zoneCount));

    // The endpoint exists before the masters.
    let endpointHost: pulumi.Output<string>;
    let serverHost: pulumi.Output<string>;
    let sans: pulumi.Output<string[]>;
    let loadBalancer: alicloud.nlb.LoadBalancer | undefined;
    let serverGroup: alicloud.nlb.ServerGroup | undefined;
    let eip: alicloud.ecs.EipAddress | undefined;
    if (cp.count > 1) {
        loadBalancer = new alicloud.nlb.LoadBalancer(`${name}-nlb`, {
            loadBalancerName: `${config.name}-api`,
            addressType: cp.publicEndpoint ? "Internet" : "Intranet",
            addressIpVersion: "ipv4",
            vpcId: args.vpcId,
            zoneMappings: config.zones.map((zoneId, i) => ({ zoneId, vswitchId: args.vswitchIds[i] })),
            crossZoneEnabled: true,
            securityGroupIds: [args.apiSecurityGroupId],
            deletionProtectionEnabled: cp.deletionProtection,
            tags,
        }, opts);
        serverGroup = new alicloud.nlb.ServerGroup(`${name}-apiserver`, {
            serverGroupName: `${config.name}-apiserver`,
            serverGroupType: "Instance",
            vpcId: args.vpcId,
            protocol: "TCP",
            scheduler: "Wrr",
            // Off so a master can reach the API through the NLB itself (hairpin) during kubeadm init.
            preserveClientIpEnabled: false,
            connectionDrainEnabled: true,
            connectionDrainTimeout: 30,
            healthCheck: {
                healthCheckEnabled: true,
                healthCheckType: "TCP",
                healthCheckConnectPort: API_PORT,
                healthCheckInterval: 5,
                healthCheckConnectTimeout: 5,
                healthyThreshold: 2,
                unhealthyThreshold: 2,
            },
            tags,
        }, opts);
        new alicloud.nlb.Listener(`${name}-api-${API_PORT}`, {
            loadBalancerId: loadBalancer.id,
            serverGroupId: serverGroup.id,
            listenerProtocol: "TCP",
            listenerPort: API_PORT,
            listenerDescription: `${config.name} Kubernetes API`,
        }, opts);
        if (cp.publicEndpoint && args.natGateway && args.natEipAddress !== undefined) {
            new alicloud.ecs.SecurityGroupRule(`${name}-api-from-nat`, {
                securityGroupId: args.apiSecurityGroupId,
                type: "ingress", ipProtocol: "tcp", portRange: `${API_PORT}/${API_PORT}`, nicType: "intranet", policy: "accept", priority: 1,
                cidrIp: pulumi.output(args.natEipAddress).apply((ip) => `${ip}/32`),
                description: "API through the public NLB from the cluster's own NAT EIP",
            }, opts);
        }
        endpointHost = loadBalancer.dnsName;
        serverHost = loadBalancer.dnsName;
        sans = pulumi.output([loadBalancer.dnsName, ...masterPrivateIps]);
    } else {
        if (cp.publicEndpoint) {
            eip = new alicloud.ecs.EipAddress(`${name}-api-eip`, {
                addressName: `${config.name}-api`,
                internetChargeType: "PayByTraffic",
                paymentType: "PayAsYouGo",
                bandwidth: "10",
                tags,
            }, opts);
        }
        endpointHost = pulumi.output(masterPrivateIps[0]);
        serverHost = eip ? eip.ipAddress : endpointHost;
        sans = eip ? pulumi.all([masterPrivateIps[0], eip.ipAddress]) : pulumi.output([masterPrivateIps[0]]);
    }
    const endpoint = endpointHost.apply((h) => `${h}:${API_PORT}`);

    // Refuses at preview a change that would re-create more than one master at once (docs/disaster-recovery.md#one-master-at-a-time).
    const guard = new MasterReplacementGuard(`${name}-replacement-guard`, {
        region: config.region,
        masters: masterPrivateIps.map((_, i) => ({
            name: `${config.name}-master-${i}`, zone: config.zones[masterZoneIndex(i, zoneCount)], systemDiskCategory: cp.systemDisk.category,
        })),
    }, opts);
    const masters: alicloud.ecs.Instance[] = [];
    for (const [i, privateIp] of masterPrivateIps.entries()) {
        const zone = masterZoneIndex(i, zoneCount);
        masters.push(new alicloud.ecs.Instance(`${name}-master-${i}`, {
            instanceName: `${config.name}-master-${i}`,
            hostName: `${config.name}-master-${i}`,
            imageId: args.imageId,
            instanceType: cp.instanceType,
            availabilityZone: config.zones[zone],
            vswitchId: args.vswitchIds[zone],
            privateIp,
            securityGroups: args.securityGroupIds,
            systemDiskCategory: cp.systemDisk.category,
            systemDiskSize: cp.systemDisk.size,
            instanceChargeType: "PostPaid",
            internetMaxBandwidthOut: 0,
            deletionProtection: cp.deletionProtection,
            // IMDSv1 stays allowed: the Cluster Autoscaler's metadata client sends plain GETs (docs/upstream.md#autoscaler-credentials).
            httpTokens: "optional",
            userData: pulumi.all([endpoint, sans, args.recordedCaCertHash]).apply(([e, s, recorded]) => args.userdata(i, e, s, recorded || undefined)),
            tags: { ...tags, [ROLE_TAG]: "control-plane" },
        }, {
            ...opts,
            // A new image (image.nameRegex resolves to the newest one on every run) would replace the system
            // disk in place and wipe etcd and the PKI; new userdata would only reboot the master (kubeadm init
            // ran once). Neither is an upgrade: keep the masters as they were created. A new instance type the
            // provider applies by stopping, resizing and starting every master at once: ControlPlaneVersion applies
            // it instead, one master at a time with a health gate (src/upgrade/instanceType.ts); a master created
            // later gets it at creation.
            ignoreChanges: ["imageId", "userData", "instanceType"],
            // Its fixed private IP cannot be held twice: a replaced master (`pulumi up --replace`, a lost disk) is deleted
            // first, its ControlPlaneMember removing it from etcd before that; the new one takes the same address and
            // joins (docs/disaster-recovery.md#lost-member).
            deleteBeforeReplace: true,
            // Each master after the one before: `pulumi up --replace` of several masters in one run replaces them one at a
            // time (a replacement's delete of its ControlPlaneMember, its own delete and create run when it registers), so
            // each member's removal re-checks etcd's quorum after the one before it left (docs/disaster-recovery.md#one-master-at-a-time).
            // Creating a cluster waits for nothing more: each join waits for master 0's kubeadm init anyway.
            dependsOn: i === 0 ? [guard] : [guard, masters[i - 1]],
        }));
    }

    for (const [i, master] of masters.entries()) {
        new alicloud.ecs.RamRoleAttachment(`${name}-master-${i}-role`, { instanceId: master.id, ramRoleName: role.roleName.apply((r) => r ?? "") }, opts);
        if (serverGroup) {
            new alicloud.nlb.ServerGroupServerAttachment(`${name}-master-${i}-${API_PORT}`, {
                serverGroupId: serverGroup.id, serverId: master.id, serverType: "Ecs", port: API_PORT, weight: 100,
            }, opts);
        }
    }
    if (eip) {
        new alicloud.ecs.EipAssociation(`${name}-api-eip`, { allocationId: eip.id, instanceId: masters[0].id, instanceType: "EcsInstance" }, opts);
    }

    return {
        masters, role, endpoint, masterPrivateIps, loadBalancer, eip,
        kubeconfigServer: serverHost.apply((h) => `https://${h}:${API_PORT}`),
    };
}

function attachRolePolicy(name: string, suffix: "ccm" | "autoscaler" | "admission", role: alicloud.ram.Role, clusterName: string,
    policyDocument: pulumi.Input<string>, parent: pulumi.Resource): void {
    const policy = new alicloud.ram.Policy(`${name}-${suffix}-policy`, {
        policyName: `${clusterName}-${suffix}`,
        policyDocument,
        description: `alicloud-kubeadm ${clusterName}: ${suffix} permissions`,
    }, { parent });
    new alicloud.ram.RolePolicyAttachment(`${name}-${suffix}-policy`, {
        roleName: role.roleName.apply((r) => r ?? `${clusterName}-control-plane`),
        policyName: policy.policyName.apply((p) => p ?? `${clusterName}-${suffix}`),
        policyType: "Custom",
    }, { parent });
}

/**
 * The Cluster Autoscaler's policy on the masters' role, naming only the autoscaled pools' scaling groups, with the
 * ESS resize actions of the deployed autoscaler version. Same names and parent as before the pools were known.
 */
export function attachAutoscalerPolicy(controlPlane: ControlPlane, config: ClusterConfig, scalingGroupIds: pulumi.Input<string>[]): void {
    const autoscalerVersion = resolveAutoscalerVersion(config.autoscaler.version, config.kubernetesVersion).version;
    attachRolePolicy(controlPlane.resourceName, "autoscaler", controlPlane.resources.role, config.name,
        pulumi.all(scalingGroupIds).apply((ids) => JSON.stringify(ramPolicy("autoscaler", { region: config.region, scalingGroupIds: ids, autoscalerVersion }))),
        controlPlane);
}

/**
 * The admission service's policy on the masters' role (docs/admission.md): membership reads on every pool's
 * scaling group, the instance's private IP. Attached only when admission is on, once the pools exist.
 */
export function attachAdmissionPolicy(controlPlane: ControlPlane, config: ClusterConfig, scalingGroupIds: pulumi.Input<string>[]): void {
    attachRolePolicy(controlPlane.resourceName, "admission", controlPlane.resources.role, config.name,
        pulumi.all(scalingGroupIds).apply((ids) => JSON.stringify(ramPolicy("admission", { region: config.region, scalingGroupIds: ids }))),
        controlPlane);
}

/** The control plane: masters, their RAM role, and the API endpoint. */
export class ControlPlane extends pulumi.ComponentResource {
    /** `host:6443` nodes join through. */
    public readonly endpoint: pulumi.Output<string>;
    /** `https://host:6443` written into the admin kubeconfig. */
    public readonly kubeconfigServer: pulumi.Output<string>;
    public readonly masterInstanceIds: pulumi.Output<string[]>;
    public readonly roleName: pulumi.Output<string>;
    public readonly resources: ControlPlaneResources;
    /** The component's name (its children's names start with it). */
    public readonly resourceName: string;

    constructor(name: string, args: ControlPlaneArgs, opts?: pulumi.ComponentResourceOptions) {
        // Before anything is registered: a bad config creates nothing. A validated config is not checked again.
        parseArgs(`ControlPlane "${name}"`, (report) => parseControlPlaneArgs(args, report));
        super("alicloud-kubeadm:index:ControlPlane", name, {}, opts);
        this.resourceName = name;
        const r = createControlPlane(name, args, this);
        this.resources = r;
        this.endpoint = r.endpoint;
        this.kubeconfigServer = r.kubeconfigServer;
        this.masterInstanceIds = pulumi.all(r.masters.map((m) => m.id));
        this.roleName = r.role.roleName.apply((n) => n ?? "");
        this.registerOutputs({ endpoint: this.endpoint, kubeconfigServer: this.kubeconfigServer, masterInstanceIds: this.masterInstanceIds });
    }
}
