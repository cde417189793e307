// World: a real control plane built from source (test/kube: etcd, kube-apiserver, controller-manager, scheduler,
// kubeadm, kubectl; KWOK for nodes); node scripts in the sandbox (testing/sandbox: stub kubeadm, systemctl, curl,
// package managers).
/**
 * Pod security on a real kube-apiserver (test/kube; `npm run kube:build`): the API server runs with the admission
 * configuration master 0's rendered script writes and passes it (taken from a sandbox run of it: Pod Security
 * `baseline` enforced outside the system namespaces), and the ValidatingAdmissionPolicy the PodSecurity component
 * renders is applied as is. A user who may only create pods in their namespace tries a pod with host access by each
 * route onto a master (a KWOK node labelled and tainted as kubeadm does a control-plane node); asserts from what the
 * API server admits or refuses, and with which policy's message.
 */
import * as assert from "node:assert/strict";
import { parseAllDocuments } from "yaml";
import { podSecurityObjects, POD_SECURITY_POLICY } from "../src/components/podSecurity";
import { CONTROL_PLANE_TAINT } from "../src/rules";
import { renderMasterInit } from "../src/shell/render";
import { callsOf, makeSandbox } from "../testing/sandbox";
import { useRealCluster } from "./kube/fixture";

const ADMISSION_CONFIG = "/etc/kubernetes/admission/admission.yaml";
const REGION = "cn-hangzhou";
const MASTER = `${REGION}.i-master0`;
const WORKER = `${REGION}.i-worker0`;
const USER = "tenant-alice";
/** Alice's namespace as created (Pod Security's default applies), and one an operator relaxed with a label. */
const PLAIN = "tenant-plain";
const RELAXED = "tenant-relaxed";
/** A namespace the config exempts (podSecurity.exemptNamespaces). */
const EXEMPT = "monitoring";

/** What master 0's script gives kubeadm: the admission config file and the API server flag that names it. */
async function renderedAdmissionConfig(): Promise<{ file: string; flag: string }> {
    const sb = makeSandbox({ os: "ubuntu", prebaked: true });
    try {
        const r = await sb.run(renderMasterInit({ region: REGION, kubernetesVersion: "1.36.3", apiEndpoint: "192.168.0.10:6443",
            podCidr: "172.16.0.0/16", serviceCidr: "10.96.0.0/12", nodeCidrMaskSize: 24 }));
        assert.equal(r.code, 0, r.stderr);
        const cluster = parseAllDocuments(callsOf(r.calls, "kubeadm", "init")[0].config ?? "").map((d) => d.toJS()).find((d) => d.kind === "ClusterConfiguration");
        const flag = (cluster.apiServer.extraArgs as Array<{ name: string; value: string }>).find((a) => a.name === "admission-control-config-file")?.value ?? "";
        const volume = (cluster.apiServer.extraVolumes as Array<{ hostPath: string; mountPath: string; readOnly?: boolean }>).find((v) => ADMISSION_CONFIG.startsWith(`${v.mountPath}/`));
        assert.ok(volume && volume.hostPath === volume.mountPath && volume.readOnly, "the API server's pod mounts the file's directory read-only");
        return { file: sb.read(flag) ?? "", flag };
    } finally {
        sb.cleanup();
    }
}

