// EtcdBackup: where a cluster's etcd backups go (docs/disaster-recovery.md#backups): an OSS bucket (versioned, private)
// whose lifecycle rules expire the hourly prefix after `hourlyRetentionDays` and the daily one after `dailyRetentionDays`
// (current and older versions alike), the masters' permission to put objects under those two prefixes and nothing
// else, and the backup key (BackupKey: the private half only in the stack's state). The masters' backup script is
// rendered here; MasterMaintenance installs it.
import * as alicloud from "@pulumi/alicloud";
import * as pulumi from "@pulumi/pulumi";
import { backupBucketName, backupEndpoint, backupLifecycle, backupPrefixes, backupRamPolicy, checkBackup, type BackupSettings } from "../rules";
import { BackupKey, type BackupKeyPair } from "../providers/backupKey";
import { renderEtcdBackup } from "../shell/renderBackup";
import { checkArgs, checkTags } from "./args";

export interface EtcdBackupArgs {
    /** Cluster name: the object prefixes `<clusterName>/hourly/` and `<clusterName>/daily/`, the policy `<clusterName>-backup`. Required. */
    clusterName: string;
    /** Region id (the bucket's, and the OSS V4 signing region). Required. */
    region: string;
    /** The account id (the bucket's name is derived from it, the cluster and the region: OSS names are global). Required. */
    accountId: pulumi.Input<string>;
    /** The masters' RAM role: it gets PutObject under the two prefixes. Required. */
    roleName: pulumi.Input<string>;
    /** Interval, retention and key generation (src/rules/backup.ts BACKUP_DEFAULTS). Required. */
    settings: BackupSettings;
    /** Tags for the bucket. Default none. */
    tags?: Record<string, string>;
}

export class EtcdBackup extends pulumi.ComponentResource {
    /** The bucket's name. */
    public readonly bucketName: pulumi.Output<string>;
    /** The current backup key's id and public half. */
    public readonly keyId: pulumi.Output<string>;
    /** The backup key's private half (secret): what a restore needs. */
    public readonly privateKey: pulumi.Output<string>;
    /** Retired key pairs, newest first (secret). */
    public readonly retiredKeys: pulumi.Output<BackupKeyPair[]>;
    /** The masters' backup script (no secret in it). */
    public readonly backupScript: pulumi.Output<string>;

    constructor(name: string, args: EtcdBackupArgs, opts?: pulumi.ComponentResourceOptions) {
        checkArgs(`EtcdBackup "${name}"`, (report) => {
            checkBackup(args.settings, (path, reason) => report(`settings.${path.replace(/^backup\./, "")}`, reason));
            if (args.tags) checkTags(args.tags, report);
        });
        super("alicloud-kubeadm:index:EtcdBackup", name, {}, opts);
        const { clusterName, region, settings } = args;
        const prefixes = backupPrefixes(clusterName);
        const key = new BackupKey(`${name}-key`, { generation: settings.keyGeneration }, { parent: this });
        const bucket = new alicloud.oss.Bucket(`${name}-bucket`, {
            bucket: pulumi.output(args.accountId).apply((account) => backupBucketName(clusterName, region, account)),
            acl: "private",
            versioning: { status: "Enabled" },
            lifecycleRules: backupLifecycle(clusterName, settings).map((r) => ({
                id: r.id, prefix: r.prefix, enabled: true, expirations: [{ days: r.days }], noncurrentVersionExpirations: [{ days: r.days }],
            })),
            forceDestroy: false,
            tags: args.tags,
        }, { parent: this });
        this.bucketName = bucket.bucket.apply((b) => b ?? "");
        const policy = new alicloud.ram.Policy(`${name}-policy`, {
            policyName: `${clusterName}-backup`,
            policyDocument: this.bucketName.apply((b) => JSON.stringify(backupRamPolicy(b, clusterName))),
            description: `alicloud-kubeadm ${clusterName}: the masters put etcd backups under ${prefixes.hourly} and ${prefixes.daily}`,
        }, { parent: this });
        new alicloud.ram.RolePolicyAttachment(`${name}-policy`, {
            roleName: args.roleName, policyName: policy.policyName.apply((p) => p ?? `${clusterName}-backup`), policyType: "Custom",
        }, { parent: this });
        this.keyId = key.keyId;
        this.privateKey = pulumi.secret(key.privateKey);
        this.retiredKeys = pulumi.secret(key.retired);
        this.backupScript = pulumi.all([this.bucketName, key.publicKey, key.keyId, args.roleName]).apply(([b, recipient, keyId, role]) => renderEtcdBackup({
            clusterName, bucket: b, endpoint: backupEndpoint(region), region, hourlyPrefix: prefixes.hourly, dailyPrefix: prefixes.daily, recipient, keyId, role,
        }));
        this.registerOutputs({ bucketName: this.bucketName, keyId: this.keyId });
    }
}
