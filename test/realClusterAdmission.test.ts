// World: a real control plane built from source (test/kube: etcd, kube-apiserver, controller-manager, scheduler,
// kubeadm, kubectl; KWOK for nodes); the OpenAPI emulator (testing/emulator).
// Admission on the real control plane (test/kube: upstream kube-apiserver, kube-controller-manager, kubeadm's
// API-side phases): the service's own RBAC and the admitted nodes' RBAC from src/components/admission.ts, the
// service's REST client with its service-account token, a real PKCS#7 from openssl. A valid member's CSR is
// approved by the service's approver and signed by the controller-manager; kubeadm's auto-approval leaves
// admission tokens alone; a CSR for any other name is denied; the token goes with its first CSR. Re-admission reads
// the real Node and its heartbeat Lease; NodeRestriction keeps the pool label from kubelets while the service sets
// it (and the node policy keeps the service to that label); pool registrations are ConfigMaps the service reads.
import * as assert from "assert";
import * as crypto from "crypto";
import { admit, documentWithAudience } from "../src/admission/admit";
import { ADMITTED_GROUP, TOKEN_LABEL } from "../src/admission/approver";
import { issueChallenge } from "../src/admission/challenge";
import { approvePending, challengeKeys, KubeClusterView, KubePoolSource, KEY_SECRET, labelAdmittedNodes, REFUSED_REASON, tokenLeaseName, TOKEN_USED_ANNOTATION } from "../src/admission/kube";
import { POOL_LABEL, POOL_PENDING_TAINT, READMIT_UNTIL_ANNOTATION } from "../src/admission/nodes";
import { admissionPoolRegistration } from "../src/components/admission";
import { makePki } from "../testing/admission/pki";
import { ACCOUNT, REGION, useAdmissionCluster } from "./admission/realCluster";
import { freePorts } from "./kube/cluster";
import { useRealCluster } from "./kube/fixture";

