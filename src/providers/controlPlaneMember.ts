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
import { listNodes, type ClusterAccess } from "../cloud/operations";
import { clusterAccess, dynamicResourceProps, type ClusterAccessInputs, type ResourceArgs } from "./access";
import { diffInputs, inputDiff } from "./diff";
import { removeNode } from "../removal";
import { backupBeforeChange } from "../recovery/backup";
import { checkQuorum, joinControlPlaneMember } from "../recovery/member";
import { pulumiLog } from "./log";
import { withPacingLog } from "./pacing";

/** Secrets from a master for one join. */
export type { JoinSecrets } from "../cloud/operations";

export interface ControlPlaneMemberInputs extends ClusterAccessInputs {
    /** The master to join. Required. */
    memberInstanceId: string;
    /** The cluster's saved control-plane join command (the attach script with this cluster's join material; token and certificate key are its parameters). Required. */
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

export { checkQuorum, joinControlPlaneMember } from "../recovery/member";

/**
 * 3: join-secrets runs once with RunCommand (`joinSecretsScript`), no longer as a saved command.
 * 4: the etcd quorum is checked, and an etcd backup taken (src/recovery/backup.ts), before a join and before a removal;
 * a new master 0 (`masterInstanceId`) updates, never replaces.
 * 5: the removal stops a control-plane join still running on the member before its reset, and checks it is not back
 * as a Node afterwards; pacing of every cloud call.
 * 6: the join's quorum check counts the member among the masters: master 0's own member (whose `masterInstanceIds` are
 * masters 1..n) was refused as "a member too many" when master 0 was re-created.
 */
export const CONTROL_PLANE_MEMBER_PROVIDER_VERSION = "6";

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
