/**
 * The etcd backup and restore scripts of the masters (src/shell/etcd_backup.sh, etcd_restore.sh), rendered with a header
 * of their per-cluster values. No secret in either: the backup key's public half, the bucket, the role's name.
 */
import { CHANNEL_KEY_PATTERN } from "../rules";
import { compactShell, packShell, shellBody, shellQuote } from "./render";

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

/**
 * The saved maintenance command every master runs (src/providers/masterMaintenance.ts): installs or updates the etcd
 * backup script with its timer (every `intervalMinutes`), and the certificate renewal timer (src/shell/control_plane.sh),
 * which masters built before it existed lack. Packed (gzip + Base64) to fit a saved command.
 */
export function renderMasterMaintenance(backupScript: string, intervalMinutes: number): string {
    if (!Number.isInteger(intervalMinutes) || intervalMinutes < 5 || intervalMinutes > 1440) throw new Error("renderMasterMaintenance: intervalMinutes must be 5..1440");
    if (backupScript.includes("\nAK_BACKUP_EOF\n")) throw new Error("renderMasterMaintenance: the backup script holds the heredoc delimiter");
    const script = [
        "#!/bin/bash",
        "# alicloud-kubeadm master maintenance (rendered by src/shell/renderBackup.ts): the etcd backup timer and the certificate renewal timer.",
        "set -euo pipefail",
        'AK_ROOT="${AK_ROOT:-}"',
        "# ak_write_file PATH MODE: stdin to PATH (mode MODE); fails (1) when PATH already held exactly that.",
        'ak_write_file() { local tmp="$1.ak-new"; mkdir -p "${1%/*}"; cat >"$tmp"; chmod "$2" "$tmp"; if [ -f "$1" ] && cmp -s "$tmp" "$1"; then rm -f "$tmp"; return 1; fi; mv -f "$tmp" "$1"; }',
        shellBody("control_plane.sh"),
        "ak_install_cert_renewal",
        "ak_write_file \"${AK_ROOT}/usr/local/sbin/alicloud-kubeadm-etcd-backup\" 700 <<'AK_BACKUP_EOF' || true",
        backupScript.replace(/\n$/, ""),
        "AK_BACKUP_EOF",
        "ak_write_file \"${AK_ROOT}/etc/systemd/system/alicloud-kubeadm-etcd-backup.service\" 644 <<'EOF' || true",
        "[Unit]", "Description=alicloud-kubeadm: etcd backup to OSS (only the etcd leader's master takes it)", "After=kubelet.service",
        "[Service]", "Type=oneshot", "Nice=10", "ExecStart=/bin/bash /usr/local/sbin/alicloud-kubeadm-etcd-backup",
        "EOF",
        "ak_write_file \"${AK_ROOT}/etc/systemd/system/alicloud-kubeadm-etcd-backup.timer\" 644 <<'EOF' || true",
        "[Unit]", `Description=alicloud-kubeadm: etcd backup every ${intervalMinutes} minutes`,
        "[Timer]", "OnBootSec=10min", `OnUnitActiveSec=${intervalMinutes}min`, "AccuracySec=1min",
        "[Install]", "WantedBy=timers.target",
        "EOF",
        "systemctl daemon-reload",
        "systemctl enable --now alicloud-kubeadm-etcd-backup.timer",
        "echo maintenance-installed",
    ].join("\n") + "\n";
    return packShell(compactShell(script));
}
