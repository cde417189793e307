// Cluster: the whole stack from one validated config, in the order a cluster comes up:
// config → validation → network → control plane → join material → pools/nodes → add-ons.
// (Control plane, pools, existing nodes and add-ons join here as their issues land.)
import * as pulumi from "@pulumi/pulumi";
import { validateClusterConfig, type ClusterConfig, type ClusterConfigInput } from "./config";
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

        this.registerOutputs({ network: this.network });
    }
}
