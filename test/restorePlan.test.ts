// World: the OpenAPI emulator (testing/emulator); node scripts in the sandbox (testing/sandbox: stub kubeadm,
// systemctl, curl, package managers).
/**
 * `npm run restore -- --dry-run` (scripts/restore.ts, src/recovery/restore.ts) against the emulator: its OSS holds a
 * backup sealed by the masters' own sealing function (src/shell/etcd_backup.sh ak_seal_file, run in the script sandbox
 * with the real openssl and tar) and its ECS the masters. The plan must name the newest backup, open it with the key
 * its header names, read its manifest, pick the first master that exists, read that master's restore state (the real
 * etcd-restore script's status step, in the script sandbox), and change nothing; a wrong key or another cluster's backup
 * stops it before any master is touched. The arguments of a restore into a new stack are checked before anything is
 * read (no world: the parser alone), and where they lead: the old stack's outputs read through a `pulumi` stand-in on
 * PATH (it prints an outputs file, as `pulumi stack output --json --show-secrets` does), the bucket's region and the
 * endpoints the backup is downloaded from. The restore itself: test/restoreApply.test.ts.
 */
import * as assert from "assert";
import * as crypto from "crypto";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { useEmulator } from "../testing/emulator/fixture";
import { backupKeyPair, runRestore, sealedBackup } from "../testing/backup";
import { makeSandbox, type Sandbox } from "../testing/sandbox";
import { operation, saveNodeCommands } from "../testing/savedCommands";
import { backupKeyId, backupPrefixes, type NodeCommandIds } from "../src/rules";
import { backupSource, downloadEndpoints, intoNewStack, main, parseArgs } from "../scripts/restore";
import { signedDownload } from "../src/recovery/restoreApply";

const BUCKET = "dev-etcd-0123abcd";

