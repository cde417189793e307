// ExistingNode: an ECS instance that already exists, joined to the cluster (docs/architecture.md, "How nodes join").
//
// `mode: manual` invokes the cluster's saved attach command (createAttachCommand) on the running instance
// over Cloud Assistant, with the node's labels and taints and the token sealed to the instance as parameters; or, when a `connection` is given,
// runs the attach script over SSH with a `@pulumi/command` remote.Command (script on stdin, logging off);
// `mode: auto` sets the attach script as userdata and replaces the system disk (destructive: needs
// `replaceSystemDisk: true`). A NodeMembership waits for the Node to be Ready and, on delete, removes it
// cleanly (drain, clear userdata, kubeadm reset, delete Node, pod route). The bootstrap token is shared by
// every existing node and created by the caller (one BootstrapToken "for the existing nodes").
import * as alicloud from "@pulumi/alicloud";
import * as command from "@pulumi/command";
import * as pulumi from "@pulumi/pulumi";
import { packUserdata, renderAttachCommand, renderAttachNode } from "../shell/render";
import { renderAdmissionBootstrap, renderServedAttachScript } from "../shell/renderAdmission";
import { withNodeVersion, type JoinArgs } from "./joinArgs";
import { existingNodeSpecHash, formatTaint, OPERATIONS, SPEC_STAND_IN } from "../rules";
import { saveCommand } from "./nodeCommands";
import {
    isValidated, nodeScriptParams, parseExistingNode, parseNodeJoinConfig, type ExistingNodeConfig, type ExistingNodeInput, type NodeJoinConfig, type SshConnectionInput,
} from "../config";
import { NodeMembership } from "../providers/nodeMembership";
import { CONTROL_PLANE_POOL, dnsLabelProblem, EXISTING_POOL, sshConnectionContentProblems, type Report } from "../rules";
import { parseArgs } from "./args";
import { attachesThroughHandle, clusterHandleProblems, handleAndGiven, registerNode, type ClusterHandle } from "./clusterHandle";

/** Pool label value of existing nodes (`alicloud-kubeadm/pool=existing`). */
export const EXISTING_POOL_NAME = EXISTING_POOL;

/** Waits of the membership; production defaults apply when unset. */
export interface MembershipTimeouts {
    /** Cloud Assistant timeout of the attach script (manual mode), seconds. Default 1800. */
    attachTimeoutSeconds?: number;
    /** Bound on each wait (instance status, Node Ready), seconds. Default 900. */
    readyTimeoutSeconds?: number;
    /** Pause between checks, seconds. Default 10. */
    pollSeconds?: number;
    /** First Cloud Assistant poll delay, ms. Default 1000. */
    pollIntervalMs?: number;
    /** `kubectl drain --timeout` on removal, seconds. Default 600. */
    drainTimeoutSeconds?: number;
}

export interface ExistingNodeArgs extends JoinArgs {
    /**
     * This node's config (instance id, mode, labels, taints, replaceSystemDisk, connection): an entry of
     * `parseClusterConfig(...).existingNodes`, or an ExistingNodeInput (defaults filled in). Required.
     */
    node: ExistingNodeConfig | ExistingNodeInput;
    /** Image of the new system disk in `auto` mode. Required for `auto`, unused otherwise. */
    imageId?: pulumi.Input<string>;
    /** Bootstrap token (secret) of the existing nodes' BootstrapToken. Required unless `admissionEndpoints` is set (then unused). */
    token?: pulumi.Input<string>;
    /** The cluster's saved attach command (createAttachCommand). Required for `mode: manual` without a `connection`. */
    attachCommandId?: pulumi.Input<string>;
    /** SSH connection: run the attach script over SSH instead of Cloud Assistant (manual mode only). Default: the node's `connection`, if any. */
    connection?: command.types.input.remote.ConnectionArgs;
    /** Pool label value. Default {@link EXISTING_POOL_NAME}. */
    poolName?: string;
    /** Waits of the membership. Default: production values (see {@link MembershipTimeouts}). */
    timeouts?: MembershipTimeouts;
    /**
     * Whether the caller registers this instance with the cluster's admission service, as the Cluster does for the
     * existing nodes of its config. Default false: a node joining through admission (`admissionEndpoints`) without it
     * is refused, since the service would refuse it; a node outside a Cluster's config attaches with
     * {@link AttachedExistingNodeArgs} (`cluster: <Cluster>.handle`), which registers it.
     */
    registeredWithAdmission?: boolean;
}

