// Membership of this cluster, read from the cloud with the masters' RAM role (host network: the metadata
// service is reachable; pods are not). Per join, whatever the number of pools: one ECS DescribeInstances (the
// instance's private IP, tags and start time) and, for a pool member, one ESS DescribeScalingInstances on the one
// group the instance's tags point to (ESS tags every instance it creates with its group id): the tag only chooses
// which group to ask, the membership and its lifecycle state come from that call, made after the join asked.
// Concurrent joins share calls (up to 100 instances per DescribeInstances, 20 per DescribeScalingInstances). The
// allowed groups come from a PoolSource (kube.ts: the pool registrations in the cluster), re-read when an instance
// names a group it does not know. Every call goes through RpcClient.call, signed with RPC signature V1
// (HMAC-SHA1), parameters in the POST body so nothing lands in a URL. Node built-ins only (shipped in the
// service's ConfigMap).
import * as crypto from "crypto";
import * as http from "http";
import * as https from "https";
import type { CloudView, Member } from "./admit";
import { LEGACY_POOL_LABEL, POOL_LABEL } from "./nodes";
import { pace, throttled } from "../cloud/pacer";

/** ESS lifecycle states a joining or re-joining node can be in (Protected: fixed pools protect their members). */
export const JOINING_STATES: readonly string[] = ["Pending", "Pending:Wait", "InService", "Protected"];
/** The tag ESS puts on every instance it creates (docs/upstream.md#ess-instance-tags): the group to ask. */
export const SCALING_GROUP_TAG = "acs:autoscaling:scalingGroupId";
/** Tags a pool's scaling configuration puts on its instances naming the pool (the pool label as a tag): the group to ask when the ESS tag names none. */
const POOL_TAGS = [POOL_LABEL, LEGACY_POOL_LABEL] as const;
/** Instances per DescribeInstances (`InstanceIds`: a JSON array of up to 100) and per DescribeScalingInstances (`InstanceId.N`, N ≤ 20). */
const INSTANCES_PER_DESCRIBE = 100;
const INSTANCES_PER_SCALING_DESCRIBE = 20;

export interface Credentials { accessKeyId: string; accessKeySecret: string; securityToken?: string; expiresAt?: number }

/** The scaling groups whose members may join: group id → pool name. */
export interface PoolSource {
    /** The groups as last read. */
    groups(): Promise<ReadonlyMap<string, string>>;
    /** Reads them again (concurrent callers share one read; implementations may rate-limit). */
    refresh(): Promise<ReadonlyMap<string, string>>;
    /** Existing nodes registered besides the config's (an ExistingNode attached later): instance id → pool label value, as last read. */
    nodes?(): Promise<ReadonlyMap<string, string>>;
    /** Reads the registrations again, as {@link refresh}, and returns the nodes. */
    refreshNodes?(): Promise<ReadonlyMap<string, string>>;
}

/** A fixed set of groups (tests, and a service without registrations). */
export class StaticPools implements PoolSource {
    private readonly map: ReadonlyMap<string, string>;
    constructor(groups: Record<string, string>) { this.map = new Map(Object.entries(groups)); }
    async groups(): Promise<ReadonlyMap<string, string>> { return this.map; }
    async refresh(): Promise<ReadonlyMap<string, string>> { return this.map; }
}

export interface CloudSettings {
    regionId: string;
    /** The groups of this cluster's pools. */
    pools: PoolSource;
    /** Existing nodes of the config: instance id → pool label value. */
    existingNodes: Record<string, string>;
    /** When set, instances carrying this tag (`key=value`) may join (the manual one-line path; off by default). */
    joinTag?: string;
    /** Base URL of every product (tests: the emulator). Default `https://<product>-vpc.<region>.aliyuncs.com`. */
    endpoint?: string;
    /** Where credentials come from. Default: env ALIBABA_CLOUD_ACCESS_KEY_ID/SECRET[/SECURITY_TOKEN], else the instance RAM role. */
    credentials?: () => Promise<Credentials>;
    /** Metadata service base. Default http://100.100.100.200. */
    metadataUrl?: string;
}

const VERSIONS = { ecs: "2014-05-26", ess: "2014-08-28" } as const;
/** How long one call retries throttling and server errors, ms. */
export const RETRY_BUDGET_MS = 10_000;

