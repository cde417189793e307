// Cluster: the whole stack from one validated config, in the order a cluster comes up:
// config → validation → network → control plane → join material → pools/nodes → add-ons.
// (Control plane, pools, existing nodes and add-ons join here as their issues land.)
import * as pulumi from "@pulumi/pulumi";
import * as alicloud from "@pulumi/alicloud";
import * as k8s from "@pulumi/kubernetes";
import { renderControlPlaneJoin, renderMasterInit } from "../userdata/render";
import { validateClusterConfig, type ClusterConfig, type ClusterConfigInput } from "./config";
import { ControlPlane } from "./controlPlane";
import { ApiServerReady } from "./dynamic/apiServerReady";
import { ControlPlaneMember } from "./dynamic/controlPlaneMember";
import { JoinInfo } from "./dynamic/joinInfo";
import { PodNetwork } from "./podNetwork";
import { Network } from "./network";

export interface ClusterArgs {
    /** The `alicloud-kubeadm:cluster` object (DESIGN.md §5); validated before anything is created. */
    config: ClusterConfigInput;
    /** The Alibaba Cloud region, usually `alicloud:region`. Required. */
    region: string;
}

/**
 * Validates a cluster config and returns it with defaults applied. Throws InputPropertiesError
 * listing every problem (`<property.path>: <reason>`); logs warnings to the Pulumi log.
 */
export function resolveClusterConfig(args: ClusterArgs, resource?: pulumi.Resource): ClusterConfig {
    const result = validateClusterConfig(args.config, args.region);
    for (const warning of result.warnings) {
        pulumi.log.warn(warning, resource);
    }
    if (!result.config) {
        throw new pulumi.InputPropertiesError({
            message: `invalid cluster configuration (${result.errors.length} problem${result.errors.length === 1 ? "" : "s"})`,
            errors: result.errors.map(splitProblem),
        });
    }
    return result.config;
}

function splitProblem(problem: string): pulumi.InputPropertyErrorDetails {
    const at = problem.indexOf(": ");
    return { propertyPath: problem.slice(0, at), reason: problem.slice(at + 2) };
}

/** A self-managed kubeadm cluster on Alibaba Cloud, built from one config object. */
export class Cluster extends pulumi.ComponentResource {
    /** The validated config with defaults applied. */
    public readonly config: ClusterConfig;
    public readonly network: Network;
    public readonly controlPlane: ControlPlane;
    /** CA pin and admin kubeconfig read from master 0 (both secret). */
    public readonly joinInfo: JoinInfo;
    /** Admin kubeconfig (secret). */
    public readonly kubeconfig: pulumi.Output<string>;
    /** Masters 1..n-1 joined with kubeadm join --control-plane. */
    public readonly controlPlaneMembers: ControlPlaneMember[];
    /** Kubernetes provider for add-ons, usable once the API server answers /readyz. */
    public readonly kubernetesProvider: k8s.Provider;
    /** flannel (alloc) + Alibaba Cloud Controller Manager (pod routes). */
    public readonly podNetwork: PodNetwork;

