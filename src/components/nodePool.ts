// NodePool: an ESS scaling group whose instances join the cluster from their userdata (the attach script).
//
// Fixed mode (`size`): a PoolCapacity owns the desired capacity: it scales out and waits for Ready nodes,
// and scales in through the removal flow (drain first). Autoscaled mode (`autoscale: { min, max }`): the
// Cluster Autoscaler owns the capacity; a PoolCapacity in `observe` mode only drains the pool's nodes
// before the group is deleted. In both modes the group ignores `desiredCapacity` drift, so Pulumi never
// fights PoolCapacity or the autoscaler.
//
// Node RAM role: none. Nothing on a worker calls a cloud API: the CCM and the Cluster Autoscaler run on
// the masters with the masters' role, flannel `alloc` needs no cloud access, and the kubelet runs with
// `--cloud-provider=external`. A role without policies would only hand pods an STS credential to probe with.
//
// Labels and tags: the kubelet gets the pool's labels, and the admission service adds
// `node-restriction.kubernetes.io/alicloud-kubeadm-pool=<name>` (kubelets may not set it); the scaling
// configuration's tags carry exactly the node's labels, because the autoscaler's alicloud provider copies the
// tags verbatim into its scale-from-zero node template (and ESS puts them on the instances, where the
// admission service reads which group to ask). The seed's `k8s.io/cluster-autoscaler=true` label
// is NOT used: the kubelet may not self-apply labels under k8s.io (NodeRestriction; it refuses to start),
// and putting it only in the tags would give the template a label real nodes lack, so pods selecting it
// would trigger scale-ups onto nodes that never match. Autoscaled nodes carry
// `alicloud-kubeadm/autoscaled=true` instead, on the kubelet and in the tags alike.
import * as alicloud from "@pulumi/alicloud";
import * as pulumi from "@pulumi/pulumi";
import { packUserdata, renderAttachNode, renderOperation } from "../shell/render";
import { bakedNodeImages, isValidated, nodeScriptParams, parseNodeJoinConfig, parseNodePool, type NodeJoinConfig, type NodePoolConfig, type NodePoolInput } from "../config";
import { BootstrapToken } from "../providers/bootstrapToken";
import { PoolCapacity } from "../providers/poolCapacity";
import type { JoinArgs } from "./joinArgs";
import { AUTOSCALED_LABEL, formatTaint, LEGACY_POOL_LABEL, MAX_SCALING_CONFIGURATION_TAGS, POOL_LABEL, poolNodeLabels, poolSpecHash, scalingConfigurationTags, SPEC_STAND_IN, SPEC_TAG, type Report } from "../rules";
import { checkTags, isKnown, parseArgs } from "./args";

export { AUTOSCALED_LABEL, MAX_SCALING_CONFIGURATION_TAGS, POOL_LABEL, poolNodeLabels };

/** Waits of the pool's PoolCapacity; production defaults apply when unset. */
export interface PoolTimeouts {
    /** Bound on the wait for Ready nodes after a scale-out, seconds. Default 1200. */
    readyTimeoutSeconds?: number;
    /** Pause between checks, seconds. Default 15. */
    pollSeconds?: number;
    /** First Cloud Assistant poll delay, ms. Default 1000. */
    pollIntervalMs?: number;
    /** `kubectl drain --timeout` on scale-in, seconds. Default 600. */
    drainTimeoutSeconds?: number;
}

