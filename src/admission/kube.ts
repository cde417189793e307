// The API server side of admission: single-use challenge claims (a Lease per used challenge, so every replica
// sees the use), the Ready check, admission bootstrap tokens, decision records (Events `AdmissionRefused` /
// `NodeAdmitted` that `doctor` lists), the shared challenge key, and the CSR approver loop. A small REST client
// over node:https (in-cluster service-account token, or a client certificate in tests). Node built-ins only.
import * as crypto from "crypto";
import * as fs from "fs";
import * as https from "https";
import type { ClusterView, Decision } from "./admit";
import { ADMITTED_GROUP, csrVerdict, KUBELET_CLIENT_SIGNER, PROVIDER_ID_ANNOTATION, TOKEN_LABEL, type Csr } from "./approver";
import type { PoolSource } from "./cloud";
import { POOL_LABEL, POOL_PENDING_TAINT, READMIT_UNTIL_ANNOTATION, type NodeRecord } from "./nodes";

export const NAMESPACE = "kube-system";
/** Name of the DaemonSet, the Events' involved object, and prefix of the objects the service creates. */
export const ADMISSION_NAME = "alicloud-kubeadm-admission";
/** Secret holding the challenge HMAC key(s), created by the first replica that needs it. */
export const KEY_SECRET = `${ADMISSION_NAME}-key`;
/** Label of the single-use claim Leases. */
export const CLAIM_LABEL = "alicloud-kubeadm/admission-claim";
export const REFUSED_REASON = "AdmissionRefused";
export const ADMITTED_REASON = "NodeAdmitted";

export interface KubeAccess {
    server: string;
    ca: string | Buffer;
    /** Bearer token (read each call: projected tokens rotate). */
    token?: () => string;
    cert?: string | Buffer;
    key?: string | Buffer;
}

/** The pod's in-cluster access (service-account token and CA; `AK_ADMISSION_SA_DIR` overrides the folder, for tests). */
export function inClusterAccess(): KubeAccess {
    const dir = process.env.AK_ADMISSION_SA_DIR ?? "/var/run/secrets/kubernetes.io/serviceaccount";
    const host = process.env.KUBERNETES_SERVICE_HOST ?? "127.0.0.1";
    return {
        server: `https://${host.includes(":") ? `[${host}]` : host}:${process.env.KUBERNETES_SERVICE_PORT ?? "443"}`,
        ca: fs.readFileSync(`${dir}/ca.crt`),
        token: () => fs.readFileSync(`${dir}/token`, "utf8").trim(),
    };
}

export class KubeError extends Error {
    constructor(readonly status: number, message: string) { super(message); }
}

export class Kube {
    private readonly agent: https.Agent;
    constructor(private readonly access: KubeAccess) {
        this.agent = new https.Agent({ keepAlive: true, maxSockets: 32, ca: access.ca, cert: access.cert, key: access.key });
    }

    request<T = Record<string, unknown>>(method: string, path: string, body?: unknown, contentType = "application/json"): Promise<T> {
        return new Promise((resolve, reject) => {
            const headers: Record<string, string> = { accept: "application/json" };
            if (this.access.token) headers.authorization = `Bearer ${this.access.token()}`;
            const data = body === undefined ? undefined : JSON.stringify(body);
            if (data) headers["content-type"] = contentType;
            const req = https.request(`${this.access.server}${path}`, { method, headers, agent: this.agent, timeout: 15_000 }, (res) => {
                const chunks: Buffer[] = [];
                res.on("data", (c: Buffer) => chunks.push(c));
                res.on("end", () => {
                    const text = Buffer.concat(chunks).toString("utf8");
                    const status = res.statusCode ?? 0;
                    if (status >= 200 && status < 300) {
                        try {
                            return resolve((text ? JSON.parse(text) : {}) as T);
                        } catch {
                            return reject(new KubeError(status, `${method} ${path.split("?")[0]}: ${status} with a body that is not JSON`));
                        }
                    }
                    let message = text;
                    try { message = (JSON.parse(text) as { message?: string }).message ?? text; } catch { /* not JSON */ }
                    reject(new KubeError(status, `${method} ${path.split("?")[0]}: ${status} ${message}`));
                });
            });
            req.on("timeout", () => req.destroy(new Error(`${method} ${path}: timeout`)));
            req.on("error", reject);
            req.end(data);
        });
    }