/**
 * An existing instance outside a Cluster's config, attached to it through the handle the Cluster exports: the join
 * context and the admission membership come from the handle, and the node registers its instance with the running
 * admission service (docs/architecture.md, "Attaching to a cluster").
 */
export interface AttachedExistingNodeArgs {
    /** The cluster: `<Cluster>.handle`, or `await clusterHandleOf(stackReference)` in another program. Required. */
    cluster: ClusterHandle;
    /** This node's config (instance id, mode, labels, taints, replaceSystemDisk, connection); not one of the Cluster's existing nodes. Required. */
    node: ExistingNodeConfig | ExistingNodeInput;
    /** Image of the new system disk in `auto` mode. Default: the cluster's base image. */
    imageId?: pulumi.Input<string>;
    /** SSH connection: run the attach script over SSH instead of Cloud Assistant (manual mode only). Default: the node's `connection`, if any. */
    connection?: command.types.input.remote.ConnectionArgs;
    /** Pool label value. Default {@link EXISTING_POOL_NAME}. */
    poolName?: string;
    /** Waits of the membership. Default: production values (see {@link MembershipTimeouts}). */
    timeouts?: MembershipTimeouts;
}

/** The node's arguments from a handle: the handle's join context, base image and attach command, the args' own values over them. */
export function attachedExistingNodeArgs(args: AttachedExistingNodeArgs): ExistingNodeArgs {
    const { cluster, given } = handleAndGiven(args);
    return { ...cluster.join, imageId: cluster.placement.baseImageId, attachCommandId: cluster.attachCommandId, node: args.node, ...given, registeredWithAdmission: true };
}

export interface ExistingNodeResources {
    membership: NodeMembership;
    /** A node attached through a handle: its admission registration (and its own saved attach command when the cluster has none). */
    admission?: pulumi.Resource[];
    /** The SSH run of the attach script, when a connection was given. */
    sshAttach?: command.remote.Command;
}

/** An existing node's SSH connection as a program gives it: the secrets may be Pulumi secrets (`config.requireSecret`). */
export type SshConnectionArgs = Omit<SshConnectionInput, "privateKey" | "privateKeyPassword" | "password"> & {
    /** PEM private key; a Pulumi secret (`config.requireSecret`) or a plain string. Default none. */
    privateKey?: pulumi.Input<string>;
    /** Passphrase of the private key; a Pulumi secret or a plain string. Default none. */
    privateKeyPassword?: pulumi.Input<string>;
    /** Password; a Pulumi secret or a plain string. Default none. */
    password?: pulumi.Input<string>;
};

/** An existing node's SSH connection as the remote command takes it, its password and keys as Pulumi secrets. */
export function sshConnection(connection: SshConnectionArgs | undefined): command.types.input.remote.ConnectionArgs | undefined {
    if (!connection) {
        return undefined;
    }
    const secret = (value: pulumi.Input<string> | undefined) => (value === undefined ? undefined : pulumi.secret(value));
    return {
        host: connection.host,
        port: connection.port,
        user: connection.user,
        agentSocketPath: connection.agentSocketPath,
        password: secret(connection.password),
        privateKey: secret(connection.privateKey),
        privateKeyPassword: secret(connection.privateKeyPassword),
    };
}

/** Runs the attach script from stdin as root (directly, or through passwordless sudo). */
export const SSH_ATTACH_COMMAND = 'if [ "$(id -u)" -eq 0 ]; then bash -s; else sudo -n bash -s; fi';

/**
 * Parses the arguments: the config's join slice and the node are taken as they are when validated (the Cluster's,
 * `parseClusterConfig`'s), and checked once with the stack config's rules otherwise (paths relative to the args:
 * `config.name`, `node.labels.<key>`); the connection, the pool name, the attach command and the image are the
 * component's own. Returns the slice and the node, validated, or undefined when anything was reported.
 */
