// World: Pulumi mocks (testing/mockRuntime.ts).
// PodNetwork (flannel alloc + Alibaba CCM routes) and the kube.ts helpers it is built on.
import { strict as assert } from "assert";
import { installMocks, valueOf, type Recorder } from "../testing/mockRuntime";
import * as fc from "fast-check";
import * as pulumi from "@pulumi/pulumi";
import { parseAllDocuments } from "yaml";
import { Namespace, ServiceAccount, ConfigMap, Secret } from "kubernetes-models/v1";
import { ClusterRole, ClusterRoleBinding, Role, RoleBinding } from "kubernetes-models/rbac.authorization.k8s.io/v1";
import { DaemonSet, Deployment } from "kubernetes-models/apps/v1";
import { formatCidr, maskOf } from "../src/rules/cidr";
import { reservedRangeOf } from "../src/rules/network";
import { applyDependencies, applyObjects, canonicalOrder, manifestFiles, resourceName, toYaml, type KubeObject } from "../src/components/kube";
import {
    ccmObjects, flannelInstallCniCommand, flannelObjects, podNetworkProblems, resolvePodNetworkArgs,
    DEFAULT_CCM_IMAGE, DEFAULT_FLANNEL_CNI_PLUGIN_IMAGE, DEFAULT_FLANNEL_IMAGE, type PodNetworkArgs,
} from "../src/components/podNetwork";

// kubernetes-models 4.5.1: its README badge says 1.27.1, but its schemas carry Kubernetes 1.33 fields
// (Lifecycle.stopSignal, ContainerStatus.stopSignal) and none of 1.34 (PodSpec.hostnameOverride).
// Its schemas accept unknown fields; those are caught at compile time by kubeObject<T>() instead.
const MODELS: Record<string, (o: never) => void> = {
    "v1/Namespace": (o) => new Namespace(o).validate(),
    "v1/ServiceAccount": (o) => new ServiceAccount(o).validate(),
    "v1/ConfigMap": (o) => new ConfigMap(o).validate(),
    "v1/Secret": (o) => new Secret(o).validate(),
    "rbac.authorization.k8s.io/v1/ClusterRole": (o) => new ClusterRole(o).validate(),
    "rbac.authorization.k8s.io/v1/ClusterRoleBinding": (o) => new ClusterRoleBinding(o).validate(),
    "rbac.authorization.k8s.io/v1/Role": (o) => new Role(o).validate(),
    "rbac.authorization.k8s.io/v1/RoleBinding": (o) => new RoleBinding(o).validate(),
    "apps/v1/DaemonSet": (o) => new DaemonSet(o).validate(),
    "apps/v1/Deployment": (o) => new Deployment(o).validate(),
};
function validateSchema(obj: KubeObject): void {
    const validate = MODELS[`${obj.apiVersion}/${obj.kind}`];
    assert.ok(validate, `no schema for ${obj.apiVersion} ${obj.kind}`);
    validate(JSON.parse(JSON.stringify(obj)) as never);
}

const base: PodNetworkArgs = { podCidr: "172.16.0.0/16", routeTableId: "vtb-bp1route", region: "cn-hangzhou", kubernetesVersion: "1.34.2" };
const all = (a: PodNetworkArgs = base): KubeObject[] => {
    const r = resolvePodNetworkArgs(a);
    return [...flannelObjects(r), ...ccmObjects(r, a.routeTableId as string)];
};
const find = (objs: KubeObject[], kind: string, name: string): KubeObject => {
    const o = objs.find((x) => x.kind === kind && x.metadata.name === name);
    assert.ok(o, `${kind} ${name} missing`);
    return o;
};
type Container = { name: string; image: string; command?: string[]; args?: string[]; env?: { name: string; value?: string; valueFrom?: unknown }[] };
type PodSpec = { containers: Container[]; initContainers?: Container[]; nodeSelector?: Record<string, string>; tolerations?: Toleration[]; volumes?: unknown[] };
type Toleration = { key?: string; operator?: string; value?: string; effect?: string };
const podSpec = (o: KubeObject): PodSpec => (o as unknown as { spec: { template: { spec: PodSpec } } }).spec.template.spec;
const flannelDs = (objs: KubeObject[]) => podSpec(find(objs, "DaemonSet", "kube-flannel-ds"));
const ccmDs = (objs: KubeObject[]) => podSpec(find(objs, "DaemonSet", "cloud-controller-manager"));
const netConf = (objs: KubeObject[]) =>
    JSON.parse((find(objs, "ConfigMap", "kube-flannel-cfg") as unknown as { data: Record<string, string> }).data["net-conf.json"]);
