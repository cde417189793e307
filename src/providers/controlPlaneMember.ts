/**
 * ControlPlaneMember: joins master 1..n-1 with `kubeadm join --control-plane` over Cloud Assistant.
 * On create it asks a master for a fresh certificate key (`kubeadm init phase upload-certs
 * --upload-certs`, valid 2 h) and a short-lived token (30 min) — the join-secrets operation, run once with
 * RunCommand (never saved: whoever could invoke a saved one could point it at a key of their own), which
 * answers them sealed to a key this provider made for that one call — then has the member make a one-use
 * key pair (channel-open), seals both secrets to it and invokes the cluster's saved control-plane join
 * command with the sealed text (src/cloud/channel.ts: no Cloud Assistant record holds them in clear), then
 * waits for its Node to be Ready. On delete it runs the removal core for a control-plane node: drain,
 * `kubeadm reset` (which removes its etcd member), delete Node. Joins are serialised by the caller (each
 * member depends on the previous one): etcd grows one member at a time. Before a join and before a removal it checks
 * the etcd quorum (src/recovery/quorum.ts) and takes an etcd backup (src/recovery/backup.ts); `pulumi up --replace` of
 * a master 1..n runs delete (the member leaves) then create (a fresh member joins): docs/disaster-recovery.md#lost-member.
 */
import * as pulumi from "@pulumi/pulumi";
import { CommandError } from "../cloud/cloudAssistant";
import { bootstrapLog, joinSecrets, listNodes, providerIdOf, runJoin, sendSecret, type ClusterAccess, type JoinSecrets, nodeOfInstance } from "../cloud/operations";
import { clusterAccess, dynamicResourceProps, type ClusterAccessInputs, type ResourceArgs } from "./access";
import { diffInputs, inputDiff } from "./diff";
import { waitFor } from "../cloud/wait";
import { removeNode } from "../removal";
import { describeInstance } from "../cloud/ecs";
import { joinProblem, readEtcdMembers, removalProblem } from "../recovery/quorum";
import { backupBeforeChange } from "../recovery/backup";
import { pulumiLog } from "./log";
import { withPacingLog } from "./pacing";

/** Secrets from a master for one join. */
export type { JoinSecrets } from "../cloud/operations";

export interface ControlPlaneMemberInputs extends ClusterAccessInputs {
    /** The master to join. */
    memberInstanceId: string;
    /** The cluster's saved control-plane join command (the attach script with this cluster's join material; token and certificate key are its parameters). */
    joinCommandId: string;
    /** The join-secrets operation, `renderOperation("join-secrets")` (its recipient filled in at run time). Required. */
    joinSecretsScript: string;
    /** Route table, for the pod-route clean-up on delete. Default none. */
    routeTableId?: string;
    /** The cluster's pod CIDR: a removal deletes only routes to the instance inside it. Default none (only the route to its Node's podCIDR). */
    podCidr?: string;
    /** Bound on the join (package install + join), seconds. Default 1800. */
    joinTimeoutSeconds?: number;
    /** Bound on the wait for Ready after the join, seconds. Default 600. */
    readyTimeoutSeconds?: number;
    /** Pause between Ready checks, seconds. Default 10. */
    pollSeconds?: number;
    providerVersion?: string;
}

/** The arguments of a ControlPlaneMember (documented in {@link ControlPlaneMemberInputs}). */
export type ControlPlaneMemberArgs = ResourceArgs<ControlPlaneMemberInputs>;

