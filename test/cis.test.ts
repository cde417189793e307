/**
 * CIS basics on the control plane (docs/security.md#cis), from what the rendered scripts leave in the sandbox:
 * master 0's kubeadm config (profiling off, audit log with rotation, encryption at rest when enabled, the kubelet's
 * protectKernelDefaults), the files the API server reads, the sysctls the kubelet needs, and the certificate
 * renewal timer on every master; pool nodes get none of the control-plane files.
 */
import * as assert from "node:assert/strict";
import { parseAllDocuments } from "yaml";
import {
    renderAttachNode, renderControlPlaneJoin, renderControlPlaneJoinCommand, renderMasterInit, type AttachNodeParams, type MasterInitParams,
} from "../src/shell/render";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { renderOperation } from "../src/shell/render";
import * as zlib from "zlib";
import { parseSections } from "../src/doctor/context";
import { decompress } from "../src/cloud/operations";
import { parseCertExpiry } from "../src/doctor/certs";
import { fill } from "../testing/savedCommands";
import { callsOf, makeSandbox, type Sandbox } from "../testing/sandbox";
import { assertOk } from "./tools";

const TOKEN = "k9x2ab.0123456789abcdef";
const HASH = `sha256:${"0a".repeat(32)}`;
const CERT_KEY = "c3".repeat(32);
const ENC_KEY = Buffer.alloc(32, 7).toString("base64");
const master: MasterInitParams = {
    region: "cn-shanghai", kubernetesVersion: "1.34.2", apiEndpoint: "192.168.0.10:6443",
    podCidr: "172.16.0.0/16", serviceCidr: "10.96.0.0/12", nodeCidrMaskSize: 25,
};
const attach: AttachNodeParams = {
    region: "cn-shanghai", kubernetesVersion: "1.34.2", apiEndpoint: "192.168.0.10:6443", poolName: "elastic", token: TOKEN, caCertHash: HASH,
};
const { poolName: _p, ...member } = attach;
const ENCRYPTION = "/etc/kubernetes/pki/alicloud-kubeadm-encryption.yaml";
const AUDIT_POLICY = "/etc/kubernetes/audit/policy.yaml";
const TIMER = "/etc/systemd/system/alicloud-kubeadm-cert-renew.timer";
const RENEW = "/usr/local/sbin/alicloud-kubeadm-cert-renew";

const arg = (args: Array<{ name: string; value: string }> | undefined, name: string) => args?.find((a) => a.name === name)?.value;

