// The stack program: one Cluster from the stack's config (stacks/Pulumi.<stack>.yaml).
//   pulumi stack select dev && pulumi up
import * as pulumi from "@pulumi/pulumi";
import { Cluster, type ClusterConfigInput } from "./src";

const region = new pulumi.Config("alicloud").get("region") ?? "";
const raw = new pulumi.Config("alicloud-kubeadm").getObject<ClusterConfigInput>("cluster");
const name = typeof raw?.name === "string" ? raw.name : "cluster";

const cluster = new Cluster(name, { config: raw as ClusterConfigInput, region });

export const vpcId = cluster.network.vpcId;
export const vswitchIds = cluster.network.vswitchIds;
export const routeTableId = cluster.network.routeTableId;
export const clusterSecurityGroupId = cluster.network.clusterSecurityGroupId;
export const apiSecurityGroupId = cluster.network.apiSecurityGroupId;
export const natEipAddress = cluster.network.natEipAddress;
export const apiEndpoint = cluster.controlPlane.endpoint;
export const masterInstanceIds = cluster.controlPlane.masterInstanceIds;
export const kubeconfig = cluster.kubeconfig;
/** Not secret: where everything is, for `npm run doctor -- --stack <name>`. */
export const clusterInfo = cluster.clusterInfo;
