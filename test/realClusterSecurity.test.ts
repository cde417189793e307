// World: a real control plane built from source (test/kube: etcd, kube-apiserver, controller-manager, scheduler,
// kubeadm, kubectl; KWOK for nodes); node scripts in the sandbox (testing/sandbox: stub kubeadm, systemctl, curl,
// package managers).
/**
 * The control-plane hardening on a real kube-apiserver + etcd (test/kube; `npm run kube:build`): the API server runs
 * with the encryption config, audit policy and flags that master 0's rendered script produces (taken from a sandbox
 * run of it), and the CCM's reduced RBAC is applied as the component renders it. Asserts from etcd's stored bytes,
 * the audit log and the API server's authorizer.
 */
import * as assert from "node:assert/strict";
import * as fs from "fs";
import { parseAllDocuments } from "yaml";
import { renderMasterInit } from "../src/shell/render";
import { ccmObjects, resolvePodNetworkArgs } from "../src/components/podNetwork";
import { callsOf, makeSandbox } from "../testing/sandbox";
import { useRealCluster } from "./kube/fixture";

const ENC = "/etc/kubernetes/pki/alicloud-kubeadm-encryption.yaml";
const POLICY = "/etc/kubernetes/audit/policy.yaml";
const ADMISSION = "/etc/kubernetes/admission/admission.yaml";
let rendered: { files: Record<string, string>; apiserverArgs: Record<string, string>; cm: Record<string, string>; sched: Record<string, string> };

async function renderFromSandbox(): Promise<typeof rendered> {
    const sb = makeSandbox({ os: "ubuntu", prebaked: true });
    try {
        const r = await sb.run(renderMasterInit({ region: "cn-hangzhou", kubernetesVersion: "1.36.3", apiEndpoint: "192.168.0.10:6443",
            podCidr: "172.16.0.0/16", serviceCidr: "10.96.0.0/12", nodeCidrMaskSize: 24, encryptSecrets: true }));
        assert.equal(r.code, 0, r.stderr);
        const cluster = parseAllDocuments(callsOf(r.calls, "kubeadm", "init")[0].config ?? "").map((d) => d.toJS()).find((d) => d.kind === "ClusterConfiguration");
        const flags = (list: Array<{ name: string; value: string }>) => Object.fromEntries(list.map((a) => [a.name, a.value]));
        const api = flags(cluster.apiServer.extraArgs);
        // Paths of the node, moved into the run folder.
        const moved: Record<string, string> = {
            ...api,
            "encryption-provider-config": "{dir}/encryption.yaml",
            "audit-policy-file": "{dir}/audit-policy.yaml",
            "audit-log-path": "{dir}/logs/hardened-audit.log",
            "admission-control-config-file": "{dir}/admission.yaml",
        };
        assert.equal(api["encryption-provider-config"], ENC);
        assert.equal(api["audit-policy-file"], POLICY);
        assert.equal(api["admission-control-config-file"], ADMISSION);
        const cm = flags(cluster.controllerManager.extraArgs);
        return {
            files: { "encryption.yaml": sb.read(ENC) ?? "", "audit-policy.yaml": sb.read(POLICY) ?? "", "admission.yaml": sb.read(ADMISSION) ?? "" },
            apiserverArgs: moved,
            cm: { profiling: cm.profiling },
            sched: flags(cluster.scheduler.extraArgs),
        };
    } finally {
        sb.cleanup();
    }
}

