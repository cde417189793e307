/**
 * NodeMembership: an existing ECS instance joined to the cluster (docs/architecture.md, "How nodes join").
 *
 * - `manual`: has the instance make a one-use key pair (channel-open), seals the bootstrap token to it and
 *   invokes the cluster's saved attach command on the running instance with Cloud Assistant (the node's
 *   labels and taints and the sealed token as parameters: no record holds the token in clear), then waits
 *   (bounded) until the Node with provider id `<region>.<instance-id>` is Ready.
 * - `ssh`: the script was run over SSH by a `@pulumi/command` `remote.Command` that this resource depends
 *   on (see ExistingNode); this resource only waits for Ready.
 * - `auto` (destructive, needs `replaceSystemDisk: true`): ModifyInstanceAttribute(UserData = the attach
 *   script) → StopInstance (StoppedMode KeepCharging, the standard stop for pay-as-you-go) → wait Stopped →
 *   ReplaceSystemDisk(ImageId) → wait for the disk operation → StartInstance → wait Running → wait Ready.
 *   cloud-init runs the new userdata on the fresh system disk. An instance that already is a Ready node
 *   is left alone.
 *
 * An update whose spec hash (`spec`) is not the one the node joined with (`joinedSpec`) reports it, or with
 * `rollout: replace` replaces the node in place (src/providers/existingNodeRollout.ts, docs/rotation.md#existing-nodes).
 * A replacement that fails after its removal changed the node records how far it got (a partial update): the next
 * update attaches the node again whatever its spec and rollout, or, attached already, waits for Ready and validates
 * (attaching again when the cluster has no Node for it). A refresh (`read`) records a node without a Node as out.
 *
 * delete hands the node to the removal flow (`removeNode`, kind `existing`): drain, clear userdata,
 * kubeadm reset, delete the Node, delete a left-over pod route. The instance itself stays.
 */
import * as pulumi from "@pulumi/pulumi";
import { CommandError } from "../cloud/cloudAssistant";
import { describeInstance, replaceSystemDisk, setUserData, startInstance, stopInstanceAndWait, waitForInstanceStatus } from "../cloud/ecs";
import { cannotRunCommands } from "../cloud/errors";
import { bootstrapLog, listNodes, providerIdOf, runJoin, sendSecret, type ClusterAccess, nodeOfInstance } from "../cloud/operations";
import { clusterAccess, dynamicResourceProps, type ClusterAccessInputs, type ResourceArgs } from "./access";
import { diffInputs, inputDiff } from "./diff";
import { CLEARED_USERDATA, RemovalError, removeNode, type RemovalOptions } from "../removal";
import { ATTACH_LOG, formatProblem, parameterProblem, TOKEN_PATTERN, USERDATA_HARD_LIMIT_BYTES, type Problem } from "../rules";
import { pulumiLog } from "./log";
import { withPacingLog } from "./pacing";
import { SYSTEM_CLOCK, waitFor, type Clock } from "../cloud/wait";
import { isExistingNodeOutdated, isExistingNodeRemoved, joinedSpecOf, outdatedExistingNodeMessage, REMOVED, replaceExistingNode, type ReplacementProgress } from "./existingNodeRollout";
import { PartialUpdateError } from "./partialUpdate";

/** Bump when the provider's behaviour changes: Pulumi cannot see code changes of a dynamic provider. */
export const NODE_MEMBERSHIP_PROVIDER_VERSION = "6";

/** The outputs of a NodeMembership that are secrets (its state echoes its inputs: the attach script and the token). */
export const NODE_MEMBERSHIP_SECRET_OUTPUTS = ["userData", "token"] as const;

/** Where the attach script logs on the node. */
export { ATTACH_LOG };

export type MembershipMode = "manual" | "auto" | "ssh";

