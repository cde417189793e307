// World: Pulumi mocks (testing/mockRuntime.ts).
// ClusterAutoscaler: versions, refused releases, generic RBAC per minor, --nodes per pool, settings, credentials.
import { strict as assert } from "assert";
import { installMocks, valueOf, type Recorder } from "../testing/mockRuntime";
import * as pulumi from "@pulumi/pulumi";
import { parseAllDocuments } from "yaml";
import { ServiceAccount } from "kubernetes-models/v1";
import { ClusterRole, ClusterRoleBinding, Role, RoleBinding } from "kubernetes-models/rbac.authorization.k8s.io/v1";
import { Deployment } from "kubernetes-models/apps/v1";
import { toYaml, type KubeObject } from "../src/components/kube";
import {
    autoscalerObjects, autoscalerProblems, autoscalerVersionFor, refusedAutoscalerVersion, resolveClusterAutoscalerArgs,
    AUTOSCALER_LATEST_PATCH, type ClusterAutoscalerArgs,
} from "../src/components/clusterAutoscaler";

// kubernetes-models 4.5.1 schemas: Kubernetes 1.33-era fields (see test/podNetwork.test.ts).
const MODELS: Record<string, (o: never) => void> = {
    "v1/ServiceAccount": (o) => new ServiceAccount(o).validate(),
    "rbac.authorization.k8s.io/v1/ClusterRole": (o) => new ClusterRole(o).validate(),
    "rbac.authorization.k8s.io/v1/ClusterRoleBinding": (o) => new ClusterRoleBinding(o).validate(),
    "rbac.authorization.k8s.io/v1/Role": (o) => new Role(o).validate(),
    "rbac.authorization.k8s.io/v1/RoleBinding": (o) => new RoleBinding(o).validate(),
    "apps/v1/Deployment": (o) => new Deployment(o).validate(),
};

const base: ClusterAutoscalerArgs = {
    region: "cn-hangzhou",
    kubernetesVersion: "1.34.2",
    pools: [
        { name: "elastic", min: 0, max: 10, scalingGroupId: "asg-bp1elastic" },
        { name: "gpu", min: 1, max: 3, scalingGroupId: "asg-bp1gpu" },
        { name: "spot", min: 2, max: 20, scalingGroupId: "asg-bp1spot" },
    ],
};
const ids = (a: ClusterAutoscalerArgs) => a.pools.map((p) => p.scalingGroupId as string);
const build = (a: ClusterAutoscalerArgs = base): KubeObject[] => autoscalerObjects(resolveClusterAutoscalerArgs(a), ids(a));

type Rule = { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] };
type Container = { image: string; command: string[]; args: string[]; env: { name: string; value?: string; valueFrom?: unknown }[] };
type Spec = { containers: Container[]; nodeSelector: Record<string, string>; tolerations: { key?: string; operator: string; effect?: string }[]; serviceAccountName: string };
const get = (objs: KubeObject[], kind: string) => {
    const o = objs.find((x) => x.kind === kind);
    assert.ok(o, `${kind} missing`);
    return o;
};
const spec = (objs: KubeObject[]) => (get(objs, "Deployment") as unknown as { spec: { template: { spec: Spec } } }).spec.template.spec;
const container = (objs: KubeObject[]) => spec(objs).containers[0];
const rules = (objs: KubeObject[], kind: "ClusterRole" | "Role") => (get(objs, kind) as unknown as { rules: Rule[] }).rules;

/** RBAC semantics: does some rule grant `verb` on group/resource (for resourceName, when given)? */
function grants(rs: Rule[], group: string, resource: string, verb: string, resourceName?: string): boolean {
    return rs.some((r) => (r.apiGroups.includes(group) || r.apiGroups.includes("*")) &&
        (r.resources.includes(resource) || r.resources.includes("*")) &&
        (r.verbs.includes(verb) || r.verbs.includes("*")) &&
        (!r.resourceNames?.length || (resourceName !== undefined && r.resourceNames.includes(resourceName))));
}