describe("npm run restore -- --dry-run (plan from the bucket, the key and the instances)", function () {
    this.timeout(60_000);
    const ctx = useEmulator();
    const { recipient, keys } = backupKeyPair();
    let dir: string;
    beforeEach(() => { dir = fs.mkdtempSync(path.join(os.tmpdir(), "ak-restore-out-")); });
    afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

    const run = (args: string[], outputs: object) => runRestore(dir, ctx.emu.endpoint, outputs, args);

    let commands: NodeCommandIds;
    let master: Sandbox | undefined;
    beforeEach(async () => {
        commands = await saveNodeCommands();
        // The master's side of the status step: the real script, on a master 0 that refused kubeadm init.
        master = makeSandbox({ os: "ubuntu" });
        master.write("/var/lib/alicloud-kubeadm/init.refused", "status=refused\n");
        master.write("/var/lib/alicloud-kubeadm/kubeadm-init.yaml", "kind: InitConfiguration\n");
        ctx.emu.onCommand(operation("etcd-restore"), async (x) => {
            master!.write("/command.sh", x.script);
            const r = await master!.run('bash "$AK_ROOT/command.sh" 2>&1');
            return { exitCode: r.code, output: r.stdout };
        });
    });
    afterEach(() => master?.cleanup());

    function stack(masters: string[]) {
        return {
            clusterInfo: { name: "dev", region: "cn-hangzhou", kubernetesVersion: "1.36.3", masterInstanceIds: masters, apiEndpoint: "192.168.0.10:6443", routeTableId: "vtb-1", podCidr: "172.16.0.0/16", pools: [], existingNodes: [], commands },
            backupBucket: BUCKET, backupKeys: keys,
        };
    }

    it("names the newest backup, opens it with its key, reads its revision, picks the first master that exists and reads its state; nothing changes", async () => {
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
        assert.match(r.out, new RegExp(`onto master ${master0}\n`));
        assert.match(r.out, new RegExp(`master ${master0}: master 0 that refused kubeadm init; its API server does not answer`));
        assert.match(r.out, /4\. start on master \S+: kubeadm init over the restored etcd and CA/);
        assert.match(r.out, /no longer there: i-gone1, re-created by `pulumi up --refresh`/);
        const made = emu.mutatingCalls().slice(before);
        assert.ok(made.length === 1 && made[0].action === "RunCommand" && /readonly AK_STEP='status'/.test(Buffer.from(made[0].params.CommandContent, "base64").toString()),
            "a dry run changes nothing: its one command is the read-only status step");
        assert.ok(!fs.existsSync(master!.at("/var/lib/alicloud-kubeadm/restore")) || fs.readdirSync(master!.at("/var/lib/alicloud-kubeadm/restore")).length === 0, "nothing recorded on the master");
        assert.ok(emu.calls.filter((x) => x.product === "oss").every((x) => x.action !== "PutObject"));

        // an object under the prefix whose key the backup client never writes (a master can put objects there): never
        // picked, even when newest, and never named by --snapshot (its key would land in the commands printed to paste)
        const hostile = `${backupPrefixes("dev").hourly}2026-01-01T020000Z-$(touch pwned).etcd.enc`;
        bucket.objects.set(hostile, [{ body: sealedBackup("dev", recipient, 11), versionId: "v3", lastModified: new Date(Date.now() + 60_000).toISOString(), etag: "\"C\"" }]);
        const newest = await run(["--dry-run"], stack([master0]));
        assert.strictEqual(newest.code, 0, newest.out);
        assert.match(newest.out, /restore dev\/hourly\/2026-01-01T010000Z-a\.etcd\.enc .*etcd revision 9/);
        assert.ok(!newest.out.includes("pwned"), newest.out);
        const named = await run(["--dry-run", "--snapshot", hostile], stack([master0]));
        assert.strictEqual(named.code, 2, named.out);
        assert.match(named.out, /--snapshot: a key the backups are written under/);
        bucket.objects.delete(hostile);

        // an older one by name
        const chosen = await run(["--dry-run", "--snapshot", `${backupPrefixes("dev").hourly}2026-01-01T000000Z-a.etcd.enc`], stack([master0]));
        assert.match(chosen.out, /etcd revision 7/);
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

describe("npm run restore's arguments for a restore into a new stack", () => {
    it("names the bad argument and the fix, before anything is read", () => {
        const bad: Array<[string[], RegExp]> = [
            [["--stack", "new", "--from-stack", "old", "--bucket", "b-1"], /at most one of --from-stack, --from-outputs and --bucket/],
            [["--stack", "new", "--bucket-region", "cn-beijing"], /--bucket-region goes with --bucket/],
            [["--stack", "new", "--bucket", "Bad_Bucket"], /--bucket: an OSS bucket name/],
            [["--stack", "new", "--bucket", "old-etcd", "--bucket-region", "x; rm -rf /"], /--bucket-region: a region id/],
            [["--stack", "same", "--from-stack", "same"], /--from-stack names this stack/],
            [["--stack", "new", "--from-stack"], /--from-stack needs a value/],
            [["--stack", "prod", "--discard"], /--discard goes with --from-stack, --from-outputs or --bucket/],
        ];
        for (const [argv, message] of bad) assert.throws(() => parseArgs(argv), message, argv.join(" "));
        const ok = parseArgs(["--stack", "new", "--bucket", "old-etcd", "--bucket-region", "cn-beijing", "--keys", "k.json"]);
        assert.ok(intoNewStack(ok));
        assert.ok(!intoNewStack(parseArgs(["--stack", "new"])));
        const discard = parseArgs(["--stack", "new", "--from-stack", "old", "--discard"]);
        assert.ok(discard.discard && !discard.force, "--discard is not --force");
    });

    const info = { name: "dev", region: "cn-hangzhou", kubernetesVersion: "1.36.3", masterInstanceIds: ["i-new0"], apiEndpoint: "192.168.0.10:6443", routeTableId: "vtb-1", podCidr: "172.16.0.0/16" };
    const credentials = { accessKeyId: "LTAI5tExample", accessKeySecret: "secret" };
    /** The master's download of `src`'s bucket (its first line: the URL it GETs). */
    const masterHost = (src: { bucket: string; region: string }) => {
        const e = downloadEndpoints(src.region, info.region);
        const text = signedDownload({ region: info.region, bucket: { endpoint: e.endpoint, region: src.region, bucket: src.bucket }, credentials, masterOssEndpoint: e.masterEndpoint },
            { object: { key: "dev/hourly/x.etcd.enc", size: 1, lastModified: new Date() }, password: "p" });
        return new URL(text.split("\n")[0]).host;
    };

    it("--from-stack reads the old stack's bucket, region and keys with the Pulumi CLI; the master downloads from that region; another cluster's name, a stack the CLI does not find, or no CLI is refused naming the fix", () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ak-restore-cli-"));
        const PATH = process.env.PATH;
        try {
            fs.mkdirSync(path.join(dir, "bin"));
            fs.writeFileSync(path.join(dir, "bin", "pulumi"), `#!/bin/sh
[ "$1 $2 $3 $4 $5" = "stack output --json --show-secrets --stack" ] || { echo "unexpected: $*" >&2; exit 9; }
[ -f "${dir}/$6.json" ] || { echo "error: no stack named '$6' found" >&2; exit 255; }
cat "${dir}/$6.json"
`, { mode: 0o755 });
            const oldKeys = { "0123456789abcdef": "-----BEGIN PRIVATE KEY-----\nold\n-----END PRIVATE KEY-----\n" };
            fs.writeFileSync(path.join(dir, "old.json"), JSON.stringify({ clusterInfo: { ...info, region: "cn-shanghai", masterInstanceIds: ["i-old0"] }, backupBucket: "dev-etcd-old", backupKeys: oldKeys }));
            fs.writeFileSync(path.join(dir, "prod.json"), JSON.stringify({ clusterInfo: { ...info, name: "prod" }, backupBucket: "prod-etcd-old", backupKeys: oldKeys }));
            process.env.PATH = `${path.join(dir, "bin")}:${PATH}`;
            const own = { clusterInfo: info, backupBucket: "dev-etcd-new", backupKeys: { fedcba9876543210: "new" } };
            const src = backupSource(parseArgs(["--stack", "new", "--from-stack", "old"]), own, info);
            assert.deepStrictEqual(src, { bucket: "dev-etcd-old", region: "cn-shanghai", keys: oldKeys });
            assert.strictEqual(masterHost(src), "dev-etcd-old.oss-cn-shanghai.aliyuncs.com", "another region's bucket: over the Internet, from that region");
            const keysFile = path.join(dir, "keys.json");
            fs.writeFileSync(keysFile, JSON.stringify({ aaaaaaaaaaaaaaaa: "offline copy" }));
            assert.deepStrictEqual(backupSource(parseArgs(["--stack", "new", "--from-stack", "old", "--keys", keysFile]), own, info).keys, { aaaaaaaaaaaaaaaa: "offline copy" });
            assert.throws(() => backupSource(parseArgs(["--stack", "new", "--from-stack", "prod"]), own, info), /the old stack's cluster is named prod, this stack's dev: .*create the new stack with name prod/);
            assert.throws(() => backupSource(parseArgs(["--stack", "new", "--from-stack", "gone"]), own, info), /`pulumi stack output --json --show-secrets --stack gone` failed: error: no stack named 'gone' found/);
            process.env.PATH = path.join(dir, "nothing");
            assert.throws(() => backupSource(parseArgs(["--stack", "new", "--from-stack", "old"]), own, info), /the Pulumi CLI is not installed here: .*--stack old > outputs\.json` where it is, then use --from-outputs/);
        } finally {
            process.env.PATH = PATH;
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });

    it("a damaged outputs or keys file (it holds the backup keys) is named, without a fragment of what it holds", async () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ak-restore-json-"));
        try {
            const secret = "MC4CAQAwBQYDK2VuBCIEIJjSECRET";
            fs.writeFileSync(path.join(dir, "outputs.json"), `{"backupKeys": {"k": ${secret}}}`);
            let out = "";
            const code = await main(["--outputs", path.join(dir, "outputs.json"), "--dry-run"], { out: (x) => { out += x; }, env: {} });
            assert.strictEqual(code, 2, out);
            assert.match(out, /outputs\.json is not JSON/);
            assert.ok(!out.includes("MC4CAQ"), out);
            fs.writeFileSync(path.join(dir, "keys.json"), `{"0123456789abcdef": ${secret}}`);
            assert.throws(() => backupSource(parseArgs(["--stack", "new", "--bucket", "dev-etcd-old", "--keys", path.join(dir, "keys.json")]), {}, info),
                (e: Error) => /keys\.json is not JSON/.test(e.message) && !e.message.includes("MC4CAQ"));
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });

    it("--bucket-region: the bucket's region for the signed requests, and the master downloads from it over the Internet; without it, this stack's region inside the VPC", () => {
        const own = { clusterInfo: info, backupBucket: "dev-etcd-new", backupKeys: { fedcba9876543210: "new" } };
        const far = backupSource(parseArgs(["--stack", "new", "--bucket", "dev-etcd-old", "--bucket-region", "cn-beijing"]), own, info);
        assert.deepStrictEqual({ bucket: far.bucket, region: far.region }, { bucket: "dev-etcd-old", region: "cn-beijing" });
        assert.deepStrictEqual(downloadEndpoints(far.region, info.region), { endpoint: "https://oss-cn-beijing.aliyuncs.com", masterEndpoint: "https://oss-cn-beijing.aliyuncs.com" });
        assert.strictEqual(masterHost(far), "dev-etcd-old.oss-cn-beijing.aliyuncs.com");
        const near = backupSource(parseArgs(["--stack", "new", "--bucket", "dev-etcd-old"]), own, info);
        assert.strictEqual(near.region, "cn-hangzhou");
        assert.strictEqual(masterHost(near), "dev-etcd-old.oss-cn-hangzhou-internal.aliyuncs.com", "the stack's own region: the VPC-internal endpoint");
    });
});
