/**
 * Autoscaler check: the Cluster Autoscaler Deployment, its `cluster-autoscaler-status` ConfigMap
 * (YAML since CA 1.30; field names from clusterstate/api/types.go) and the tail of its log, read with
 * kubectl on master 0 over Cloud Assistant. Says whether node groups are healthy and whether scale-up
 * or scale-down is blocked, and why.
 */
import * as YAML from "yaml";
import { DoctorContext, redact } from "./context";
import { Finding } from "./types";

/** Where the autoscaler lives (src/components/clusterAutoscaler.ts; read by src/shell/ops/doctor-autoscaler.sh). */
export const AUTOSCALER = { namespace: "kube-system", deployment: "cluster-autoscaler", statusConfigMap: "cluster-autoscaler-status" } as const;

/** The parts of the status ConfigMap doctor reads. */
export interface AutoscalerStatus {
    time?: string;
    autoscalerStatus?: string;
    message?: string;
    clusterWide?: { health?: { status?: string; nodeCounts?: NodeCounts }; scaleUp?: { status?: string }; scaleDown?: { status?: string; candidates?: number } };
    nodeGroups?: {
        name?: string;
        health?: { status?: string; nodeCounts?: NodeCounts; cloudProviderTarget?: number; minSize?: number; maxSize?: number };
        scaleUp?: { status?: string; backoffInfo?: { errorCode?: string; errorMessage?: string } };
        scaleDown?: { status?: string; candidates?: number };
    }[];
}
interface NodeCounts { registered?: { total?: number; ready?: number; notStarted?: number }; longUnregistered?: number; unregistered?: number }

/**
 * Parses the `status` key of the ConfigMap. CA ≥ 1.30 writes YAML; older versions write text, from
 * which only the health and scale-up words are recovered.
 */
export function parseAutoscalerStatus(text: string): AutoscalerStatus | undefined {
    try {
        const doc = YAML.parse(text) as unknown;
        if (doc && typeof doc === "object" && ("clusterWide" in doc || "autoscalerStatus" in doc || "nodeGroups" in doc)) return doc as AutoscalerStatus;
    } catch { /* older text format */ }
    const health = /Health:\s+(\w+)/.exec(text)?.[1];
    if (!health) return undefined;
    return { clusterWide: { health: { status: health }, scaleUp: { status: /ScaleUp:\s+(\w+)/.exec(text)?.[1] } } };
}

/** CA writes `time` as Go's `2026-12-02 10:00:00.123 +0000 UTC` (any offset); returns epoch ms or NaN. */
export function parseCaTime(t: string): number {
    const m = /^(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d:\d\d(?:\.\d+)?)\s*(?:([+-])(\d\d)(\d\d)(?: \w+)?|Z)?$/.exec(t.trim());
    if (!m) return Date.parse(t);
    return Date.parse(`${m[1]}T${m[2]}${m[3] ? `${m[3]}${m[4]}:${m[5]}` : "Z"}`);
}

/** Log patterns that explain a blocked autoscaler, with the fix. Sources: docs/upstream.md#autoscaler-provider-id, #autoscaler-flag-defaults, #broken-autoscaler-8168. */
const LOG_HINTS: { match: RegExp; what: string; fix: string }[] = [
    { match: /unexpected ProviderID format|has no providerId/i, what: "a Node's provider id is missing or malformed", fix: "see the Nodes check; kubelet needs --provider-id=<region>.<instance-id>" },
    { match: /CanNotResolveEndpoint|failed to unmarshal endpoint response/i, what: "the autoscaler cannot resolve the ESS endpoint (region, or CA 1.32.0–1.32.2/1.33.0 bug #8168)", fix: "check REGION_ID and use a fixed CA release (1.32.3+, 1.33.1+, 1.34+)" },
    { match: /Forbidden|NoPermission|InvalidAccessKeyId|is not authorized/i, what: "the autoscaler's cloud credentials are refused", fix: "check the control-plane RAM role has the ESS actions the autoscaler needs (DescribeScalingGroups, ModifyScalingGroup, RemoveInstances, …)" },
    { match: /max node group size reached|maximum size/i, what: "a node group is at its max", fix: "raise autoscale.max of the pool" },
];
const SCALE_DOWN_BLOCKED = /cannot be removed|not suitable for removal|is not replicated|not enough pod disruption budget|no place to move|not removing node/i;
const SCALE_UP_BLOCKED = /didn't trigger scale-up|No expansion options|wouldn't fit if a new node is added|not enough resources to scale up/i;