// Upstream generic ClusterRole (aws/examples/cluster-autoscaler-autodiscover.yaml), docs/upstream.md#autoscaler-rbac, rule by rule.
const GENERIC_1_28_TO_1_32: Rule[] = [
    { apiGroups: [""], resources: ["events", "endpoints"], verbs: ["create", "patch"] },
    { apiGroups: [""], resources: ["pods/eviction"], verbs: ["create"] },
    { apiGroups: [""], resources: ["pods/status"], verbs: ["update"] },
    { apiGroups: [""], resources: ["endpoints"], resourceNames: ["cluster-autoscaler"], verbs: ["get", "update"] },
    { apiGroups: [""], resources: ["nodes"], verbs: ["watch", "list", "get", "update"] },
    { apiGroups: [""], resources: ["namespaces", "pods", "services", "replicationcontrollers", "persistentvolumeclaims", "persistentvolumes"], verbs: ["watch", "list", "get"] },
    { apiGroups: ["extensions"], resources: ["replicasets", "daemonsets"], verbs: ["watch", "list", "get"] },
    { apiGroups: ["policy"], resources: ["poddisruptionbudgets"], verbs: ["watch", "list"] },
    { apiGroups: ["apps"], resources: ["statefulsets", "replicasets", "daemonsets"], verbs: ["watch", "list", "get"] },
    { apiGroups: ["storage.k8s.io"], resources: ["storageclasses", "csinodes", "csidrivers", "csistoragecapacities"], verbs: ["watch", "list", "get"] },
    { apiGroups: ["batch", "extensions"], resources: ["jobs"], verbs: ["get", "list", "watch", "patch"] },
    { apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["create"] },
    { apiGroups: ["coordination.k8s.io"], resourceNames: ["cluster-autoscaler"], resources: ["leases"], verbs: ["get", "update"] },
];
const VOLUME_ATTACHMENTS: Rule = { apiGroups: ["storage.k8s.io"], resources: ["volumeattachments"], verbs: ["watch", "list", "get"] };
const DRA: Rule = { apiGroups: ["resource.k8s.io"], resources: ["deviceclasses", "resourceslices", "resourceclaims"], verbs: ["watch", "list", "get"] };

function assertCovers(rs: Rule[], expected: Rule[], label: string): void {
    for (const e of expected) {
        for (const g of e.apiGroups) for (const r of e.resources) for (const v of e.verbs) {
            for (const n of e.resourceNames ?? [undefined]) {
                assert.ok(grants(rs, g, r, v, n), `${label}: missing ${g || "core"}/${r}${n ? `/${n}` : ""} ${v}`);
            }
        }
    }
}

describe("ClusterAutoscaler versions", () => {
    it("follows the Kubernetes minor with the latest known patch", () => {
        assert.equal(autoscalerVersionFor("1.34.2"), "1.34.5");
        assert.equal(autoscalerVersionFor("v1.31.0"), "1.31.5");
        assert.equal(autoscalerVersionFor("1.33.1"), "1.33.6");
        assert.equal(autoscalerVersionFor("1.37.0"), undefined);
        assert.equal(autoscalerVersionFor("latest"), undefined);
        assert.equal(container(build()).args.includes("--cloud-provider=alicloud"), true);
        assert.equal(container(build()).image, "registry.k8s.io/autoscaling/cluster-autoscaler:v1.34.5");
        assert.equal(container(build({ ...base, kubernetesVersion: "1.31.4" })).image, "registry.k8s.io/autoscaling/cluster-autoscaler:v1.31.5");
    });

    it("refuses the releases broken on Alibaba Cloud (1.32.0–1.32.2, 1.33.0) and allows the fixed ones", () => {
        for (const v of ["1.32.0", "1.32.1", "1.32.2", "1.33.0", "v1.33.0"]) {
            assert.match(refusedAutoscalerVersion(v) ?? "", /8168/, `${v} must be refused`);
        }
        assert.match(refusedAutoscalerVersion("1.32.1")!, /use 1\.32\.3 or later \(latest 1\.32\.7\)/);
        for (const v of ["1.31.5", "1.32.3", "1.33.1", "1.34.0", "1.36.1"]) {
            assert.equal(refusedAutoscalerVersion(v), undefined, `${v} is fine`);
        }
        assert.match(refusedAutoscalerVersion("one.two")!, /not a cluster-autoscaler release/);
        for (const v of Object.values(AUTOSCALER_LATEST_PATCH)) {
            assert.equal(refusedAutoscalerVersion(v), undefined, `default ${v} must not be a refused release`);
        }
    });
});

