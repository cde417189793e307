/**
 * What every doctor check reads, fetched once and shared: ECS instances, ESS groups, members and
 * activities, VPC route entries (typed reads of src/cloud), and the cluster's read-only saved doctor
 * commands on master 0 and on nodes over Cloud Assistant. Only Describe* actions and InvokeCommand of the
 * `doctor-*` operations are used.
 */
import { CommandError, runCommand, runOnInstance, InstanceResult } from "../cloud/cloudAssistant";
import { describeInstances, type Instance } from "../cloud/ecs";
import { classify } from "../cloud/errors";
import { activeConfigurationTags, describeScalingGroups, scalingActivities, scalingGroupMembers, type ScalingActivity, type ScalingGroup } from "../cloud/ess";
import { OpenApiError, type RetryOptions } from "../cloud/openapi";
import { decompress, NodeInfo, parseNodeLines, instanceOfProviderId, unescapeListed } from "../cloud/operations";
import { customRouteEntries, type RouteEntry } from "../cloud/vpc";
import { operationParameters, type SavedOperation } from "../rules";
import { ClusterInfo, DoctorOptions } from "./types";

/** What doctor needs to know about an ECS instance. */
export type InstanceView = Pick<Instance, "instanceId" | "status" | "privateIp" | "creationTime" | "tags">;

/** What doctor needs to know about an ESS scaling group (DescribeScalingGroups). */
export type GroupView = ScalingGroup;

/** A Node with the conditions doctor explains. */
export interface NodeView extends NodeInfo {
    /** Ready condition status: `True`, `False`, `Unknown` or "" when absent. */
    readyStatus: string;
    readyReason: string;
    readyMessage: string;
    /** NetworkUnavailable condition status ("" when absent). */
    networkUnavailable: string;
    networkUnavailableReason: string;
}

/** One VPC custom route entry. */
export type RouteView = RouteEntry;

/** Output and exit code of one section of a master script. */
export interface SectionResult { output: string; rc: number }

/**
 * Removes secrets from text that came from a node or the master: bootstrap token secrets (keeps the
 * public id), certificate keys, kubeconfig key material, AccessKey secrets.
 * @param text Any text (log lines, command output).
 * @returns The same text with secrets replaced by `<redacted>`.
 */
