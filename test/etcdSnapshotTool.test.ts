/**
 * Which tool reads and restores etcd snapshots on a master: etcdutl where the etcd image ships it (etcd 3.6's own image,
 * Kubernetes 1.34 and later), else etcdctl, whose deprecated `snapshot status` and `snapshot restore` etcd 3.5 still has
 * (the 3.5 images Kubernetes built itself ship etcd and etcdctl only: docs/upstream.md#etcd-image-etcdutl). The backup
 * script (src/shell/etcd_backup.sh) and the restore functions (src/shell/etcd_restore.sh) run in the script sandbox;
 * `crictl exec` and `ctr run` stand in for the etcd image, with or without etcdutl. The real binaries run in
 * test/realClusterBackup.test.ts.
 */
import * as assert from "assert";
import * as crypto from "crypto";
import * as fs from "fs";
import { callsOf, makeSandbox, type Sandbox } from "../testing/sandbox";
import { renderEtcdBackup, renderEtcdRestore } from "../src/shell/renderBackup";
import { backupPrefixes } from "../src/rules";

const RECIPIENT = crypto.generateKeyPairSync("x25519").publicKey.export({ type: "spki", format: "der" }).toString("base64");
/** The etcd image's tools: etcdctl always, etcdutl when `AK_IMAGE_HAS_ETCDUTL` is 1; each answers what the script reads. */
const IMAGE_TOOL = `tool=$1; shift
if [ "$tool" = etcdutl ] && [ "\${AK_IMAGE_HAS_ETCDUTL:-1}" != 1 ]; then echo 'exec: "etcdutl": executable file not found in $PATH' >&2; exit 127; fi
args="$*"
case "$args" in
  *"endpoint status"*) printf '"MemberID" : 7\\n"Leader" : 7\\n' ;;
  *"endpoint health"*) echo healthy ;;
  *"snapshot save "*) f=\${args##*snapshot save }; mkdir -p "$AK_ROOT\${f%/*}"; echo snapshot >"$AK_ROOT$f" ;;
  *"snapshot status"*) printf '"Hash" : 1\\n"Revision" : 12\\n"Keys" : 34\\n' ;;
  *"snapshot restore"*) d=\${args##*--data-dir }; d=\${d%% *}; mkdir -p "$AK_ROOT$d/member/snap"; echo restored >"$AK_ROOT$d/member/snap/db" ;;
  *version*) echo "$tool version: 3.6.8" ;;
esac`;

function sandbox(): Sandbox {
    return makeSandbox({
        os: "ubuntu",
        stubs: {
            crictl: `. "$AK_STUB_SRC/_lib.sh"\nimage_tool() {\n${IMAGE_TOOL}\n}\ncase "$1" in ps) echo etcd0000 ;; exec) shift 2; image_tool "$@" ;; esac`,
            ctr: `. "$AK_STUB_SRC/_lib.sh"\n[ "$3" = run ] || exit 0\nwhile [ $# -gt 0 ] && [ "$1" != etcdutl ] && [ "$1" != etcdctl ]; do shift; done\n${IMAGE_TOOL}`,
            // the metadata service's STS credentials, and OSS accepting the put
            curl: `. "$AK_STUB_SRC/_lib.sh"\ncase "$*" in *security-credentials*) echo '{"AccessKeyId":"STS.a","AccessKeySecret":"s","SecurityToken":"t"}' ;; *api/token*) echo tk ;; esac`,
            flock: 'exec /usr/bin/flock "$@"', tar: 'exec /usr/bin/tar "$@"', install: 'exec /usr/bin/install "$@"',
        },
    });
}

