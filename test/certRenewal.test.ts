// World: node scripts in the sandbox (testing/sandbox: stub kubeadm, systemctl, curl, package managers).
/**
 * The certificate renewal a master's timer runs (installed by src/shell/control_plane.sh ak_install_cert_renewal, on new
 * masters and, through the saved maintenance command, on masters built before it): run in the script sandbox with the
 * real openssl on certificates made here, a stub kubeadm, and a curl stub whose health endpoints answer per component.
 * Its absolute paths are mapped into the sandbox root; `sleep` returns at once. Asserted: which static pod manifests
 * were moved back, the exit code, the state file doctor reads, and that a component that does not come back stops it.
 */
import * as assert from "node:assert/strict";
import { execFileSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { renderMasterInit } from "../src/shell/render";
import { renderMasterMaintenance } from "../src/shell/renderBackup";
import { callsOf, makeSandbox, type Sandbox } from "../testing/sandbox";

const RENEW = "/usr/local/sbin/alicloud-kubeadm-cert-renew";
const COMPONENTS = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"];

describe("certificate renewal on a master (sandbox)", function () {
    this.timeout(60_000);
    const sandboxes: Sandbox[] = [];
    let dir: string;
    before(() => { dir = fs.mkdtempSync(path.join(os.tmpdir(), "ak-renew-")); });
    after(() => { sandboxes.forEach((s) => s.cleanup()); fs.rmSync(dir, { recursive: true, force: true }); });

    /** A master's sandbox with the renewal installed by master 0's script, certificates `daysLeft` from expiry, manifests in place. */
    async function master(down: string[]): Promise<Sandbox> {
        const sb = makeSandbox({
            os: "ubuntu",
            stubs: {
                sleep: "exit 0",
                seq: 'exec /usr/bin/seq "$@"',
                hostname: "echo dev-master-0",
                // /readyz answers while the API server is up; the controller-manager and scheduler their /healthz
                curl: `. "$AK_STUB_SRC/_lib.sh"
for a in "$@"; do case "$a" in
  https://127.0.0.1:6443/readyz) c=kube-apiserver ;;
  https://127.0.0.1:10257/healthz) c=kube-controller-manager ;;
  https://127.0.0.1:10259/healthz) c=kube-scheduler ;;
esac; done
[ -n "\${c:-}" ] || exec bash "$AK_STUB_SRC/curl" "$@"
case " ${down.join(" ")} " in *" $c "*) exit 7 ;; esac
[ -f "$AK_ROOT/etc/kubernetes/manifests/$c.yaml" ] || exit 7
echo ok`,
            },
        });
        sandboxes.push(sb);
        const r = await sb.run(renderMasterInit({ region: "cn-hangzhou", kubernetesVersion: "1.36.3", apiEndpoint: "192.168.0.10:6443", podCidr: "172.16.0.0/16", serviceCidr: "10.96.0.0/12", nodeCidrMaskSize: 24 }));
        assert.equal(r.code, 0, r.stderr);
        const crt = path.join(dir, `soon-${sandboxes.length}.crt`);
        execFileSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", path.join(dir, "k.key"), "-out", crt, "-days", "10", "-subj", "/CN=apiserver"], { stdio: "pipe" });
        sb.write("/etc/kubernetes/pki/apiserver.crt", fs.readFileSync(crt, "utf8"));
        for (const c of COMPONENTS) sb.write(`/etc/kubernetes/manifests/${c}.yaml`, `kind: Pod\nmetadata: {name: ${c}}\n`);
        // The installed script, its absolute paths put under the sandbox root (the script runs as root on the master).
        const installed = (sb.read(RENEW) ?? "").replace(/\/etc\/kubernetes/g, "$AK_ROOT/etc/kubernetes").replace(/\/var\/lib\/alicloud-kubeadm/g, "$AK_ROOT/var/lib/alicloud-kubeadm");
        sb.write("/renew.sh", installed);
        return sb;
    }
    const state = (sb: Sandbox) => sb.read("/var/lib/alicloud-kubeadm/cert-renew.last") ?? "";

    it("every component comes back: each restarted in turn, the state file says ok", async () => {
        const sb = await master([]);
        const r = await sb.run(sb.read("/renew.sh")!);
        assert.equal(r.code, 0, r.stderr);
        assert.equal(callsOf(r.calls, "kubeadm", "certs").length, 1);
        for (const c of COMPONENTS) assert.ok(sb.read(`/etc/kubernetes/manifests/${c}.yaml`), `${c} back in place`);
        assert.match(state(sb), /^status=ok$/m);
    });

    it("the controller-manager does not come back: the renewal stops before the scheduler restarts, the error in the journal and the state file", async () => {
        const sb = await master(["kube-controller-manager"]);
        const r = await sb.run(sb.read("/renew.sh")!);
        assert.equal(r.code, 1);
        assert.match(r.stderr, /ERROR: kube-controller-manager did not come back/);
        assert.match(state(sb), /^status=failed$/m);
        assert.match(state(sb), /^error=kube-controller-manager did not come back; later ones not restarted$/m);
        assert.match(r.stdout, /restarting etcd[\s\S]*restarting kube-apiserver[\s\S]*restarting kube-controller-manager/);
        assert.doesNotMatch(r.stdout, /restarting kube-scheduler/, "the scheduler is not restarted");
        for (const c of COMPONENTS) assert.ok(sb.read(`/etc/kubernetes/manifests/${c}.yaml`), `${c}'s manifest is in place`);
    });

    it("the API server does not come back (its /readyz also checks etcd): the renewal stops after etcd, nothing else restarted", async () => {
        const sb = await master(["kube-apiserver"]);
        const r = await sb.run(sb.read("/renew.sh")!);
        assert.equal(r.code, 1);
        assert.match(state(sb), /^error=etcd did not come back; later ones not restarted$/m);
        assert.doesNotMatch(r.stdout, /restarting kube-apiserver|restarting kube-controller-manager|restarting kube-scheduler/);
    });

    it("the saved maintenance command installs the renewal (and the backup timer) on a master built before them", async () => {
        const sb = makeSandbox({ os: "ubuntu", stubs: { crictl: "exit 0" } });
        sandboxes.push(sb);
        const backup = "#!/bin/bash\necho backup\n";
        const r = await sb.run(renderMasterMaintenance(backup, 30));
        assert.equal(r.code, 0, r.stderr);
        assert.match(sb.read(RENEW) ?? "", /did not come back; later ones not restarted/);
        assert.equal(sb.read("/usr/local/sbin/alicloud-kubeadm-etcd-backup"), backup);
        assert.match(sb.read("/etc/systemd/system/alicloud-kubeadm-etcd-backup.timer") ?? "", /^OnUnitActiveSec=30min$/m);
        const enabled = callsOf(r.calls, "systemctl").map((c) => c.args.join(" "));
        assert.ok(enabled.includes("enable --now alicloud-kubeadm-cert-renew.timer") && enabled.includes("enable --now alicloud-kubeadm-etcd-backup.timer"), enabled.join("; "));
    });
});
