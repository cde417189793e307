/**
 * The restore itself (docs/disaster-recovery.md#lost-whole-control-plane): the plan's backup onto its master, through
 * one-off Cloud Assistant commands (RunCommand of the etcd-restore operation, src/shell/ops/etcd-restore.sh), then the
 * clean-up of what the restored etcd holds that is no longer true, then the other masters re-joined as fresh members.
 *
 * Observe, then decide: the master's own record (the `status` step) says which steps are done; each step is run once
 * and recorded there, so running the restore again after it stopped continues where it stopped. Nothing secret crosses
 * Cloud Assistant in clear: the master downloads the backup itself with a GET request signed here (its headers, valid
 * 15 minutes; no credential in the URL), and opens it with the password of that one object (never the backup key), both
 * sent sealed on the secret channel (src/cloud/channel.ts).
 * A master whose API server answers is a running cluster: it is not rolled back unless asked (`force`); a new stack's own
 * cluster is discarded only when asked (`discard`).
 */
import { CommandError, runOnInstance } from "../cloud/cloudAssistant";
import { describeInstances } from "../cloud/ecs";
import { deleteNodes, listNodes, nodeOfInstance, providerIdOf, resetNode, sendSecret, type ClusterAccess } from "../cloud/operations";
import { ossUrl, signOssV4, type OssCredentials, type OssTarget } from "../cloud/oss";
import { fillOperation, OPERATIONS, type NodeCommandIds, type ParameterName } from "../rules";
import { compactShell, packShell, renderOperation } from "../shell/render";
import { removeNodes } from "../removal";
import { joinControlPlaneMember } from "./member";
import { readEtcdMembers } from "./quorum";
import type { RestorePlan } from "./restore";

/** The steps on the master, in order (each recorded there once done). */
export const RESTORE_STEPS = ["fetch", "stop", "restore", "start"] as const;
export type RestoreStep = (typeof RESTORE_STEPS)[number];


/** What the master's `status` step says. */
export interface MasterRestoreState {
    /** `existing`: a control plane (static pods) to stop and start again; `fresh`: master 0 that refused kubeadm init; `none`: neither. */
    mode: "existing" | "fresh" | "none";
    /** The steps of this restore already done there. */
    done: RestoreStep[];
    /** Another restore left unfinished there (its id and object key; `aside`: it moved the control plane's manifests aside). */
    other?: { id: string; key: string; aside?: boolean };
    /** Whether its API server answers /readyz. */
    apiReady: boolean;
    /** SHA-256 (hex) of its CA certificate file, if it has one. */
    caSha256?: string;
    /** When its CA certificate became valid (notBefore, ISO 8601), if it has one that openssl reads. */
    caSince?: string;
    /** Whether this restore discarded (or began to discard) the cluster the master ran (a new stack's own). */
    discarded: boolean;
    /**
     * The other masters whose API server answers /readyz (read until this restore's start step): the cluster still runs
     * there, with etcd's quorum, and a restore onto this master would roll it back and reset them.
     */
    othersAnswering?: string[];
    /**
     * The other masters that run (their instance is not Stopped) but could not say whether their API server answers
     * (their agent does not run a command): the cluster may run there, so they count as answering until shown otherwise.
     */
    othersUnknown?: string[];
}

