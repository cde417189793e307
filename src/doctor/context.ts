/**
 * What every doctor check reads, fetched once and shared: ECS instances, ESS groups and members, VPC
 * route entries, and read-only commands on master 0 (kubectl, kubeadm token list) over Cloud Assistant.
 * Only Describe* OpenAPI actions and RunCommand with read-only scripts are used.
 */
import { callApi, OpenApiError } from "../cloud/openapi";
import { CommandError, runCommand, runOnInstance, InstanceResult } from "../cloud/cloudAssistant";
import { kubectlCommand, MasterTarget, NODE_LINES_JSONPATH, NodeInfo, parseNodeLines } from "../cloud/kubectl";
import { ClusterInfo, DoctorOptions } from "./types";

/** What doctor needs to know about an ECS instance. */
export interface InstanceView {
    instanceId: string;
    /** ECS status: Running, Stopped, Pending, … */
    status: string;
    privateIp: string;
    /** ISO 8601 creation time. */
    creationTime: string;
}

/** What doctor needs to know about an ESS scaling group (DescribeScalingGroups). */
export interface GroupView {
    scalingGroupId: string;
    lifecycleState: string;
    minSize: number;
    maxSize: number;
    desiredCapacity: number;
    totalCapacity: number;
    /** Members InService. */
    activeCapacity: number;
    pendingCapacity: number;
    removingCapacity: number;
}

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
export interface RouteView {
    routeEntryId: string;
    destinationCidrBlock: string;
    nextHopType: string;
    nextHopId: string;
    status: string;
}

/** Output and exit code of one section of a master script. */
export interface SectionResult { output: string; rc: number }