/**
 * Runs the Autoscaler check (skipped when no pool is autoscaled).
 * @param ctx Shared reads of this doctor run.
 * @returns Findings; throws when master 0 cannot be reached.
 */
export async function checkAutoscaler(ctx: DoctorContext): Promise<Finding[]> {
    const pools = ctx.info.pools.filter((p) => p.mode === "autoscale");
    if (pools.length === 0) return [{ check: "autoscaler", status: "ok", subject: "cluster-autoscaler", evidence: "no autoscaled pool: the autoscaler is not deployed", next: "" }];
    const s = await ctx.onMaster("doctor-autoscaler");
    const out: Finding[] = [];
    const add = (status: Finding["status"], subject: string, evidence: string, next: string, details?: string) => out.push({ check: "autoscaler", status, subject, evidence, next, ...(details ? { details } : {}) });
    const dep = `deployment ${AUTOSCALER.namespace}/${AUTOSCALER.deployment}`;

    const d = s.deploy;
    if (!d || d.rc !== 0) add("problem", dep, `not found or unreadable: ${redact(d?.output ?? "no output").trim().slice(-300)}`, "run `pulumi up` (the ClusterAutoscaler component creates it)");
    else {
        const [want, ready] = d.output.trim().split(/\s+/).map((x) => Number(x || 0));
        if (!(ready >= 1)) add("problem", dep, `${ready || 0}/${want || 0} replicas ready: nothing scales the autoscaled pools`, `\`kubectl -n ${AUTOSCALER.namespace} describe pod -l app=cluster-autoscaler\` and its logs (image pull, crash loop, credentials)`);
    }

    const lines = redact(s.log?.rc === 0 ? s.log.output : "").split("\n").filter((l) => l.trim());
    const st = s.status && s.status.rc === 0 && s.status.output.trim() ? parseAutoscalerStatus(s.status.output) : undefined;
    if (!st) {
        add("problem", `configmap ${AUTOSCALER.statusConfigMap}`, s.status?.rc === 0 ? "status ConfigMap is empty or unreadable" : `no status ConfigMap: the autoscaler never finished a loop (${redact(s.status?.output ?? "").trim().slice(-200)})`,
            "read the autoscaler log (below, or `kubectl -n kube-system logs deploy/cluster-autoscaler`) for the startup error");
    } else {
        const t = st.time ? parseCaTime(st.time) : NaN;
        if (Number.isFinite(t) && (ctx.opts.now - t) / 60_000 > 10) add("warning", `configmap ${AUTOSCALER.statusConfigMap}`, `status last written ${st.time} (${Math.round((ctx.opts.now - t) / 60_000)} min ago): the autoscaler loop is stuck or not running`, "check the autoscaler pod and its log");
        if (st.autoscalerStatus && st.autoscalerStatus !== "Running") add("warning", "cluster-autoscaler", `autoscalerStatus is ${st.autoscalerStatus}${st.message ? `: ${st.message}` : ""}`, "wait a minute; if it stays, read the autoscaler log");
        const cw = st.clusterWide?.health;
        if (cw?.status && cw.status !== "Healthy") {
            const c = cw.nodeCounts;
            add("problem", "cluster", `autoscaler reports the cluster ${cw.status}${c ? ` (registered ${c.registered?.total ?? "?"}, ready ${c.registered?.ready ?? "?"}, unregistered ${c.unregistered ?? 0}, long unregistered ${c.longUnregistered ?? 0})` : ""}: it stops scaling while too many nodes are unready`, "fix the NotReady and unregistered nodes (see the Nodes check)");
        }
        for (const p of pools) {
            const g = st.nodeGroups?.find((x) => x.name === p.scalingGroupId);
            const subject = `pool ${p.name} (${p.scalingGroupId})`;
            if (!st.nodeGroups) continue;
            if (!g) { add("problem", subject, "the autoscaler does not manage this scaling group (not in its status)", `check its --nodes flags include ${p.min}:${p.max}:${p.scalingGroupId} (\`pulumi up\` renders them)`); continue; }
            const c = g.health?.nodeCounts;
            const summary = `target ${g.health?.cloudProviderTarget ?? "?"}, registered ${c?.registered?.total ?? "?"}, ready ${c?.registered?.ready ?? "?"}, scale-up ${g.scaleUp?.status ?? "?"}, scale-down ${g.scaleDown?.status ?? "?"}${g.scaleDown?.candidates ? ` (${g.scaleDown.candidates} candidate(s))` : ""}`;
            let bad = false;
            if (g.health?.status && g.health.status !== "Healthy") { bad = true; add("problem", subject, `node group ${g.health.status}: ${summary}`, "fix the unready/unregistered nodes of this pool (see the Nodes check)"); }
            if (g.scaleUp?.status === "Backoff") {
                bad = true;
                const b = g.scaleUp.backoffInfo ?? {};
                add("problem", subject, `scale-up is backed off after a failure${b.errorCode ? `: ${b.errorCode}` : ""}${b.errorMessage ? ` — ${redact(b.errorMessage)}` : ""}`, "see this pool's failed ESS activities (ESS check) for the cause; the autoscaler retries after the backoff");
            }
            if ((c?.longUnregistered ?? 0) > 0) { bad = true; add("problem", subject, `${c?.longUnregistered} instance(s) in ESS never became Nodes within --max-node-provision-time; the autoscaler will remove them`, "see the Nodes check for the bootstrap log of those instances"); }
            if (!bad) add(g.scaleUp?.status === "InProgress" ? "warning" : "ok", subject, summary, g.scaleUp?.status === "InProgress" ? "a scale-up is running; run doctor again in a few minutes" : "");
        }
    }

    const errors = lines.filter((l) => /^E\d{4} /.test(l)).slice(-3);
    for (const h of LOG_HINTS) {
        const hit = lines.filter((l) => h.match.test(l)).slice(-1)[0];
        if (hit) add("problem", "autoscaler log", `${h.what}: ${hit.trim().slice(0, 400)}`, h.fix);
    }
    const down = [...new Set(lines.filter((l) => SCALE_DOWN_BLOCKED.test(l)).map((l) => l.replace(/^\S+ \S+\s+\d+ \S+\] /, "")))].slice(-3);
    if (down.length) add("warning", "scale-down", `blocked for some nodes: ${down.join(" | ").slice(0, 600)}`, "these nodes stay until the named pods can move (add a PodDisruptionBudget, use a controller instead of bare pods, or annotate safe-to-evict)");
    const up = [...new Set(lines.filter((l) => SCALE_UP_BLOCKED.test(l)).map((l) => l.replace(/^\S+ \S+\s+\d+ \S+\] /, "")))].slice(-3);
    if (up.length) add("warning", "scale-up", `pending pods that no pool can take: ${up.join(" | ").slice(0, 600)}`, "the pods ask for more than any pool's instance type offers, or for labels/taints no pool has: change the pods or add a pool that fits");
    if (errors.length && !LOG_HINTS.some((h) => errors.some((l) => h.match.test(l)))) add("warning", "autoscaler log", `recent errors: ${errors.join(" | ").slice(0, 600)}`, "read the whole log: `kubectl -n kube-system logs deploy/cluster-autoscaler`", lines.slice(-40).join("\n"));
    if (s.log && s.log.rc !== 0) add("warning", "autoscaler log", `could not read the log: ${lines.slice(-1)[0] ?? redact(s.log.output).trim().slice(-200)}`, "`kubectl -n kube-system logs deploy/cluster-autoscaler` on master 0");
    else if (!out.some((f) => f.subject === "autoscaler log")) add("ok", "autoscaler log", `no error in the last ${lines.length} line(s)`, "", lines.slice(-20).join("\n"));
    return out;
}