export function parseExistingNodeArgs(args: ExistingNodeArgs | AttachedExistingNodeArgs, report: Report):
    { config: NodeJoinConfig; node: ExistingNodeConfig; args: ExistingNodeArgs; cluster?: ClusterHandle } | undefined {
    if (attachesThroughHandle<AttachedExistingNodeArgs>(args)) {
        if (!clusterHandleProblems(args.cluster, report)) return undefined;
        // A manual node without SSH runs a saved attach command: the cluster's, or one of its own (made at create).
        const direct = attachedExistingNodeArgs(args);
        const parsed = parseDirectArgs({ ...direct, attachCommandId: direct.attachCommandId ?? "" }, report);
        if (!parsed) return undefined;
        if (args.cluster.admission.existingNodes.includes(parsed.node.instanceId)) {
            report("node.instanceId", `${parsed.node.instanceId} is already one of the cluster's existing nodes (its config's): attach it once`);
            return undefined;
        }
        return { ...parsed, args: direct, cluster: args.cluster };
    }
    const parsed = parseDirectArgs(args, report);
    if (parsed && args.admissionEndpoints !== undefined && !args.registeredWithAdmission) {
        report("admissionEndpoints", "the node joins through the admission service, but nothing registers its instance with it, so the service " +
            "would refuse it: attach the node with `cluster: <Cluster>.handle` (it registers itself), or register it yourself and set registeredWithAdmission: true");
        return undefined;
    }
    return parsed;
}

function parseDirectArgs(args: ExistingNodeArgs, report: Report): { config: NodeJoinConfig; node: ExistingNodeConfig; args: ExistingNodeArgs } | undefined {
    const config = parseNodeJoinConfig(args.config, (path, reason) => report(path ? `config.${path}` : "config", reason));
    if (typeof args.node !== "object" || args.node === null) {
        report("node", "is required: the node's config (an ExistingNodeConfig, e.g. parseClusterConfig(...).existingNodes[i])");
        return undefined;
    }
    const given = isValidated(args.node) ? args.node : withDefaults(args.node);
    const connection = args.connection ?? sshConnection(given.connection);
    const node = isValidated(args.node) ? args.node
        : parseExistingNode(given, (path, reason) => report(path ? `node.${path}` : "node", reason), connection !== undefined);
    let valid = config !== undefined && node !== undefined;
    const own: Report = (path, reason) => {
        valid = false;
        report(path, reason);
    };
    if (args.connection) sshConnectionProblems(args.connection, own);
    const poolNameReason = poolLabelProblem(args.poolName);
    if (poolNameReason) {
        own("poolName", poolNameReason);
    }
    if (args.connection && given.mode !== "manual") {
        own("connection", `a connection runs the attach script over SSH, which only mode manual does (${given.instanceId} is mode ${given.mode})`);
    }
    if (given.mode === "manual" && !connection && args.attachCommandId === undefined) {
        own("attachCommandId", "mode manual runs the cluster's saved attach command: create it with createAttachCommand");
    }
    if (given.mode === "auto" && args.imageId === undefined) {
        own("imageId", "mode auto needs the image of the new system disk");
    }
    return valid ? { config: config!, node: node!, args } : undefined;
}

/** Checks the arguments (see {@link parseExistingNodeArgs}). */
export function existingNodeProblems(args: ExistingNodeArgs | AttachedExistingNodeArgs, report: Report): void {
    parseExistingNodeArgs(args, report);
}

/** An ExistingNodeInput with the config's defaults filled in. */
function withDefaults(node: ExistingNodeInput): Parameters<typeof parseExistingNode>[0] {
    return {
        ...node, mode: node.mode ?? "manual", labels: node.labels ?? {}, taints: node.taints ?? [],
        replaceSystemDisk: node.replaceSystemDisk ?? false, removeWithoutReset: node.removeWithoutReset ?? false, rollout: node.rollout ?? "report",
        connection: node.connection === undefined ? undefined : { port: 22, user: "root", ...node.connection },
    };
}

/** The plain values of an SSH connection, checked as the stack config checks them (values not yet known are skipped). */
function sshConnectionProblems(c: command.types.input.remote.ConnectionArgs, report: Report): void {
    if (typeof c.host === "string" && c.host.trim() === "") report("connection.host", "must not be empty: the address the machine running Pulumi reaches the instance at");
    if (typeof c.port === "number" && !(Number.isInteger(c.port) && c.port >= 1 && c.port <= 65535)) report("connection.port", "must be an integer in 1..65535");
    if (typeof c.user === "string" && c.user.trim() === "") report("connection.user", "must not be empty (default root)");
    sshConnectionContentProblems(c, (path, reason) => report(`connection.${path}`, reason));
}

/**
 * Why `poolName` cannot be an existing node's pool label value, or undefined: a DNS label of at most 63
 * characters (the attach script's rule), and not the masters' value ({@link CONTROL_PLANE_POOL}).
 */