    close(): void {
        this.agent.destroy();
    }
}

const ns = (kind: string, name = ""): string => `/api/v1/namespaces/${NAMESPACE}/${kind}${name ? `/${name}` : ""}`;
const leases = (name = ""): string => `/apis/coordination.k8s.io/v1/namespaces/${NAMESPACE}/leases${name ? `/${name}` : ""}`;
/** The Lease naming the node an admission token was issued to (the approver's lookup; marked used on its first CSR, swept after the token's expiry). */
export const tokenLeaseName = (tokenId: string): string => `${ADMISSION_NAME}-token-${tokenId}`;
/** Annotation marking a token's Lease used (its first CSR was decided). */
export const TOKEN_USED_ANNOTATION = "alicloud-kubeadm/admission-token-used";
/** Annotation of a token's Lease: the pool the admitted instance belongs to (what the service labels its Node with). */
export const POOL_ANNOTATION = "alicloud-kubeadm/pool";
/** Annotation marking a token's Lease whose Node got its pool label (set by {@link labelAdmittedNodes}). */
export const LABELLED_ANNOTATION = "alicloud-kubeadm/admission-node-labelled";
/** Namespace of the nodes' heartbeat Leases. */
export const NODE_LEASE_NAMESPACE = "kube-node-lease";
const TOKEN_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789";
function randomToken(n: number): string {
    return [...crypto.randomBytes(n)].map((b) => TOKEN_CHARS[b % 36]).join("");
}

/** {@link ClusterView} over the API server. */
export class KubeClusterView implements ClusterView {
    constructor(private readonly kube: Kube, private readonly identity = process.env.HOSTNAME ?? "admission") {}

    async claimOnce(id: string, expiresAt: number): Promise<boolean> {
        try {
            await this.kube.request("POST", leases(), {
                metadata: { name: `${ADMISSION_NAME}-claim-${id}`, labels: { [CLAIM_LABEL]: "true" }, annotations: { [`${CLAIM_LABEL}-expires`]: new Date(expiresAt).toISOString() } },
                spec: { holderIdentity: this.identity, leaseDurationSeconds: Math.max(1, Math.ceil((expiresAt - Date.now()) / 1000)), acquireTime: new Date().toISOString().replace("Z", "000Z") },
            });
            return true;
        } catch (e) {
            if (e instanceof KubeError && e.status === 409) return false;
            throw e;
        }
    }

    async node(providerId: string): Promise<NodeRecord | undefined> {
        // Node names are provider ids (nodeRegistration.name); the approver only signs that name.
        type Node = { metadata: { creationTimestamp?: string; annotations?: Record<string, string> };
            status?: { conditions?: Array<{ type: string; status: string; lastHeartbeatTime?: string }> } };
        let node: Node;
        try {
            node = await this.kube.request<Node>("GET", `/api/v1/nodes/${encodeURIComponent(providerId)}`);
        } catch (e) {
            if (e instanceof KubeError && e.status === 404) return undefined;
            throw e;
        }
        let renewed: number | undefined;
        try {
            const lease = await this.kube.request<{ spec?: { renewTime?: string } }>("GET",
                `/apis/coordination.k8s.io/v1/namespaces/${NODE_LEASE_NAMESPACE}/leases/${encodeURIComponent(providerId)}`);
            renewed = time(lease.spec?.renewTime);
        } catch (e) {
            if (!(e instanceof KubeError && e.status === 404)) throw e;
        }
        const ready = (node.status?.conditions ?? []).find((c) => c.type === "Ready");
        const beats = [renewed, time(ready?.lastHeartbeatTime)].filter((t): t is number => t !== undefined);
        return {
            ready: ready?.status === "True", lastHeartbeat: beats.length ? Math.max(...beats) : undefined, createdAt: time(node.metadata.creationTimestamp),
            readmitUntil: time(node.metadata.annotations?.[READMIT_UNTIL_ANNOTATION]),
        };
    }

