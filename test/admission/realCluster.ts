// The admission service's view of the real control plane (test/kube), shared by the real-cluster admission tests:
// its RBAC and policies applied, a token of its own ServiceAccount, its challenge key, a test PKI standing in for
// Alibaba's signing certificate, modelled pool members; and what the tests do with them.
import * as assert from "assert";
import * as crypto from "crypto";
import { admit, documentWithAudience, type AdmissionSettings } from "../../src/admission/admit";
import { issueChallenge } from "../../src/admission/challenge";
import { challengeKeys, Kube, KubeClusterView } from "../../src/admission/kube";
import { trustedSigners } from "../../src/admission/pkcs7";
import { admissionRbacObjects } from "../../src/components/admission";
import { useRealCluster } from "../kube/fixture";
import { ModelCloud } from "../../testing/admission/model";
import { makePki, type TestPki } from "../../testing/admission/pki";

export const REGION = "cn-hangzhou";
export const ACCOUNT = "1234567890123456";

export type CsrState = { status?: { conditions?: Array<{ type: string; reason?: string }>; certificate?: string } };

export interface AdmissionCluster {
    rc: ReturnType<typeof useRealCluster>;
    pki: TestPki;
    /** The service's API access (its ServiceAccount token). */
    kube: Kube;
    saToken: string;
    settings: AdmissionSettings;
    cloud: ModelCloud;
    /** kubectl as the bearer of `token` only (an empty kubeconfig: the admin's client certificate would win otherwise). */
    asToken(token: string, args: string[], opts?: { input?: string; allowFail?: boolean }): Promise<{ code: number; stdout: string; stderr: string }>;
    /** An admission token for a member, through the production decision (token lifetime overridable). */
    admitted(id: string, ip: string, tokenTtlSeconds?: number): Promise<string>;
    /** A kubelet client CSR for `cn`, created with `token`; its name. */
    csrWithToken(token: string, cn: string): Promise<string>;
    csrOf(name: string): Promise<CsrState>;
    /** Waits until a write the named policy refuses is refused (the API server enforces a new policy once compiled, ~1 s). */
    policyInForce(policy: string, refusedWrite: () => Promise<{ code: number; stderr: string }>): Promise<void>;
}

/** Registers the mocha hooks (a real cluster, then the service's setup) and returns what the tests use. */
export function useAdmissionCluster(members: Array<[string, string]>): AdmissionCluster {
    const rc = useRealCluster({ netns: false, region: REGION });
    const ac = { rc, cloud: new ModelCloud() } as AdmissionCluster;
    ac.asToken = (token, args, opts = {}) =>
        rc.c.run("kubectl", ["--kubeconfig", rc.c.writeFile("anonymous.conf", "apiVersion: v1\nkind: Config\n"), "--server", rc.c.server,
            "--certificate-authority", rc.c.caFile, "--token", token, ...args], opts);
    ac.admitted = async (id, ip, tokenTtlSeconds = ac.settings.tokenTtlSeconds) => {
        const audience = issueChallenge(ac.settings.challengeKeys[0], ip, 120);
        const doc = JSON.stringify({ "owner-account-id": ACCOUNT, "instance-id": id, "region-id": REGION, "private-ipv4": ip });
        const r = await admit({ document: doc, signature: ac.pki.sign(documentWithAudience(doc, audience)), audience }, ip, { ...ac.settings, tokenTtlSeconds }, ac.cloud,
            new KubeClusterView(ac.kube, "replica-a"));
        assert.strictEqual(r.admitted, true, r.message);
        return r.token!;
    };
    ac.csrWithToken = async (token, cn) => {
        const name = `admission-test-${crypto.randomBytes(4).toString("hex")}`;
        await ac.asToken(token, ["create", "-f", "-"], {
            input: JSON.stringify({
                apiVersion: "certificates.k8s.io/v1", kind: "CertificateSigningRequest", metadata: { name },
                spec: { request: Buffer.from(ac.pki.csr(`/O=system:nodes/CN=${cn}`)).toString("base64"), signerName: "kubernetes.io/kube-apiserver-client-kubelet", usages: ["digital signature", "client auth"] },
            }),
        });
        return name;
    };
    ac.csrOf = async (name) => JSON.parse(await rc.c.kubectl(["get", "csr", name, "-o", "json"])) as CsrState;
    ac.policyInForce = async (policy, refusedWrite) => {
        await rc.c.waitFor(`the policy ${policy} in force`, async () => (await refusedWrite()).stderr.includes(`ValidatingAdmissionPolicy '${policy}'`) || undefined, 30_000);
    };

    before(async function () {
        process.env.AK_ADMISSION_LOG = "off";
        ac.pki = makePki();
        await rc.c.apply(admissionRbacObjects());
        ac.saToken = (await rc.c.kubectl(["create", "token", "alicloud-kubeadm-admission", "-n", "kube-system", "--duration", "1h"])).trim();
        ac.kube = new Kube({ server: rc.c.server, ca: rc.c.caPem, token: () => ac.saToken });
        ac.settings = {
            accountId: ACCOUNT, regionId: REGION, signers: trustedSigners(ac.pki.signerPem), challengeKeys: await challengeKeys(ac.kube), challengeTtlSeconds: 120, tokenTtlSeconds: 600,
        };
        for (const [id, ip] of members) ac.cloud.members.set(id, { instanceId: id, privateIp: ip, source: "pool", pool: "general", state: "Pending" });
    });
    after(() => {
        ac.kube?.close();
        ac.pki?.cleanup();
        delete process.env.AK_ADMISSION_LOG;
    });
    return ac;
}
