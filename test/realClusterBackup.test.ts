// World: a real control plane built from source (test/kube: etcd, kube-apiserver, controller-manager, scheduler,
// kubeadm, kubectl; KWOK for nodes); the OpenAPI emulator (testing/emulator); node scripts in the sandbox
// (testing/sandbox: stub kubeadm, systemctl, curl, package managers).
/**
 * etcd backup and restore against the real binaries: the fixture's etcd and kube-apiserver (test/kube/cluster.ts, on the
 * host's loopback: the backup script reaches both etcd and the emulator's OSS), Secrets encrypted at rest (secretbox).
 * The project's backup script (src/shell/etcd_backup.sh) runs in the script sandbox with a `crictl exec` shim that runs
 * the real etcdctl and etcdutl, a metadata-service shim that hands out the role's STS credentials, and the real curl,
 * pointed at the emulator's OSS (testing/emulator/oss.ts: V4 signatures, STS, the role's RAM policy, versioning).
 * The restore functions (src/shell/etcd_restore.sh) open the backup with the backup key and run the real
 * `etcdutl snapshot restore` (a `ctr run` shim). What is asserted comes from state: the objects in the bucket, the
 * keys in etcd, and what the restarted API server serves.
 *
 * Needs `npm run kube:build` (skipped with one line without it; CI=true fails instead).
 */
import * as assert from "assert";
import * as crypto from "crypto";
import * as fs from "fs";
import * as path from "path";
import { useRealCluster } from "./kube/fixture";
import { useEmulator } from "../testing/emulator/fixture";
import { makeSandbox, type Sandbox } from "../testing/sandbox";
import { backupKeyId, backupPrefixes, backupRamPolicy } from "../src/rules";
import { renderEtcdBackup, renderEtcdRestore } from "../src/shell/renderBackup";
import { ossRequest, OssError, listObjects } from "../src/cloud/oss";

