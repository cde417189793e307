// World: pure functions of the restore (no emulator, no sandbox): the guards before a new stack's own cluster is discarded,
// and where the backup is downloaded from when the outputs come from a file; against the values real backups and real
// outputs files hold.
import * as assert from "assert";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { restoreRefusal, stackMachines, type MasterRestoreState } from "../src/recovery/restoreApply";
import type { RestorePlan } from "../src/recovery/restore";
import { backupSource, parseArgs } from "../scripts/restore";
import { ossUrl } from "../src/cloud/oss";

const plan = {
    object: { key: "k8s/etcd/1.enc" }, restoreId: "0123456789abcdef", keyId: "k1", password: "p", target: "i-new0",
    goneMasters: [], staleNodes: [], summary: "",
    manifest: { cluster: "k8s", member: "m", revision: 1, keys: 1, created: "", encryptionConfig: "", files: [], caCertSha256: "a".repeat(64) },
} as unknown as RestorePlan;

describe("restore into a new stack: guards before the discard", () => {
    it("a new stack's own cluster is discarded only with --discard: --force (a rollback) does not stand in for it, and --discard rolls no running cluster back", () => {
        const made = { ...plan, manifest: { ...plan.manifest, created: "2026-06-01T000000Z" } } as RestorePlan;
        const live: MasterRestoreState = { mode: "existing", done: [], apiReady: true, caSha256: "b".repeat(64), caSince: "2026-06-02T00:00:00Z", discarded: false };
        assert.match(restoreRefusal(made, live, false, true) ?? "", /run again with `--snapshot k8s\/etcd\/1.enc` --discard/);
        assert.ok(restoreRefusal(made, { ...live, apiReady: false }, false, true), "a cluster whose Nodes cannot be listed is reset without --discard");
        assert.ok(restoreRefusal(made, live, true, true, false), "--force discards a new stack's own cluster");
        assert.strictEqual(restoreRefusal(made, live, false, true, true), undefined, "with --discard the discard goes on (to the Node check)");
        // After the restore finished, the master runs the backup's CA: a newer backup would be a rollback, which --discard never allows.
        const restored = { ...live, caSha256: "a".repeat(64), discarded: false }; // a newer backup: a new restore id, nothing begun under it
        assert.match(restoreRefusal(made, restored, false, true, true) ?? "", /answers \/readyz: this cluster runs.*--force/);
    });

    it("a new stack whose pools may hold machines, or that has existing nodes, is not discarded: refused naming them and the fix", () => {
        const made = { ...plan, manifest: { ...plan.manifest, created: "2026-06-01T000000Z" } } as RestorePlan;
        const own: MasterRestoreState = { mode: "existing", done: [], apiReady: false, caSha256: "b".repeat(64), caSince: "2026-06-02T00:00:00Z", discarded: false };
        const machines = stackMachines({
            pools: [{ name: "general", size: 2, min: 2, max: 2 }, { name: "spot", min: 0, max: 5 }, { name: "off", size: 0, min: 0, max: 0 }],
            existingNodes: [{ instanceId: "i-gpu" }],
        });
        assert.deepStrictEqual(machines, ["pool general (up to 2 nodes)", "pool spot (up to 5 nodes)", "existing node i-gpu"]);
        assert.match(restoreRefusal(made, own, false, true, true, machines) ?? "",
            /keeps machines beside master i-new0: pool general \(up to 2 nodes\), pool spot \(up to 5 nodes\), existing node i-gpu\. .*scale its pools to 0 .*--discard/);
        assert.strictEqual(restoreRefusal(made, own, false, true, true, stackMachines({ pools: [{ name: "off", size: 0, min: 0, max: 0 }] })), undefined, "pools at 0: the discard goes on");
        // A stack restored from its own bucket (the master runs the backup's CA): nothing is discarded, its pools stay.
        assert.strictEqual(restoreRefusal(made, { ...own, caSha256: "a".repeat(64) }, false, true, true, machines), undefined);
    });

    it("a cluster whose CA is older than the backup (beyond kubeadm's 5-minute backdate) is not a new stack's own: not discarded, even with --discard and --force", () => {
        const made = { ...plan, manifest: { ...plan.manifest, created: "2026-06-01T00:00:00Z" } } as RestorePlan;
        const state: MasterRestoreState = { mode: "existing", done: [], apiReady: true, caSha256: "b".repeat(64), discarded: false };
        assert.match(restoreRefusal(made, { ...state, caSince: "2025-01-01T00:00:00Z" }, true, true, true) ?? "", /older than the backup/);
        assert.match(restoreRefusal(made, { ...state, caSince: "2026-05-31T23:54:00Z" }, true, true, true) ?? "", /older than the backup/);
        assert.strictEqual(restoreRefusal(made, { ...state, caSince: "2026-06-02T00:00:00Z" }, false, true, true), undefined, "a CA made after the backup is discarded");
        assert.strictEqual(restoreRefusal(made, { ...state, caSince: "2026-05-31T23:56:00Z" }, false, true, true), undefined, "a CA backdated by kubeadm (under 5 minutes) is discarded");
    });

    it("a discard is refused, naming which, when the CA's notBefore or the backup's created time cannot be read", () => {
        const state: MasterRestoreState = { mode: "existing", done: [], apiReady: false, caSha256: "b".repeat(64), caSince: "2026-06-02T00:00:00Z", discarded: false };
        assert.match(restoreRefusal({ ...plan, manifest: { ...plan.manifest, created: "yesterday" } } as RestorePlan, state, false, true, true) ?? "", /the backup's created time \("yesterday"\) cannot be read/);
        const made = { ...plan, manifest: { ...plan.manifest, created: "2026-06-01T000000Z" } } as RestorePlan;
        assert.match(restoreRefusal(made, { ...state, caSince: undefined }, false, true, true) ?? "", /its CA's notBefore .* cannot be read/);
    });

    it("a forged old outputs file cannot send the signed OSS requests (and the security token) to another host", () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "restore-guard-"));
        const file = path.join(dir, "old.json");
        const info = { name: "k8s", region: "cn-hangzhou", kubernetesVersion: "1.31", masterInstanceIds: ["i-1"], apiEndpoint: "", routeTableId: "vtb-1", podCidr: "10.244.0.0/16" };
        fs.writeFileSync(file, JSON.stringify({ clusterInfo: { ...info, region: "attacker.example/x" }, backupBucket: "b", backupKeys: { k1: "x" } }));
        let host: string | undefined;
        try {
            const src = backupSource(parseArgs(["--stack", "new", "--from-outputs", file]), { clusterInfo: info }, info);
            host = new URL(ossUrl({ endpoint: `https://oss-${src.region}.aliyuncs.com`, region: src.region, bucket: src.bucket }, "k")).host;
        } catch { host = undefined; /* refused: right */ }
        assert.ok(host === undefined || host.endsWith(".aliyuncs.com"), `requests would go to ${host}`);
        fs.writeFileSync(file, JSON.stringify({ clusterInfo: info, backupBucket: "attacker.example/", backupKeys: { k1: "x" } }));
        host = undefined;
        try {
            const src = backupSource(parseArgs(["--stack", "new", "--from-outputs", file]), { clusterInfo: info }, info);
            host = new URL(ossUrl({ endpoint: `https://oss-${src.region}.aliyuncs.com`, region: src.region, bucket: src.bucket }, "k")).host;
        } catch { host = undefined; }
        assert.ok(host === undefined || host.endsWith(".aliyuncs.com"), `requests would go to ${host}`);
    });

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
