// The admission decision: a node proves its identity with its PKCS#7-signed instance identity document whose
// audience is a challenge of this service; the service checks signature, challenge (freshness, single use,
// source address), account, region, membership of this cluster (a pool's scaling group in a joining state, or
// an existing node), that the cloud's private IP is the connection's source, and that no Node holds the identity
// unless the machine is really new (nodes.ts: a stale heartbeat and a restart since, or an operator's leave); then issues a bootstrap token good for minutes, for that node only (approver.ts signs only its
// CSR). Every decision is logged and recorded. Node built-ins only (shipped in the service's ConfigMap).
import { checkChallenge } from "./challenge";
import { DEFAULT_READMIT_AFTER_SECONDS, readmissionRefusal, type NodeRecord } from "./nodes";
import { SignatureError, verifySignedData, type TrustedSigner } from "./pkcs7";

/** Why a node was refused (stable codes: the node's log, `doctor` and the tests use them). */
export type RefusalReason =
    | "malformed" | "challenge-invalid" | "challenge-expired" | "challenge-replayed" | "signature-invalid" | "audience-mismatch"
    | "account-mismatch" | "region-mismatch" | "not-a-member" | "source-ip-mismatch" | "already-registered" | "internal";

/** What each refusal tells the node to do (printed by the attach script). */
export const REFUSAL_ADVICE: Record<RefusalReason, string> = {
    "malformed": "the request is not what the attach script sends: use the attach script of this cluster",
    "challenge-invalid": "the challenge was not issued to this address by this cluster: run the attach script again",
    "challenge-expired": "the challenge expired before it was used (clock or slow metadata service): run the attach script again",
    "challenge-replayed": "this challenge was already used: a document can be used once; run the attach script again",
    "signature-invalid": "the identity document is forged, altered, or signed by a certificate this cluster does not trust (see README: rotating the admission certificate)",
    "audience-mismatch": "the signed document was made for another challenge: run the attach script again",
    "account-mismatch": "the instance belongs to another Alibaba Cloud account than the cluster",
    "region-mismatch": "the instance is in another region than the cluster",
    "not-a-member": "the instance is in no scaling group of this cluster (Pending/InService/Protected) and not in existingNodes: add it to the config and run pulumi up",
    "source-ip-mismatch": "the request did not come from the instance's primary private IP: call the admission service directly, not through a proxy or NAT",
    "already-registered": "a Node already holds this identity and the machine is not new (its heartbeat is fresh, or the instance was not restarted since): " +
        "if this is a re-join, delete the Node, or let it in with kubectl annotate node <name> alicloud-kubeadm/readmit-until=<RFC 3339 time ≤ 24 h ahead> (docs/admission.md)",
    "internal": "the admission service could not decide (cloud or API server error): the attach script retries",
};

/** An instance of this cluster, as the cloud sees it now. */
export interface Member {
    instanceId: string;
    /** The instance's primary private IPv4 address, from the cloud. */
    privateIp: string;
    /** How it belongs: a pool's scaling group, or an `existingNodes` entry (or the manual tag, when enabled). */
    source: "pool" | "existing" | "tag";
    /** Pool name, or `existing`. */
    pool: string;
    /** ESS lifecycle state, for pool members. */
    state?: string;
    /** The scaling group it is a member of, for pool members. */
    scalingGroupId?: string;
    /** When the instance was last started (ECS `StartTime`), ms; undefined when the cloud did not say. */
    startedAt?: number;
}

/** The cloud view of membership (cloud.ts reads it from ESS/ECS; tests give the emulator's). */
export interface CloudView {
    /** The member, or undefined when the instance is no member of this cluster in a joining state. */
    member(instanceId: string): Promise<Member | undefined>;
}

