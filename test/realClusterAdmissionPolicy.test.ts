// World: a real control plane built from source (test/kube: etcd, kube-apiserver, controller-manager, scheduler,
// kubeadm, kubectl; KWOK for nodes).
// The admission service's powers on the real control plane (test/kube: upstream kube-apiserver and
// kube-controller-manager; src/components/admission.ts's RBAC and ValidatingAdmissionPolicies; the service's
// approver): a used token's CSR is denied at once, only the service writes its token Leases, a token is single
// use, and the service's credential can neither mint a token that never expires nor touch another component's
// Lease. Asserted from CSR conditions and certificates, Secrets and Leases.
import * as assert from "assert";
import * as crypto from "crypto";
import { ADMITTED_GROUP, PROVIDER_ID_ANNOTATION, TOKEN_LABEL } from "../src/admission/approver";
import { approvePending, Kube, tokenLeaseName } from "../src/admission/kube";
import { CCM_NAMESPACE, CCM_ROLE_RULES } from "../src/components/podNetwork";
import { REGION, useAdmissionCluster } from "./admission/realCluster";

const MASTER = `${REGION}.i-master0`;

describe("the admission service's token Leases and credential on the real control plane", function () {
    this.timeout(180_000);
    const ac = useAdmissionCluster([["i-pool1", "10.0.0.1"], ["i-pool2", "10.0.0.2"]]);
    const { rc, asToken, admitted, csrWithToken, csrOf } = ac;
    /** The subject of the certificate signed for `name`, once the signer has issued it (or why there is none). */
    async function signedSubject(name: string): Promise<string> {
        const approved = ((await csrOf(name)).status?.conditions ?? []).some((c) => c.type === "Approved");
        if (!approved) return "(not approved)";
        const cert = await rc.c.waitFor(`certificate of ${name}`, async () => (await csrOf(name)).status?.certificate, 30_000);
        return new crypto.X509Certificate(Buffer.from(cert, "base64")).subject.replace(/\n/g, ", ");
    }

    /** A credential with the CCM's own RBAC from this repo: `create` on every Lease of kube-system (client-go leader election needs it). */
    async function ccmCredential(): Promise<string> {
        const ccm = "policy-test-ccm";
        await rc.c.apply([
            { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: ccm, namespace: CCM_NAMESPACE } },
            { apiVersion: "rbac.authorization.k8s.io/v1", kind: "Role", metadata: { name: ccm, namespace: CCM_NAMESPACE }, rules: CCM_ROLE_RULES },
            { apiVersion: "rbac.authorization.k8s.io/v1", kind: "RoleBinding", metadata: { name: ccm, namespace: CCM_NAMESPACE },
                roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: ccm }, subjects: [{ kind: "ServiceAccount", name: ccm, namespace: CCM_NAMESPACE }] },
        ]);
        return (await rc.c.kubectl(["create", "token", ccm, "-n", CCM_NAMESPACE, "--duration", "1h"])).trim();
    }
    /** A pool node's admission token, and a second CSR for a master's name made with it while the approver's pass decides its first. */
    async function racedCsr(ttlSeconds?: number): Promise<{ tokenId: string; own: string; evil: string }> {
        const token = await admitted("i-pool1", "10.0.0.1", ttlSeconds);
        const own = await csrWithToken(token, `system:node:${REGION}.i-pool1`);
        let evil = "";
        const racing = {
            request: async (method: string, path: string, body?: unknown) => {
                const r = await ac.kube.request(method, path, body);
                if (!evil && method === "GET" && path.startsWith("/apis/certificates.k8s.io/v1/certificatesigningrequests?")) evil = await csrWithToken(token, `system:node:${MASTER}`);
                return r;
            },
            close: () => undefined,
        } as unknown as Kube;
        const first = await approvePending(racing, () => undefined);
        assert.strictEqual(first[own], "approve");
        assert.ok(evil && first[evil] === undefined, "the second CSR was made after the pass listed CSRs");
        return { tokenId: token.split(".")[0], own, evil };
    }

    it("a CSR of a used admission token is denied at once, not left pending until its token's Lease is swept (when a Lease made by the CCM's account could map it)", async () => {
        const { evil } = await racedCsr(3);
        assert.deepStrictEqual((await approvePending(ac.kube, () => undefined))[evil], "deny");
        const csr = await csrOf(evil);
        assert.ok((csr.status?.conditions ?? []).some((c) => c.type === "Denied"), "decided: nothing later can approve it");
        assert.strictEqual(await signedSubject(evil), "(not approved)");
    });

    it("a Lease made by another kube-system principal (the CCM's service account) cannot name a token's node: only the service writes its Leases", async () => {
        const ccmToken = await ccmCredential();
        const leaseFor = (name: string, providerId?: string) => JSON.stringify({
            apiVersion: "coordination.k8s.io/v1", kind: "Lease",
            metadata: { name, namespace: "kube-system", labels: { [TOKEN_LABEL]: "true" }, ...(providerId ? { annotations: { [PROVIDER_ID_ANNOTATION]: providerId } } : {}) },
            spec: { holderIdentity: "x", leaseDurationSeconds: 600 },
        });
        // The API server enforces a new policy once it has compiled it (about a second): a fresh token id each try.
        await ac.policyInForce("alicloud-kubeadm-admission-leases",
            () => asToken(ccmToken, ["create", "-f", "-"], { allowFail: true, input: leaseFor(tokenLeaseName(crypto.randomBytes(3).toString("hex")), MASTER) }));
        // Its own leader election is untouched by the policy.
        const own = await asToken(ccmToken, ["create", "-f", "-"], { allowFail: true, input: leaseFor(`policy-test-ccm-${crypto.randomBytes(3).toString("hex")}`) });
        assert.strictEqual(own.code, 0, own.stderr);
    });

    it("an admission token is single use: two CSRs for its node listed in one pass get one certificate, not two", async () => {
        const token = await admitted("i-pool2", "10.0.0.2");
        const a = await csrWithToken(token, `system:node:${REGION}.i-pool2`);
        const b = await csrWithToken(token, `system:node:${REGION}.i-pool2`);
        await approvePending(ac.kube, () => undefined);
        const approved = [];
        for (const n of [a, b]) if (((await csrOf(n)).status?.conditions ?? []).some((c) => c.type === "Approved")) approved.push(n);
        assert.ok(approved.length <= 1, `one admission token got ${approved.length} approved kubelet client certificates: ${approved.join(", ")}`);
    });

    const saRun = (args: string[], input?: string) => asToken(ac.saToken, args, { allowFail: true, input });
    async function policyInForce(): Promise<void> {
        await rc.c.waitFor("the Secret policy in force", async () => (await saRun(["create", "-f", "-"], JSON.stringify({ apiVersion: "v1", kind: "Secret", type: "Opaque",
            metadata: { name: `probe-${crypto.randomBytes(3).toString("hex")}`, namespace: "kube-system" } }))).stderr.includes("alicloud-kubeadm-admission-secrets") || undefined, 30_000);
    }

    it("the service's credential cannot create a bootstrap token that never expires (the policy does not look at the expiration)", async () => {
        await policyInForce();
        const id = crypto.randomBytes(3).toString("hex");
        // Labelled, named, typed and grouped as the policy wants: only the expiration is missing.
        await saRun(["create", "-f", "-"], JSON.stringify({
            apiVersion: "v1", kind: "Secret", type: "bootstrap.kubernetes.io/token", metadata: { name: `bootstrap-token-${id}`, namespace: "kube-system", labels: { [TOKEN_LABEL]: "true" } },
            stringData: { "token-id": id, "token-secret": "0123456789abcdef", "usage-bootstrap-authentication": "true", "auth-extra-groups": ADMITTED_GROUP },
        }));
        const exists = (await rc.c.kubectl(["get", "secret", "-n", "kube-system", `bootstrap-token-${id}`, "--ignore-not-found", "-o", "name"])).trim() !== "";
        assert.strictEqual(exists, false, `bootstrap-token-${id}: a token of the admitted group without expiration was created by the service's account`);
    });

    it("the service's credential cannot delete another component's Lease in kube-system (kube-controller-manager's leader election)", async () => {
        const uid = async () => (await rc.c.kubectl(["get", "lease", "-n", "kube-system", "kube-controller-manager", "--ignore-not-found", "-o", "jsonpath={.metadata.uid}"])).trim();
        const before = await rc.c.waitFor("kube-controller-manager's Lease", async () => (await uid()) || undefined, 60_000);
        await saRun(["delete", "lease", "-n", "kube-system", "kube-controller-manager", "--wait=false"]);
        // Deleted, the leader recreates it (a new uid): the uid tells whether the delete went through.
        await new Promise((r) => setTimeout(r, 1000));
        assert.strictEqual(await uid(), before, "the service account deleted kube-controller-manager's Lease (it may then create it with a holder of its own)");
    });

    // Last in this describe: a lost Lease makes the controller-manager exit (it is restarted by nothing here).
    it("the service's credential cannot take over kube-controller-manager's leader-election Lease (update, granted for marking tokens used)", async () => {
        const lease = JSON.parse(await rc.c.kubectl(["get", "lease", "-n", "kube-system", "kube-controller-manager", "-o", "json"])) as { spec: Record<string, unknown> };
        lease.spec.holderIdentity = "policy-test-attacker";
        lease.spec.leaseDurationSeconds = 1_000_000;
        await saRun(["replace", "-f", "-"], JSON.stringify(lease));
        const holder = (await rc.c.kubectl(["get", "lease", "-n", "kube-system", "kube-controller-manager", "-o", "jsonpath={.spec.holderIdentity}"])).trim();
        assert.notStrictEqual(holder, "policy-test-attacker", "the service account holds kube-controller-manager's leadership (for 11 days): no controller runs, no CSR is signed");
    });
});
