/**
 * A small OSS client for the backups (doctor's listing, the restore's signed download): OSS V4 signatures in the
 * Authorization header (docs/upstream.md#oss-v4-signature), virtual-hosted buckets, the caller's credentials from the
 * Alibaba chain (an STS token goes in `x-oss-security-token`, never in the URL); each request takes its turn from the
 * process's pacer like every other cloud call. Node built-ins only.
 */
import * as crypto from "crypto";
import * as http from "http";
import * as https from "https";
import { pace } from "./pacer";

/** Credentials that sign a request. */
export interface OssCredentials { accessKeyId: string; accessKeySecret: string; securityToken?: string }

/** Where a bucket is. */
export interface OssTarget {
    /** `https://oss-<region>.aliyuncs.com` (the bucket goes in front of the host). */
    endpoint: string;
    region: string;
    bucket: string;
    /** Connect to this `host:port` instead of the endpoint's host (tests: the emulator on 127.0.0.1). Default none. */
    connectTo?: string;
}

const hmac = (key: Buffer | string, data: string) => crypto.createHmac("sha256", key).update(data).digest();
const encodePath = (p: string) => p.split("/").map((s) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)).join("/");

/**
 * The headers of an OSS V4-signed request: `x-oss-date`, `x-oss-content-sha256: UNSIGNED-PAYLOAD`, the token when there
 * is one, and Authorization. `headers` are the request's own (content-type, x-oss-*), signed as they are.
 */
export function signOssV4(method: string, t: OssTarget, key: string, query: Record<string, string>, headers: Record<string, string>,
    cred: OssCredentials, now = new Date()): Record<string, string> {
    const date = now.toISOString().replace(/[-:]/g, "").replace(/\.\d{3}/, "");
    const day = date.slice(0, 8);
    const all: Record<string, string> = { ...Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v])), "x-oss-date": date, "x-oss-content-sha256": "UNSIGNED-PAYLOAD" };
    if (cred.securityToken) all["x-oss-security-token"] = cred.securityToken;
    const signed = Object.keys(all).filter((h) => h.startsWith("x-oss-") || h === "content-type" || h === "content-md5").sort();
    const canonicalQuery = Object.keys(query).sort().map((k) => (query[k] ? `${encodeURIComponent(k)}=${encodeURIComponent(query[k])}` : encodeURIComponent(k))).join("&");
    const canonical = [method, encodePath(`/${t.bucket}/${key}`), canonicalQuery, signed.map((h) => `${h}:${all[h].trim()}\n`).join(""), "", "UNSIGNED-PAYLOAD"].join("\n");
    const scope = `${day}/${t.region}/oss/aliyun_v4_request`;
    const toSign = ["OSS4-HMAC-SHA256", date, scope, crypto.createHash("sha256").update(canonical).digest("hex")].join("\n");
    let k = hmac(`aliyun_v4${cred.accessKeySecret}`, day);
    for (const part of [t.region, "oss", "aliyun_v4_request"]) k = hmac(k, part);
    return { ...all, authorization: `OSS4-HMAC-SHA256 Credential=${cred.accessKeyId}/${scope},Signature=${hmac(k, toSign).toString("hex")}` };
}

/** An OSS error answer. */
export class OssError extends Error {
    constructor(readonly status: number, readonly code: string, message: string) { super(message); }
}

/** An OSS bucket name (3-63 of a-z, 0-9 and -): it goes into the host name of the signed requests (and their security token). */
export const OSS_BUCKET_NAME = /^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$/;

/** The URL of an object (or of the bucket when `key` is empty), without a query. Throws when the bucket is not a bucket name, so no request goes to another host. */
export function ossUrl(t: OssTarget, key: string): string {
    if (!OSS_BUCKET_NAME.test(t.bucket)) throw new Error(`${JSON.stringify(t.bucket.slice(0, 80))} is not an OSS bucket name (3-63 of a-z, 0-9 and -)`);
    const u = new URL(t.endpoint);
    return `${u.protocol}//${t.bucket}.${u.host}/${encodePath(key)}`;
}

/** One signed request; resolves with the body, throws OssError on an error answer. */
export async function ossRequest(method: "GET" | "PUT", t: OssTarget, key: string, cred: OssCredentials, opts: { query?: Record<string, string>; body?: Buffer; headers?: Record<string, string> } = {}): Promise<Buffer> {
    // Its turn from the process's pacer first (./pacer.ts), then signed: the signature's date is the sending time.
    await pace(`oss:${method}`);
    const query = opts.query ?? {};
    const headers = signOssV4(method, t, key, query, opts.headers ?? {}, cred);
    const url = new URL(ossUrl(t, key));
    for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
    const [connectHost, connectPort] = (t.connectTo ?? "").split(":");
    const lib = url.protocol === "https:" ? https : http;
    return new Promise((resolve, reject) => {
        const req = lib.request({
            method, protocol: url.protocol, host: connectHost || url.hostname, port: connectPort || url.port || undefined,
            path: `${url.pathname}${url.search}`, headers: { ...headers, host: url.host, ...(opts.body ? { "content-length": opts.body.length } : {}) },
            servername: url.hostname,
        }, (res) => {
            const chunks: Buffer[] = [];
            res.on("data", (c: Buffer) => chunks.push(c));
            res.on("end", () => {
                const body = Buffer.concat(chunks);
                if ((res.statusCode ?? 500) < 300) return resolve(body);
                const text = body.toString("utf8");
                reject(new OssError(res.statusCode ?? 500, /<Code>([^<]*)</.exec(text)?.[1] ?? "", `OSS ${method} ${t.bucket}/${key}: ${res.statusCode} ${/<Message>([^<]*)</.exec(text)?.[1] ?? text.slice(0, 200)}`));
            });
        });
        req.on("error", reject);
        req.end(opts.body);
    });
}

/** One object of a listing. */
export interface OssObject { key: string; size: number; lastModified: Date }

/** Every object under `prefix` (ListObjectsV2, following continuation tokens), oldest name first. */
export async function listObjects(t: OssTarget, prefix: string, cred: OssCredentials): Promise<OssObject[]> {
    const out: OssObject[] = [];
    let token = "";
    for (;;) {
        const query: Record<string, string> = { "list-type": "2", prefix, "max-keys": "1000", ...(token ? { "continuation-token": token } : {}) };
        const xml = (await ossRequest("GET", t, "", cred, { query })).toString("utf8");
        for (const m of xml.matchAll(/<Contents>([\s\S]*?)<\/Contents>/g)) {
            const field = (n: string) => new RegExp(`<${n}>([^<]*)</${n}>`).exec(m[1])?.[1] ?? "";
            out.push({ key: field("Key"), size: Number(field("Size")), lastModified: new Date(field("LastModified")) });
        }
        token = /<IsTruncated>true<\/IsTruncated>/.test(xml) ? (/<NextContinuationToken>([^<]*)</.exec(xml)?.[1] ?? "") : "";
        if (!token) return out.sort((a, b) => a.key.localeCompare(b.key));
    }
}