/** The API server side (kube.ts; an in-memory model in tests). */
export interface ClusterView {
    /** Records that challenge `id` was used; false when it already was (by any replica). */
    claimOnce(id: string, expiresAt: number): Promise<boolean>;
    /** The Node named after this provider id, or undefined when there is none. */
    node(providerId: string): Promise<NodeRecord | undefined>;
    /** Creates a bootstrap token for this one node, recording its pool (the label the service sets on its Node); returns `<id>.<secret>` and its expiry. */
    createNodeToken(providerId: string, instanceId: string, ttlSeconds: number, pool: string): Promise<{ token: string; expiresAt: number }>;
    /** Keeps a decision for `doctor` (refusals) and audit. */
    record(decision: Decision): Promise<void>;
}

export interface AdmissionSettings {
    /** The cluster's Alibaba Cloud account id (`owner-account-id`). */
    accountId: string;
    /** The cluster's region id. */
    regionId: string;
    /** Trusted instance identity signing certificates. */
    signers: readonly TrustedSigner[];
    /** HMAC keys of challenges (the first issues; all verify, for key rotation). */
    challengeKeys: readonly Buffer[];
    /** Challenge lifetime, seconds. */
    challengeTtlSeconds: number;
    /** Bootstrap token lifetime, seconds. */
    tokenTtlSeconds: number;
    /** How stale an existing Node's heartbeat must be before its instance may be admitted again (and restarted since), seconds. Default {@link DEFAULT_READMIT_AFTER_SECONDS}. */
    readmitAfterSeconds?: number;
    /** Accept identity signatures with a SHA-1 digest (docs/security.md#sha-1). Default true. */
    allowSha1?: boolean;
}

export interface AdmitRequest {
    /** The instance identity document as `/latest/dynamic/instance-identity/document` returned it. */
    document: string;
    /** `/latest/dynamic/instance-identity/pkcs7?audience=<challenge>`. */
    signature: string;
    /** The challenge used as audience. */
    audience: string;
}

export interface Decision {
    admitted: boolean;
    reason?: RefusalReason;
    message: string;
    sourceIp: string;
    instanceId?: string;
    providerId?: string;
    pool?: string;
    at: string;
}

export type AdmitResult = Decision & { token?: string; expiresAt?: string };

/**
 * The content Alibaba signs for a document requested with an audience: the document's JSON object with an
 * `audience` member added (Alibaba's "use instance identities" example; docs/admission.md). When the PKCS#7
 * carries its content, that content is used instead; either way the signed JSON must name the challenge.
 */
export function documentWithAudience(document: string, audience: string): Buffer {
    const trimmed = document.trim();
    if (!trimmed.endsWith("}")) throw new Error("the document is not a JSON object");
    const body = trimmed.slice(0, -1).trimEnd();
    return Buffer.from(`${body}${body.endsWith("{") ? "" : ","}"audience":${JSON.stringify(audience)}}`, "utf8");
}

/**
 * The members of a flat JSON object (string, number, boolean or null values), in order. Throws on anything
 * else, and on a key given twice: JSON.parse would keep the last of two keys silently, and a document whose
 * audience was appended unescaped could then name one instance first and another after it.
 */
export function flatJsonMembers(text: string): Array<[string, unknown]> {
    const token = /\s*("(?:[^"\\\u0000-\u001f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null|[{}:,])/y;
    let at = 0;
    const next = (): string => {
        token.lastIndex = at;
        const m = token.exec(text);
        if (!m) throw new Error(`unexpected input at ${at}`);
        at = token.lastIndex;
        return m[1];
    };
    if (next() !== "{") throw new Error("not a JSON object");
    const members: Array<[string, unknown]> = [];
    const seen = new Set<string>();
    let t = next();
    while (t !== "}") {
        if (members.length > 0) {
            if (t !== ",") throw new Error("expected , between members");
            t = next();
        }
        if (!t.startsWith("\"")) throw new Error("expected a string key");
        const key = JSON.parse(t) as string;
        if (seen.has(key)) throw new Error(`the key ${JSON.stringify(key)} is given twice`);
        seen.add(key);
        if (next() !== ":") throw new Error("expected :");
        const value = next();
        if (/^[{}:,]$/.test(value)) throw new Error(`the value of ${JSON.stringify(key)} is not a string, number, boolean or null`);
        members.push([key, JSON.parse(value)]);
        t = next();
    }
    if (text.slice(at).trim() !== "") throw new Error("data after the object");
    return members;
}