describe("CIS basics on the control plane", () => {
    const sandboxes: Sandbox[] = [];
    after(() => sandboxes.forEach((sb) => sb.cleanup()));
    const sandbox = (): Sandbox => {
        const sb = makeSandbox({ os: "ubuntu", prebaked: true });
        sandboxes.push(sb);
        return sb;
    };

    for (const encrypt of [true, false]) {
        it(`master 0 (encryptSecrets ${encrypt}): profiling off everywhere, audit log with rotation, ${encrypt ? "Secrets encrypted with a fresh key" : "no encryption config"}, protectKernelDefaults with its sysctls, renewal timer`, async () => {
            const sb = sandbox();
            const r = await sb.run(renderMasterInit({ ...master, encryptSecrets: encrypt }));
            assertOk(r, sb);
            const init = callsOf(r.calls, "kubeadm", "init")[0];
            const docs = parseAllDocuments(init.config ?? "").map((d) => d.toJS());
            const cluster = docs.find((d) => d.kind === "ClusterConfiguration");
            const api = cluster.apiServer.extraArgs;
            for (const component of [api, cluster.controllerManager.extraArgs, cluster.scheduler.extraArgs]) assert.equal(arg(component, "profiling"), "false");
            assert.equal(arg(api, "audit-policy-file"), AUDIT_POLICY);
            assert.equal(arg(api, "audit-log-path"), "/var/log/kubernetes/audit/audit.log");
            assert.deepEqual([arg(api, "audit-log-maxage"), arg(api, "audit-log-maxbackup"), arg(api, "audit-log-maxsize")], ["30", "10", "100"]);
            assert.deepEqual(cluster.apiServer.extraVolumes.map((v: { hostPath: string; mountPath: string }) => [v.hostPath, v.mountPath]),
                [["/etc/kubernetes/audit", "/etc/kubernetes/audit"], ["/var/log/kubernetes/audit", "/var/log/kubernetes/audit"], ["/etc/kubernetes/admission", "/etc/kubernetes/admission"]]);
            const kubelet = docs.find((d) => d.kind === "KubeletConfiguration");
            assert.equal(kubelet.protectKernelDefaults, true);
            const sysctl = sb.read("/etc/sysctl.d/99-alicloud-kubeadm.conf") ?? "";
            for (const line of ["vm.overcommit_memory = 1", "vm.panic_on_oom = 0", "kernel.panic = 10", "kernel.panic_on_oops = 1",
                "kernel.keys.root_maxkeys = 1000000", "kernel.keys.root_maxbytes = 25000000"]) assert.ok(sysctl.includes(line), line);

            const policy = parseAllDocuments(sb.read(AUDIT_POLICY) ?? "")[0].toJS();
            assert.equal(policy.kind, "Policy");
            const secretsRule = policy.rules.find((x: { resources?: Array<{ resources: string[] }> }) => x.resources?.some((g) => g.resources.includes("secrets")));
            assert.equal(secretsRule.level, "Metadata", "Secrets are audited without their content");
            assert.equal(policy.rules.at(-1).level, "Metadata", "everything else at least at Metadata");

            if (encrypt) {
                assert.equal(arg(api, "encryption-provider-config"), ENCRYPTION, "inside /etc/kubernetes/pki, which kubeadm mounts into the API server");
                const enc = parseAllDocuments(sb.read(ENCRYPTION) ?? "")[0].toJS();
                assert.deepEqual(enc.resources[0].resources, ["secrets"]);
                const key = enc.resources[0].providers[0].secretbox.keys[0].secret as string;
                assert.equal(Buffer.from(key, "base64").length, 32, "a 32-byte key");
                assert.deepEqual(enc.resources[0].providers[1], { identity: {} }, "Secrets written before stay readable");
                const again = sandbox();
                assertOk(await again.run(renderMasterInit({ ...master, encryptSecrets: true })), again);
                assert.notEqual(parseAllDocuments(again.read(ENCRYPTION) ?? "")[0].toJS().resources[0].providers[0].secretbox.keys[0].secret, key, "a fresh key per cluster");
            } else {
                assert.equal(arg(api, "encryption-provider-config"), undefined);
                assert.equal(sb.read(ENCRYPTION), undefined);
            }
            const timer = sb.read(TIMER) ?? "";
            assert.match(timer, /^OnCalendar=/m);
            assert.match(timer, /^Persistent=true$/m);
            assert.match(sb.read("/etc/systemd/system/alicloud-kubeadm-cert-renew.service") ?? "", new RegExp(`^ExecStart=/bin/bash ${RENEW}$`, "m"));
            assert.ok(r.calls.some((c) => c.cmd === "systemctl" && c.args.join(" ") === "enable --now alicloud-kubeadm-cert-renew.timer"), "timer enabled");
            const renew = sb.read(RENEW) ?? "";
            assert.match(renew, /kubeadm certs renew all/);
            assert.match(renew, /-checkend \$\(\(90 \* 86400\)\)/, "renews with 90 days left");
        });
    }

    it("master 0 whose encryption config cannot be written stops before kubeadm init (no API server without it)", async () => {
        const sb = sandbox();
        sb.write("/etc/kubernetes/pki", "not a directory\n");
        const r = await sb.run(renderMasterInit({ ...master, encryptSecrets: true }));
        assert.equal(r.code, 1);
        assert.equal(callsOf(r.calls, "kubeadm", "init").length, 0);
        assert.match(r.stderr, /could not write \/etc\/kubernetes\/pki\/alicloud-kubeadm-encryption\.yaml/);
    });

    it("a control-plane member writes the audit policy and master 0's encryption key before kubeadm join, installs the renewal timer after it", async () => {
        const sb = sandbox();
        const r = await sb.run(renderControlPlaneJoin({ ...member, certificateKey: CERT_KEY, encryptionKey: ENC_KEY }));
        assertOk(r, sb);
        const enc = parseAllDocuments(sb.read(ENCRYPTION) ?? "")[0].toJS();
        assert.equal(enc.resources[0].providers[0].secretbox.keys[0].secret, ENC_KEY);
        assert.ok(sb.read(AUDIT_POLICY));
        const join = callsOf(r.calls, "kubeadm", "join")[0].seq;
        const timer = r.calls.find((c) => c.cmd === "systemctl" && c.args.includes("alicloud-kubeadm-cert-renew.timer"))!.seq;
        assert.ok(join < timer);
        assert.ok(!(sb.read("/var/log/alicloud-kubeadm/attach-node.log") ?? "").includes(ENC_KEY), "the key never reaches the log");
        assert.throws(() => renderControlPlaneJoin({ ...member, certificateKey: CERT_KEY, encryptionKey: "short" }), /encryptionKey: must be 32 bytes in Base64/);
    });

    it("a control-plane join that fails once: the retry's kubeadm reset empties /etc/kubernetes/pki, the encryption config is written again before the second join", async () => {
        const sb = makeSandbox({ os: "ubuntu", prebaked: true, fail: { join: 1 } });
        sandboxes.push(sb);
        const r = await sb.run(renderControlPlaneJoin({ ...member, certificateKey: CERT_KEY, encryptionKey: ENC_KEY }));
        assertOk(r, sb);
        assert.equal(callsOf(r.calls, "kubeadm", "join").length, 2);
        assert.ok(callsOf(r.calls, "kubeadm", "reset").length >= 1, "the retry cleaned up with kubeadm reset");
        assert.equal(parseAllDocuments(sb.read(ENCRYPTION) ?? "")[0].toJS().resources[0].providers[0].secretbox.keys[0].secret, ENC_KEY);
    });

    it("the saved control-plane join command (packed) still writes the audit policy and a received encryption config; pool nodes get no control-plane file and no timer", async () => {
        const cp = sandbox();
        const channel = "0123456789abcdef0123456789abcdef";
        cp.write(`/run/alicloud-kubeadm/${channel}`, `${TOKEN} ${CERT_KEY}\n`);
        assertOk(await cp.run(fill(renderControlPlaneJoinCommand(member), { channel })), cp);
        assert.ok(cp.read(AUDIT_POLICY) && cp.read(TIMER));
        assert.equal(cp.read(ENCRYPTION), undefined, "no key given, none written");
        // The member of an encrypting cluster receives the masters' whole encryption config, gzip + Base64, as the
        // channel's third field (`-`: none); master 0's own file here (test/controlPlaneMember.test.ts: a rotation's keys).
        const m0 = sandbox();
        assertOk(await m0.run(renderMasterInit({ ...master, encryptSecrets: true })), m0);
        const enc = sandbox();
        enc.write(`/run/alicloud-kubeadm/${channel}`, `${TOKEN} ${CERT_KEY} ${zlib.gzipSync(m0.read(ENCRYPTION) ?? "").toString("base64")}\n`);
        assertOk(await enc.run(fill(renderControlPlaneJoinCommand(member), { channel })), enc);
        assert.equal(enc.read(ENCRYPTION), m0.read(ENCRYPTION));
        assert.equal(Buffer.from(parseAllDocuments(enc.read(ENCRYPTION) ?? "")[0].toJS().resources[0].providers[0].secretbox.keys[0].secret, "base64").length, 32);
        const none = sandbox();
        none.write(`/run/alicloud-kubeadm/${channel}`, `${TOKEN} ${CERT_KEY} -\n`);
        assertOk(await none.run(fill(renderControlPlaneJoinCommand(member), { channel })), none);
        assert.equal(none.read(ENCRYPTION), undefined, "`-`: no key");
        const pool = sandbox();
        const r = await pool.run(renderAttachNode(attach));
        assertOk(r, pool);
        for (const p of [AUDIT_POLICY, ENCRYPTION, TIMER, RENEW]) assert.equal(pool.read(p), undefined, p);
        assert.ok((pool.read("/etc/sysctl.d/99-alicloud-kubeadm.conf") ?? "").includes("kernel.panic_on_oops = 1"), "pool nodes get the kubelet's sysctls too");
    });

    it("doctor-certs on a master reads each certificate's expiry (PKI files and kubeconfig client certificates) as doctor parses it", async function () {
        if (spawnSync("openssl", ["version"]).status !== 0) {
            if (process.env.CI === "true") throw new Error("openssl is required in CI (the doctor-certs run)");
            console.log("      skipped: the doctor-certs run needs openssl (install: apt-get install -y openssl)");
            this.skip();
        }
        const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "ak-certs-"));
        const cert = (days: number): string => {
            const r = spawnSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", path.join(tmp, "k"), "-out", path.join(tmp, "c"),
                "-days", String(days), "-subj", "/CN=probe"], { encoding: "utf8" });
            assert.equal(r.status, 0, r.stderr);
            return fs.readFileSync(path.join(tmp, "c"), "utf8");
        };
        const sb = makeSandbox({ os: "ubuntu", prebaked: true, stubs: { openssl: 'exec /usr/bin/openssl "$@"' } });
        sandboxes.push(sb);
        try {
            sb.write("/etc/kubernetes/pki/apiserver.crt", cert(12));
            sb.write("/etc/kubernetes/pki/etcd/server.crt", cert(300));
            sb.write("/etc/kubernetes/admin.conf", `apiVersion: v1\nusers:\n- name: kubernetes-admin\n  user:\n    client-certificate-data: ${Buffer.from(cert(200)).toString("base64")}\n`);
        } finally {
            fs.rmSync(tmp, { recursive: true, force: true });
        }
        const r = await sb.run(renderOperation("doctor-certs"));
        assert.equal(r.code, 0, r.stderr);
        const sections = parseSections(decompress(r.stdout));
        assert.equal(sections.certs.rc, 0, sections.certs.output);
        const days = Object.fromEntries(parseCertExpiry(sections.certs.output).map((c) => [c.name, Math.round((c.notAfter - Date.now()) / 86_400_000)]));
        assert.deepEqual(days, { "pki/apiserver.crt": 12, "pki/etcd/server.crt": 300, "admin.conf": 200 });
        assert.deepEqual(callsOf(r.calls, "systemctl").map((c) => c.args.join(" ")), ["is-enabled alicloud-kubeadm-cert-renew.timer"]);
    });
});