export function redact(text: string): string {
    return text
        .replace(/\b([a-z0-9]{6})\.[a-z0-9]{16}\b/g, "$1.<redacted>")
        .replace(/(certificate[-_]key["':=\s]+)[0-9a-fA-F]{64}/gi, "$1<redacted>")
        // Only a value given to the key (`KEY=value`, `key: value`), not the key's name in a sentence.
        .replace(/((?:client-key-data|client-certificate-data|token-secret|AccessKeySecret|ACCESS_KEY_SECRET|SECURITY_TOKEN)["']?\s*[:=]\s*["']?)[^\s"']+/gi, "$1<redacted>");
}

/** True when an error means doctor could not look (API, credentials, unreachable or missing instance, timeout), not a finding. */
export function isLookError(e: unknown): boolean {
    if (e instanceof OpenApiError) return true;
    if (e instanceof CommandError) return classify(e.errorCode) !== "fatal" || e.errorCode === "OutputTruncated";
    return false;
}

/** First line of an error message, with secrets removed. */
export function errorText(e: unknown): string {
    return redact(e instanceof Error ? e.message : String(e)).split("\n")[0];
}

/** Parses the decoded output of a doctor operation (`ak_section` in src/shell/ops/lib.sh). Sections that did not print are absent. */
export function parseSections(text: string): Record<string, SectionResult> {
    const out: Record<string, SectionResult> = {};
    let current = "", lines: string[] = [];
    for (const line of text.split("\n")) {
        const s = /^@@section (\S+)$/.exec(line);
        const rc = /^@@rc (\d+)$/.exec(line);
        if (s) { current = s[1]; lines = []; }
        else if (rc && current) { out[current] = { output: lines.join("\n"), rc: Number(rc[1]) }; current = ""; }
        else if (current) lines.push(line);
    }
    return out;
}

const memo = <T>(f: () => Promise<T>): (() => Promise<T>) => {
    let p: Promise<T> | undefined;
    return () => (p ??= f());
};

/** Doctor reads with fewer retries than a deployment: it must answer. */
const DOCTOR_RETRY: RetryOptions = { maxAttempts: 3, totalTimeoutMs: 20_000, baseDelayMs: 200 };

/** Shared, memoized reads for one doctor run. */
export class DoctorContext {
    /** Options with defaults applied. */
    readonly opts: Required<Omit<DoctorOptions, "checks" | "progress">> & Pick<DoctorOptions, "progress">;
    /** Master 0, where the doctor's master operations run ("" when unknown). */
    readonly master0: string;
    private masterError: unknown;
    /** Instances by id, as promises: checks that run at once share one fetch. */
    private readonly instanceCache = new Map<string, Promise<InstanceView | null>>();

    /**
     * @param info The stack's `clusterInfo`.
     * @param opts See {@link DoctorOptions} for defaults.
     */
    constructor(readonly info: ClusterInfo, opts: DoctorOptions = {}) {
        this.opts = {
            pollIntervalMs: opts.pollIntervalMs ?? 1000, pollMaxIntervalMs: opts.pollMaxIntervalMs ?? 5000,
            commandTimeoutSeconds: opts.commandTimeoutSeconds ?? 60, joinGraceMinutes: opts.joinGraceMinutes ?? 15,
            lookbackHours: opts.lookbackHours ?? 24, logLines: opts.logLines ?? 25, now: opts.now ?? Date.now(), progress: opts.progress,
        };
        this.master0 = info.masterInstanceIds[0] ?? "";
    }

    /**
     * ECS instances by id (100 per call). Ids that do not exist map to null.
     * @param ids Instance ids; cached across calls.
     */
    async instances(ids: string[]): Promise<Map<string, InstanceView | null>> {
        const missing = [...new Set(ids)].filter((id) => !this.instanceCache.has(id));
        if (missing.length > 0) {
            const fetched = describeInstances(this.info.region, missing, DOCTOR_RETRY);
            for (const id of missing) this.instanceCache.set(id, fetched.then((found) => found.get(id) ?? null));
        }
        return new Map(await Promise.all(ids.map(async (id) => [id, await this.instanceCache.get(id)!] as const)));
    }

    /** The tags of a group's active scaling configuration (undefined: none is active). */
    configurationTags(scalingGroupId: string): Promise<Record<string, string> | undefined> {
        return activeConfigurationTags(this.info.region, scalingGroupId, DOCTOR_RETRY);
    }

    /** Scaling groups of every pool, by id (absent: the group does not exist). */
    readonly groups = memo(() => describeScalingGroups(this.info.region, this.info.pools.map((p) => p.scalingGroupId), DOCTOR_RETRY));

    private readonly memberCache = new Map<string, Promise<string[]>>();

    /** Instance ids in a scaling group. */
    members(scalingGroupId: string): Promise<string[]> {
        let p = this.memberCache.get(scalingGroupId);
        if (!p) {
            p = scalingGroupMembers(this.info.region, scalingGroupId, { retry: DOCTOR_RETRY }).then((ms) => ms.map((m) => m.instanceId));
            this.memberCache.set(scalingGroupId, p);
        }
        return p;
    }

    /** The group's most recent scaling activities, newest first. */
    activities(scalingGroupId: string): Promise<ScalingActivity[]> {
        return scalingActivities(this.info.region, scalingGroupId, { pageSize: 20, retry: DOCTOR_RETRY });
    }

    /** Custom route entries of the cluster's route table. */
    readonly routes = memo(() => customRouteEntries(this.info.region, this.info.routeTableId, { retry: DOCTOR_RETRY }));

    /** How a doctor operation is invoked (its saved command, doctor's waits and retries). */
    private invocation(op: SavedOperation, instanceIds: string[], parameters: Record<string, string>) {
        const commandId = this.info.commands?.[op];
        if (!commandId) {
            throw new CommandError(`clusterInfo.commands.${op} is missing: these stack outputs predate the saved doctor commands; run \`pulumi up\` once, then doctor again.`,
                "", "InvalidCmdId.NotFound", null, "");
        }
        return {
            region: this.info.region, instanceIds, commandId, parameters, name: `alicloud-kubeadm ${op}`,
            timeoutSeconds: this.opts.commandTimeoutSeconds, pollIntervalMs: this.opts.pollIntervalMs, pollMaxIntervalMs: this.opts.pollMaxIntervalMs,
            waitTimeoutMs: this.opts.commandTimeoutSeconds * 1000 + 30_000, retry: DOCTOR_RETRY,
        };
    }

    /**
     * Runs a doctor operation on master 0 and parses its sections. Once master 0 is unreachable, later calls fail at once.
     * @param op `doctor-nodes`, `doctor-autoscaler` or `doctor-join`.
     */
    onMaster(op: "doctor-nodes" | "doctor-autoscaler" | "doctor-join"): Promise<Record<string, SectionResult>> {
        // One command at a time on master 0: an unreachable master costs one attempt, not one per check.
        const run = this.masterQueue.then(() => this.runOnMaster(op));
        this.masterQueue = run.then(() => undefined, () => undefined);
        return run;
    }

    private masterQueue: Promise<void> = Promise.resolve();

    /**
     * Runs a doctor operation on every master, one after the other; a master that cannot be reached gives its error.
     * @param op `doctor-certs`.
     */
    async onEachMaster(op: "doctor-certs"): Promise<Array<{ instanceId: string; sections?: Record<string, SectionResult>; error?: unknown }>> {
        const results: Array<{ instanceId: string; sections?: Record<string, SectionResult>; error?: unknown }> = [];
        for (const instanceId of this.info.masterInstanceIds) {
            const once = async (): Promise<Record<string, SectionResult>> => {
                // Master 0 found unreachable by another check is not tried again.
                if (instanceId === this.master0 && this.masterError) throw this.masterError;
                this.opts.progress?.(`master ${instanceId}: ${op}`);
                const { instanceIds, ...rest } = this.invocation(op, [instanceId], {});
                try {
                    return parseSections(decompress(await runOnInstance({ ...rest, instanceId: instanceIds[0] })));
                } catch (e) {
                    if (instanceId === this.master0 && isLookError(e)) this.masterError = e;
                    throw e;
                }
            };
            const run = instanceId === this.master0 ? this.masterQueue.then(once) : once();
            if (instanceId === this.master0) this.masterQueue = run.then(() => undefined, () => undefined);
            try {
                results.push({ instanceId, sections: await run });
            } catch (error) {
                results.push({ instanceId, error });
            }
        }
        return results;
    }

    private async runOnMaster(op: "doctor-nodes" | "doctor-autoscaler" | "doctor-join"): Promise<Record<string, SectionResult>> {
        if (this.masterError) throw this.masterError;
        if (!this.master0) throw new CommandError("clusterInfo.masterInstanceIds is empty: doctor does not know where kubectl runs.", "", "InvalidInstance.NotFound", null, "");
        try {
            this.opts.progress?.(`master 0 (${this.master0}): ${op}`);
            const { instanceIds, ...rest } = this.invocation(op, [this.master0], {});
            return parseSections(decompress(await runOnInstance({ ...rest, instanceId: instanceIds[0] })));
        } catch (e) {
            if (isLookError(e)) this.masterError = e;
            throw e;
        }
    }

    /** The sections of the doctor-nodes operation on master 0 (one command, shared by the checks that read it). */
    private readonly nodeSections = memo(() => this.onMaster("doctor-nodes"));

    /** Every Node with its Ready and NetworkUnavailable conditions (one master command). */
    readonly nodes = memo(async (): Promise<NodeView[]> => {
        const s = await this.nodeSections();
        for (const k of ["nodes", "conditions"]) {
            if (!s[k] || s[k].rc !== 0) throw new Error(`kubectl get nodes failed on master 0 (exit ${s[k]?.rc ?? "none"}): ${redact(s[k]?.output ?? "no output").slice(-500)}`);
        }
        const cond = new Map<string, string[]>();
        for (const line of s.conditions.output.split("\n").filter((l) => l.trim())) { const f = line.split("\t").map(unescapeListed); cond.set(f[0], f); }
        return parseNodeLines(s.nodes.output).map((n) => {
            const f = cond.get(n.name) ?? [];
            return { ...n, readyStatus: f[1] ?? "", readyReason: f[2] ?? "", readyMessage: f[3] ?? "", networkUnavailable: f[4] ?? "", networkUnavailableReason: f[5] ?? "" };
        });
    });

    /**
     * The versions the cluster runs (the same master command as {@link nodes}): each Node's kubelet and each kube-apiserver
     * pod's, by the pod's node, without the `v`. A listing that failed throws (its exit code and output). Only the API
     * servers of Nodes labelled control-plane count (section `control-plane`; any kubelet may post a mirror pod labelled
     * component=kube-apiserver bound to itself, none may label its own Node control-plane), as src/upgrade/status.ts
     * counts them; a saved doctor-nodes from before that section lists every one. `unlabelled`: the nodes of the
     * kube-apiserver pods left out.
     */
    readonly versions = memo(async (): Promise<{ kubelets: Record<string, string>; apiServers: Record<string, string>; unlabelled: string[] }> => {
        const s = await this.nodeSections();
        for (const k of ["kubelets", "apiservers"]) {
            if (!s[k] || s[k].rc !== 0) throw new Error(`kubectl could not list the ${k} on master 0 (exit ${s[k]?.rc ?? "none"}): ${redact(s[k]?.output ?? "no output").slice(-500)}`);
        }
        const pairs = (text: string, value: (v: string) => string) => Object.fromEntries(text.split("\n").map((l) => l.split("\t").map(unescapeListed)).filter(([k]) => k?.trim())
            .map(([k, v]) => [k.trim(), value((v ?? "").trim())]));
        const apiServers = pairs(s.apiservers.output, (image) => { const ref = image.split("@")[0]; return ref.slice(ref.lastIndexOf(":") + 1).replace(/^v/, ""); });
        const cp = s["control-plane"];
        if (cp && cp.rc !== 0) throw new Error(`kubectl could not list the control-plane Nodes on master 0 (exit ${cp.rc}): ${redact(cp.output).slice(-500)}`);
        const masters = cp ? new Set(cp.output.split("\n").map(unescapeListed).map((l) => l.trim()).filter(Boolean)) : undefined;
        return {
            kubelets: pairs(s.kubelets.output, (v) => v.replace(/^v/, "")),
            apiServers: masters ? Object.fromEntries(Object.entries(apiServers).filter(([node]) => masters.has(node))) : apiServers,
            unlabelled: masters ? Object.keys(apiServers).filter((node) => !masters.has(node)).sort() : [],
        };
    });

    /** The tail of the bootstrap logs of several instances at once (doctor-bootstrap-log). Per-instance failures come back in the results. */
    bootstrapLogs(instanceIds: string[]): Promise<InstanceResult[]> {
        this.opts.progress?.(`${instanceIds.length} instance(s): doctor-bootstrap-log`);
        return runCommand(this.invocation("doctor-bootstrap-log", instanceIds, operationParameters("doctor-bootstrap-log", { lines: String(this.opts.logLines) })));
    }

    /** Instance id in a provider id `<region>.<instance-id>` (also tolerates an `alicloud://` prefix); "" when none. */
    static instanceIdOf(providerId: string): string {
        return instanceOfProviderId(providerId);
    }

    /** Age in minutes of an ISO time relative to `opts.now` (Infinity when unparseable). */
    ageMinutes(iso: string): number {
        const t = Date.parse(iso);
        return Number.isFinite(t) ? (this.opts.now - t) / 60_000 : Infinity;
    }
}
