/**
 * ACS3-HMAC-SHA256 ("signature V3") verification, written independently of the SDK from the
 * published algorithm (https://alibabacloud.com/help/en/sdk/product-overview/v3-request-structure-and-signature),
 * so the emulator really checks what the SDK sends.
 */
import * as crypto from "crypto";

/** Inputs of the canonical request. Header names must be lower case. */
export interface SignInput {
    method: string;
    path: string;
    query: Record<string, string>;
    headers: Record<string, string>;
    signedHeaders: string[];
    payloadHash: string;
}

/** RFC 3986 percent-encoding as Alibaba uses it (`!'()*` encoded too; space → %20). */
export function percentEncode(s: string): string {
    return encodeURIComponent(s).replace(/[!'()*]/g, (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase());
}

/** Hex ACS3-HMAC-SHA256 signature of a request. */
export function acs3Signature(input: SignInput, secret: string): string {
    const canonicalQuery = Object.keys(input.query).sort().map((k) => `${percentEncode(k)}=${percentEncode(input.query[k])}`).join("&");
    const signed = [...input.signedHeaders].sort();
    const canonicalHeaders = signed.map((h) => `${h}:${(input.headers[h] ?? "").trim()}\n`).join("");
    const canonicalRequest = [input.method, input.path, canonicalQuery, canonicalHeaders, signed.join(";"), input.payloadHash].join("\n");
    const stringToSign = "ACS3-HMAC-SHA256\n" + crypto.createHash("sha256").update(canonicalRequest).digest("hex");
    return crypto.createHmac("sha256", secret).update(stringToSign).digest("hex");
}

/** Outcome of {@link verifyRequest}: the caller's AccessKey id, or the API error the real gateway would return. */
export type VerifyResult = { ok: true; accessKeyId: string } | { ok: false; status: number; code: string; message: string };

/**
 * Verify the Authorization header of a request.
 * @param secretFor Returns the secret for an AccessKey id, or undefined when unknown.
 * @param seenNonces Nonces already used (replays are rejected); the new nonce is added.
 */
export function verifyRequest(req: { method: string; path: string; query: Record<string, string>; headers: Record<string, string>; body: Buffer }, secretFor: (ak: string) => string | undefined, seenNonces: Set<string>): VerifyResult {
    const auth = req.headers["authorization"] ?? "";
    const m = /^ACS3-HMAC-SHA256 Credential=([^,]+),SignedHeaders=([^,]+),Signature=([0-9a-f]{64})$/.exec(auth);
    if (!m) return { ok: false, status: 400, code: "IncompleteSignature", message: "The request signature does not conform to Aliyun standards." };
    const [, accessKeyId, signedList, signature] = m;
    const secret = secretFor(accessKeyId);
    if (secret === undefined) return { ok: false, status: 404, code: "InvalidAccessKeyId.NotFound", message: "Specified access key is not found." };

    const signedHeaders = signedList.split(";");
    const unsigned = Object.keys(req.headers).filter((h) => h.startsWith("x-acs-") && !signedHeaders.includes(h));
    if (!signedHeaders.includes("host") || unsigned.length > 0) {
        return { ok: false, status: 400, code: "IncompleteSignature", message: `Headers must be signed: host and every x-acs-* header (unsigned: ${unsigned.join(",") || "host"}).` };
    }
    const bodyHash = crypto.createHash("sha256").update(req.body).digest("hex");
    if (req.headers["x-acs-content-sha256"] !== bodyHash) {
        return { ok: false, status: 400, code: "SignatureDoesNotMatch", message: "x-acs-content-sha256 does not match the request body." };
    }
    const expected = acs3Signature({ method: req.method, path: req.path, query: req.query, headers: req.headers, signedHeaders, payloadHash: bodyHash }, secret);
    if (!crypto.timingSafeEqual(Buffer.from(expected), Buffer.from(signature))) {
        return { ok: false, status: 400, code: "SignatureDoesNotMatch", message: "Specified signature is not matched with our calculation." };
    }
    const date = Date.parse(req.headers["x-acs-date"] ?? "");
    if (!Number.isFinite(date) || Math.abs(Date.now() - date) > 15 * 60_000) {
        return { ok: false, status: 400, code: "InvalidTimeStamp.Expired", message: "Specified time stamp or date value is expired." };
    }
    const nonce = req.headers["x-acs-signature-nonce"] ?? "";
    if (!nonce || seenNonces.has(nonce)) {
        return { ok: false, status: 400, code: "SignatureNonceUsed", message: "Specified signature nonce was used already." };
    }
    seenNonces.add(nonce);
    return { ok: true, accessKeyId };
}

/**
 * RPC signature V1 (`SignatureMethod=HMAC-SHA1`, `SignatureVersion=1.0`), which older SDKs still send — e.g. the
 * Alibaba SDK vendored in the Cluster Autoscaler's alicloud provider. From the published algorithm
 * (https://www.alibabacloud.com/help/doc-detail/127287.htm): every request parameter but `Signature` (query and
 * form alike), sorted by name, each name and value percent-encoded, `name=value` joined by `&`; the string to
 * sign is `METHOD&%2F&` + the percent-encoded result; the signature is Base64(HMAC-SHA1(secret + "&", it)).
 */
export function rpcV1Signature(method: string, params: Record<string, string>, secret: string): string {
    const canonical = Object.keys(params).filter((k) => k !== "Signature").sort().map((k) => `${percentEncode(k)}=${percentEncode(params[k])}`).join("&");
    const stringToSign = `${method.toUpperCase()}&${percentEncode("/")}&${percentEncode(canonical)}`;
    return crypto.createHmac("sha1", `${secret}&`).update(stringToSign).digest("base64");
}

/**
 * Verify an RPC V1 signed request (no Authorization header; `AccessKeyId`, `Signature`, `SignatureNonce`,
 * `Timestamp` among the parameters). Same answers as {@link verifyRequest} for the same faults.
 */
export function verifyRpcV1(method: string, params: Record<string, string>, secretFor: (ak: string) => string | undefined, seenNonces: Set<string>): VerifyResult {
    if (!params.Signature || params.SignatureMethod !== "HMAC-SHA1" || params.SignatureVersion !== "1.0" || !params.AccessKeyId) {
        return { ok: false, status: 400, code: "IncompleteSignature", message: "The request signature does not conform to Aliyun standards." };
    }
    const secret = secretFor(params.AccessKeyId);
    if (secret === undefined) return { ok: false, status: 404, code: "InvalidAccessKeyId.NotFound", message: "Specified access key is not found." };
    const expected = Buffer.from(rpcV1Signature(method, params, secret));
    const given = Buffer.from(params.Signature);
    if (expected.length !== given.length || !crypto.timingSafeEqual(expected, given)) {
        return { ok: false, status: 400, code: "SignatureDoesNotMatch", message: "Specified signature is not matched with our calculation." };
    }
    const time = Date.parse(params.Timestamp ?? "");
    if (!Number.isFinite(time) || Math.abs(Date.now() - time) > 15 * 60_000) {
        return { ok: false, status: 400, code: "InvalidTimeStamp.Expired", message: "Specified time stamp or date value is expired." };
    }
    const nonce = params.SignatureNonce ?? "";
    if (!nonce || seenNonces.has(nonce)) {
        return { ok: false, status: 400, code: "SignatureNonceUsed", message: "Specified signature nonce was used already." };
    }
    seenNonces.add(nonce);
    return { ok: true, accessKeyId: params.AccessKeyId };
}
