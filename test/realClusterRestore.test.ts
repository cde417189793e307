/**
 * `npm run restore` end to end against the real etcd, etcdutl, kubectl and kube-apiserver (test/kube/cluster.ts, on the
 * host's loopback): scripts/restore.ts `main` with the emulator's OSS, ECS, VPC and Cloud Assistant (testing/emulator).
 * The master's Cloud Assistant runs what it is sent in a sandbox of the master (testing/sandbox): the etcd-restore
 * operation's steps and the secret channel with the real curl (to the emulator's OSS), openssl and tar, the real etcdutl
 * (a `ctr run` shim) and the real kubectl; the saved operations of the clean-up (list-nodes, drain, delete-node…) run with
 * the real kubectl (test/kube/operations.ts). The test plays the kubelet: a control-plane process runs while its static
 * pod manifest is in the master's /etc/kubernetes/manifests, and etcd's data directory is the master's /var/lib/etcd.
 * The backup is a real `etcdctl snapshot save` of the cluster, bundled with its CA material and EncryptionConfiguration
 * and sealed as the backup script seals it (testing/backup.ts; the backup script itself runs in realClusterBackup.test.ts).
 * Asserted from state: the objects the API server serves, etcd's member list and cluster id, the Nodes and Leases, the
 * emulator's routes.
 *
 * Needs `npm run kube:build` (skipped with one line without it; CI=true fails instead).
 */
import * as assert from "assert";
import * as crypto from "crypto";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { useRealCluster } from "./kube/fixture";
import type { Cluster } from "./kube/cluster";
import { answerWithRealCluster, type RealOperations } from "./kube/operations";
import { useEmulator } from "../testing/emulator/fixture";
import { backupKeyPair, runRestore, sealedBackup } from "../testing/backup";
import { makeSandbox, type Sandbox } from "../testing/sandbox";
import { saveNodeCommands } from "../testing/savedCommands";
import { backupPrefixes } from "../src/rules";

const REGION = "cn-hangzhou";
const BUCKET = "dev-etcd-0123abcd";
const MASTER = "i-master0";
const NODE = `${REGION}.${MASTER}`;
const ENC_PATH = "/etc/kubernetes/pki/alicloud-kubeadm-encryption.yaml";
/** The control plane's static pods, in the order the kubelet starts them. */
const STATIC_PODS = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"] as const;

