// The public API of alicloud-kubeadm. Component type tokens are alicloud-kubeadm:index:<Name>.
// Read in the order a cluster comes up: config → network → control plane → join material →
// pools and nodes → add-ons → operations.

// Config and validation
export {
    parseClusterConfig,
    validateClusterConfig,
    isChinaRegion,
    ClusterConfigError,
    type ClusterConfig,
    type ClusterConfigInput,
    type NodePoolConfig,
    type ExistingNodeConfig,
    type Taint,
    type ValidationResult,
} from "./config";
export { carveVSwitchCidrs, parseCidr, overlaps, contains } from "./cidr";

// Components
export { Cluster, resolveClusterConfig, type ClusterArgs } from "./cluster";
export { Network, createNetwork, type NetworkArgs, type NetworkResources } from "./network";
export { ControlPlane, createControlPlane, CCM_ACTIONS, AUTOSCALER_ACTIONS, type ControlPlaneArgs, type ControlPlaneResources } from "./controlPlane";
export { NodePool, createNodePool, type NodePoolArgs, type NodePoolResources } from "./nodePool";
export { ExistingNode, createExistingNode, type ExistingNodeArgs, type ExistingNodeResources } from "./existingNode";
export { PodNetwork, type PodNetworkArgs } from "./podNetwork";
export { ClusterAutoscaler, autoscalerVersionFor, refusedAutoscalerVersion, type ClusterAutoscalerArgs } from "./clusterAutoscaler";

// Dynamic resources (run over Cloud Assistant and the ECS/ESS/VPC OpenAPI)
export { JoinInfo, type JoinInfoArgs } from "./dynamic/joinInfo";
export { BootstrapToken } from "./dynamic/bootstrapToken";
export { ControlPlaneMember, type ControlPlaneMemberArgs } from "./dynamic/controlPlaneMember";
export { NodeMembership } from "./dynamic/nodeMembership";
export { PoolCapacity } from "./dynamic/poolCapacity";
export { ApiServerReady, type ApiServerReadyArgs } from "./dynamic/apiServerReady";
export { removeNode, removeNodes, scaleInPool, type RemovalTarget, type RemovalOptions, type RemovalReport } from "./dynamic/removal";

// Operations
export { runDoctor, type ClusterInfo, type Finding } from "./doctor";