/** Where and with what the restore runs. */
export interface ApplyRestoreInputs {
    region: string;
    /** Every master, master 0 first. */
    masterInstanceIds: readonly string[];
    /** The cluster's saved commands (channel-open/receive for the secret channel; list-nodes, delete-node, reset, drain… for the clean-up). */
    commands: NodeCommandIds;
    bucket: OssTarget;
    /** Credentials that may read the backup (the operator's): they sign the master's download, and never leave this process. */
    credentials: OssCredentials;
    /** The OSS endpoint the master downloads from. Default `https://oss-<region>-internal.aliyuncs.com` (inside the VPC). */
    masterOssEndpoint?: string;
    /** The route table, for the pod routes of Nodes whose instance is gone. */
    routeTableId?: string;
    podCidr?: string;
    /** The saved control-plane join command: with it, the other masters re-join as fresh members. */
    controlPlaneJoinCommandId?: string;
    /** Restore over an API server that answers (a rollback). Default false: refused. */
    force?: boolean;
    /** Into a new stack: discard the cluster its master 0 runs (its own, made by its first `pulumi up`). Default false: refused. Never a rollback (`force`). */
    discard?: boolean;
    /**
     * The backup is another stack's (`npm run restore -- --from-stack`): this stack's master 0 runs a cluster of its own,
     * made by its first `pulumi up`, which the restore discards (`kubeadm reset -f`) when its CA is not the backup's.
     * Default false: a master with another CA than the backup's is refused.
     */
    newStack?: boolean;
    /**
     * Into a new stack: its pools that may hold machines and its existing nodes, from its outputs ({@link stackMachines}):
     * a discard is refused while there is any (their machines would keep the discarded cluster's CA). Default none.
     */
    stackMachines?: readonly string[];
    /** First Cloud Assistant poll delay, ms. Default 1000 (tests lower it). */
    pollIntervalMs?: number;
    /** Bound on each re-joined master's wait for Ready, seconds. Default 600. */
    readyTimeoutSeconds?: number;
    log: (message: string) => void;
}

/** What the restore did. */
export interface RestoreOutcome {
    /** The steps run now on the master (those done before are not repeated). */
    ran: RestoreStep[];
    /** Nodes deleted because their instance no longer exists. */
    staleNodes: string[];
    /** Masters re-joined as fresh members now. */
    rejoined: string[];
    /** Masters that no longer exist: `pulumi up --refresh` re-creates them and joins them. */
    missingMasters: string[];
    /** Whether this restore discarded the cluster the master ran (a new stack's own): the stack's join information is then the discarded cluster's. */
    discarded: boolean;
}

/** Reads the `ak-restore key=value` lines of an etcd-restore step (other output, e.g. warnings, is left aside). */
export function restoreFields(output: string): Array<[string, string]> {
    return [...output.matchAll(/^ak-restore ([a-z-]+)=(.*)$/gm)].map((m) => [m[1], m[2]]);
}

/** Parses the `status` step's answer. */
export function parseRestoreState(output: string): MasterRestoreState {
    const f = restoreFields(output);
    const one = (k: string) => f.find(([name]) => name === k)?.[1];
    const mode = one("mode");
    if (mode !== "existing" && mode !== "fresh" && mode !== "none") throw new Error("the master did not answer the restore's status step (no mode)");
    const other = one("other");
    return {
        mode,
        done: (one("done") ?? "").split(",").filter((s): s is RestoreStep => (RESTORE_STEPS as readonly string[]).includes(s)),
        other: other ? { id: other.slice(0, other.indexOf(":")), key: other.slice(other.indexOf(":") + 1), aside: one("other-aside") === other.slice(0, other.indexOf(":")) } : undefined,
        apiReady: one("api") === "ready",
        caSha256: one("ca"),
        caSince: one("ca-since") || undefined,
        discarded: one("discarded") === "1",
    };
}

