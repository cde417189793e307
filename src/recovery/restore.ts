/**
 * The restore's plan (docs/disaster-recovery.md#lost-whole-control-plane): which backup, opened with which key, onto
 * which master, and what a restore then leaves stale. Observe, then decide: the backups are listed from the bucket,
 * the chosen one is downloaded and opened with the operator's key (so a wrong key or a damaged object stops here, before
 * anything on a master is touched), its manifest read; the Nodes and Leases to clean are found from the instances that
 * still exist. Read-only: `npm run restore -- --dry-run` prints it.
 */
import * as zlib from "zlib";
import { openSealedBytes, sharedSecret } from "../cloud/channel";
import { describeInstances } from "../cloud/ecs";
import { listObjects, ossRequest, type OssCredentials, type OssObject, type OssTarget } from "../cloud/oss";
import { backupPrefixes } from "../rules";

/** A backup as its first line names it: the key it is sealed to and the ephemeral key of its sealing. */
export interface BackupHeader { keyId: string; ephemeral: string; bodyOffset: number }

/** Reads a backup's header line (src/shell/etcd_backup.sh ak_seal_file). */
export function backupHeader(object: Buffer): BackupHeader {
    const nl = object.indexOf(10);
    const line = nl > 0 ? object.subarray(0, nl).toString("utf8") : "";
    const m = /^alicloud-kubeadm-backup v1 key=([0-9a-f]{16}) ephemeral=(MCowBQYDK2VuAyEA[A-Za-z0-9+/]{43}=)$/.exec(line);
    if (!m) throw new Error("not an alicloud-kubeadm backup (v1): its first line is not the backup header");
    return { keyId: m[1], ephemeral: m[2], bodyOffset: nl + 1 };
}

/**
 * Opens a backup with the key its header names (`keys`: key id → PKCS#8 PEM); returns the bundle (tar.gz) and the
 * password of this one object (what opens it on a master without the backup key: src/shell/etcd_restore.sh
 * ak_open_backup_pass). The password is a secret: it only ever travels sealed.
 */
export function openBackup(object: Buffer, keys: Readonly<Record<string, string>>): { keyId: string; bundle: Buffer; password: string } {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const crypto = require("crypto") as typeof import("crypto");
    const h = backupHeader(object);
    const pem = keys[h.keyId];
    if (!pem) throw new Error(`the backup is sealed to key ${h.keyId}, which is not among the keys given (${Object.keys(keys).join(", ") || "none"}): use the stack output backupKeys of the stack that made it`);
    const key = crypto.createPrivateKey(pem);
    const bundle = openSealedBytes(key, h.ephemeral, object.subarray(h.bodyOffset), `backup sealed to key ${h.keyId}`);
    return { keyId: h.keyId, bundle, password: sharedSecret(key, h.ephemeral).toString("base64") };
}

