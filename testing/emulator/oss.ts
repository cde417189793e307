/**
 * OSS in the emulator: its own REST protocol (not RPC), virtual-hosted buckets (`Host: <bucket>.oss-<region>[-internal].aliyuncs.com`),
 * OSS V4 signatures in the Authorization header, STS tokens, the RAM policy of the caller, versioning, `x-oss-forbid-overwrite`.
 * Only what the backups use: PutObject, GetObject, ListObjectsV2 (GET /?list-type=2). Written from the published API:
 * - V4 signature: https://www.alibabacloud.com/help/en/oss/developer-reference/recommend-to-use-signature-version-4 and the
 *   OSS Go SDK v2 signer (aliyun/alibabacloud-oss-go-sdk-v2 oss/signer/v4.go): canonical request = verb, `/bucket/key`
 *   (RFC 3986, `/` kept), sorted query, the `x-oss-*`, `content-type` and `content-md5` headers (plus AdditionalHeaders)
 *   as `name:trimmed value\n`, the additional header names, the payload hash (`x-oss-content-sha256`, UNSIGNED-PAYLOAD);
 *   string to sign `OSS4-HMAC-SHA256\n<x-oss-date>\n<day>/<region>/oss/aliyun_v4_request\n<hex sha256>`; key chain
 *   HMAC("aliyun_v4" + secret, day) → region → "oss" → "aliyun_v4_request". A request more than 15 minutes off is refused
 *   (RequestTimeTooSkewed), and a wrong x-oss-content-sha256 too (error 0002-00000214).
 * - STS: an `STS.` AccessKey needs its `x-oss-security-token` (the harsher reading: refused without it).
 * - PutObject (https://help.aliyun.com/en/oss/user-guide/0026-00000002): `x-oss-forbid-overwrite: true` on an existing key
 *   → 409 FileAlreadyExists. In a versioned bucket a put keeps the old object as a noncurrent version; whether the header
 *   is honoured there too is not confirmed: modelled as ignored (the old object survives either way).
 * - RAM: each AccessKey may carry a policy (`grant`); an action is allowed when a statement's Action and Resource
 *   (`acs:oss:*:*:<bucket>/<key>`, `*` matching anything) match, else 403 AccessDenied, as OSS answers.
 */
import * as crypto from "crypto";

/** One stored version of an object. */
export interface OssObjectVersion { body: Buffer; versionId: string; lastModified: string; etag: string }

/** A bucket: versioning and the objects' versions, newest last. */
export interface OssBucket { name: string; versioning: "Enabled" | "Suspended" | "Off"; objects: Map<string, OssObjectVersion[]> }

/** A RAM policy document as the masters' role carries it. */
export interface OssPolicy { Statement: Array<{ Effect: "Allow" | "Deny"; Action: string[]; Resource: string[] }> }

export class OssError extends Error {
    constructor(readonly status: number, readonly code: string, message: string) { super(message); }
}

/** What a request looks like to OSS. */
export interface OssRequest { method: string; host: string; path: string; rawQuery: string; headers: Record<string, string>; body: Buffer }

const encodePath = (p: string) => p.split("").map((c) => /[A-Za-z0-9\-._~/]/.test(c) ? c : Buffer.from(c).toString("hex").replace(/../g, (h) => `%${h.toUpperCase()}`)).join("");
const hmac = (key: Buffer | string, data: string) => crypto.createHmac("sha256", key).update(data).digest();
const glob = (pattern: string, value: string) => new RegExp(`^${pattern.split("*").map((s) => s.replace(/[.+?^${}()|[\]\\]/g, "\\$&")).join(".*")}$`).test(value);

/** The OSS part of the emulator's state and its request handler. */
export class OssState {
    readonly buckets = new Map<string, OssBucket>();
    /** AccessKey id → secret (and the STS token an `STS.` key needs). */
    readonly credentials = new Map<string, { secret: string; token?: string }>();
    /** AccessKey id → its RAM policy; a key without one may do anything (an account owner's key). */
    readonly policies = new Map<string, OssPolicy>();
    private seq = 0;

    addBucket(name: string, versioning: OssBucket["versioning"] = "Enabled"): OssBucket {
        const b: OssBucket = { name, versioning, objects: new Map() };
        this.buckets.set(name, b);
        return b;
    }