type Pod = { spec: Record<string, unknown> };
/** A pod with one kind of host access. */
const HOST_ACCESS: Record<string, (spec: Record<string, unknown>) => Pod> = {
    hostNetwork: (s) => ({ spec: { ...s, hostNetwork: true } }),
    hostPID: (s) => ({ spec: { ...s, hostPID: true } }),
    hostIPC: (s) => ({ spec: { ...s, hostIPC: true } }),
    privileged: (s) => ({ spec: { ...s, containers: [{ name: "c", image: "registry.k8s.io/pause:3.10.2", securityContext: { privileged: true } }] } }),
    hostPath: (s) => ({ spec: { ...s, volumes: [{ name: "root", hostPath: { path: "/" } }] } }),
};
/** The routes onto a master, as pod spec fields. */
const ROUTES: Record<string, { spec: Record<string, unknown>; message: RegExp }> = {
    "spec.nodeName": { spec: { nodeName: MASTER }, message: /spec\.nodeName is a master/ },
    "a nodeSelector on the control-plane label": { spec: { nodeSelector: { [CONTROL_PLANE_TAINT]: "" } }, message: /spec\.nodeSelector selects the masters/ },
    "node affinity on a master's name (matchFields, as a DaemonSet's pods)": {
        spec: { affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchFields: [{ key: "metadata.name", operator: "In", values: [MASTER] }] }] } } } },
        message: /spec\.affinity\.nodeAffinity selects the masters/,
    },
    "node affinity on the control-plane label (matchExpressions)": {
        spec: { affinity: { nodeAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 1, preference: { matchExpressions: [{ key: CONTROL_PLANE_TAINT, operator: "Exists" }] } }] } } },
        message: /spec\.affinity\.nodeAffinity selects the masters/,
    },
    "a toleration of the control-plane taint": {
        spec: { tolerations: [{ key: CONTROL_PLANE_TAINT, operator: "Exists", effect: "NoSchedule" }] },
        message: /a toleration of the control-plane taint/,
    },
    "a key-less operator: Exists toleration": { spec: { tolerations: [{ operator: "Exists" }] }, message: /a toleration of the control-plane taint/ },
};