function percent(s: string): string {
    return encodeURIComponent(s).replace(/[!'()*]/g, (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase());
}

const agents = { http: new http.Agent({ keepAlive: true, maxSockets: 64 }), https: new https.Agent({ keepAlive: true, maxSockets: 64 }) };

function httpRequest(url: string, opts: { method: string; headers?: Record<string, string>; body?: string; timeoutMs?: number; keepAlive?: boolean }): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
        const secure = url.startsWith("https:");
        const mod = secure ? https : http;
        const agent = opts.keepAlive ? (secure ? agents.https : agents.http) : undefined;
        const req = mod.request(url, { method: opts.method, headers: opts.headers, timeout: opts.timeoutMs ?? 10_000, agent }, (res) => {
            const chunks: Buffer[] = [];
            res.on("data", (c: Buffer) => chunks.push(c));
            res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }));
        });
        req.on("timeout", () => req.destroy(new Error(`timeout calling ${new URL(url).host}`)));
        req.on("error", reject);
        req.end(opts.body);
    });
}

/** Credentials of the instance RAM role, from the metadata service (IMDSv2 token when available). */
export async function ramRoleCredentials(metadataUrl = "http://100.100.100.200"): Promise<Credentials> {
    const headers: Record<string, string> = {};
    const token = await httpRequest(`${metadataUrl}/latest/api/token`, { method: "PUT", headers: { "X-aliyun-ecs-metadata-token-ttl-seconds": "300" }, timeoutMs: 2000 }).catch(() => undefined);
    if (token?.status === 200) headers["X-aliyun-ecs-metadata-token"] = token.body.trim();
    const role = await httpRequest(`${metadataUrl}/latest/meta-data/ram/security-credentials/`, { method: "GET", headers });
    if (role.status !== 200 || !role.body.trim()) throw new Error("the master has no RAM role (metadata ram/security-credentials)");
    const res = await httpRequest(`${metadataUrl}/latest/meta-data/ram/security-credentials/${encodeURIComponent(role.body.trim().split("\n")[0])}`, { method: "GET", headers });
    const c = JSON.parse(res.body) as { AccessKeyId: string; AccessKeySecret: string; SecurityToken: string; Expiration: string };
    return { accessKeyId: c.AccessKeyId, accessKeySecret: c.AccessKeySecret, securityToken: c.SecurityToken, expiresAt: Date.parse(c.Expiration) };
}

/** A minimal OpenAPI RPC client (ECS and ESS are RPC-style APIs). */
export class RpcClient {
    private cached?: Credentials;
    /** Calls made (attempts included), per action. */
    readonly calls = new Map<string, number>();
    constructor(private readonly s: CloudSettings) {}

    private reading?: Promise<Credentials>;

    /** Credentials, read again 5 minutes before they expire; concurrent calls share one read. */
    private async creds(): Promise<Credentials> {
        if (this.cached && (this.cached.expiresAt === undefined || this.cached.expiresAt - Date.now() > 5 * 60_000)) return this.cached;
        const env = process.env;
        this.reading ??= (this.s.credentials ? this.s.credentials()
            : env.ALIBABA_CLOUD_ACCESS_KEY_ID && env.ALIBABA_CLOUD_ACCESS_KEY_SECRET
                ? Promise.resolve({ accessKeyId: env.ALIBABA_CLOUD_ACCESS_KEY_ID, accessKeySecret: env.ALIBABA_CLOUD_ACCESS_KEY_SECRET, securityToken: env.ALIBABA_CLOUD_SECURITY_TOKEN })
                : ramRoleCredentials(this.s.metadataUrl)).finally(() => { this.reading = undefined; });
        this.cached = await this.reading;
        return this.cached;
    }

