/**
 * Join material check: the bootstrap tokens on master 0 (`kubeadm token list -o json`) and their
 * expiry against the pools and existing nodes that join with them; control-plane health (`/readyz`)
 * and etcd members against the masters. Token secrets are removed on the master before any output
 * leaves it; only token ids are ever printed.
 */
import { unescapeListed } from "../cloud/operations";
import { DoctorContext, redact } from "./context";
import { Finding } from "./types";

/** One bootstrap token as `kubeadm token list -o json` prints it (output.kubeadm.k8s.io BootstrapToken), secret removed. */
export interface TokenView {
    /** Public token id (the part before the dot). */
    id: string;
    /** Expiry (RFC 3339); "" when the token never expires (ttl 0). */
    expires: string;
    usages: string[];
    groups: string[];
    description: string;
}

/**
 * Parses `kubeadm token list -o json`: one JSON object per token, printed back to back (not an array).
 * @param text Command output (its token secrets may already be redacted).
 * @returns The tokens, with only their public ids.
 */
export function parseTokenList(text: string): TokenView[] {
    const objects: string[] = [];
    let depth = 0, start = -1, inString = false, escaped = false;
    for (let i = 0; i < text.length; i++) {
        const c = text[i];
        if (inString) { if (escaped) escaped = false; else if (c === "\\") escaped = true; else if (c === "\"") inString = false; continue; }
        if (c === "\"") inString = true;
        else if (c === "{") { if (depth++ === 0) start = i; }
        else if (c === "}" && depth > 0 && --depth === 0) objects.push(text.slice(start, i + 1));
    }
    return objects.map((o) => JSON.parse(o) as Record<string, unknown>).filter((o) => typeof o.token === "string").map((o) => ({
        id: String(o.token).split(".")[0], expires: typeof o.expires === "string" ? o.expires : "",
        usages: Array.isArray(o.usages) ? o.usages.map(String) : [], groups: Array.isArray(o.groups) ? o.groups.map(String) : [],
        description: redact(String(o.description ?? "")),
    }));
}

/**
 * The groups whose bootstrap tokens kubeadm's CSR auto-approval covers: lines `<ClusterRoleBinding>\t<group>,...` of the
 * bindings to `system:certificates.k8s.io:certificatesigningrequests:nodeclient` (doctor-join.sh `auto_approved`).
 * @returns group → binding
 */
export function parseAutoApproved(text: string): Map<string, string> {
    const out = new Map<string, string>();
    for (const [binding, groups] of text.split("\n").map((l) => l.split("\t")).filter((f) => f.length === 2 && f[0] !== "")) {
        for (const g of groups.split(",").filter(Boolean)) out.set(g, binding);
    }
    return out;
}

/** How many of the recent joins' identity signatures used each digest (NodeAdmitted Events: `<time>\t<message ... identity signed with sha256>`). */
export function parseAdmittedDigests(text: string): Map<string, number> {
    const out = new Map<string, number>();
    for (const m of text.matchAll(/identity signed with ([a-z0-9]+)/g)) out.set(m[1], (out.get(m[1]) ?? 0) + 1);
    return out;
}

/** Lines `<time>\t<reason code>\t<message>` of the admission service's AdmissionRefused Events, oldest first. */
export function parseAdmissionRefusals(text: string): { at: string; reason: string; message: string }[] {
    return text.split("\n").map((l) => l.split("\t").map(unescapeListed)).filter((f) => f.length >= 3 && f[1] !== "")
        .map((f) => ({ at: f[0], reason: f[1], message: f.slice(2).join("\t") })).sort((a, b) => a.at.localeCompare(b.at));
}

/** etcd `member list -w simple` line: `id, status, name, peer urls, client urls, is learner`. */
export function parseEtcdMembers(text: string): { id: string; status: string; name: string; peerUrls: string[] }[] {
    return text.split("\n").map((l) => l.split(",").map((f) => f.trim())).filter((f) => f.length >= 4 && /^[0-9a-f]+$/.test(f[0]))
        .map((f) => ({ id: f[0], status: f[1], name: f[2], peerUrls: f[3].split(/\s+/).filter(Boolean) }));
}

/**
 * Runs the Join material check.
 * @param ctx Shared reads of this doctor run.
 * @returns Findings; throws when master 0 cannot be reached.
 */
