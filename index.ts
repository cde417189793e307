// The stack program: one Cluster from the stack's config (stacks/Pulumi.<stack>.yaml).
//   pulumi stack select dev && pulumi up
import * as pulumi from "@pulumi/pulumi";
import { Cluster, readStackConfig, type ClusterConfigInput } from "./src";
import { ownStackReferenceName } from "./src/recovery/selfReference";

// The whole config, not just the cluster key: other keys of the alicloud-kubeadm namespace would otherwise
// be ignored in silence, and a cluster value that is not JSON is reported without echoing it.
const stack = readStackConfig(pulumi.runtime.allConfig());
const raw = stack.cluster as ClusterConfigInput | undefined;
const name = typeof raw?.name === "string" && raw.name !== "" ? raw.name : "cluster";

// The CA hash this stack recorded in its last `pulumi up` (its own output, read back): a re-created master 0 then joins
// that cluster or stops, and never runs `kubeadm init` over it (docs/disaster-recovery.md). None on the first `pulumi up`.
// How the CLI resolves a stack's reference to itself, and why DIY backends get the bare name: docs/upstream.md#pulumi-self-reference.
const organization = (() => {
    try {
        return pulumi.getOrganization();
    } catch {
        return undefined; // offline synth has none
    }
})();
const recordedCaCertHash = new pulumi.StackReference(ownStackReferenceName(organization, pulumi.getProject(), pulumi.getStack()))
    .getOutput("caCertHash").apply((h) => (typeof h === "string" ? h : undefined));
const cluster = new Cluster(name, { config: raw as ClusterConfigInput, region: stack.region ?? "", stackConfig: stack, recordedCaCertHash });

export const vpcId = cluster.network.vpcId;
export const vswitchIds = cluster.network.vswitchIds;
export const routeTableId = cluster.network.routeTableId;
export const clusterSecurityGroupId = cluster.network.clusterSecurityGroupId;
export const apiSecurityGroupId = cluster.network.apiSecurityGroupId;
export const natEipAddress = cluster.network.natEipAddress;
export const apiEndpoint = cluster.controlPlane.endpoint;
export const masterInstanceIds = cluster.controlPlane.masterInstanceIds;
export const kubeconfig = cluster.kubeconfig;
/** The cluster CA's hash (secret): recorded for master 0's guard (read back above). */
export const caCertHash = cluster.joinInfo.caCertHash;
/** The etcd backup bucket and the current backup key's id (docs/disaster-recovery.md#backups). */
export const backupBucket = cluster.backup.bucketName;
export const backupKeyId = cluster.backup.keyId;
/**
 * The backup keys' private halves (secret): the current one and the retired ones, by key id. Keep a copy outside the
 * stack (`pulumi stack output --show-secrets backupKeys`): a restore to a new stack needs them (docs/disaster-recovery.md).
 */
export const backupKeys = pulumi.secret(pulumi.all([cluster.backup.keyId, cluster.backup.privateKey, cluster.backup.retiredKeys])
    .apply(([keyId, privateKey, retired]) => Object.fromEntries([[keyId, privateKey], ...retired.map((k) => [k.keyId, k.privateKey])])));
/** Not secret: where everything is, for `npm run doctor -- --stack <name>`. */
export const clusterInfo = cluster.clusterInfo;
/** The one-line manual attach command when admission is on (endpoint and CA pin only, no secret; docs/admission.md). */
export const attachCommand = cluster.attachCommand;
