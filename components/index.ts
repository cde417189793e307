// The public API of alicloud-kubeadm. Type tokens are alicloud-kubeadm:index:<Name>.
export { Cluster, resolveClusterConfig, type ClusterArgs } from "./cluster";
export { Network, createNetwork, type NetworkArgs, type NetworkResources } from "./network";
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
