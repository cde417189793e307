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
 * With three masters, masters 1 and 2 join the restored etcd through the restore's control-plane join (the real quorum
 * checks through a `kubectl exec etcd-<node> -- etcdctl` shim running the real etcdctl), the join itself played as kubeadm's
 * etcd phase does it: `member add --learner` through the restored member, a real etcd started with the member list and
 * `existing`, `member promote` (as in realClusterMemberReplacement.test.ts).
 * Asserted from state: the objects the API server serves, etcd's member list, health and cluster id, the Nodes and
 * Leases, the emulator's routes.
 *
 * Needs `npm run kube:build` (skipped with one line without it; CI=true fails instead).
 */
import * as assert from "assert";
import * as crypto from "crypto";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { useRealCluster } from "./kube/fixture";
import { freePorts, type Cluster } from "./kube/cluster";
import { answerWithRealCluster, type RealOperations } from "./kube/operations";
import { clusterId, ENC_PATH, encryptionConfig, etcdctl, etcdExecShim, playKubelet, putBackup, readObjects, restoreMaster, STATIC_PODS, writeObjects } from "./kube/restore";
import { useEmulator } from "../testing/emulator/fixture";
import { backupKeyPair, runRestore } from "../testing/backup";
import type { Sandbox } from "../testing/sandbox";
import { createCommand, operation, saveNodeCommands } from "../testing/savedCommands";
import { sealReply } from "./nodeChannel";
import { headerValue } from "./tools";
import { OPERATIONS } from "../src/rules";
import { renderControlPlaneJoinCommand } from "../src/shell/render";

const REGION = "cn-hangzhou";
const BUCKET = "dev-etcd-0123abcd";
const MASTER = "i-master0";
const NODE = `${REGION}.${MASTER}`;
const TOKEN = "k8sabc.0123456789abcdef";
const CERT_KEY = "f".repeat(64);
const identityLeases = ["-n", "kube-system", "get", "lease", "-l", "apiserver.kubernetes.io/identity=kube-apiserver",
    "-o", "jsonpath={range .items[*]}{.metadata.name} {.metadata.labels.kubernetes\\.io/hostname}{\"\\n\"}{end}"];
const superAdmin = (c: Cluster, args: string[]) => c.run("kubectl", ["--kubeconfig", c.superAdminKubeconfig, ...args], { allowFail: true });

/**
 * One file's world: a real control plane with Secrets encrypted at rest, the emulator, a backup key, a folder for the
 * outputs, and what a test starts (the played kubelet, sandboxes, etcd members, the real-cluster operations) stopped after it.
 */
function useRestoreWorld() {
    const encryption = encryptionConfig(crypto.randomBytes(32).toString("base64"));
    const rc = useRealCluster({ netns: false, files: { "enc.yaml": encryption }, apiserverArgs: { "encryption-provider-config": "{dir}/enc.yaml" } });
    const ctx = useEmulator();
    const w = {
        encryption, ...backupKeyPair(), dir: "", boxes: new Map<string, Sandbox>(), members: [] as Array<{ stop(): Promise<void> }>,
        ops: undefined as RealOperations | undefined, kubelet: undefined as { stop(): Promise<void>; errors: string[] } | undefined,
        get c(): Cluster { return rc.c; },
        get emu() { return ctx.emu; },
    };
    beforeEach(() => { w.dir = fs.mkdtempSync(path.join(os.tmpdir(), "ak-real-restore-")); });
    afterEach(async () => {
        await w.kubelet?.stop();
        for (const m of w.members.splice(0)) await m.stop();
        w.ops?.cleanup();
        for (const b of w.boxes.values()) b.cleanup();
        w.boxes.clear();
        fs.rmSync(w.dir, { recursive: true, force: true });
    });
    return w;
}

