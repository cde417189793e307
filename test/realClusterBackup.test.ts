// World: a real control plane built from source (test/kube: etcd, kube-apiserver, controller-manager, scheduler,
// kubeadm, kubectl; KWOK for nodes); the OpenAPI emulator (testing/emulator); node scripts in the sandbox
// (testing/sandbox: stub kubeadm, systemctl, curl, package managers).
/**
 * etcd backup and restore against the real binaries: the fixture's etcd and kube-apiserver (test/kube/cluster.ts, on the
 * host's loopback: the backup script reaches both etcd and the emulator's OSS), Secrets encrypted at rest (secretbox).
 * The project's backup script (src/shell/etcd_backup.sh) runs in the script sandbox with a `crictl exec` shim that runs
 * the real etcdctl and etcdutl, a metadata-service shim that hands out the role's STS credentials, and the real curl,
 * pointed at the emulator's OSS (testing/emulator/oss.ts: V4 signatures, STS, the role's RAM policy, versioning).
 * The restore runs as `npm run restore` runs it on a master: the etcd-restore operation's steps (src/shell/ops/etcd-restore.sh),
 * the signed download and the backup's password received on the secret channel (the real channel scripts and openssl),
 * the object downloaded from the emulator's OSS with the real curl, the real `etcdutl snapshot restore` (a `ctr run`
 * shim), and the stale API server Leases deleted with the real kubectl against the real API server. What is asserted
 * comes from state: the objects in the bucket, the keys in etcd, what the restarted API server serves.
 *
 * Needs `npm run kube:build` (skipped with one line without it; CI=true fails instead).
 */
import * as assert from "assert";
import * as crypto from "crypto";
import * as fs from "fs";
import * as os from "os";
import { useRealCluster } from "./kube/fixture";
import { clusterId, copyTree, ENC_PATH, encryptionConfig, etcdctl as sharedEtcdctl, etcdImageShim, readObjects, writeObjects } from "./kube/restore";
import { useEmulator } from "../testing/emulator/fixture";
import { makeSandbox, type Sandbox } from "../testing/sandbox";
import { backupKeyId, backupPrefixes, backupRamPolicy } from "../src/rules";
import { renderEtcdBackup } from "../src/shell/renderBackup";
import { compactShell, renderOperation } from "../src/shell/render";
import { fillOperation } from "../src/rules";
import { seal } from "../src/cloud/channel";
import { openBackup, restoreIdOf } from "../src/recovery/restore";
import { signedDownload } from "../src/recovery/restoreApply";
import { fill } from "../testing/savedCommands";
import { TEST_CREDENTIALS } from "../testing/emulator";
import { ossRequest, OssError, listObjects } from "../src/cloud/oss";