export interface NodeMembershipInputs extends ClusterAccessInputs {
    /** The existing ECS instance. Required. */
    instanceId: string;
    /** How the instance joins: `manual` (Cloud Assistant), `auto` (userdata + system disk replacement) or `ssh` (script run by a remote.Command). Required. */
    mode: MembershipMode;
    /** The rendered attach script (secret: pass it as one), set as userdata in `auto` mode. Default none (required in `auto` mode). */
    userData?: string;
    /** The cluster's saved attach command, invoked in `manual` mode. Default none (required in `manual` mode). */
    attachCommandId?: string;
    /** The bootstrap token (secret), sent sealed to the instance in `manual` mode. Default none (through admission no token is sent). */
    token?: string;
    /** `manual` mode through admission (docs/admission.md): no token is sent; the attach command gets its own. Default false. */
    admission?: boolean;
    /** The node's labels as the attach command's parameter (`key=value,...`). Default none. */
    labels?: string;
    /** The node's taints as the attach command's parameter (`key[=value]:Effect,...`). Default none. */
    taints?: string;
    /** Image for the new system disk (`auto` mode). Default none (required in `auto` mode). */
    imageId?: string;
    /** Must be true for `auto` mode, which wipes the system disk. Default false. */
    replaceSystemDisk?: boolean;
    /** Route table of the pod routes (cleaned on removal). Default none. */
    routeTableId?: string;
    /** The cluster's pod CIDR: a removal deletes only routes to the instance inside it. Default none (only the route to its Node's podCIDR). */
    podCidr?: string;
    /** Cloud Assistant timeout of the attach script (`manual`), seconds. Default 1800 (package installs). */
    attachTimeoutSeconds?: number;
    /** Bound on each wait (instance status, Node Ready), seconds. Default 900. */
    readyTimeoutSeconds?: number;
    /** Pause between checks, seconds. Default 10. */
    pollSeconds?: number;
    /** First Cloud Assistant poll delay, ms (≤ 1000). Default 1000; tests lower it. */
    pollIntervalMs?: number;
    /** `kubectl drain --timeout` on removal, seconds. Default 600. */
    drainTimeoutSeconds?: number;
    /**
     * On removal, when the instance cannot run commands (stopped, Cloud Assistant agent offline), remove it
     * anyway without `kubeadm reset`: its kubelet credentials stay on it and it registers its Node again when it
     * next runs, until `kubeadm reset -f` is run there. Default false: the removal fails with the fix.
     */
    removeWithoutReset?: boolean;
    /**
     * The spec hash of what the node becomes when it attaches (src/rules/spec.ts `existingNodeSpecHash`: labels, taints,
     * mode, `auto` image, attach script; no version). Default none: nothing is ever outdated.
     */
    spec?: string;
    /** When the node's joined spec is not `spec`: `report` (a warning) or `replace` (in place, by the update). Default `report`. */
    rollout?: "replace" | "report";
    /** Changes when the provider's code changes. */
    providerVersion?: string;
}

/** The arguments of a NodeMembership (documented in {@link NodeMembershipInputs}). */
export type NodeMembershipArgs = ResourceArgs<NodeMembershipInputs>;

export interface NodeMembershipOutputs {
    /** The Node's name. */
    nodeName: string;
    /** `<region>.<instance-id>`. */
    providerId: string;
    /**
     * The spec hash the node joined with (its `spec` at the create, or at the update that replaced it); `removed` while
     * a replacement has taken it out and not attached it again.
     */
    joinedSpec?: string;
    /** A replacement attached it again with `joinedSpec` and failed before it saw the Node Ready and the cluster valid. */
    awaitingReady?: boolean;
}

/** The id of a membership (`instanceId` replaces it: one id per instance). */
function membershipId(instanceId: string): string {
    return `${instanceId}/membership`;
}

/** Problems that stop a membership before any call (every one listed). */
export function membershipProblems(inputs: NodeMembershipInputs): Problem[] {
    const problems: Problem[] = [];
    const problem = (path: string, reason: string) => problems.push({ path, reason });
    if (!["manual", "auto", "ssh"].includes(inputs.mode)) problem("mode", `must be manual, auto or ssh, got "${inputs.mode}"`);
    if (inputs.mode === "auto" && inputs.replaceSystemDisk !== true) {
        problem("replaceSystemDisk", `mode auto replaces the system disk of ${inputs.instanceId} (all data on it is lost); ` +
            "set replaceSystemDisk: true to confirm, or use mode: manual");
    }
    if (inputs.mode === "auto" && !inputs.imageId) problem("imageId", "mode auto needs the image for the new system disk");
    if (inputs.mode === "auto" && !inputs.userData) problem("userData", "mode auto needs the attach script as userdata");
    if (inputs.mode === "manual" && !inputs.attachCommandId) problem("attachCommandId", "mode manual needs the cluster's saved attach command");
    if (inputs.mode === "manual" && !inputs.admission && !TOKEN_PATTERN.test(inputs.token ?? "")) problem("token", "mode manual needs the existing nodes' bootstrap token (BootstrapToken.token)");
    for (const name of ["labels", "taints"] as const) {
        const reason = inputs.mode === "manual" ? parameterProblem(name, inputs[name] ?? "") : undefined;
        if (reason) problem(name, reason);
    }
    if (Buffer.byteLength(inputs.userData ?? "", "utf8") > USERDATA_HARD_LIMIT_BYTES) problem("userData", `the attach script is above ECS's ${USERDATA_HARD_LIMIT_BYTES / 1024} KB userdata limit`);
    return problems;
}