describe("npm run restore against the real etcd and API server: a single master whose etcd lost its data", function () {
    this.timeout(300_000);
    const w = useRestoreWorld();

    it("refuses to roll back the API server it finds answering, restores with --force: the objects back (the Secret decrypted), one member under a new cluster id, the stale Node, route and Lease gone; a re-run changes nothing", async () => {
        const { c, emu, encryption, keys, recipient, boxes } = w;
        emu.addInstance({ instanceId: MASTER, regionId: REGION, privateIp: "127.0.0.1" });
        const worker = emu.addInstance({ regionId: REGION }).instanceId;
        const commands = await saveNodeCommands(REGION, "dev");
        w.ops = answerWithRealCluster(emu, c, { master: MASTER });
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
        await writeObjects(c, secretValue);
        const before = await readObjects(c);
        const originalId = await clusterId(c);

        // The backup: a real snapshot with the CA material and the encryption config, sealed to the backup key, in OSS.
        await putBackup(c, emu, BUCKET, "dev", recipient, encryption);

        // The master as kubeadm made it: its static pod manifests (etcd's member named after its Node), its PKI, admin.conf.
        const sb = restoreMaster(c, emu, MASTER, NODE, encryption, boxes);
        // Disaster: the master restarts with its etcd data lost. The kubelet starts etcd again, which bootstraps an empty
        // cluster, and the API server answers over it; the admin kubeconfig's binding is gone with the rest.
        for (const component of ["kwok", ...[...STATIC_PODS].reverse()]) await c.stopComponent(component);
        fs.rmSync(c.path("etcd"), { recursive: true, force: true });
        c.commands.etcd = c.commands.etcd.map((a) => a.startsWith("--name=") ? `--name=${NODE}` : a.startsWith("--data-dir=") ? `--data-dir=${sb.at("/var/lib/etcd")}`
            : a.startsWith("--initial-cluster=") ? `--initial-cluster=${NODE}=${a.slice(a.indexOf("=", "--initial-cluster=".length) + 1)}` : a);
        const kubelet = w.kubelet = playKubelet(c, sb);
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
        const restore = (args: string[] = []) => runRestore(w.dir, emu.endpoint, outputs, args, { masterOssEndpoint: "http://oss-cn-hangzhou-internal.aliyuncs.com", pollIntervalMs: 100 });

        // An API server that answers is a running cluster: refused, nothing touched.
        const refused = await restore();
        assert.strictEqual(refused.code, 4, refused.out);
        assert.match(refused.out, /answers \/readyz: this cluster runs, and a restore would roll it back .*--force/s);
        assert.strictEqual(await clusterId(c), emptyId, "etcd is untouched");
        assert.ok(fs.existsSync(sb.at("/etc/kubernetes/manifests/etcd.yaml")));

        const forced = await restore(["--force"]);
        assert.strictEqual(forced.code, 0, forced.out);
        assert.deepStrictEqual(kubelet.errors, []);
        assert.deepStrictEqual(await readObjects(c), before, "every object reads back identical through the admin kubeconfig, the Secret decrypted");
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
        assert.ok(!fs.readdirSync(sb.at("/var/lib/alicloud-kubeadm/restore")).some((id) => fs.existsSync(sb.at(`/var/lib/alicloud-kubeadm/restore/${id}/bundle`))),
            "the opened bundle (it holds the CA keys) is gone");

        // The same command again: every step is recorded done on the master; etcd is not restored a second time.
        await c.kubectl(["-n", "dr", "create", "configmap", "after-restore", "--from-literal=k=v"]);
        const again = await restore(["--force"]);
        assert.strictEqual(again.code, 0, again.out);
        assert.match(again.out, /steps run now: none, all done before/);
        assert.strictEqual(await clusterId(c), restoredId, "the same etcd");
        assert.match(await c.kubectl(["-n", "dr", "get", "configmap", "after-restore", "-o", "name"]), /after-restore/, "what was written after the restore stays");
    });
});