const str = (v: unknown): string | undefined => (typeof v === "string" && v.length > 0 && v.length < 256 ? v : undefined);

/** Decides one request. Never throws: errors become `internal` refusals. */
export async function admit(req: AdmitRequest, sourceIp: string, settings: AdmissionSettings, cloud: CloudView, cluster: ClusterView, now = Date.now()): Promise<AdmitResult> {
    const at = new Date(now).toISOString();
    const result = await decide(req, sourceIp, settings, cloud, cluster, now).catch((e): AdmitResult => ({
        admitted: false, reason: "internal", message: `internal error: ${(e as Error).message ?? e}`, sourceIp, at,
    }));
    const decision: Decision = { ...result, at };
    delete (decision as AdmitResult).token;
    delete (decision as AdmitResult).expiresAt;
    log(decision);
    const recorded = recordable(cluster, decision, now);
    if (recorded) await cluster.record(recorded).catch((e) => log({ ...decision, message: `${decision.message} (not recorded: ${(e as Error).message})` }));
    return { ...result, at };
}

/** Refusals anyone who reaches the port can cause: no valid challenge, or no signature by Alibaba. */
const UNAUTHENTICATED: ReadonlySet<RefusalReason> = new Set(["malformed", "challenge-invalid", "challenge-expired", "signature-invalid"]);
const UNAUTHENTICATED_RECORD_INTERVAL_MS = 60_000;
const unauthenticatedRecords = new WeakMap<ClusterView, Map<string, { at: number; suppressed: number }>>();

/**
 * What to record in the cluster for a decision: every admission and every refusal of a verified document; a
 * refusal before the signature was verified at most once a minute per reason (with the number left out since),
 * so that requests without any credential cannot turn into a stream of writes to the API server. All are logged.
 */
function recordable(cluster: ClusterView, d: Decision, now: number): Decision | undefined {
    if (d.admitted || !d.reason || !UNAUTHENTICATED.has(d.reason)) return d;
    let byReason = unauthenticatedRecords.get(cluster);
    if (!byReason) unauthenticatedRecords.set(cluster, (byReason = new Map()));
    const last = byReason.get(d.reason);
    if (last && now - last.at < UNAUTHENTICATED_RECORD_INTERVAL_MS) {
        last.suppressed++;
        return undefined;
    }
    byReason.set(d.reason, { at: now, suppressed: 0 });
    return last?.suppressed ? { ...d, message: `${d.message} (and ${last.suppressed} more like it in the minute before, not recorded)` } : d;
}

function log(d: Decision): void {
    if (process.env.AK_ADMISSION_LOG === "off") return;
    process.stdout.write(JSON.stringify({ event: "admission", ...d }) + "\n");
}

