/**
 * `npm run restore` (scripts/restore.ts, src/recovery/restoreApply.ts) against the emulator: which commands run in which
 * order, what a re-run after a crash between two steps does, and what is left in the emulator's state. World: the
 * emulator's ECS, OSS (the backup, sealed by the masters' own sealing function), VPC route table and Cloud Assistant. The
 * master restored onto runs the real etcd-restore, channel-open and channel-receive scripts in a sandbox of its own (real
 * openssl, tar and curl to the emulator's OSS; stubs for crictl, kubeadm, kubectl, and a `ctr` whose `etcdutl snapshot
 * restore` writes a data directory); the Kubernetes side of the other operations is testing/fakeCluster.ts, switched to
 * the backup's Nodes and single etcd member when the restore step has run. The real etcdutl and API server run the node
 * side in test/realClusterBackup.test.ts.
 */
import * as assert from "assert";
import * as crypto from "crypto";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { execFileSync } from "child_process";
import { useEmulator } from "../testing/emulator/fixture";
import { fakeCluster, type FakeCluster } from "../testing/fakeCluster";
import { backupKeyPair, runRestore, sealedBackup } from "../testing/backup";
import { callsOf, makeSandbox, type Sandbox } from "../testing/sandbox";
import { createCommand, operation } from "../testing/savedCommands";
import { sealReply } from "./nodeChannel";
import { headerValue } from "./tools";
import { backupPrefixes, OPERATIONS } from "../src/rules";
import { renderControlPlaneJoinCommand } from "../src/shell/render";

const REGION = "cn-hangzhou";
const BUCKET = "dev-etcd-0123abcd";
const TOKEN = "k8sabc.0123456789abcdef";
const CERT_KEY = "f".repeat(64);