export function poolLabelProblem(poolName: string | undefined): string | undefined {
    if (poolName === undefined) {
        return undefined;
    }
    if (typeof poolName !== "string") {
        return "must be a string: the pool label value of the node";
    }
    return dnsLabelProblem(poolName, 63) ?? (poolName === CONTROL_PLANE_POOL
        ? `"${poolName}" is the pool label value of the masters; an existing node with it would be taken for one (use ${EXISTING_POOL}, the default, or a name of your own)`
        : undefined);
}

/** What the cluster's attach command bakes in: the join material every existing node shares. */
export interface AttachCommandArgs {
    /** The cluster's name, region, Kubernetes version and image sources (the join context's `config`). Required. */
    config: Pick<NodeJoinConfig, "name" | "region" | "kubernetesVersion" | "images">;
    /** API endpoint `host:6443` the nodes join through. Required. */
    apiEndpoint: pulumi.Input<string>;
    /** `sha256:<hex>` CA pin (secret). Required. */
    caCertHash: pulumi.Input<string>;
    /** Join through the admission service at these endpoints (no token anywhere). Default: none. */
    admissionEndpoints?: pulumi.Input<string[]>;
    /** `sha256:<hex>` of the admission service's key. Required with `admissionEndpoints`. */
    admissionPin?: pulumi.Input<string>;
    /** Pool label value. Default {@link EXISTING_POOL_NAME}. */
    poolName?: string;
    /** The version nodes join with: the control plane's running version (ControlPlaneVersion). Default `config.kubernetesVersion`. */
    kubernetesVersion?: pulumi.Input<string>;
}

/**
 * The cluster's saved attach command (`<cluster>-attach`): the attach script with the shared, public join
 * material (endpoint, CA pin) baked in, the node's labels and taints as parameters, and the bootstrap token
 * sealed to the instance's one-use channel key as a parameter (src/cloud/channel.ts): it holds no secret.
 */
export function createAttachCommand(name: string, args: AttachCommandArgs, opts: pulumi.CustomResourceOptions): alicloud.ecs.Command {
    const { config } = args;
    // No secret in the command: through admission, a short bootstrap that fetches the attach script from the
    // service (no token anywhere); otherwise the token arrives sealed per invocation (NodeMembership). The CA pin
    // is kept secret like everywhere.
    const script = pulumi.secret(pulumi.all([args.caCertHash, args.apiEndpoint, args.admissionEndpoints ?? [], args.admissionPin ?? "", args.kubernetesVersion ?? ""])
        .apply(([caCertHash, apiEndpoint, endpoints, pin, version]) => args.admissionEndpoints
        ? renderAdmissionBootstrap(endpoints, pin)
        : renderAttachCommand({
            ...nodeScriptParams(withNodeVersion(config, version)), apiEndpoint,
            poolName: args.poolName ?? EXISTING_POOL_NAME, caCertHash,
        })));
    return saveCommand(name, {
        commandName: `${config.name}-attach`, script, parameters: true, timeoutSeconds: OPERATIONS.attach.timeoutSeconds, description: OPERATIONS.attach.description,
    }, opts);
}

/** The join credential of the attach script: admission endpoints and pin when given (no token), else the token. */
function joinCredential(admission: unknown, token: string, endpoints: string[], pin: string): { token: string } | { admission: { endpoints: string[]; pin: string } } {
    return admission !== undefined ? { admission: { endpoints, pin } } : { token };
}

/** `own` and, when given, `after` (a resource option's `dependsOn`: a resource, a list, or an Output of either). */
function withAfter(own: pulumi.Resource[], after: pulumi.Input<pulumi.Input<pulumi.Resource>[]> | pulumi.Input<pulumi.Resource> | undefined): pulumi.Input<pulumi.Input<pulumi.Resource>[]> {
    if (after === undefined) return own;
    if (Array.isArray(after)) return [...own, ...after];
    if (pulumi.Resource.isInstance(after)) return [...own, after];
    return pulumi.output(after as pulumi.Input<pulumi.Resource | pulumi.Resource[]>).apply((a) => [...own, ...(Array.isArray(a) ? a : [a])]);
}

/** What the admission service serves an attaching node; the endpoints and pins are the service's (no secret). */
export interface ServedJoin {
    apiEndpoint: string;
    caCertHash: string;
    /** The admission endpoints `host:10443`. */
    endpoints: string[];
    /** `sha256:<hex>` of the admission service's key. */
    pin: string;
    /** The version nodes join with (the control plane's running version); "" for the config's. */
    version: string;
}

