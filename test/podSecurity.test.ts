// World: node scripts in the sandbox (testing/sandbox: stub kubeadm, systemctl, curl, package managers); Pulumi mocks
// (testing/mockRuntime.ts).
/**
 * Pod security and no default token, in the script sandbox (testing/sandbox: stub kubeadm that makes kubeadm init's
 * default bootstrap token, stub systemctl, iptables…) and under Pulumi mocks (the whole stack synthesized): master 0
 * and every control-plane join write the API server's admission config before kubeadm starts it; master 0 deletes
 * the token kubeadm init made before init is done; the stack applies the policy naming its masters; the exemption
 * list is validated. The policy's behaviour on a real API server: test/realClusterPodSecurity.test.ts.
 */
import * as assert from "node:assert/strict";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import * as YAML from "yaml";
import { synthesize } from "../scripts/synth";
import { NAMESPACE as ADMISSION_NAMESPACE } from "../src/admission/kube";
import { AUTOSCALER_NAMESPACE } from "../src/components/clusterAutoscaler";
import { CCM_NAMESPACE, FLANNEL_NAMESPACE } from "../src/components/podNetwork";
import { POD_SECURITY_POLICY } from "../src/components/podSecurity";
import { validateClusterConfig } from "../src/config";
import { SYSTEM_NAMESPACES } from "../src/rules";
import { renderControlPlaneJoinCommand, renderMasterInit } from "../src/shell/render";
import { callsOf, makeSandbox, type Sandbox } from "../testing/sandbox";
import { fill } from "../testing/savedCommands";

const CONFIG = "/etc/kubernetes/admission/admission.yaml";
const master = { region: "cn-hangzhou", kubernetesVersion: "1.36.3", apiEndpoint: "192.168.0.10:6443", podCidr: "172.16.0.0/16", serviceCidr: "10.96.0.0/12", nodeCidrMaskSize: 24 };
/** kubeadm, recording whether the admission config was there when it ran, then the sandbox's own stub. */
const KUBEADM_SEES_CONFIG = `[ -f "$AK_ROOT${CONFIG}" ] && echo "$1 with-config" >>"$AK_STUB_STATE/kubeadm-saw" || echo "$1 without-config" >>"$AK_STUB_STATE/kubeadm-saw"
exec "$AK_STUB_SRC/kubeadm" "$@"`;

describe("pod security and no default token on the masters (sandbox)", () => {
    const sandboxes: Sandbox[] = [];
    after(() => sandboxes.forEach((sb) => sb.cleanup()));
    const sandbox = (stubs: Record<string, string> = {}) => {
        const sb = makeSandbox({ os: "ubuntu", prebaked: true, prebakedVersion: "1.36.3", stubs });
        sandboxes.push(sb);
        return sb;
    };
    const saw = (sb: Sandbox) => fs.readFileSync(path.join(sb.env.AK_STUB_STATE, "kubeadm-saw"), "utf8").trim().split("\n");

    it("master 0 writes the admission config before kubeadm init (PodSecurity baseline enforced, restricted warned and audited, system namespaces exempt) and passes it to the API server", async () => {
        const sb = sandbox({ kubeadm: KUBEADM_SEES_CONFIG });
        const r = await sb.run(renderMasterInit(master));
        assert.equal(r.code, 0, r.stderr);
        assert.ok(saw(sb).includes("init with-config"), "the file is there when kubeadm init starts the API server");
        const config = YAML.parse(sb.read(CONFIG) ?? "");
        assert.equal(config.kind, "AdmissionConfiguration");
        const psa = config.plugins.find((p: { name: string }) => p.name === "PodSecurity").configuration;
        assert.deepEqual(psa.defaults, { "enforce": "baseline", "enforce-version": "latest", "audit": "restricted", "audit-version": "latest", "warn": "restricted", "warn-version": "latest" });
        assert.deepEqual(psa.exemptions.namespaces, [...SYSTEM_NAMESPACES]);
        const cluster = YAML.parseAllDocuments(callsOf(r.calls, "kubeadm", "init")[0].config ?? "").map((d) => d.toJS()).find((d) => d.kind === "ClusterConfiguration");
        assert.deepEqual(cluster.apiServer.extraArgs.find((a: { name: string }) => a.name === "admission-control-config-file"), { name: "admission-control-config-file", value: CONFIG });
        assert.deepEqual(cluster.apiServer.extraVolumes.find((v: { name: string }) => v.name === "admission-config"),
            { name: "admission-config", hostPath: path.dirname(CONFIG), mountPath: path.dirname(CONFIG), readOnly: true, pathType: "DirectoryOrCreate" });
        assert.equal(fs.statSync(sb.at(CONFIG)).mode & 0o077, 0, "root only");
    });

    it("every control-plane join writes it before kubeadm join (the cluster's ClusterConfiguration names it on every member)", async () => {
        const sb = sandbox({ kubeadm: KUBEADM_SEES_CONFIG });
        const channel = "0123456789abcdef0123456789abcdef";
        sb.write(`/run/alicloud-kubeadm/${channel}`, `k9x2ab.0123456789abcdef ${"c3".repeat(32)} -\n`);
        const r = await sb.run(fill(renderControlPlaneJoinCommand({ region: "cn-hangzhou", kubernetesVersion: "1.36.3", apiEndpoint: "192.168.0.10:6443", caCertHash: `sha256:${"a".repeat(64)}` }), { channel }));
        assert.equal(r.code, 0, r.stderr);
        assert.deepEqual(saw(sb).filter((l) => l.startsWith("join")), ["join with-config"]);
        assert.match(sb.read(CONFIG) ?? "", /enforce: baseline/);
    });

    it("the system namespaces are where the project's add-ons run", () => {
        for (const ns of [FLANNEL_NAMESPACE, CCM_NAMESPACE, AUTOSCALER_NAMESPACE, ADMISSION_NAMESPACE]) assert.ok(SYSTEM_NAMESPACES.includes(ns), ns);
    });

    it("master 0 deletes the bootstrap token kubeadm init made (24 h, auto-approved group) before it marks init done", async () => {
        const sb = sandbox();
        const r = await sb.run(renderMasterInit(master));
        assert.equal(r.code, 0, r.stderr);
        const init = callsOf(r.calls, "kubeadm", "init")[0];
        const deleted = r.calls.filter((c) => c.cmd === "kubeadm" && c.args[0] === "token" && c.args[1] === "delete");
        assert.deepEqual(deleted.map((c) => c.args[2]), ["initok"], "kubeadm's default token, by its id");
        assert.ok(deleted[0].seq > init.seq);
        assert.equal(fs.readFileSync(path.join(sb.env.AK_STUB_STATE, "tokens"), "utf8").trim(), "", "no token left");
        assert.match(sb.read("/var/lib/alicloud-kubeadm/init.done") ?? "", /status=ok/);
        assert.ok(!(sb.read("/var/log/alicloud-kubeadm/master-init.log") ?? "").includes("0123456789abcdef"), "the token's secret never in the log");
    });

    it("a token that cannot be deleted leaves init failed with the fix, never done", async () => {
        const sb = sandbox();
        const r = await sb.run(renderMasterInit(master), { AK_STUB_FAIL_TOKEN_LIST: "1", AK_RETRY_DELAY: "0" });
        assert.notEqual(r.code, 0);
        assert.equal(sb.read("/var/lib/alicloud-kubeadm/init.done"), undefined);
        assert.match(sb.read("/var/lib/alicloud-kubeadm/init.failed") ?? "", /status=failed/);
        assert.match(r.stderr, /could not delete the bootstrap token kubeadm init made .* 'kubeadm token delete <id>'/s);
    });
});