interface Waits { timeoutMs: number; pollMs: number }

function waitsOf(inputs: NodeMembershipInputs): Waits {
    return { timeoutMs: (inputs.readyTimeoutSeconds ?? 900) * 1000, pollMs: (inputs.pollSeconds ?? 10) * 1000 };
}

function accessOf(inputs: NodeMembershipInputs): ClusterAccess {
    return clusterAccess(inputs);
}

async function waitForStatus(region: string, instanceId: string, want: string, w: Waits, log: (m: string) => void): Promise<void> {
    await waitForInstanceStatus(region, instanceId, want, { pollMs: w.pollMs, timeoutMs: w.timeoutMs, log, fix: "check existingNodes[].instanceId" });
}

/** Waits (bounded) until the Node of the instance is Ready; returns its name. */
export async function waitForNodeReady(inputs: NodeMembershipInputs, log: (m: string) => void = () => undefined): Promise<NodeMembershipOutputs> {
    const providerId = providerIdOf(inputs.region, inputs.instanceId);
    const w = waitsOf(inputs);
    const name = await waitFor(async () => {
        const node = nodeOfInstance(await listNodes(accessOf(inputs)), inputs.region, inputs);
        if (node?.ready) return { done: true, value: node.name };
        return { done: false, state: node ? `node ${node.name} registered, not Ready yet` : "no node registered yet" };
    }, { timeoutMs: w.timeoutMs, firstDelayMs: w.pollMs, maxDelayMs: w.pollMs, factor: 1, log: (state) => log(`${inputs.instanceId}: waiting for node Ready (${state})`), logEveryMs: 3 * w.pollMs - 1 },
    (state) => new Error(`${inputs.instanceId} did not become a Ready node (${providerId}) within ${Math.round(w.timeoutMs / 1000)} s: ${state}.\n` +
        `  fix: look at ${ATTACH_LOG} on ${inputs.instanceId} (or run \`npm run doctor\`); \`pulumi up\` again resumes the wait.`));
    log(`${inputs.instanceId}: node ${name} is Ready`);
    return { nodeName: name, providerId };
}

/** Invokes the cluster's saved attach command on the running instance over Cloud Assistant. */
async function attachManually(inputs: NodeMembershipInputs, log: (m: string) => void): Promise<void> {
    log(`${inputs.instanceId}: running the attach command over Cloud Assistant`);
    let channel: string;
    try {
        // Through admission nothing is sent: the channel id names no channel (the bootstrap command ignores it).
        channel = inputs.admission ? "0".repeat(32) : await sendSecret(accessOf(inputs), inputs.instanceId, inputs.token ?? "");
    } catch (err) {
        throw new Error(`attaching ${inputs.instanceId} failed before the join: its one-use channel key could not be made: ${(err as Error).message}\n` +
            `  fix: start ${inputs.instanceId} and make sure its Cloud Assistant agent runs and openssl >= 1.1.1 is installed, then run \`pulumi up\` again.`);
    }
    try {
        await runJoin(inputs.region, "attach", inputs.attachCommandId ?? "", inputs.instanceId, { labels: inputs.labels ?? "", taints: inputs.taints ?? "", channel },
            { timeoutSeconds: inputs.attachTimeoutSeconds ?? 1800, pollIntervalMs: inputs.pollIntervalMs });
    } catch (err) {
        const code = err instanceof CommandError ? err.errorCode : "";
        if (cannotRunCommands(code)) {
            throw new Error(`attaching ${inputs.instanceId} failed: ${(err as Error).message}\n  fix: start ${inputs.instanceId} and make sure its Cloud Assistant agent runs ` +
                "(or give a `connection` to use SSH), then run `pulumi up` again.");
        }
        // The attach command's own output may echo its join material: read the bootstrap log instead (token secrets are blanked on the node).
        const tail = await bootstrapLog(accessOf(inputs), inputs.instanceId).catch(() => "(could not read the bootstrap log)");
        throw new Error(`attaching ${inputs.instanceId} failed: ${(err as Error).message}. Last lines of its bootstrap log:\n${tail}\n` +
            `  fix: read ${ATTACH_LOG} on ${inputs.instanceId}; the script is re-runnable, then run \`pulumi up\` again.`);
    }
}