describe("npm run restore: the backup onto a master, the stale objects cleaned, the other masters re-joined", function () {
    this.timeout(120_000);
    const ctx = useEmulator();
    const { privateKey, recipient, keys } = backupKeyPair();
    const boxes = new Map<string, Sandbox>();
    let dir: string;
    beforeEach(() => { dir = fs.mkdtempSync(path.join(os.tmpdir(), "ak-restore-apply-")); });
    afterEach(() => {
        fs.rmSync(dir, { recursive: true, force: true });
        for (const sb of boxes.values()) sb.cleanup();
        boxes.clear();
    });

    /** The sandbox of an instance: crictl, kubectl, kubeadm and ctr as the restore needs them; curl to the emulator. */
    function box(instanceId: string): Sandbox {
        const existing = boxes.get(instanceId);
        if (existing) return existing;
        const port = new URL(ctx.emu.endpoint).port;
        const sb = makeSandbox({
            os: "ubuntu", prebaked: true, instanceId,
            stubs: {
                curl: `exec /usr/bin/curl --connect-to "::127.0.0.1:${port}" "$@"`,
                // the API server answers while its manifest is in place (and the test did not take it down)
                kubectl: `. "$AK_STUB_SRC/_lib.sh"
case "$*" in
  *"get --raw /readyz"*) if [ -f "$AK_ROOT/etc/kubernetes/admin.conf" ] && [ -f "$AK_ROOT/etc/kubernetes/manifests/kube-apiserver.yaml" ] && [ ! -f "$AK_STUB_STATE/api-down" ] &&
      { [ ! -f "$AK_STUB_STATE/endpoint-down" ] || [[ "$*" == *--server* ]]; }; then echo ok; else echo "connection refused" >&2; exit 1; fi ;;
  *"get lease"*) cat "$AK_STUB_STATE/leases" 2>/dev/null || true ;;
  *"get nodes"*) cat "$AK_STUB_STATE/nodes" 2>/dev/null || true ;;
  *"delete lease"*) for a; do last=$a; [ "$a" = --ignore-not-found ] && break; name=$a; done; grep -v "^$name"$'\\t' "$AK_STUB_STATE/leases" >"$AK_STUB_STATE/leases.new" || true; mv "$AK_STUB_STATE/leases.new" "$AK_STUB_STATE/leases"; : "$last" ;;
  *) ;;
esac`,
                // kubeadm init as the stub does it, with the control plane's manifests written (the API server then runs)
                // (\`reset-stops\` in its state: a reset that stops after it removed the CA)
                // (\`init-fails\`: the next kubeadm init fails once)
                kubeadm: `if [ "$1" = reset ] && [ -f "$AK_STUB_STATE/reset-stops" ]; then rm -f "$AK_ROOT/etc/kubernetes/pki/ca.crt"; exit 1; fi
if [ "$1" = init ] && [ -f "$AK_STUB_STATE/init-fails" ]; then rm -f "$AK_STUB_STATE/init-fails"; echo "error execution phase wait-control-plane" >&2; exit 1; fi
# (\`init-fails-late\`: the next kubeadm init writes the static pod manifests, then fails in wait-control-plane, as kubeadm does)
if [ "$1" = init ] && [ -f "$AK_STUB_STATE/init-fails-late" ]; then rm -f "$AK_STUB_STATE/init-fails-late"; mkdir -p "$AK_ROOT/etc/kubernetes/manifests"; echo "kind: Config" >"$AK_ROOT/etc/kubernetes/admin.conf"; for c in etcd kube-apiserver; do echo "image: registry.k8s.io/$c" >"$AK_ROOT/etc/kubernetes/manifests/$c.yaml"; done; echo "error execution phase wait-control-plane" >&2; exit 1; fi
"$AK_STUB_SRC/kubeadm" "$@" || exit $?
if [ "$1" = init ]; then for c in etcd kube-apiserver; do echo "image: registry.k8s.io/$c" >"$AK_ROOT/etc/kubernetes/manifests/$c.yaml"; done; fi`,
                // etcdutl in the etcd image: \`snapshot restore FILE --data-dir DIR\` writes the data directory
                ctr: `. "$AK_STUB_SRC/_lib.sh"
[ "$3" = run ] || exit 0
while [ $# -gt 0 ] && [ "$1" != etcdutl ] && [ "$1" != etcdctl ]; do shift; done
shift
case "$1" in
  version) echo "etcdutl version: 3.6.8" ;;
  snapshot) [ ! -f "$AK_ROOT/etc/kubernetes/manifests/etcd.yaml" ] || echo "$*" >>"$AK_STUB_STATE/restored-under-running-etcd"
    file=$3 data=""; shift 3
    while [ $# -gt 0 ]; do [ "$1" != --data-dir ] || data=$2; shift; done
    mkdir -p "$AK_ROOT$data/member/snap" && cp "$AK_ROOT$file" "$AK_ROOT$data/member/snap/db" ;;
esac`,
                hostname: `echo host-${instanceId}`,
                tar: 'exec /usr/bin/tar "$@"',
                install: 'exec /usr/bin/install "$@"',
            },
        });
        boxes.set(instanceId, sb);
        return sb;
    }

    /** A master with a running control plane, as kubeadm left it: its static pod manifests, admin.conf, kubeadm's state. */
    function runningMaster(instanceId: string): Sandbox {
        const sb = box(instanceId);
        sb.write("/etc/kubernetes/admin.conf", "apiVersion: v1\nkind: Config\n");
        sb.write("/etc/kubernetes/manifests/etcd.yaml", `spec:\n  containers:\n  - command:\n    - etcd\n    - --name=${REGION}.${instanceId}\n    image: registry.k8s.io/etcd:3.6.8-0\n`);
        for (const c of ["kube-apiserver", "kube-controller-manager", "kube-scheduler"]) sb.write(`/etc/kubernetes/manifests/${c}.yaml`, `image: registry.k8s.io/${c}\n`);
        sb.write("/var/lib/etcd/member/snap/db", "the old data");
        sb.write("/var/lib/alicloud-kubeadm/init.done", "status=ok\n");
        return sb;
    }

    /** A re-created master 0 that refused kubeadm init (its userdata found no member answering): what the restore starts from. */
    function refusedMaster(instanceId: string): Sandbox {
        const sb = box(instanceId);
        sb.write("/var/lib/alicloud-kubeadm/init.refused", "status=refused\n");
        sb.write("/var/lib/alicloud-kubeadm/kubeadm-init.yaml", "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\n");
        return sb;
    }

    /**
     * The cluster: masters (three unless told), a live worker and its route, a sandbox per instance for the scripts that
     * run for real, and the backup: the Nodes it holds (the old master 0, the masters, a worker released since, the live
     * worker) and its one etcd member, which the fake cluster turns into when the restore step ran on `target`.
     */
    /**
     * A new stack over `w`: its master 0 runs the cluster its own kubeadm init made (a real CA, made now), the old
     * cluster's backup (CA `oldCa`) is in the old bucket, and the old stack's outputs are in a file.
     */
    function newStackOver(w: Awaited<ReturnType<typeof world>>, oldCa: string, lastModified = new Date().toISOString()) {
        w.emu.oss.buckets.get(BUCKET)!.objects.set(w.object, [{ body: sealedBackup("dev", recipient, 9, { "pki/ca.crt": oldCa }), versionId: "v2", lastModified, etag: "\"C\"" }]);
        const sb = runningMaster(w.target);
        const ownCa = newStackCa();
        sb.write("/etc/kubernetes/pki/ca.crt", ownCa);
        sb.write("/var/lib/alicloud-kubeadm/kubeadm-init.yaml", "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\n");
        const newStack = { ...w.outputs, backupBucket: "dev-etcd-newstack", backupKeys: backupKeyPair().keys };
        const old = path.join(dir, "old-outputs.json");
        fs.writeFileSync(old, JSON.stringify({ clusterInfo: { ...w.outputs.clusterInfo, masterInstanceIds: ["i-oldmaster0"] }, backupBucket: BUCKET, backupKeys: keys }), { mode: 0o600 });
        return { sb, ownCa, newStack, old };
    }

    async function world(opts: { masters?: number; target?: (c: FakeCluster) => string; recreated?: boolean; impostorOf?: number } = {}) {
        const emu = ctx.emu;
        emu.oss.addBucket(BUCKET);
        const object = `${backupPrefixes("dev").hourly}2026-01-01T010000Z-a.etcd.enc`;
        emu.oss.buckets.get(BUCKET)!.objects.set(object, [{ body: sealedBackup("dev", recipient, 9), versionId: "v1", lastModified: new Date().toISOString(), etag: "\"B\"" }]);
        const c = await fakeCluster(emu, REGION, { masters: opts.masters ?? 3 });
        const worker = emu.addInstance({ regionId: REGION }).instanceId;
        const table = emu.addRouteTable();
        emu.addRouteEntry(table.routeTableId, { destinationCidrBlock: "172.16.9.0/25", nextHopId: "i-released" });
        emu.addRouteEntry(table.routeTableId, { destinationCidrBlock: "172.16.8.0/25", nextHopId: worker });
        const target = opts.target?.(c) ?? c.master;
        const joinCommandId = c.masters.length < 2 ? undefined : await createCommand(REGION, {
            commandName: "dev-control-plane-join", parameters: true, timeoutSeconds: OPERATIONS["control-plane-join"].timeoutSeconds, description: "join",
            script: renderControlPlaneJoinCommand({ region: REGION, kubernetesVersion: "1.36.3", apiEndpoint: "192.168.0.10:6443", caCertHash: `sha256:${"a".repeat(64)}` }),
        });
        const node = (instanceId: string, controlPlane: boolean, podCidr = "", providerId?: string) => ({ name: `${REGION}.${instanceId}`, instanceId, ready: true, controlPlane, podCidr, providerId });
        // (a master that lost its disk and was re-created is not in the backup: its old instance is, as i-oldmaster0)
        const backupNodes = [node("i-oldmaster0", true), ...c.masters.filter((m) => m !== target || !opts.recreated).map((m) => node(m, true)), node("i-released", false, "172.16.9.0/25"), node(worker, false, "172.16.8.0/25")];
        // (a live instance whose kubelet registered its Node, listed first, with a master's provider id)
        const impostor = opts.impostorOf === undefined ? undefined : emu.addInstance({ regionId: REGION }).instanceId;
        if (impostor) backupNodes.unshift(node(impostor, false, "", `${REGION}.${c.masters[opts.impostorOf!]}`));
        const etcdSizes: number[] = [];
        const order: string[] = [];
        /** A crash between two steps: the master's agent goes away right after this step answered. */
        const faults: { crashAfter?: string } = {};
        // The scripts that run for real: the restore's steps and the secret channel, each in its instance's sandbox.
        emu.onCommand(/^# alicloud-kubeadm operation: (etcd-restore|channel-open|channel-receive) \(/m, async (x) => {
            const sb = box(x.instanceId);
            sb.write("/command.sh", x.script);
            const r = await sb.run('bash "$AK_ROOT/command.sh" 2>&1');
            const step = headerValue(x.script, "AK_STEP");
            order.push(step ? `${x.instanceId}: ${step}` : `${x.instanceId}: ${/operation: ([a-z-]+)/.exec(x.script)![1]}`);
            if (step && step === faults.crashAfter) {
                faults.crashAfter = undefined;
                emu.setAgentOffline(target);
            }
            if (step === "start" && r.code === 0 && !c.nodes.has(`${REGION}.${target}`)) {
                c.addNode(target, { name: `${REGION}.${target}`, controlPlane: true }); // its kubelet registers once the API answers
            }
            if (step === "restore" && r.code === 0 && x.instanceId === target) {
                // etcd now holds the backup: its Nodes, and this master the only member
                c.etcd.clear();
                c.etcd.set(`${REGION}.${target}`, emu.instances.get(target)!.privateIp);
                c.nodes.clear();
                for (const n of backupNodes) c.addNode(n.instanceId, { name: n.name, ready: n.ready, controlPlane: n.controlPlane, podCidr: n.podCidr, ...(n.providerId ? { providerId: n.providerId } : {}) });
            }
            return { exitCode: r.code, output: r.stdout };
        });
        emu.onCommand(operation("join-secrets"), (x) => ({ output: sealReply(x.script, `${TOKEN} ${CERT_KEY} -`) }));
        emu.onCommand(/kubeadm join --config/, (x) => {
            const channel = headerValue(x.script, "AK_CHANNEL")!;
            const received = box(x.instanceId).read(`/run/alicloud-kubeadm/${channel}`);
            assert.strictEqual(received?.trim(), `${TOKEN} ${CERT_KEY} -`, "the member opened its join secrets with the key it made");
            fs.rmSync(box(x.instanceId).at(`/run/alicloud-kubeadm/${channel}`));
            order.push(`${x.instanceId}: join`);
            c.etcd.set(`${REGION}.${x.instanceId}`, emu.instances.get(x.instanceId)!.privateIp);
            etcdSizes.push(c.etcd.size);
            c.addNode(x.instanceId, { name: `${REGION}.${x.instanceId}`, controlPlane: true });
            return { output: "" };
        });
        const outputs = {
            clusterInfo: {
                name: "dev", region: REGION, kubernetesVersion: "1.36.3", masterInstanceIds: c.masters, apiEndpoint: "192.168.0.10:6443", routeTableId: table.routeTableId,
                podCidr: "172.16.0.0/16", pools: [], existingNodes: [], commands: c.commands, ...(joinCommandId ? { controlPlaneJoinCommandId: joinCommandId } : {}),
            },
            backupBucket: BUCKET, backupKeys: keys,
        };
        return { emu, c, target, worker, impostor, table, object, outputs, etcdSizes, order, faults };
    }

    const restore = (outputs: object, args: string[] = []) => runRestore(dir, ctx.emu.endpoint, outputs, args,
        { masterOssEndpoint: "http://oss-cn-hangzhou-internal.aliyuncs.com", pollIntervalMs: 10 });

    it("three masters whose etcd lost quorum: a crash after the restore step is continued by the next run; stale Nodes, routes and Leases go; masters 1 and 2 re-join one at a time, never a fourth member", async () => {
        const w = await world();
        const { emu, c, target } = w;
        const sb = runningMaster(target);
        fs.writeFileSync(path.join(sb.env.AK_STUB_STATE, "api-down"), ""); // etcd lost quorum: the API server does not answer
        fs.writeFileSync(path.join(sb.env.AK_STUB_STATE, "leases"), [`apiserver-a\thost-${target}`, "apiserver-b\thost-i-oldmaster1", "apiserver-c\thost-i-oldmaster2"].join("\n") + "\n");

        // The dry run reads the master's state with the status step alone, and says every step.
        const plan = await restore(w.outputs, ["--dry-run"]);
        assert.strictEqual(plan.code, 0, plan.out);
        assert.match(plan.out, /master i-\w+: a control plane \(static pods\); its API server does not answer/);
        assert.match(plan.out, /2\. stop on master i-\w+: moves the static pod manifests/);
        assert.match(plan.out, /7\. other masters: each one that exists is reset, its Node deleted, and joined as a fresh etcd member/);
        assert.deepStrictEqual(w.order, c.masters.map((m) => `${m}: status`), "the dry run only looked (each master's status: whether its API server answers)");
        assert.ok(fs.existsSync(sb.at("/etc/kubernetes/manifests/etcd.yaml")));

        // The first run crashes between the restore and the start step (the master's agent goes away).
        w.faults.crashAfter = "restore";
        const first = await restore(w.outputs);
        assert.strictEqual(first.code, 4, first.out);
        assert.match(first.out, new RegExp(`restore step start on master ${target} failed: .*not running.*run the restore again with \`--snapshot dev/hourly/\\S+\` \\(the same backup\\): it continues where it stopped`, "s"));
        assert.ok(!fs.existsSync(sb.at("/etc/kubernetes/manifests/kube-apiserver.yaml")), "stopped: the manifests are aside");
        assert.strictEqual(fs.readFileSync(sb.at("/var/lib/etcd/member/snap/db")).length, 4096, "etcd holds the backup's snapshot (4096 bytes), not the old data");

        // The agent is back (and the restored etcd lets the API server answer): the next run continues at the start step.
        emu.instances.get(target)!.agentOnline = true;
        fs.rmSync(path.join(sb.env.AK_STUB_STATE, "api-down"));
        w.order.length = 0;
        const second = await restore(w.outputs);
        assert.strictEqual(second.code, 0, second.out);
        const steps = w.order.filter((o) => o.startsWith(`${target}: `) && !/channel/.test(o));
        assert.deepStrictEqual(steps.slice(0, 3), [`${target}: status`, `${target}: start`, `${target}: leases`], "fetch, stop and restore are not run again");
        const restores = callsOf(sbCalls(sb), "ctr").filter((x) => x.args.includes("restore"));
        assert.strictEqual(restores.length, 1, "etcdutl snapshot restore ran once in all");
        assert.ok(restores[0].args.includes(`${REGION}.${target}`) && restores[0].args.includes(`${REGION}.${target}=https://${emu.instances.get(target)!.privateIp}:2380`));
        assert.strictEqual(emu.calls.filter((x) => x.product === "oss" && x.action === "GetObject" && x.status === 200 && x.params.host?.includes("-internal")).length, 1,
            "the master downloaded the backup once");
        // Started again: the manifests back, the bundle (it holds the CA keys) gone.
        assert.ok(fs.existsSync(sb.at("/etc/kubernetes/manifests/kube-apiserver.yaml")));
        assert.ok(!fs.readdirSync(sb.at("/var/lib/alicloud-kubeadm/restore")).some((id) => fs.existsSync(sb.at(`/var/lib/alicloud-kubeadm/restore/${id}/bundle`))));

        // What the restored etcd held that is no longer true is gone; what is true stays.
        assert.deepStrictEqual(fs.readFileSync(path.join(sb.env.AK_STUB_STATE, "leases"), "utf8").trim().split("\n"), [`apiserver-a\thost-${target}`], "only this master's API server Lease is left");
        const names = [...c.nodes.keys()].sort();
        assert.ok(!names.includes(`${REGION}.i-oldmaster0`) && !names.includes(`${REGION}.i-released`), `stale Nodes deleted: ${names.join(", ")}`);
        assert.ok(names.includes(`${REGION}.${w.worker}`), "the live worker's Node stays");
        const routes = [...emu.state.routeTables.get(w.table.routeTableId)!.entries].map((e) => e.nextHopId);
        assert.deepStrictEqual(routes, [w.worker], "the released worker's pod route is deleted, the live one kept");

        // Masters 1 and 2: reset, their Node deleted, joined one at a time; etcd never has more members than masters.
        const others = c.masters.filter((m) => m !== target);
        assert.deepStrictEqual([...c.etcd.keys()].sort(), c.masters.map((m) => `${REGION}.${m}`).sort(), "three members: the restored master and the two re-joined");
        assert.deepStrictEqual(w.etcdSizes, [2, 3], "one join at a time, never a fourth member");
        for (const m of others) {
            const at = (verb: string) => c.log.indexOf(`${m}: ${verb}`);
            assert.ok(at("reset") >= 0, `${m} was reset`);
            assert.ok(w.order.indexOf(`${m}: join`) > w.order.indexOf(`${target}: leases`), `${m} joined after the restore`);
        }

        // Run again: everything is done; nothing is reset or joined again, and the re-joined masters' API servers keep their identity Leases.
        const live = [`apiserver-a\thost-${target}`, ...others.map((m, k) => `apiserver-r${k}\thost-${m}`)];
        fs.writeFileSync(path.join(sb.env.AK_STUB_STATE, "leases"), live.join("\n") + "\n");
        const log = c.log.length;
        w.order.length = 0;
        const third = await restore(w.outputs);
        assert.strictEqual(third.code, 0, third.out);
        assert.deepStrictEqual(w.order.filter((o) => !/channel/.test(o)), [`${target}: status`, `${target}: leases`]);
        assert.ok(c.log.slice(log).every((l) => !/reset|drain|delete-node/.test(l)), c.log.slice(log).join("\n"));
        assert.deepStrictEqual(fs.readFileSync(path.join(sb.env.AK_STUB_STATE, "leases"), "utf8").trim().split("\n"), live, "the live API servers' Leases are kept");

        // No secret of the restore in clear in any request, command or invocation: the backup's password, the signed download.
        const password = crypto.diffieHellman({ privateKey, publicKey: crypto.createPublicKey({ key: Buffer.from(/ephemeral=(\S+)/.exec(emu.oss.list(BUCKET)[0].body.subarray(0, 200).toString())![1], "base64"), format: "der", type: "spki" }) }).toString("base64");
        for (const secret of [password, TOKEN, CERT_KEY, "OSS4-HMAC-SHA256 Credential"]) {
            assert.ok(emu.calls.filter((x) => x.product !== "oss").every((x) => !x.body.includes(secret) && !x.url.includes(secret)), secret);
            assert.ok([...emu.state.invocations.values()].every((inv) => !JSON.stringify(inv).includes(secret)), secret);
        }
    });

    it("a Node of another instance claiming a master's provider id: the master's own Node is the one deleted before it re-joins, the other instance's stays", async () => {
        // A kubelet writes its Node's spec.providerID; only the Node's name is fixed by its credential (NodeRestriction).
        const w = await world({ impostorOf: 1 });
        const { c } = w;
        const claimed = c.masters[1];
        assert.notStrictEqual(claimed, w.target);
        runningMaster(w.target);
        const r = await restore(w.outputs, ["--snapshot", w.object, "--force"]);
        assert.strictEqual(r.code, 0, r.out);
        const deleted = c.log.filter((l) => /: delete-node /.test(l)).map((l) => l.replace(/^.*: delete-node /, ""));
        assert.ok(deleted.includes(`${REGION}.${claimed}`), `the master's own Node was deleted before its join: ${deleted.join(", ")}`);
        assert.ok(c.nodes.has(`${REGION}.${w.impostor}`), `the other instance's Node is not deleted: ${[...c.nodes.keys()].join(", ")}`);
        assert.deepStrictEqual([...c.etcd.keys()].sort(), c.masters.map((m) => `${REGION}.${m}`).sort(), "three members");
    });

    it("a running cluster is not rolled back without --force, a master with another CA is refused (naming the restore into a new stack), and a master with neither a control plane nor a refused init takes no restore", async () => {
        const w = await world({ masters: 1 });
        const sb = runningMaster(w.target);
        const r = await restore(w.outputs);
        assert.strictEqual(r.code, 4);
        assert.match(r.out, /answers \/readyz: this cluster runs, and a restore would roll it back to dev\/hourly\/.*run again with `--snapshot dev\/hourly\/\S+` --force/);
        assert.deepStrictEqual(w.order, [`${w.target}: status`], "nothing but the status step ran");
        assert.ok(fs.existsSync(sb.at("/etc/kubernetes/manifests/etcd.yaml")));

        // A master of another cluster (a new stack's own master 0): its CA is not the backup's, so the restore refuses it.
        sb.write("/etc/kubernetes/pki/ca.crt", "-----BEGIN CERTIFICATE-----\nnew cluster\n-----END CERTIFICATE-----\n");
        w.emu.oss.buckets.get(BUCKET)!.objects.set(w.object, [{ body: sealedBackup("dev", recipient, 9, { "pki/ca.crt": "-----BEGIN CERTIFICATE-----\nold cluster\n-----END CERTIFICATE-----\n" }),
            versionId: "v2", lastModified: new Date().toISOString(), etag: "\"C\"" }]);
        fs.writeFileSync(path.join(sb.env.AK_STUB_STATE, "api-down"), "");
        const foreign = await restore(w.outputs);
        assert.strictEqual(foreign.code, 4, foreign.out);
        assert.match(foreign.out, /refused: master \S+ runs a cluster with another CA than the backup's .*restore into it with `--from-stack <old stack> --discard`/s);
        assert.deepStrictEqual(w.order.filter((o) => !/channel/.test(o)).slice(-1), [`${w.target}: status`], "refused after the status step, before any step ran");
        assert.match(sb.read("/etc/kubernetes/pki/ca.crt") ?? "", /new cluster/, "its CA untouched");
        assert.strictEqual(sb.read("/var/lib/etcd/member/snap/db"), "the old data", "its etcd not restored over");

        fs.rmSync(sb.at("/etc/kubernetes"), { recursive: true });
        fs.rmSync(sb.at("/var/lib/alicloud-kubeadm/restore"), { recursive: true, force: true });
        const none = await restore(w.outputs);
        assert.strictEqual(none.code, 4);
        assert.match(none.out, /runs no control plane and did not refuse kubeadm init.*master-init\.log/s);
    });

    it("master 0 whose API server does not answer while another master's does (etcd keeps its quorum): refused without --force, nothing stopped, no master reset", async () => {
        const w = await world();
        const { c, target } = w;
        const sb = runningMaster(target);
        fs.writeFileSync(path.join(sb.env.AK_STUB_STATE, "api-down"), ""); // this master's etcd is broken; the cluster runs on the others
        const other = c.masters.find((m) => m !== target)!;
        runningMaster(other);
        const members = [...c.etcd.entries()];
        for (const args of [["--dry-run"], []]) {
            const r = await restore(w.outputs, args);
            assert.strictEqual(r.code, 4, r.out);
            assert.match(r.out, new RegExp(`refused: the API server on master ${other} answers /readyz: the cluster runs there .*pulumi up --replace.*--force`, "s"));
        }
        assert.ok(w.order.every((o) => o.endsWith(": status") || /channel/.test(o)), `only status steps ran:\n${w.order.join("\n")}`);
        assert.ok(fs.existsSync(sb.at("/etc/kubernetes/manifests/etcd.yaml")), "nothing stopped on the target");
        assert.strictEqual(sb.read("/var/lib/etcd/member/snap/db"), "the old data", "its etcd not restored over");
        assert.ok(!c.log.some((l) => /reset|delete-node|drain/.test(l)), c.log.join("\n"));
        assert.deepStrictEqual([...c.etcd.entries()], members, "every member kept");
    });

    it("a re-created master 0 (it refused kubeadm init) while masters 1 and 2 run but cannot run a command (agents offline): not restored without --force, no kubeadm init behind the endpoint they serve", async () => {
        const w = await world({ recreated: true });
        const { c, target, emu } = w;
        const sb = refusedMaster(target);
        const others = c.masters.filter((m) => m !== target);
        for (const m of others) {
            runningMaster(m); // its API server answers, its etcd (with the other) holds the quorum
            emu.setAgentOffline(m);
        }
        const r = await restore(w.outputs);
        assert.strictEqual(r.code, 4, r.out);
        assert.strictEqual(callsOf(sbCalls(sb), "kubeadm", "init").length, 0, `kubeadm init ran on ${target} beside the live masters:\n${r.out}`);
        assert.ok(!fs.existsSync(sb.at("/var/lib/etcd/member")), "etcd restored on the target while the cluster may run on the others");
    });

    it("the cluster endpoint (the load balancer) is what is broken, the other masters' API servers answer at their own address: not rolled back without --force", async () => {
        const w = await world();
        const { c, target } = w;
        const sb = runningMaster(target);
        fs.writeFileSync(path.join(sb.env.AK_STUB_STATE, "api-down"), "");
        const others = c.masters.filter((m) => m !== target);
        for (const m of others) fs.writeFileSync(path.join(runningMaster(m).env.AK_STUB_STATE, "endpoint-down"), "");
        const r = await restore(w.outputs);
        assert.strictEqual(r.code, 4, r.out);
        assert.match(r.out, /the API server on master .* answers \/readyz: the cluster runs there/s);
        assert.strictEqual(sb.read("/var/lib/etcd/member/snap/db"), "the old data", "etcd restored over while the cluster runs on the other masters");
    });

    it("a run that stopped after the stop step, run again once the other masters answer: not rolled back without --force", async () => {
        const w = await world();
        const { c, target, emu } = w;
        const sb = runningMaster(target);
        fs.writeFileSync(path.join(sb.env.AK_STUB_STATE, "api-down"), "");
        const others = c.masters.filter((m) => m !== target);
        for (const m of others) fs.writeFileSync(path.join(runningMaster(m).env.AK_STUB_STATE, "api-down"), "");
        w.faults.crashAfter = "stop";
        const first = await restore(w.outputs);
        assert.strictEqual(first.code, 4, first.out);
        emu.instances.get(target)!.agentOnline = true;
        // Masters 1 and 2 come back (the operator fixed them): the cluster runs there, with a quorum, newer than the backup.
        for (const m of others) fs.rmSync(path.join(box(m).env.AK_STUB_STATE, "api-down"));
        fs.rmSync(path.join(sb.env.AK_STUB_STATE, "api-down")); // (the target's own API server would answer once restored)
        const second = await restore(w.outputs);
        assert.strictEqual(second.code, 4, second.out);
        assert.strictEqual(sb.read("/var/lib/etcd/member/snap/db"), "the old data", "etcd restored over while the cluster runs on the other masters");
        assert.ok(!c.log.some((l) => /: reset$/.test(l) && others.some((m) => l.startsWith(`${m}:`))), `a live master was reset:\n${c.log.join("\n")}`);
    });

    it("an unfinished restore that stopped the control plane, given up the way the refusal says: its manifests come back first, and the next backup restores", async () => {
        const w = await world({ masters: 1 });
        const { emu, target } = w;
        const sb = runningMaster(target);
        fs.writeFileSync(path.join(sb.env.AK_STUB_STATE, "api-down"), "");
        w.faults.crashAfter = "stop"; // the agent goes away once the manifests are aside
        const first = await restore(w.outputs);
        assert.strictEqual(first.code, 4, first.out);
        assert.ok(!fs.existsSync(sb.at("/etc/kubernetes/manifests/etcd.yaml")), "the manifests are aside");
        emu.instances.get(target)!.agentOnline = true;
        // A newer backup: the restore of it meets the unfinished one and says how to give that up.
        emu.oss.buckets.get(BUCKET)!.objects.set(`${backupPrefixes("dev").hourly}2026-01-01T020000Z-a.etcd.enc`,
            [{ body: sealedBackup("dev", recipient, 10), versionId: "v3", lastModified: new Date(Date.now() + 1000).toISOString(), etag: "\"D\"" }]);
        const refused = await restore(w.outputs);
        assert.strictEqual(refused.code, 4, refused.out);
        const giveUp = /give it up: (.*)$/m.exec(refused.out)?.[1] ?? "";
        assert.match(giveUp, /mv \/var\/lib\/alicloud-kubeadm\/restore\/[0-9a-f]{16}\/manifests\/\*\.yaml \/etc\/kubernetes\/manifests\/ && rm -rf \/var\/lib\/alicloud-kubeadm\/restore\/[0-9a-f]{16}/, refused.out);
        // What it says, run on the master.
        const command = /`([^`]+)`/.exec(giveUp)![1].replace(/(^|\s)\//g, "$1$AK_ROOT/");
        execFileSync("bash", ["-c", command], { env: { ...process.env, AK_ROOT: sb.at("") } });
        fs.rmSync(path.join(sb.env.AK_STUB_STATE, "api-down")); // its control plane runs again: restoring over it is a rollback
        const r = await restore(w.outputs, ["--force"]);
        assert.strictEqual(r.code, 0, r.out);
        assert.match(r.out, /restored dev\/hourly\/2026-01-01T020000Z-a\.etcd\.enc onto/);
        assert.ok(fs.existsSync(sb.at("/etc/kubernetes/manifests/etcd.yaml")) && fs.existsSync(sb.at("/etc/kubernetes/manifests/kube-apiserver.yaml")));
    });

    it("a single master re-created (it refused kubeadm init): kubeadm init over the restored etcd, no bootstrap token left, the old master's Node deleted", async () => {
        const w = await world({ masters: 1, recreated: true });
        const sb = box(w.target);
        sb.write("/var/lib/alicloud-kubeadm/init.refused", "status=refused\n");
        sb.write("/var/lib/alicloud-kubeadm/init.failed", "status=failed\n");
        sb.write("/var/lib/alicloud-kubeadm/kubeadm-init.yaml", "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\n");
        const r = await restore(w.outputs);
        assert.strictEqual(r.code, 0, r.out);
        const init = callsOf(sbCalls(sb), "kubeadm", "init");
        assert.strictEqual(init.length, 1);
        assert.ok(init[0].args.includes("--ignore-preflight-errors=DirAvailable--var-lib-etcd"), init[0].args.join(" "));
        assert.match(sb.read("/var/lib/alicloud-kubeadm/init.done") ?? "", /status=ok\nrestored=dev\/hourly\//);
        assert.ok(!fs.existsSync(sb.at("/var/lib/alicloud-kubeadm/init.refused")) && !fs.existsSync(sb.at("/var/lib/alicloud-kubeadm/init.failed")));
        assert.strictEqual((fs.readFileSync(path.join(sb.env.AK_STUB_STATE, "tokens"), "utf8")).trim(), "", "kubeadm init's bootstrap token is deleted");
        assert.ok(fs.existsSync(sb.at("/var/lib/etcd/member/snap/db")));
        assert.ok(![...w.c.nodes.keys()].includes(`${REGION}.i-oldmaster0`), "the old master 0's Node is deleted");
        assert.match(r.out, /next: `pulumi up`/);
    });

    it("a single master re-created whose kubeadm init over the restored etcd failed: after the `kubeadm reset -f` the error asks for, the next run restores etcd and the CA again before kubeadm init (never an init that makes a new CA)", async () => {
        const w = await world({ masters: 1, recreated: true });
        const CA = "-----BEGIN CERTIFICATE-----\nthe cluster's CA\n-----END CERTIFICATE-----\n";
        w.emu.oss.buckets.get(BUCKET)!.objects.set(w.object, [{ body: sealedBackup("dev", recipient, 9, { "pki/ca.crt": CA }), versionId: "v2", lastModified: new Date().toISOString(), etag: "\"C\"" }]);
        const sb = refusedMaster(w.target);
        fs.writeFileSync(path.join(sb.env.AK_STUB_STATE, "init-fails"), "");
        const failed = await restore(w.outputs);
        assert.strictEqual(failed.code, 4, failed.out);
        assert.match(failed.out, /kubeadm init over the restored etcd failed .*run 'kubeadm reset -f' on this master, then run the restore again/s);
        // What the error asks for: kubeadm reset -f, which empties /etc/kubernetes/pki (the restored CA with it) and etcd's data.
        execFileSync("bash", ["-c", `"$AK_STUB_SRC/kubeadm" reset -f >/dev/null && rm -rf "$AK_ROOT/var/lib/etcd"`], { env: { ...process.env, ...sb.env } });
        assert.ok(!fs.existsSync(sb.at("/etc/kubernetes/pki/ca.crt")));
        const again = await restore(w.outputs);
        assert.strictEqual(again.code, 0, again.out);
        assert.strictEqual(sb.read("/etc/kubernetes/pki/ca.crt"), CA, "kubeadm init ran over the backup's CA (not one it made)");
        assert.strictEqual(fs.readFileSync(sb.at("/var/lib/etcd/member/snap/db")).length, 4096, "etcd holds the backup's snapshot again");
        assert.strictEqual(callsOf(sbCalls(sb), "ctr").filter((x) => x.args.includes("restore")).length, 2, "etcd restored again before the second init");
        assert.match(sb.read("/var/lib/alicloud-kubeadm/init.done") ?? "", /status=ok\nrestored=dev\/hourly\//);
    });

    it("a single master re-created whose kubeadm init over the restored etcd failed after it wrote the static pods, run again without a reset: etcd's data is not restored again under the etcd kubeadm started", async () => {
        const w = await world({ masters: 1, recreated: true });
        const sb = refusedMaster(w.target);
        fs.writeFileSync(path.join(sb.env.AK_STUB_STATE, "init-fails-late"), "");
        const failed = await restore(w.outputs);
        assert.strictEqual(failed.code, 4, failed.out);
        assert.ok(fs.existsSync(sb.at("/etc/kubernetes/manifests/etcd.yaml")), "kubeadm init left etcd's static pod (the kubelet runs it over /var/lib/etcd)");
        await restore(w.outputs); // run again, as the restore's messages say, without the reset
        assert.ok(!fs.existsSync(path.join(sb.env.AK_STUB_STATE, "restored-under-running-etcd")),
            "etcdutl snapshot restore replaced /var/lib/etcd while the etcd static pod kubeadm init wrote was in place");
    });

    it("a single-master stack restored from its own bucket given with --bucket (same CA, nothing discarded): the live worker's Node is kept", async () => {
        const w = await world({ masters: 1 });
        const sb = runningMaster(w.target);
        const keysFile = path.join(dir, "keys.json");
        fs.writeFileSync(keysFile, JSON.stringify(keys), { mode: 0o600 });
        const r = await restore(w.outputs, ["--bucket", BUCKET, "--keys", keysFile, "--force"]);
        assert.strictEqual(r.code, 0, r.out);
        assert.strictEqual(callsOf(sbCalls(sb), "kubeadm", "reset").length, 0, "nothing discarded");
        assert.ok(w.c.nodes.has(`${REGION}.${w.worker}`), `the live worker's Node was deleted:\n${r.out}`);
    });

    it("into a new stack (--from-outputs of the old stack): the dry run says it; the new stack's own cluster is discarded only when it holds nothing but master 0; kubeadm init over the old etcd and CA; the old cluster's Nodes go, its live instances untouched; a re-run changes nothing", async () => {
        const w = await world({ masters: 1, recreated: true });
        const { emu, c, target } = w;
        // The old cluster's backup holds its CA; the new stack's master 0 runs the cluster its own kubeadm init made.
        const OLD_CA = "-----BEGIN CERTIFICATE-----\nold cluster\n-----END CERTIFICATE-----\n";
        // The new stack: its own (empty) bucket and backup key; the old stack's outputs name the bucket and key of the backups.
        const { sb, ownCa, newStack, old } = newStackOver(w, OLD_CA);
        emu.oss.addBucket("dev-etcd-newstack");

        // Without --from-*: its own bucket has no backup. With an old stack of another cluster name: refused, naming the fix.
        const own = await restore(newStack);
        assert.strictEqual(own.code, 1, own.out);
        assert.match(own.out, /no backup under dev\/hourly\/ .* in dev-etcd-newstack/);
        const renamed = path.join(dir, "renamed.json");
        fs.writeFileSync(renamed, JSON.stringify({ clusterInfo: { ...w.outputs.clusterInfo, name: "prod" }, backupBucket: BUCKET, backupKeys: keys }));
        const misnamed = await restore(newStack, ["--from-outputs", renamed]);
        assert.strictEqual(misnamed.code, 2, misnamed.out);
        assert.match(misnamed.out, /the old stack's cluster is named prod, this stack's dev: .*create the new stack with name prod/);
        const three = await restore({ ...newStack, clusterInfo: { ...newStack.clusterInfo, masterInstanceIds: [target, "i-m1", "i-m2"] } }, ["--from-outputs", old]);
        assert.strictEqual(three.code, 2, three.out);
        assert.match(three.out, /this stack has 3 masters: a restore into a new stack goes onto a stack of one master/);
        assert.deepStrictEqual(w.order, [], "nothing ran on a master");

        // The dry run: the old bucket, the discard, the steps, what follows; only the status step ran.
        const plan = await restore(newStack, ["--from-outputs", old, "--dry-run", "--discard"]);
        assert.strictEqual(plan.code, 0, plan.out);
        assert.match(plan.out, /into a new stack: the backups of bucket dev-etcd-0123abcd \(cn-hangzhou\)/);
        assert.match(plan.out, /2\. stop on master i-\w+: discards the cluster this new stack made \(its CA [0-9a-f]{16}… is not the backup's\): kubeadm reset -f/);
        assert.match(plan.out, /4\. start on master i-\w+: kubeadm init over the restored etcd and CA/);
        assert.match(plan.out, /then: `pulumi up --replace '<URN of dev-join-info>'`/);
        assert.deepStrictEqual(w.order, [`${target}: status`]);

        // Without --discard (--force, a rollback, does not stand in for it), the cluster the master runs is not discarded.
        const unforced = await restore(newStack, ["--from-outputs", old, "--force"]);
        assert.strictEqual(unforced.code, 4, unforced.out);
        assert.match(unforced.out, /refused: restoring into a new stack discards the cluster master i-\w+ runs now .*run again with `--snapshot dev\/hourly\/\S+` --discard/);
        assert.deepStrictEqual(w.order, [`${target}: status`, `${target}: status`], "only the status step ran");

        // The new stack's own cluster holds a pool node: discarding it would strand that node, so the restore refuses.
        c.addNode("i-newpoolnode", { name: `${REGION}.i-newpoolnode` });
        const busy = await restore(newStack, ["--from-outputs", old, "--discard"]);
        assert.strictEqual(busy.code, 4, busy.out);
        assert.match(busy.out, /has other Nodes \(cn-hangzhou\.i-newpoolnode\): .*Scale the stack's pools to 0/s);
        assert.strictEqual(sb.read("/etc/kubernetes/pki/ca.crt"), ownCa, "nothing discarded");
        assert.ok(fs.existsSync(sb.at("/etc/kubernetes/manifests/etcd.yaml")));
        c.nodes.delete(`${REGION}.i-newpoolnode`);

        w.order.length = 0;
        const r = await restore(newStack, ["--from-outputs", old, "--discard"]);
        assert.strictEqual(r.code, 0, r.out);
        assert.deepStrictEqual(w.order.filter((o) => !/channel/.test(o)), ["status", "fetch", "stop", "restore", "start", "leases"].map((s) => `${target}: ${s}`));
        // Its own cluster discarded (kubeadm reset once), then kubeadm init over the restored etcd with the backup's CA.
        assert.strictEqual(callsOf(sbCalls(sb), "kubeadm", "reset").length, 1);
        const init = callsOf(sbCalls(sb), "kubeadm", "init");
        assert.strictEqual(init.length, 1);
        assert.ok(init[0].args.includes("--ignore-preflight-errors=DirAvailable--var-lib-etcd"), init[0].args.join(" "));
        assert.strictEqual(sb.read("/etc/kubernetes/pki/ca.crt"), OLD_CA, "the cluster's CA is the backup's");
        assert.strictEqual(fs.readFileSync(sb.at("/var/lib/etcd/member/snap/db")).length, 4096, "etcd holds the backup's snapshot");
        assert.match(sb.read("/var/lib/alicloud-kubeadm/init.done") ?? "", /status=ok\nrestored=dev\/hourly\//);
        assert.ok(!fs.existsSync(sb.at("/var/lib/alicloud-kubeadm/init.refused")));
        // The backup came from the old stack's bucket, downloaded by the master.
        assert.strictEqual(emu.calls.filter((x) => x.product === "oss" && x.action === "GetObject" && x.status === 200 && x.params.host?.startsWith(`${BUCKET}.`) && x.params.host.includes("-internal")).length, 1);
        // The old cluster's Nodes are gone; its live worker's instance was not touched and keeps its route (not this stack's).
        assert.deepStrictEqual([...c.nodes.keys()], [`${REGION}.${target}`]);
        assert.deepStrictEqual([...c.etcd.keys()], [`${REGION}.${target}`], "one member: this master");
        assert.ok(!c.log.some((l) => l.startsWith(`${w.worker}: `)), c.log.join("\n"));
        assert.ok(![...emu.state.invocations.values()].some((inv) => inv.records.some((r) => r.instanceId === w.worker)), "no command ran on the old stack's worker");
        assert.deepStrictEqual([...emu.state.routeTables.get(w.table.routeTableId)!.entries].map((e) => e.nextHopId), [w.worker], "the released worker's route deleted");
        assert.match(r.out, /next: `pulumi up --replace '<URN of dev-join-info>'`/);

        // Run again: nothing is discarded, restored or initialized again.
        w.order.length = 0;
        const again = await restore(newStack, ["--from-outputs", old]);
        assert.strictEqual(again.code, 0, again.out);
        assert.deepStrictEqual(w.order.filter((o) => !/channel/.test(o)), [`${target}: status`, `${target}: leases`]);
        assert.doesNotMatch(again.out, /next: `pulumi up --replace .<URN of dev-join-info>/, "the JoinInfo replacement is asked for once, after the run that started the restored cluster");
        assert.strictEqual(callsOf(sbCalls(sb), "kubeadm", "reset").length, 1);
        assert.strictEqual(callsOf(sbCalls(sb), "kubeadm", "init").length, 1);
    });

    it("into a new stack: a Node that joined after the restore listed them stops the discard; a reset that stopped after it removed the CA is finished by the next run", async () => {
        const w = await world({ masters: 1, recreated: true });
        const { c, target } = w;
        const { sb, ownCa, newStack, old } = newStackOver(w, "old cluster\n");

        // The restore listed only this master's Node; by the stop step a pool node had joined the cluster it would discard
        // (counted apart from this master's Node: one other Node alone stops it too).
        fs.writeFileSync(path.join(sb.env.AK_STUB_STATE, "nodes"), `node/${REGION}.i-latejoiner\n`);
        const lone = await restore(newStack, ["--from-outputs", old, "--discard"]);
        assert.strictEqual(lone.code, 4, lone.out);
        assert.match(lone.out, /has 1 Nodes besides this master's now \(nothing discarded\)/);
        assert.strictEqual(sb.read("/etc/kubernetes/pki/ca.crt"), ownCa, "nothing discarded");
        fs.writeFileSync(path.join(sb.env.AK_STUB_STATE, "nodes"), `node/${REGION}.${target}\nnode/${REGION}.i-latejoiner\n`);
        const late = await restore(newStack, ["--from-outputs", old, "--discard"]);
        assert.strictEqual(late.code, 4, late.out);
        assert.match(late.out, /has 1 Nodes besides this master's now \(nothing discarded\)/);
        assert.strictEqual(sb.read("/etc/kubernetes/pki/ca.crt"), ownCa, "nothing discarded");
        assert.ok(fs.existsSync(sb.at("/etc/kubernetes/manifests/kube-apiserver.yaml")));
        fs.rmSync(path.join(sb.env.AK_STUB_STATE, "nodes"));

        // The reset stops after it removed the CA; the next run (which reads no CA now) finishes the discard, then the restore.
        fs.writeFileSync(path.join(sb.env.AK_STUB_STATE, "reset-stops"), "");
        const stopped = await restore(newStack, ["--from-outputs", old, "--discard"]);
        assert.strictEqual(stopped.code, 4, stopped.out);
        assert.ok(!fs.existsSync(sb.at("/etc/kubernetes/pki/ca.crt")));
        fs.rmSync(path.join(sb.env.AK_STUB_STATE, "reset-stops"));
        const r = await restore(newStack, ["--from-outputs", old, "--discard"]);
        assert.strictEqual(r.code, 0, r.out);
        assert.strictEqual(callsOf(sbCalls(sb), "kubeadm", "reset").length, 1, "the reset done again");
        assert.strictEqual(callsOf(sbCalls(sb), "kubeadm", "init").length, 1, "kubeadm init over the restored etcd");
        assert.strictEqual(sb.read("/etc/kubernetes/pki/ca.crt"), "old cluster\n");
        assert.deepStrictEqual([...c.nodes.keys()], [`${REGION}.${target}`], "the old cluster's Nodes deleted");
    });

    it("into a new stack whose API server fails /readyz but still lists its Nodes: a Node besides master 0's stops the discard (read by the restore, and again on the master)", async () => {
        const w = await world({ masters: 1, recreated: true });
        const { c, target } = w;
        const { sb, ownCa, newStack, old } = newStackOver(w, "old cluster\n");
        fs.writeFileSync(path.join(sb.env.AK_STUB_STATE, "api-down"), ""); // /readyz reports a failing check; the listing works

        // Read by the restore before it runs anything on the master.
        c.addNode("i-newpoolnode", { name: `${REGION}.i-newpoolnode` });
        const listed = await restore(newStack, ["--from-outputs", old, "--discard"]);
        assert.strictEqual(listed.code, 4, listed.out);
        assert.match(listed.out, /has other Nodes \(cn-hangzhou\.i-newpoolnode\)/);
        assert.strictEqual(sb.read("/etc/kubernetes/pki/ca.crt"), ownCa, "nothing discarded");
        c.nodes.delete(`${REGION}.i-newpoolnode`);

        // Read again on the master right before the reset.
        fs.writeFileSync(path.join(sb.env.AK_STUB_STATE, "nodes"), `node/${REGION}.${target}\nnode/${REGION}.i-latejoiner\n`);
        const late = await restore(newStack, ["--from-outputs", old, "--discard"]);
        assert.strictEqual(late.code, 4, late.out);
        assert.match(late.out, /has 1 Nodes besides this master's now \(nothing discarded\)/);
        assert.strictEqual(sb.read("/etc/kubernetes/pki/ca.crt"), ownCa, "nothing discarded");
        assert.strictEqual(callsOf(sbCalls(sb), "kubeadm", "reset").length, 0);
    });

    it("into a new stack: a discard whose record on the master was removed by hand (the restore given up after the reset) is still a discard: the old cluster's Nodes go and the JoinInfo step is printed", async () => {
        const w = await world({ masters: 1, recreated: true });
        const { emu, c, target } = w;
        const { sb, newStack, old } = newStackOver(w, "old cluster\n");
        w.faults.crashAfter = "stop"; // the agent goes away right after the reset
        const first = await restore(newStack, ["--from-outputs", old, "--discard"]);
        assert.strictEqual(first.code, 4, first.out);
        assert.strictEqual(callsOf(sbCalls(sb), "kubeadm", "reset").length, 1);
        emu.instances.get(target)!.agentOnline = true;
        // Given up by hand: its record removed, as the refusal of an unfinished restore says.
        fs.rmSync(sb.at("/var/lib/alicloud-kubeadm/restore"), { recursive: true });
        const r = await restore(newStack, ["--from-outputs", old, "--discard"]);
        assert.strictEqual(r.code, 0, r.out);
        assert.deepStrictEqual([...c.nodes.keys()], [`${REGION}.${target}`], "the old cluster's Nodes deleted (the old stack's live worker's too)");
        assert.match(r.out, /next: `pulumi up --replace '<URN of dev-join-info>'`/);
        // A plain restore (its own backups) onto a master a restore into a new stack discarded is refused, naming the way on.
        sb.write("/var/lib/alicloud-kubeadm/init.refused", "status=refused\ndiscarded=0123456789abcdef\n");
        fs.rmSync(sb.at("/var/lib/alicloud-kubeadm/restore"), { recursive: true });
        fs.rmSync(sb.at("/etc/kubernetes/manifests"), { recursive: true });
        const plain = await restore({ ...newStack, backupBucket: BUCKET, backupKeys: keys });
        assert.strictEqual(plain.code, 4, plain.out);
        assert.match(plain.out, /a restore into a new stack discarded the cluster master \S+ ran: .*--from-stack <old stack> --discard/s);
    });

    it("into a new stack, finished: the documented command (with --discard) run again after the old stack wrote a newer backup does not roll the restored cluster back", async () => {
        const w = await world({ masters: 1, recreated: true });
        const { emu, c, target } = w;
        const OLD_CA = "old cluster\n";
        const { sb, newStack, old } = newStackOver(w, OLD_CA, new Date(Date.now() - 3_600_000).toISOString());
        const done = await restore(newStack, ["--from-outputs", old, "--discard"]);
        assert.strictEqual(done.code, 0, done.out);
        // The restored cluster runs as kubeadm init leaves it (its etcd manifest names the member after the Node).
        sb.write("/etc/kubernetes/manifests/etcd.yaml", `spec:\n  containers:\n  - command:\n    - etcd\n    - --name=${REGION}.${target}\n    image: registry.k8s.io/etcd:3.6.8-0\n`);
        const db = fs.readFileSync(sb.at("/var/lib/etcd/member/snap/db"));
        // The old stack (a cluster that moved) keeps taking hourly backups; an hour later the same command is run again.
        emu.oss.buckets.get(BUCKET)!.objects.set(`${backupPrefixes("dev").hourly}2026-01-01T020000Z-a.etcd.enc`,
            [{ body: sealedBackup("dev", recipient, 10, { "pki/ca.crt": OLD_CA }), versionId: "v3", lastModified: new Date().toISOString(), etag: "\"D\"" }]);
        w.order.length = 0;
        const again = await restore(newStack, ["--from-outputs", old, "--discard"]);
        assert.deepStrictEqual(w.order.filter((o) => !/channel/.test(o) && !/leases/.test(o)), [`${target}: status`], `steps ran on the restored, running cluster:\n${again.out}`);
        assert.ok(fs.readFileSync(sb.at("/var/lib/etcd/member/snap/db")).equals(db), "the restored cluster's etcd was rolled back to the newer backup");
        assert.ok(!c.nodes.has(`${REGION}.${w.worker}`), "the old stack's live worker's Node is back in the new cluster");
    });
});

/** A new stack's own CA, as kubeadm makes it (a real certificate, valid from now: the `status` step reads its notBefore with openssl). */
function newStackCa(): string {
    const d = fs.mkdtempSync(path.join(os.tmpdir(), "restore-ca-"));
    try {
        execFileSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj", "/CN=kubernetes",
            "-days", "1", "-keyout", path.join(d, "ca.key"), "-out", path.join(d, "ca.crt")], { stdio: "ignore" });
        return fs.readFileSync(path.join(d, "ca.crt"), "utf8");
    } finally { fs.rmSync(d, { recursive: true, force: true }); }
}

/** The stub calls a sandbox recorded so far. */
function sbCalls(sb: Sandbox) {
    return sb.allCalls();
}