describe("admission on the real control plane", function () {
    this.timeout(180_000);
    const ac = useAdmissionCluster([["i-pool1", "10.0.0.1"], ["i-pool2", "10.0.0.2"], ["i-ready", "10.0.0.3"], ["i-rejoin", "10.0.0.4"], ["i-label", "10.0.0.5"], ["i-claim", "10.0.0.6"]]);
    const { rc, asToken, admitted, csrWithToken, csrOf } = ac;
    const view = () => new KubeClusterView(ac.kube, "replica-a");
    const tokenSecretExists = async (token: string) => (await rc.c.kubectl(["get", "secret", "-n", "kube-system", `bootstrap-token-${token.split(".")[0]}`, "--ignore-not-found", "-o", "name"])).trim() !== "";

    it("the challenge key Secret is shared: a second replica reads the same key", async () => {
        assert.deepStrictEqual(await challengeKeys(ac.kube), ac.settings.challengeKeys);
        assert.ok((await rc.c.kubectl(["get", "secret", "-n", "kube-system", KEY_SECRET, "-o", "name"])).includes(KEY_SECRET));
    });

    it("an admission token can do what kubeadm join needs, and nothing of a node", async () => {
        const token = await admitted("i-pool1", "10.0.0.1");
        const can = async (...args: string[]) => (await asToken(token, ["auth", "can-i", ...args], { allowFail: true })).stdout.trim();
        assert.strictEqual(await can("get", "configmaps/kubeadm-config", "-n", "kube-system"), "yes");
        assert.strictEqual(await can("get", "configmaps/kubelet-config", "-n", "kube-system"), "yes");
        assert.strictEqual(await can("get", "nodes"), "yes");
        assert.strictEqual(await can("create", "certificatesigningrequests"), "yes");
        assert.strictEqual(await can("list", "secrets", "-n", "kube-system"), "no");
        const whoami = JSON.parse((await asToken(token, ["auth", "whoami", "-o", "json"])).stdout);
        assert.ok(whoami.status.userInfo.groups.includes(ADMITTED_GROUP));
        assert.ok(!whoami.status.userInfo.groups.includes("system:bootstrappers:kubeadm:default-node-token"));
    });

    it("the service's own credential writes only its tokens and key: no other Secret type, no other group, no reading or deleting others' Secrets", async () => {
        const create = (secret: object) => asToken(ac.saToken, ["create", "-f", "-"], { allowFail: true, input: JSON.stringify({ apiVersion: "v1", kind: "Secret", ...secret }) });
        const id = () => crypto.randomBytes(3).toString("hex");
        const token = (group: string, labelled = true, expires = true) => {
            const t = id();
            return { type: "bootstrap.kubernetes.io/token", metadata: { name: `bootstrap-token-${t}`, namespace: "kube-system", ...(labelled ? { labels: { [TOKEN_LABEL]: "true" } } : {}) },
                stringData: { "token-id": t, "token-secret": "0123456789abcdef", "usage-bootstrap-authentication": "true", "usage-bootstrap-signing": "true", "auth-extra-groups": group,
                    ...(expires ? { expiration: new Date(Date.now() + 600_000).toISOString().replace(/\.\d+Z$/, "Z") } : {}) } };
        };
        await ac.policyInForce("alicloud-kubeadm-admission-secrets", () => create({ type: "Opaque", metadata: { name: `probe-${id()}`, namespace: "kube-system" } }));
        // A controller's long-lived token (the tokens controller would fill it in): refused by the policy.
        const sa = await create({ type: "kubernetes.io/service-account-token", metadata: { name: `x-${id()}`, namespace: "kube-system", annotations: { "kubernetes.io/service-account.name": "clusterrole-aggregation-controller" } } });
        assert.notStrictEqual(sa.code, 0);
        assert.match(sa.stderr, /ValidatingAdmissionPolicy 'alicloud-kubeadm-admission-secrets'/);
        // A token in kubeadm's auto-approved group, without the label or without an expiration: refused. An Opaque Secret: refused.
        for (const bad of [token("system:bootstrappers:kubeadm:default-node-token"), token(`${ADMITTED_GROUP},system:bootstrappers:kubeadm:default-node-token`), token(ADMITTED_GROUP, false), token(ADMITTED_GROUP, true, false),
            { type: "Opaque", metadata: { name: `x-${id()}`, namespace: "kube-system" }, stringData: { a: "b" } }]) {
            const r = await create(bad);
            assert.notStrictEqual(r.code, 0, JSON.stringify(bad.metadata));
        }
        // What it is for passes the same policy.
        const good = token(ADMITTED_GROUP);
        assert.strictEqual((await create(good)).code, 0);
        assert.strictEqual((await asToken(ac.saToken, ["delete", "secret", "-n", "kube-system", good.metadata.name], { allowFail: true })).code, 0);
        // Others' Secrets: neither read (RBAC: only its key) nor deleted (the policy).
        const other = `other-${id()}`;
        await rc.c.kubectl(["create", "secret", "generic", other, "-n", "kube-system", "--from-literal=a=b"]);
        assert.notStrictEqual((await asToken(ac.saToken, ["get", "secret", other, "-n", "kube-system"], { allowFail: true })).code, 0);
        assert.notStrictEqual((await asToken(ac.saToken, ["delete", "secret", other, "-n", "kube-system"], { allowFail: true })).code, 0);
        assert.ok((await rc.c.kubectl(["get", "secret", other, "-n", "kube-system", "-o", "name"])).includes(other), "still there");
        assert.strictEqual((await asToken(ac.saToken, ["get", "secret", KEY_SECRET, "-n", "kube-system", "-o", "name"], { allowFail: true })).code, 0, "its key it reads");
    });

    it("a member's kubelet client CSR is left alone by kubeadm's auto-approval, approved by the approver, signed; the token is then gone", async () => {
        const token = await admitted("i-pool2", "10.0.0.2");
        // Two CSRs with the one token: the approver decides the first it sees, and only that one.
        const both = [await csrWithToken(token, `system:node:${REGION}.i-pool2`), await csrWithToken(token, `system:node:${REGION}.i-pool2`)];
        await new Promise((r) => setTimeout(r, 4000));
        assert.ok(!((await csrOf(both[0])).status?.conditions ?? []).some((c) => c.type === "Approved"), "kubeadm's auto-approval does not cover admission tokens");
        const done = await approvePending(ac.kube, () => undefined);
        assert.deepStrictEqual(Object.values(done).sort(), ["approve", "deny"], "one CSR per token: the other is denied, not left pending");
        const name = Object.keys(done).find((n) => done[n] === "approve")!;
        const second = both.find((n) => n !== name)!;
        assert.deepStrictEqual(Object.keys(done).sort(), [...both].sort());
        const cert = await rc.c.waitFor(`certificate of ${name}`, async () => (await csrOf(name)).status?.certificate);
        const x509 = new crypto.X509Certificate(Buffer.from(cert, "base64"));
        assert.match(x509.subject, new RegExp(`CN=system:node:${REGION}\\.i-pool2`));
        assert.ok(x509.verify(new crypto.X509Certificate(rc.c.caPem).publicKey), "signed by the cluster CA");
        assert.ok((await csrOf(name)).status!.conditions!.some((c) => c.type === "Approved" && c.reason === "AlicloudKubeadmAdmission"));
        assert.strictEqual(await tokenSecretExists(token), false, "single use: the token is deleted on its first CSR");
        // Its Lease stays, marked used, until the token's expiry: whoever may create Leases in kube-system (the CCM,
        // the autoscaler) cannot put one naming another node in its place while the deleted token still authenticates.
        const lease = JSON.parse(await rc.c.kubectl(["get", "lease", "-n", "kube-system", tokenLeaseName(token.split(".")[0]), "-o", "json"])) as { metadata: { annotations: Record<string, string> } };
        assert.ok(lease.metadata.annotations[TOKEN_USED_ANNOTATION], "marked used");
        const spoof = await rc.c.run("kubectl", ["--kubeconfig", rc.c.kubeconfig, "create", "-f", "-"], { allowFail: true, input: JSON.stringify({
            apiVersion: "coordination.k8s.io/v1", kind: "Lease", metadata: { name: tokenLeaseName(token.split(".")[0]), namespace: "kube-system", labels: { [TOKEN_LABEL]: "true" },
                annotations: { "alicloud-kubeadm/provider-id": `${REGION}.i-master0` } } }) });
        assert.notStrictEqual(spoof.code, 0, "not even an admin's Lease takes its place");
        assert.strictEqual(JSON.parse(await rc.c.kubectl(["get", "lease", "-n", "kube-system", tokenLeaseName(token.split(".")[0]), "-o", "json"])).metadata.annotations["alicloud-kubeadm/provider-id"], `${REGION}.i-pool2`);
        assert.deepStrictEqual(await approvePending(ac.kube, () => undefined), {}, "nothing more for a used token");
        assert.ok(((await csrOf(second)).status?.conditions ?? []).some((c) => c.type === "Denied"), "its second CSR is denied");
        assert.strictEqual((await csrOf(second)).status?.certificate, undefined, "and not signed");
        // The apiserver's token authenticator reads Secrets through an informer: the deletion reaches it within moments.
        await rc.c.waitFor("the used token to stop authenticating", async () => {
            const reuse = await asToken(token, ["auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"], { allowFail: true });
            return reuse.code !== 0 || reuse.stdout.trim() === "system:anonymous";
        }, 15_000);
    });

    it("a CSR for another node name (a master's) made with an issued credential is denied", async () => {
        const token = await admitted("i-pool1", "10.0.0.1");
        const master = `${REGION}.i-master0`;
        const name = await csrWithToken(token, `system:node:${master}`);
        const done = await approvePending(ac.kube, () => undefined);
        assert.strictEqual(done[name], "deny");
        const conds = (await csrOf(name)).status?.conditions ?? [];
        assert.ok(conds.some((c) => c.type === "Denied") && !conds.some((c) => c.type === "Approved"));
        assert.strictEqual((await csrOf(name)).status?.certificate, undefined);
        assert.strictEqual(await tokenSecretExists(token), false);
    });

    it("a CSR whose request hides another name behind text before its PEM block (what the signer reads) is denied, never signed", async () => {
        const token = await admitted("i-pool2", "10.0.0.2");
        // The node's own CSR as bare Base64 ending in '=' padding, then a PEM block for a master's name: PEM readers
        // (the API server, the signer) skip the text before "-----BEGIN".
        let own = "";
        for (let i = 0; i < 20 && !own.endsWith("="); i++) own = ac.pki.csr(`/O=system:nodes/CN=system:node:${REGION}.i-pool2`).replace(/-----(BEGIN|END) [A-Z ]+-----/g, "").replace(/\s+/g, "");
        const name = `admission-test-${crypto.randomBytes(4).toString("hex")}`;
        await asToken(token, ["create", "-f", "-"], {
            input: JSON.stringify({
                apiVersion: "certificates.k8s.io/v1", kind: "CertificateSigningRequest", metadata: { name },
                spec: { request: Buffer.from(`${own}\n${ac.pki.csr(`/O=system:nodes/CN=system:node:${REGION}.i-master0`)}`).toString("base64"),
                    signerName: "kubernetes.io/kube-apiserver-client-kubelet", usages: ["digital signature", "client auth"] },
            }),
        });
        assert.deepStrictEqual(await approvePending(ac.kube, () => undefined), { [name]: "deny" });
        const csr = await csrOf(name);
        assert.ok((csr.status?.conditions ?? []).some((c) => c.type === "Denied"));
        assert.strictEqual(csr.status?.certificate, undefined, "nothing signed");
    });

    it("re-admission reads the real Node and its heartbeat Lease: refused while fresh, or when the instance was not restarted since; admitted after a restart or an operator's leave", async () => {
        const name = `${REGION}.i-rejoin`, ip = "10.0.0.4", now = Date.now();
        const micro = (ms: number) => new Date(ms).toISOString().replace("Z", "000Z");
        await rc.c.apply({ apiVersion: "v1", kind: "Node", metadata: { name }, spec: { providerID: name } });
        const heartbeat = (ms: number) => rc.c.apply({ apiVersion: "coordination.k8s.io/v1", kind: "Lease", metadata: { name, namespace: "kube-node-lease" },
            spec: { holderIdentity: name, leaseDurationSeconds: 40, renewTime: micro(ms) } });
        const attempt = async (startedAt: number) => {
            ac.cloud.members.set("i-rejoin", { ...ac.cloud.members.get("i-rejoin")!, startedAt });
            const audience = issueChallenge(ac.settings.challengeKeys[0], ip, 120);
            const doc = JSON.stringify({ "owner-account-id": ACCOUNT, "instance-id": "i-rejoin", "region-id": REGION });
            return admit({ document: doc, signature: ac.pki.sign(documentWithAudience(doc, audience)), audience }, ip, { ...ac.settings, readmitAfterSeconds: 300 }, ac.cloud, view());
        };
        await heartbeat(now - 5000);
        assert.strictEqual((await view().node(name))?.lastHeartbeat, now - 5000, "the service's credential reads the node's Lease");
        const fresh = await attempt(now - 60_000);
        assert.deepStrictEqual([fresh.admitted, fresh.reason], [false, "already-registered"]);
        assert.match(fresh.message, /heartbeat is fresh/);
        await heartbeat(now - 30 * 60_000);
        const notRestarted = await attempt(now - 60 * 60_000);
        assert.deepStrictEqual([notRestarted.admitted, notRestarted.reason], [false, "already-registered"]);
        assert.match(notRestarted.message, /not started after it/);
        assert.strictEqual((await attempt(now - 10 * 60_000)).admitted, true, "restarted after its stale heartbeat: a new machine");
        await heartbeat(now - 1000);
        assert.strictEqual((await attempt(now - 60 * 60_000)).admitted, false);
        await rc.c.kubectl(["annotate", "node", name, `${READMIT_UNTIL_ANNOTATION}=${new Date(now + 10 * 60_000).toISOString().replace(/\.\d+Z$/, "Z")}`]);
        assert.strictEqual((await attempt(now - 60 * 60_000)).admitted, true, "an operator let it in");
    });

    it("the pool label: a kubelet may not set it; the service sets it on the Node it admitted (lifting the registration taint), and changes nothing else", async () => {
        const name = `${REGION}.i-label`;
        const token = await admitted("i-label", "10.0.0.5"); // a member of pool general (the fixture's cloud)
        const credentials = rc.c.nodeCredentials(name, token);
        await rc.c.waitFor("the service to approve the kubelet's CSR", async () => Object.values(await approvePending(ac.kube, () => undefined)).includes("approve") || undefined);
        const kubelet = (await credentials).kubeconfig;
        const asKubelet = (args: string[], input?: string) => rc.c.run("kubectl", ["--kubeconfig", kubelet, ...args], { allowFail: true, input });
        const node = (labels: Record<string, string>) => JSON.stringify({ apiVersion: "v1", kind: "Node", metadata: { name, labels },
            spec: { providerID: name, taints: [{ key: POOL_PENDING_TAINT, effect: "NoSchedule" }] } });
        // As the joining node registers: with the pool label NodeRestriction refuses it; with its own labels and the taint, fine.
        const forged = await asKubelet(["create", "-f", "-"], node({ [POOL_LABEL]: "gpu" }));
        assert.notStrictEqual(forged.code, 0, "a kubelet registered a node-restriction.kubernetes.io/ label");
        assert.match(forged.stderr, /node-restriction/);
        assert.strictEqual((await asKubelet(["create", "-f", "-"], node({ team: "x" }))).code, 0);
        // The service's pass labels it from its record of the instance's group, and takes the taint off.
        assert.deepStrictEqual(await labelAdmittedNodes(ac.kube, () => undefined), [name]);
        type NodeJson = { metadata: { labels: Record<string, string>; annotations?: Record<string, string> }; spec: { taints?: Array<{ key: string }>; unschedulable?: boolean } };
        const read = async () => JSON.parse(await rc.c.kubectl(["get", "node", name, "-o", "json"])) as NodeJson;
        const labelled = await read();
        assert.deepStrictEqual([labelled.metadata.labels[POOL_LABEL], labelled.metadata.labels.team], ["general", "x"]);
        assert.ok(!(labelled.spec.taints ?? []).some((t) => t.key === POOL_PENDING_TAINT), "the registration taint is lifted");
        assert.deepStrictEqual(await labelAdmittedNodes(ac.kube, () => undefined), [], "once");
        // The kubelet cannot change it afterwards either.
        assert.notStrictEqual((await asKubelet(["label", "node", name, `${POOL_LABEL}=gpu`, "--overwrite"])).code, 0);
        // The service's credential may patch Nodes, and writes nothing but that label and that taint.
        const asService = (args: string[]) => ac.asToken(ac.saToken, args, { allowFail: true });
        await ac.policyInForce("alicloud-kubeadm-admission-nodes", () => asService(["label", "node", name, "team=y", "--overwrite"]));
        const before = await read();
        for (const write of [["label", "node", name, "team=y", "--overwrite"], ["label", "node", name, "team-"], ["cordon", name], ["annotate", "node", name, "a=b"],
            ["taint", "node", name, "x=y:NoSchedule"], ["label", "node", `${REGION}.i-rejoin`, "extra=1"], ["delete", "node", name]]) await asService(write);
        // (kubectl cordon exits 0 even when refused: the Nodes' state says what happened)
        const after = await read();
        assert.deepStrictEqual([after.metadata.labels, after.metadata.annotations, after.spec.taints, after.spec.unschedulable],
            [before.metadata.labels, before.metadata.annotations, before.spec.taints, before.spec.unschedulable], "the service changed nothing but its label");
        assert.strictEqual(JSON.parse(await rc.c.kubectl(["get", "node", `${REGION}.i-rejoin`, "-o", "json"])).metadata.labels?.extra, undefined);
        assert.strictEqual((await asService(["label", "node", name, `${POOL_LABEL}=general`, "--overwrite"])).code, 0, "its own label it may write");
    });

    it("a kubelet's Node named after its instance may claim no other instance's provider id: refused at create and at a later set; its own, or a Node named by hand, accepted", async () => {
        const name = `${REGION}.i-claim`;
        const token = await admitted("i-claim", "10.0.0.6");
        const credentials = rc.c.nodeCredentials(name, token);
        await rc.c.waitFor("the service to approve the kubelet's CSR", async () => Object.values(await approvePending(ac.kube, () => undefined)).includes("approve") || undefined);
        const kubelet = (await credentials).kubeconfig;
        const asKubelet = (args: string[], input?: string) => rc.c.run("kubectl", ["--kubeconfig", kubelet, ...args], { allowFail: true, input });
        const node = (providerID?: string) => JSON.stringify({ apiVersion: "v1", kind: "Node", metadata: { name },
            spec: { ...(providerID === undefined ? {} : { providerID }), taints: [{ key: POOL_PENDING_TAINT, effect: "NoSchedule" }] } });
        const exists = async () => (await rc.c.kubectl(["get", "node", name, "--ignore-not-found", "-o", "name"])).trim() !== "";
        await ac.policyInForce("alicloud-kubeadm-admission-kubelet-provider-id", () => asKubelet(["create", "-f", "-"], node(`${REGION}.i-master`)));
        assert.ok(!(await exists()), "no Node claiming the master's instance was created");
        // Registered without a provider id (allowed), it cannot claim another instance's afterwards (the one change of a provider id an update may make).
        assert.strictEqual((await asKubelet(["create", "-f", "-"], node())).code, 0);
        const later = await asKubelet(["patch", "node", name, "--type", "merge", "-p", JSON.stringify({ spec: { providerID: `${REGION}.i-master` } })]);
        assert.notStrictEqual(later.code, 0);
        assert.strictEqual(JSON.parse(await rc.c.kubectl(["get", "node", name, "-o", "json"])).spec.providerID, undefined);
        assert.strictEqual((await asKubelet(["patch", "node", name, "--type", "merge", "-p", JSON.stringify({ spec: { providerID: name } })])).code, 0, "its own provider id it may set");
        assert.strictEqual(JSON.parse(await rc.c.kubectl(["get", "node", name, "-o", "json"])).spec.providerID, name);
        // A kubelet set up by hand, named otherwise, is left alone (the admin impersonating it: the API server authorizes and admits as that kubelet).
        const hand = "worker-by-hand";
        const handNode = JSON.stringify({ apiVersion: "v1", kind: "Node", metadata: { name: hand }, spec: { providerID: `${REGION}.i-hand` } });
        const made = await rc.c.run("kubectl", ["--kubeconfig", rc.c.kubeconfig, "--as", `system:node:${hand}`, "--as-group", "system:nodes", "create", "-f", "-"], { allowFail: true, input: handNode });
        assert.strictEqual(made.code, 0, made.stderr);
        assert.strictEqual(JSON.parse(await rc.c.kubectl(["get", "node", hand, "-o", "json"])).spec.providerID, `${REGION}.i-hand`);
    });

    it("pool registrations: the service reads the allowed groups from ConfigMaps, a pool (and an existing node) registered later included, without a restart", async () => {
        const pools = new KubePoolSource(ac.kube, 0);
        const toObject = (o: ReturnType<typeof admissionPoolRegistration>) => o as object;
        await rc.c.apply(toObject(admissionPoolRegistration("general", "asg-general0001", "test")));
        assert.deepStrictEqual([...(await pools.groups())], [["asg-general0001", "general"]]);
        await rc.c.apply(toObject(admissionPoolRegistration("gpu", "asg-gpu00000001", "test")));
        assert.deepStrictEqual([...(await pools.groups())], [["asg-general0001", "general"]], "read once, kept");
        assert.deepStrictEqual(new Map(await pools.refresh()), new Map([["asg-general0001", "general"], ["asg-gpu00000001", "gpu"]]), "read again: the new pool");
        // An existing node attached later (ExistingNode with a cluster handle) registers its instance the same way.
        const { nodeRegistration } = await import("../src/components/clusterHandle");
        await rc.c.apply(toObject(nodeRegistration("test", "i-batch0001", "batch")));
        assert.deepStrictEqual([...(await pools.refreshNodes())], [["i-batch0001", "batch"]]);
        assert.deepStrictEqual(new Map(await pools.groups()), new Map([["asg-general0001", "general"], ["asg-gpu00000001", "gpu"]]), "no group from a node's registration");
        // Other ConfigMaps in kube-system are no registrations, and the service may not write any.
        assert.notStrictEqual((await ac.asToken(ac.saToken, ["create", "configmap", "x", "-n", "kube-system", "--from-literal=scalingGroupId=asg-x"], { allowFail: true })).code, 0);
    });

    it("claims are single use across replicas; a Ready node's identity is refused and the refusal recorded for doctor", async () => {
        const a = new KubeClusterView(ac.kube, "replica-a"), b = new KubeClusterView(ac.kube, "replica-b");
        const id = crypto.randomBytes(20).toString("hex");
        const results = await Promise.all([a.claimOnce(id, Date.now() + 60_000), b.claimOnce(id, Date.now() + 60_000)]);
        assert.deepStrictEqual(results.sort(), [false, true]);
        await rc.c.addNode({ name: `${REGION}.i-ready`, providerID: `${REGION}.i-ready` });
        const ip = "10.0.0.3";
        const audience = issueChallenge(ac.settings.challengeKeys[0], ip, 120);
        const doc = JSON.stringify({ "owner-account-id": ACCOUNT, "instance-id": "i-ready", "region-id": REGION });
        const r = await admit({ document: doc, signature: ac.pki.sign(documentWithAudience(doc, audience)), audience }, ip, ac.settings, ac.cloud, view());
        assert.deepStrictEqual([r.admitted, r.reason], [false, "already-registered"]);
        const events = JSON.parse(await rc.c.kubectl(["get", "events", "-n", "kube-system", "--field-selector", `reason=${REFUSED_REASON}`, "-o", "json"])) as { items: Array<{ action: string; message: string }> };
        assert.ok(events.items.some((e) => e.action === "already-registered" && e.message.includes("i-ready")));
    });
});