describe("pod security in the stack (whole stack under mocks) and its config", () => {
    const out = fs.mkdtempSync(path.join(os.tmpdir(), "pod-security-"));
    after(() => fs.rmSync(out, { recursive: true, force: true }));

    it("the prod stack applies the policy naming its three masters, system namespaces and the configured ones exempt", async () => {
        const doc = YAML.parse(fs.readFileSync(path.join(__dirname, "..", "stacks", "Pulumi.prod.yaml"), "utf8"));
        doc.config["alicloud-kubeadm:cluster"].podSecurity = { exemptNamespaces: ["monitoring"] };
        const file = path.join(out, "Pulumi.prod.yaml");
        fs.writeFileSync(file, YAML.stringify(doc));
        const result = await synthesize(file, out);
        assert.deepEqual(result.problems, []);
        assert.ok(result.warnings.some((w) => /podSecurity\.exemptNamespaces\.0: pods in "monitoring" may run with host access on the masters/.test(w)), result.warnings.join("\n"));
        const masters = result.resources.filter((r) => r.type === "alicloud:ecs/instance:Instance").map((r) => `${doc.config["alicloud:region"]}.${r.id}`).sort();
        assert.equal(masters.length, 3);
        const policy = result.resources.find((r) => r.type === "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy" && r.name.includes(POD_SECURITY_POLICY))!;
        const named = /^\[(.*)\]$/.exec((policy.inputs.spec as { variables: Array<{ name: string; expression: string }> }).variables.find((v) => v.name === "masters")!.expression)![1];
        assert.deepEqual(named.split(", ").map((s) => s.slice(1, -1)).sort(), masters);
        const binding = result.resources.find((r) => r.type === "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding" && r.name.includes(POD_SECURITY_POLICY))!;
        assert.deepEqual((binding.inputs.spec as { matchResources: { namespaceSelector: { matchExpressions: Array<{ values: string[] }> } } }).matchResources.namespaceSelector.matchExpressions[0].values,
            [...SYSTEM_NAMESPACES, "monitoring"]);
    });

    it("podSecurity.exemptNamespaces: each a namespace name, once; each one a warning", () => {
        const base = YAML.parse(fs.readFileSync(path.join(__dirname, "..", "stacks", "Pulumi.dev.yaml"), "utf8")).config["alicloud-kubeadm:cluster"];
        const r = validateClusterConfig({ ...base, podSecurity: { exemptNamespaces: ["Bad_NS", "ops", "ops", "kube-system"] } }, "cn-hangzhou");
        assert.ok(r.errors.some((e) => /^podSecurity\.exemptNamespaces\.0: "Bad_NS" must be a DNS-1123 label/.test(e)), r.errors.join("\n"));
        assert.ok(r.errors.some((e) => /^podSecurity\.exemptNamespaces\.2: "ops" is listed twice/.test(e)), r.errors.join("\n"));
        assert.ok(r.warnings.some((w) => /^podSecurity\.exemptNamespaces\.3: "kube-system" is a system namespace, exempt already/.test(w)), r.warnings.join("\n"));
        assert.deepEqual(validateClusterConfig(base, "cn-hangzhou").config?.podSecurity, { exemptNamespaces: [] }, "default: none");
    });
});