describe("npm run restore against the real etcd and API server: a single master whose etcd lost its data", function () {
    this.timeout(300_000);
    const ENC_KEY = crypto.randomBytes(32).toString("base64");
    const encryption = `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: ["secrets"]
    providers:
      - secretbox:
          keys:
            - name: alicloud-kubeadm-1
              secret: ${ENC_KEY}
      - identity: {}
`;
    const rc = useRealCluster({ netns: false, files: { "enc.yaml": encryption }, apiserverArgs: { "encryption-provider-config": "{dir}/enc.yaml" } });
    const ctx = useEmulator();
    const { keys, recipient } = backupKeyPair();
    let dir: string;
    let sb: Sandbox | undefined;
    let ops: RealOperations | undefined;
    let kubelet: { stop(): Promise<void>; errors: string[] } | undefined;
    beforeEach(() => { dir = fs.mkdtempSync(path.join(os.tmpdir(), "ak-real-restore-")); });
    afterEach(async () => {
        await kubelet?.stop();
        ops?.cleanup();
        sb?.cleanup();
        fs.rmSync(dir, { recursive: true, force: true });
    });

    const etcdctl = (c: Cluster, args: string[]) => c.run("etcdctl", [`--endpoints=https://127.0.0.1:${c.ports.etcdClient}`, `--cacert=${c.path("pki/etcd/ca.crt")}`,
        `--cert=${c.path("pki/etcd/healthcheck-client.crt")}`, `--key=${c.path("pki/etcd/healthcheck-client.key")}`, ...args]);
    const clusterId = async (c: Cluster) => /^"ClusterID" : (.*)$/m.exec((await etcdctl(c, ["endpoint", "status", "-w", "fields"])).stdout)?.[1] ?? "";
    const superAdmin = (c: Cluster, args: string[]) => c.run("kubectl", ["--kubeconfig", c.superAdminKubeconfig, ...args], { allowFail: true });
    const identityLeases = ["-n", "kube-system", "get", "lease", "-l", "apiserver.kubernetes.io/identity=kube-apiserver",
        "-o", "jsonpath={range .items[*]}{.metadata.name} {.metadata.labels.kubernetes\\.io/hostname}{\"\\n\"}{end}"];

    it("refuses to roll back the API server it finds answering, restores with --force: the objects back (the Secret decrypted), one member under a new cluster id, the stale Node, route and Lease gone; a re-run changes nothing", async () => {
        const c = rc.c;
        const emu = ctx.emu;
        emu.addInstance({ instanceId: MASTER, regionId: REGION, privateIp: "127.0.0.1" });
        const worker = emu.addInstance({ regionId: REGION }).instanceId;
        const commands = await saveNodeCommands(REGION, "dev");
        ops = answerWithRealCluster(emu, c, { master: MASTER });
        const table = emu.addRouteTable().routeTableId;

        // The cluster as the backup sees it: the master's Node, a worker, a worker whose instance is released since
        // (its pod route still in the table), an API server identity Lease of a master gone since, and the objects.
        for (const id of [MASTER, worker, "i-released"]) {
            await c.addNode({ name: `${REGION}.${id}`, providerID: `${REGION}.${id}`, labels: id === MASTER ? { "node-role.kubernetes.io/control-plane": "" } : {} });
        }
        const podCidr = async (id: string) => c.waitFor(`${id}'s podCIDR`, async () => (await c.kubectl(["get", "node", `${REGION}.${id}`, "-o", "jsonpath={.spec.podCIDR}"])).trim());
        for (const id of [worker, "i-released"]) emu.addRouteEntry(table, { destinationCidrBlock: await podCidr(id), nextHopId: id });
        await c.apply({ apiVersion: "coordination.k8s.io/v1", kind: "Lease", metadata: { name: "apiserver-gone", namespace: "kube-system",
            labels: { "apiserver.kubernetes.io/identity": "kube-apiserver", "kubernetes.io/hostname": "dev-master-gone" } },
        // (renewed now: the API server's own garbage collection of identity Leases takes expired ones, and one never renewed)
        spec: { holderIdentity: "apiserver-gone_0", leaseDurationSeconds: 3600, renewTime: new Date().toISOString().replace(/\.(\d{3})Z$/, ".$1000Z") } });
        const secretValue = `s3cr3t-${crypto.randomBytes(12).toString("hex")}`;
        await c.kubectl(["create", "namespace", "dr"]);
        await c.kubectl(["-n", "dr", "create", "secret", "generic", "db", `--from-literal=password=${secretValue}`]);
        await c.kubectl(["-n", "dr", "create", "configmap", "app", "--from-literal=mode=prod"]);
        const before = await objects(c);
        const originalId = await clusterId(c);

        // The backup: a real snapshot with the CA material and the encryption config, sealed to the backup key, in OSS.
        await etcdctl(c, ["snapshot", "save", c.path("snapshot.db")]);
        const status = JSON.parse((await c.run(path.join(c.bin, "etcdutl"), ["snapshot", "status", c.path("snapshot.db"), "-w", "json"])).stdout) as { revision: number };
        const pki: Record<string, Buffer> = {};
        for (const f of ["ca.crt", "ca.key", "sa.key", "sa.pub", "front-proxy-ca.crt", "front-proxy-ca.key", "etcd/ca.crt", "etcd/ca.key"]) pki[`pki/${f}`] = fs.readFileSync(c.path(`pki/${f}`));
        emu.oss.addBucket(BUCKET, "Enabled");
        const object = `${backupPrefixes("dev").hourly}2026-01-01T010000Z-a.etcd.enc`;
        emu.oss.buckets.get(BUCKET)!.objects.set(object, [{
            body: sealedBackup("dev", recipient, status.revision, { "snapshot.db": fs.readFileSync(c.path("snapshot.db")), "encryption-config.yaml": encryption, ...pki }),
            versionId: "v1", lastModified: new Date().toISOString(), etag: "\"B\"",
        }]);
        fs.rmSync(c.path("snapshot.db"));

        // The master as kubeadm made it: its static pod manifests (etcd's member named after its Node), its PKI, admin.conf.
        sb = master(c);
        // Disaster: the master restarts with its etcd data lost. The kubelet starts etcd again, which bootstraps an empty
        // cluster, and the API server answers over it; the admin kubeconfig's binding is gone with the rest.
        for (const component of ["kwok", ...[...STATIC_PODS].reverse()]) await c.stopComponent(component);
        fs.rmSync(c.path("etcd"), { recursive: true, force: true });
        c.commands.etcd = c.commands.etcd.map((a) => a.startsWith("--name=") ? `--name=${NODE}` : a.startsWith("--data-dir=") ? `--data-dir=${sb!.at("/var/lib/etcd")}`
            : a.startsWith("--initial-cluster=") ? `--initial-cluster=${NODE}=${a.slice(a.indexOf("=", "--initial-cluster=".length) + 1)}` : a);
        kubelet = playKubelet(c, sb);
        await c.waitFor("the API server over the empty etcd", async () => (await superAdmin(c, ["get", "--raw", "/readyz"])).stdout.trim() === "ok", 120_000);
        assert.match((await superAdmin(c, ["get", "namespace", "dr"])).stderr, /NotFound/, "the data is lost");
        assert.match((await c.run("kubectl", ["--kubeconfig", c.kubeconfig, "get", "namespaces"], { allowFail: true })).stderr, /Forbidden/i,
            "the admin kubeconfig is refused: its group's binding went with the data");
        // (etcd derives a cluster id from its members' peer URLs and its token: the empty one has the old id again)
        const emptyId = await clusterId(c);

        const outputs = {
            clusterInfo: {
                name: "dev", region: REGION, kubernetesVersion: "1.36.3", masterInstanceIds: [MASTER], apiEndpoint: "127.0.0.1:6443", routeTableId: table,
                podCidr: "172.16.0.0/16", pools: [], existingNodes: [], commands,
            },
            backupBucket: BUCKET, backupKeys: keys,
        };
        const restore = (args: string[] = []) => runRestore(dir, emu.endpoint, outputs, args, { masterOssEndpoint: "http://oss-cn-hangzhou-internal.aliyuncs.com", pollIntervalMs: 100 });

        // An API server that answers is a running cluster: refused, nothing touched.
        const refused = await restore();
        assert.strictEqual(refused.code, 4, refused.out);
        assert.match(refused.out, /answers \/readyz: this cluster runs, and a restore would roll it back .*--force/s);
        assert.strictEqual(await clusterId(c), emptyId, "etcd is untouched");
        assert.ok(fs.existsSync(sb.at("/etc/kubernetes/manifests/etcd.yaml")));

        const forced = await restore(["--force"]);
        assert.strictEqual(forced.code, 0, forced.out);
        assert.deepStrictEqual(kubelet.errors, []);
        assert.deepStrictEqual(await objects(c), before, "every object reads back identical through the admin kubeconfig, the Secret decrypted");
        const restoredId = await clusterId(c);
        assert.notStrictEqual(restoredId, originalId, "a new cluster id (etcdutl snapshot restore)");
        const members = JSON.parse((await etcdctl(c, ["member", "list", "-w", "json"])).stdout) as { members: Array<{ name: string; peerURLs: string[] }> };
        assert.deepStrictEqual(members.members.map((m) => [m.name, m.peerURLs]), [[NODE, ["https://127.0.0.1:2380"]]], "one member: the master, by its Node name and address");
        const stored = (await etcdctl(c, ["get", "/registry/secrets/dr/db", "--print-value-only"])).stdout;
        assert.ok(stored.startsWith("k8s:enc:secretbox:v1:alicloud-kubeadm-1:") && !stored.includes(secretValue), "the Secret is still encrypted at rest");
        assert.strictEqual(sb.read(ENC_PATH), encryption, "the backup's encryption config in place");

        // What the restored etcd held that is no longer true is gone; what is true stays.
        const nodes = (await c.kubectl(["get", "nodes", "-o", "jsonpath={.items[*].metadata.name}"])).trim().split(" ").sort();
        assert.deepStrictEqual(nodes, [`${REGION}.${MASTER}`, `${REGION}.${worker}`].sort(), "the released worker's Node is deleted");
        assert.deepStrictEqual([...emu.state.routeTables.get(table)!.entries].map((e) => e.nextHopId), [worker], "its pod route too; the live worker's stays");
        const leases = (await c.kubectl(identityLeases)).trim().split("\n").map((l) => l.split(" ")[1]);
        assert.deepStrictEqual(leases, [os.hostname()], "only this API server's identity Lease is left");
        assert.ok(!fs.readdirSync(sb.at("/var/lib/alicloud-kubeadm/restore")).some((id) => fs.existsSync(sb!.at(`/var/lib/alicloud-kubeadm/restore/${id}/bundle`))),
            "the opened bundle (it holds the CA keys) is gone");

        // The same command again: every step is recorded done on the master; etcd is not restored a second time.
        await c.kubectl(["-n", "dr", "create", "configmap", "after-restore", "--from-literal=k=v"]);
        const again = await restore(["--force"]);
        assert.strictEqual(again.code, 0, again.out);
        assert.match(again.out, /steps run now: none, all done before/);
        assert.strictEqual(await clusterId(c), restoredId, "the same etcd");
        assert.match(await c.kubectl(["-n", "dr", "get", "configmap", "after-restore", "-o", "name"]), /after-restore/, "what was written after the restore stays");
    });

    /** The master's sandbox: kubeadm's files, the real kubectl, etcdutl through `ctr run`, curl to the emulator's OSS. */
    function master(c: Cluster): Sandbox {
        const port = new URL(ctx.emu.endpoint).port;
        const box = makeSandbox({
            os: "ubuntu", prebaked: true, instanceId: MASTER,
            stubs: {
                // crictl ps: the static pods the kubelet (this test) runs now
                crictl: `. "$AK_STUB_SRC/_lib.sh"
[ "$1" = ps ] || exit 1
grep -E '^(etcd|kube-apiserver)$' "$AK_ROOT/run/test-kubelet-running" || true`,
                // ctr run ... IMAGE NAME etcdutl|etcdctl ARGS → the real binary, /var/lib mapped into the sandbox
                ctr: `. "$AK_STUB_SRC/_lib.sh"
[ "$3" = run ] || exit 0
while [ $# -gt 0 ] && [ "$1" != etcdutl ] && [ "$1" != etcdctl ]; do shift; done
tool=$1
shift
args=()
for a in "$@"; do args+=("\${a//\\/var\\/lib/$AK_ROOT/var/lib}"); done
exec "${c.bin}/$tool" "\${args[@]}"`,
                curl: `exec /usr/bin/curl --connect-to "::127.0.0.1:${port}" "$@"`,
                kubectl: `exec "${c.bin}/kubectl" "$@"`,
                hostname: 'exec /usr/bin/hostname "$@"',
                tar: 'exec /usr/bin/tar "$@"',
                install: 'exec /usr/bin/install "$@"',
            },
        });
        box.write("/etc/kubernetes/admin.conf", fs.readFileSync(c.kubeconfig, "utf8"));
        box.write("/etc/kubernetes/manifests/etcd.yaml", `spec:\n  containers:\n  - command:\n    - etcd\n    - --name=${NODE}\n    image: registry.k8s.io/etcd:3.6.8-0\n`);
        for (const p of STATIC_PODS.slice(1)) box.write(`/etc/kubernetes/manifests/${p}.yaml`, `image: registry.k8s.io/${p}\n`);
        box.write(ENC_PATH, encryption);
        copyTree(c.path("pki"), box.at("/etc/kubernetes/pki"));
        box.write("/var/lib/alicloud-kubeadm/init.done", "status=ok\n");
        fs.mkdirSync(box.at("/run"), { recursive: true });
        fs.mkdirSync(box.at("/var/lib/etcd"), { recursive: true, mode: 0o700 });
        // Cloud Assistant on the master: the restore's steps and the secret channel run in its sandbox.
        ctx.emu.onCommand(/^# alicloud-kubeadm operation: (etcd-restore|channel-open|channel-receive) \(/m, async (x) => {
            box.write("/command.sh", x.script);
            const r = await box.run('bash "$AK_ROOT/command.sh" 2>&1');
            return { exitCode: r.code, output: r.stdout };
        });
        return box;
    }
});

