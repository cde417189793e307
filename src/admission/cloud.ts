// Membership of this cluster, read from the cloud with the masters' RAM role (host network: the metadata
// service is reachable; pods are not): ESS DescribeScalingInstances on this cluster's pools' groups (members in
// a state a joining node can be in), ECS DescribeInstances for the instance's private IP, and the existing
// nodes listed in the config. Signed with RPC signature V1 (HMAC-SHA1), parameters in the POST body so
// nothing lands in a URL. Node built-ins only (shipped in the service's ConfigMap).
import * as crypto from "crypto";
import * as http from "http";
import * as https from "https";
import type { CloudView, Member } from "./admit";
import { pace, throttled } from "../cloud/pacer";

/** ESS lifecycle states a joining or re-joining node can be in (Protected: fixed pools protect their members). */
export const JOINING_STATES: readonly string[] = ["Pending", "Pending:Wait", "InService", "Protected"];

export interface Credentials { accessKeyId: string; accessKeySecret: string; securityToken?: string; expiresAt?: number }

export interface CloudSettings {
    regionId: string;
    /** ESS groups of this cluster's pools: scaling group id → pool name. */
    scalingGroups: Record<string, string>;
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

function percent(s: string): string {
    return encodeURIComponent(s).replace(/[!'()*]/g, (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase());
}

function httpRequest(url: string, opts: { method: string; headers?: Record<string, string>; body?: string; timeoutMs?: number }): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
        const mod = url.startsWith("https:") ? https : http;
        const req = mod.request(url, { method: opts.method, headers: opts.headers, timeout: opts.timeoutMs ?? 10_000 }, (res) => {
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
    constructor(private readonly s: CloudSettings) {}

    private async creds(): Promise<Credentials> {
        if (this.cached && (this.cached.expiresAt === undefined || this.cached.expiresAt - Date.now() > 5 * 60_000)) return this.cached;
        const env = process.env;
        this.cached = this.s.credentials ? await this.s.credentials()
            : env.ALIBABA_CLOUD_ACCESS_KEY_ID && env.ALIBABA_CLOUD_ACCESS_KEY_SECRET
                ? { accessKeyId: env.ALIBABA_CLOUD_ACCESS_KEY_ID, accessKeySecret: env.ALIBABA_CLOUD_ACCESS_KEY_SECRET, securityToken: env.ALIBABA_CLOUD_SECURITY_TOKEN }
                : await ramRoleCredentials(this.s.metadataUrl);
        return this.cached;
    }

    async call(product: "ecs" | "ess", action: string, params: Record<string, string>): Promise<Record<string, unknown>> {
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
            const res = await httpRequest(`${base}/`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body });
            const out = JSON.parse(res.body || "{}") as Record<string, unknown>;
            if (res.status === 200) return out;
            const code = String(out.Code ?? res.status);
            if (/^Throttling/.test(code)) throttled(`${product}:${action}`, undefined, slotTakenAt);
            if (attempt < 4 && (res.status >= 500 || /^Throttling|ServiceUnavailable/.test(code))) {
                await new Promise((r) => setTimeout(r, 200 * 2 ** attempt));
                continue;
            }
            throw new Error(`${product} ${action}: ${code}: ${String(out.Message ?? "")}`);
        }
    }
}

/** The cloud's view of this cluster's members. */
export class AlibabaCloudView implements CloudView {
    readonly rpc: RpcClient;
    constructor(private readonly s: CloudSettings, rpc?: RpcClient) {
        this.rpc = rpc ?? new RpcClient(s);
    }

    async member(instanceId: string): Promise<Member | undefined> {
        const instance = await this.instance(instanceId);
        if (!instance) return undefined;
        const existing = this.s.existingNodes[instanceId];
        if (existing !== undefined) return { instanceId, privateIp: instance.privateIp, source: "existing", pool: existing };
        for (const [groupId, pool] of Object.entries(this.s.scalingGroups)) {
            const out = await this.rpc.call("ess", "DescribeScalingInstances", { ScalingGroupId: groupId, "InstanceId.1": instanceId, PageSize: "50" });
            const list = ((out.ScalingInstances as { ScalingInstance?: Array<{ InstanceId: string; LifecycleState: string }> })?.ScalingInstance ?? [])
                .filter((s) => s.InstanceId === instanceId);
            const m = list.find((s) => JOINING_STATES.includes(s.LifecycleState));
            if (m) return { instanceId, privateIp: instance.privateIp, source: "pool", pool, state: m.LifecycleState };
        }
        if (this.s.joinTag) {
            const [k, v] = this.s.joinTag.split("=");
            if (instance.tags[k] === (v ?? "")) return { instanceId, privateIp: instance.privateIp, source: "tag", pool: "existing" };
        }
        return undefined;
    }

    private async instance(instanceId: string): Promise<{ privateIp: string; tags: Record<string, string> } | undefined> {
        const out = await this.rpc.call("ecs", "DescribeInstances", { InstanceIds: JSON.stringify([instanceId]) });
        type Inst = { InstanceId: string; Status: string; VpcAttributes?: { PrivateIpAddress?: { IpAddress?: string[] } }; Tags?: { Tag?: Array<{ TagKey: string; TagValue: string }> } };
        const inst = ((out.Instances as { Instance?: Inst[] })?.Instance ?? []).find((i) => i.InstanceId === instanceId);
        const ip = inst?.VpcAttributes?.PrivateIpAddress?.IpAddress?.[0];
        if (!inst || !ip) return undefined;
        return { privateIp: ip, tags: Object.fromEntries((inst.Tags?.Tag ?? []).map((t) => [t.TagKey, t.TagValue])) };
    }
}