describe("the bundled admission service as it runs on a master (real control plane, emulator cloud)", function () {
    this.timeout(180_000);
    const rc = useRealCluster({ netns: false, region: REGION });

    it("node: challenge → signed document → token → CSR approved and Node labelled by the service's own loop; a pool attached from a second program while it runs admitted and labelled without a restart; a second claim refused", async () => {
        const { admissionBundle, admissionRbacObjects: rbac, serviceConfig, admissionPoolRegistration: registration } = await import("../src/components/admission");
        const { attachedPoolUnderMocks, clusterHandleUnderMocks } = await import("../testing/attachedPool");
        const { makeServiceTls, identityDocument } = await import("../testing/admission/harness");
        const { startEmulator, TEST_CREDENTIALS } = await import("../testing/emulator");
        const fs = await import("fs");
        const path = await import("path");
        const https = await import("https");
        const { spawn } = await import("child_process");
        const c = rc.c;
        const pki = makePki();
        const emu = await startEmulator();
        let child: import("child_process").ChildProcess | undefined;
        try {
            // Its own key and a certificate for its address, as AdmissionCertificate makes them: nothing of the cluster's PKI.
            const tls = makeServiceTls(["127.0.0.1"]);
            await c.apply(rbac());
            const group = emu.addScalingGroup({ desiredCapacity: 1 });
            const [instanceId] = emu.scalingGroupInstances(group.scalingGroupId);
            emu.state.instances.get(instanceId)!.privateIp = "127.0.0.1";
            await c.apply(registration("general", group.scalingGroupId, "test") as object);
            // The ConfigMap's files, as the DaemonSet mounts them, plus the service account's token and CA.
            const dir = path.join(pki.dir, "service");
            fs.mkdirSync(path.join(dir, "sa"), { recursive: true });
            for (const [name, text] of Object.entries(admissionBundle())) fs.writeFileSync(path.join(dir, name), text);
            fs.writeFileSync(path.join(dir, "sa", "token"), (await c.kubectl(["create", "token", "alicloud-kubeadm-admission", "-n", "kube-system", "--duration", "1h"])).trim());
            fs.writeFileSync(path.join(dir, "sa", "ca.crt"), c.caPem);
            for (const [name, text] of [["tls.crt", tls.certPem], ["tls.key", tls.keyPem], ["signer.pem", pki.signerPem]]) fs.writeFileSync(path.join(dir, name), text);
            const [port] = await freePorts(1);
            const config = {
                ...serviceConfig({ accountId: ACCOUNT, region: REGION }),
                port, tlsCertFile: path.join(dir, "tls.crt"), tlsKeyFile: path.join(dir, "tls.key"), signerFile: path.join(dir, "signer.pem"), cloudEndpoint: emu.endpoint,
            };
            fs.writeFileSync(path.join(dir, "config.json"), JSON.stringify(config));
            const apiPort = new URL(c.server).port;
            child = spawn(process.execPath, [path.join(dir, "server.js"), path.join(dir, "config.json")], {
                env: { PATH: process.env.PATH, HOSTNAME: "master-0", KUBERNETES_SERVICE_HOST: "127.0.0.1", KUBERNETES_SERVICE_PORT: apiPort, AK_ADMISSION_SA_DIR: path.join(dir, "sa"),
                    ALIBABA_CLOUD_ACCESS_KEY_ID: TEST_CREDENTIALS.accessKeyId, ALIBABA_CLOUD_ACCESS_KEY_SECRET: TEST_CREDENTIALS.accessKeySecret },
                stdio: ["ignore", "pipe", "pipe"],
            });
            let log = "";
            child.stdout!.on("data", (d: Buffer) => { log += d.toString(); });
            child.stderr!.on("data", (d: Buffer) => { log += d.toString(); });
            await c.waitFor("the service to start", async () => log.includes('"event":"started"') || (child!.exitCode !== null ? Promise.reject(new Error(log)) : false), 30_000);
            // A node trusts the service only as the holder of the pinned key: its certificate is the only trust anchor.
            const call = (p: string, from: string, body?: string) => new Promise<{ status: number; text: string }>((resolve, reject) => {
                const req = https.request(`https://127.0.0.1:${port}${p}`, { method: body ? "POST" : "GET", ca: tls.certPem, agent: false, localAddress: from,
                    headers: body ? { "content-type": "application/x-www-form-urlencoded" } : {} }, (res) => {
                    let text = "";
                    res.on("data", (d: Buffer) => { text += d.toString(); });
                    res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
                });
                req.on("error", reject);
                req.end(body);
            });
            assert.strictEqual((await call("/admission.crt", "127.0.0.1")).text, tls.certPem);
            const claim = async (id: string, ip: string) => {
                const audience = (await call("/challenge", ip)).text.trim();
                const document = identityDocument({ instanceId: id, ip, accountId: ACCOUNT, regionId: REGION });
                return call("/admit", ip, new URLSearchParams({ document, signature: pki.sign(documentWithAudience(document, audience)), audience }).toString());
            };
            const r = await claim(instanceId, "127.0.0.1");
            assert.strictEqual(r.status, 200, r.text);
            const token = (JSON.parse(r.text) as { token: string }).token;
            // The kubelet's TLS bootstrap with that token: the service's loop approves, the controller-manager signs.
            const name = `${REGION}.${instanceId}`;
            const creds = await c.nodeCredentials(name, token);
            assert.match(new crypto.X509Certificate(creds.certPem).subject, new RegExp(`CN=system:node:${REGION}\\.${instanceId}`));
            const csr = JSON.parse(await c.kubectl(["get", "csr", creds.csrName, "-o", "json"])) as { status: { conditions: Array<{ type: string; reason: string }> } };
            assert.ok(csr.status.conditions.some((x) => x.type === "Approved" && x.reason === "AlicloudKubeadmAdmission"));
            // The kubelet registers its Node with the registration taint; the service's loop sets the pool label from its record and lifts it.
            await c.run("kubectl", ["--kubeconfig", creds.kubeconfig, "create", "-f", "-"], { input: JSON.stringify({ apiVersion: "v1", kind: "Node", metadata: { name },
                spec: { providerID: name, taints: [{ key: POOL_PENDING_TAINT, effect: "NoSchedule" }] } }) });
            const labelled = await c.waitFor("the service to label the Node", async () => {
                const n = JSON.parse(await c.kubectl(["get", "node", name, "-o", "json"])) as { metadata: { labels?: Record<string, string> }; spec: { taints?: Array<{ key: string }> } };
                return n.metadata.labels?.[POOL_LABEL] ? n : undefined;
            }, 30_000);
            assert.strictEqual(labelled.metadata.labels![POOL_LABEL], "general");
            assert.ok(!(labelled.spec.taints ?? []).some((t) => t.key === POOL_PENDING_TAINT));
            // A pool attached while the service runs: a NodePool of a second program, given the cluster's handle through a
            // StackReference (Pulumi mock graph), registers its group; the service reads the registration when its member asks.
            const later = emu.addScalingGroup({ desiredCapacity: 1 });
            const [lateId] = emu.scalingGroupInstances(later.scalingGroupId);
            emu.state.instances.get(lateId)!.privateIp = "127.0.0.2";
            const before = (await claim(lateId, "127.0.0.2"));
            assert.strictEqual((JSON.parse(before.text) as { reason: string }).reason, "not-a-member", "not registered yet");
            const handle = await clusterHandleUnderMocks(REGION, { name: "test", kubernetesVersion: "1.36.3", zones: [`${REGION}-h`], nodePools: [{ name: "general", instanceType: "ecs.g7.xlarge", size: 1 }] });
            const attached = await attachedPoolUnderMocks(handle, "elastic", later.scalingGroupId);
            // The masters' role may read the group's members (the policy the pool attached to it).
            const policy = JSON.parse(attached.ofType("alicloud:ram/policy:Policy")[0].rawInputs.policyDocument as string) as { Statement: Array<{ Action: string[]; Resource: string[] }> };
            assert.ok(policy.Statement.some((st) => st.Action.includes("ess:DescribeScalingInstances") && st.Resource.includes(`acs:ess:${REGION}:*:scalinggroup/${later.scalingGroupId}`)));
            assert.strictEqual(attached.ofType("alicloud:ram/rolePolicyAttachment:RolePolicyAttachment")[0].rawInputs.roleName, (handle.ram as { roleName: string }).roleName);
            const [cm] = attached.ofType("kubernetes:core/v1:ConfigMap");
            await c.apply({ apiVersion: "v1", kind: "ConfigMap", metadata: cm.rawInputs.metadata, data: cm.rawInputs.data });
            // (the service re-reads registrations at most once a second: the node's retry gets in)
            const late = await c.waitFor("the new pool's member admitted", async () => { const x = await claim(lateId, "127.0.0.2"); return x.status === 200 ? x : undefined; }, 20_000);
            const lateToken = (JSON.parse(late.text) as { token: string }).token;
            assert.strictEqual(child.exitCode, null, "the same process: no restart");
            // Its Node gets the attached pool's label from the service, not from the kubelet.
            const lateName = `${REGION}.${lateId}`;
            const lateCreds = await c.nodeCredentials(lateName, lateToken);
            await c.run("kubectl", ["--kubeconfig", lateCreds.kubeconfig, "create", "-f", "-"], { input: JSON.stringify({ apiVersion: "v1", kind: "Node", metadata: { name: lateName },
                spec: { providerID: lateName, taints: [{ key: POOL_PENDING_TAINT, effect: "NoSchedule" }] } }) });
            const lateNode = await c.waitFor("the service to label the attached pool's Node", async () => {
                const n = JSON.parse(await c.kubectl(["get", "node", lateName, "-o", "json"])) as { metadata: { labels?: Record<string, string> } };
                return n.metadata.labels?.[POOL_LABEL] ? n : undefined;
            }, 30_000);
            assert.strictEqual(lateNode.metadata.labels![POOL_LABEL], "elastic");
            // Its Node exists and its heartbeat is fresh (just registered): a second claim of the identity is refused.
            const again = await claim(instanceId, "127.0.0.1");
            assert.strictEqual(again.status, 403);
            assert.strictEqual((JSON.parse(again.text) as { reason: string }).reason, "already-registered");
            assert.match(log, /"event":"admission","admitted":true/);
            assert.match(log, /"event":"csr","action":"approve"/);
        } finally {
            child?.kill();
            await emu.close();
            pki.cleanup();
        }
    });
});
