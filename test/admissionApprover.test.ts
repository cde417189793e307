// The CSR approver of the admission service (src/admission/approver.ts, kube.ts): what it approves is what the
// signer signs, and a pass costs one API call when nothing is left to decide. World: a CSR from openssl read by
// the approver and by openssl (the PEM reader kube-apiserver and the signer share); a stand-in API server.
import * as assert from "assert";
import { execFileSync } from "child_process";
import { ADMITTED_GROUP, csrVerdict, KUBELET_CLIENT_SIGNER, type Csr } from "../src/admission/approver";
import { approvePending, Kube, KubeError } from "../src/admission/kube";
import { makePki, type TestPki } from "../testing/admission/pki";

const REGION = "cn-hangzhou";

describe("the admission service's CSR approver", function () {
    this.timeout(120_000);
    let pki: TestPki;

    before(() => {
        process.env.AK_ADMISSION_LOG = "off";
        pki = makePki();
    });
    after(() => {
        delete process.env.AK_ADMISSION_LOG;
        pki?.cleanup();
    });

    /** The subject a standard PEM reader (openssl; Go's pem.Decode in kube-apiserver/kube-controller-manager alike) sees in `text`. */
    const opensslSubject = (text: string): string => execFileSync("openssl", ["req", "-noout", "-subject", "-nameopt", "RFC2253"], { input: text }).toString().trim();

    it("refuses a CSR whose signed subject is not the one it read: bare Base64 of the node's own request before a PEM block for a master's name", () => {
        const own = `system:node:${REGION}.i-pool1`;
        const master = `system:node:${REGION}.i-master0`;
        // The admitted node's own CSR, as bare Base64 ending in '=' padding (Node's decoder stops there)...
        let ownBody = "";
        for (let i = 0; i < 20 && !ownBody.endsWith("="); i++) {
            ownBody = pki.csr(`/O=system:nodes/CN=${own}`).replace(/-----(BEGIN|END) [A-Z ]+-----/g, "").replace(/\s+/g, "");
        }
        assert.ok(ownBody.endsWith("="), "a CSR whose DER length is not a multiple of 3 (two in three are)");
        // ...then a proper PEM block for the master's name. PEM readers skip text before "-----BEGIN".
        const request = `${ownBody}\n${pki.csr(`/O=system:nodes/CN=${master}`)}`;
        assert.match(opensslSubject(request), new RegExp(`CN=${master}`), "what gets signed: the master's name");
        const tokenId = "abcdef";
        const csr: Csr = {
            metadata: { name: "csr-smuggled" },
            spec: { request, signerName: KUBELET_CLIENT_SIGNER, username: `system:bootstrap:${tokenId}`, groups: ["system:bootstrappers", ADMITTED_GROUP, "system:authenticated"],
                usages: ["digital signature", "client auth"] },
        };
        const v = csrVerdict(csr, (id) => (id === tokenId ? `${REGION}.i-pool1` : undefined));
        assert.notStrictEqual(v.action, "approve", `approved a CSR whose signed subject is ${master}: ${v.why}`);
    });

    it("a pass over CSRs that are all decided makes one API call (no token Secret read per CSR)", async () => {
        // A fake API server holding 50 CSRs that are already approved (they stay listed for an hour after
        // approval; kubeadm's own tokens' CSRs too). Nothing is left to decide, so one list call is all a pass needs.
        const csrs = Array.from({ length: 50 }, (_, i) => ({
            metadata: { name: `csr-${i}` },
            spec: { request: "", signerName: KUBELET_CLIENT_SIGNER, username: `system:bootstrap:${String(i).padStart(6, "a")}`, groups: ["system:bootstrappers"], usages: ["client auth"] },
            status: { conditions: [{ type: "Approved" }] },
        }));
        const calls: string[] = [];
        class FakeKube extends Kube {
            override request<T = Record<string, unknown>>(method: string, p: string): Promise<T> {
                calls.push(`${method} ${p.split("?")[0]}`);
                if (p.startsWith("/apis/certificates.k8s.io/v1/certificatesigningrequests?")) return Promise.resolve({ items: csrs } as T);
                return Promise.reject(new KubeError(404, "not found"));
            }
        }
        const kube = new FakeKube({ server: "https://127.0.0.1:1", ca: "" });
        try {
            assert.deepStrictEqual(await approvePending(kube, () => undefined), {});
            assert.strictEqual(calls.length, 1, `one pass over 50 decided CSRs made ${calls.length} API calls`);
        } finally {
            kube.close();
        }
    });
});
