/**
 * The secret channel: how a secret crosses Cloud Assistant without being readable in its records.
 * `DescribeInvocations` returns a command's content and parameters, and `DescribeInvocationResults` its
 * output, for weeks, to anyone with ECS read rights; so a secret only ever crosses sealed to a key pair
 * made for that one call, whose private half never leaves the side that made it and is dropped after the
 * call (docs/security.md#the-secret-channel).
 *
 * - Instance → provider (one round trip): the provider makes a key pair ({@link newRecipient}), sends the
 *   public key as a parameter; the script seals its answer to it (`ak_seal` in src/shell/ops/channel.sh)
 *   and prints only the sealed text; the provider opens it and forgets the private key.
 * - Provider → instance (two round trips): the `channel-open` operation makes a key pair on the instance
 *   (private key in a root-only tmpfs file named by a one-use channel id) and prints the public key; the
 *   provider seals the secret to it ({@link seal}) and sends the sealed text with the next command, whose
 *   script opens it (`ak_unseal`), which deletes the private key.
 *
 * Construction (an ECIES over what `openssl` ≥ 1.1.1 offers on a node): X25519 between a fresh ephemeral key of the
 * sender and the recipient's key; the 32-byte shared secret, Base64, is the password of `openssl enc
 * -aes-256-cbc -pbkdf2 -iter 1000 -md sha256 -salt` (key and IV = PBKDF2-HMAC-SHA256(password, salt, 1000, 48));
 * the plaintext is framed as the hex SHA-256 of the payload followed by the payload, checked after decryption.
 * Sealed text: `<sender's ephemeral public key, SPKI DER, Base64>.<"Salted__" | salt | ciphertext, Base64>`.
 *
 * `require()`s inside functions: Pulumi function serialization must not capture modules.
 */

import { CHANNEL_ID_PATTERN, CHANNEL_KEY_PATTERN, SEALED_PATTERN } from "../rules/formats";

export { CHANNEL_ID_PATTERN, CHANNEL_KEY_PATTERN as PUBLIC_KEY_PATTERN, SEALED_PATTERN };

const PBKDF2_ITERATIONS = 1000;

/** A key pair of the provider for one call: send `publicKey`, open the answer with `open`. */
export interface Recipient {
    /** X25519 public key, SPKI DER in Base64. */
    publicKey: string;
    /**
     * Opens a sealed text sent to this key.
     * @throws Error (never quoting the text) when it is not a sealed text for this key or was altered
     */
    open(sealed: string): string;
}

/** A fresh X25519 key pair, held only in memory. */
export function newRecipient(): Recipient {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const crypto = require("crypto") as typeof import("crypto");
    const { publicKey, privateKey } = crypto.generateKeyPairSync("x25519");
    return {
        publicKey: publicKey.export({ type: "spki", format: "der" }).toString("base64"),
        open: (sealed: string) => openWith(privateKey, sealed),
    };
}

/** A fresh channel id. */
export function newChannelId(): string {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return (require("crypto") as typeof import("crypto")).randomBytes(16).toString("hex");
}

function publicKeyOf(b64: string): import("crypto").KeyObject {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const crypto = require("crypto") as typeof import("crypto");
    if (!CHANNEL_KEY_PATTERN.test(b64)) throw new Error("the channel's public key is not an X25519 key (SPKI DER, Base64)");
    return crypto.createPublicKey({ key: Buffer.from(b64, "base64"), format: "der", type: "spki" });
}

function cipherKey(shared: Buffer, salt: Buffer): { key: Buffer; iv: Buffer } {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const crypto = require("crypto") as typeof import("crypto");
    // openssl enc -pass file: reads the password's first line: the Base64 of the shared secret.
    const derived = crypto.pbkdf2Sync(Buffer.from(shared.toString("base64"), "utf8"), salt, PBKDF2_ITERATIONS, 48, "sha256");
    return { key: derived.subarray(0, 32), iv: derived.subarray(32, 48) };
}

/**
 * Seals `plaintext` to an X25519 public key (what `channel-open` printed, or what a provider sent).
 * @returns the sealed text (see the module comment)
 */
export function seal(recipientPublicKey: string, plaintext: string): string {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const crypto = require("crypto") as typeof import("crypto");
    const recipient = publicKeyOf(recipientPublicKey);
    const eph = crypto.generateKeyPairSync("x25519");
    const shared = crypto.diffieHellman({ privateKey: eph.privateKey, publicKey: recipient });
    const salt = crypto.randomBytes(8);
    const { key, iv } = cipherKey(shared, salt);
    const payload = Buffer.from(plaintext, "utf8");
    const framed = Buffer.concat([Buffer.from(crypto.createHash("sha256").update(payload).digest("hex"), "ascii"), payload]);
    const cipher = crypto.createCipheriv("aes-256-cbc", key, iv);
    const body = Buffer.concat([Buffer.from("Salted__", "ascii"), salt, cipher.update(framed), cipher.final()]);
    return `${eph.publicKey.export({ type: "spki", format: "der" }).toString("base64")}.${body.toString("base64")}`;
}

function openWith(privateKey: import("crypto").KeyObject, sealed: string): string {
    const text = sealed.trim();
    if (!SEALED_PATTERN.test(text)) throw new Error("the instance did not answer with a sealed text (the channel's script failed; see its log on the instance)");
    const [ephB64, bodyB64] = text.split(".");
    return openSealedBytes(privateKey, ephB64, Buffer.from(bodyB64, "base64"), "the sealed text").toString("utf8");
}

/**
 * Opens what `ak_seal` (or an etcd backup, src/shell/etcd_backup.sh) sealed: the sender's ephemeral X25519 public key
 * (SPKI DER, Base64) and the openssl body (`Salted__`, salt, ciphertext of the payload's hex SHA-256 and the payload).
 * @throws Error when the key does not open it or the SHA-256 does not match (`what` names it in the message)
 */
export function openSealedBytes(privateKey: import("crypto").KeyObject, ephemeralPublicKey: string, body: Buffer, what = "the sealed data"): Buffer {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const crypto = require("crypto") as typeof import("crypto");
    const shared = sharedSecret(privateKey, ephemeralPublicKey);
    if (body.length < 32 || body.subarray(0, 8).toString("ascii") !== "Salted__") throw new Error(`${what} has no openssl salt header`);
    const { key, iv } = cipherKey(shared, body.subarray(8, 16));
    let framed: Buffer;
    try {
        const decipher = crypto.createDecipheriv("aes-256-cbc", key, iv);
        framed = Buffer.concat([decipher.update(body.subarray(16)), decipher.final()]);
    } catch {
        throw new Error(`${what} does not open with this key (sealed to another key, or altered)`);
    }
    const digest = framed.subarray(0, 64).toString("ascii");
    const payload = framed.subarray(64);
    if (digest !== crypto.createHash("sha256").update(payload).digest("hex")) {
        throw new Error(`${what} was altered: its SHA-256 does not match`);
    }
    return payload;
}

/**
 * The X25519 secret a private key shares with a sender's ephemeral public key (SPKI DER, Base64). Its Base64 is the
 * password of the one message (or backup) sealed with that ephemeral key, and of no other.
 */
export function sharedSecret(privateKey: import("crypto").KeyObject, ephemeralPublicKey: string): Buffer {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const crypto = require("crypto") as typeof import("crypto");
    return crypto.diffieHellman({ privateKey, publicKey: publicKeyOf(ephemeralPublicKey) });
}
