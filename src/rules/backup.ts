// etcd backups (docs/disaster-recovery.md#backups): where they go, how long OSS keeps them, what the masters' role may
// do with them, and the backup key's id. No Pulumi import: the components, the node scripts' renderer, doctor and the
// tests read the same values.
import { createHash } from "crypto";
import type { Report } from "./problems";

/** The `backup` block of the config with its defaults. */
export interface BackupSettings {
    /** Minutes between two backups (the timer on every master; only the etcd leader's master takes one). Default 60. */
    intervalMinutes: number;
    /** Days OSS keeps the hourly backups (prefix `<cluster>/hourly/`). Default 7. */
    hourlyRetentionDays: number;
    /** Days OSS keeps the daily copies (prefix `<cluster>/daily/`). Default 365. */
    dailyRetentionDays: number;
    /**
     * Generation of the backup key: raising it makes a new key pair for the backups from then on; the retired private
     * keys are kept (Pulumi secrets) so older backups still open (docs/disaster-recovery.md#the-backup-key). Default 1.
     */
    keyGeneration: number;
}

export const BACKUP_DEFAULTS: BackupSettings = { intervalMinutes: 60, hourlyRetentionDays: 7, dailyRetentionDays: 365, keyGeneration: 1 };

/** The object prefixes of a cluster's backups: everything its masters may write. */
export function backupPrefixes(clusterName: string): { hourly: string; daily: string } {
    return { hourly: `${clusterName}/hourly/`, daily: `${clusterName}/daily/` };
}

/** The backup bucket's name: global in OSS, so a hash of the account, region and cluster follows the cluster name. */
export function backupBucketName(clusterName: string, region: string, accountId: string): string {
    return `${clusterName}-etcd-${createHash("sha256").update(`${accountId}/${region}/${clusterName}`).digest("hex").slice(0, 8)}`;
}

/** The OSS endpoint masters upload through: the region's internal (VPC) endpoint. */
export function backupEndpoint(region: string): string {
    return `https://oss-${region}-internal.aliyuncs.com`;
}

/** The id of a backup key: the first 16 hex digits of the SHA-256 of its public key (SPKI DER, Base64 as given). */
export function backupKeyId(publicKeyBase64: string): string {
    return createHash("sha256").update(Buffer.from(publicKeyBase64, "base64")).digest("hex").slice(0, 16);
}

/**
 * The masters' backup policy: PutObject under the cluster's two prefixes of its bucket, nothing else (no read, no
 * list, no delete: a compromised master can neither read old backups nor destroy them; versioning keeps what a put
 * over an existing name would have replaced).
 */
export function backupRamPolicy(bucket: string, clusterName: string): { Version: "1"; Statement: Array<{ Effect: "Allow"; Action: string[]; Resource: string[] }> } {
    const p = backupPrefixes(clusterName);
    return {
        Version: "1",
        Statement: [{ Effect: "Allow", Action: ["oss:PutObject"], Resource: [`acs:oss:*:*:${bucket}/${p.hourly}*`, `acs:oss:*:*:${bucket}/${p.daily}*`] }],
    };
}

/** The bucket's lifecycle rules: each prefix expires by age (current and noncurrent versions alike). */
export function backupLifecycle(clusterName: string, s: BackupSettings): Array<{ id: string; prefix: string; days: number }> {
    const p = backupPrefixes(clusterName);
    return [{ id: "hourly", prefix: p.hourly, days: s.hourlyRetentionDays }, { id: "daily", prefix: p.daily, days: s.dailyRetentionDays }];
}

/** Checks the `backup` block (paths relative to it). */
export function checkBackup(s: Partial<BackupSettings> | undefined, report: Report): void {
    if (s === undefined) return;
    const int = (k: keyof BackupSettings, min: number, max: number, why: string) => {
        const v = s[k];
        if (v !== undefined && !(Number.isInteger(v) && v >= min && v <= max)) report(`backup.${k}`, `must be a whole number in ${min}..${max}: ${why}`);
    };
    int("intervalMinutes", 5, 1440, "minutes between backups (the timer runs on every master)");
    int("hourlyRetentionDays", 1, 3650, "days OSS keeps the hourly backups");
    int("dailyRetentionDays", 1, 36500, "days OSS keeps the daily copies");
    int("keyGeneration", 1, 1000, "raise it by one to rotate the backup key");
    if (s.hourlyRetentionDays !== undefined && s.dailyRetentionDays !== undefined && s.dailyRetentionDays < s.hourlyRetentionDays) {
        report("backup.dailyRetentionDays", `is ${s.dailyRetentionDays}, shorter than backup.hourlyRetentionDays (${s.hourlyRetentionDays}): keep the daily copies at least as long`);
    }
    if (s.intervalMinutes !== undefined && s.hourlyRetentionDays !== undefined && s.intervalMinutes > s.hourlyRetentionDays * 1440) {
        report("backup.intervalMinutes", "is longer than the hourly retention: every backup would expire before the next one");
    }
}