describe("npm run restore against the real etcd and API server: three masters whose etcd lost quorum", function () {
    this.timeout(300_000);
    const w = useRestoreWorld();

    it("restores onto master 0 (its etcd damaged, the others' members down); masters 1 and 2 are reset and join the restored etcd one at a time: three healthy voting members, never four; a re-run joins nobody again", async () => {
        const { c, emu, encryption, keys, recipient, boxes } = w;
        // Master 0's etcd peer URL is https://<its private IP>:2380, as kubeadm makes it: a loopback address of its own
        // (this run's, so no other run's etcd holds it), with a peer certificate for it signed by the fixture's etcd CA.
        const ip0 = `127.${crypto.randomInt(1, 255)}.${crypto.randomInt(0, 256)}.${crypto.randomInt(1, 255)}`;
        const peerCert = c.path("pki/etcd/peer-master0.crt");
        const peerKey = c.path("pki/etcd/peer-master0.key");
        fs.writeFileSync(c.path("peer-master0.ext"), `subjectAltName=IP:127.0.0.1,IP:${ip0}\nextendedKeyUsage=serverAuth,clientAuth\n`);
        await c.run("openssl", ["req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", peerKey, "-subj", "/CN=master0", "-out", c.path("peer-master0.csr")]);
        await c.run("openssl", ["x509", "-req", "-in", c.path("peer-master0.csr"), "-CA", c.path("pki/etcd/ca.crt"), "-CAkey", c.path("pki/etcd/ca.key"),
            "-CAcreateserial", "-days", "1", "-out", peerCert, "-extfile", c.path("peer-master0.ext")]);

        const ids = ["i-master0", "i-master1", "i-master2"];
        const node = (id: string) => `${REGION}.${id}`;
        emu.addInstance({ instanceId: ids[0], regionId: REGION, privateIp: ip0 });
        emu.addInstance({ instanceId: ids[1], regionId: REGION, privateIp: "192.168.0.11" });
        emu.addInstance({ instanceId: ids[2], regionId: REGION, privateIp: "192.168.0.12" });
        for (const id of ids) await c.addNode({ name: node(id), providerID: node(id), labels: { "alicloud-kubeadm/pool": "control-plane" } });
        await writeObjects(c, `s3cr3t-${crypto.randomBytes(12).toString("hex")}`);
        const before = await readObjects(c);
        await putBackup(c, emu, BUCKET, "dev", recipient, encryption);

        // etcd members by Node name → client port: master 0's is the fixture's etcd; masters 1 and 2 get theirs when they join.
        const clientPorts = new Map<string, number>([[node(ids[0]), c.ports.etcdClient]]);
        const portsFile = path.join(c.dir, "etcd-client-ports");
        const writePorts = () => fs.writeFileSync(portsFile, [...clientPorts].map(([n, p]) => `${n} ${p}\n`).join(""));
        writePorts();
        // `kubectl exec etcd-<node> -- etcdctl ...` on master 0 runs the real etcdctl against that master's member.
        const ops = w.ops = answerWithRealCluster(emu, c, { master: ids[0], stubs: { kubectl: etcdExecShim(c, portsFile) } });
        const commands = await saveNodeCommands(REGION, "dev");
        const joinCommandId = await createCommand(REGION, {
            commandName: "dev-control-plane-join", parameters: true, timeoutSeconds: OPERATIONS["control-plane-join"].timeoutSeconds,
            description: OPERATIONS["control-plane-join"].description,
            script: renderControlPlaneJoinCommand({ region: REGION, kubernetesVersion: "1.36.3", apiEndpoint: `${ip0}:6443`, caCertHash: c.caCertHash }),
        });
        emu.onCommand(operation("join-secrets"), (x) => ({ output: sealReply(x.script, `${TOKEN} ${CERT_KEY} -`) }));
        // These masters have no backup timer (the maintenance command is not installed here).
        emu.onCommand(operation("etcd-backup-now"), () => ({ output: "status=not-installed\n" }));
        // kubeadm join --control-plane's etcd phase on the joining master, as kubeadm does it (docs/upstream.md#kubeadm-etcd-learner):
        // added as a learner through the restored member, started with the member list and `existing`, promoted once caught up.
        const sizesBeforeAdd: number[] = [];
        emu.onCommand(/kubeadm join --config/, (x) => joinAsKubeadm(x).catch((e: Error) => ({ exitCode: 1, output: `${e.message}\n` })));
        const joinAsKubeadm = async (x: { instanceId: string; script: string }) => {
            const channel = headerValue(x.script, "AK_CHANNEL")!;
            const received = boxes.get(x.instanceId)?.read(`/run/alicloud-kubeadm/${channel}`);
            assert.strictEqual(received?.trim(), `${TOKEN} ${CERT_KEY} -`, "the member opened its join secrets with the key it made");
            const name = node(x.instanceId);
            const [client, peer] = await freePorts(2);
            sizesBeforeAdd.push(JSON.parse((await etcdctl(c, ["member", "list", "-w", "json"])).stdout).members.length);
            const added = await etcdctl(c, ["member", "add", name, `--peer-urls=https://127.0.0.1:${peer}`, "--learner"]);
            const list = /ETCD_INITIAL_CLUSTER="([^"]+)"/.exec(added.stdout)![1];
            const pki = c.path("pki/etcd");
            w.members.push(c.start(`etcd-${name}`, "etcd", [
                `--name=${name}`, `--data-dir=${c.path(`etcd-${name}`)}`,
                `--listen-client-urls=https://127.0.0.1:${client}`, `--advertise-client-urls=https://127.0.0.1:${client}`,
                `--listen-peer-urls=https://127.0.0.1:${peer}`, `--initial-advertise-peer-urls=https://127.0.0.1:${peer}`,
                `--initial-cluster=${list}`, "--initial-cluster-state=existing",
                `--cert-file=${pki}/server.crt`, `--key-file=${pki}/server.key`, `--trusted-ca-file=${pki}/ca.crt`, "--client-cert-auth=true",
                `--peer-cert-file=${pki}/peer.crt`, `--peer-key-file=${pki}/peer.key`, `--peer-trusted-ca-file=${pki}/ca.crt`, "--peer-client-cert-auth=true",
                "--listen-metrics-urls=http://127.0.0.1:0", "--unsafe-no-fsync=true",
            ]));
            clientPorts.set(name, client);
            writePorts();
            // etcdctl prints the new ID with %16x (etcdctl/ctlv3/command/printer_simple.go): space-padded, so an ID below 2^60
            // (1 in 16) has leading spaces.
            const id = /Member +([0-9a-f]+) added/.exec(added.stdout)![1];
            // (polled here rather than with c.waitFor, which gives up when any control-plane process exited meanwhile: a
            // controller-manager losing its lease on a loaded machine is no failure of the join)
            for (let t = 0; (await etcdctl(c, ["member", "promote", id], true)).code !== 0; t++) {
                if (t === 300) return { exitCode: 1, output: `learner ${name} not promoted after 5 minutes\n` };
                await new Promise((r) => setTimeout(r, 1000));
            }
            await c.addNode({ name, providerID: name, labels: { "alicloud-kubeadm/pool": "control-plane" } });
            return { output: "" };
        };

        // The master as kubeadm made it; etcd's peer URL at its address.
        const sb = restoreMaster(c, emu, ids[0], node(ids[0]), encryption, boxes);
        const peerUrl = `https://${ip0}:2380`;
        c.commands.etcd = c.commands.etcd.map((a) => {
            const flag = a.slice(0, a.indexOf("=") + 1);
            const value: Record<string, string> = {
                "--name=": node(ids[0]), "--data-dir=": sb.at("/var/lib/etcd"), "--listen-peer-urls=": peerUrl, "--initial-advertise-peer-urls=": peerUrl,
                "--initial-cluster=": `${node(ids[0])}=${peerUrl}`, "--peer-cert-file=": peerCert, "--peer-key-file=": peerKey,
            };
            return flag in value ? `${flag}${value[flag]}` : a;
        });
        // Disaster: masters 1 and 2's members are down, and master 0's etcd data is damaged: it cannot start, the API
        // server does not answer.
        for (const component of ["kwok", ...[...STATIC_PODS].reverse()]) await c.stopComponent(component);
        fs.rmSync(c.path("etcd"), { recursive: true, force: true });
        sb.write("/var/lib/etcd/member/snap/db", "damaged");
        const kubelet = w.kubelet = playKubelet(c, sb, ["kwok"]);

        const outputs = {
            clusterInfo: {
                name: "dev", region: REGION, kubernetesVersion: "1.36.3", masterInstanceIds: ids, apiEndpoint: `${ip0}:6443`, routeTableId: emu.addRouteTable().routeTableId,
                podCidr: "172.16.0.0/16", pools: [], existingNodes: [], commands, controlPlaneJoinCommandId: joinCommandId,
            },
            backupBucket: BUCKET, backupKeys: keys,
        };
        const restore = () => runRestore(w.dir, emu.endpoint, outputs, [], { masterOssEndpoint: "http://oss-cn-hangzhou-internal.aliyuncs.com", pollIntervalMs: 100 });

        const first = await restore();
        assert.strictEqual(first.code, 0, first.out);
        assert.deepStrictEqual(kubelet.errors, []);
        assert.deepStrictEqual(await readObjects(c), before, "every object reads back identical, the Secret decrypted");
        const list = JSON.parse((await etcdctl(c, ["member", "list", "-w", "json"])).stdout) as { members: Array<{ name: string; isLearner?: boolean; clientURLs: string[] }> };
        assert.deepStrictEqual(list.members.map((m) => m.name).sort(), ids.map(node).sort(), "three members: master 0 restored, masters 1 and 2 joined");
        assert.ok(list.members.every((m) => !m.isLearner), "all voting");
        const health = JSON.parse((await etcdctl(c, ["endpoint", "health", "--cluster", "-w", "json"])).stdout) as Array<{ health: boolean }>;
        assert.deepStrictEqual(health.map((h) => h.health), [true, true, true], "all healthy");
        assert.deepStrictEqual(sizesBeforeAdd, [1, 2], "one join at a time, each into a cluster with fewer members than masters");
        for (const id of ids.slice(1)) assert.ok(ops.log.includes(`${id}: reset`), `master ${id} was reset before it joined`);

        // The same command again: the restore is recorded done, masters 1 and 2 are members: nobody joins again.
        const again = await restore();
        assert.strictEqual(again.code, 0, again.out);
        assert.match(again.out, /masters re-joined: none/);
        assert.deepStrictEqual(sizesBeforeAdd, [1, 2]);
        assert.strictEqual(JSON.parse((await etcdctl(c, ["member", "list", "-w", "json"])).stdout).members.length, 3);
    });
});