/**
 * userdata → stop → replace the system disk → start; cloud-init then runs the attach script. The new
 * system disk keeps the instance's key pair (ReplaceSystemDisk with its `KeyPairName`, as Terraform does):
 * `PasswordInherit` would mean the image's preset password, not the instance's, so an instance that logs in
 * by password only is refused before anything changes. A `Stopped` instance is not stopped again; one
 * `Stopping` or `Starting` is waited out. docs/upstream.md#pitfall-passwordinherit, #ecs-stop-start.
 */
async function attachByReimage(inputs: NodeMembershipInputs, log: (m: string) => void): Promise<void> {
    const { region, instanceId } = inputs;
    const w = waitsOf(inputs);
    const instance = await describeInstance(region, instanceId);
    if (!instance) throw new Error(`ECS instance ${instanceId} does not exist in ${region}; check existingNodes[].instanceId`);
    if (!instance.keyPairName) {
        throw new Error(`${instanceId} logs in by password only: mode auto replaces its system disk, and the new disk would keep only the image's preset ` +
            "password (ECS cannot carry the instance's password over).\n  fix: bind a key pair to the instance (ECS console, or AttachKeyPair), or use mode: manual; nothing was changed.");
    }
    await setUserData(region, instanceId, inputs.userData ?? "");
    log(`${instanceId}: userdata set to the attach script`);
    await stopAndWait(inputs, w, log);
    await replaceSystemDisk(region, instanceId, inputs.imageId ?? "", { keyPairName: instance.keyPairName });
    log(`${instanceId}: replacing the system disk with ${inputs.imageId} (key pair ${instance.keyPairName} kept)`);
    await waitForStatus(region, instanceId, "Stopped", w, log);
    await startInstance(region, instanceId);
    await waitForStatus(region, instanceId, "Running", w, log);
    log(`${instanceId}: running on the new system disk; the attach script runs at first boot`);
}

/** Stops the instance unless it is stopped already; a transition in progress is waited out first (ecs.ts `stopInstanceAndWait`). */
async function stopAndWait(inputs: NodeMembershipInputs, w: Waits, log: (m: string) => void): Promise<void> {
    const { region, instanceId } = inputs;
    if (await stopInstanceAndWait(region, instanceId, { pollMs: w.pollMs, timeoutMs: w.timeoutMs, log }) === "gone") {
        throw new Error(`ECS instance ${instanceId} does not exist in ${region}; check existingNodes[].instanceId`);
    }
}

/**
 * Joins the instance and waits for its Node to be Ready.
 * @throws before any call when the inputs are refused ({@link membershipProblems})
 */
export async function joinExistingNode(inputs: NodeMembershipInputs, log: (m: string) => void = () => undefined): Promise<NodeMembershipOutputs> {
    return await attachExistingNode(inputs, log) ?? waitForNodeReady(inputs, log);
}

/**
 * The attach of {@link joinExistingNode}, without the wait for Ready: the attach command (`manual`), or userdata and a
 * new system disk booted (`auto`; nothing when the instance already is a Node); nothing in `ssh` mode.
 * @returns the Node when it already is a Ready one (`auto`: nothing done)
 * @throws before any call when the inputs are refused ({@link membershipProblems})
 */