describe("control-plane hardening on a real API server (encryption at rest, audit, profiling, CCM RBAC)", () => {
    const rc = useRealCluster(async () => {
        rendered = await renderFromSandbox();
        return { files: rendered.files, apiserverArgs: rendered.apiserverArgs, controllerManagerArgs: rendered.cm, schedulerArgs: rendered.sched };
    });

    it("a Secret read back from etcd is secretbox ciphertext under the rendered key; the API still returns it", async () => {
        const { c } = rc;
        const value = "hunter2-plaintext-marker";
        await c.kubectl(["create", "secret", "generic", "hardening-probe", "-n", "default", `--from-literal=password=${value}`]);
        const key = Buffer.from("/registry/secrets/default/hardening-probe").toString("base64");
        const etcd = await c.run("curl", ["-sS", "--cacert", c.path("pki/etcd/ca.crt"), "--cert", c.path("pki/apiserver-etcd-client.crt"),
            "--key", c.path("pki/apiserver-etcd-client.key"), "-X", "POST", `https://127.0.0.1:${c.ports.etcdClient}/v3/kv/range`, "-d", JSON.stringify({ key })]);
        const stored = Buffer.from(JSON.parse(etcd.stdout).kvs[0].value, "base64");
        assert.ok(stored.subarray(0, 40).toString("latin1").startsWith("k8s:enc:secretbox:v1:alicloud-kubeadm-1:"), stored.subarray(0, 40).toString("latin1"));
        assert.ok(!stored.includes(Buffer.from(value)), "the value is not in etcd in clear");
        const back = JSON.parse(await c.kubectl(["get", "secret", "hardening-probe", "-n", "default", "-o", "json"]));
        assert.equal(Buffer.from(back.data.password, "base64").toString(), value);
    });

    it("the audit log is written, Secrets at Metadata without their content", async () => {
        const { c } = rc;
        await c.kubectl(["create", "secret", "generic", "audit-probe", "-n", "default", "--from-literal=k=audit-secret-value"]);
        const events = await c.waitFor("the audit log to show the Secret", async () => {
            const p = c.path("logs/hardened-audit.log");
            if (!fs.existsSync(p)) return undefined;
            const evs = fs.readFileSync(p, "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l));
            return evs.some((e) => e.objectRef?.name === "audit-probe") ? evs : undefined;
        });
        const create = events.find((e: any) => e.objectRef?.resource === "secrets" && e.objectRef?.name === "audit-probe" && e.verb === "create");
        assert.equal(create.level, "Metadata");
        assert.ok(!JSON.stringify(events).includes("audit-secret-value"), "no Secret content in the audit log");
        assert.ok(events.some((e: any) => e.level === "Request" && e.verb === "create" && e.objectRef?.resource !== "secrets"), "other writes carry their request");
    });

    it("profiling is off: /debug/pprof is not served by the API server", async () => {
        const { c } = rc;
        const r = await c.run("kubectl", ["get", "--raw", "/debug/pprof/"], { allowFail: true });
        assert.notEqual(r.code, 0);
        assert.match(r.stderr, /NotFound|not found|404/i);
        assert.equal(c.commands["kube-apiserver"].includes("--profiling=false"), true);
        assert.equal(c.commands["kube-controller-manager"].includes("--profiling=false"), true);
        assert.equal(c.commands["kube-scheduler"].includes("--profiling=false"), true);
    });

    it("the CCM's reduced RBAC allows every call its node and route controllers make, and no Secret", async () => {
        const { c } = rc;
        const objs = ccmObjects(resolvePodNetworkArgs({ podCidr: "172.16.0.0/16", routeTableId: "vtb-1", region: "cn-hangzhou", kubernetesVersion: "1.36.3" }), "vtb-1")
            .filter((o) => o.kind !== "DaemonSet");
        await c.apply(objs as object[]);
        const as = "system:serviceaccount:kube-system:cloud-controller-manager";
        const can = async (args: string[]) => (await c.run("kubectl", ["auth", "can-i", ...args, `--as=${as}`], { allowFail: true })).stdout.trim();
        // docs/security.md#add-ons: node controller (cache list/watch, get, patch, delete), route controller (status patch), events, lease `ccm`.
        for (const args of [["list", "nodes"], ["watch", "nodes"], ["get", "nodes"], ["patch", "nodes"], ["delete", "nodes"], ["patch", "nodes", "--subresource=status"],
            ["create", "events", "-n", "default"], ["patch", "events", "-n", "kube-system"], ["create", "leases.coordination.k8s.io", "-n", "kube-system"],
            ["get", "leases.coordination.k8s.io/ccm", "-n", "kube-system"], ["update", "leases.coordination.k8s.io/ccm", "-n", "kube-system"]]) {
            assert.equal(await can(args), "yes", args.join(" "));
        }
        for (const args of [["get", "secrets", "-n", "kube-system"], ["list", "secrets", "-A"], ["update", "services", "-n", "default"],
            ["update", "leases.coordination.k8s.io/kube-controller-manager", "-n", "kube-system"], ["create", "pods", "-n", "default"]]) {
            assert.equal(await can(args), "no", args.join(" "));
        }
    });
});
