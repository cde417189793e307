// World: a real control plane built from source at two Kubernetes versions (test/kube: etcd 3.6.8; kube-apiserver,
// kube-controller-manager and kube-scheduler of the previous minor, then of this one; kubeadm and kubectl of this one;
// KWOK for nodes and their pods).
/**
 * What `kubeadm upgrade apply` relies on when it swaps a master's control plane for the next minor's: the etcd the old
 * API server wrote is served by the new one. The fixture's control plane starts at the previous minor
 * (test/kube/go/kubernetes-previous, `npm run kube:build`), rendered by kubeadm for that version, Secrets sealed with
 * secretbox as the project's masters seal them; objects of every storage path the project's clusters use are written
 * through it (core objects, a Deployment whose ReplicaSet and pods its controllers made, a Service's allocated cluster
 * IP, a CRD and its custom resource, a ValidatingAdmissionPolicy, a ServiceAccount token). Then, in kubeadm's order,
 * the API server, controller-manager and scheduler are replaced by this version's with the same commands, on the same
 * etcd. Asserts from state: every object reads back through the new API server with nothing lost or changed (the
 * same resourceVersion: nothing was rewritten), the Secret still sealed in etcd, the old server's token accepted, the
 * old policy enforced, the old allocation held, and no rollout of the old Deployment by the new controllers.
 *
 * Needs `npm run kube:build` (skipped with one line without it; CI=true fails instead).
 */
import * as assert from "node:assert/strict";
import * as crypto from "crypto";
import { KUBERNETES_VERSION, previousKubernetes, type Cluster } from "./kube/cluster";
import { useRealCluster } from "./kube/fixture";
import { encryptionConfig, etcdctl } from "./kube/restore";

const NS = "upgrade";
const NODE = "cn-hangzhou.i-worker0";
const CRD_GROUP = "upgrade.alicloud-kubeadm.test";

/** Objects no controller writes: they must come back whole, with the resourceVersion the old server gave them. */
const UNTOUCHED = [
    ["namespace", "", NS], ["secret", NS, "db"], ["configmap", NS, "app"], ["serviceaccount", NS, "app"],
    ["role", NS, "reader"], ["rolebinding", NS, "reader"], ["service", NS, "web"], [`widgets.${CRD_GROUP}`, NS, "w1"],
] as const;
/** Objects whose status controllers of the new version may write: their identity and spec must come back. */
const SPEC_ONLY = [
    ["deployment", NS, "web"], ["poddisruptionbudget", NS, "web"], ["customresourcedefinition", "", `widgets.${CRD_GROUP}`],
    ["validatingadmissionpolicy", "", "upgrade-blocked-label"], ["validatingadmissionpolicybinding", "", "upgrade-blocked-label"],
] as const;

type Obj = { metadata: { uid: string; resourceVersion: string; generation?: number; labels?: Record<string, string> }; spec?: unknown; status?: Record<string, unknown> };

/** Paths where `before` holds a value that `after` lacks or holds differently (fields `after` adds are not counted). */
function lostOrChanged(before: unknown, after: unknown, at = ""): string[] {
    if (before !== null && typeof before === "object") {
        if (after === null || typeof after !== "object" || Array.isArray(before) !== Array.isArray(after)) return [at || "/"];
        if (Array.isArray(before) && before.length !== (after as unknown[]).length) return [at];
        return Object.entries(before).flatMap(([k, v]) => lostOrChanged(v, (after as Record<string, unknown>)[k], `${at}/${k}`));
    }
    return before === after ? [] : [at || "/"];
}

async function get(c: Cluster, kind: string, ns: string, name: string): Promise<Obj> {
    return JSON.parse(await c.kubectl(["get", kind, name, ...(ns ? ["-n", ns] : []), "-o", "json"]));
}

async function snapshot(c: Cluster): Promise<Map<string, Obj>> {
    const all = new Map<string, Obj>();
    for (const [kind, ns, name] of [...UNTOUCHED, ...SPEC_ONLY]) all.set(`${kind}/${ns}/${name}`, await get(c, kind, ns, name));
    return all;
}