export interface NodePoolArgs extends JoinArgs {
    /**
     * This pool's config (exactly one of `size` / `autoscale`): an entry of `parseClusterConfig(...).nodePools`,
     * or a NodePoolInput (defaults filled in). Required.
     */
    pool: NodePoolConfig | NodePoolInput;
    /** vSwitches the group spreads over (one per zone, BALANCE policy). Required, at least one. */
    vswitchIds: pulumi.Input<string>[];
    /** Security groups of the nodes (the cluster security group). Required. */
    securityGroupIds: pulumi.Input<string>[];
    /** Image of the nodes when the pool sets no `imageId`. Required. */
    imageId: pulumi.Input<string>;
    /** Cloud tags (the cluster tag and the user's `tags`): on the group, and on fixed pools' instances. Default none. */
    tags?: Record<string, string>;
    /** Resources the pool's bootstrap token waits for: pass the JoinInfo (kubeadm init must have finished). Default none. */
    dependsOn?: pulumi.Resource[];
    /** Waits of the PoolCapacity. Default: production values (see {@link PoolTimeouts}). */
    timeouts?: PoolTimeouts;
}

export interface NodePoolResources {
    group: alicloud.ess.ScalingGroup;
    configuration: alicloud.ess.ScalingConfiguration;
    /** The pool's bootstrap token; none when the pool joins through admission (`admissionEndpoints`). */
    token?: BootstrapToken;
    /** Fixed pools: owns the capacity. Autoscaled pools: `observe` mode, drains on delete. */
    capacity: PoolCapacity;
    /** Labels the kubelet registers (and, for autoscaled pools, the configuration's tags). */
    nodeLabels: Record<string, string>;
    /** Fixed pools: the spec hash on the configuration's tags ({@link SPEC_TAG}); autoscaled pools: none yet. */
    specHash?: pulumi.Output<string>;
}

/**
 * Parses the arguments: the config's join slice and the pool are taken as they are when validated (the Cluster's,
 * `parseClusterConfig`'s), and checked once with the stack config's rules otherwise (paths relative to the args:
 * `config.name`, `pool.labels.<key>`); the vSwitch ids and the tags are the component's own. Returns both,
 * validated, or undefined when anything was reported.
 */
export function parseNodePoolArgs(args: NodePoolArgs, report: Report): { config: NodeJoinConfig; pool: NodePoolConfig } | undefined {
    const config = parseNodeJoinConfig(args.config, (path, reason) => report(path ? `config.${path}` : "config", reason));
    if (typeof args.pool !== "object" || args.pool === null) {
        report("pool", "is required: the pool's config (a NodePoolConfig, e.g. parseClusterConfig(...).nodePools[i])");
        return undefined;
    }
    const pool = isValidated(args.pool) ? args.pool
        : parseNodePool(withDefaults(args.pool), args.config?.name ?? "", args.tags ?? {}, (path, reason) => report(path ? `pool.${path}` : "pool", reason));
    let valid = config !== undefined && pool !== undefined;
    const own: Report = (path, reason) => {
        valid = false;
        report(path, reason);
    };
    if (isKnown(args.vswitchIds) && Array.isArray(args.vswitchIds) && args.vswitchIds.length === 0) {
        own("vswitchIds", `pool ${args.pool.name} needs at least one vSwitch`);
    }
    checkTags(args.tags, own);
    return valid ? { config: config!, pool: pool! } : undefined;
}

/** Checks the arguments (see {@link parseNodePoolArgs}). */
export function nodePoolProblems(args: NodePoolArgs, report: Report): void {
    parseNodePoolArgs(args, report);
}

/** A NodePoolInput with the config's defaults filled in. */
function withDefaults(pool: NodePoolInput): Parameters<typeof parseNodePool>[0] {
    return { ...pool, labels: pool.labels ?? {}, taints: pool.taints ?? [] } as Parameters<typeof parseNodePool>[0];
}