/** Joins the member; returns its Node name once Ready. */
export async function joinControlPlaneMember(inputs: ControlPlaneMemberInputs, log: (m: string) => void = () => undefined): Promise<string> {
    const { region, memberInstanceId } = inputs;
    const pollMs = (inputs.pollSeconds ?? 10) * 1000;
    const pollIntervalMs = Math.min(1000, pollMs);
    const master: ClusterAccess = { ...clusterAccess(inputs), pollIntervalMs };
    const providerId = providerIdOf(region, memberInstanceId);

    const nodes = await listNodes(master);
    const member = { instanceId: memberInstanceId };
    const existing = nodeOfInstance(nodes, region, member);
    if (!existing) {
        await checkQuorum(master, nodes, memberInstanceId, "join", log);
        await backupBeforeChange(master, `joining control-plane member ${memberInstanceId}`, log, log);
        log(`asking a master (${master.masterInstanceIds.join(" or ")}) for a certificate key and a join token`);
        const secrets: JoinSecrets = await joinSecrets(master, inputs.joinSecretsScript);
        log(`joining ${memberInstanceId} to the control plane (installs packages, then kubeadm join --control-plane)`);
        // The member's API server needs the masters' whole encryption config too (when Secrets are encrypted): same channel.
        const channel = await sendSecret(master, memberInstanceId, `${secrets.token} ${secrets.certificateKey} ${secrets.encryptionConfig ?? "-"}`);
        try {
            await runJoin(region, "control-plane-join", inputs.joinCommandId, memberInstanceId, { channel },
                { timeoutSeconds: inputs.joinTimeoutSeconds ?? 1800, pollIntervalMs });
        } catch (err) {
            const tail = await bootstrapLog(master, memberInstanceId).catch(() => "(could not read the join log)");
            const code = err instanceof CommandError ? ` (${err.errorCode || `exit ${err.exitCode}`})` : "";
            throw new Error(`kubeadm join --control-plane failed on ${memberInstanceId}${code}. Last lines of its bootstrap log (/var/log/alicloud-kubeadm/):\n${tail}\n` +
                "Fix the cause and run `pulumi up` again: the join script cleans up a failed join before retrying.");
        }
    } else {
        log(`${memberInstanceId} is already a node (${existing.name}); waiting for Ready`);
    }

    const name = await waitFor(async () => {
        const node = nodeOfInstance(await listNodes(master), region, member);
        return node?.ready ? { done: true, value: node.name } : { done: false, state: node ? `node ${node.name} NotReady` : `no Node with provider id ${providerId}` };
    }, { timeoutMs: (inputs.readyTimeoutSeconds ?? 600) * 1000, firstDelayMs: pollMs, maxDelayMs: pollMs, factor: 1 },
    (state) => new Error(`control-plane member ${memberInstanceId} joined but is not Ready after ${inputs.readyTimeoutSeconds ?? 600} s ` +
        `(${state}); check the pod network and \`npm run doctor\``));
    log(`control-plane member ${memberInstanceId} is Ready as ${name}`);
    return name;
}

/**
 * The etcd quorum check before a step on `memberInstanceId` (docs/disaster-recovery.md#lost-member): read the members and
 * their health through the first other master whose Node is Ready, then refuse a removal that would leave no healthy
 * quorum, or a join into a cluster that is not wholly healthy or already has a member per master. With no other Ready
 * master there is nothing to read through: the join's own preflight and the removal core decide.
 */
export async function checkQuorum(access: ClusterAccess, nodes: Awaited<ReturnType<typeof listNodes>>, memberInstanceId: string, step: "join" | "remove",
    log: (m: string) => void, memberNodeName?: string): Promise<void> {
    const via = access.masterInstanceIds.filter((m) => m !== memberInstanceId)
        .map((m) => nodeOfInstance(nodes, access.region, { instanceId: m })).find((n) => n?.ready);
    if (!via) return;
    const peerIp = (await describeInstance(access.region, memberInstanceId))?.privateIp ?? "";
    const members = await readEtcdMembers(access, via.name);
    const problem = step === "join"
        ? joinProblem(members, access.masterInstanceIds.length, { peerIp })
        : removalProblem(members, { name: memberNodeName, peerIp });
    if (problem) throw new Error(`control-plane member ${memberInstanceId}: ${step === "join" ? "joining" : "removing"} it now is refused: ${problem}`);
    log(`etcd quorum checked through ${via.name} before ${step === "join" ? "joining" : "removing"} ${memberInstanceId}: ` +
        `${members.filter((m) => m.healthy).length} of ${members.length} members healthy`);
}