async function serverVersion(c: Cluster): Promise<string> {
    return JSON.parse(await c.kubectl(["get", "--raw", "/version"])).gitVersion;
}

async function podsOf(c: Cluster, app: string): Promise<Array<{ metadata: { uid: string; ownerReferences: Array<{ uid: string }> }; status: { phase: string } }>> {
    return JSON.parse(await c.kubectl(["-n", NS, "get", "pods", "-l", `app=${app}`, "-o", "json"])).items;
}

async function replicaSetsOf(c: Cluster, app: string): Promise<string[]> {
    const items = JSON.parse(await c.kubectl(["-n", NS, "get", "replicasets", "-l", `app=${app}`, "-o", "json"])).items as Obj[];
    return items.map((rs) => rs.metadata.uid).sort();
}

function deployment(name: string, replicas: number): object {
    return {
        apiVersion: "apps/v1", kind: "Deployment", metadata: { name, namespace: NS, labels: { app: name } },
        spec: {
            replicas, selector: { matchLabels: { app: name } },
            template: { metadata: { labels: { app: name } }, spec: { nodeSelector: { type: "kwok" }, containers: [{ name: "main", image: "registry.invalid/fake:1" }] } },
        },
    };
}

/** Whether a ConfigMap labelled `blocked` is refused (server-side dry run: nothing is stored either way). */
async function blockedRefused(c: Cluster, name: string, labels: Record<string, string>): Promise<string | undefined> {
    const r = await c.run("kubectl", ["--kubeconfig", c.kubeconfig, "create", "--dry-run=server", "-f", "-"], {
        allowFail: true,
        input: JSON.stringify({ apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: NS, labels }, data: { a: "b" } }),
    });
    return r.code === 0 ? undefined : r.stderr;
}

/** `kubectl auth whoami` with a bearer token and nothing else. */
async function whoami(c: Cluster, token: string): Promise<string> {
    const empty = c.writeFile("empty.conf", "apiVersion: v1\nkind: Config\n");
    const r = await c.run("kubectl", ["--kubeconfig", empty, "--server", c.server, "--certificate-authority", c.caFile, "--token", token, "auth", "whoami", "-o", "json"]);
    return JSON.parse(r.stdout).status.userInfo.username;
}