/** Creates the pool's group, scaling configuration, bootstrap token and capacity under `parent`. */
export function createNodePool(name: string, args: NodePoolArgs & { config: NodeJoinConfig; pool: NodePoolConfig }, parent: pulumi.Resource): NodePoolResources {
    const { config, pool } = args;
    const opts = { parent };
    const cloudTags = args.tags ?? {};
    const nodeLabels = poolNodeLabels(pool);
    const fixed = pool.autoscale === undefined;
    const size = pool.size ?? 0;
    const configurationTags = scalingConfigurationTags(pool, cloudTags, () => undefined); // checked by nodePoolProblems

    const group = new alicloud.ess.ScalingGroup(`${name}-group`, {
        scalingGroupName: `${config.name}-${pool.name}`,
        // Fixed pools start empty and PoolCapacity raises MaxSize/DesiredCapacity; autoscaled pools take the bounds.
        minSize: fixed ? 0 : pool.autoscale!.min,
        maxSize: fixed ? Math.max(size, 1) : pool.autoscale!.max,
        desiredCapacity: fixed ? 0 : pool.autoscale!.min,
        vswitchIds: args.vswitchIds,
        multiAzPolicy: "BALANCE",
        // Should ESS ever choose (it never may: PoolCapacity protects fixed pools' members and removes drained ones
        // itself), the oldest configuration first, as the removal core orders outdated before current; then newest.
        // An in-place update of an existing group (ModifyScalingGroup RemovalPolicy.N; docs/upstream.md#ess-removal-policy).
        removalPolicies: ["OldestScalingConfiguration", "NewestInstance"],
        // A cloud tag naming the pool (not a node label: the key of before, so existing groups keep their tags).
        tags: { ...cloudTags, [LEGACY_POOL_LABEL]: pool.name },
    }, {
        ...opts,
        // PoolCapacity (fixed) / the autoscaler own the capacity, and PoolCapacity owns MaxSize, so a smaller size
        // or maximum never reaches ESS as a lower MaxSize (ESS would release instances without a drain).
        // (Creation still sets it: ignoreChanges applies to updates.)
        // PoolCapacity protects a fixed pool's members from scale-in, which the provider reads back as
        // `protectedInstances`: ignored, or the next `pulumi up` would lift the protection.
        ignoreChanges: ["desiredCapacity", "maxSize", "protectedInstances"],
    });

    // Joining through admission: no token at all (docs/admission.md). Otherwise the pool's own token.
    const token = args.admissionEndpoints ? undefined : new BootstrapToken(`${name}-token`, {
        region: config.region,
        masterInstanceId: args.masterInstanceId,
        masterInstanceIds: args.masterInstanceIds,
        commands: args.commands,
        tokenCreateScript: renderOperation("token-create"),
        ttl: pool.tokenTtl,
        description: `alicloud-kubeadm ${config.name} pool ${pool.name}`,
        pollIntervalMs: args.timeouts?.pollIntervalMs,
    }, { ...opts, dependsOn: args.dependsOn });

    const { [POOL_LABEL]: _pool, ...extraLabels } = nodeLabels;
    const userData = pulumi.secret(pulumi.all([token?.token ?? "", args.caCertHash, args.apiEndpoint, args.admissionEndpoints ?? [], args.admissionPin ?? ""]).apply(([t, hash, endpoint, endpoints, pin]) => packUserdata(renderAttachNode({
        ...nodeScriptParams(config),
        ...bakedNodeImages(config),
        apiEndpoint: endpoint,
        poolName: pool.name,
        labels: extraLabels,
        taints: pool.taints,
        ...(token ? { token: t } : { admission: { endpoints, pin } }),
        caCertHash: hash,
    }), `nodePools[${pool.name}]`)));

    const types = pool.instanceTypes;
    // Fixed pools: the spec hash rides on the configuration's tags, so ESS puts it on every instance it creates from
    // now on and an instance made from an earlier spec can be told apart (docs/rotation.md). Autoscaled pools' tags
    // are exactly their node labels (the autoscaler's template), so they carry none yet.
    const specHash = fixed ? pulumi.output(pool.imageId ?? args.imageId).apply((imageId) => poolSpecHash({
        imageId, instanceTypes: types, systemDisk: pool.systemDisk, kubernetesVersion: config.kubernetesVersion, labels: nodeLabels,
        taints: pool.taints.map(formatTaint),
        userdata: renderAttachNode({
            ...nodeScriptParams(config), ...bakedNodeImages(config), poolName: pool.name, labels: extraLabels, taints: pool.taints,
            // Stand-ins for the token, the endpoints and the pins: a rotated token is not a new spec, and no secret is hashed into a tag.
            apiEndpoint: SPEC_STAND_IN.endpoint, caCertHash: SPEC_STAND_IN.pin,
            ...(token ? { token: SPEC_STAND_IN.token } : { admission: { endpoints: [SPEC_STAND_IN.endpoint], pin: SPEC_STAND_IN.pin } }),
        }),
    })) : undefined;
    const configuration = new alicloud.ess.ScalingConfiguration(`${name}-config`, {
        scalingGroupId: group.id,
        scalingConfigurationName: `${config.name}-${pool.name}`,
        imageId: pool.imageId ?? args.imageId,
        // Autoscaled pools: one type, in `InstanceType` (the autoscaler's template reads only that field).
        ...(types.length === 1 ? { instanceType: types[0] } : { instanceTypes: types }),
        systemDiskCategory: pool.systemDisk.category,
        systemDiskSize: pool.systemDisk.size,
        securityGroupIds: args.securityGroupIds,
        instanceName: `${config.name}-${pool.name}`,
        internetMaxBandwidthOut: 0,
        tags: specHash ? specHash.apply((hash) => ({ ...configurationTags, [SPEC_TAG]: hash })) : configurationTags,
        userData,
        active: true,
        enable: true,
        forceDelete: true,
    }, opts);

    const capacity = new PoolCapacity(`${name}-capacity`, {
        region: config.region,
        scalingGroupId: group.id,
        poolName: pool.name,
        masterInstanceId: args.masterInstanceId,
        masterInstanceIds: args.masterInstanceIds,
        commands: args.commands,
        mode: fixed ? "fixed" : "observe",
        size: fixed ? size : undefined,
        minSize: fixed ? 0 : pool.autoscale!.min,
        maxSize: fixed ? undefined : pool.autoscale!.max,
        routeTableId: args.routeTableId,
        podCidr: config.network.podCidr,
        ...args.timeouts,
        // What the configuration's tag says, read back from it: the hash the instances ESS creates now carry.
        ...(specHash ? { specHash: configuration.tags.apply((tags) => tags?.[SPEC_TAG] ?? "") } : {}),
        ...(pool.rollout ? { rollout: pool.rollout } : {}),
    }, { ...opts, dependsOn: token ? [configuration, token] : [configuration] });

    return { group, configuration, token, capacity, nodeLabels, specHash };
}