describe("ClusterAutoscaler objects", () => {
    it("validate against the Kubernetes OpenAPI schemas for 1.31, 1.34, 1.36 and with an AccessKey opt-in", () => {
        const variants = [base, { ...base, version: "1.31.5" }, { ...base, version: "1.36.1" }, { ...base, accessKeySecretName: "ca-ak" }];
        for (const v of variants) {
            const objs = build(v);
            assert.deepEqual(objs.map((o) => o.kind), ["ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Deployment"]);
            for (const o of objs) {
                MODELS[`${o.apiVersion}/${o.kind}`](JSON.parse(JSON.stringify(o)) as never);
            }
        }
        const bad = JSON.parse(JSON.stringify(get(build(), "Deployment")));
        bad.spec.replicas = "1";
        assert.throws(() => MODELS["apps/v1/Deployment"](bad as never), /replicas must be integer/);
    });

    it("the ClusterRole covers the upstream generic rules of the target minor, rule by rule", () => {
        const r131 = rules(build({ ...base, version: "1.31.5" }), "ClusterRole");
        assertCovers(r131, GENERIC_1_28_TO_1_32, "1.31");
        assert.ok(!grants(r131, "storage.k8s.io", "volumeattachments", "list"), "1.31 generic RBAC has no volumeattachments");
        assert.ok(!grants(r131, "resource.k8s.io", "resourceslices", "list"));

        const r134 = rules(build(), "ClusterRole");
        assertCovers(r134, [...GENERIC_1_28_TO_1_32, VOLUME_ATTACHMENTS], "1.34");
        assert.ok(!grants(r134, "resource.k8s.io", "resourceslices", "list"), "DRA rules start at 1.36");

        assertCovers(rules(build({ ...base, version: "1.36.1" }), "ClusterRole"), [...GENERIC_1_28_TO_1_32, VOLUME_ATTACHMENTS, DRA], "1.36");
        // the boundaries: volumeattachments from 1.33.0, DRA from 1.36.0
        const at = (version: string) => rules(build({ ...base, version }), "ClusterRole");
        assert.ok(!grants(at("1.32.7"), "storage.k8s.io", "volumeattachments", "get"));
        assert.ok(grants(at("1.33.1"), "storage.k8s.io", "volumeattachments", "get"));
        assert.ok(!grants(at("1.35.2"), "resource.k8s.io", "deviceclasses", "get"));
        assert.ok(grants(at("1.36.0"), "resource.k8s.io", "deviceclasses", "get"));
        // leader election (leases in kube-system) is what the alicloud standard example forgets
        assert.ok(grants(r134, "coordination.k8s.io", "leases", "update", "cluster-autoscaler"));
        assert.ok(!grants(r134, "coordination.k8s.io", "leases", "update", "someone-else"), "lease updates stay scoped to its own lease");
    });

    it("Role and bindings: status/priority-expander ConfigMaps, bound to the kube-system ServiceAccount", () => {
        const objs = build();
        const role = rules(objs, "Role");
        assertCovers(role, [
            { apiGroups: [""], resources: ["configmaps"], verbs: ["create", "list", "watch"] },
            { apiGroups: [""], resources: ["configmaps"], resourceNames: ["cluster-autoscaler-status", "cluster-autoscaler-priority-expander"], verbs: ["delete", "get", "update", "watch"] },
        ], "Role");
        assert.equal(get(objs, "Role").metadata.namespace, "kube-system");
        for (const kind of ["ClusterRoleBinding", "RoleBinding"]) {
            const b = get(objs, kind) as unknown as { roleRef: { kind: string; name: string }; subjects: { name: string; namespace: string }[] };
            assert.equal(b.roleRef.name, "cluster-autoscaler");
            assert.deepEqual(b.subjects.map((s) => `${s.namespace}/${s.name}`), ["kube-system/cluster-autoscaler"]);
        }
        assert.equal(spec(objs).serviceAccountName, "cluster-autoscaler");
    });

    it("each autoscaled pool appears exactly once in --nodes with its ESS group id", () => {
        const args = container(build()).args;
        const nodes = args.filter((a) => a.startsWith("--nodes="));
        assert.deepEqual(nodes, ["--nodes=0:10:asg-bp1elastic", "--nodes=1:3:asg-bp1gpu", "--nodes=2:20:asg-bp1spot"]);
        for (const p of base.pools) {
            assert.equal(nodes.filter((n) => n.endsWith(`:${p.scalingGroupId}`)).length, 1);
        }
        assert.throws(() => autoscalerObjects(resolveClusterAutoscalerArgs(base), ["asg-only-one"]), /3 pools but 1 scaling group ids/);
    });

    it("scale-down settings become flags: defaults, then overrides (reservation-rate threshold)", () => {
        const defaults = container(build()).args;
        for (const f of ["--scale-down-utilization-threshold=0.5", "--scale-down-unneeded-time=10m", "--scale-down-delay-after-add=10m",
            "--expander=least-waste", "--balance-similar-node-groups=false", "--skip-nodes-with-local-storage=true"]) {
            assert.equal(defaults.filter((a) => a === f).length, 1, `default ${f}`);
        }
        const custom = container(build({ ...base, settings: { scaleDownUtilizationThreshold: 0.65, scaleDownUnneededTime: "1h30m",
            scaleDownDelayAfterAdd: "5m", expander: "priority,least-waste", balanceSimilarNodeGroups: true, skipNodesWithLocalStorage: false } })).args;
        for (const f of ["--scale-down-utilization-threshold=0.65", "--scale-down-unneeded-time=1h30m", "--scale-down-delay-after-add=5m",
            "--expander=priority,least-waste", "--balance-similar-node-groups=true", "--skip-nodes-with-local-storage=false"]) {
            assert.equal(custom.filter((a) => a === f).length, 1, `custom ${f}`);
        }
        assert.equal(custom.filter((a) => a.startsWith("--scale-down-utilization-threshold=")).length, 1);
    });

    it("runs on control-plane nodes with REGION_ID and the RAM role; an AccessKey only when opted in, from an existing Secret", () => {
        const objs = build();
        assert.deepEqual(spec(objs).nodeSelector, { "node-role.kubernetes.io/control-plane": "" });
        assert.ok(spec(objs).tolerations.some((t) => t.key === "node-role.kubernetes.io/control-plane" && t.operator === "Exists" && t.effect === "NoSchedule"));
        assert.deepEqual(container(objs).env, [{ name: "REGION_ID", value: "cn-hangzhou" }]);
        assert.ok(!/ACCESS_KEY|accessKey/i.test(JSON.stringify(objs)));

        const optIn = build({ ...base, accessKeySecretName: "ca-ak" });
        assert.ok(!optIn.some((o) => o.kind === "Secret"), "never creates a Secret");
        assert.deepEqual(container(optIn).env, [
            { name: "REGION_ID", value: "cn-hangzhou" },
            { name: "ACCESS_KEY_ID", valueFrom: { secretKeyRef: { name: "ca-ak", key: "access-key-id" } } },
            { name: "ACCESS_KEY_SECRET", valueFrom: { secretKeyRef: { name: "ca-ak", key: "access-key-secret" } } },
        ]);
    });

    it("image repository and version overrides", () => {
        const c = container(build({ ...base, version: "1.33.6", imageRepository: "registry.example/ca" }));
        assert.equal(c.image, "registry.example/ca:v1.33.6");
        assert.deepEqual(c.command, ["./cluster-autoscaler"]);
    });
});