/**
 * 3: join-secrets runs once with RunCommand (`joinSecretsScript`), no longer as a saved command.
 * 4: the etcd quorum is checked, and an etcd backup taken (src/recovery/backup.ts), before a join and before a removal;
 * a new master 0 (`masterInstanceId`) updates, never replaces.
 * 5: the removal stops a control-plane join still running on the member before its reset, and checks it is not back
 * as a Node afterwards; pacing of every cloud call.
 */
export const CONTROL_PLANE_MEMBER_PROVIDER_VERSION = "5";

/**
 * The outputs of a ControlPlaneMember that are secrets: none. Its join secrets are made on a master and
 * travel sealed (src/cloud/channel.ts); neither its inputs nor its outputs hold them.
 */
export const CONTROL_PLANE_MEMBER_SECRET_OUTPUTS = [] as const;

/**
 * Another member is a new join (deleteBeforeReplace: the old member leaves etcd first). A new master 0 (a re-created
 * master 0 re-joining, docs/disaster-recovery.md), new command ids (a changed script), masters or clean-up settings are
 * an update, never a replacement, which would remove the member from etcd. The waits are read by the join alone and the
 * region never changes under a member: neither is a change.
 */
const CONTROL_PLANE_MEMBER_DIFF = inputDiff<ControlPlaneMemberInputs>()({
    replace: ["memberInstanceId"],
    update: ["masterInstanceId", "joinCommandId", "joinSecretsScript", "commands", "masterInstanceIds", "routeTableId", "podCidr", "providerVersion"],
    ignore: ["region", "pollIntervalMs", "joinTimeoutSeconds", "readyTimeoutSeconds", "pollSeconds"],
});

export const controlPlaneMemberProvider: pulumi.dynamic.ResourceProvider = withPacingLog({
    async create(inputs: ControlPlaneMemberInputs) {
        const nodeName = await joinControlPlaneMember(inputs, (m) => pulumiLog().info(m));
        return { id: inputs.memberInstanceId, outs: { ...inputs, nodeName } };
    },
    async diff(_id: string, olds: ControlPlaneMemberInputs, news: ControlPlaneMemberInputs) {
        return { ...diffInputs(CONTROL_PLANE_MEMBER_DIFF, olds, news), deleteBeforeReplace: true };
    },
    async update(_id: string, olds: ControlPlaneMemberInputs & { nodeName: string }, news: ControlPlaneMemberInputs) {
        return { outs: { ...news, nodeName: olds.nodeName } };
    },
    async delete(_id: string, props: ControlPlaneMemberInputs & { nodeName?: string }) {
        const log = pulumiLog();
        const access: ClusterAccess = { ...clusterAccess(props), pollIntervalMs: Math.min(1000, (props.pollSeconds ?? 10) * 1000) };
        await checkQuorum(access, await listNodes(access), props.memberInstanceId, "remove", (m) => log.info(m), props.nodeName);
        await backupBeforeChange(access, `removing control-plane member ${props.memberInstanceId}`, (m) => log.info(m), (m) => log.warn(m));
        // A control-plane join still running there is stopped before the reset (it would join the member again).
        await removeNode({ instanceId: props.memberInstanceId, kind: "control-plane", joinCommandId: props.joinCommandId }, {
            region: props.region, masterInstanceIds: clusterAccess(props).masterInstanceIds, commands: props.commands, routeTableId: props.routeTableId, podCidr: props.podCidr,
            pollIntervalMs: Math.min(1000, (props.pollSeconds ?? 10) * 1000), log: (m) => log.info(m), warn: (m) => log.warn(m),
        });
    },
});

/** A master 1..n-1 joined with `kubeadm join --control-plane` (see the module comment). */
export class ControlPlaneMember extends pulumi.dynamic.Resource {
    declare readonly nodeName: pulumi.Output<string>;

    constructor(name: string, args: ControlPlaneMemberArgs, opts?: pulumi.CustomResourceOptions) {
        super(controlPlaneMemberProvider, name, ...dynamicResourceProps(["nodeName"], CONTROL_PLANE_MEMBER_PROVIDER_VERSION, args, CONTROL_PLANE_MEMBER_SECRET_OUTPUTS, opts));
    }
}
