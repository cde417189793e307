/**
 * A control-plane member's join and the etcd quorum check before a member change (docs/disaster-recovery.md#lost-member):
 * the steps the ControlPlaneMember provider runs (src/providers/controlPlaneMember.ts), and the restore when it re-joins
 * the other masters (src/recovery/restoreApply.ts). The join asks a master for a certificate key and a token
 * (join-secrets, sealed to a key made for that call), sends them sealed to the member's one-use key, invokes the saved
 * control-plane join command there, then waits for its Node to be Ready.
 */
import { CommandError } from "../cloud/cloudAssistant";
import { describeInstance, describeInstances } from "../cloud/ecs";
import { bootstrapLog, invokeOnMaster, joinSecrets, listNodes, nodeOfInstance, providerIdOf, runJoin, sendSecret, type ClusterAccess, type JoinSecrets } from "../cloud/operations";
import { waitFor } from "../cloud/wait";
import type { NodeCommandIds } from "../rules";
import { backupBeforeChange } from "./backup";
import { joinProblem, readEtcdMembers, removalProblem, staleMembers, type EtcdMember } from "./quorum";

/** What a join needs (the ControlPlaneMember's inputs are documented in src/providers/controlPlaneMember.ts). */
export interface JoinMemberInputs {
    region: string;
    /** Master 0. */
    masterInstanceId: string;
    /** Every master, master 0 first (default `[masterInstanceId]`); the Kubernetes-side operations run on the first that can. */
    masterInstanceIds?: string[];
    commands: NodeCommandIds;
    /** The master to join. */
    memberInstanceId: string;
    /** The cluster's saved control-plane join command. */
    joinCommandId: string;
    /** The join-secrets operation, `renderOperation("join-secrets")`. */
    joinSecretsScript: string;
    /** Bound on the join, seconds. Default 1800. */
    joinTimeoutSeconds?: number;
    /** Bound on the wait for Ready after the join, seconds. Default 600. */
    readyTimeoutSeconds?: number;
    /** Pause between Ready checks, seconds. Default 10. */
    pollSeconds?: number;
}

/** Joins the member; returns its Node name once Ready. */
export async function joinControlPlaneMember(inputs: JoinMemberInputs, log: (m: string) => void = () => undefined): Promise<string> {
    const { region, memberInstanceId } = inputs;
    const pollMs = (inputs.pollSeconds ?? 10) * 1000;
    const pollIntervalMs = Math.min(1000, pollMs);
    const masters = inputs.masterInstanceIds?.length ? inputs.masterInstanceIds : [inputs.masterInstanceId];
    const master: ClusterAccess = { region, masterInstanceIds: masters, commands: inputs.commands, pollIntervalMs };
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
    let members = await readEtcdMembers(access, via.name);
    if (step === "join") members = await sweepStaleMembers(access, via.name, members, log);
    // Every master counts, the member too: master 0's own member reaches the cluster through masters 1..n alone.
    const masters = new Set([...access.masterInstanceIds, memberInstanceId]).size;
    const problem = step === "join"
        ? joinProblem(members, masters, { peerIp })
        : removalProblem(members, { name: memberNodeName, peerIp });
    if (problem) throw new Error(`control-plane member ${memberInstanceId}: ${step === "join" ? "joining" : "removing"} it now is refused: ${problem}`);
    log(`etcd quorum checked through ${via.name} before ${step === "join" ? "joining" : "removing"} ${memberInstanceId}: ` +
        `${members.filter((m) => m.healthy).length} of ${members.length} members healthy`);
}


/**
 * Before a member joins: removes the members whose master vanished outside Pulumi (src/recovery/quorum.ts staleMembers:
 * unhealthy, named after an instance that no longer exists), one at a time through the healthy master `etcdNode`, each
 * only when the members left keep a healthy quorum (removalProblem). Otherwise they stay, and the join's own check
 * refuses with the reason. Returns the members as etcd reports them afterwards.
 */
export async function sweepStaleMembers(access: ClusterAccess, etcdNode: string, members: EtcdMember[], log: (m: string) => void): Promise<EtcdMember[]> {
    const named = members.filter((m) => !m.healthy && m.name.startsWith(`${access.region}.`)).map((m) => m.name.slice(access.region.length + 1));
    if (named.length === 0) return members;
    const live = await describeInstances(access.region, named);
    let now = members;
    for (const stale of staleMembers(members, access.region, (id) => live.has(id))) {
        const problem = removalProblem(now, { name: stale.name });
        if (problem) {
            log(`etcd member ${stale.name} belongs to an instance that no longer exists, but is not removed: ${problem}`);
            break;
        }
        log(`removing etcd member ${stale.name} (id ${stale.id}): its instance no longer exists and it is unhealthy`);
        await invokeOnMaster(access, "etcd-member-remove", { member: stale.name, peerIp: "", etcdNode });
        now = await readEtcdMembers(access, etcdNode);
    }
    return now;
}
