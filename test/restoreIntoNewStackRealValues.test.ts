// World: pure functions of the restore (no emulator, no sandbox): the new-stack guards against the values real backups and
// real outputs files hold.
import * as assert from "assert";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { restoreRefusal, type MasterRestoreState } from "../src/recovery/restoreApply";
import type { RestorePlan } from "../src/recovery/restore";
import { backupSource, parseArgs } from "../scripts/restore";
import { ossUrl } from "../src/cloud/oss";

const plan = {
    object: { key: "k8s/hourly/1.enc" }, restoreId: "0123456789abcdef", keyId: "k1", password: "p", target: "i-new0",
    goneMasters: [], staleNodes: [], summary: "",
    manifest: { cluster: "k8s", member: "m", revision: 1, keys: 1, created: "", encryptionConfig: "", files: [], caCertSha256: "a".repeat(64) },
} as unknown as RestorePlan;

describe("restore into a new stack: guards against real values", () => {
    it("a CA older than the backup is refused when the backup's created time is in the form etcd_backup.sh writes (date -u +%Y-%m-%dT%H%M%SZ)", () => {
        const script = fs.readFileSync(path.join(__dirname, "..", "src", "shell", "etcd_backup.sh"), "utf8");
        assert.match(script, /created=\$\(date -u \+%Y-%m-%dT%H%M%SZ\)/, "the backup's created format");
        const made = { ...plan, manifest: { ...plan.manifest, created: "2026-06-01T000000Z" } } as RestorePlan;
        const state: MasterRestoreState = { mode: "existing", done: [], apiReady: false, caSha256: "b".repeat(64), caSince: "2025-01-01T00:00:00Z", discarded: false };
        assert.match(restoreRefusal(made, state, true, true) ?? "(not refused)", /older than the backup/);
    });

    it("this stack's own outputs file (--outputs, no --from-*) cannot send the signed OSS requests to another host", () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "restore-own-"));
        const info = { name: "k8s", region: "cn-hangzhou" };
        let host: string | undefined;
        try {
            const src = backupSource(parseArgs(["--outputs", path.join(dir, "o.json")]), { backupBucket: "attacker.example/x?" }, info);
            host = new URL(ossUrl({ endpoint: `https://oss-${src.region}.aliyuncs.com`, region: src.region, bucket: src.bucket }, "k")).host;
        } catch { host = undefined; }
        assert.ok(host === undefined || host.endsWith(".aliyuncs.com"), `requests would go to ${host}`);
    });
});
