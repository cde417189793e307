/**
 * BackupKey: the key etcd backups are sealed to (docs/disaster-recovery.md#the-backup-key). An X25519 key pair made here,
 * at `pulumi up`, by Node's crypto: the public half goes to the masters' backup script; the private half lives only in
 * this resource's state, a Pulumi secret (encrypted by the stack's secrets provider), never on an instance, in OSS or in
 * the cluster — a restore sends it sealed to master 0 for that one restore. Rotation: a new `generation` makes a new pair
 * for the backups from then on and keeps the old private keys in `retired` (secret) so older backups still open.
 */
import * as pulumi from "@pulumi/pulumi";
import { diffInputs, inputDiff } from "./diff";
import { withCarriedOutputs } from "./partialUpdate";
import { alwaysAnswered } from "./answered";

export interface BackupKeyInputs {
    /** Raise it to rotate the key. */
    generation: number;
    providerVersion?: string;
}

/** One key pair: its id (src/rules/backup.ts backupKeyId), the public half (SPKI DER, Base64), the private half (PKCS#8 PEM). */
export interface BackupKeyPair { keyId: string; publicKey: string; privateKey: string }

export interface BackupKeyOutputs extends BackupKeyInputs {
    keyId: string;
    publicKey: string;
    /** Secret. */
    privateKey: string;
    /** Earlier key pairs, newest first (secret): their backups still open with them. */
    retired: BackupKeyPair[];
}

/** A fresh X25519 key pair. */
export function newBackupKeyPair(): BackupKeyPair {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const crypto = require("crypto") as typeof import("crypto");
    const pair = crypto.generateKeyPairSync("x25519");
    const publicKey = pair.publicKey.export({ type: "spki", format: "der" }).toString("base64");
    return {
        keyId: crypto.createHash("sha256").update(Buffer.from(publicKey, "base64")).digest("hex").slice(0, 16),
        publicKey,
        privateKey: pair.privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
    };
}

export const BACKUP_KEY_PROVIDER_VERSION = "1";
export const BACKUP_KEY_SECRET_OUTPUTS = ["privateKey", "retired"] as const;

/** Never a replacement: deleting the resource would lose every private key, and with them every backup. */
const BACKUP_KEY_DIFF = inputDiff<BackupKeyInputs>()({ replace: [], update: ["generation", "providerVersion"], ignore: [] });

export const backupKeyProvider: pulumi.dynamic.ResourceProvider = withCarriedOutputs({
    async create(inputs: BackupKeyInputs) {
        const pair = newBackupKeyPair();
        return { id: pair.keyId, outs: { ...inputs, ...pair, retired: [] } satisfies BackupKeyOutputs };
    },
    async diff(_id: string, olds: BackupKeyOutputs, news: BackupKeyInputs) {
        return { ...diffInputs(BACKUP_KEY_DIFF, olds, news), deleteBeforeReplace: false };
    },
    async update(_id: string, olds: BackupKeyOutputs, news: BackupKeyInputs) {
        if (news.generation === olds.generation) return { outs: { ...olds, ...news } };
        const pair = newBackupKeyPair();
        const retired = [{ keyId: olds.keyId, publicKey: olds.publicKey, privateKey: olds.privateKey }, ...(olds.retired ?? [])];
        return { outs: { ...news, ...pair, retired } satisfies BackupKeyOutputs };
    },
});

/** The backup key of a cluster (see the module comment). */
export class BackupKey extends pulumi.dynamic.Resource {
    declare readonly keyId: pulumi.Output<string>;
    declare readonly publicKey: pulumi.Output<string>;
    declare readonly privateKey: pulumi.Output<string>;
    declare readonly retired: pulumi.Output<BackupKeyPair[]>;

    constructor(name: string, args: { generation: pulumi.Input<number> }, opts?: pulumi.CustomResourceOptions) {
        super(backupKeyProvider, name, { keyId: undefined, publicKey: undefined, privateKey: undefined, retired: undefined, providerVersion: BACKUP_KEY_PROVIDER_VERSION, ...args },
            { ...opts, additionalSecretOutputs: [...BACKUP_KEY_SECRET_OUTPUTS], protect: opts?.protect ?? false });
        alwaysAnswered(this, ["keyId", "publicKey", "privateKey", "retired"]);
    }
}
