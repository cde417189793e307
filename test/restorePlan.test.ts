// World: the OpenAPI emulator (testing/emulator); node scripts in the sandbox (testing/sandbox: stub kubeadm,
// systemctl, curl, package managers).
/**
 * `npm run restore -- --dry-run` (scripts/restore.ts, src/recovery/restore.ts) against the emulator: its OSS holds a
 * backup sealed by the masters' own sealing function (src/shell/etcd_backup.sh ak_seal_file, run in the script sandbox
 * with the real openssl and tar) and its ECS the masters. The plan must name the newest backup, open it with the key
 * its header names, read its manifest, pick the first master that exists, and change nothing; a wrong key or another
 * cluster's backup stops it before any master is touched.
 */
import * as assert from "assert";
import { execFileSync } from "child_process";
import * as crypto from "crypto";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { useEmulator } from "../testing/emulator/fixture";
import { TEST_CREDENTIALS } from "../testing/emulator";
import { makeSandbox } from "../testing/sandbox";
import { backupKeyId, backupPrefixes } from "../src/rules";
import { main } from "../scripts/restore";

const BUCKET = "dev-etcd-0123abcd";

/** A backup object as a master's script seals it: a tar.gz bundle with backup.txt and snapshot.db. */
function sealedBackup(cluster: string, recipient: string, revision: number): Buffer {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ak-restore-"));
    try {
        fs.mkdirSync(path.join(dir, "bundle"));
        fs.writeFileSync(path.join(dir, "bundle", "snapshot.db"), crypto.randomBytes(4096));
        fs.writeFileSync(path.join(dir, "bundle", "backup.txt"), `cluster=${cluster}\nmember=abc123\nrevision=${revision}\nkeys=42\ncreated=2026-01-01T000000Z\nencryption_config=/etc/kubernetes/pki/alicloud-kubeadm-encryption.yaml\n`);
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

describe("npm run restore -- --dry-run (plan from the bucket, the key and the instances)", function () {
    this.timeout(60_000);
    const ctx = useEmulator();
    const key = crypto.generateKeyPairSync("x25519");
    const recipient = key.publicKey.export({ type: "spki", format: "der" }).toString("base64");
    const keys = { [backupKeyId(recipient)]: key.privateKey.export({ type: "pkcs8", format: "pem" }).toString() };
    let dir: string;
    beforeEach(() => { dir = fs.mkdtempSync(path.join(os.tmpdir(), "ak-restore-out-")); });
    afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

    async function run(args: string[], outputs: Record<string, unknown>): Promise<{ code: number; out: string }> {
        const file = path.join(dir, "outputs.json");
        fs.writeFileSync(file, JSON.stringify(outputs), { mode: 0o600 });
        let out = "";
        const code = await main(["--outputs", file, ...args], {
            out: (s) => { out += s; }, env: { ALIBABA_CLOUD_ACCESS_KEY_ID: TEST_CREDENTIALS.accessKeyId, ALIBABA_CLOUD_ACCESS_KEY_SECRET: TEST_CREDENTIALS.accessKeySecret },
            ossEndpoint: "http://oss-cn-hangzhou.aliyuncs.com", connectTo: `127.0.0.1:${new URL(ctx.emu.endpoint).port}`,
        });
        return { code, out };
    }

    function stack(masters: string[]) {
        return {
            clusterInfo: { name: "dev", region: "cn-hangzhou", kubernetesVersion: "1.36.3", masterInstanceIds: masters, apiEndpoint: "192.168.0.10:6443", routeTableId: "vtb-1", podCidr: "172.16.0.0/16", pools: [], existingNodes: [] },
            backupBucket: BUCKET, backupKeys: keys,
        };
    }

    it("names the newest backup, opens it with its key, reads its revision, and picks the first master that exists; nothing changes", async () => {
        const emu = ctx.emu;
        emu.oss.addBucket(BUCKET);
        const bucket = emu.oss.buckets.get(BUCKET)!;
        const older = sealedBackup("dev", recipient, 7);
        const newer = sealedBackup("dev", recipient, 9);
        bucket.objects.set(`${backupPrefixes("dev").hourly}2026-01-01T000000Z-a.etcd.enc`, [{ body: older, versionId: "v1", lastModified: new Date(Date.now() - 3_600_000).toISOString(), etag: "\"A\"" }]);
        bucket.objects.set(`${backupPrefixes("dev").hourly}2026-01-01T010000Z-a.etcd.enc`, [{ body: newer, versionId: "v2", lastModified: new Date().toISOString(), etag: "\"B\"" }]);
        // master 0 was lost and re-created under a new id; master 1 is gone for good
        const master0 = emu.addInstance({ regionId: "cn-hangzhou" }).instanceId;
        const before = emu.mutatingCalls().length;
        const r = await run(["--dry-run"], stack(["i-gone1", master0]));
        assert.strictEqual(r.code, 0, r.out);
        assert.match(r.out, /restore dev\/hourly\/2026-01-01T010000Z-a\.etcd\.enc .*etcd revision 9, 42 keys.*sealed to key [0-9a-f]{16}: opened and checked/);
        assert.match(r.out, new RegExp(`onto master ${master0}:`));
        assert.match(r.out, /Leases of masters that no longer exist \(i-gone1\)/);
        assert.strictEqual(emu.mutatingCalls().length, before, "a dry run changes nothing");
        assert.ok(emu.calls.filter((x) => x.product === "oss").every((x) => x.action !== "PutObject"));

        // an older one by name
        const chosen = await run(["--dry-run", "--snapshot", `${backupPrefixes("dev").hourly}2026-01-01T000000Z-a.etcd.enc`], stack([master0]));
        assert.match(chosen.out, /etcd revision 7/);
        // without --dry-run: the plan, then the runbook (the restore onto the master is not automated yet)
        const apply = await run([], stack([master0]));
        assert.strictEqual(apply.code, 3);
        assert.match(apply.out, /not automated yet: follow docs\/disaster-recovery\.md#lost-whole-control-plane/);
    });

    it("a key that is not the backup's, or another cluster's backup, stops it (exit 1) before anything else", async () => {
        const emu = ctx.emu;
        emu.oss.addBucket(BUCKET);
        const bucket = emu.oss.buckets.get(BUCKET)!;
        bucket.objects.set(`${backupPrefixes("dev").hourly}x.etcd.enc`, [{ body: sealedBackup("dev", recipient, 3), versionId: "v1", lastModified: new Date().toISOString(), etag: "\"A\"" }]);
        const master0 = emu.addInstance({ regionId: "cn-hangzhou" }).instanceId;
        const other = crypto.generateKeyPairSync("x25519");
        const otherId = backupKeyId(other.publicKey.export({ type: "spki", format: "der" }).toString("base64"));
        const wrong = await run(["--dry-run"], { ...stack([master0]), backupKeys: { [otherId]: other.privateKey.export({ type: "pkcs8", format: "pem" }).toString() } });
        assert.strictEqual(wrong.code, 1);
        assert.match(wrong.out, /sealed to key [0-9a-f]{16}, which is not among the keys given/);
        // the right key id, the wrong private key: the object does not open
        const mismatched = await run(["--dry-run"], { ...stack([master0]), backupKeys: { [backupKeyId(recipient)]: other.privateKey.export({ type: "pkcs8", format: "pem" }).toString() } });
        assert.strictEqual(mismatched.code, 1);
        assert.match(mismatched.out, /does not open with this key/);
        bucket.objects.set(`${backupPrefixes("dev").hourly}y.etcd.enc`, [{ body: sealedBackup("prod", recipient, 3), versionId: "v2", lastModified: new Date(Date.now() + 1000).toISOString(), etag: "\"B\"" }]);
        const foreign = await run(["--dry-run"], stack([master0]));
        assert.strictEqual(foreign.code, 1);
        assert.match(foreign.out, /is a backup of cluster prod, not dev/);
    });
});