    async createNodeToken(providerId: string, instanceId: string, ttlSeconds: number, pool: string): Promise<{ token: string; expiresAt: number }> {
        for (let attempt = 0; ; attempt++) {
            const id = randomToken(6), secret = randomToken(16);
            const expiresAt = Date.now() + ttlSeconds * 1000;
            // The token's node, where the approver reads it (a Lease: the service reads no Secret but its key), written
            // before the token exists; a collision of ids is a 409 here and a new id.
            try {
                await this.kube.request("POST", leases(), {
                    metadata: { name: tokenLeaseName(id), labels: { [TOKEN_LABEL]: "true" },
                        annotations: { [PROVIDER_ID_ANNOTATION]: providerId, [POOL_ANNOTATION]: pool, [`${TOKEN_LABEL}-expires`]: new Date(expiresAt).toISOString() } },
                    spec: { holderIdentity: this.identity, leaseDurationSeconds: ttlSeconds, acquireTime: new Date().toISOString().replace("Z", "000Z") },
                });
            } catch (e) {
                if (e instanceof KubeError && e.status === 409 && attempt < 3) continue;
                throw e;
            }
            try {
                await this.kube.request("POST", ns("secrets"), {
                    metadata: { name: `bootstrap-token-${id}`, labels: { [TOKEN_LABEL]: "true" } },
                    type: "bootstrap.kubernetes.io/token",
                    stringData: {
                        "token-id": id, "token-secret": secret, "expiration": new Date(expiresAt).toISOString().replace(/\.\d+Z$/, "Z"),
                        "usage-bootstrap-authentication": "true", "usage-bootstrap-signing": "true", "auth-extra-groups": ADMITTED_GROUP,
                        "description": `alicloud-kubeadm admission: ${instanceId}, single use`,
                    },
                });
                return { token: `${id}.${secret}`, expiresAt };
            } catch (e) {
                await this.kube.request("DELETE", leases(tokenLeaseName(id))).catch(() => undefined);
                if (e instanceof KubeError && e.status === 409 && attempt < 3) continue;
                throw e;
            }
        }
    }

    async record(d: Decision): Promise<void> {
        const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
        await this.kube.request("POST", ns("events"), {
            metadata: { name: `${ADMISSION_NAME}.${crypto.randomBytes(8).toString("hex")}`, labels: { "alicloud-kubeadm/admission-decision": d.admitted ? "admitted" : "refused" } },
            involvedObject: { apiVersion: "apps/v1", kind: "DaemonSet", namespace: NAMESPACE, name: ADMISSION_NAME },
            reason: d.admitted ? ADMITTED_REASON : REFUSED_REASON, type: d.admitted ? "Normal" : "Warning",
            action: d.reason ?? "admitted",
            message: `${d.reason ? `${d.reason}: ` : ""}${d.instanceId ?? "unknown instance"} from ${d.sourceIp}: ${d.message}`.slice(0, 1000),
            source: { component: ADMISSION_NAME, host: this.identity }, reportingComponent: `alicloud-kubeadm/admission`, reportingInstance: this.identity,
            firstTimestamp: now, lastTimestamp: now, count: 1,
        });
    }

    /** Deletes claim Leases whose challenge expired and token Leases whose token expired (any replica may; a 404 means another did). */
    async sweepClaims(now = Date.now()): Promise<number> {
        let n = 0;
        for (const label of [CLAIM_LABEL, TOKEN_LABEL]) {
            const list = await this.kube.request<{ items: Array<{ metadata: { name: string; annotations?: Record<string, string> } }> }>(
                "GET", `${leases()}?labelSelector=${encodeURIComponent(`${label}=true`)}`);
            for (const l of list.items) {
                const exp = Date.parse(l.metadata.annotations?.[`${label}-expires`] ?? "");
                // A used token whose Node has not been labelled yet keeps its Lease (the record of its pool) an hour longer.
                const waiting = l.metadata.annotations?.[TOKEN_USED_ANNOTATION] !== undefined && l.metadata.annotations?.[LABELLED_ANNOTATION] === undefined;
                if (Number.isFinite(exp) && exp < now - (label === TOKEN_LABEL && waiting ? 3600_000 : 60_000)) {
                    await this.kube.request("DELETE", leases(l.metadata.name)).catch(() => undefined);
                    n++;
                }
            }
        }
        return n;
    }
}