describe("etcd snapshots are read and restored with etcdutl, or etcdctl where the image has no etcdutl", () => {
    for (const hasEtcdutl of [true, false]) {
        const tool = hasEtcdutl ? "etcdutl" : "etcdctl";
        it(`an image ${hasEtcdutl ? "with" : "without"} etcdutl: the backup verifies and the restore restores with ${tool}`, async () => {
            const sb = sandbox();
            try {
                const env = { AK_IMAGE_HAS_ETCDUTL: hasEtcdutl ? "1" : "0" };
                const backup = await sb.run(renderEtcdBackup({
                    clusterName: "dev", bucket: "dev-etcd-0123abcd", endpoint: "http://oss-cn-hangzhou-internal.aliyuncs.com", region: "cn-hangzhou",
                    hourlyPrefix: backupPrefixes("dev").hourly, dailyPrefix: backupPrefixes("dev").daily, recipient: RECIPIENT, keyId: "0123456789abcdef", role: "dev-control-plane",
                }), env);
                assert.strictEqual(backup.code, 0, backup.stderr + backup.stdout);
                assert.match(sb.read("/var/lib/alicloud-kubeadm/backup.last") ?? "", /status=ok[\s\S]*revision=12\nkeys=34/);
                const status = callsOf(sb.allCalls(), "crictl", "exec").filter((c) => c.args.includes("status") && c.args.includes("snapshot"));
                assert.deepStrictEqual(status.map((c) => c.args[2]), [tool], `snapshot status ran with ${tool}`);

                sb.write("/bundle/snapshot.db", "snapshot");
                sb.write("/bundle/backup.txt", "revision=12\ncreated=2026-01-01T000000Z\n");
                const restore = await sb.run(renderEtcdRestore({ nodeName: "cn-hangzhou.i-a", peerUrl: "https://192.168.0.10:2380", etcdImage: "registry.k8s.io/etcd:3.5.21-0" },
                    'ak_restore_bundle "$AK_ROOT/bundle"'), env);
                assert.strictEqual(restore.code, 0, restore.stderr);
                assert.strictEqual(sb.read("/var/lib/etcd/member/snap/db"), "restored\n");
                const restores = callsOf(sb.allCalls(), "ctr").filter((c) => c.args.includes("restore"));
                assert.strictEqual(restores.length, 1);
                assert.ok(restores[0].args.includes(tool), `snapshot restore ran with ${tool}: ${restores[0].args.join(" ")}`);
            } finally {
                sb.cleanup();
            }
        });
    }

    it("the backup's encryption_config path is only ever a file under /etc/kubernetes: one that climbs out (../) is put at the default path", async () => {
        const sb = sandbox();
        try {
            fs.mkdirSync(sb.at("/etc/cron.d"), { recursive: true });
            for (const [conf, at] of [["/etc/kubernetes/../cron.d/evil", "/etc/kubernetes/pki/alicloud-kubeadm-encryption.yaml"],
                ["/etc/kubernetes/enc/encryption.yaml", "/etc/kubernetes/enc/encryption.yaml"]]) {
                sb.write("/bundle/snapshot.db", "snapshot");
                sb.write("/bundle/backup.txt", `revision=12\ncreated=2026-01-01T000000Z\nencryption_config=${conf}\n`);
                sb.write("/bundle/encryption-config.yaml", "kind: EncryptionConfiguration\n");
                if (at.includes("/enc/")) fs.mkdirSync(sb.at("/etc/kubernetes/enc"), { recursive: true });
                const r = await sb.run(renderEtcdRestore({ nodeName: "cn-hangzhou.i-a", peerUrl: "https://192.168.0.10:2380", etcdImage: "registry.k8s.io/etcd:3.6.8-0" },
                    'ak_restore_bundle "$AK_ROOT/bundle"'));
                assert.strictEqual(r.code, 0, r.stderr);
                assert.strictEqual(sb.read(at), "kind: EncryptionConfiguration\n", `${conf}: put at ${at}`);
            }
            assert.deepStrictEqual(fs.readdirSync(sb.at("/etc/cron.d")), [], "nothing written outside /etc/kubernetes");
        } finally {
            sb.cleanup();
        }
    });
});
