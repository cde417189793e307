/**
 * Master 0 re-created in a three-master cluster while masters 1 and 2 live (docs/disaster-recovery.md#lost-disk-on-master-0),
 * the whole flow in the order `pulumi up --replace <master 0>` runs it: master 0's ControlPlaneMember is deleted (its
 * old etcd member removed through master 1), the instance is deleted and created again at the same address, its
 * userdata (the real master_init.sh with the recorded CA hash, in the script sandbox) finds the cluster at the other
 * masters and leaves the join pending, the other members only update, and master 0's ControlPlaneMember is created:
 * it joins the new master through masters 1 and 2 with the real channel scripts and the real saved control-plane join
 * command (kubeadm stubbed) in the same sandbox. World: the emulator (ECS, Cloud Assistant) and the fake cluster
 * (testing/fakeCluster.ts: Nodes and etcd members); what is asserted comes from their state and the sandbox's calls.
 */
import * as assert from "assert";
import { execFileSync } from "child_process";
import * as crypto from "crypto";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { useEmulator } from "../testing/emulator/fixture";
import { fakeCluster } from "../testing/fakeCluster";
import { callsOf, makeSandbox, type Sandbox } from "../testing/sandbox";
import { createCommand } from "../testing/savedCommands";
import { sealReply } from "./nodeChannel";
import { controlPlaneMemberProvider, type ControlPlaneMemberInputs } from "../src/providers/controlPlaneMember";
import { renderControlPlaneJoinCommand, renderMasterInit, renderOperation } from "../src/shell/render";
import { OPERATIONS } from "../src/rules";

const REGION = "cn-hangzhou";
const TOKEN = "k8sabc.0123456789abcdef";
const CERT_KEY = "e".repeat(64);

/** A curl stub: the masters at `ips` serve cluster-info with `pem` and verify /readyz against it alone (as in test/masterZeroGuard.test.ts). */
function curlStub(ips: string[], pem: string): string {
    const data = Buffer.from(pem).toString("base64");
    const info = (ip: string) => `{"kind":"ConfigMap","data":{"kubeconfig":"apiVersion: v1\\nclusters:\\n- cluster:\\n    certificate-authority-data: ${data}\\n    server: https://${ip}:6443\\n"}}`;
    return `. "$AK_STUB_SRC/_lib.sh"
url="" out="" cacert=""
args=("$@")
while [ $# -gt 0 ]; do
  case "$1" in -o) out=$2; shift ;; --cacert) cacert=$2; shift ;; https://*:6443/*) url=$1 ;; esac
  shift
done
[ -n "$url" ] || exec bash "$AK_STUB_SRC/curl" "\${args[@]}"
host=\${url#https://}; host=\${host%%:*}
case " ${ips.join(" ")} " in *" $host "*) ;; *) echo "curl: (7) Failed to connect to $host port 6443" >&2; exit 7 ;; esac
case "$url" in
${ips.map((ip) => `  https://${ip}:6443/api/v1/namespaces/kube-public/configmaps/cluster-info) printf '%s' '${info(ip)}' >"\${out:-/dev/stdout}" ;;`).join("\n")}
  */readyz) if [ -n "$cacert" ] && [ "$(base64 -w0 <"$cacert")" = '${data}' ]; then printf ok >"\${out:-/dev/stdout}"; exit 0; fi
    echo "curl: (60) SSL certificate problem: unable to get local issuer certificate" >&2; exit 60 ;;
  *) echo "curl: (22) 404" >&2; exit 22 ;;