const CLUSTER = "dev";
const BUCKET = "dev-etcd-0123abcd";
const ROLE = "dev-control-plane";
describe("etcd backup and restore with the real etcd, etcdctl, etcdutl and kube-apiserver", function () {
    this.timeout(240_000);
    const ENC_KEY = crypto.randomBytes(32).toString("base64");
    const rc = useRealCluster({
        netns: false,
        files: { "enc.yaml": encryptionConfig(ENC_KEY) },
        apiserverArgs: { "encryption-provider-config": "{dir}/enc.yaml" },
    });
    const ctx = useEmulator();
    const sandboxes: Sandbox[] = [];
    after(() => sandboxes.forEach((s) => s.cleanup()));

    /** The backup key: X25519, the private half held by the test (the operator), never by the master. */
    const backupKey = crypto.generateKeyPairSync("x25519");
    const recipient = backupKey.publicKey.export({ type: "spki", format: "der" }).toString("base64");
    const keyId = backupKeyId(recipient);

    it("backs up through the role's STS credentials (only its prefixes), encrypted; a wiped etcd restored from it serves the same objects, the Secret decrypted with the restored config", async () => {
        const c = rc.c;
        const emu = ctx.emu;
        const port = new URL(emu.endpoint).port;
        emu.oss.addBucket(BUCKET, "Enabled");
        const sts = emu.oss.addStsCredentials(backupRamPolicy(BUCKET, CLUSTER));

        // Objects through the real API server: a Secret (encrypted at rest), a ConfigMap, a Namespace.
        const secretValue = `s3cr3t-${crypto.randomBytes(12).toString("hex")}`;
        await writeObjects(c, secretValue);
        const etcdctl = (args: string[]) => sharedEtcdctl(c, args);
        const stored = (await etcdctl(["get", "/registry/secrets/dr/db", "--print-value-only"])).stdout;
        assert.ok(stored.startsWith("k8s:enc:secretbox:v1:alicloud-kubeadm-1:") && !stored.includes(secretValue), "the Secret is encrypted in etcd");
        const before = await readObjects(c);
        const clusterIdBefore = await clusterId(c);

        // The master as the backup script sees it: kubeadm's PKI, the API server's manifest naming the encryption config.
        const sb = master(c, port, sts);
        sb.write("/etc/kubernetes/manifests/kube-apiserver.yaml", `spec:\n  containers:\n  - command:\n    - kube-apiserver\n    - --encryption-provider-config=${ENC_PATH}\n`);
        sb.write(ENC_PATH, fs.readFileSync(c.path("enc.yaml"), "utf8"));
        copyTree(c.path("pki"), sb.at("/etc/kubernetes/pki"));
        const script = renderEtcdBackup({
            clusterName: CLUSTER, bucket: BUCKET, endpoint: "http://oss-cn-hangzhou-internal.aliyuncs.com", region: "cn-hangzhou",
            hourlyPrefix: backupPrefixes(CLUSTER).hourly, dailyPrefix: backupPrefixes(CLUSTER).daily, recipient, keyId, role: ROLE,
        });
        const run = await sb.run(script);
        assert.strictEqual(run.code, 0, run.stderr + run.stdout);
        assert.match(sb.read("/var/lib/alicloud-kubeadm/backup.last") ?? "", /status=ok/);

        // One hourly object and its daily copy, under the cluster's prefixes, put with the STS credentials.
        const hourly = emu.oss.list(BUCKET, backupPrefixes(CLUSTER).hourly);
        const daily = emu.oss.list(BUCKET, backupPrefixes(CLUSTER).daily);
        assert.strictEqual(hourly.length, 1);
        assert.strictEqual(daily.length, 1);
        const puts = emu.calls.filter((x) => x.product === "oss" && x.action === "PutObject");
        assert.ok(puts.length === 2 && puts.every((x) => x.accessKeyId === sts.accessKeyId && x.securityToken && x.status === 200));
        assert.ok(puts.every((x) => !x.url.includes(sts.securityToken) && !x.url.includes(encodeURIComponent(sts.securityToken))), "the STS token never travels in the URL");
        // A second run the same day: a new hourly object, no second daily copy; nothing overwritten.
        assert.strictEqual((await sb.run(script)).code, 0);
        assert.strictEqual(emu.oss.list(BUCKET, backupPrefixes(CLUSTER).hourly).length, 2);
        assert.strictEqual(emu.oss.list(BUCKET, backupPrefixes(CLUSTER).daily).length, 1);

        // Encrypted: no etcd key, value, CA key or encryption key is readable in the object without the backup key.
        const object = hourly[0].body;
        const header = object.subarray(0, object.indexOf(10)).toString();
        assert.match(header, new RegExp(`^alicloud-kubeadm-backup v1 key=${keyId} ephemeral=`));
        for (const plain of ["/registry/", secretValue, "mode", "BEGIN", ENC_KEY, "EncryptionConfiguration", "snapshot.db"]) {
            assert.ok(!object.includes(plain), `"${plain}" must not be readable in the backup`);
        }

        // The role may put only under the cluster's prefixes, and read nothing.
        const target = { endpoint: "http://oss-cn-hangzhou-internal.aliyuncs.com", region: "cn-hangzhou", bucket: BUCKET, connectTo: `127.0.0.1:${port}` };
        const denied = async (p: Promise<unknown>) => { try { await p; return ""; } catch (e) { return (e as OssError).code; } };
        assert.strictEqual(await denied(ossRequest("PUT", target, "other/x.etcd.enc", sts, { body: Buffer.from("x") })), "AccessDenied");
        assert.strictEqual(await denied(ossRequest("PUT", target, "devx/hourly/x", sts, { body: Buffer.from("x") })), "AccessDenied");
        assert.strictEqual(await denied(ossRequest("GET", target, hourly[0].key, sts)), "AccessDenied");
        assert.strictEqual(await denied(listObjects(target, "dev/", sts)), "AccessDenied");

        // Disaster: etcd stopped, its data wiped, the API server's encryption config replaced by one without the key.
        // (the whole control plane goes down: the controller-manager would exit when it loses its lease)
        for (const component of ["kwok", "kube-scheduler", "kube-controller-manager", "kube-apiserver", "etcd"]) await c.stopComponent(component);
        fs.rmSync(c.path("etcd"), { recursive: true, force: true });
        fs.writeFileSync(c.path("enc.yaml"), encryptionConfig(crypto.randomBytes(32).toString("base64")));

        // Restore, as `npm run restore` runs it on the master (src/shell/ops/etcd-restore.sh, one step per command): the
        // master receives the signed GET and this backup's password sealed on the secret channel, downloads the object
        // from OSS with the real curl, opens it with the real openssl, stops its control plane (the static pod manifests
        // aside), restores with the real etcdutl, puts the manifests back. This test plays the kubelet: it stops and starts
        // the processes when the manifests move.
        const etcdCommand = c.commands.etcd;
        const peerUrl = /^--initial-advertise-peer-urls=(.*)$/m.exec(etcdCommand.join("\n"))![1];
        const nodeName = /^--name=(.*)$/m.exec(etcdCommand.join("\n"))![1];
        const restoreBox = master(c, port, sts, { etcdRunning: false });
        restoreBox.write("/etc/kubernetes/admin.conf", fs.readFileSync(c.kubeconfig, "utf8"));
        restoreBox.write("/etc/kubernetes/manifests/etcd.yaml", `spec:\n  containers:\n  - command:\n    - etcd\n    - --name=${nodeName}\n    image: registry.k8s.io/etcd:3.6.8-0\n`);
        restoreBox.write("/etc/kubernetes/manifests/kube-apiserver.yaml", "image: registry.k8s.io/kube-apiserver\n");
        const { key: objectKey, lastModified } = hourly[0]; // the object read above (a second hourly one exists since)
        const opened = openBackup(object, { [keyId]: backupKey.privateKey.export({ type: "pkcs8", format: "pem" }).toString() });
        const restoreId = restoreIdOf({ key: objectKey, size: object.length, lastModified: new Date(lastModified) });
        const step = async (name: string, channel = "0".repeat(32)) => {
            const script = compactShell(fillOperation(renderOperation("etcd-restore"), "etcd-restore",
                { step: name, restoreId, node: nodeName, peerIp: new URL(peerUrl).hostname, channel, discardCa: "" }));
            const r = await restoreBox.run(script);
            assert.strictEqual(r.code, 0, `${name}: ${r.stderr}${r.stdout}`);
            return r.stdout;
        };
        const channel = "c".repeat(32);
        const publicKey = (await restoreBox.run(fill(renderOperation("channel-open"), { channel }))).stdout.trim();
        const download = signedDownload({ region: "cn-hangzhou", bucket: target, masterOssEndpoint: "http://oss-cn-hangzhou-internal.aliyuncs.com",
            credentials: { accessKeyId: TEST_CREDENTIALS.accessKeyId, accessKeySecret: TEST_CREDENTIALS.accessKeySecret } },
        { object: { key: objectKey, size: object.length, lastModified: new Date(lastModified) }, password: opened.password });
        assert.strictEqual((await restoreBox.run(fill(renderOperation("channel-receive"), { channel, sealed: seal(publicKey, download) }))).code, 0);
        assert.match(await step("fetch", channel), /^ak-restore fetch=done$/m);
        assert.ok(!fs.existsSync(restoreBox.at(`/run/alicloud-kubeadm/${channel}`)), "the sealed download was read once and deleted");
        assert.match(await step("stop"), /^ak-restore stop=done$/m);
        assert.ok(!fs.existsSync(restoreBox.at("/etc/kubernetes/manifests/etcd.yaml")), "the manifests are aside");
        assert.match(await step("restore"), /^ak-restore image=registry\.k8s\.io\/etcd:3\.6\.8-0$/m);
        assert.strictEqual(restoreBox.read(ENC_PATH), encryptionConfig(ENC_KEY), "the encryption config comes back");
        assert.strictEqual(restoreBox.read("/etc/kubernetes/pki/ca.key"), fs.readFileSync(c.path("pki/ca.key"), "utf8"), "the CA key comes back");
        fs.renameSync(restoreBox.at("/var/lib/etcd"), c.path("etcd"));
        fs.copyFileSync(restoreBox.at(ENC_PATH), c.path("enc.yaml"));
        c.startComponent("etcd");
        c.startComponent("kube-apiserver");
        assert.match(await step("start"), /^ak-restore start=done$/m);
        assert.ok(fs.existsSync(restoreBox.at("/etc/kubernetes/manifests/etcd.yaml")), "the manifests are back");
        assert.ok(!fs.existsSync(restoreBox.at(`/var/lib/alicloud-kubeadm/restore/${restoreId}/bundle`)), "the opened bundle (CA keys) is gone");
        for (const component of ["kube-controller-manager", "kube-scheduler", "kwok"]) c.startComponent(component);

        const after = await readObjects(c);
        assert.deepStrictEqual(after, before, "every object reads back identical, the Secret decrypted");
        const clusterIdAfter = await clusterId(c);
        assert.notStrictEqual(clusterIdAfter, clusterIdBefore, "the restored etcd is a new cluster (etcdutl snapshot restore)");
        const members = (await etcdctl(["member", "list", "-w", "fields"])).stdout;
        assert.strictEqual((members.match(/"ID" :/g) ?? []).length, 1, "one member: the restored master");

        // The restored etcd still holds the identity Leases of API servers that do not run any more (the old masters'):
        // the leases step deletes every one but this host's, whose API server renews it (its hostname label).
        const identity = ["-n", "kube-system", "get", "lease", "-l", "apiserver.kubernetes.io/identity=kube-apiserver", "-o", "jsonpath={range .items[*]}{.metadata.name} {.metadata.labels.kubernetes\\.io/hostname}{\"\\n\"}{end}"];
        const live = await c.waitFor("this API server's identity Lease", async () => (await c.kubectl(identity)).trim() || undefined, 60_000);
        assert.deepStrictEqual(live.split("\n").map((l) => l.split(" ")[1]), [os.hostname()], "kube-apiserver labels its identity Lease with its host's name");
        for (const gone of ["master-1", "master-2"]) {
            await c.apply({ apiVersion: "coordination.k8s.io/v1", kind: "Lease", metadata: { name: `apiserver-${gone}`, namespace: "kube-system",
                labels: { "apiserver.kubernetes.io/identity": "kube-apiserver", "kubernetes.io/hostname": `dev-${gone}` } },
            spec: { holderIdentity: `apiserver-${gone}_0`, leaseDurationSeconds: 3600, renewTime: new Date().toISOString().replace(/\.(\d{3})Z$/, ".$1000Z") } });
        }
        const out = await step("leases");
        assert.deepStrictEqual([...out.matchAll(/^ak-restore lease-deleted=(\S+)$/gm)].map((m) => m[1]).sort(), ["apiserver-master-1:dev-master-1", "apiserver-master-2:dev-master-2"]);
        assert.deepStrictEqual((await c.kubectl(identity)).trim(), live, "only this API server's Lease is left");
    });

    /** The sandbox of a master: crictl/ctr run the real etcdctl/etcdutl; the metadata service hands out the role's STS credentials; OSS is the emulator. */
    function master(c: typeof rc.c, emulatorPort: string, sts: { accessKeyId: string; accessKeySecret: string; securityToken: string }, opts: { etcdRunning?: boolean } = {}): Sandbox {
        const bin = c.bin;
        const pki = c.path("pki");
        const creds = JSON.stringify({ AccessKeyId: sts.accessKeyId, AccessKeySecret: sts.accessKeySecret, SecurityToken: sts.securityToken, Expiration: "2099-01-01T00:00:00Z", Code: "Success" });
        const sb = makeSandbox({
            os: "ubuntu",
            stubs: {
                // crictl ps → the etcd container; crictl exec <id> etcdctl|etcdutl ARGS → the real binary, container paths mapped
                crictl: `. "$AK_STUB_SRC/_lib.sh"
case "$1" in
  ps) ${opts.etcdRunning === false ? ":" : "echo etcd0000"} ;;
  exec) tool=$3; shift 3
    args=()
    for a in "$@"; do
      a=\${a//https:\\/\\/127.0.0.1:2379/https://127.0.0.1:${c.ports.etcdClient}}
      a=\${a//\\/etc\\/kubernetes\\/pki/${pki.replace(/\//g, "\\/")}}
      a=\${a//\\/var\\/lib\\/etcd/$AK_ROOT/var/lib/etcd}
      args+=("$a")
    done
    exec "${bin}/$tool" "\${args[@]}" ;;
  *) exit 1 ;;
esac`,
                ctr: etcdImageShim(c),
                curl: `. "$AK_STUB_SRC/_lib.sh"
for a in "$@"; do
  case "$a" in
    http://100.100.100.200/latest/api/token) echo stub-imds-token; exit 0 ;;
    http://100.100.100.200/latest/meta-data/ram/security-credentials/${ROLE}) printf '%s' '${creds}'; exit 0 ;;
    http://100.100.100.200/*) echo "curl: (22) 404" >&2; exit 22 ;;
  esac
done
exec /usr/bin/curl --connect-to "::127.0.0.1:${emulatorPort}" "$@"`,
                flock: 'exec /usr/bin/flock "$@"',
                kubectl: `exec "${bin}/kubectl" "$@"`,
                hostname: 'exec /usr/bin/hostname "$@"',
                tar: 'exec /usr/bin/tar "$@"',
                install: 'exec /usr/bin/install "$@"',
            },
        });
        sandboxes.push(sb);
        return sb;
    }
});
