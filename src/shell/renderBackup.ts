/**
 * The etcd backup and restore scripts of the masters (src/shell/etcd_backup.sh, etcd_restore.sh), rendered with a header
 * of their per-cluster values. No secret in either: the backup key's public half, the bucket, the role's name.
 */
import { CHANNEL_KEY_PATTERN } from "../rules";
import { shellBody, shellQuote } from "./render";

/** What the backup script of a cluster needs. */
export interface EtcdBackupParams {
    clusterName: string;
    /** The backup bucket (src/rules/backup.ts backupBucketName). */
    bucket: string;
    /** `https://oss-<region>-internal.aliyuncs.com` (the bucket is put in front of the host). */
    endpoint: string;
    /** Region id, the OSS V4 signing region. */
    region: string;
    hourlyPrefix: string;
    dailyPrefix: string;
    /** The backup key's public half: X25519, SPKI DER Base64. */
    recipient: string;
    /** Its id (src/rules/backup.ts backupKeyId), written into every backup's header. */
    keyId: string;
    /** The masters' RAM role, whose STS credentials the metadata service gives the script. */
    role: string;
}

function header(values: Array<[string, string]>): string[] {
    return values.map(([k, v]) => `readonly ${k}=${shellQuote(v)}`);
}

/** The backup script a master's timer runs. Throws naming the first bad parameter. */
export function renderEtcdBackup(p: EtcdBackupParams): string {
    const checks: Array<[keyof EtcdBackupParams, RegExp]> = [
        ["clusterName", /^[a-z][a-z0-9-]{0,39}$/], ["bucket", /^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$/], ["endpoint", /^https?:\/\/[a-z0-9.-]+(:\d+)?$/],
        ["region", /^[a-z0-9-]+$/], ["hourlyPrefix", /^[A-Za-z0-9._/-]+\/$/], ["dailyPrefix", /^[A-Za-z0-9._/-]+\/$/], ["recipient", CHANNEL_KEY_PATTERN],
        ["keyId", /^[0-9a-f]{16}$/], ["role", /^[A-Za-z0-9.-]{1,64}$/],
    ];
    for (const [k, re] of checks) if (!re.test(p[k])) throw new Error(`renderEtcdBackup: ${k} is malformed`);
    return ["#!/bin/bash", "# alicloud-kubeadm etcd backup, rendered by src/shell/renderBackup.ts. Parameters:", ...header([
        ["AK_CLUSTER_NAME", p.clusterName], ["AK_BACKUP_BUCKET", p.bucket], ["AK_BACKUP_ENDPOINT", p.endpoint], ["AK_BACKUP_REGION", p.region],
        ["AK_BACKUP_HOURLY_PREFIX", p.hourlyPrefix], ["AK_BACKUP_DAILY_PREFIX", p.dailyPrefix], ["AK_BACKUP_RECIPIENT", p.recipient],
        ["AK_BACKUP_KEY_ID", p.keyId], ["AK_BACKUP_ROLE", p.role],
    ]), shellBody("etcd_backup.sh")].join("\n") + "\n";
}

/** What restoring onto a master needs: its etcd member name, peer URL, and the etcd image (which ships etcdutl). */
export interface EtcdRestoreParams {
    nodeName: string;
    peerUrl: string;
    etcdImage: string;
}

/**
 * The restore functions with their header, followed by `main` (shell text that calls them). Throws on a bad parameter.
 */
export function renderEtcdRestore(p: EtcdRestoreParams, main: string): string {
    if (!/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/.test(p.nodeName)) throw new Error("renderEtcdRestore: nodeName is malformed");
    if (!/^https?:\/\/[0-9.]+:\d+$/.test(p.peerUrl)) throw new Error("renderEtcdRestore: peerUrl is malformed");
    if (!/^[a-z0-9./:_-]+$/.test(p.etcdImage)) throw new Error("renderEtcdRestore: etcdImage is malformed");
    return ["#!/bin/bash", "# alicloud-kubeadm etcd restore, rendered by src/shell/renderBackup.ts. Parameters:", ...header([
        ["AK_NODE_NAME", p.nodeName], ["AK_PEER_URL", p.peerUrl], ["AK_ETCD_IMAGE", p.etcdImage],
    ]), shellBody("etcd_restore.sh"), main].join("\n") + "\n";
}