esac`;
}

describe("master 0 re-created while masters 1 and 2 live: it joins them, never kubeadm init, never a fourth etcd member", function () {
    this.timeout(120_000);
    const ctx = useEmulator();
    let dir: string;
    let sb: Sandbox | undefined;
    beforeEach(() => { dir = fs.mkdtempSync(path.join(os.tmpdir(), "ak-master0-")); });
    afterEach(() => { sb?.cleanup(); fs.rmSync(dir, { recursive: true, force: true }); });

    it("pulumi up --replace master 0: its member leaves through master 1, the new master 0 finds the cluster by its CA and joins as the third member", async () => {
        const emu = ctx.emu;
        const c = await fakeCluster(emu, REGION, { masters: 3 });
        c.addNode(c.masters[0], { name: "master-0", controlPlane: true });
        const [old0, m1, m2] = c.masters;
        const ips = [m1, m2].map((m) => emu.instances.get(m)!.privateIp);
        // The cluster's CA (openssl) and the hash the stack recorded from it.
        execFileSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", path.join(dir, "ca.key"),
            "-out", path.join(dir, "ca.crt"), "-days", "1", "-subj", "/CN=kubernetes"], { stdio: "pipe" });
        const pem = fs.readFileSync(path.join(dir, "ca.crt"), "utf8");
        const hash = `sha256:${crypto.createHash("sha256").update(new crypto.X509Certificate(pem).publicKey.export({ type: "spki", format: "der" })).digest("hex")}`;
        const joinCommandId = await createCommand(REGION, {
            commandName: "dev-control-plane-join", parameters: true, timeoutSeconds: OPERATIONS["control-plane-join"].timeoutSeconds, description: "join",
            script: renderControlPlaneJoinCommand({ region: REGION, kubernetesVersion: "1.36.3", apiEndpoint: `${ips[0]}:6443`, caCertHash: hash }),
        });
        const member0 = (memberInstanceId: string): ControlPlaneMemberInputs => ({
            region: REGION, masterInstanceId: m1, masterInstanceIds: [m1, m2], memberInstanceId, commands: c.commands, joinCommandId,
            joinSecretsScript: renderOperation("join-secrets"), pollSeconds: 0.01,
        });
        const sizes: number[] = [];

        // 1. Master 0's disk is lost (its machine no longer runs); Pulumi deletes its ControlPlaneMember first.
        emu.stopInstance(old0);
        await controlPlaneMemberProvider.delete!(old0, { ...member0(old0), nodeName: "master-0" });
        assert.deepStrictEqual([...c.etcd.keys()].sort(), ["master-1", "master-2"], "master 0's old member left etcd through master 1");
        assert.ok(!c.nodes.has("master-0"), "its Node is deleted");

        // 2. The instance is deleted and created again at the same address; its userdata runs with the recorded CA hash.
        const ip0 = emu.instances.get(old0)!.privateIp;
        emu.releaseInstance(old0);
        const new0 = emu.addInstance({ regionId: REGION, privateIp: ip0 }).instanceId;
        sb = makeSandbox({ os: "ubuntu", ubuntuRelease: "24.04", instanceId: new0, stubs: { curl: curlStub(ips, pem) } });
        const boot = await sb.run(renderMasterInit({
            region: REGION, kubernetesVersion: "1.36.3", apiEndpoint: `${ips[0]}:6443`, podCidr: "172.16.0.0/16", serviceCidr: "10.96.0.0/12",
            nodeCidrMaskSize: 24, encryptSecrets: true, recordedCaCertHash: hash, peerMasterIps: ips,
        }));
        assert.strictEqual(boot.code, 0, boot.stderr + sb.read("/var/log/alicloud-kubeadm/master-init.log"));
        assert.match(sb.read("/var/lib/alicloud-kubeadm/init.join-pending") ?? "", new RegExp(`member=${ips[0].replace(/\./g, "\\.")}`));

        // 3. Masters 1 and 2 keep their members: a new master 0 is an update of their ControlPlaneMembers, never a replacement.
        const diff = await controlPlaneMemberProvider.diff!(m1, { ...member0(m1), masterInstanceId: old0, masterInstanceIds: [old0, m1, m2] },
            { ...member0(m1), masterInstanceId: new0, masterInstanceIds: [new0, m1, m2] });
        assert.ok(diff.changes && !(diff.replaces ?? []).length, `an update: ${JSON.stringify(diff)}`);

        // 4. Master 0's ControlPlaneMember is created: the join runs in the new master's sandbox (the real scripts).
        emu.onCommand(/^# alicloud-kubeadm operation: (channel-open|channel-receive) \(/m, async (x) => {
            sb!.write("/command.sh", x.script);
            const r = await sb!.run('bash "$AK_ROOT/command.sh" 2>&1');
            return { exitCode: r.code, output: r.stdout };
        });
        emu.onCommand(/^# alicloud-kubeadm operation: join-secrets \(/m, (x) => {
            assert.notStrictEqual(x.instanceId, new0, "the join secrets come from a master of the cluster");
            return { output: sealReply(x.script, `${TOKEN} ${CERT_KEY} -`) };
        });
        emu.onCommand(/kubeadm join --config/, async (x) => {
            sb!.write("/join.sh", x.script);
            const r = await sb!.run('bash "$AK_ROOT/join.sh" 2>&1');
            if (r.code === 0) {
                // what kubeadm join --control-plane did: the etcd member (learner, promoted) and the Node
                c.etcd.set(`${REGION}.${new0}`, ip0);
                sizes.push(c.etcd.size);
                c.addNode(new0, { name: `${REGION}.${new0}`, controlPlane: true });
            }
            return { exitCode: r.code, output: r.stdout };
        });
        const created = await controlPlaneMemberProvider.create!(member0(new0));
        assert.strictEqual(created.outs.nodeName, `${REGION}.${new0}`);

        // From state: three members for three masters, the join never made a fourth; master 0 never ran kubeadm init.
        assert.deepStrictEqual([...c.etcd.keys()].sort(), [`${REGION}.${new0}`, "master-1", "master-2"].sort());
        assert.deepStrictEqual(sizes, [3]);
        const calls = sb.allCalls();
        assert.deepStrictEqual(callsOf(calls, "kubeadm", "init"), [], "kubeadm init never ran on the new master 0");
        const joins = callsOf(calls, "kubeadm", "join");
        assert.strictEqual(joins.length, 1);
        assert.ok((joins[0].config ?? "").includes(`caCertHashes:\n      - '${hash}'`), "the join pins the recorded CA");
        assert.match(joins[0].config ?? "", /^controlPlane:\n {2}certificateKey: '[0-9a-f]{64}'$/m, "as a control-plane member");
        assert.deepStrictEqual(fs.readdirSync(sb.at("/run/alicloud-kubeadm")).filter((f) => !f.endsWith(".lock")), [], "the sealed secrets were read once and deleted");

        // Run again (a re-run of `pulumi up`): the Node is there, nothing joins again.
        const again = await controlPlaneMemberProvider.create!(member0(new0));
        assert.strictEqual(again.outs.nodeName, `${REGION}.${new0}`);
        assert.strictEqual(callsOf(sb.allCalls(), "kubeadm", "join").length, 1);
        assert.strictEqual(c.etcd.size, 3);
    });
});