/**
 * The kubelet of the master, for its static pods: a component runs while its manifest is in the sandbox's manifest
 * folder (started when it appears, stopped when it goes), checked every 200 ms; what runs is written for `crictl ps`.
 */
function playKubelet(c: Cluster, sb: Sandbox): { stop(): Promise<void>; errors: string[] } {
    const running = new Set<string>();
    const errors: string[] = [];
    let stopping = false;
    const loop = (async () => {
        while (!stopping) {
            for (const p of STATIC_PODS) {
                const wanted = fs.existsSync(sb.at(`/etc/kubernetes/manifests/${p}.yaml`));
                try {
                    if (wanted && !running.has(p)) {
                        c.startComponent(p);
                        running.add(p);
                    } else if (!wanted && running.has(p)) {
                        await c.stopComponent(p);
                        running.delete(p);
                    }
                } catch (e) {
                    errors.push(`${p}: ${(e as Error).message}`);
                }
            }
            fs.writeFileSync(sb.at("/run/test-kubelet-running"), [...running].map((p) => `${p}\n`).join(""));
            await new Promise((r) => setTimeout(r, 200));
        }
    })();
    return { errors, stop: async () => { stopping = true; await loop; } };
}

/** The test's objects as the API server serves them (the parts a restore must keep). */
async function objects(c: Cluster): Promise<unknown> {
    const secret = JSON.parse(await c.kubectl(["-n", "dr", "get", "secret", "db", "-o", "json"]));
    const cm = JSON.parse(await c.kubectl(["-n", "dr", "get", "configmap", "app", "-o", "json"]));
    const ns = JSON.parse(await c.kubectl(["get", "namespace", "dr", "-o", "json"]));
    return {
        secret: { uid: secret.metadata.uid, data: secret.data, password: Buffer.from(secret.data.password, "base64").toString() },
        configMap: { uid: cm.metadata.uid, data: cm.data },
        namespace: { uid: ns.metadata.uid },
    };
}

function copyTree(from: string, to: string): void {
    fs.mkdirSync(to, { recursive: true });
    for (const e of fs.readdirSync(from, { withFileTypes: true })) {
        if (e.isDirectory()) copyTree(path.join(from, e.name), path.join(to, e.name));
        else fs.copyFileSync(path.join(from, e.name), path.join(to, e.name));
    }
}