/**
 * The attach script the admission service serves at /attach.sh to the existing nodes and the manual path (no secret
 * in it): the nodes' labels and taints are `{{labels}}` and `{{taints}}`, which the bootstrap that fetched it fills in.
 * The Cluster serves it, and a `manual` node's spec hashes it (with stand-ins), so what is served and what a node's
 * spec says it joined with are one rendering.
 */
export function servedAttachScript(config: NodeJoinConfig, join: ServedJoin): string {
    return renderServedAttachScript({
        ...nodeScriptParams(withNodeVersion(config, join.version)), apiEndpoint: join.apiEndpoint, caCertHash: join.caCertHash,
        poolName: EXISTING_POOL_NAME, admission: { endpoints: join.endpoints, pin: join.pin },
    });
}

/** Stand-ins for the served script in a spec hash: a moved endpoint, a new pin or a Kubernetes version is not a new spec. */
const SERVED_STAND_IN: ServedJoin = {
    apiEndpoint: SPEC_STAND_IN.endpoint, caCertHash: SPEC_STAND_IN.pin, endpoints: [SPEC_STAND_IN.endpoint], pin: SPEC_STAND_IN.pin, version: SPEC_STAND_IN.version,
};

/**
 * The node's spec hash (docs/rotation.md#existing-nodes): its mode, labels, taints, `auto` image and attach script, with
 * stand-ins for the join material and one fixed version, so a rotated token, a moved endpoint or a Kubernetes upgrade
 * (which moves its kubelet in place) is not a new spec. The script is what the node runs: a `manual` node joining
 * through admission runs the script the service serves ({@link servedAttachScript}), the others their own.
 */
function existingNodeSpec(args: ExistingNodeArgs & { config: NodeJoinConfig; node: ExistingNodeConfig }, mode: string): pulumi.Output<string> {
    const { config, node } = args;
    const script = mode === "manual" && args.admissionEndpoints !== undefined ? servedAttachScript(config, SERVED_STAND_IN) : renderAttachNode({
        ...nodeScriptParams(withNodeVersion(config, SPEC_STAND_IN.version)), apiEndpoint: SPEC_STAND_IN.endpoint, caCertHash: SPEC_STAND_IN.pin,
        poolName: args.poolName ?? EXISTING_POOL_NAME, labels: node.labels, taints: node.taints,
        ...(args.admissionEndpoints !== undefined ? { admission: { endpoints: [SPEC_STAND_IN.endpoint], pin: SPEC_STAND_IN.pin } } : { token: SPEC_STAND_IN.token }),
    });
    return pulumi.output(node.mode === "auto" ? args.imageId ?? "" : "").apply((imageId) => existingNodeSpecHash({
        mode, imageId, labels: node.labels, taints: node.taints.map(formatTaint), script,
    }));
}

/**
 * Creates the node's membership (and SSH command) under `parent`.
 * @param after what the membership waits for besides its own inputs (the existing node before it, when both may be
 *   replaced in place: Pulumi then updates one membership only after the other's update returned)
 */