    /** STS credentials of a role, limited by its policy. */
    addStsCredentials(policy: OssPolicy): { accessKeyId: string; accessKeySecret: string; securityToken: string } {
        const c = { accessKeyId: `STS.${crypto.randomBytes(10).toString("hex")}`, accessKeySecret: crypto.randomBytes(20).toString("base64"), securityToken: crypto.randomBytes(40).toString("base64") };
        this.credentials.set(c.accessKeyId, { secret: c.accessKeySecret, token: c.securityToken });
        this.policies.set(c.accessKeyId, policy);
        return c;
    }

    /** The newest version of every object under `prefix`. */
    list(bucket: string, prefix = ""): Array<{ key: string } & OssObjectVersion> {
        const b = this.mustBucket(bucket);
        return [...b.objects.entries()].filter(([k]) => k.startsWith(prefix)).sort(([a], [c]) => a.localeCompare(c))
            .map(([key, versions]) => ({ key, ...versions[versions.length - 1] }));
    }

    /** Handles one request; throws OssError for what OSS refuses. */
    handle(req: OssRequest): { status: number; headers: Record<string, string>; body: Buffer } {
        const bucketName = /^([a-z0-9][a-z0-9-]{1,61}[a-z0-9])\.oss-[a-z0-9-]+\.aliyuncs\.com(:\d+)?$/.exec(req.host)?.[1];
        if (!bucketName) throw new OssError(400, "InvalidBucketName", `the host ${req.host} names no bucket (virtual-hosted style)`);
        const key = decodeURIComponent(req.path.replace(/^\//, ""));
        const accessKeyId = this.verify(req, bucketName, key);
        const bucket = this.buckets.get(bucketName);
        if (!bucket) throw new OssError(404, "NoSuchBucket", "The specified bucket does not exist.");
        const query = new URLSearchParams(req.rawQuery);
        if (req.method === "PUT" && key) {
            this.authorize(accessKeyId, "oss:PutObject", `${bucketName}/${key}`);
            const versions = bucket.objects.get(key) ?? [];
            if (versions.length > 0 && req.headers["x-oss-forbid-overwrite"] === "true" && bucket.versioning === "Off") {
                throw new OssError(409, "FileAlreadyExists", "The object you specified already exists and can not be overwritten.");
            }
            const v: OssObjectVersion = { body: req.body, versionId: `CAEQ${++this.seq}`, lastModified: new Date().toISOString(), etag: `"${crypto.createHash("md5").update(req.body).digest("hex").toUpperCase()}"` };
            bucket.objects.set(key, bucket.versioning === "Off" ? [v] : [...versions, v]);
            return { status: 200, headers: { etag: v.etag, ...(bucket.versioning === "Off" ? {} : { "x-oss-version-id": v.versionId }) }, body: Buffer.alloc(0) };
        }
        if (req.method === "GET" && key) {
            this.authorize(accessKeyId, "oss:GetObject", `${bucketName}/${key}`);
            const versions = bucket.objects.get(key);
            if (!versions?.length) throw new OssError(404, "NoSuchKey", "The specified key does not exist.");
            const v = versions[versions.length - 1];
            return { status: 200, headers: { etag: v.etag, "content-type": "application/octet-stream", "last-modified": new Date(v.lastModified).toUTCString() }, body: v.body };
        }
        if (req.method === "GET" && !key && query.get("list-type") === "2") {
            this.authorize(accessKeyId, "oss:ListObjects", bucketName);
            const prefix = query.get("prefix") ?? "";
            const rows = this.list(bucketName, prefix).map((o) =>
                `<Contents><Key>${o.key}</Key><LastModified>${o.lastModified}</LastModified><ETag>${o.etag}</ETag><Size>${o.body.length}</Size><StorageClass>Standard</StorageClass></Contents>`);
            const xml = `<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult><Name>${bucketName}</Name><Prefix>${prefix}</Prefix><MaxKeys>1000</MaxKeys><KeyCount>${rows.length}</KeyCount><IsTruncated>false</IsTruncated>${rows.join("")}</ListBucketResult>`;
            return { status: 200, headers: { "content-type": "application/xml" }, body: Buffer.from(xml) };
        }
        throw new OssError(405, "MethodNotAllowed", `the emulator's OSS does not do ${req.method} ${req.path}?${req.rawQuery}`);
    }

    private mustBucket(name: string): OssBucket {
        const b = this.buckets.get(name);
        if (!b) throw new Error(`emulator: no bucket ${name}`);
        return b;
    }

    private authorize(accessKeyId: string, action: string, resource: string): void {
        const policy = this.policies.get(accessKeyId);
        if (policy && !policyAllows(policy, action, resource)) {
            throw new OssError(403, "AccessDenied", `You have no right to access this object because of bucket acl or policy (${action} on ${resource}).`);
        }
    }

    /** Checks the V4 signature; returns the AccessKey id. */
    private verify(req: OssRequest, bucket: string, key: string): string {
        const auth = req.headers["authorization"] ?? "";
        const m = /^OSS4-HMAC-SHA256 Credential=([^/,]+)\/(\d{8})\/([a-z0-9-]+)\/oss\/aliyun_v4_request(?:,AdditionalHeaders=([a-z0-9;-]+))?,Signature=([0-9a-f]{64})$/.exec(auth);
        if (!m) throw new OssError(403, "AccessDenied", "Authorization header is invalid (OSS4-HMAC-SHA256 expected).");
        const [, accessKeyId, day, region, additional = "", signature] = m;
        const cred = this.credentials.get(accessKeyId);
        if (!cred) throw new OssError(403, "InvalidAccessKeyId", "The OSS Access Key Id you provided does not exist in our records.");
        if (cred.token !== undefined && req.headers["x-oss-security-token"] !== cred.token) {
            throw new OssError(403, "InvalidAccessKeyId", "The security token you provided is invalid.");
        }
        const date = req.headers["x-oss-date"] ?? "";
        const t = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(date);
        if (!t || date.slice(0, 8) !== day) throw new OssError(403, "AccessDenied", "x-oss-date is missing or does not match the credential's date.");
        if (Math.abs(Date.UTC(+t[1], +t[2] - 1, +t[3], +t[4], +t[5], +t[6]) - Date.now()) > 15 * 60_000) {
            throw new OssError(403, "RequestTimeTooSkewed", "The difference between the request time and the current time is too large.");
        }
        const payload = req.headers["x-oss-content-sha256"];
        if (payload !== "UNSIGNED-PAYLOAD") throw new OssError(400, "InvalidArgument", "x-oss-content-sha256 must be UNSIGNED-PAYLOAD (0002-00000214).");
        const extra = additional ? additional.split(";") : [];
        const names = Object.keys(req.headers).filter((h) => h.startsWith("x-oss-") || h === "content-type" || h === "content-md5" || extra.includes(h)).sort();
        const query = req.rawQuery.split("&").filter(Boolean).map((kv) => kv.split("=")).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
            .map(([k, v]) => (v ? `${k}=${v}` : k)).join("&");
        const canonical = [req.method, encodePath(`/${bucket}/${key}`), query, names.map((h) => `${h}:${req.headers[h].trim()}\n`).join(""), extra.join(";"), payload].join("\n");
        const toSign = ["OSS4-HMAC-SHA256", date, `${day}/${region}/oss/aliyun_v4_request`, crypto.createHash("sha256").update(canonical).digest("hex")].join("\n");
        let k = hmac(`aliyun_v4${cred.secret}`, day);
        for (const part of [region, "oss", "aliyun_v4_request"]) k = hmac(k, part);
        const expected = hmac(k, toSign).toString("hex");
        if (!crypto.timingSafeEqual(Buffer.from(expected), Buffer.from(signature))) {
            throw new OssError(403, "SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided.");
        }
        return accessKeyId;
    }
}

/**
 * Whether a RAM policy allows `action` (`oss:PutObject`) on `resource` (`<bucket>/<key>`, or `<bucket>` for bucket actions):
 * an Allow statement whose Action and Resource match (`*` matches anything, region and account too) and no Deny that does.
 */
export function policyAllows(policy: OssPolicy, action: string, resource: string): boolean {
    const arn = `acs:oss:*:*:${resource}`;
    const matches = (s: OssPolicy["Statement"][number]) => s.Action.some((a) => glob(a, action)) && s.Resource.some((r) => glob(r.replace(/^acs:oss:[^:]*:[^:]*:/, "acs:oss:*:*:"), arn));
    return !policy.Statement.some((s) => s.Effect === "Deny" && matches(s)) && policy.Statement.some((s) => s.Effect === "Allow" && matches(s));
}

/** OSS's XML error body. */
export function ossErrorXml(e: OssError, requestId: string): string {
    return `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${e.code}</Code><Message>${e.message}</Message><RequestId>${requestId}</RequestId><HostId>127.0.0.1</HostId></Error>`;
}