export async function checkJoinMaterial(ctx: DoctorContext): Promise<Finding[]> {
    const { info } = ctx;
    const s = await ctx.onMaster("doctor-join");
    const out: Finding[] = [];
    const add = (status: Finding["status"], subject: string, evidence: string, next: string) => out.push({ check: "join", status, subject, evidence, next });

    // Tokens vs the pools and existing nodes that use them.
    const users = new Map<string, { names: string[]; critical: boolean }>();
    for (const p of info.pools) { if (!p.tokenId) continue; const u = users.get(p.tokenId) ?? { names: [], critical: false }; u.names.push(`pool ${p.name}`); u.critical = true; users.set(p.tokenId, u); }
    for (const e of info.existingNodes) { if (!e.tokenId) continue; const u = users.get(e.tokenId) ?? { names: [], critical: false }; u.names.push(`existing node ${e.instanceId}`); users.set(e.tokenId, u); }
    if (!s.tokens || s.tokens.rc !== 0) {
        add("problem", "bootstrap tokens", `\`kubeadm token list\` failed on master 0: ${redact(s.tokens?.output ?? "no output").trim().slice(-300)}`, "check kubeadm and /etc/kubernetes/admin.conf on master 0");
    } else {
        const tokens = parseTokenList(s.tokens.output);
        for (const [id, u] of users) {
            const t = tokens.find((x) => x.id === id);
            const subject = `token ${id}`;
            const who = u.names.join(", ");
            const sev: Finding["status"] = u.critical ? "problem" : "warning";
            const recreate = "replace the BootstrapToken so the user data carries a live token (`pulumi up --replace <its URN>`), or configure a longer ttl (0 never expires)";
            if (!t) { add(sev, subject, `used by ${who}, but not on the cluster (expired and cleaned up, or deleted): new nodes cannot join`, recreate); continue; }
            const exp = t.expires ? Date.parse(t.expires) : NaN;
            if (Number.isFinite(exp) && exp <= ctx.opts.now) add(sev, subject, `used by ${who}; expired at ${t.expires}: new nodes cannot join`, recreate);
            else if (Number.isFinite(exp) && exp - ctx.opts.now < 24 * 3600_000) add("warning", subject, `used by ${who}; expires at ${t.expires} (within 24 h)`, recreate);
            else if (!["authentication", "signing"].every((x) => t.usages.includes(x))) add("problem", subject, `used by ${who}; usages are [${t.usages.join(", ")}], a join needs authentication and signing`, recreate);
            else add("ok", subject, `used by ${who}; ${t.expires ? `expires ${t.expires}` : "never expires (ttl 0: whoever reads the user data can join a node)"}`, "");
        }
        // A token in a group kubeadm auto-approves gets its holder a kubelet client certificate for any node name (the
        // init token master 0 deletes, a control-plane join's while it lives, a pool's without admission): each one named.
        const autoApproved = s.autoapprove && s.autoapprove.rc === 0 ? parseAutoApproved(s.autoapprove.output) : new Map<string, string>();
        for (const t of tokens) {
            const group = t.groups.find((g) => autoApproved.has(g));
            if (group === undefined) continue;
            const who = users.get(t.id)?.names.join(", ");
            add("warning", `token ${t.id}`, `in group ${group}, which kubeadm auto-approves (ClusterRoleBinding ${autoApproved.get(group)}): whoever holds it gets a kubelet ` +
                `client certificate for any node name; ${t.expires ? `expires ${t.expires}` : "never expires"}${who ? `; used by ${who}` : ` ("${t.description}")`}`,
                who ? "join that pool through admission (no token); then this token is deleted" : `delete it on a master unless something joins with it: \`kubeadm token delete ${t.id}\``);
        }
        if (s.autoapprove && s.autoapprove.rc !== 0) {
            add("warning", "auto-approved tokens", `could not read the CSR auto-approval bindings: ${redact(s.autoapprove.output).trim().slice(-300)}`, "check kubectl on master 0");
        }
        // Nodes join through admission (docs/admission.md): a never-expiring token of this project that nothing uses
        // is left over (a migration whose token deletion failed, or one made by hand), and lets its holder join nodes.
        for (const t of tokens.filter((x) => !x.expires && !users.has(x.id) && x.description.startsWith("alicloud-kubeadm"))) {
            add("warning", `token ${t.id}`, `never expires and no pool or existing node uses it ("${t.description}"): whoever has it can join a node`,
                `delete it on a master: \`kubeadm token delete ${t.id}\``);
        }
    }

    // Admission: the service's recent refusals (Events, kept about an hour by the API server).
    const refusals = s.admission && s.admission.rc === 0 ? parseAdmissionRefusals(s.admission.output) : [];
    if (refusals.length > 0) {
        const counts = [...refusals.reduce((m, r) => m.set(r.reason, (m.get(r.reason) ?? 0) + 1), new Map<string, number>())].map(([k, v]) => `${k} ×${v}`).join(", ");
        const latest = refusals[refusals.length - 1];
        add("warning", "admission refusals", redact(`${refusals.length} recent refusal(s): ${counts}; latest ${latest.at}: ${latest.message}`).slice(0, 600),
            "each refusal names its fix; all of them: `kubectl -n kube-system get events --field-selector reason=AdmissionRefused`");
    } else if (s.admission && s.admission.rc !== 0 && (info.pools.some((p) => !p.tokenId) || info.existingNodes.some((e) => !e.tokenId))) {
        add("warning", "admission refusals", `could not list the admission service's events: ${redact(s.admission.output).trim().slice(-300)}`, "check kubectl on master 0");
    }

    // The digest Alibaba's identity signatures used in the recent joins (SHA-1 is accepted unless admission.allowSha1 is false).
    const digests = s.admitted && s.admitted.rc === 0 ? parseAdmittedDigests(s.admitted.output) : new Map<string, number>();
    if (digests.size > 0) {
        const counts = [...digests].map(([d, n]) => `${d} ×${n}`).join(", ");
        if (digests.has("sha1")) {
            add("warning", "identity signature digest", `the recent joins' instance identity signatures used ${counts}: SHA-1 is accepted (admission.allowSha1), ` +
                "so a SHA-1 collision against Alibaba's signature would be accepted as an identity", "report it (docs/security.md#sha-1); set admission.allowSha1: false once Alibaba signs with SHA-256");
        } else {
            add("ok", "identity signature digest", `the recent joins' instance identity signatures used ${counts} (no SHA-1: admission.allowSha1: false would refuse it, docs/security.md#sha-1)`, "");
        }
    }

    // Control plane.
    const rz = s.readyz;
    if (!rz || rz.rc !== 0 || !/readyz check passed/.test(rz.output)) {
        const failed = (rz?.output ?? "").split("\n").filter((l) => l.startsWith("[-]")).join(" ");
        add("problem", "control plane /readyz", `API server not ready: ${redact(failed || (rz?.output ?? "no output")).trim().slice(-400)}`, "read the failing check's logs: `crictl logs` of kube-apiserver/etcd on the masters, `journalctl -u kubelet`");
    } else add("ok", "control plane /readyz", "readyz check passed", "");

    const masters = await ctx.instances(info.masterInstanceIds);
    const ips = new Map([...masters.values()].filter((m): m is NonNullable<typeof m> => !!m).map((m) => [m.privateIp, m.instanceId]));
    if (!s.etcd || s.etcd.rc !== 0) {
        add("warning", "etcd members", `could not list etcd members: ${redact(s.etcd?.output ?? "no output").trim().slice(-300)}`, "on master 0: `crictl ps --name etcd` and `etcdctl member list` with the certificates in /etc/kubernetes/pki/etcd");
    } else {
        const members = parseEtcdMembers(s.etcd.output);
        const ipOf = (u: string) => /\/\/([^:/]+)/.exec(u)?.[1] ?? "";
        const stray = members.filter((m) => !m.peerUrls.some((u) => ips.has(ipOf(u))));
        const covered = new Set(members.flatMap((m) => m.peerUrls.map(ipOf)));
        const lonely = [...ips.entries()].filter(([ip]) => !covered.has(ip)).map(([, id]) => id);
        for (const m of stray) add("problem", `etcd member ${m.name || m.id}`, `peer ${m.peerUrls.join(" ")} is not one of the masters (${info.masterInstanceIds.join(", ")}): a removed master left its member, and quorum counts it`, `remove it: \`etcdctl member remove ${m.id}\` on a healthy master (doctor only reads)`);
        for (const id of lonely) add("problem", `master ${id}`, "has no etcd member", "the control-plane join of this master did not finish: see its bootstrap log in /var/log/alicloud-kubeadm/");
        for (const m of members.filter((x) => x.status !== "started")) add("warning", `etcd member ${m.name || m.id}`, `status ${m.status}`, "check etcd on that master");
        if (!stray.length && !lonely.length) add("ok", "etcd members", `${members.length} member(s) for ${info.masterInstanceIds.length} master(s)`, "");
    }
    return out;
}