/** Error codes of a Cloud Assistant run that mean "could not reach the instance", not "the command failed". */
const UNREACHABLE_CODES = ["ClientNotRunning", "ClientNotResponse", "ClientIsUpgrading", "ClientNeedUpgrade", "InstanceNotRunning",
    "InvalidInstance.NotMatch", "InvalidInstance.NotFound", "InvalidInstanceId.NotFound", "ClientWaitTimeout", "ExecutionTimeout", "CmdContent.ExceedLimit"];

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
        .replace(/((?:client-key-data|client-certificate-data|token-secret|AccessKeySecret|ACCESS_KEY_SECRET|SECURITY_TOKEN)["':=\s]+)\S+/gi, "$1<redacted>");
}

/** Shell filter applied on the machine itself, so token secrets never reach Cloud Assistant's stored output. */
export const REDACT_SED = `sed -E 's/([a-z0-9]{6})\\.[a-z0-9]{16}/\\1.<redacted>/g'`;

/** True when an error means doctor could not look (API, credentials, unreachable instance), not a finding. */
export function isLookError(e: unknown): boolean {
    if (e instanceof OpenApiError) return true;
    if (e instanceof CommandError) return UNREACHABLE_CODES.includes(e.errorCode) || e.errorCode === "OutputTruncated";
    return false;
}

/** First line of an error message, with secrets removed. */
export function errorText(e: unknown): string {
    return redact(e instanceof Error ? e.message : String(e)).split("\n")[0];
}

/** First lines of every doctor script: bash (the sections use pipefail), then `# alicloud-kubeadm doctor: <name>` (tests route on it). */
export function scriptHeader(name: string): string {
    return `#!/bin/bash\n# alicloud-kubeadm doctor: ${name} (read-only)`;
}

/**
 * One script of named sections: each runs with stderr folded in, its exit code recorded; the whole
 * output is gzip+Base64 (Cloud Assistant keeps 24 KB). Parse with {@link parseSections}.
 * @param name Script name (first-line marker).
 * @param sections Section name → shell command (read-only).
 */
export function sectionsScript(name: string, sections: Record<string, string>): string {
    const body = Object.entries(sections).map(([k, cmd]) => `echo '@@section ${k}'\n( ${cmd} ) 2>&1\necho "@@rc $?"`).join("\n");
    return `${scriptHeader(name)}\n{\n${body}\n} | gzip -c | base64 -w0\n`;
}

/** Parses the decoded output of {@link sectionsScript}. Sections that did not print are absent. */
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

/** JSONPath of the Node conditions doctor explains (one tab-separated line per node). */
export const NODE_CONDITIONS_JSONPATH = "{range .items[*]}{.metadata.name}{\"\\t\"}" +
    "{.status.conditions[?(@.type==\"Ready\")].status}{\"\\t\"}{.status.conditions[?(@.type==\"Ready\")].reason}{\"\\t\"}" +
    "{.status.conditions[?(@.type==\"Ready\")].message}{\"\\t\"}{.status.conditions[?(@.type==\"NetworkUnavailable\")].status}{\"\\t\"}" +
    "{.status.conditions[?(@.type==\"NetworkUnavailable\")].reason}{\"\\n\"}{end}";

const memo = <T>(f: () => Promise<T>): (() => Promise<T>) => {
    let p: Promise<T> | undefined;
    return () => (p ??= f());
};

/** Shared, memoized reads for one doctor run. */
export class DoctorContext {
    /** Where kubectl runs. */
    readonly master: MasterTarget;
    /** Options with defaults applied. */
    readonly opts: Required<Omit<DoctorOptions, "checks" | "progress">> & Pick<DoctorOptions, "progress">;
    private masterError: unknown;
    private readonly instanceCache = new Map<string, InstanceView | null>();

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
        this.master = { region: info.region, masterInstanceId: info.masterInstanceIds[0] ?? "", pollIntervalMs: this.opts.pollIntervalMs };
    }

    /** A Describe or List call in the cluster's region (fewer retries than a deployment: doctor must answer). */
    describe(product: "ecs" | "ess" | "vpc", action: string, params: Record<string, string | number | string[] | undefined>): Promise<Record<string, unknown>> {
        if (!/^(Describe|List)/.test(action)) throw new Error(`doctor only reads: ${action} is not a Describe/List action`);
        return callApi(product, action, params, { region: this.info.region, retry: { maxAttempts: 3, totalTimeoutMs: 20_000, baseDelayMs: 200 } });
    }

    /**
     * ECS instances by id (DescribeInstances, 100 per call). Ids that do not exist map to null.
     * @param ids Instance ids; cached across calls.
     */
    async instances(ids: string[]): Promise<Map<string, InstanceView | null>> {
        const missing = [...new Set(ids)].filter((id) => !this.instanceCache.has(id));
        for (let k = 0; k < missing.length; k += 100) {
            const chunk = missing.slice(k, k + 100);
            const res = await this.describe("ecs", "DescribeInstances", { InstanceIds: JSON.stringify(chunk), PageSize: 100 });
            for (const id of chunk) this.instanceCache.set(id, null);
            for (const i of (res.Instances as { Instance?: Record<string, unknown>[] } | undefined)?.Instance ?? []) {
                const ips = ((i.VpcAttributes as { PrivateIpAddress?: { IpAddress?: string[] } } | undefined)?.PrivateIpAddress?.IpAddress) ?? [];
                this.instanceCache.set(String(i.InstanceId), { instanceId: String(i.InstanceId), status: String(i.Status ?? ""), privateIp: ips[0] ?? "", creationTime: String(i.CreationTime ?? "") });
            }
        }
        return new Map(ids.map((id) => [id, this.instanceCache.get(id) ?? null]));
    }

    /** Scaling groups of every pool, by id (absent: the group does not exist). */
    readonly groups = memo(async (): Promise<Map<string, GroupView>> => {
        const ids = [...new Set(this.info.pools.map((p) => p.scalingGroupId))];
        const out = new Map<string, GroupView>();
        // 2014-08-28 takes ScalingGroupId.1–20 per call.
        for (let k = 0; k < ids.length; k += 20) {
            const res = await this.describe("ess", "DescribeScalingGroups", { ScalingGroupId: ids.slice(k, k + 20), PageSize: 50 });
            for (const g of (res.ScalingGroups as { ScalingGroup?: Record<string, unknown>[] } | undefined)?.ScalingGroup ?? []) {
                const n = (key: string) => Number(g[key] ?? 0);
                out.set(String(g.ScalingGroupId), {
                    scalingGroupId: String(g.ScalingGroupId), lifecycleState: String(g.LifecycleState ?? ""), minSize: n("MinSize"), maxSize: n("MaxSize"),
                    desiredCapacity: n("DesiredCapacity"), totalCapacity: n("TotalCapacity"), activeCapacity: n("ActiveCapacity"),
                    pendingCapacity: n("PendingCapacity"), removingCapacity: n("RemovingCapacity"),
                });
            }
        }
        return out;
    });

    private readonly memberCache = new Map<string, Promise<string[]>>();

    /** Instance ids in a scaling group (DescribeScalingInstances, paged). */
    members(scalingGroupId: string): Promise<string[]> {
        let p = this.memberCache.get(scalingGroupId);
        if (!p) {
            p = (async () => {
                const ids: string[] = [];
                for (let pageNumber = 1; ; pageNumber++) {
                    const res = await this.describe("ess", "DescribeScalingInstances", { ScalingGroupId: scalingGroupId, PageSize: 50, PageNumber: pageNumber });
                    const rows = (res.ScalingInstances as { ScalingInstance?: { InstanceId: string }[] } | undefined)?.ScalingInstance ?? [];
                    ids.push(...rows.map((r) => r.InstanceId));
                    if (rows.length === 0 || ids.length >= Number(res.TotalCount ?? 0)) return ids;
                }
            })();
            this.memberCache.set(scalingGroupId, p);
        }
        return p;
    }

    /** Custom route entries of the cluster's route table (DescribeRouteEntryList, paged by NextToken). */
    readonly routes = memo(async (): Promise<RouteView[]> => {
        const out: RouteView[] = [];
        let token = "";
        do {
            const res = await this.describe("vpc", "DescribeRouteEntryList", { RouteTableId: this.info.routeTableId, RouteEntryType: "Custom", MaxResult: 100, NextToken: token || undefined });
            for (const e of (res.RouteEntrys as { RouteEntry?: Record<string, unknown>[] } | undefined)?.RouteEntry ?? []) {
                const hop = ((e.NextHops as { NextHop?: { NextHopType?: string; NextHopId?: string }[] } | undefined)?.NextHop ?? [])[0] ?? {};
                out.push({ routeEntryId: String(e.RouteEntryId ?? ""), destinationCidrBlock: String(e.DestinationCidrBlock ?? ""), nextHopType: hop.NextHopType ?? "", nextHopId: hop.NextHopId ?? "", status: String(e.Status ?? "") });
            }
            token = String(res.NextToken ?? "");
        } while (token);
        return out;
    });

    /**
     * Runs a sections script on master 0 and parses it. Once master 0 is unreachable, later calls fail at once.
     * @param name Script name.
     * @param sections Section name → read-only shell command.
     */
    onMaster(name: string, sections: Record<string, string>): Promise<Record<string, SectionResult>> {
        // One command at a time on master 0: an unreachable master costs one attempt, not one per check.
        const run = this.masterQueue.then(() => this.runOnMaster(name, sections));
        this.masterQueue = run.then(() => undefined, () => undefined);
        return run;
    }

    private masterQueue: Promise<void> = Promise.resolve();

    private async runOnMaster(name: string, sections: Record<string, string>): Promise<Record<string, SectionResult>> {
        if (this.masterError) throw this.masterError;
        if (!this.master.masterInstanceId) throw new CommandError("clusterInfo.masterInstanceIds is empty: doctor does not know where kubectl runs.", "", "InvalidInstance.NotFound", null, "");
        try {
            this.opts.progress?.(`master 0 (${this.master.masterInstanceId}): ${name}`);
            const out = await runOnInstance({
                region: this.info.region, instanceId: this.master.masterInstanceId, script: sectionsScript(name, sections), name: `alicloud-kubeadm-doctor-${name}`,
                timeoutSeconds: this.opts.commandTimeoutSeconds, pollIntervalMs: this.opts.pollIntervalMs, pollMaxIntervalMs: this.opts.pollMaxIntervalMs,
                waitTimeoutMs: this.opts.commandTimeoutSeconds * 1000 + 30_000, retry: { maxAttempts: 3, totalTimeoutMs: 20_000, baseDelayMs: 200 },
            });
            // eslint-disable-next-line @typescript-eslint/no-require-imports
            const zlib = require("zlib") as typeof import("zlib");
            return parseSections(zlib.gunzipSync(Buffer.from(out.trim(), "base64")).toString("utf8"));
        } catch (e) {
            if (isLookError(e)) this.masterError = e;
            throw e;
        }
    }

    /** Every Node with its Ready and NetworkUnavailable conditions (one master command). */
    readonly nodes = memo(async (): Promise<NodeView[]> => {
        const s = await this.onMaster("nodes", {
            nodes: kubectlCommand(["get", "nodes", "-o", `jsonpath=${NODE_LINES_JSONPATH}`]),
            conditions: kubectlCommand(["get", "nodes", "-o", `jsonpath=${NODE_CONDITIONS_JSONPATH}`]),
        });
        for (const k of ["nodes", "conditions"]) {
            if (!s[k] || s[k].rc !== 0) throw new Error(`kubectl get nodes failed on master 0 (exit ${s[k]?.rc ?? "none"}): ${redact(s[k]?.output ?? "no output").slice(-500)}`);
        }
        const cond = new Map<string, string[]>();
        for (const line of s.conditions.output.split("\n").filter((l) => l.trim())) { const f = line.split("\t"); cond.set(f[0], f); }
        return parseNodeLines(s.nodes.output).map((n) => {
            const f = cond.get(n.name) ?? [];
            return { ...n, readyStatus: f[1] ?? "", readyReason: f[2] ?? "", readyMessage: f[3] ?? "", networkUnavailable: f[4] ?? "", networkUnavailableReason: f[5] ?? "" };
        });
    });

    /**
     * Runs one read-only script on several instances at once (not master-specific), e.g. the bootstrap
     * log tail. Per-instance failures come back in the results.
     */
    onInstances(name: string, instanceIds: string[], script: string): Promise<InstanceResult[]> {
        this.opts.progress?.(`${instanceIds.length} instance(s): ${name}`);
        return runCommand({
            region: this.info.region, instanceIds, script: `${scriptHeader(name)}\n${script}`, name: `alicloud-kubeadm-doctor-${name}`,
            timeoutSeconds: this.opts.commandTimeoutSeconds, pollIntervalMs: this.opts.pollIntervalMs, pollMaxIntervalMs: this.opts.pollMaxIntervalMs,
            waitTimeoutMs: this.opts.commandTimeoutSeconds * 1000 + 30_000, retry: { maxAttempts: 3, totalTimeoutMs: 20_000, baseDelayMs: 200 },
        });
    }

    /** Instance id in a provider id `<region>.<instance-id>` (also tolerates an `alicloud://` prefix); "" when none. */
    static instanceIdOf(providerId: string): string {
        const m = /^(?:alicloud:\/\/)?[a-z0-9-]+\.(i-[A-Za-z0-9]+)$/.exec(providerId);
        return m ? m[1] : "";
    }

    /** Age in minutes of an ISO time relative to `opts.now` (Infinity when unparseable). */
    ageMinutes(iso: string): number {
        const t = Date.parse(iso);
        return Number.isFinite(t) ? (this.opts.now - t) / 60_000 : Infinity;
    }
}