const clusterCidrArg = (objs: KubeObject[]) => ccmDs(objs).containers[0].args!.filter((a) => a.startsWith("--cluster-cidr="));

/** Kubernetes taint toleration semantics (empty key + Exists matches all keys; empty effect matches all effects). */
function tolerates(ts: Toleration[] | undefined, taint: { key: string; value?: string; effect: string }): boolean {
    return (ts ?? []).some((t) => (t.effect === undefined || t.effect === taint.effect) &&
        (t.operator === "Exists" ? (t.key === undefined || t.key === taint.key) : t.key === taint.key && (t.value ?? "") === (taint.value ?? "")));
}
const UNINITIALIZED = { key: "node.cloudprovider.kubernetes.io/uninitialized", value: "true", effect: "NoSchedule" };
const CONTROL_PLANE_TAINT = { key: "node-role.kubernetes.io/control-plane", effect: "NoSchedule" };

describe("PodNetwork objects", () => {
    it("validate against the Kubernetes OpenAPI schemas (default, AccessKey opt-in, old flannel image)", () => {
        const variants: PodNetworkArgs[] = [base, { ...base, ccmAccessKeySecretName: "ccm-ak" }, { ...base, images: { flannel: "my.registry/flannel:v0.26.0" } }];
        let count = 0;
        for (const v of variants) {
            for (const o of all(v)) {
                validateSchema(o);
                count++;
            }
        }
        assert.equal(count, 39);
    });

    it("the schema check is not a no-op: a malformed DaemonSet is rejected", () => {
        const ds = JSON.parse(JSON.stringify(find(all(), "DaemonSet", "kube-flannel-ds")));
        ds.spec.template.spec.containers[0].args = "--ip-masq";
        assert.throws(() => validateSchema(ds), /args must be array/);
        delete ds.spec.template.spec.containers[0].args;
        ds.spec.template.spec.tolerations = [{ operator: "Exist" }];
        assert.throws(() => validateSchema(ds), /operator/);
    });

    it("one podCidr everywhere: flannel Network and CCM --cluster-cidr follow it, nothing else carries a pod CIDR", () => {
        const cidr = fc.tuple(fc.integer({ min: 0, max: 0xffffffff }), fc.integer({ min: 8, max: 24 }))
            .map(([n, prefix]) => ({ base: (n & maskOf(prefix)) >>> 0, prefix }))
            .filter((c) => reservedRangeOf(c) === undefined) // refused: no VPC route may point there
            .map(formatCidr);
        fc.assert(fc.property(cidr, (podCidr) => {
            const objs = all({ ...base, podCidr });
            assert.equal(netConf(objs).Network, podCidr);
            assert.deepEqual(clusterCidrArg(objs), [`--cluster-cidr=${podCidr}`]);
            const text = JSON.stringify(objs);
            const cidrs = new Set(text.match(/\d+\.\d+\.\d+\.\d+\/\d+/g));
            assert.deepEqual([...cidrs], [podCidr]);
        }), { numRuns: 40 });
        // and a plain before/after change
        const before = all();
        const after = all({ ...base, podCidr: "10.244.0.0/16" });
        assert.equal(netConf(before).Network, "172.16.0.0/16");
        assert.equal(netConf(after).Network, "10.244.0.0/16");
        assert.deepEqual(clusterCidrArg(after), ["--cluster-cidr=10.244.0.0/16"]);
        assert.ok(!JSON.stringify(after).includes("172.16.0.0"));
    });

    it("flannel: backend alloc, --ip-masq --kube-subnet-mgr --set-node-network-unavailable=false, CNI plugin init container", () => {
        const objs = all();
        assert.deepEqual(netConf(objs).Backend, { Type: "alloc" });
        const cm = (find(objs, "ConfigMap", "kube-flannel-cfg") as unknown as { data: Record<string, string> }).data;
        const cni = JSON.parse(cm["cni-conf.json"]);
        assert.deepEqual(cni.plugins.map((p: { type: string }) => p.type), ["flannel", "portmap"]);
        const spec = flannelDs(objs);
        const flanneld = spec.containers[0];
        assert.equal(flanneld.image, DEFAULT_FLANNEL_IMAGE);
        for (const flag of ["--ip-masq", "--kube-subnet-mgr", "--set-node-network-unavailable=false"]) {
            assert.ok(flanneld.args!.includes(flag), `flanneld lacks ${flag}`);
        }
        const plugin = spec.initContainers!.find((c) => c.name === "install-cni-plugin")!;
        assert.equal(plugin.image, DEFAULT_FLANNEL_CNI_PLUGIN_IMAGE);
        assert.deepEqual([...plugin.command!, ...plugin.args!], ["cp", "-f", "/flannel", "/opt/cni/bin/flannel"]);
        const conf = spec.initContainers!.find((c) => c.name === "install-cni")!;
        assert.deepEqual(conf.command, ["/opt/bin/install-conf", "/etc/kube-flannel/cni-conf.json", "/etc/cni/net.d/10-flannel.conflist"]);
        assert.ok(tolerates(spec.tolerations, UNINITIALIZED), "flannel must run on nodes the CCM has not initialised yet");
        assert.equal(find(objs, "Namespace", "kube-flannel").metadata.labels!["pod-security.kubernetes.io/enforce"], "privileged");
    });

    it("flannel install-cni command follows the image version (install-conf from v0.28.9, cp before)", () => {
        assert.equal(flannelInstallCniCommand("ghcr.io/flannel-io/flannel:v0.28.9")[0], "/opt/bin/install-conf");
        assert.equal(flannelInstallCniCommand("ghcr.io/flannel-io/flannel:v0.29.0")[0], "/opt/bin/install-conf");
        assert.equal(flannelInstallCniCommand("ghcr.io/flannel-io/flannel:v0.28.0")[0], "cp");
        assert.equal(flannelInstallCniCommand("docker.io/flannel/flannel:v0.25.1")[0], "cp");
        assert.equal(flannelInstallCniCommand("mirror/flannel@sha256:abc")[0], "/opt/bin/install-conf");
    });

    it("CCM: cloud-config pins the route table; node+route controllers with cloud routes and a reconciliation period", () => {
        const objs = all({ ...base, routeReconciliationPeriod: "2m" });
        const cm = (find(objs, "ConfigMap", "cloud-config") as unknown as { metadata: { namespace: string }; data: Record<string, string> });
        assert.equal(cm.metadata.namespace, "kube-system");
        assert.deepEqual(JSON.parse(cm.data["cloud-config.conf"]), { Global: { routeTableIDs: "vtb-bp1route" } });
        const spec = ccmDs(objs);
        const c = spec.containers[0];
        assert.equal(c.image, DEFAULT_CCM_IMAGE);
        for (const flag of ["--cloud-config=/etc/kubernetes/config/cloud-config.conf", "--configure-cloud-routes=true",
            "--cluster-cidr=172.16.0.0/16", "--controllers=node,route", "--route-reconciliation-period=2m"]) {
            assert.equal(c.args!.filter((a) => a === flag).length, 1, `CCM needs exactly one ${flag}`);
        }
        assert.deepEqual(spec.nodeSelector, { "node-role.kubernetes.io/control-plane": "" });
        assert.ok(tolerates(spec.tolerations, UNINITIALIZED), "CCM must tolerate the taint it removes");
        assert.ok(tolerates(spec.tolerations, CONTROL_PLANE_TAINT));
        assert.ok(ccmDs(all()).containers[0].args!.includes("--route-reconciliation-period=3m"), "default period 3m");
    });

    it("CCM: only what the node and route controllers of v2.14.0 call (no Secrets, nothing beyond Nodes, events and its lease), no pprof listener", () => {
        const objs = all();
        type Rule = { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] };
        const role = find(objs, "ClusterRole", "system:cloud-controller-manager") as unknown as { rules: Rule[] };
        const grants = (rules: Rule[]) => rules.flatMap((r) => r.apiGroups.flatMap((g) => r.resources.flatMap((res) => r.verbs.map((v) =>
            `${g}/${res} ${v}${r.resourceNames ? ` [${r.resourceNames.join(",")}]` : ""}`)))).sort();
        // docs/upstream.md#ccm-rbac: node controller (get/list/watch/patch/delete nodes, patch status), route controller
        // (patch nodes/status NetworkUnavailable), event recorders.
        assert.deepEqual(grants(role.rules), [
            "/events create", "/events patch", "/events update",
            "/nodes delete", "/nodes get", "/nodes list", "/nodes patch", "/nodes watch",
            "/nodes/status patch",
        ]);
        assert.ok(!JSON.stringify(role.rules).includes("secrets"), "no Secrets permission at all");
        const lease = find(objs, "Role", "cloud-controller-manager") as unknown as { metadata: { namespace: string }; rules: Rule[] };
        assert.equal(lease.metadata.namespace, "kube-system");
        assert.deepEqual(grants(lease.rules), ["coordination.k8s.io/leases create", "coordination.k8s.io/leases get [ccm]", "coordination.k8s.io/leases update [ccm]"]);
        const leaseBinding = find(objs, "RoleBinding", "cloud-controller-manager") as unknown as { roleRef: { kind: string; name: string }; subjects: { name: string; namespace: string }[] };
        assert.deepEqual([leaseBinding.roleRef.kind, leaseBinding.roleRef.name], ["Role", "cloud-controller-manager"]);
        assert.deepEqual(leaseBinding.subjects.map((x) => `${x.namespace}/${x.name}`), ["kube-system/cloud-controller-manager"]);
        const args = ccmDs(objs).containers[0].args as string[];
        assert.ok(args.includes("--pprof-bind-addr=0"), "pprof off (docs/upstream.md#pitfall-ccm-pprof)");
        assert.ok(args.includes("--controllers=node,route"));
        const binding = find(objs, "ClusterRoleBinding", "system:cloud-controller-manager") as unknown as { roleRef: { name: string }; subjects: { name: string; namespace: string }[] };
        assert.equal(binding.roleRef.name, "system:cloud-controller-manager");
        assert.deepEqual(binding.subjects.map((s) => `${s.namespace}/${s.name}`), ["kube-system/cloud-controller-manager"]);
        assert.equal((ccmDs(objs) as PodSpec & { serviceAccountName: string }).serviceAccountName, "cloud-controller-manager");
    });

    it("no AccessKey by default (RAM role); opting in reads an existing Secret, never creates one", () => {
        const text = JSON.stringify(all());
        assert.ok(!/ACCESS_KEY|accessKey/i.test(text), "no AccessKey anywhere by default");
        const objs = all({ ...base, ccmAccessKeySecretName: "ccm-ak" });
        assert.ok(!objs.some((o) => o.kind === "Secret"));
        const env = ccmDs(objs).containers[0].env!;
        assert.deepEqual(env.map((e) => e.name), ["ACCESS_KEY_ID", "ACCESS_KEY_SECRET"]);
        assert.deepEqual(env.map((e) => e.valueFrom), [
            { secretKeyRef: { name: "ccm-ak", key: "access-key-id" } }, { secretKeyRef: { name: "ccm-ak", key: "access-key-secret" } }]);
        assert.ok(!env.some((e) => e.value !== undefined), "AccessKey values never inline");
        assert.ok(!(flannelDs(objs).containers[0].env ?? []).some((e) => e.name.startsWith("ACCESS_KEY")), "flannel alloc needs no cloud credentials");
    });

    it("image overrides reach the containers", () => {
        const objs = all({ ...base, images: { flannel: "m/flannel:v0.28.9", flannelCniPlugin: "m/cni:v1", ccm: "m/ccm:v2.14.0" } });
        assert.equal(flannelDs(objs).containers[0].image, "m/flannel:v0.28.9");
        assert.deepEqual(flannelDs(objs).initContainers!.map((c) => c.image), ["m/cni:v1", "m/flannel:v0.28.9"]);
        assert.equal(ccmDs(objs).containers[0].image, "m/ccm:v2.14.0");
    });

    it("invalid arguments: every problem with its property path", () => {
        const problems = podNetworkProblems({ ...base, podCidr: "172.16.0.1/16", kubernetesVersion: "1.22.0", routeReconciliationPeriod: "30s", ccmAccessKeySecretName: "Bad_Name" });
        assert.deepEqual(problems.map((p) => p.path), ["podCidr", "kubernetesVersion", "routeReconciliationPeriod", "ccmAccessKeySecretName"]);
        assert.match(problems[0].reason, /host bits/);
        assert.throws(() => resolvePodNetworkArgs({ ...base, podCidr: "nope" }), (e: unknown) =>
            pulumi.InputPropertiesError.isInstance(e) && e.errors.length === 1 && e.errors[0].propertyPath === "podCidr");
        assert.deepEqual(podNetworkProblems(base), []);
    });
});