async function attachExistingNode(inputs: NodeMembershipInputs, log: (m: string) => void): Promise<NodeMembershipOutputs | undefined> {
    const problems = membershipProblems(inputs);
    if (problems.length > 0) throw new Error(`existing node ${inputs.instanceId}:\n  ${problems.map(formatProblem).join("\n  ")}`);
    if (inputs.mode === "auto") {
        const node = nodeOfInstance(await listNodes(accessOf(inputs)), inputs.region, inputs);
        if (node?.ready) {
            log(`${inputs.instanceId}: already a Ready node (${node.name}); the system disk is left alone`);
            return { nodeName: node.name, providerId: providerIdOf(inputs.region, inputs.instanceId) };
        }
        if (node) {
            // Joined but not Ready (a resumed `pulumi up` after a slow join): re-imaging would destroy it.
            log(`${inputs.instanceId}: already joined as ${node.name} (NotReady); the system disk is left alone, waiting for Ready`);
        } else {
            await attachByReimage(inputs, log);
        }
    } else if (inputs.mode === "manual") {
        await attachManually(inputs, log);
    }
    return undefined;
}

type State = NodeMembershipInputs & NodeMembershipOutputs;

/**
 * Another instance or another way of joining means leaving cleanly, then joining again. A new script (a rotated
 * token, more labels), image, attach command or command ids does not: the node is already in, and re-joining
 * would drain it; those are updates and take effect at the next join (`pulumi up --replace <urn>`). Whether it
 * joins through admission is an update too (it was once in neither list: version 3 fixed that).
 */
const NODE_MEMBERSHIP_DIFF = inputDiff<NodeMembershipInputs>()({
    replace: ["instanceId", "region", "mode"],
    update: ["userData", "token", "admission", "attachCommandId", "labels", "taints", "commands", "imageId", "masterInstanceId", "masterInstanceIds",
        "replaceSystemDisk", "routeTableId", "podCidr", "removeWithoutReset", "attachTimeoutSeconds", "readyTimeoutSeconds", "pollSeconds",
        "pollIntervalMs", "drainTimeoutSeconds", "spec", "rollout", "providerVersion"],
    ignore: [],
});

export const nodeMembershipProvider: pulumi.dynamic.ResourceProvider = withPacingLog({
    async check(_olds: NodeMembershipInputs, news: NodeMembershipInputs) {
        const failures = membershipProblems(news).map((p) => ({ property: p.path, reason: p.reason }));
        return { inputs: news, failures };
    },
    async create(inputs: NodeMembershipInputs) {
        const outs = await joinExistingNode(inputs, (m) => pulumiLog().info(m));
        return { id: membershipId(inputs.instanceId), outs: { ...inputs, ...outs, joinedSpec: inputs.spec } };
    },
    async diff(_id: string, olds: State, news: NodeMembershipInputs) {
        const diff = diffInputs(NODE_MEMBERSHIP_DIFF, olds, news);
        // Every preview and `pulumi up` says what happens to an outdated node; one whose rollout allows it is an update
        // (its replacement) until it is replaced, also when no input changed (a replacement that stopped half-way). A
        // node a replacement took out, or attached and did not see Ready, is an update whatever its spec and rollout.
        const updating = diff.replaces.length === 0;
        const removed = updating && isExistingNodeRemoved(olds);
        const outdated = updating && isExistingNodeOutdated(olds, news);
        const awaiting = updating && olds.awaitingReady === true;
        if (removed) pulumiLog().warn(outdatedExistingNodeMessage(olds, news));
        else if (outdated && news.rollout === "replace") pulumiLog().info(outdatedExistingNodeMessage(olds, news));
        else if (outdated) pulumiLog().warn(outdatedExistingNodeMessage(olds, news));
        if (awaiting && !removed) {
            pulumiLog().info(`existing node ${news.instanceId} attached again with spec ${olds.joinedSpec} and was not seen Ready and valid: this update waits for it and validates (it is not removed again)`);
        }
        const resumes = removed || awaiting || (outdated && news.rollout === "replace");
        return { ...diff, changes: diff.changes || resumes, deleteBeforeReplace: true };
    },
    async update(_id: string, olds: State, news: NodeMembershipInputs) {
        return { outs: await updateMembership(olds, news) };
    },
    async read(id: string, props: State) {
        return { id, props: await refreshedMembership(props) };
    },
    async delete(_id: string, props: State) {
        await startStoppedByReplacement(props);
        // Looked up by provider id or IP, not taken from state: the Node may be gone already (a resumed delete,
        // or the CCM removed it after the instance was released). An attach still running is stopped before the reset.
        await removeNode({ instanceId: props.instanceId, kind: "existing", joinCommandId: props.mode === "manual" ? props.attachCommandId : undefined }, removalOptionsOf(props));
    },
});