/** The files of a tar archive (ustar, as GNU tar writes small regular files): name → content. */
export function untar(tar: Buffer): Map<string, Buffer> {
    const out = new Map<string, Buffer>();
    for (let at = 0; at + 512 <= tar.length;) {
        const header = tar.subarray(at, at + 512);
        if (header.every((b) => b === 0)) break;
        const name = header.subarray(0, 100).toString("utf8").replace(/\0.*$/s, "");
        const prefix = header.subarray(345, 500).toString("utf8").replace(/\0.*$/s, "");
        const size = parseInt(header.subarray(124, 136).toString("ascii").replace(/\0.*$/s, "").trim() || "0", 8);
        const type = String.fromCharCode(header[156] || 48);
        if (type === "0" || type === "\0") out.set((prefix ? `${prefix}/` : "") + name.replace(/^\.\//, ""), tar.subarray(at + 512, at + 512 + size));
        at += 512 + Math.ceil(size / 512) * 512;
    }
    return out;
}

/** What a backup holds, from its bundle's backup.txt. */
export interface BackupManifest {
    cluster: string; member: string; revision: number; keys: number; created: string; encryptionConfig: string; files: string[];
    /** SHA-256 (hex) of the backup's CA certificate file (pki/ca.crt), if it holds one: a master whose ca.crt differs runs another cluster. */
    caCertSha256?: string;
}

export function readBundle(bundle: Buffer): BackupManifest {
    const files = untar(zlib.gunzipSync(bundle));
    const text = files.get("backup.txt")?.toString("utf8");
    if (!text || !files.has("snapshot.db")) throw new Error("the backup's bundle has no backup.txt or snapshot.db");
    const f = Object.fromEntries(text.split("\n").map((l) => l.split("=")).filter((kv) => kv.length >= 2).map(([k, ...v]) => [k, v.join("=")]));
    const ca = files.get("pki/ca.crt");
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const caCertSha256 = ca ? (require("crypto") as typeof import("crypto")).createHash("sha256").update(ca).digest("hex") : undefined;
    return { cluster: f.cluster, member: f.member, revision: Number(f.revision), keys: Number(f.keys), created: f.created, encryptionConfig: f.encryption_config, files: [...files.keys()].sort(), caCertSha256 };
}

/** What `npm run restore` needs to know about the stack. */
export interface RestoreInputs {
    clusterName: string;
    region: string;
    /** Every master, master 0 first. */
    masterInstanceIds: string[];
    bucket: OssTarget;
    /** Backup keys: key id → private key PEM (the stack output backupKeys). */
    keys: Record<string, string>;
    credentials: OssCredentials;
    /** An object key to restore; default the newest hourly (or daily) backup. */
    snapshot?: string;
    /** Node names (provider ids) the restored cluster will list, if known; Nodes of instances that no longer exist are stale. */
    nodeProviderIds?: string[];
    now?: number;
}

export interface RestorePlan {
    object: OssObject;
    /** The restore's id on the master (its steps are recorded under it): of the object's key, size and time. */
    restoreId: string;
    keyId: string;
    /** The password of this one object (secret: sent only sealed, never printed). */
    password: string;
    manifest: BackupManifest;
    /** The master the snapshot is restored onto (the first master that exists). */
    target: string;
    /** Masters that no longer exist (their Nodes, Leases and routes are stale after the restore). */
    goneMasters: string[];
    /** Provider ids among `nodeProviderIds` whose instance no longer exists. */
    staleNodes: string[];
    /** The backup chosen, for a person: its key, size, age, revision, key count, member and key id. */
    summary: string;
}

/**
 * The characters of the object keys the backup client writes (src/shell/etcd_backup.sh `ak_oss_put` refuses others): an
 * object with any other key is not one of its backups, and its key, which the restore prints inside commands to paste,
 * is never read.
 */
const BACKUP_KEY = /^[A-Za-z0-9._/-]+$/;

/** Whether `key` is one the backup client may have written (the only characters it writes). */
export function isBackupKey(key: string): boolean {
    return BACKUP_KEY.test(key);
}

/** Lists, picks, downloads and opens the backup; decides the target and what will be stale. Changes nothing. */
export async function planRestore(i: RestoreInputs): Promise<RestorePlan> {
    const p = backupPrefixes(i.clusterName);
    const all = [...await listObjects(i.bucket, p.hourly, i.credentials), ...await listObjects(i.bucket, p.daily, i.credentials)]
        .filter((o) => isBackupKey(o.key));
    if (all.length === 0) throw new Error(`no backup under ${p.hourly} or ${p.daily} in ${i.bucket.bucket}: nothing to restore from`);
    const object = i.snapshot ? all.find((o) => o.key === i.snapshot) : [...all].sort((a, b) => b.lastModified.getTime() - a.lastModified.getTime() || b.key.localeCompare(a.key))[0];
    if (!object) throw new Error(`no backup ${i.snapshot} in ${i.bucket.bucket} (there are ${all.length}; the newest is ${all.map((o) => o.key).sort().pop()})`);
    const data = await ossRequest("GET", i.bucket, object.key, i.credentials);
    const { keyId, bundle, password } = openBackup(data, i.keys);
    const manifest = readBundle(bundle);
    if (manifest.cluster !== i.clusterName) throw new Error(`${object.key} is a backup of cluster ${manifest.cluster}, not ${i.clusterName}`);
    const live = await describeInstances(i.region, [...i.masterInstanceIds, ...(i.nodeProviderIds ?? []).map((n) => n.split(".").pop()!)]);
    const target = i.masterInstanceIds.find((id) => live.has(id));
    if (!target) throw new Error(`no master of ${i.masterInstanceIds.join(", ")} exists: run \`pulumi up\` first, so master 0 is re-created (it stops before kubeadm init and waits for the restore)`);
    const goneMasters = i.masterInstanceIds.filter((id) => !live.has(id));
    const staleNodes = (i.nodeProviderIds ?? []).filter((n) => !live.has(n.split(".").pop()!));
    const age = Math.round(((i.now ?? Date.now()) - object.lastModified.getTime()) / 60_000);
    return {
        object, restoreId: restoreIdOf(object), keyId, password, manifest, target, goneMasters, staleNodes,
        summary: `restore ${object.key} (${object.size} bytes, ${age} minutes old; etcd revision ${manifest.revision}, ${manifest.keys} keys, ` +
            `taken on member ${manifest.member}) sealed to key ${keyId}: opened and checked; onto master ${target}`,
    };
}

/** The id a restore of `object` is recorded under on the master: the same object gives the same id, so a re-run continues. */
export function restoreIdOf(object: OssObject): string {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const crypto = require("crypto") as typeof import("crypto");
    return crypto.createHash("sha256").update(`${object.key}\n${object.size}\n${object.lastModified.toISOString()}`).digest("hex").slice(0, 16);
}