/** Runs one step of the etcd-restore operation on the plan's master, or on master `on` (RunCommand). */
async function runStep(i: ApplyRestoreInputs, plan: RestorePlan, peerIp: string, step: RestoreStep | "status" | "leases", channel = "0".repeat(32), discardCa = "", on = plan.target): Promise<string> {
    const values: Partial<Record<ParameterName, string>> = { step, restoreId: plan.restoreId, node: providerIdOf(i.region, on), peerIp, channel, discardCa };
    // Compacted (comments out) and packed (gzip, its header in the clear): the operation with its libraries must fit
    // RunCommand's 24 KB.
    const script = packShell(compactShell(fillOperation(renderOperation("etcd-restore"), "etcd-restore", values)));
    try {
        return await runOnInstance({
            region: i.region, instanceId: on, script, name: `alicloud-kubeadm etcd-restore ${step}`,
            timeoutSeconds: OPERATIONS["etcd-restore"].timeoutSeconds, pollIntervalMs: i.pollIntervalMs, pollMaxIntervalMs: 10_000,
        });
    } catch (err) {
        const fix = err instanceof CommandError && err.exitCode !== null ? "" : ` Bring the master's Cloud Assistant agent online, then run the restore again with \`--snapshot ${plan.object.key}\` (the same backup): it continues where it stopped.`;
        throw new Error(`restore step ${step} on master ${on} failed: ${(err as Error).message}${fix}`);
    }
}

/** The master's private IP (its etcd peer address). */
async function peerIpOf(i: ApplyRestoreInputs, instanceId: string): Promise<string> {
    const ip = (await describeInstances(i.region, [instanceId])).get(instanceId)?.privateIp;
    if (!ip) throw new Error(`master ${instanceId} has no private IP (DescribeInstances): it does not exist any more; run \`npm run restore\` again to plan anew`);
    return ip;
}

/**
 * Reads the master's restore state (read-only: the `status` step), and, until the restore has started the restored
 * cluster, the `status` of every other master that exists: one whose API server answers runs the cluster still (its
 * etcd has a quorum), which a restore would roll back; one that runs but cannot run the step may too. A stopped master,
 * or one released, is down.
 */
export async function readMasterState(i: ApplyRestoreInputs, plan: RestorePlan): Promise<MasterRestoreState> {
    const state = parseRestoreState(await runStep(i, plan, await peerIpOf(i, plan.target), "status"));
    // From the start on, the other masters answer because this restore re-joins them.
    if (state.done.includes("start")) return state;
    const others = i.masterInstanceIds.filter((m) => m !== plan.target);
    const live = others.length ? await describeInstances(i.region, others) : new Map();
    const answering: string[] = [];
    const unknown: string[] = [];
    for (const m of others.filter((x) => live.has(x) && live.get(x)!.status !== "Stopped")) {
        try {
            if (parseRestoreState(await runStep(i, plan, live.get(m)!.privateIp ?? "", "status", undefined, "", m)).apiReady) answering.push(m);
        } catch (err) {
            i.log(`master ${m} could not say whether its API server answers (${(err as Error).message.split("\n")[0]})`);
            unknown.push(m);
        }
    }
    return { ...state, othersAnswering: answering, othersUnknown: unknown };
}

/**
 * The CA of the cluster the master runs now, when it is not the backup's (a new stack's own cluster, before the restore
 * discarded it), else undefined.
 */
export function otherCa(plan: RestorePlan, state: MasterRestoreState): string | undefined {
    if (state.done.includes("stop") || !state.caSha256 || !plan.manifest.caCertSha256) return undefined;
    return state.caSha256 === plan.manifest.caCertSha256 ? undefined : state.caSha256;
}

/** kubeadm backdates the certificates it makes by up to this much (its clock-skew allowance). */
const CA_BACKDATE_MS = 5 * 60_000;

/**
 * A time as the restore meets it: `YYYY-MM-DDTHHMMSSZ` (a backup's `created`, written by etcd_backup.sh) or ISO 8601
 * (the CA's notBefore, from `status`). NaN when it is neither.
 */