describe("kube helpers", () => {
    it("toYaml writes one document per object that parses back to the same objects", () => {
        const objs = all();
        const text = toYaml(objs);
        const docs = parseAllDocuments(text).map((d) => d.toJSON());
        assert.deepEqual(docs, JSON.parse(JSON.stringify(objs)));
        assert.equal(text.split(/^---$/m).length, objs.length);
        assert.ok(!/(^|\s)[&*]a\d+\b/m.test(text), "shared label objects must not become YAML anchors/aliases");
    });

    it("resource names are deterministic, unique and URN-safe", () => {
        const names = all().map((o) => resourceName("pn", o));
        assert.equal(new Set(names).size, names.length);
        assert.ok(names.includes("pn-clusterrole-cluster-system-cloud-controller-manager"));
        assert.ok(names.includes("pn-daemonset-kube-flannel-kube-flannel-ds"));
        assert.ok(names.every((n) => /^[a-z0-9.-]+$/.test(n)));
    });

    it("apply dependencies: namespaced objects wait for their Namespace, workloads for identity, RBAC and config", () => {
        const objs = all();
        const deps = applyDependencies(objs);
        const label = (i: number) => `${objs[i].kind}/${objs[i].metadata.name}`;
        const of = (kind: string, name: string) => deps[objs.findIndex((o) => o.kind === kind && o.metadata.name === name)].map(label).sort();
        assert.deepEqual(of("Namespace", "kube-flannel"), []);
        assert.deepEqual(of("ServiceAccount", "flannel"), ["Namespace/kube-flannel"]);
        assert.deepEqual(of("ConfigMap", "kube-flannel-cfg"), ["Namespace/kube-flannel"]);
        assert.deepEqual(of("ClusterRole", "flannel"), []);
        assert.deepEqual(of("ConfigMap", "cloud-config"), [], "kube-system is not created here");
        const ds = of("DaemonSet", "kube-flannel-ds");
        for (const needed of ["Namespace/kube-flannel", "ServiceAccount/flannel", "ClusterRole/flannel", "ClusterRoleBinding/flannel", "ConfigMap/kube-flannel-cfg"]) {
            assert.ok(ds.includes(needed), `flannel DaemonSet waits for ${needed}`);
        }
        assert.ok(of("DaemonSet", "cloud-controller-manager").includes("ConfigMap/cloud-config"));
        assert.ok(!ds.some((d) => d.startsWith("DaemonSet/")), "workloads never wait for each other");
    });

    it("applyObjects refuses unknown kinds and name collisions before creating anything", () => {
        const svc: KubeObject = { apiVersion: "v1", kind: "Service", metadata: { name: "x", namespace: "y" } };
        assert.throws(() => applyObjects("p", [svc], {}), /v1 Service "x" is not supported/);
        const sa: KubeObject = { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "a:b", namespace: "n" } };
        const sa2: KubeObject = { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "a-b", namespace: "n" } };
        assert.throws(() => applyObjects("p", [sa, sa2], {}), /same resource name|two objects/);
    });
});