/**
 * An `auto` node a replacement took out (recorded {@link REMOVED}) may have been left Stopped, on its way to a new
 * system disk: its delete starts the user's instance again, its userdata cleared first so that no attach runs at that
 * boot; the removal that follows then finds it Running (its reset needs Cloud Assistant).
 */
async function startStoppedByReplacement(props: State): Promise<void> {
    if (props.mode !== "auto" || !isExistingNodeRemoved(props)) return;
    const instance = await describeInstance(props.region, props.instanceId);
    if (!instance || (instance.status !== "Stopped" && instance.status !== "Stopping")) return;
    const log = (m: string) => pulumiLog().info(m);
    const w = waitsOf(props);
    log(`${props.instanceId}: stopped by a replacement after its removal: starting it again (its userdata cleared: nothing attaches it)`);
    await setUserData(props.region, props.instanceId, CLEARED_USERDATA);
    await waitForStatus(props.region, props.instanceId, "Stopped", w, log);
    await startInstance(props.region, props.instanceId);
    await waitForStatus(props.region, props.instanceId, "Running", w, log);
}

/** The removal core's options for this node, from its inputs (its delete and its replacement). */
function removalOptionsOf(props: NodeMembershipInputs): RemovalOptions {
    const log = pulumiLog();
    return {
        region: props.region, masterInstanceIds: accessOf(props).masterInstanceIds, commands: props.commands, routeTableId: props.routeTableId, podCidr: props.podCidr,
        drainTimeoutSeconds: props.drainTimeoutSeconds, pollIntervalMs: props.pollIntervalMs, removeWithoutReset: props.removeWithoutReset,
        log: (m) => log.info(m), warn: (m) => log.warn(m),
    };
}

/**
 * An update: the new inputs stored; an outdated node replaced in place when its rollout allows it, else reported and
 * its joined spec kept. A node a replacement took out is attached again whatever its spec and rollout; one it attached
 * again and did not see Ready is waited for and validated. A replacement that fails once its removal started throws a
 * {@link PartialUpdateError} whose state records how far it got: `joinedSpec: removed`, or the new spec with
 * `awaitingReady` once it attached.
 * @param clock the replacement's validations wait on it. Default the system's.
 */
export async function updateMembership(olds: State, news: NodeMembershipInputs, clock: Clock = SYSTEM_CLOCK): Promise<State> {
    const log = pulumiLog();
    const kept = (joinedSpec: string | undefined, more: Partial<State> = {}): State =>
        ({ ...news, nodeName: olds.nodeName, providerId: olds.providerId, joinedSpec, ...more });
    const removed = isExistingNodeRemoved(olds);
    const replace = removed || (isExistingNodeOutdated(olds, news) && news.rollout === "replace");
    // Attached again and not seen Ready: wait and validate; still outdated (the spec changed again since) with replace: replace it.
    const finish = !replace && olds.awaitingReady === true;
    if (!replace && !finish) {
        if (isExistingNodeOutdated(olds, news)) log.warn(outdatedExistingNodeMessage(olds, news));
        return kept(joinedSpecOf(olds, news));
    }
    if (removed) log.warn(outdatedExistingNodeMessage(olds, news));
    const progress: ReplacementProgress = { removed: false, attached: false };
    const join = { attach: async (inputs: NodeMembershipInputs) => { await attachExistingNode(inputs, (m) => log.info(m)); }, ready: (inputs: NodeMembershipInputs) => waitForNodeReady(inputs, (m) => log.info(m)) };
    // What the node runs: the spec it attached with in this update (also a resumed wait that found no Node and attached
    // it again, with today's inputs), else the one recorded when it attached before.
    const joined = () => (finish && !progress.attached ? olds.joinedSpec : news.spec);
    try {
        const outs = await replaceExistingNode(news, removalOptionsOf(news), join, (m) => log.info(m), progress, { clock, resume: finish ? "attached" : removed ? "removed" : undefined });
        if (finish && !progress.attached && isExistingNodeOutdated(olds, news)) log.warn(outdatedExistingNodeMessage(olds, news));
        return { ...news, ...outs, joinedSpec: joined() };
    } catch (err) {
        if (!progress.attached && !progress.removed) throw err;
        // The error may quote what the node wrote (its bootstrap log): the Pulumi log shows it, the state's reasons carry only our own words.
        log.error((err as Error).message);
        const id = news.instanceId;
        const step = err instanceof RemovalError ? `its removal (step ${err.step})` : progress.step ?? "its replacement";
        if (progress.attached) {
            throw new PartialUpdateError(err as Error, membershipId(id), kept(joined(), { awaitingReady: true }),
                `existing node ${id}: its replacement failed at ${step}, after it was attached again (the error is in the log above).\n` +
                `  fix: see why (\`npm run doctor\`) and fix it; the next \`pulumi up\` waits for it and validates (or attaches it again if it has no Node).`);
        }
        throw new PartialUpdateError(err as Error, membershipId(id), kept(REMOVED),
            `existing node ${id}: its replacement failed at ${step}, after it started taking the node out of the cluster (the error is in the log above).\n` +
            `  fix: see why (\`npm run doctor\`) and fix it; the next \`pulumi up\` attaches it again, whatever its spec and rollout.`);
    }
}