describe("ClusterAutoscaler validation", () => {
    const paths = (a: ClusterAutoscalerArgs) => autoscalerProblems(a).map((p) => p.path);

    it("min > max, negative min, duplicate pool names → property-path errors", () => {
        const problems = autoscalerProblems({ ...base, pools: [
            { name: "a", min: 5, max: 2, scalingGroupId: "asg-a" },
            { name: "b", min: -1, max: 2, scalingGroupId: "asg-b" },
            { name: "a", min: 0, max: 1, scalingGroupId: "asg-c" },
        ] });
        assert.deepEqual(problems.map((p) => p.path), ["pools.0.max", "pools.1.min", "pools.2.name"]);
        assert.match(problems[0].reason, /must be an integer >= min \(5\), got 2/);
    });

    it("a refused or unknown autoscaler version → property-path errors", () => {
        assert.deepEqual(paths({ ...base, version: "1.32.1" }), ["version"]);
        assert.deepEqual(paths({ ...base, version: "1.33.0" }), ["version"]);
        assert.deepEqual(paths({ ...base, kubernetesVersion: "1.40.0" }), ["version"], "no known release of that minor: the fix is an explicit version");
        assert.deepEqual(paths({ ...base, kubernetesVersion: "1.40.0", version: "1.36.1" }), [], "explicit version wins");
    });

    it("settings, empty pools and Secret names are checked; all problems at once, via InputPropertiesError", () => {
        assert.deepEqual(paths({ ...base, pools: [] }), ["pools"]);
        assert.deepEqual(paths({ ...base, settings: { scaleDownUtilizationThreshold: 0 } }), ["settings.scaleDownUtilizationThreshold"]);
        assert.deepEqual(paths({ ...base, settings: { expander: "price" } }), ["settings.expander"]);
        assert.deepEqual(paths({ ...base, settings: { scaleDownUnneededTime: "ten minutes" } }), ["settings.scaleDownUnneededTime"]);
        assert.deepEqual(paths({ ...base, accessKeySecretName: "AK!" }), ["accessKeySecretName"]);
        assert.throws(() => resolveClusterAutoscalerArgs({ ...base, version: "1.32.0", pools: [{ name: "x", min: 3, max: 1, scalingGroupId: "asg-x" }] }),
            (e: unknown) => pulumi.InputPropertiesError.isInstance(e) && e.errors.map((x) => x.propertyPath).join() === "pools.0.max,version" && /- pools.0.max: must be an integer/.test(e.message));
        assert.deepEqual(paths(base), []);
    });
});