function time(text: string | undefined): number | undefined {
    const ms = text ? Date.parse(text) : NaN;
    return Number.isFinite(ms) ? ms : undefined;
}

/** The challenge HMAC key shared by every replica: read from {@link KEY_SECRET}, created with a random key when absent. */
export async function challengeKeys(kube: Kube): Promise<Buffer[]> {
    for (let attempt = 0; attempt < 5; attempt++) {
        try {
            const s = await kube.request<{ data?: Record<string, string> }>("GET", ns("secrets", KEY_SECRET));
            const keys = Object.keys(s.data ?? {}).sort().map((k) => Buffer.from(s.data![k], "base64")).filter((k) => k.length >= 32);
            if (keys.length === 0) throw new Error(`${KEY_SECRET} holds no key of 32 bytes or more`);
            return keys;
        } catch (e) {
            if (!(e instanceof KubeError && e.status === 404)) throw e;
        }
        try {
            await kube.request("POST", ns("secrets"), { metadata: { name: KEY_SECRET }, type: "Opaque", data: { "key-1": crypto.randomBytes(32).toString("base64") } });
        } catch (e) {
            if (!(e instanceof KubeError && e.status === 409)) throw e;
        }
    }
    throw new Error(`could not read or create ${KEY_SECRET}`);
}

type Log = (event: Record<string, unknown>) => void;
const defaultLog: Log = (event) => { if (process.env.AK_ADMISSION_LOG !== "off") process.stdout.write(JSON.stringify(event) + "\n"); };