describe("PodNetwork under Pulumi mocks", () => {
    let recorder: Recorder;
    before(() => {
        recorder = installMocks({ stack: "test" });
    });
    /** What the mocks saw, with inputs as registered (secrets revealed). */
    const registered = () => recorder.resources.map((r) => ({ type: r.type, name: r.name, provider: r.provider, inputs: r.rawInputs as Record<string, any> }));

    it("registers typed kubernetes resources with the provider and the component as parent", async () => {
        const k8s = await import("@pulumi/kubernetes");
        const { PodNetwork } = await import("../src/components/podNetwork");
        const provider = new k8s.Provider("k8s", { kubeconfig: "redacted" });
        const sa: KubeObject = { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "ok", namespace: "n" } };
        const svc: KubeObject = { apiVersion: "v1", kind: "Service", metadata: { name: "x", namespace: "n" } };
        assert.throws(() => applyObjects("mockbad", [sa, svc], { provider }), /v1 Service "x" is not supported/);
        const pn = new PodNetwork("mockpn", { ...base, routeTableId: pulumi.output("vtb-from-network") }, { provider });
        const urns = await Promise.all(pn.resources.map((r) => valueOf(r.urn)));
        const manifests = await valueOf(pn.manifests);
        const providerUrn = await valueOf(provider.urn);

        assert.ok(!registered().some((r) => r.name.startsWith("mockbad-")), "a refused batch creates nothing, not even its valid objects");
        const mine = registered().filter((r) => r.name.startsWith("mockpn-"));
        const types = mine.map((r) => r.type).sort();
        assert.deepEqual(types, [
            "kubernetes:apps/v1:DaemonSet", "kubernetes:apps/v1:DaemonSet",
            "kubernetes:core/v1:ConfigMap", "kubernetes:core/v1:ConfigMap",
            "kubernetes:core/v1:Namespace",
            "kubernetes:core/v1:ServiceAccount", "kubernetes:core/v1:ServiceAccount",
            "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole", "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole",
            "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding", "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding",
            "kubernetes:rbac.authorization.k8s.io/v1:Role", "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding",
        ]);
        for (const r of mine) {
            assert.ok(r.provider?.startsWith(`${providerUrn}::`), `${r.name} uses the kubernetes provider`);
        }
        for (const urn of urns) {
            assert.match(urn, /::alicloud-kubeadm:index:PodNetwork\$kubernetes:/, `${urn} is parented to the PodNetwork`);
        }
        const ccmConfig = mine.find((r) => r.type === "kubernetes:core/v1:ConfigMap" && r.inputs.metadata.name === "cloud-config")!;
        assert.equal(JSON.parse(ccmConfig.inputs.data["cloud-config.conf"]).Global.routeTableIDs, "vtb-from-network");
        assert.equal(manifests.length, 13);
        assert.ok(toYaml(manifests).includes("vtb-from-network"));

        // the synth's route (recorded inputs grouped by parent) gives the same objects as `manifests`
        const files = manifestFiles([{ type: "pulumi:providers:kubernetes", name: "k8s", inputs: {} },
            ...mine.map((r) => ({ type: r.type, name: r.name, parent: "mockpn", inputs: r.inputs }))]);
        assert.deepEqual(Object.keys(files), ["mockpn.yaml"]);
        const docs: KubeObject[] = parseAllDocuments(files["mockpn.yaml"]).map((d) => d.toJSON());
        assert.deepEqual(docs, JSON.parse(JSON.stringify(canonicalOrder(manifests))));
        assert.deepEqual(docs.map((d) => d.kind).slice(0, 3), ["Namespace", "ServiceAccount", "ServiceAccount"], "namespace first");
    });
});
