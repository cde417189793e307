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
    type UpgradeConfig,
    type TaintInput,
    type Taint,
    type ValidationResult,
    type StackConfig,
} from "./config";
export type { AdmissionConfig, BackupConfig, ClusterConfigFields, NodeJoinConfig } from "./configTypes";
export type { AutoscalerSettings, Problem, SavedOperation } from "./rules";
export type { BackupSettings } from "./rules/backup";
export { carveVSwitchCidrs, parseCidr, overlaps, contains, type Cidr } from "./rules/cidr";

// Components
export { Cluster, resolveClusterConfig, type ClusterArgs, type ClusterConfigArgs } from "./components/cluster";
// Attaching a pool, an existing node or an image built outside a Cluster: the handle it exports.
export {
    clusterHandleOf, CLUSTER_HANDLE_FORMAT, POOL_REGISTRATION_LABEL,
    type ClusterHandle, type ClusterPlacement, type AdmissionMembership, type ClusterRam,
} from "./components/clusterHandle";
export { type JoinArgs } from "./components/joinArgs";
export { Network, createNetwork, type NetworkArgs, type NetworkResources } from "./components/network";
export { ControlPlane, createControlPlane, CCM_ACTIONS, AUTOSCALER_ACTIONS, type ControlPlaneArgs, type ControlPlaneResources } from "./components/controlPlane";
export { NodePool, createNodePool, type NodePoolArgs, type AttachedNodePoolArgs, type NodePoolResources, type PoolTimeouts } from "./components/nodePool";
export {
    ExistingNode, createExistingNode, createAttachCommand, type ExistingNodeArgs, type AttachedExistingNodeArgs, type ExistingNodeResources, type AttachCommandArgs,
    type MembershipTimeouts, type SshConnectionArgs,
} from "./components/existingNode";
export { NodeCommands, nodeCommandSpecs, saveCommand, type NodeCommandsArgs, type SavedCommandArgs } from "./components/nodeCommands";
export { PodNetwork, type PodNetworkArgs, type PodNetworkImages } from "./components/podNetwork";
export { Admission, type AdmissionArgs } from "./components/admission";
export { EtcdBackup, type EtcdBackupArgs } from "./components/backup";
export type { BackupKeyPair } from "./providers/backupKey";
export type { KubeObject, KubeMetadata } from "./components/kube";
export { PodSecurity, podSecurityObjects, type PodSecurityArgs } from "./components/podSecurity";
export { NodeImage, bakeBuildContent, type NodeImageArgs, type AttachedNodeImageArgs } from "./components/nodeImage";
export { BakedImage, type BakedImageArgs } from "./providers/bakedImage";
export { ClusterAutoscaler, autoscalerVersionFor, refusedAutoscalerVersion, type ClusterAutoscalerArgs, type AutoscaledPool } from "./components/clusterAutoscaler";

// Dynamic resources (run over Cloud Assistant and the ECS/ESS/VPC OpenAPI)
export { JoinInfo, type JoinInfoArgs, type JoinInfoScripts } from "./providers/joinInfo";
export { BootstrapToken, type BootstrapTokenArgs } from "./providers/bootstrapToken";
export { ControlPlaneMember, type ControlPlaneMemberArgs } from "./providers/controlPlaneMember";
export { NodeMembership, type NodeMembershipArgs, type MembershipMode } from "./providers/nodeMembership";
export { PoolCapacity, type PoolCapacityArgs } from "./providers/poolCapacity";
export { ApiServerReady, type ApiServerReadyArgs } from "./providers/apiServerReady";
export { AdmissionCertificate, type AdmissionCertificateArgs } from "./providers/admissionCertificate";
export { ControlPlaneVersion, type ControlPlaneVersionArgs } from "./providers/controlPlaneVersion";
export { NodeVersions, type NodeVersionsArgs } from "./providers/nodeVersions";
export { removeNode, removeNodes, scaleInPool, type RemovalTarget, type RemovalOptions, type RemovalReport } from "./removal";
export type { NodeKind } from "./removal/types";
export type { ScaleInPool } from "./removal/scaleIn";
export { SYSTEM_CLOCK, type Clock } from "./cloud/wait";
export { AUTOSCALED_SPEC_LABEL, OPERATIONS, DEFAULT_ROLLOUT, SPEC_TAG, type NodeCommandIds, type OperationName, type Rollout, type RolloutInput } from "./rules";
export { DEFAULT_HEALTH_REPAIR, type HealthRepair, type HealthRepairInput } from "./rules";

// Operations
export { runDoctor, type ClusterInfo, type Finding } from "./doctor";
export type { CheckName, DoctorOptions, ExistingNodeInfo, FindingStatus, PoolInfo } from "./doctor/types";