/** One pass of the CSR approver over pending kubelet client CSRs. Returns what it did, per CSR name. */
export async function approvePending(kube: Kube, log: Log = defaultLog): Promise<Record<string, "approve" | "deny">> {
    const list = await kube.request<{ items: Csr[] }>("GET", `/apis/certificates.k8s.io/v1/certificatesigningrequests?fieldSelector=${encodeURIComponent(`spec.signerName=${KUBELET_CLIENT_SIGNER}`)}`);
    const done: Record<string, "approve" | "deny"> = {};
    type TokenLease = { metadata: { name: string; resourceVersion?: string; labels?: Record<string, string>; annotations?: Record<string, string> }; spec?: unknown };
    // Per token id: its node while the token is unused (undefined once used, or unknown), and its Lease if any.
    const tokens = new Map<string, { providerId?: string; lease?: TokenLease }>();
    for (const csr of list.items) {
        // Decided CSRs stay listed for an hour: skip them before any lookup.
        if ((csr.status?.conditions ?? []).some((c) => c.type === "Approved" || c.type === "Denied" || c.type === "Failed")) continue;
        const m = /^system:bootstrap:([a-z0-9]{6})$/.exec(csr.spec.username ?? "");
        if (!m || !(csr.spec.groups ?? []).includes(ADMITTED_GROUP)) continue;
        if (!tokens.has(m[1])) {
            try {
                const l = await kube.request<TokenLease>("GET", leases(tokenLeaseName(m[1])));
                // A used token's Lease stays (marked) until the token has expired: nobody who may create Leases can
                // put a new one in its place for the seconds a deleted token still authenticates.
                const unused = l.metadata.labels?.[TOKEN_LABEL] === "true" && l.metadata.annotations?.[TOKEN_USED_ANNOTATION] === undefined;
                tokens.set(m[1], { providerId: unused ? l.metadata.annotations?.[PROVIDER_ID_ANNOTATION] : undefined, lease: l });
            } catch (e) {
                if (!(e instanceof KubeError && e.status === 404)) throw e;
                tokens.set(m[1], {});
            }
        }
        const decoded: Csr = { ...csr, spec: { ...csr.spec, request: Buffer.from(csr.spec.request, "base64").toString("utf8") } };
        const v = csrVerdict(decoded, (id) => tokens.get(id)?.providerId);
        if (v.action === "ignore") continue;
        const type = v.action === "approve" ? "Approved" : "Denied";
        const full = csr as Csr & { status?: { conditions?: unknown[] } };
        try {
            await kube.request("PUT", `/apis/certificates.k8s.io/v1/certificatesigningrequests/${csr.metadata.name}/approval`, {
                ...full, status: { ...(full.status ?? {}), conditions: [...(full.status?.conditions ?? []), {
                    type, status: "True", reason: "AlicloudKubeadmAdmission", message: v.why, lastUpdateTime: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
                }] },
            });
        } catch (e) {
            if (e instanceof KubeError && e.status === 409) continue; // another replica decided it
            throw e;
        }
        done[csr.metadata.name] = v.action;
        log({ event: "csr", action: v.action, csr: csr.metadata.name, providerId: v.providerId, tokenId: v.tokenId, why: v.why });
        // Single use: the token goes with its first CSR, whatever the verdict; its Lease is marked used (a 409 means
        // another replica marked it) and stays until the token's expiry (sweepClaims).
        const { lease } = tokens.get(v.tokenId) ?? {};
        tokens.set(v.tokenId, {}); // used: a later CSR of it in this pass is denied, its Lease not written twice
        if (lease) {
            await kube.request("PUT", leases(lease.metadata.name), { ...lease, metadata: { ...lease.metadata,
                annotations: { ...(lease.metadata.annotations ?? {}), [TOKEN_USED_ANNOTATION]: new Date().toISOString() } } }).catch((e) => {
                if (!(e instanceof KubeError && e.status === 409)) log({ event: "csr", error: `could not mark token ${v.tokenId} used: ${(e as Error).message}` });
            });
        }
        await kube.request("DELETE", ns("secrets", `bootstrap-token-${v.tokenId}`)).catch((e) => {
            if (!(e instanceof KubeError && e.status === 404)) log({ event: "csr", error: `could not delete token ${v.tokenId}: ${(e as Error).message}` });
        });
    }
    return done;
}

/** Label of the pool registrations: ConfigMaps in kube-system naming a scaling group whose members may join. */
export const POOL_REGISTRATION_LABEL = "alicloud-kubeadm/admission-pool";
/** Name of a pool's registration ConfigMap. */
export const poolRegistrationName = (pool: string): string => `${ADMISSION_NAME}-pool-${pool}`;

/**
 * The allowed scaling groups, read from the pool registrations (ConfigMaps labelled {@link POOL_REGISTRATION_LABEL},
 * data `scalingGroupId` and `pool`; or `instanceId` and `pool` for an existing node attached later): a pool attached to the cluster later, even from another Pulumi program, adds
 * one and the service reads it without a restart. Read at start, when a join names a group it does not know (at
 * most once per `minIntervalMs`, concurrent askers share the read) and by {@link KubePoolSource.refresh} on a timer.
 */
export class KubePoolSource implements PoolSource {
    private current?: ReadonlyMap<string, string>;
    private currentNodes: ReadonlyMap<string, string> = new Map();
    private reading?: Promise<ReadonlyMap<string, string>>;
    private lastRead = 0;
    constructor(private readonly kube: Kube, private readonly minIntervalMs = 1000) {}

    async groups(): Promise<ReadonlyMap<string, string>> {
        return this.current ?? this.refresh();
    }

    /** Existing nodes registered (data `instanceId` and `pool`): an ExistingNode attached to the cluster later. */
    async nodes(): Promise<ReadonlyMap<string, string>> {
        if (!this.current) await this.refresh();
        return this.currentNodes;
    }

    async refreshNodes(): Promise<ReadonlyMap<string, string>> {
        await this.refresh();
        return this.currentNodes;
    }