    constructor(name: string, args: ClusterArgs, opts?: pulumi.ComponentResourceOptions) {
        // Validate before registering anything, so bad input creates nothing at all.
        const config = resolveClusterConfig(args);
        super("alicloud-kubeadm:index:Cluster", name, {}, opts);
        this.config = config;
        const tags = { ...config.tags, "alicloud-kubeadm/cluster": config.name };

        this.network = new Network(`${name}-network`, {
            clusterName: config.name,
            zones: config.zones,
            vpcCidr: config.network.vpcCidr,
            podCidr: config.network.podCidr,
            vswitchCidrs: config.network.vswitchCidrs,
            natGateway: config.network.natGateway,
            apiAllowedCidrs: config.network.apiAllowedCidrs,
            tags,
        }, { parent: this });

        const imageId = config.image.id
            ? pulumi.output(config.image.id)
            : alicloud.ecs.getImagesOutput({ nameRegex: config.image.nameRegex, owners: "system", mostRecent: true }, { parent: this })
                .apply((r) => {
                    if (r.images.length === 0) {
                        throw new Error(`image.nameRegex: no system image in ${config.region} matches ${config.image.nameRegex}; set image.id`);
                    }
                    return r.images[0].id;
                });

        const net = this.network;
        this.controlPlane = new ControlPlane(`${name}-control-plane`, {
            config,
            vpcId: net.vpcId,
            vswitchIds: net.resources.vswitches.map((v) => v.id),
            securityGroupIds: [net.clusterSecurityGroupId, net.apiSecurityGroupId],
            apiSecurityGroupId: net.apiSecurityGroupId,
            natEipAddress: net.natEipAddress,
            imageId,
            tags,
            userdata: (index, endpoint, certSANs) => masterUserdata(config, index, endpoint, certSANs),
        }, { parent: this });

        this.joinInfo = new JoinInfo(`${name}-join-info`, {
            region: config.region,
            masterInstanceId: this.controlPlane.resources.masters[0].id,
            kubeconfigServer: this.controlPlane.kubeconfigServer,
        }, { parent: this });
        this.kubeconfig = pulumi.secret(this.joinInfo.kubeconfig);

        // Masters 1..n-1 join one at a time (etcd grows by one member per step).
        const masters = this.controlPlane.resources.masters;
        let previous: pulumi.Resource = this.joinInfo;
        this.controlPlaneMembers = masters.slice(1).map((member, k) => {
            const joinScript = pulumi.secret(pulumi.all([this.controlPlane.endpoint, this.joinInfo.caCertHash]).apply(([apiEndpoint, caCertHash]) =>
                renderControlPlaneJoin({ region: config.region, kubernetesVersion: config.kubernetesVersion, apiEndpoint, caCertHash, ...JOIN_PLACEHOLDERS })));
            previous = new ControlPlaneMember(`${name}-master-${k + 1}-join`, {
                region: config.region,
                masterInstanceId: masters[0].id,
                memberInstanceId: member.id,
                joinScript,
                routeTableId: net.routeTableId,
            }, { parent: this, dependsOn: [previous] });
            return previous as ControlPlaneMember;
        });

        // Add-ons: only once the API server is ready, through a provider built from the secret kubeconfig.
        const ready = new ApiServerReady(`${name}-api-ready`, { kubeconfig: this.joinInfo.kubeconfig }, { parent: this });
        this.kubernetesProvider = new k8s.Provider(`${name}-k8s`, { kubeconfig: ready.kubeconfig }, { parent: this });
        this.podNetwork = new PodNetwork(`${name}-pod-network`, {
            podCidr: config.network.podCidr,
            routeTableId: net.routeTableId,
            region: config.region,
            kubernetesVersion: config.kubernetesVersion,
        }, { parent: this, provider: this.kubernetesProvider });

        this.registerOutputs({ network: this.network, controlPlane: this.controlPlane, kubeconfig: this.kubeconfig });
    }
}

/**
 * Master 0 runs kubeadm init from its userdata. Masters 1..n-1 get none: ControlPlaneMember prepares
 * and joins them over Cloud Assistant once master 0 is up (they need its certificate key).
 */
export function masterUserdata(config: ClusterConfig, index: number, apiEndpoint: string, certSANs: string[]): string | undefined {
    if (index > 0) {
        return undefined;
    }
    return renderMasterInit({
        region: config.region,
        kubernetesVersion: config.kubernetesVersion,
        apiEndpoint,
        podCidr: config.network.podCidr,
        serviceCidr: config.network.serviceCidr,
        nodeCidrMaskSize: config.network.nodeCidrMaskSize,
        certSANs,
    });
}

/** Placeholder secrets rendered into the control-plane join script; ControlPlaneMember swaps in real ones. */
const JOIN_PLACEHOLDERS = { token: "abcdef.0123456789abcdef", certificateKey: "0".repeat(64) };
