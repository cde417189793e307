/**
 * A backup object as a master's backup script seals it (src/shell/etcd_backup.sh ak_seal_file, run in the script sandbox
 * with the real openssl and tar): a tar.gz bundle with backup.txt and snapshot.db, sealed to an X25519 backup key.
 */
import { execFileSync } from "child_process";
import * as crypto from "crypto";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { backupKeyId } from "../src/rules";
import { makeSandbox } from "./sandbox";

/** Seals a bundle of cluster `cluster` at etcd `revision` to `recipient` (SPKI DER Base64); `extra` files join backup.txt and snapshot.db. */
export function sealedBackup(cluster: string, recipient: string, revision: number, extra: Record<string, string> = {}): Buffer {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ak-restore-"));
    try {
        fs.mkdirSync(path.join(dir, "bundle"));
        fs.writeFileSync(path.join(dir, "bundle", "snapshot.db"), crypto.randomBytes(4096));
        fs.writeFileSync(path.join(dir, "bundle", "backup.txt"), `cluster=${cluster}\nmember=abc123\nrevision=${revision}\nkeys=42\ncreated=2026-01-01T000000Z\nencryption_config=/etc/kubernetes/pki/alicloud-kubeadm-encryption.yaml\n`);
        for (const [name, content] of Object.entries(extra)) {
            fs.mkdirSync(path.dirname(path.join(dir, "bundle", name)), { recursive: true });
            fs.writeFileSync(path.join(dir, "bundle", name), content);
        }
        execFileSync("tar", ["-C", path.join(dir, "bundle"), "-czf", path.join(dir, "bundle.tgz"), "."]);
        const script = fs.readFileSync(path.join(__dirname, "..", "src", "shell", "etcd_backup.sh"), "utf8");
        const fn = /\nak_seal_file\(\) \{[\s\S]*?\n\}\n/.exec(script)![0];
        const sb = makeSandbox({ os: "ubuntu" });
        try {
            fs.copyFileSync(path.join(dir, "bundle.tgz"), sb.at("/bundle.tgz"));
            fs.mkdirSync(sb.at("/work"), { recursive: true });
            execFileSync("bash", ["-c", `set -euo pipefail\nAK_ROOT=${JSON.stringify(sb.at(""))}\nak_snapshot_dir=/work\nAK_BACKUP_RECIPIENT='${recipient}'\nAK_BACKUP_KEY_ID='${backupKeyId(recipient)}'\n${fn}\nak_seal_file "$AK_ROOT/bundle.tgz" "$AK_ROOT/backup.enc"`]);
            return fs.readFileSync(sb.at("/backup.enc"));
        } finally {
            sb.cleanup();
        }
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
}