    refresh(): Promise<ReadonlyMap<string, string>> {
        if (this.reading) return this.reading;
        if (this.current && Date.now() - this.lastRead < this.minIntervalMs) return Promise.resolve(this.current);
        this.reading = (async () => {
            const list = await this.kube.request<{ items: Array<{ data?: Record<string, string> }> }>("GET",
                `${ns("configmaps")}?labelSelector=${encodeURIComponent(`${POOL_REGISTRATION_LABEL}=true`)}`);
            const groups = new Map<string, string>();
            const nodes = new Map<string, string>();
            for (const cm of list.items) {
                const id = cm.data?.scalingGroupId, pool = cm.data?.pool, instanceId = cm.data?.instanceId;
                if (id && /^asg-[A-Za-z0-9]+$/.test(id) && pool) groups.set(id, pool);
                else if (instanceId && /^i-[A-Za-z0-9]+$/.test(instanceId) && pool) nodes.set(instanceId, pool);
            }
            this.current = groups;
            this.currentNodes = nodes;
            this.lastRead = Date.now();
            return groups;
        })().finally(() => { this.reading = undefined; });
        return this.reading;
    }
}

type NodeObject = {
    metadata: { name: string; resourceVersion?: string; labels?: Record<string, string> };
    spec?: { taints?: Array<{ key: string; value?: string; effect: string }> };
};

/**
 * One pass of the pool labeller: each Node admitted by a token that was used (its CSR approved) gets
 * `node-restriction.kubernetes.io/alicloud-kubeadm-pool=<pool>` from the service's record of the instance's scaling
 * group (the token's Lease), and loses the registration taint that kept pods off it until then. A Node not there
 * yet is tried on the next pass. Returns the Nodes labelled.
 */
export async function labelAdmittedNodes(kube: Kube, log: Log = defaultLog): Promise<string[]> {
    type TokenLease = { metadata: { name: string; resourceVersion?: string; annotations?: Record<string, string>; labels?: Record<string, string> }; spec?: unknown };
    const list = await kube.request<{ items: TokenLease[] }>("GET", `${leases()}?labelSelector=${encodeURIComponent(`${TOKEN_LABEL}=true`)}`);
    const done: string[] = [];
    for (const lease of list.items) {
        const a = lease.metadata.annotations ?? {};
        const providerId = a[PROVIDER_ID_ANNOTATION], pool = a[POOL_ANNOTATION];
        if (!providerId || !pool || a[TOKEN_USED_ANNOTATION] === undefined || a[LABELLED_ANNOTATION] !== undefined) continue;
        let node: NodeObject;
        try {
            node = await kube.request<NodeObject>("GET", `/api/v1/nodes/${encodeURIComponent(providerId)}`);
        } catch (e) {
            if (e instanceof KubeError && e.status === 404) continue; // not registered yet
            throw e;
        }
        const taints = node.spec?.taints ?? [];
        const kept = taints.filter((t) => t.key !== POOL_PENDING_TAINT);
        if (node.metadata.labels?.[POOL_LABEL] !== pool || kept.length !== taints.length) {
            try {
                // A merge patch with the resourceVersion read: a concurrent change of the Node (taints) is a 409, tried next pass.
                await kube.request("PATCH", `/api/v1/nodes/${encodeURIComponent(providerId)}`, {
                    metadata: { resourceVersion: node.metadata.resourceVersion, labels: { [POOL_LABEL]: pool } },
                    ...(kept.length !== taints.length ? { spec: { taints: kept } } : {}),
                }, "application/merge-patch+json");
            } catch (e) {
                if (e instanceof KubeError && (e.status === 409 || e.status === 404)) continue;
                throw e;
            }
            log({ event: "node-labelled", node: providerId, pool });
            done.push(providerId);
        }
        await kube.request("PUT", leases(lease.metadata.name), { ...lease, metadata: { ...lease.metadata, annotations: { ...a, [LABELLED_ANNOTATION]: new Date().toISOString() } } })
            .catch((e) => { if (!(e instanceof KubeError && e.status === 409)) throw e; });
    }
    return done;
}
