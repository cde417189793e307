// The public API of alicloud-kubeadm. Component type tokens are alicloud-kubeadm:index:<Name>.
// Read in the order a cluster comes up: config → network → control plane → join material →
// pools and nodes → add-ons → operations.

// Config and validation
export {
    parseClusterConfig,
    validateClusterConfig,
    readStackConfig,
    isChinaRegion,
    ClusterConfigError,
    type ClusterConfig,
    type ClusterConfigInput,
    type NodePoolConfig,
    type NodePoolInput,
    type ExistingNodeConfig,
    type ExistingNodeInput,
    type SshConnection,
    type SshConnectionInput,
    type Disk,
    type DiskCategory,
    type DiskInput,
    type ImageSources,
    type PodSecurityConfig,
    type TaintInput,
    type Taint,
    type ValidationResult,
    type StackConfig,
} from "./config";
export { carveVSwitchCidrs, parseCidr, overlaps, contains } from "./rules/cidr";

// Components
export { Cluster, resolveClusterConfig, type ClusterArgs, type ClusterConfigArgs } from "./components/cluster";
export { Network, createNetwork, type NetworkArgs, type NetworkResources } from "./components/network";
export { ControlPlane, createControlPlane, CCM_ACTIONS, AUTOSCALER_ACTIONS, type ControlPlaneArgs, type ControlPlaneResources } from "./components/controlPlane";
export { NodePool, createNodePool, type NodePoolArgs, type NodePoolResources } from "./components/nodePool";
export { ExistingNode, createExistingNode, createAttachCommand, type ExistingNodeArgs, type ExistingNodeResources, type AttachCommandArgs } from "./components/existingNode";
export { NodeCommands, nodeCommandSpecs, saveCommand, type NodeCommandsArgs, type SavedCommandArgs } from "./components/nodeCommands";
export { PodNetwork, type PodNetworkArgs } from "./components/podNetwork";
export { PodSecurity, podSecurityObjects, type PodSecurityArgs } from "./components/podSecurity";
export { NodeImage, bakeBuildContent, type NodeImageArgs } from "./components/nodeImage";
export { BakedImage } from "./providers/bakedImage";
export { ClusterAutoscaler, autoscalerVersionFor, refusedAutoscalerVersion, type ClusterAutoscalerArgs } from "./components/clusterAutoscaler";

// Dynamic resources (run over Cloud Assistant and the ECS/ESS/VPC OpenAPI)
export { JoinInfo, type JoinInfoArgs } from "./providers/joinInfo";
export { BootstrapToken } from "./providers/bootstrapToken";
export { ControlPlaneMember, type ControlPlaneMemberArgs } from "./providers/controlPlaneMember";
export { NodeMembership } from "./providers/nodeMembership";
export { PoolCapacity } from "./providers/poolCapacity";
export { ApiServerReady, type ApiServerReadyArgs } from "./providers/apiServerReady";
export { AdmissionCertificate, type AdmissionCertificateArgs } from "./providers/admissionCertificate";
export { removeNode, removeNodes, scaleInPool, type RemovalTarget, type RemovalOptions, type RemovalReport } from "./removal";
export { OPERATIONS, DEFAULT_ROLLOUT, SPEC_TAG, type NodeCommandIds, type OperationName, type Rollout, type RolloutInput } from "./rules";

// Operations
export { runDoctor, type ClusterInfo, type Finding } from "./doctor";