describe("ClusterAutoscaler under Pulumi mocks", () => {
    let recorder: Recorder;
    before(() => {
        recorder = installMocks({ stack: "test" });
    });
    /** What the mocks saw, with inputs as registered (secrets revealed). */
    const registered = () => recorder.resources.map((r) => ({ type: r.type, name: r.name, provider: r.provider, inputs: r.rawInputs as Record<string, any> }));

    it("registers typed resources with provider and parent; ESS group ids known only at deploy time reach --nodes", async () => {
        const k8s = await import("@pulumi/kubernetes");
        const { ClusterAutoscaler } = await import("../src/components/clusterAutoscaler");
        const provider = new k8s.Provider("k8s", { kubeconfig: "redacted" });
        const ca = new ClusterAutoscaler("mockca", { ...base, pools: [
            { name: "elastic", min: 0, max: 10, scalingGroupId: pulumi.output("asg-from-ess-1") },
            { name: "gpu", min: 1, max: 3, scalingGroupId: Promise.resolve("asg-from-ess-2") },
        ] }, { provider });
        const urns = await Promise.all(ca.resources.map((r) => valueOf(r.urn)));
        const manifests = await valueOf(ca.manifests);
        const providerUrn = await valueOf(provider.urn);

        const k8sRegs = registered().filter((r) => r.name.startsWith("mockca-"));
        assert.deepEqual(k8sRegs.map((r) => r.type).sort(), [
            "kubernetes:apps/v1:Deployment", "kubernetes:core/v1:ServiceAccount",
            "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole", "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding",
            "kubernetes:rbac.authorization.k8s.io/v1:Role", "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding",
        ]);
        assert.ok(k8sRegs.every((r) => r.provider?.startsWith(`${providerUrn}::`)));
        assert.ok(urns.every((u) => u.includes("::alicloud-kubeadm:index:ClusterAutoscaler$kubernetes:")));
        const deployment = k8sRegs.find((r) => r.type === "kubernetes:apps/v1:Deployment")!;
        const args: string[] = deployment.inputs.spec.template.spec.containers[0].args;
        assert.deepEqual(args.filter((a) => a.startsWith("--nodes=")), ["--nodes=0:10:asg-from-ess-1", "--nodes=1:3:asg-from-ess-2"]);
        assert.equal(ca.version, "1.34.5");

        const docs = parseAllDocuments(toYaml(manifests)).map((d) => d.toJSON());
        assert.equal(docs.length, 6);
        assert.deepEqual(container(docs as KubeObject[]).args.filter((a) => a.startsWith("--nodes=")), ["--nodes=0:10:asg-from-ess-1", "--nodes=1:3:asg-from-ess-2"]);
    });
});