/** A node pool: ESS scaling group + scaling configuration whose userdata joins the cluster. */
export class NodePool extends pulumi.ComponentResource {
    /** ESS scaling group id (`asg-…`), e.g. for the Cluster Autoscaler's `--nodes`. */
    public readonly scalingGroupId: pulumi.Output<string>;
    /** Active scaling configuration id. */
    public readonly scalingConfigurationId: pulumi.Output<string>;
    /** Pool name. */
    public readonly poolName: string;
    /** Autoscaler bounds for autoscaled pools, undefined for fixed pools. */
    public readonly autoscale?: { min: number; max: number };
    public readonly resources: NodePoolResources;

    constructor(name: string, args: NodePoolArgs, opts?: pulumi.ComponentResourceOptions) {
        // Before anything is registered: a bad pool creates nothing. A validated config and pool are not checked again.
        const { config, pool } = parseArgs(`NodePool "${name}"`, (report) => parseNodePoolArgs(args, report));
        super("alicloud-kubeadm:index:NodePool", name, {}, opts);
        const r = createNodePool(name, { ...args, config, pool }, this);
        this.resources = r;
        this.poolName = pool.name;
        this.autoscale = pool.autoscale;
        this.scalingGroupId = r.group.id;
        this.scalingConfigurationId = r.configuration.id;
        this.registerOutputs({ scalingGroupId: this.scalingGroupId, scalingConfigurationId: this.scalingConfigurationId });
    }
}
