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
import { withNodeVersion, type JoinArgs } from "./joinArgs";
import { AUTOSCALED_LABEL, formatTaint, LEGACY_POOL_LABEL, MAX_SCALING_CONFIGURATION_TAGS, AUTOSCALED_SPEC_LABEL, POOL_LABEL, poolNodeLabels, poolSpecHash, scalingConfigurationTags, SPEC_STAND_IN, SPEC_TAG, type Report } from "../rules";
import { checkTags, isKnown, parseArgs } from "./args";
import { attachesThroughHandle, clusterHandleProblems, handleAndGiven, registerPool, type ClusterHandle } from "./clusterHandle";

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
    /**
     * Whether the caller registers this pool's scaling group with the cluster's admission service and lets the masters'
     * role read it, as the Cluster does for the pools of its config. Default false: a pool joining through admission
     * (`admissionEndpoints`) without it is refused, since the service would refuse its every node; a pool built
     * outside a Cluster attaches with {@link AttachedNodePoolArgs} (`cluster: <Cluster>.handle`), which registers it.
     */
    registeredWithAdmission?: boolean;
}

/**
 * A pool built outside a Cluster, attached to it through the handle the Cluster exports: the join context, the
 * placement (vSwitches, security group, image, tags) and the admission membership come from the handle; the pool
 * registers its scaling group with the running admission service and adds a policy on the masters' role naming
 * its group, so its nodes are admitted without a restart of anything (docs/architecture.md, "Attaching to a cluster").
 */
export interface AttachedNodePoolArgs {
    /** The cluster: `<Cluster>.handle`, or `await clusterHandleOf(stackReference)` in another program. Required. */
    cluster: ClusterHandle;
    /**
     * This pool's config, a fixed pool (`size`): the Cluster's autoscaler scales only the pools of its config. Its
     * name must differ from the Cluster's pools'. Required.
     */
    pool: NodePoolConfig | NodePoolInput;
    /** vSwitches the group spreads over. Default: the cluster's, one per zone. */
    vswitchIds?: pulumi.Input<string>[];
    /** Security groups of the nodes. Default: the cluster security group. */
    securityGroupIds?: pulumi.Input<string>[];
    /** Image of the nodes when the pool sets no `imageId`. Default: the image the Cluster's pools boot. */
    imageId?: pulumi.Input<string>;
    /** Cloud tags on the group (and fixed pools' instances). Default: the Cluster's (its cluster tag and the config's `tags`). */
    tags?: Record<string, string>;
    /** Waits of the PoolCapacity. Default: production values (see {@link PoolTimeouts}). */
    timeouts?: PoolTimeouts;
}

/** The pool's arguments from a handle: the handle's join context and placement, the args' own values over them. */
export function attachedNodePoolArgs(args: AttachedNodePoolArgs): NodePoolArgs {
    const { cluster, given } = handleAndGiven(args);
    return {
        ...cluster.join, vswitchIds: cluster.placement.vswitchIds, securityGroupIds: cluster.placement.securityGroupIds,
        imageId: cluster.placement.imageId, tags: cluster.placement.tags, pool: args.pool, ...given, registeredWithAdmission: true,
    };
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
    /** A pool attached through a handle: its admission registration and the masters' policy naming its group. */
    admission?: pulumi.Resource[];
    /** The spec hash on the configuration's tags ({@link SPEC_TAG}; autoscaled pools {@link AUTOSCALED_SPEC_LABEL}, a node label too). */
    specHash: pulumi.Output<string>;
}

/**
 * Parses the arguments: the config's join slice and the pool are taken as they are when validated (the Cluster's,
 * `parseClusterConfig`'s), and checked once with the stack config's rules otherwise (paths relative to the args:
 * `config.name`, `pool.labels.<key>`); the vSwitch ids and the tags are the component's own. Returns both,
 * validated, or undefined when anything was reported.
 */
export function parseNodePoolArgs(args: NodePoolArgs | AttachedNodePoolArgs, report: Report):
    { config: NodeJoinConfig; pool: NodePoolConfig; args: NodePoolArgs; cluster?: ClusterHandle } | undefined {
    if (attachesThroughHandle<AttachedNodePoolArgs>(args)) {
        if (!clusterHandleProblems(args.cluster, report)) return undefined;
        const parsed = parseDirectArgs(attachedNodePoolArgs(args), report);
        if (!parsed) return undefined;
        const { pool } = parsed;
        let valid = true;
        if (pool.autoscale) {
            report("pool.autoscale", `the Cluster's autoscaler scales only the pools of its config (its --nodes and RAM policy list them): ` +
                `give pool ${pool.name} a size, or declare it in the Cluster's config (nodePools)`);
            valid = false;
        }
        if (args.cluster.admission.pools.includes(pool.name)) {
            report("pool.name", `the cluster already has a pool ${pool.name} (its config's): give the attached pool another name`);
            valid = false;
        }
        return valid ? { ...parsed, cluster: args.cluster } : undefined;
    }
    const parsed = parseDirectArgs(args, report);
    if (parsed && args.admissionEndpoints !== undefined && !args.registeredWithAdmission) {
        report("admissionEndpoints", "the pool joins through the admission service, but nothing registers its scaling group with it, so the service " +
            "would refuse every node: attach the pool with `cluster: <Cluster>.handle` (it registers itself), or register it yourself and set registeredWithAdmission: true");
        return undefined;
    }
    return parsed;
}

