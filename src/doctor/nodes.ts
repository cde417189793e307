/**
 * Nodes check: every ECS instance the stack owns (masters, ESS pool members, existing nodes) against
 * the Node objects. Instances without a Node get the tail of their bootstrap log (the saved
 * doctor-bootstrap-log operation); Nodes without an instance, NotReady Nodes and missing or wrong provider
 * ids are named.
 */
import { providerIdOf } from "../rules";
import { DoctorContext, errorText, InstanceView, NodeView, redact } from "./context";
import { Finding } from "./types";

/** Where the user-data scripts log, and where they leave markers (join.done, join.failed). */
export const BOOTSTRAP_LOG_DIR = "/var/log/alicloud-kubeadm";
export const BOOTSTRAP_STATE_DIR = "/var/lib/alicloud-kubeadm";

const ERROR_LINE = /error|fail|fatal|denied|refused|timed? ?out|unable|cannot|x509|forbidden|unauthorized/i;

/** The lines of a bootstrap-log tail worth quoting: markers and error lines (at most 5), else the last line. */
export function summarizeLog(text: string): string {
    const lines = redact(text).split("\n").map((l) => l.trim()).filter(Boolean);
    const marks = lines.filter((l) => /^status=|^exit_code=|^log=/.test(l));
    const errs = lines.filter((l) => !l.startsWith("==>") && ERROR_LINE.test(l)).slice(-5);
    const picked = [...marks, ...errs.filter((l) => !marks.includes(l))];
    return (picked.length ? picked : lines.slice(-1)).join(" | ");
}

interface Expected { id: string; role: string; pool?: string }

/**
 * What to do about a member whose instance is not running. ESS replaces unhealthy members of autoscaled pools
 * by itself, but not a fixed pool's: PoolCapacity protects them from scale-in, and ESS keeps a protected member
 * as it is (README "How nodes leave").
 */
const STOPPED_MEMBER_FIX = "start the instance; for a fixed pool (its members are protected, so ESS does not replace them) you can instead lower `size` by one and raise it again";

/**
 * Runs the Nodes check.
 * @param ctx Shared reads of this doctor run.
 * @returns Findings; throws when instances or Nodes cannot be read at all.
 */