describe("pod security on a real API server: Pod Security baseline by default, and no pod with host access on a master by any route", function () {
    this.timeout(180_000);
    let admission: { file: string; flag: string };
    const rc = useRealCluster(async () => {
        admission = await renderedAdmissionConfig();
        return { region: REGION, files: { "admission.yaml": admission.file }, apiserverArgs: { "admission-control-config-file": "{dir}/admission.yaml" } };
    });
    let n = 0;
    /** Alice (or, with `admin`, the cluster admin) creates a pod in `ns`; returns the API server's answer. */
    const create = async (ns: string, pod: Pod, admin = false) => {
        const name = `p${++n}`;
        const spec = { containers: [{ name: "c", image: "registry.k8s.io/pause:3.10.2" }], ...pod.spec };
        const r = await rc.c.run("kubectl", ["create", "-f", "-", ...(admin ? [] : [`--as=${USER}`]), "-o", "name"], {
            allowFail: true, input: JSON.stringify({ apiVersion: "v1", kind: "Pod", metadata: { name, namespace: ns }, spec }),
        });
        if (r.code === 0) await rc.c.kubectl(["delete", "pod", name, "-n", ns, "--wait=false"]);
        return { ...r, name };
    };

    before(async () => {
        const { c } = rc;
        assert.equal(admission.flag, ADMISSION_CONFIG);
        await c.addNode({ name: MASTER, providerID: MASTER, labels: { [CONTROL_PLANE_TAINT]: "", "node.kubernetes.io/exclude-from-external-load-balancers": "" },
            taints: [{ key: CONTROL_PLANE_TAINT, effect: "NoSchedule" }] });
        await c.addNode({ name: WORKER, providerID: WORKER });
        for (const ns of [PLAIN, RELAXED, EXEMPT]) {
            await c.kubectl(["create", "namespace", ns]);
            await c.kubectl(["create", "role", "pods", "-n", ns, "--verb=create,get,list,delete", "--resource=pods"]);
            await c.kubectl(["create", "rolebinding", "alice-pods", "-n", ns, "--role=pods", `--user=${USER}`]);
        }
        // An operator relaxed Pod Security for two namespaces; the policy still holds for the masters.
        for (const ns of [RELAXED, EXEMPT]) await c.kubectl(["label", "namespace", ns, "pod-security.kubernetes.io/enforce=privileged"]);
        await c.apply(podSecurityObjects({ clusterName: "test", masterNodeNames: [MASTER], exemptNamespaces: [EXEMPT] }));
        await c.waitFor(`${POD_SECURITY_POLICY} in force`, async () =>
            (await create(RELAXED, HOST_ACCESS.hostNetwork({ nodeName: MASTER }))).stderr.includes(`ValidatingAdmissionPolicy '${POD_SECURITY_POLICY}'`) || undefined, 30_000);
    });

    it("the user may only handle pods in their namespaces", async () => {
        const can = async (...args: string[]) => (await rc.c.run("kubectl", ["auth", "can-i", ...args, `--as=${USER}`], { allowFail: true })).stdout.trim();
        assert.equal(await can("create", "pods", "-n", PLAIN), "yes");
        assert.equal(await can("create", "pods", "-n", "kube-system"), "no");
        assert.equal(await can("patch", "namespaces"), "no");
    });

    it("Pod Security (the rendered admission config): a pod with host access is refused in a namespace nobody relaxed, on any node; a plain pod is admitted, warned about restricted", async () => {
        for (const [what, make] of Object.entries(HOST_ACCESS)) {
            const r = await create(PLAIN, make({ nodeName: WORKER }));
            assert.notEqual(r.code, 0, `${what}: refused`);
            assert.match(r.stderr, /violates PodSecurity "baseline:latest"/, what);
        }
        const plain = await create(PLAIN, { spec: { nodeName: WORKER } });
        assert.equal(plain.code, 0, plain.stderr);
        assert.match(plain.stderr, /would violate PodSecurity "restricted:latest"/, "warned: restricted");
        assert.ok(admission.file.includes("- 'kube-system'") && admission.file.includes("- 'kube-flannel'"), "the system namespaces are exempt");
    });

    for (const [route, { spec, message }] of Object.entries(ROUTES)) {
        it(`refused by the policy in a relaxed namespace: host access and ${route}`, async () => {
            for (const [what, make] of Object.entries(HOST_ACCESS)) {
                const r = await create(RELAXED, make(spec));
                assert.notEqual(r.code, 0, `${what} + ${route}: refused`);
                assert.match(r.stderr, new RegExp(`ValidatingAdmissionPolicy '${POD_SECURITY_POLICY}'`), what);
                assert.match(r.stderr, message, what);
            }
            // The same route without host access, and the same host access without a route onto a master: admitted.
            const plain = await create(RELAXED, { spec });
            assert.equal(plain.code, 0, `${route} alone: ${plain.stderr}`);
            const onWorker = await create(RELAXED, HOST_ACCESS.hostNetwork({ nodeName: WORKER }));
            assert.equal(onWorker.code, 0, `host network on a worker in a relaxed namespace: ${onWorker.stderr}`);
        });
    }

    it("a nodeSelector or affinity that keeps a pod off the masters is no route onto them", async () => {
        const away = await create(RELAXED, HOST_ACCESS.hostNetwork({ affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [{ matchExpressions: [{ key: CONTROL_PLANE_TAINT, operator: "DoesNotExist" }] }] } } } }));
        assert.equal(away.code, 0, away.stderr);
        const byName = await create(RELAXED, HOST_ACCESS.hostPID({ nodeSelector: { "kubernetes.io/hostname": MASTER } }));
        assert.notEqual(byName.code, 0, "a nodeSelector on a master's host name is a route");
    });

    it("a system namespace's pod with host access on a master is admitted (cluster admin), and so is one in podSecurity.exemptNamespaces", async () => {
        const system = await create("kube-system", { spec: { hostNetwork: true, nodeName: MASTER, tolerations: [{ operator: "Exists" }] } }, true);
        assert.equal(system.code, 0, system.stderr);
        const exempt = await create(EXEMPT, { spec: { hostNetwork: true, hostPID: true, tolerations: [{ operator: "Exists" }] } });
        assert.equal(exempt.code, 0, exempt.stderr);
    });
});