function parseDirectArgs(args: NodePoolArgs, report: Report): { config: NodeJoinConfig; pool: NodePoolConfig; args: NodePoolArgs } | undefined {
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
    return valid ? { config: config!, pool: pool!, args } : undefined;
}

/** Checks the arguments (see {@link parseNodePoolArgs}). */
export function nodePoolProblems(args: NodePoolArgs | AttachedNodePoolArgs, report: Report): void {
    parseNodePoolArgs(args, report);
}

/** A NodePoolInput with the config's defaults filled in. */
function withDefaults(pool: NodePoolInput): Parameters<typeof parseNodePool>[0] {
    return { ...pool, labels: pool.labels ?? {}, taints: pool.taints ?? [] } as Parameters<typeof parseNodePool>[0];
}

/** Creates the pool's group, scaling configuration, bootstrap token and capacity under `parent`. */
export function createNodePool(name: string, args: NodePoolArgs & { config: NodeJoinConfig; pool: NodePoolConfig; cluster?: ClusterHandle }, parent: pulumi.Resource): NodePoolResources {
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

    // Attached through a handle: the running admission service learns of the group from its registration.
    const admission = args.cluster ? registerPool(name, args.cluster, pool.name, group.id, parent) : undefined;

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
    const types = pool.instanceTypes;
    // The spec hash rides on the configuration's tags, so ESS puts it on every instance it creates from now on and an
    // instance made from an earlier spec can be told apart (docs/rotation.md): under SPEC_TAG for a fixed pool, under
    // AUTOSCALED_SPEC_LABEL, also a label of its nodes, for an autoscaled one (its tags are its template's labels).
    // The version is the one the control plane runs (as in the userdata): a kubernetesVersion the API servers do not
    // serve yet is not a new spec (docs/upgrades.md#the-running-version-is-read-not-configured).
    const specHash = pulumi.all([pool.imageId ?? args.imageId, args.kubernetesVersion ?? ""]).apply(([imageId, running]) => poolSpecHash({
        imageId, instanceTypes: types, systemDisk: pool.systemDisk, kubernetesVersion: withNodeVersion(config, running).kubernetesVersion, labels: nodeLabels,
        taints: pool.taints.map(formatTaint),
        userdata: renderAttachNode({
            ...nodeScriptParams(withNodeVersion(config, running)), ...bakedNodeImages(withNodeVersion(config, running)), poolName: pool.name, labels: extraLabels, taints: pool.taints,
            // Stand-ins for the token, the endpoints and the pins: a rotated token is not a new spec, and no secret is hashed into a tag.
            apiEndpoint: SPEC_STAND_IN.endpoint, caCertHash: SPEC_STAND_IN.pin,
            ...(token ? { token: SPEC_STAND_IN.token } : { admission: { endpoints: [SPEC_STAND_IN.endpoint], pin: SPEC_STAND_IN.pin } }),
        }),
    }));
    // An autoscaled pool's kubelets register its spec hash as a label too, so the autoscaler's template (every
    // configuration tag) has no label its Nodes lack; the hash is over the userdata without it (it cannot hold itself).
    const userData = pulumi.secret(pulumi.all([token?.token ?? "", args.caCertHash, args.apiEndpoint, args.admissionEndpoints ?? [], args.admissionPin ?? "", args.kubernetesVersion ?? "", fixed ? "" : specHash])
        .apply(([t, hash, endpoint, endpoints, pin, version, spec]) => packUserdata(renderAttachNode({
        ...nodeScriptParams(withNodeVersion(config, version)),
        ...bakedNodeImages(withNodeVersion(config, version)),
        apiEndpoint: endpoint,
        poolName: pool.name,
        labels: fixed ? extraLabels : { ...extraLabels, [AUTOSCALED_SPEC_LABEL]: spec },
        taints: pool.taints,
        ...(token ? { token: t } : { admission: { endpoints, pin } }),
        caCertHash: hash,
    }), `nodePools[${pool.name}]`)));

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
        tags: specHash.apply((hash) => ({ ...configurationTags, [fixed ? SPEC_TAG : AUTOSCALED_SPEC_LABEL]: hash })),
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
        specHash: configuration.tags.apply((tags) => tags?.[fixed ? SPEC_TAG : AUTOSCALED_SPEC_LABEL] ?? ""),
        ...(pool.rollout ? { rollout: pool.rollout } : {}),
        ...(pool.healthRepair ? { healthRepair: pool.healthRepair } : {}),
    }, { ...opts, dependsOn: [configuration, ...(token ? [token] : []), ...(admission ?? [])] });

    return { group, configuration, token, capacity, nodeLabels, admission, specHash };
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

    constructor(name: string, args: NodePoolArgs | AttachedNodePoolArgs, opts?: pulumi.ComponentResourceOptions) {
        // Before anything is registered: a bad pool creates nothing. A validated config and pool are not checked again.
        const { config, pool, args: direct, cluster } = parseArgs(`NodePool "${name}"`, (report) => parseNodePoolArgs(args, report));
        super("alicloud-kubeadm:index:NodePool", name, {}, opts);
        const r = createNodePool(name, { ...direct, config, pool, cluster }, this);
        this.resources = r;
        this.poolName = pool.name;
        this.autoscale = pool.autoscale;
        this.scalingGroupId = r.group.id;
        this.scalingConfigurationId = r.configuration.id;
        this.registerOutputs({ scalingGroupId: this.scalingGroupId, scalingConfigurationId: this.scalingConfigurationId });
    }
}