/**
 * A refresh (`pulumi refresh`, `pulumi up --refresh`): what the state says about the node, checked against the cluster
 * with one listing of its Nodes. A node the state records as joined that has no Node is recorded as out
 * ({@link REMOVED}): a run killed mid-replacement wrote nothing, and the next `pulumi up` then attaches it again
 * whatever its spec and rollout. Anything else is kept as it was: a Node in the cluster (even one a removal marked:
 * its kubelet could write that mark too; a warning says so), a node recorded out already or attached again and awaited,
 * an `ssh` node (an update cannot attach it again: doctor reports it), a cluster that cannot be read (a warning; the
 * refresh goes on).
 */
export async function refreshedMembership(props: State): Promise<State> {
    if (props.mode === "ssh" || isExistingNodeRemoved(props)) return props;
    const log = pulumiLog();
    let node;
    try {
        node = nodeOfInstance(await listNodes(accessOf(props)), props.region, props);
    } catch (err) {
        log.warn(`existing node ${props.instanceId}: the refresh could not list the cluster's Nodes, its state is kept: ${(err as Error).message}`);
        return props;
    }
    // Only the absence of a Node counts: a Node's annotations and cordon are writable by its own kubelet, which must not
    // be able to have the next `pulumi up` reset its machine and send it join material. A node that joined again
    // (`awaitingReady`) without a Node yet is left to the update, which waits for it first.
    if (node || props.awaitingReady) {
        if (node?.removing) log.warn(`existing node ${props.instanceId}: its Node ${node.name} carries the removal's mark (a run stopped during its drain?); ` +
            "its state is kept: `kubectl uncordon` it if it should stay, or run `pulumi up` to go on with its replacement when its spec changed");
        return props;
    }
    log.warn(`existing node ${props.instanceId} is not in the cluster (no Node): recorded as out; the next \`pulumi up\` attaches it again, whatever its spec and rollout`);
    return { ...props, joinedSpec: REMOVED, awaitingReady: undefined };
}

/** An existing ECS instance as a node of the cluster. */
export class NodeMembership extends pulumi.dynamic.Resource {
    /** The Node's name. */
    declare readonly nodeName: pulumi.Output<string>;
    /** `<region>.<instance-id>`. */
    declare readonly providerId: pulumi.Output<string>;
    /** The spec hash asked for (its input), and the one the node joined with (undefined in state written before version 5; `removed` while a replacement has it out). */
    declare readonly spec: pulumi.Output<string | undefined>;
    declare readonly joinedSpec: pulumi.Output<string | undefined>;

    constructor(name: string, args: NodeMembershipArgs, opts?: pulumi.CustomResourceOptions) {
        super(nodeMembershipProvider, name, ...dynamicResourceProps(["nodeName", "providerId", "joinedSpec"], NODE_MEMBERSHIP_PROVIDER_VERSION, args, NODE_MEMBERSHIP_SECRET_OUTPUTS, opts));
    }
}