const CLUSTER = "dev";
const BUCKET = "dev-etcd-0123abcd";
const ROLE = "dev-control-plane";
const ENC_PATH = "/etc/kubernetes/pki/alicloud-kubeadm-encryption.yaml";
const encryptionConfig = (key: string) => `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: ["secrets"]
    providers:
      - secretbox:
          keys:
            - name: alicloud-kubeadm-1
              secret: ${key}
      - identity: {}
`;

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
        await c.kubectl(["create", "namespace", "dr"]);
        await c.kubectl(["-n", "dr", "create", "secret", "generic", "db", `--from-literal=password=${secretValue}`]);
        await c.kubectl(["-n", "dr", "create", "configmap", "app", "--from-literal=mode=prod"]);
        const etcdctl = (args: string[]) => c.run("etcdctl", [`--endpoints=https://127.0.0.1:${c.ports.etcdClient}`, `--cacert=${c.path("pki/etcd/ca.crt")}`,
            `--cert=${c.path("pki/etcd/healthcheck-client.crt")}`, `--key=${c.path("pki/etcd/healthcheck-client.key")}`, ...args]);
        const stored = (await etcdctl(["get", "/registry/secrets/dr/db", "--print-value-only"])).stdout;
        assert.ok(stored.startsWith("k8s:enc:secretbox:v1:alicloud-kubeadm-1:") && !stored.includes(secretValue), "the Secret is encrypted in etcd");
        const before = await objects(c);
        const clusterIdBefore = field((await etcdctl(["endpoint", "status", "-w", "fields"])).stdout, "ClusterID");

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

        // Restore: the operator's key opens the backup; etcdutl restores it; the bundle's config and CA keys go in place.
        const restoreBox = master(c, port, sts);
        restoreBox.write("/backup.enc", object);
        restoreBox.write("/backup.key", backupKey.privateKey.export({ type: "pkcs8", format: "pem" }).toString());
        const etcdCommand = c.commands.etcd;
        const peerUrl = /^--initial-advertise-peer-urls=(.*)$/m.exec(etcdCommand.join("\n"))![1];
        const nodeName = /^--name=(.*)$/m.exec(etcdCommand.join("\n"))![1];
        const restore = await restoreBox.run(renderEtcdRestore({ nodeName, peerUrl, etcdImage: "registry.k8s.io/etcd:3.6.8-0" },
            'ak_open_backup "${AK_ROOT}/backup.enc" "${AK_ROOT}/backup.key" "${AK_ROOT}/var/lib/alicloud-kubeadm/restore" && ak_restore_bundle "${AK_ROOT}/var/lib/alicloud-kubeadm/restore"'));
        assert.strictEqual(restore.code, 0, restore.stderr + restore.stdout);
        assert.strictEqual(restoreBox.read(ENC_PATH), encryptionConfig(ENC_KEY), "the encryption config comes back");
        assert.strictEqual(restoreBox.read("/etc/kubernetes/pki/ca.key"), fs.readFileSync(c.path("pki/ca.key"), "utf8"), "the CA key comes back");
        fs.renameSync(restoreBox.at("/var/lib/etcd"), c.path("etcd"));
        fs.copyFileSync(restoreBox.at(ENC_PATH), c.path("enc.yaml"));
        c.startComponent("etcd");
        c.startComponent("kube-apiserver");
        await c.waitFor("the restored API server", async () => (await c.run("kubectl", ["get", "--raw", "/readyz"], { allowFail: true })).stdout.trim() === "ok", 90_000);
        for (const component of ["kube-controller-manager", "kube-scheduler", "kwok"]) c.startComponent(component);

        const after = await objects(c);
        assert.deepStrictEqual(after, before, "every object reads back identical, the Secret decrypted");
        const clusterIdAfter = field((await etcdctl(["endpoint", "status", "-w", "fields"])).stdout, "ClusterID");
        assert.notStrictEqual(clusterIdAfter, clusterIdBefore, "the restored etcd is a new cluster (etcdutl snapshot restore)");
        const members = (await etcdctl(["member", "list", "-w", "fields"])).stdout;
        assert.strictEqual((members.match(/"ID" :/g) ?? []).length, 1, "one member: the restored master");
    });

    /** The sandbox of a master: crictl/ctr run the real etcdctl/etcdutl; the metadata service hands out the role's STS credentials; OSS is the emulator. */
    function master(c: typeof rc.c, emulatorPort: string, sts: { accessKeyId: string; accessKeySecret: string; securityToken: string }): Sandbox {
        const bin = c.bin;
        const pki = c.path("pki");
        const creds = JSON.stringify({ AccessKeyId: sts.accessKeyId, AccessKeySecret: sts.accessKeySecret, SecurityToken: sts.securityToken, Expiration: "2099-01-01T00:00:00Z", Code: "Success" });
        const sb = makeSandbox({
            os: "ubuntu",
            stubs: {
                // crictl ps → the etcd container; crictl exec <id> etcdctl|etcdutl ARGS → the real binary, container paths mapped
                crictl: `. "$AK_STUB_SRC/_lib.sh"
case "$1" in
  ps) echo etcd0000 ;;
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
                // ctr run ... IMAGE NAME etcdutl ARGS → the real etcdutl, /var/lib mapped into the sandbox
                ctr: `. "$AK_STUB_SRC/_lib.sh"
[ "$3" = run ] || exit 0
while [ $# -gt 0 ] && [ "$1" != etcdutl ]; do shift; done
shift
args=()
for a in "$@"; do args+=("\${a//\\/var\\/lib/$AK_ROOT/var/lib}"); done
exec "${bin}/etcdutl" "\${args[@]}"`,
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
                tar: 'exec /usr/bin/tar "$@"',
                install: 'exec /usr/bin/install "$@"',
            },
        });
        sandboxes.push(sb);
        return sb;
    }
});

/** The test's objects as the API server serves them (the parts a restore must keep). */
async function objects(c: { kubectl(args: string[]): Promise<string> }): Promise<unknown> {
    const secret = JSON.parse(await c.kubectl(["-n", "dr", "get", "secret", "db", "-o", "json"]));
    const cm = JSON.parse(await c.kubectl(["-n", "dr", "get", "configmap", "app", "-o", "json"]));
    const ns = JSON.parse(await c.kubectl(["get", "namespace", "dr", "-o", "json"]));
    return {
        secret: { uid: secret.metadata.uid, data: secret.data, password: Buffer.from(secret.data.password, "base64").toString() },
        configMap: { uid: cm.metadata.uid, data: cm.data },
        namespace: { uid: ns.metadata.uid },
    };
}

function field(fields: string, name: string): string {
    return new RegExp(`^"${name}" : (.*)$`, "m").exec(fields)?.[1] ?? "";
}

function copyTree(from: string, to: string): void {
    fs.mkdirSync(to, { recursive: true });
    for (const e of fs.readdirSync(from, { withFileTypes: true })) {
        if (e.isDirectory()) copyTree(path.join(from, e.name), path.join(to, e.name));
        else fs.copyFileSync(path.join(from, e.name), path.join(to, e.name));
    }
}