export function createExistingNode(name: string, args: ExistingNodeArgs & { config: NodeJoinConfig; node: ExistingNodeConfig; cluster?: ClusterHandle },
    parent: pulumi.Resource, after?: pulumi.Input<pulumi.Input<pulumi.Resource>[]> | pulumi.Input<pulumi.Resource>): ExistingNodeResources {
    const { config, node } = args;
    // Attached through a handle: the running admission service learns of the instance from its registration; a
    // manual node without SSH of a cluster that has no saved attach command gets its own.
    const admission = args.cluster ? registerNode(name, args.cluster, node.instanceId, args.poolName ?? EXISTING_POOL_NAME, parent) : undefined;
    const attachCommandId = args.attachCommandId === undefined && args.cluster && node.mode === "manual" && !args.connection
        ? createAttachCommand(`${name}-attach`, { ...args.cluster.join, poolName: args.poolName }, { parent }).id : args.attachCommandId;
    // The whole attach script: userdata in `auto` mode, stdin over SSH. `manual` runs the saved attach command.
    const script = pulumi.secret(pulumi.all([args.token ?? "", args.caCertHash, args.apiEndpoint, args.admissionEndpoints ?? [], args.admissionPin ?? "", args.kubernetesVersion ?? ""])
        .apply(([token, hash, endpoint, endpoints, pin, version]) => renderAttachNode({
        ...nodeScriptParams(withNodeVersion(config, version)),
        apiEndpoint: endpoint,
        poolName: args.poolName ?? EXISTING_POOL_NAME,
        labels: node.labels,
        taints: node.taints,
        ...joinCredential(args.admissionEndpoints, token, endpoints, pin),
        caCertHash: hash,
    })));

    const sshAttach = args.connection
        ? new command.remote.Command(`${name}-attach`, {
            connection: args.connection,
            create: SSH_ATTACH_COMMAND,
            stdin: script,
            // The script's output may echo parameters: keep it out of the state and the log.
            logging: "none",
        }, { parent, additionalSecretOutputs: ["stdout", "stderr"], dependsOn: withAfter(admission ?? [], after) })
        : undefined;

    const mode = sshAttach ? "ssh" : node.mode;
    const membership = new NodeMembership(`${name}-membership`, {
        region: config.region,
        instanceId: node.instanceId,
        mode,
        userData: node.mode === "auto" ? pulumi.secret(pulumi.output(script).apply((text) => packUserdata(text, `existingNodes[${node.instanceId}]`))) : undefined,
        attachCommandId: sshAttach || node.mode !== "manual" ? undefined : attachCommandId,
        token: sshAttach || node.mode !== "manual" || args.admissionEndpoints || args.token === undefined ? undefined : pulumi.secret(args.token),
        admission: args.admissionEndpoints && node.mode === "manual" && !sshAttach ? true : undefined,
        labels: Object.entries(node.labels).map(([k, v]) => `${k}=${v}`).join(","),
        taints: node.taints.map(formatTaint).join(","),
        commands: args.commands,
        imageId: node.mode === "auto" ? args.imageId : undefined,
        replaceSystemDisk: node.replaceSystemDisk,
        removeWithoutReset: node.removeWithoutReset || undefined,
        masterInstanceId: args.masterInstanceId,
        masterInstanceIds: args.masterInstanceIds,
        routeTableId: args.routeTableId,
        podCidr: config.network.podCidr,
        spec: existingNodeSpec(args, mode),
        rollout: node.rollout === "replace" ? "replace" : undefined,
        ...args.timeouts,
    }, { parent, dependsOn: withAfter([...(sshAttach ? [sshAttach] : []), ...(admission ?? [])], after) });
    return { membership, sshAttach, admission };
}

/**
 * What a node attached through a handle waits for, per handle (a Cluster's own, in its program): the admission
 * service's workload, so it attaches once the service serves what it joins with, and the membership of the last node
 * attached through it that may be replaced in place, so two are never out at once (docs/rotation.md#existing-nodes).
 */
const attachedThrough = new WeakMap<ClusterHandle, { served?: pulumi.Resource; replaced?: NodeMembership }>();

/** Records what the next node attached through `handle` waits for (see {@link attachedThrough}). */
export function attachThrough(handle: ClusterHandle, what: { served?: pulumi.Resource; replaced?: NodeMembership }): void {
    attachedThrough.set(handle, { ...attachedThrough.get(handle), ...what });
}

/** An existing ECS instance joined to the cluster as a node. */
export class ExistingNode extends pulumi.ComponentResource {
    /** The Node's name. */
    public readonly nodeName: pulumi.Output<string>;
    /** `<region>.<instance-id>`. */
    public readonly providerId: pulumi.Output<string>;
    public readonly resources: ExistingNodeResources;

    constructor(name: string, args: ExistingNodeArgs | AttachedExistingNodeArgs, opts?: pulumi.ComponentResourceOptions) {
        // Before anything is registered; a validated config and node are not checked again.
        const { config, node, args: direct, cluster } = parseArgs(`ExistingNode "${name}"`, (report) => parseExistingNodeArgs(args, report));
        super("alicloud-kubeadm:index:ExistingNode", name, {}, opts);
        // Its own dependsOn holds for its membership too (the Cluster chains the existing nodes it may replace in place);
        // attached through a handle, a node that may be replaced in place also waits for the one attached before it.
        const through = cluster ? attachedThrough.get(cluster) : undefined;
        const chained = node.rollout === "replace";
        const waits = [...(through?.served ? [through.served] : []), ...(chained && through?.replaced ? [through.replaced] : [])];
        this.resources = createExistingNode(name, { ...direct, config, node, cluster, connection: direct.connection ?? sshConnection(node.connection) }, this,
            waits.length > 0 ? withAfter(waits, opts?.dependsOn) : opts?.dependsOn);
        if (cluster && chained) attachThrough(cluster, { replaced: this.resources.membership });
        this.nodeName = this.resources.membership.nodeName;
        this.providerId = this.resources.membership.providerId;
        this.registerOutputs({ nodeName: this.nodeName, providerId: this.providerId });
    }
}