    /**
     * The one function every cloud call of the service goes through: signs, sends, and retries throttling, 5xx and
     * ServiceUnavailable with exponential backoff and full jitter (from 200 ms, at most 2 s apart) for up to
     * {@link RETRY_BUDGET_MS} (a join's request waits for it; the node's own retries come after).
     */
    async call(product: "ecs" | "ess", action: string, params: Record<string, string>): Promise<Record<string, unknown>> {
        const started = Date.now();
        for (let attempt = 1; ; attempt++) {
            const c = await this.creds();
            // The process's pacer (src/cloud/pacer.ts): every replica paces its calls per action and slows down when throttled.
            const { slotTakenAt } = await pace(`${product}:${action}`);
            const all: Record<string, string> = {
                ...params, Action: action, Version: VERSIONS[product], Format: "JSON", RegionId: this.s.regionId, AccessKeyId: c.accessKeyId,
                SignatureMethod: "HMAC-SHA1", SignatureVersion: "1.0", SignatureNonce: crypto.randomUUID(), Timestamp: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
                ...(c.securityToken ? { SecurityToken: c.securityToken } : {}),
            };
            const canonical = Object.keys(all).sort().map((k) => `${percent(k)}=${percent(all[k])}`).join("&");
            const signature = crypto.createHmac("sha1", `${c.accessKeySecret}&`).update(`POST&%2F&${percent(canonical)}`).digest("base64");
            const body = `${canonical}&Signature=${percent(signature)}`;
            const base = this.s.endpoint ?? `https://${product}-vpc.${this.s.regionId}.aliyuncs.com`;
            this.calls.set(action, (this.calls.get(action) ?? 0) + 1);
            const res = await httpRequest(`${base}/`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body, keepAlive: true });
            let out: Record<string, unknown>;
            try {
                out = JSON.parse(res.body || "{}") as Record<string, unknown>;
            } catch {
                out = {};
            }
            if (res.status === 200) return out;
            const code = String(out.Code ?? res.status);
            if (/^Throttling/.test(code)) throttled(`${product}:${action}`, undefined, slotTakenAt);
            const delay = Math.random() * Math.min(2000, 200 * 2 ** (attempt - 1));
            if ((res.status >= 500 || /^Throttling|ServiceUnavailable/.test(code)) && Date.now() + delay - started < RETRY_BUDGET_MS) {
                await new Promise((r) => setTimeout(r, delay));
                continue;
            }
            throw new CloudError(code, `${product} ${action}: ${code}: ${String(out.Message ?? "")}`);
        }
    }
}

/** An error answered by the cloud, with its code. */
export class CloudError extends Error {
    constructor(readonly code: string, message: string) { super(message); }
}

/**
 * Collects the keys asked for while a call is being made and fetches them together in the next one (at most
 * `max` per call, one call at a time): one join alone waits for one call; concurrent joins share calls, and the
 * answer each gets comes from a call started after it asked.
 */
export class Batcher<K, V> {
    private queue: Array<{ key: K; resolve: (v: V | undefined) => void; reject: (e: unknown) => void }> = [];
    private running = false;
    constructor(private readonly fetch: (keys: K[]) => Promise<Map<K, V>>, private readonly max: number) {}

    get(key: K): Promise<V | undefined> {
        return new Promise((resolve, reject) => {
            this.queue.push({ key, resolve, reject });
            if (!this.running) {
                this.running = true;
                setImmediate(() => void this.drain());
            }
        });
    }

    private async drain(): Promise<void> {
        while (this.queue.length > 0) {
            const batch: typeof this.queue = [];
            const keys: K[] = [];
            // The first `max` distinct keys and every waiter for them.
            this.queue = this.queue.filter((w) => {
                if (keys.includes(w.key)) return batch.push(w), false;
                if (keys.length < this.max) return keys.push(w.key), batch.push(w), false;
                return true;
            });
            try {
                const found = await this.fetch(keys);
                for (const w of batch) w.resolve(found.get(w.key));
            } catch (e) {
                for (const w of batch) w.reject(e);
            }
        }
        this.running = false;
    }
}

/** What DescribeInstances says of one instance. */
export interface InstanceFacts {
    privateIp: string;
    tags: Record<string, string>;
    /** ECS `StartTime` (when the instance was last started), ms; undefined when absent or unreadable. */
    startedAt?: number;
}

/** ECS `StartTime` in ms: `yyyy-MM-ddTHH:mmZ` (minutes, as the SDK models document it) or with seconds. */
export function parseStartTime(text: unknown): number | undefined {
    if (typeof text !== "string" || !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?Z$/.test(text)) return undefined;
    const ms = Date.parse(text.length === 17 ? text.replace("Z", ":00Z") : text);
    return Number.isFinite(ms) ? ms : undefined;
}

/** The cloud's view of this cluster's members. */
export class AlibabaCloudView implements CloudView {
    readonly rpc: RpcClient;
    private readonly instances: Batcher<string, InstanceFacts>;
    private readonly memberships = new Map<string, Batcher<string, string>>();

    constructor(private readonly s: CloudSettings, rpc?: RpcClient) {
        this.rpc = rpc ?? new RpcClient(s);
        this.instances = new Batcher((ids) => this.describeInstances(ids), INSTANCES_PER_DESCRIBE);
    }