export async function checkNodes(ctx: DoctorContext): Promise<Finding[]> {
    const { info } = ctx;
    const expected: Expected[] = info.masterInstanceIds.map((id, i) => ({ id, role: `master ${i}` }));
    const groups = await ctx.groups();
    for (const p of info.pools) {
        if (!groups.has(p.scalingGroupId)) continue;
        for (const id of await ctx.members(p.scalingGroupId)) expected.push({ id, role: `pool ${p.name}`, pool: p.name });
    }
    for (const e of info.existingNodes) expected.push({ id: e.instanceId, role: `existing node (${e.mode})` });
    const nodes = await ctx.nodes();
    const nodeIds = nodes.map((n) => DoctorContext.instanceIdOf(n.providerId)).filter(Boolean);
    const instances = await ctx.instances([...expected.map((e) => e.id), ...nodeIds]);
    const byInstance = new Map<string, NodeView[]>();
    for (const n of nodes) {
        const id = DoctorContext.instanceIdOf(n.providerId);
        if (id) byInstance.set(id, [...(byInstance.get(id) ?? []), n]);
    }
    const out: Finding[] = [];
    const add = (status: Finding["status"], subject: string, evidence: string, next: string, details?: string) => out.push({ check: "nodes", status, subject, evidence, next, ...(details ? { details } : {}) });
    const noNode: { e: Expected; inst: InstanceView }[] = [];
    const expectedIds = new Set(expected.map((e) => e.id));

    for (const e of expected) {
        const inst = instances.get(e.id) ?? null;
        const subject = `${e.id} (${e.role})`;
        const matched = byInstance.get(e.id) ?? [];
        if (!inst) {
            add("problem", subject, `instance ${e.id} does not exist in ${info.region}${matched.length ? `, but Node ${matched[0].name} still points at it` : ""}`,
                e.role.startsWith("existing") ? "remove it from existingNodes in the stack config and `pulumi up`" : "run `pulumi refresh` and `pulumi up`");
            continue;
        }
        if (matched.length === 0) {
            if (inst.status !== "Running") {
                add("warning", subject, `instance is ${inst.status} and has no Node`, e.role.startsWith("existing")
                    ? "an existing node is not in the cluster (mode auto: a replacement may have stopped it): `pulumi up --refresh` attaches it again" : STOPPED_MEMBER_FIX);
            }
            else if (ctx.ageMinutes(inst.creationTime) < ctx.opts.joinGraceMinutes) add("warning", subject, `no Node yet; the instance was created ${Math.max(0, Math.round(ctx.ageMinutes(inst.creationTime)))} min ago and may still be joining`, "wait a few minutes and run doctor again");
            else noNode.push({ e, inst });
            continue;
        }
        if (matched.length > 1) add("problem", subject, `${matched.length} Nodes claim this instance: ${matched.map((n) => n.name).join(", ")}`, "delete the stale Node object (`kubectl delete node <old name>`) after checking which one is current");
        const n = matched[0];
        const want = providerIdOf(info.region, e.id);
        if (n.providerId !== want) {
            add("problem", `node ${n.name}`, `provider id is "${n.providerId}", expected "${want}" (the CCM and the Cluster Autoscaler match this exact string)`,
                "fix the kubelet's --provider-id (no `alicloud://` prefix, the cluster's region), then re-join the node");
        }
        if (n.readyStatus !== "True" && !n.ready) {
            const why = [n.readyStatus && `Ready=${n.readyStatus}`, n.readyReason, n.readyMessage].filter(Boolean).join(": ");
            add("problem", `node ${n.name}`, `NotReady (${why || "no Ready condition"}); instance ${e.id} is ${inst.status}`,
                inst.status !== "Running" ? STOPPED_MEMBER_FIX
                    : n.readyStatus === "Unknown" ? "the kubelet stopped reporting: check the instance is running, then `systemctl status kubelet` and `journalctl -u kubelet` on it"
                    : "check `journalctl -u kubelet` and the CNI (flannel pod on that node) — the message above names the failing part");
        }
        if (e.pool && n.pool !== e.pool) {
            add("warning", `node ${n.name}`, n.pool ? `its pool label says "${n.pool}", but the instance is in pool ${e.pool}` : `it has no pool label, but the instance is in pool ${e.pool}`,
                "a node joined through admission gets node-restriction.kubernetes.io/alicloud-kubeadm-pool from the service within seconds: check its log " +
                "(kubectl -n kube-system logs ds/alicloud-kubeadm-admission); an older node's alicloud-kubeadm/pool label can be fixed, or the node re-joined");
        }
    }

    for (const n of nodes) {
        const id = DoctorContext.instanceIdOf(n.providerId);
        const named = DoctorContext.instanceIdOf(n.name);
        if (id && named && named !== id) {
            // Its kubelet's credential fixes the name; the provider id is the kubelet's own claim (docs/security.md#node-names).
            add("problem", `node ${n.name}`, `named after instance ${named} but its provider id names ${id}: the CCM and the Cluster Autoscaler take it for ${id}'s Node (this project does not)`,
                `check ${named}: a kubelet registered it so; delete the Node (\`kubectl delete node ${n.name}\`) and remove or re-join ${named}`);
            continue;
        }
        if (!n.providerId) {
            add("problem", `node ${n.name}`, "has no provider id: the Cluster Autoscaler ignores it and the CCM creates no pod route for it", "re-join the node with kubelet --provider-id=<region>.<instance-id> (the attach script sets it)");
        } else if (!id) {
            add("problem", `node ${n.name}`, `provider id "${n.providerId}" is not <region>.<instance-id>`, "fix the kubelet's --provider-id and re-join the node");
        } else if (!expectedIds.has(id)) {
            const inst = instances.get(id) ?? null;
            if (!inst) add("problem", `node ${n.name}`, `Node points at ${id}, which no longer exists (Ready=${n.readyStatus || "?"}); the CCM only removes such Nodes once they are Ready=Unknown`, `delete the Node: \`kubectl delete node ${n.name}\``);
            else if (!n.providerId.startsWith(`${info.region}.`)) add("problem", `node ${n.name}`, `provider id "${n.providerId}" names another region than ${info.region}`, "fix the kubelet's --provider-id and re-join the node");
            else add("warning", `node ${n.name}`, `instance ${id} is not part of the stack (no pool, master or existingNodes entry)`, "add it to existingNodes in the stack config, or remove it from the cluster");
        }
    }

    if (noNode.length) {
        const results = await ctx.bootstrapLogs(noNode.map((x) => x.e.id));
        for (const { e, inst } of noNode) {
            const r = results.find((x) => x.instanceId === e.id);
            const age = Math.round(ctx.ageMinutes(inst.creationTime));
            const base = `Running for ${Number.isFinite(age) ? `${age} min` : "a while"} but no Node has provider id ${providerIdOf(info.region, e.id)}`;
            if (r && r.ok) {
                const log = redact(r.output);
                add("problem", `${e.id} (${e.role})`, `${base}. Bootstrap log: ${summarizeLog(log) || "(empty)"}`,
                    `read the whole log on the instance (${BOOTSTRAP_LOG_DIR}/) — the lines above name the failing step; fix it, then re-run the join (reboot a pool instance; an existing node is not in the cluster: \`pulumi up --refresh\` attaches it again)`, log);
            } else {
                add("problem", `${e.id} (${e.role})`, `${base}. Could not read its bootstrap log: ${r?.error ? errorText(r.error) : "no result"}`,
                    "check the Cloud Assistant agent on the instance (ECS console → Cloud Assistant), or connect with VNC and read /var/log/alicloud-kubeadm/ and /var/log/cloud-init-output.log");
            }
        }
    }
    if (!out.some((f) => f.status !== "ok")) {
        const ready = nodes.filter((n) => n.ready).length;
        add("ok", "nodes", `${nodes.length} Node(s), ${ready} Ready; every one of the ${expected.length} instance(s) has its Node with the right provider id`, "");
    }
    return out;
}