describe("an etcd written by the previous minor's API server, served by this one's after the control plane is swapped", function () {
    this.timeout(300_000);
    const ENC_KEY = crypto.randomBytes(32).toString("base64");
    const rc = useRealCluster(() => ({
        controlPlane: previousKubernetes(),
        files: { "enc.yaml": encryptionConfig(ENC_KEY) },
        apiserverArgs: { "encryption-provider-config": "{dir}/enc.yaml" },
    }), () => previousKubernetes().missing);

    it("reads back every object unchanged, keeps the Secret sealed, accepts the old token, enforces the old policy, holds the old cluster IP, and rolls nothing out", async () => {
        const c = rc.c;
        const previous = previousKubernetes();
        assert.equal(await serverVersion(c), previous.version, "the cluster starts at the previous minor");

        // --- written through the previous minor's API server (and made by its controllers) ---
        await c.addNode({ name: NODE, providerID: NODE });
        const secretValue = `s3cr3t-${crypto.randomBytes(12).toString("hex")}`;
        await c.kubectl(["create", "namespace", NS]);
        await c.kubectl(["-n", NS, "create", "secret", "generic", "db", `--from-literal=password=${secretValue}`]);
        await c.kubectl(["-n", NS, "create", "configmap", "app", "--from-literal=mode=prod"]);
        await c.kubectl(["-n", NS, "create", "serviceaccount", "app"]);
        await c.kubectl(["-n", NS, "create", "role", "reader", "--verb=get,list", "--resource=configmaps"]);
        await c.kubectl(["-n", NS, "create", "rolebinding", "reader", "--role=reader", `--serviceaccount=${NS}:app`]);
        await c.apply([
            deployment("web", 2),
            { apiVersion: "v1", kind: "Service", metadata: { name: "web", namespace: NS }, spec: { selector: { app: "web" }, ports: [{ port: 80, targetPort: 8080 }] } },
            { apiVersion: "policy/v1", kind: "PodDisruptionBudget", metadata: { name: "web", namespace: NS }, spec: { minAvailable: 1, selector: { matchLabels: { app: "web" } } } },
            {
                apiVersion: "apiextensions.k8s.io/v1", kind: "CustomResourceDefinition", metadata: { name: `widgets.${CRD_GROUP}` },
                spec: {
                    group: CRD_GROUP, scope: "Namespaced", names: { plural: "widgets", singular: "widget", kind: "Widget" },
                    versions: [{ name: "v1", served: true, storage: true, schema: { openAPIV3Schema: { type: "object", properties: { spec: { type: "object", properties: { size: { type: "integer" }, owner: { type: "string" } } } } } } }],
                },
            },
            {
                apiVersion: "admissionregistration.k8s.io/v1", kind: "ValidatingAdmissionPolicy", metadata: { name: "upgrade-blocked-label" },
                spec: {
                    failurePolicy: "Fail",
                    matchConstraints: { resourceRules: [{ apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE", "UPDATE"], resources: ["configmaps"] }] },
                    validations: [{ expression: "!has(object.metadata.labels) || !('blocked' in object.metadata.labels)", message: "upgrade-blocked-label: no blocked ConfigMaps" }],
                },
            },
            {
                apiVersion: "admissionregistration.k8s.io/v1", kind: "ValidatingAdmissionPolicyBinding", metadata: { name: "upgrade-blocked-label" },
                spec: { policyName: "upgrade-blocked-label", validationActions: ["Deny"], matchResources: { namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": NS } } } },
            },
        ]);
        await c.waitFor(`the CRD widgets.${CRD_GROUP} Established`, async () => {
            const crd = await get(c, "customresourcedefinition", "", `widgets.${CRD_GROUP}`);
            return ((crd.status?.conditions ?? []) as Array<{ type: string; status: string }>).some((x) => x.type === "Established" && x.status === "True");
        });
        await c.apply({ apiVersion: `${CRD_GROUP}/v1`, kind: "Widget", metadata: { name: "w1", namespace: NS }, spec: { size: 3, owner: "team-a" } });
        await c.waitFor("the web Deployment's 2 pods Running (made by the previous minor's controllers)", async () => {
            const pods = await podsOf(c, "web");
            return pods.length === 2 && pods.every((p) => p.status.phase === "Running");
        });
        await c.waitFor("the old policy refusing a blocked ConfigMap", () => blockedRefused(c, "probe", { blocked: "yes" }));
        const token = (await c.kubectl(["-n", NS, "create", "token", "app", "--duration=1h"])).trim();
        assert.equal(await whoami(c, token), `system:serviceaccount:${NS}:app`);

        const before = await snapshot(c);
        const podsBefore = (await podsOf(c, "web")).map((p) => p.metadata.uid).sort();
        const replicaSetsBefore = await replicaSetsOf(c, "web");
        assert.equal(replicaSetsBefore.length, 1);
        const clusterIp = (before.get(`service/${NS}/web`)!.spec as { clusterIP: string }).clusterIP;
        const sealed = (await etcdctl(c, ["get", `/registry/secrets/${NS}/db`, "--print-value-only"])).stdout;
        assert.ok(sealed.startsWith("k8s:enc:secretbox:v1:alicloud-kubeadm-1:") && !sealed.includes(secretValue), "the old server sealed the Secret in etcd");

        // --- the control plane swapped for this version's, in kubeadm's order, on the same etcd and flags ---
        for (const component of ["kwok", "kube-scheduler", "kube-controller-manager", "kube-apiserver"]) await c.stopComponent(component);
        c.startComponent("kube-apiserver", c.bin);
        await c.waitFor("this version's kube-apiserver /readyz", async () =>
            (await c.kubectl(["get", "--raw", "/readyz"], { allowFail: true, timeoutMs: 10_000 })).trim() === "ok", 90_000);
        assert.equal(await serverVersion(c), KUBERNETES_VERSION);
        c.startComponent("kube-controller-manager", c.bin);
        c.startComponent("kube-scheduler", c.bin);
        c.startComponent("kwok");

        // --- read back through this version's API server ---
        const after = await snapshot(c);
        for (const [kind, ns, name] of UNTOUCHED) {
            const key = `${kind}/${ns}/${name}`;
            assert.deepEqual(lostOrChanged(before.get(key), after.get(key)), [], `${key}: what the old server stored comes back whole`);
        }
        for (const [kind, ns, name] of SPEC_ONLY) {
            const key = `${kind}/${ns}/${name}`;
            const [b, a] = [before.get(key)!, after.get(key)!];
            assert.equal(a.metadata.uid, b.metadata.uid, `${key}: the same object`);
            assert.deepEqual(lostOrChanged(b.spec, a.spec), [], `${key}: its spec comes back whole`);
            assert.equal(a.metadata.generation, b.metadata.generation, `${key}: its spec was not rewritten`);
        }
        const secret = after.get(`secret/${NS}/db`) as unknown as { data: { password: string } };
        assert.equal(Buffer.from(secret.data.password, "base64").toString(), secretValue, "the new server opens the old server's seal");
        const stillSealed = (await etcdctl(c, ["get", `/registry/secrets/${NS}/db`, "--print-value-only"])).stdout;
        assert.equal(stillSealed, sealed, "the Secret's bytes in etcd are the old server's");

        // the old server's token, the old policy and the old allocation hold on the new server
        assert.equal(await whoami(c, token), `system:serviceaccount:${NS}:app`, "a token the old server issued is accepted");
        const refusal = await c.waitFor("the old policy refusing a blocked ConfigMap on the new server", () => blockedRefused(c, "probe", { blocked: "yes" }));
        assert.match(refusal, /upgrade-blocked-label: no blocked ConfigMaps/);
        assert.equal(await blockedRefused(c, "probe", { fine: "yes" }), undefined, "an unlabelled ConfigMap is admitted");
        const duplicate = await c.run("kubectl", ["--kubeconfig", c.kubeconfig, "create", "-f", "-"], {
            allowFail: true,
            input: JSON.stringify({ apiVersion: "v1", kind: "Service", metadata: { name: "web-copy", namespace: NS }, spec: { clusterIP: clusterIp, ports: [{ port: 80 }] } }),
        });
        assert.notEqual(duplicate.code, 0, `the old Service's cluster IP ${clusterIp} stays allocated`);
        assert.match(duplicate.stderr, /already allocated/);

        // The new controllers run (a Deployment made now gets its pods); by then they have synced the old Deployment,
        // which keeps its ReplicaSet and pods: the new version's defaults changed no pod template hash.
        await c.apply(deployment("after", 1));
        await c.waitFor("a Deployment made through the new control plane Running", async () => {
            const pods = await podsOf(c, "after");
            return pods.length === 1 && pods[0].status.phase === "Running";
        }, 90_000);
        assert.deepEqual(await replicaSetsOf(c, "web"), replicaSetsBefore, "the old Deployment keeps its ReplicaSet: nothing rolled out");
        const podsAfter = await podsOf(c, "web");
        assert.deepEqual(podsAfter.map((p) => p.metadata.uid).sort(), podsBefore, "and its pods");
        assert.ok(podsAfter.every((p) => p.status.phase === "Running"));

        // and what the old server stored can be written by the new one
        await c.kubectl(["-n", NS, "patch", "configmap", "app", "--type=merge", "-p", JSON.stringify({ data: { mode: "upgraded" } })]);
        const patched = await get(c, "configmap", NS, "app") as unknown as { data: { mode: string }; metadata: { resourceVersion: string } };
        assert.equal(patched.data.mode, "upgraded");
        assert.notEqual(patched.metadata.resourceVersion, before.get(`configmap/${NS}/app`)!.metadata.resourceVersion);
    });
});