    async member(instanceId: string): Promise<Member | undefined> {
        const instance = await this.instances.get(instanceId);
        if (!instance) return undefined;
        const facts = { instanceId, privateIp: instance.privateIp, startedAt: instance.startedAt };
        const existing = this.s.existingNodes[instanceId];
        if (existing !== undefined) return { ...facts, source: "existing", pool: existing };
        const group = await this.groupOf(instance.tags);
        if (group) {
            const state = await this.membershipBatcher(group.id).get(instanceId);
            if (state !== undefined && JOINING_STATES.includes(state)) return { ...facts, source: "pool", pool: group.pool, state, scalingGroupId: group.id };
        }
        // An instance ESS created is a pool's, never an existing node: only the others look at the node registrations.
        const registered = instance.tags[SCALING_GROUP_TAG] === undefined ? await this.registeredNode(instanceId) : undefined;
        if (registered !== undefined) return { ...facts, source: "existing", pool: registered };
        if (this.s.joinTag) {
            const eq = this.s.joinTag.indexOf("=");
            const [k, v] = eq < 0 ? [this.s.joinTag, ""] : [this.s.joinTag.slice(0, eq), this.s.joinTag.slice(eq + 1)];
            if (instance.tags[k] === v) return { ...facts, source: "tag", pool: "existing" };
        }
        return undefined;
    }

    /**
     * The allowed group the instance's tags point to: ESS's own group tag, else the pool a pool tag names. The
     * tags only choose which group is asked; a tag anyone could set on any instance gains nothing but that call.
     * A group not among the allowed ones makes the allowed groups be read again once (a pool added since).
     */
    private async groupOf(tags: Record<string, string>): Promise<{ id: string; pool: string } | undefined> {
        const pick = (groups: ReadonlyMap<string, string>): { id: string; pool: string } | undefined => {
            const byTag = tags[SCALING_GROUP_TAG];
            if (byTag !== undefined && groups.has(byTag)) return { id: byTag, pool: groups.get(byTag)! };
            for (const key of POOL_TAGS) {
                const pool = tags[key];
                const id = pool === undefined ? undefined : [...groups].find(([, p]) => p === pool)?.[0];
                if (id) return { id, pool: pool! };
            }
            return undefined;
        };
        const named = tags[SCALING_GROUP_TAG] !== undefined || POOL_TAGS.some((k) => tags[k] !== undefined);
        return pick(await this.s.pools.groups()) ?? (named ? pick(await this.s.pools.refresh()) : undefined);
    }

    /**
     * The pool label of an existing node registered while the service runs, or undefined: asked only of an instance
     * that is neither a configured existing node nor a pool member; one not among the registrations makes them be
     * read again once (a node attached since).
     */
    private async registeredNode(instanceId: string): Promise<string | undefined> {
        if (!this.s.pools.nodes || !this.s.pools.refreshNodes) return undefined;
        return (await this.s.pools.nodes()).get(instanceId) ?? (await this.s.pools.refreshNodes()).get(instanceId);
    }

    private membershipBatcher(groupId: string): Batcher<string, string> {
        let b = this.memberships.get(groupId);
        if (!b) this.memberships.set(groupId, (b = new Batcher((ids) => this.describeMemberships(groupId, ids), INSTANCES_PER_SCALING_DESCRIBE)));
        return b;
    }

    /** Lifecycle state of each of `ids` that is a member of `groupId`. */
    private async describeMemberships(groupId: string, ids: string[]): Promise<Map<string, string>> {
        const params: Record<string, string> = { ScalingGroupId: groupId, PageSize: "50" };
        ids.forEach((id, i) => { params[`InstanceId.${i + 1}`] = id; });
        const out = await this.rpc.call("ess", "DescribeScalingInstances", params);
        const list = (out.ScalingInstances as { ScalingInstance?: Array<{ InstanceId: string; LifecycleState: string }> })?.ScalingInstance ?? [];
        return new Map(list.filter((m) => ids.includes(m.InstanceId)).map((m) => [m.InstanceId, m.LifecycleState]));
    }

    private async describeInstances(ids: string[]): Promise<Map<string, InstanceFacts>> {
        const out = await this.rpc.call("ecs", "DescribeInstances", { InstanceIds: JSON.stringify(ids), PageSize: String(INSTANCES_PER_DESCRIBE) });
        type Inst = { InstanceId: string; StartTime?: string; VpcAttributes?: { PrivateIpAddress?: { IpAddress?: string[] } }; Tags?: { Tag?: Array<{ TagKey: string; TagValue: string }> } };
        const found = new Map<string, InstanceFacts>();
        for (const inst of (out.Instances as { Instance?: Inst[] })?.Instance ?? []) {
            const ip = inst.VpcAttributes?.PrivateIpAddress?.IpAddress?.[0];
            if (!ids.includes(inst.InstanceId) || !ip) continue;
            found.set(inst.InstanceId, {
                privateIp: ip, tags: Object.fromEntries((inst.Tags?.Tag ?? []).map((t) => [t.TagKey, t.TagValue])), startedAt: parseStartTime(inst.StartTime),
            });
        }
        return found;
    }
}
