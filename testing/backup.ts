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
import { TEST_CREDENTIALS } from "./emulator";
import { main } from "../scripts/restore";

/**
 * Seals a bundle of cluster `cluster` at etcd `revision` to `recipient` (SPKI DER Base64); `extra` files join backup.txt and
 * snapshot.db (random bytes unless `extra` gives a real one).
 */
export function sealedBackup(cluster: string, recipient: string, revision: number, extra: Record<string, string | Buffer> = {}): Buffer {
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

/** A backup key pair as the stack makes one: the recipient the masters seal to, and the keys the restore opens with (key id → PEM). */
export function backupKeyPair(): { privateKey: crypto.KeyObject; recipient: string; keys: Record<string, string> } {
    const key = crypto.generateKeyPairSync("x25519");
    const recipient = key.publicKey.export({ type: "spki", format: "der" }).toString("base64");
    return { privateKey: key.privateKey, recipient, keys: { [backupKeyId(recipient)]: key.privateKey.export({ type: "pkcs8", format: "pem" }).toString() } };
}

/**
 * Runs `npm run restore` (scripts/restore.ts `main`) on stack outputs written to `dir`, with the emulator's credentials, its
 * OSS at `emulatorEndpoint`; `io` adds options (the master's OSS endpoint, the poll interval).
 */
export async function runRestore(dir: string, emulatorEndpoint: string, outputs: object, args: string[], io: Partial<Parameters<typeof main>[1]> = {}): Promise<{ code: number; out: string }> {
    const file = path.join(dir, "outputs.json");
    fs.writeFileSync(file, JSON.stringify(outputs), { mode: 0o600 });
    let out = "";
    const code = await main(["--outputs", file, ...args], {
        out: (s) => { out += s; }, env: { ALIBABA_CLOUD_ACCESS_KEY_ID: TEST_CREDENTIALS.accessKeyId, ALIBABA_CLOUD_ACCESS_KEY_SECRET: TEST_CREDENTIALS.accessKeySecret },
        ossEndpoint: "http://oss-cn-hangzhou.aliyuncs.com", connectTo: `127.0.0.1:${new URL(emulatorEndpoint).port}`, ...io,
    });
    return { code, out };
}