export function parseBackupTime(t: string): number {
    const compact = /^(\d{4}-\d{2}-\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(t);
    if (compact) return Date.parse(`${compact[1]}T${compact[2]}:${compact[3]}:${compact[4]}Z`);
    return /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/.test(t) ? Date.parse(t) : NaN;
}

/**
 * Why the restore must not go on, or undefined: the master can take no restore, another one is unfinished there, it
 * runs a cluster with another CA than the backup's (allowed only into a new stack, which discards it, and only with
 * `discard`), or its API server answers (a running cluster, rolled back only with `force`). `discard` never stands in
 * for `force`.
 */
export function restoreRefusal(plan: RestorePlan, state: MasterRestoreState, force: boolean, newStack = false, discard = false, machines: readonly string[] = []): string | undefined {
    const again = `run again with \`--snapshot ${plan.object.key}\``;
    if (state.other) {
        const dir = `/var/lib/alicloud-kubeadm/restore/${state.other.id}`;
        // First: its record holds the control plane's manifests once it stopped it (the master then seems to run none), and
        // removed with them, the master would run no control plane.
        return `master ${plan.target} holds an unfinished restore of ${state.other.key} (id ${state.other.id}): finish it with \`--snapshot ${state.other.key}\`, ` +
            `or, on the master, give it up: \`${state.other.aside ? `mv ${dir}/manifests/*.yaml /etc/kubernetes/manifests/ && ` : ""}rm -rf ${dir}\``;
    }
    if (state.mode === "none" && !state.done.includes("stop")) {
        return `master ${plan.target} runs no control plane and did not refuse kubeadm init, so nothing can be restored onto it: if it was just re-created, ` +
            `wait until its userdata stops (/var/log/alicloud-kubeadm/master-init.log names the restore), then ${again} (the same backup)`;
    }
    if (state.discarded && !newStack && !state.done.includes("start")) {
        return `a restore into a new stack discarded the cluster master ${plan.target} ran: it is continued as one, with the old stack's backups: ` +
            "`--from-stack <old stack> --discard` (or `--from-outputs <file>`, or `--bucket <old bucket> --keys <file>`), docs/disaster-recovery.md#restore-to-a-new-stack";
    }
    const other = otherCa(plan, state);
    if (other && !newStack) {
        return `master ${plan.target} runs a cluster with another CA than the backup's (ca.crt SHA-256 ${other.slice(0, 16)}…, the backup's ` +
            `${plan.manifest.caCertSha256!.slice(0, 16)}…). If this is a new stack for the old cluster's data, restore into it with ` +
            "`--from-stack <old stack> --discard` (or `--bucket <old bucket> --keys <file> --discard`): its own cluster is then discarded (docs/disaster-recovery.md#restore-to-a-new-stack)";
    }
    if (other && newStack) {
        // A new stack's own CA is made after the old stack's backups: a CA older than the backup (beyond kubeadm's backdate) is a cluster that ran before it.
        const since = state.caSince ? parseBackupTime(state.caSince) : NaN;
        const made = plan.manifest.created ? parseBackupTime(plan.manifest.created) : NaN;
        if (Number.isNaN(since) || Number.isNaN(made)) {
            return `master ${plan.target} runs a cluster with another CA than the backup's, and ${Number.isNaN(since) ? `its CA's notBefore (${JSON.stringify(state.caSince ?? "")}, from \`status\`)` : `the backup's created time (${JSON.stringify(plan.manifest.created ?? "")})`} ` +
                "cannot be read: whether that cluster was made after the backup (a new stack's own) cannot be told, so it is not discarded. " +
                "Check the master's /etc/kubernetes/pki/ca.crt (`openssl x509 -noout -startdate`) and the backup, or restore with `--snapshot <key>` of a backup this version wrote";
        }
        if (since + CA_BACKDATE_MS < made) {
            return `master ${plan.target} runs a cluster whose CA (valid since ${state.caSince}) is older than the backup ${plan.object.key} (made ${plan.manifest.created}): ` +
                "it is not a new stack's own cluster, and it is not discarded. Restore into a stack made after the backup, or pick an older backup with `--snapshot <key>` " +
                "(take the old stack's final backup and stop its backups before creating the new stack)";
        }
        if (!discard) {
            return `restoring into a new stack discards the cluster master ${plan.target} runs now (its CA ${other.slice(0, 16)}… is not the backup's): ` +
                `kubeadm reset -f. Its API server ${state.apiReady ? "answers: its Nodes are listed first, and any but this master's refuse the discard" : "does not answer: its Nodes cannot be listed first"}. ` +
                `If this stack was made for the old cluster's data and holds nothing else, ${again} --discard`;
        }
        if (machines.length > 0) {
            // Machines that joined (or will join) the cluster the restore discards keep its CA: they could not join the restored one.
            return `this stack keeps machines beside master ${plan.target}: ${machines.join(", ")}. Discarding its own cluster would leave them with a CA that no longer exists: ` +
                `scale its pools to 0 (size 0; autoscaling pools min and max 0) and remove its existing nodes from its config, \`pulumi up\`, then ${again} --discard`;
        }
        return undefined;
    }
    if (!state.done.includes("start") && !force) {
        // This restore stopped the master's control plane already: giving it up puts it back.
        const stopped = state.done.includes("stop") && state.mode === "existing"
            ? ` This run's stop step moved ${plan.target}'s control plane aside: to give the restore up, on it: ` +
              `\`mv /var/lib/alicloud-kubeadm/restore/${plan.restoreId}/manifests/*.yaml /etc/kubernetes/manifests/ && rm -rf /var/lib/alicloud-kubeadm/restore/${plan.restoreId}\`.`
            : "";
        if (state.othersAnswering?.length) {
            return `the API server on master ${state.othersAnswering.join(", ")} answers /readyz: the cluster runs there (its etcd has a quorum), and a restore onto ` +
                `${plan.target} would roll it back to ${plan.object.key} and reset ${state.othersAnswering.length > 1 ? "them" : "it"}. A lost or broken master is re-joined or replaced, ` +
                "not restored: `pulumi up` (a re-created master 0 joins through the masters that answer), or `pulumi up --replace` of a broken master's instance " +
                "(docs/disaster-recovery.md#lost-member). " +
                `To roll the whole cluster back all the same, ${again} --force.${stopped}`;
        }
        if (state.othersUnknown?.length) {
            return `master ${state.othersUnknown.join(", ")} runs but cannot say whether its API server answers (its Cloud Assistant agent runs no command): the cluster ` +
                `may run there, and a restore onto ${plan.target} would roll it back and reset it. Bring its agent online (\`systemctl restart aliyun.service\`), ` +
                `or stop the instance if the master is broken (a stopped master counts as down), then ${again}; or, to roll the cluster back all the same, ${again} --force.${stopped}`;
        }
    }
    // A discard this restore began (recorded on the master under this backup's restore id) is finished with `discard`: it is no rollback.
    const resumesDiscard = newStack && discard && state.discarded;
    if (state.apiReady && !state.done.includes("stop") && !force && !resumesDiscard) {
        return `the API server on master ${plan.target} answers /readyz: this cluster runs, and a restore would roll it back to ${plan.object.key}. ` +
            `If that is what you want, ${again} --force (--discard does not roll a running cluster back)`;
    }
    return undefined;
}

/**
 * The stack's pools that may hold machines (a fixed size, a minimum or a maximum above 0) and its existing nodes, from its
 * outputs' clusterInfo: what a new stack must not have when its own cluster is discarded.
 */
export function stackMachines(info: { pools?: ReadonlyArray<{ name: string; size?: number; min: number; max: number }>; existingNodes?: ReadonlyArray<{ instanceId: string }> }): string[] {
    return [
        ...(info.pools ?? []).filter((p) => Math.max(p.size ?? 0, p.min, p.max) > 0).map((p) => `pool ${p.name} (up to ${Math.max(p.size ?? 0, p.max)} nodes)`),
        ...(info.existingNodes ?? []).map((n) => `existing node ${n.instanceId}`),
    ];
}

/** What the restore will do from this state, one line a step, for a person (the dry run prints it). */
export function describeRestore(plan: RestorePlan, state: MasterRestoreState, i: Pick<ApplyRestoreInputs, "controlPlaneJoinCommandId" | "newStack">): string[] {
    const discard = i.newStack ? otherCa(plan, state) : undefined;
    const discards = !!discard || state.discarded;
    const at = `on master ${plan.target}`;
    const todo = (s: RestoreStep, what: string) => (state.done.includes(s) ? `${s} ${at}: done already` : `${s} ${at}: ${what}`);
    const others = plan.goneMasters.length ? ` (no longer there: ${plan.goneMasters.join(", ")}, re-created by \`pulumi up --refresh\`)` : "";
    return [
        todo("fetch", `downloads ${plan.object.key} with a GET signed here (valid 15 minutes) and opens it with this backup's password, both sent sealed`),
        todo("stop", discard ? `discards the cluster this new stack made (its CA ${discard.slice(0, 16)}… is not the backup's): kubeadm reset -f, then it is a master 0 that refused kubeadm init`
            : state.mode === "fresh" ? "nothing runs (master 0 refused kubeadm init)" : "moves the static pod manifests of etcd, the API server, the controller-manager and the scheduler aside, until they stopped"),
        todo("restore", "etcdutl snapshot restore (a new cluster id, this master its only member), the backup's CA material and EncryptionConfiguration in place"),
        todo("start", state.mode === "fresh" || discard ? "kubeadm init over the restored etcd and CA (no bootstrap token left), until /readyz answers" : "puts the manifests back, until /readyz answers"),
        `leases ${at}: deletes the API server identity Leases of every other host`,
        discards
            ? "stale Nodes: deletes the old cluster's Nodes (every Node but this master's; their instances belong to the old stack and are not touched), and the pod routes of those gone"
            : "stale Nodes: deletes the Nodes whose instance no longer exists, and their pod routes",
        i.controlPlaneJoinCommandId
            ? `other masters: each one that exists is reset, its Node deleted, and joined as a fresh etcd member through the control-plane join${others}`
            : `other masters: none to re-join (one master, or a stack from before the restore joined them: \`pulumi up --replace\` each)${others}`,
    ];
}

/** Runs the restore (see the module comment); `read` is the master's state when the caller just read it. */
export async function applyRestore(i: ApplyRestoreInputs, plan: RestorePlan, read?: MasterRestoreState): Promise<RestoreOutcome> {
    const log = i.log;
    const peerIp = await peerIpOf(i, plan.target);
    const state = read ?? await readMasterState(i, plan);
    const refusal = restoreRefusal(plan, state, i.force ?? false, i.newStack ?? false, i.discard ?? false, i.stackMachines);
    if (refusal) throw new Error(refusal);
    const access: ClusterAccess = { region: i.region, masterInstanceIds: [plan.target], commands: i.commands, pollIntervalMs: i.pollIntervalMs };
    const discard = i.newStack ? otherCa(plan, state) : undefined;
    if (discard) await checkDiscardable(i, access, plan, state);
    const ran: RestoreStep[] = [];
    let discarded = state.discarded;
    for (const step of RESTORE_STEPS) {
        if (state.done.includes(step)) {
            log(`${step} on ${plan.target}: done already`);
            continue;
        }
        log(`${step} on ${plan.target}…`);
        let channel: string | undefined;
        if (step === "fetch") channel = await sendSecret(access, plan.target, signedDownload(i, plan));
        const out = await runStep(i, plan, peerIp, step, channel, step === "stop" ? discard ?? "" : "");
        if (restoreFields(out).some(([k, v]) => k === "discarded" && v === "1")) discarded = true;
        log(`${step} on ${plan.target}: ${restoreFields(out).map(([k, v]) => `${k}=${v}`).join(" ")}`);
        ran.push(step);
    }
    for (const [, lease] of restoreFields(await runStep(i, plan, peerIp, "leases")).filter(([k]) => k === "lease-deleted")) log(`deleted the stale API server Lease ${lease}`);

    // Nodes whose instance is gone (the old master 0, released pool nodes): the removal core deletes them and their routes.
    const listed = await listNodes(access);
    const nodes = listed.filter((n) => n.providerId.startsWith(`${i.region}.`));
    const live = await describeInstances(i.region, nodes.map((n) => n.providerId.slice(i.region.length + 1)));
    const stale = nodes.filter((n) => !live.has(n.providerId.slice(i.region.length + 1)));
    // When this restore discarded the new stack's own cluster, right after the restored cluster started, every Node but this
    // master's is the old cluster's: those whose instance lives on belong to the old stack, so only their Node objects go
    // (nothing runs on the instances: they are not this stack's to reset). Only then: on a later run, Nodes may have joined
    // the new stack since; and a restore that discarded nothing (a stack's own backup) keeps its live Nodes.
    const notOurs = discarded ? listed.filter((n) => n.providerId !== providerIdOf(i.region, plan.target) && !stale.includes(n)) : [];
    const foreign = ran.includes("start") ? notOurs : [];
    if (notOurs.length > 0 && foreign.length === 0) {
        log(`Nodes other than this master's: ${notOurs.map((n) => n.name).join(", ")}. Those of the old cluster (not this stack's) were left by a run ` +
            "that stopped after the start step: delete them with `kubectl delete node <name>`");
    }
    if (foreign.length > 0) {
        log(`deleting ${foreign.length} Node(s) of the old cluster whose instances are not this stack's (left running, untouched): ${foreign.map((n) => n.name).join(", ")}`);
        await deleteNodes(access, foreign.map((n) => n.name));
    }
    if (stale.length > 0) {
        log(`deleting ${stale.length} Node(s) whose instance no longer exists: ${stale.map((n) => n.name).join(", ")}`);
        // "existing": no ESS group to leave; its userdata and reset are skipped for an instance that is gone.
        await removeNodes(stale.map((n) => ({ instanceId: n.providerId.slice(i.region.length + 1), kind: "existing" as const, nodeName: n.name, nodeReady: false, nodePodCidr: n.podCidr })), {
            region: i.region, masterInstanceIds: [plan.target], commands: i.commands, routeTableId: i.routeTableId, podCidr: i.podCidr,
            pollIntervalMs: i.pollIntervalMs, log, warn: log,
        });
    }

    // The other masters: fresh members, one at a time, through the join path of `pulumi up`.
    const rejoined: string[] = [];
    const others = i.masterInstanceIds.filter((m) => m !== plan.target);
    const instances = await describeInstances(i.region, others);
    const missingMasters = others.filter((m) => !instances.has(m));
    for (const m of missingMasters) log(`master ${m} no longer exists: \`pulumi up --refresh\` re-creates it, and it joins as a fresh member`);
    if (!i.controlPlaneJoinCommandId) {
        if (others.length > missingMasters.length) log("the stack records no control-plane join command: re-join the other masters with `pulumi up --replace` of each, one at a time");
    } else {
        for (const m of others.filter((x) => instances.has(x))) {
            if (await isMember(i, access, plan, m, instances.get(m)?.privateIp ?? "")) {
                log(`master ${m} is a member of the restored etcd already`);
                continue;
            }
            log(`re-joining master ${m}: kubeadm reset, its Node deleted, then the control-plane join`);
            await resetNode(access, m).catch((err: Error) => { throw new Error(`restore: resetting master ${m} before it re-joins failed: ${err.message}. Bring it online and run the restore again with \`--snapshot ${plan.object.key}\``); });
            // its Node by name first: a provider id is what any kubelet wrote (docs/security.md#node-names)
            const old = nodeOfInstance(await listNodes(access), i.region, { instanceId: m, privateIp: instances.get(m)?.privateIp });
            if (old) await deleteNodes(access, [old.name]);
            await joinControlPlaneMember({
                region: i.region, masterInstanceId: plan.target, masterInstanceIds: [plan.target, ...others], memberInstanceId: m, commands: i.commands,
                joinCommandId: i.controlPlaneJoinCommandId, joinSecretsScript: renderOperation("join-secrets"),
                pollSeconds: Math.max(1, (i.pollIntervalMs ?? 1000) / 1000), readyTimeoutSeconds: i.readyTimeoutSeconds,
            }, log);
            rejoined.push(m);
        }
    }
    return { ran, staleNodes: [...stale, ...foreign].map((n) => n.name), rejoined, missingMasters, discarded };
}

/**
 * Before a new stack's own cluster is discarded: it must hold nothing but this master (pool nodes that joined it would be
 * left with a CA that no longer exists). Read through its API server, also when /readyz fails (a listing can work with
 * one failing check); when nothing can be listed, the operator asked for the discard with `discard` (restoreRefusal),
 * and nothing can join a cluster whose API server does not answer.
 */
async function checkDiscardable(i: ApplyRestoreInputs, access: ClusterAccess, plan: RestorePlan, state: MasterRestoreState): Promise<void> {
    let listed: Awaited<ReturnType<typeof listNodes>>;
    try {
        listed = await listNodes(access);
    } catch (err) {
        if (state.apiReady) throw err;
        i.log(`the API server of this stack's own cluster on ${plan.target} does not answer: its Nodes cannot be listed before it is discarded`);
        return;
    }
    const others = listed.filter((n) => n.providerId !== providerIdOf(i.region, plan.target));
    if (others.length > 0) {
        throw new Error(`this stack's own cluster on master ${plan.target} has other Nodes (${others.map((n) => n.name).join(", ")}): they joined the cluster the ` +
            `restore discards. Scale the stack's pools to 0 (and remove its existing nodes) with \`pulumi up\`, then run the restore again with \`--snapshot ${plan.object.key}\` --discard`);
    }
}

/** Whether master `m` is already a healthy member of the restored etcd (a re-run after it re-joined). */
async function isMember(i: ApplyRestoreInputs, access: ClusterAccess, plan: RestorePlan, m: string, ip: string): Promise<boolean> {
    const members = await readEtcdMembers(access, providerIdOf(i.region, plan.target));
    const node = (await listNodes(access)).find((n) => n.providerId === providerIdOf(i.region, m));
    return !!node?.ready && members.some((x) => x.healthy && (x.name === providerIdOf(i.region, m) || x.peerUrls.some((u) => u.includes(`//${ip}:`))));
}

/**
 * What the fetch step receives sealed: the object's URL (at the endpoint the master reaches), its key, the password of
 * this one object, then the headers of a GET of it signed with the operator's credentials (OSS V4 in the Authorization
 * header, the STS token in x-oss-security-token: no credential in the URL). Secret: it only travels sealed.
 */
export function signedDownload(i: Pick<ApplyRestoreInputs, "region" | "bucket" | "credentials" | "masterOssEndpoint">, plan: Pick<RestorePlan, "object" | "password">): string {
    const at: OssTarget = { ...i.bucket, endpoint: i.masterOssEndpoint ?? `https://oss-${i.region}-internal.aliyuncs.com`, connectTo: undefined };
    const headers = signOssV4("GET", at, plan.object.key, {}, {}, i.credentials);
    const text = [ossUrl(at, plan.object.key), plan.object.key, plan.password, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)].join("\n");
    // The sealed text must fit the channel (src/rules/formats.ts SEALED_PATTERN): a long STS token may not.
    if (text.length > 2800) throw new Error(`the signed download is ${text.length} bytes, more than the secret channel carries: run the restore with an AccessKey of your own instead of STS credentials`);
    return text;
}
