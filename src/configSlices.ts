// The slices of a validated cluster config that the Cluster hands its components (Network, NodeImage, PodNetwork,
// ClusterAutoscaler): plain values the config's rules already checked, marked validated so that the component
// checks nothing again, plus the ids only known at deploy time (Outputs), which no rule reads. A component used
// directly with its own arguments checks them once itself. A parser module (src/validated.ts).
import { clusterTags, nodeImageList, nodeScriptParams, type ClusterConfig } from "./config";
import { markValidated, type Validated } from "./validated";

/** The Network's arguments. */
export function networkArgsOf(config: ClusterConfig) {
    return markValidated({
        clusterName: config.name,
        region: config.region,
        zones: config.zones,
        vpcCidr: config.network.vpcCidr,
        podCidr: config.network.podCidr,
        vswitchCidrs: config.network.vswitchCidrs,
        natGateway: config.network.natGateway,
        apiAllowedCidrs: config.network.apiAllowedCidrs,
        tags: clusterTags(config),
    });
}

/** The NodeImage's arguments (`image.bake`), with the base image and the build's vSwitch. */
export function nodeImageArgsOf<I>(config: ClusterConfig, at: { baseImageId: I; vswitchId: I }) {
    return markValidated({
        clusterName: config.name, ...nodeScriptParams(config), nodeImages: nodeImageList(config), baseImageId: at.baseImageId, vswitchId: at.vswitchId,
        instanceType: config.image.bakeInstanceType, tags: clusterTags(config),
    });
}

/** The PodNetwork's arguments, with the route table the CCM writes into. */
export function podNetworkArgsOf<I>(config: ClusterConfig, routeTableId: I) {
    return markValidated({
        podCidr: config.network.podCidr,
        routeTableId,
        region: config.region,
        kubernetesVersion: config.kubernetesVersion,
        images: {
            flannel: config.images.flannel,
            flannelCniPlugin: config.images.flannelCniPlugin,
            ccm: config.images.cloudControllerManager,
        },
    });
}

/**
 * The ClusterAutoscaler's arguments for the autoscaled pools (in config order), each with its scaling group; the image
 * follows `runningVersion` (ControlPlaneVersion's) when given.
 */
export function autoscalerArgsOf<I, R = never>(config: ClusterConfig, scalingGroupIds: ReadonlyMap<string, I>, runningVersion?: R) {
    return markValidated({
        region: config.region,
        kubernetesVersion: config.kubernetesVersion,
        ...(runningVersion !== undefined ? { runningVersion } : {}),
        version: config.autoscaler.version,
        pools: config.nodePools.filter((p) => p.autoscale).map((p) => ({ name: p.name, min: p.autoscale!.min, max: p.autoscale!.max, scalingGroupId: scalingGroupIds.get(p.name)! })),
        settings: config.autoscaler,
        imageRepository: config.images.clusterAutoscalerRepository,
    });
}

export type { Validated };
