// Stateless challenges: any replica can check one (an HMAC with a key every replica reads from one Secret),
// each is bound to the address it was handed to and expires within a short time. That it is used once across
// all replicas is the cluster's job (Cluster.claimOnce: a Lease named after the challenge). Node built-ins only.
import * as crypto from "crypto";

/** Challenge format: `ak1.<expiry unix seconds>.<nonce>.<mac>` (Base64url parts). Printable, no shell or URL metacharacters. */
export const CHALLENGE_PATTERN = /^ak1\.(\d{10})\.([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})$/;

function mac(key: Buffer, expiry: string, nonce: string, sourceIp: string): string {
    return crypto.createHmac("sha256", key).update(`ak1.${expiry}.${nonce}.${sourceIp}`).digest("base64url");
}

/** A fresh challenge for `sourceIp`, valid for `ttlSeconds`. */
export function issueChallenge(key: Buffer, sourceIp: string, ttlSeconds: number, now = Date.now()): string {
    const expiry = String(Math.floor(now / 1000) + ttlSeconds);
    const nonce = crypto.randomBytes(16).toString("base64url");
    return `ak1.${expiry}.${nonce}.${mac(key, expiry, nonce, sourceIp)}`;
}

export type ChallengeCheck = { ok: true; id: string; expiresAt: number } | { ok: false; reason: "challenge-invalid" | "challenge-expired"; message: string };

/**
 * Checks a challenge's MAC, its binding to `sourceIp` and its expiry. `id` names it for the single-use claim
 * (a hash: the challenge itself is not stored).
 */
export function checkChallenge(keys: readonly Buffer[], challenge: string, sourceIp: string, maxTtlSeconds: number, now = Date.now()): ChallengeCheck {
    const m = CHALLENGE_PATTERN.exec(challenge);
    if (!m) return { ok: false, reason: "challenge-invalid", message: "the audience is not a challenge of this service" };
    const [, expiry, nonce, given] = m;
    const good = keys.some((key) => crypto.timingSafeEqual(Buffer.from(mac(key, expiry, nonce, sourceIp)), Buffer.from(given)));
    if (!good) return { ok: false, reason: "challenge-invalid", message: "the challenge was not issued by this cluster to this address" };
    const expiresAt = Number(expiry) * 1000;
    if (expiresAt <= now) return { ok: false, reason: "challenge-expired", message: `the challenge expired ${Math.round((now - expiresAt) / 1000)} s ago: fetch a new one` };
    if (expiresAt - now > maxTtlSeconds * 1000 + 1000) return { ok: false, reason: "challenge-invalid", message: "the challenge's expiry is beyond this service's limit" };
    return { ok: true, id: crypto.createHash("sha256").update(challenge).digest("hex").slice(0, 40), expiresAt };
}