async function decide(req: AdmitRequest, sourceIp: string, s: AdmissionSettings, cloud: CloudView, cluster: ClusterView, now: number): Promise<AdmitResult> {
    const at = new Date(now).toISOString();
    const refuse = (reason: RefusalReason, message: string, extra: Partial<Decision> = {}): AdmitResult =>
        ({ admitted: false, reason, message: `${message}; ${REFUSAL_ADVICE[reason]}`, sourceIp, at, ...extra });
    if (typeof req !== "object" || req === null || typeof req.document !== "string" || typeof req.signature !== "string" || typeof req.audience !== "string"
        || req.document.length > 8192 || req.signature.length > 16384 || req.audience.length > 200) {
        return refuse("malformed", "expected JSON {document, signature, audience} as strings");
    }
    // 1. The challenge: ours, for this address, not expired (cheap checks before any cryptography or I/O).
    const ch = checkChallenge(s.challengeKeys, req.audience, sourceIp, s.challengeTtlSeconds, now);
    if (!ch.ok) return refuse(ch.reason, ch.message);
    // 2. The signature, by the configured certificate, over the document bound to that challenge.
    let signed: Buffer;
    let digest = "";
    try {
        signed = verifySignedData(req.signature, documentWithAudience(req.document, req.audience), s.signers, { allowSha1: s.allowSha1, onDigest: (d) => { digest = d; } });
    } catch (e) {
        return refuse("signature-invalid", e instanceof SignatureError ? e.message : `unreadable: ${(e as Error).message}`);
    }
    // The signed JSON must be a flat object with each key once and the audience as its last member (as Alibaba
    // appends it): nothing before or after the audience can repeat or override the instance's own members.
    let members: Array<[string, unknown]>;
    try {
        members = flatJsonMembers(signed.toString("utf8"));
    } catch (e) {
        return refuse("malformed", `the signed content is not a flat JSON document with each key once: ${(e as Error).message}`);
    }
    const doc = Object.fromEntries(members);
    if (doc.audience !== req.audience || members[members.length - 1][0] !== "audience") return refuse("audience-mismatch", "the signed document names another audience");
    const instanceId = str(doc["instance-id"]);
    const regionId = str(doc["region-id"]);
    const accountId = str(doc["owner-account-id"]) ?? str(doc["account-id"]);
    if (!instanceId || !/^i-[a-z0-9]+$/.test(instanceId) || !regionId) return refuse("malformed", "the signed document lacks instance-id or region-id");
    const providerId = `${regionId}.${instanceId}`;
    const who = { instanceId, providerId };
    if (accountId !== s.accountId) return refuse("account-mismatch", `instance ${instanceId} belongs to account ${accountId ?? "(none)"}, not the cluster's`, who);
    if (regionId !== s.regionId) return refuse("region-mismatch", `instance ${instanceId} is in ${regionId}, the cluster in ${s.regionId}`, who);
    // 3. Single use across replicas (after the signature, so garbage cannot burn challenges).
    if (!(await cluster.claimOnce(ch.id, ch.expiresAt))) return refuse("challenge-replayed", "the challenge was used before", who);
    // 4. Membership now, from the cloud, and the source address.
    const member = await cloud.member(instanceId);
    if (!member) return refuse("not-a-member", `instance ${instanceId} is not a member of this cluster`, who);
    const withPool = { ...who, pool: member.pool };
    if (member.privateIp !== sourceIp) return refuse("source-ip-mismatch", `instance ${instanceId} has private IP ${member.privateIp}, the request came from ${sourceIp}`, withPool);
    // 5. A second claim of an identity whose Node exists: only for a machine that is really new.
    const node = await cluster.node(providerId);
    const held = node && readmissionRefusal(providerId, node, member.startedAt, (s.readmitAfterSeconds ?? DEFAULT_READMIT_AFTER_SECONDS) * 1000, now);
    if (held) return refuse("already-registered", held, withPool);
    // 6. A credential for this node only, for minutes.
    const { token, expiresAt } = await cluster.createNodeToken(providerId, instanceId, s.tokenTtlSeconds, member.pool);
    return {
        // The digest is recorded for doctor (docs/security.md#sha-1).
        admitted: true, message: `admitted ${instanceId} (${member.source} ${member.pool}${member.state ? `, ${member.state}` : ""}) as ${providerId}` +
            (node ? " over its existing Node (a restarted machine after a stale heartbeat, or allowed by readmit-until)" : "") + `; identity signed with ${digest}`,
        sourceIp, at, ...withPool, token, expiresAt: new Date(expiresAt).toISOString(),
    };
}
