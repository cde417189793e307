// The CSR approver: kubeadm's blanket auto-approval covers only `system:bootstrappers:kubeadm:default-node-token`;
// tokens issued by admission are in ADMITTED_GROUP, so their CSRs wait for this approver. It approves a
// kubelet client CSR only when it came from an admission token and names exactly that token's node:
// CN `system:node:<provider id>`, O `system:nodes`, client-auth usages. Anything else from an admission
// token is denied. The token is deleted on its first CSR. Node built-ins only.
import { childrenOf, expectTag, oidOf, parseRoot, stringOf } from "./der";

/** The group of admission-issued bootstrap tokens (`auth-extra-groups`); kubeadm's auto-approval does not cover it. */
export const ADMITTED_GROUP = "system:bootstrappers:alicloud-kubeadm:admitted";
/** Label of admission-issued token Secrets and of the Leases naming each token's node (annotation {@link PROVIDER_ID_ANNOTATION}). */
export const TOKEN_LABEL = "alicloud-kubeadm/admission-token";
export const PROVIDER_ID_ANNOTATION = "alicloud-kubeadm/provider-id";
export const KUBELET_CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client-kubelet";

/** The parts of a CertificateSigningRequest the approver reads. */
export interface Csr {
    metadata: { name: string };
    spec: { request: string; signerName: string; username?: string; groups?: string[]; usages?: string[] };
    status?: { conditions?: Array<{ type: string }> };
}

/**
 * The DER of a CSR's `request`, read strictly: exactly one `CERTIFICATE REQUEST` PEM block and nothing before
 * or after it but whitespace, no PEM headers, the standard Base64 alphabet with `=` only at the end, and a DER
 * that is the whole decoded block. The API server and the signer read the first PEM block of the request and
 * skip anything around it; a request this approver read differently from them (text before the block, a second
 * block) could have it approve one name while another is signed, so such a request is refused.
 */
export function csrDer(request: string): Buffer {
    const m = /^\s*-----BEGIN CERTIFICATE REQUEST-----\r?\n([A-Za-z0-9+/=\r\n]+)-----END CERTIFICATE REQUEST-----\s*$/.exec(request);
    if (!m) throw new Error("the request is not exactly one PEM CERTIFICATE REQUEST block");
    const body = m[1].replace(/\r?\n/g, "");
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(body) || body.length % 4 !== 0) throw new Error("the request's Base64 is malformed");
    const der = Buffer.from(body, "base64");
    parseRoot(der); // one DER structure, no trailing bytes
    return der;
}

/** Subject common name and organizations of a PEM PKCS#10 request ({@link csrDer}). */
export function csrSubject(pem: string): { commonName?: string; organizations: string[] } {
    const der = csrDer(pem);
    const info = childrenOf(der, expectTag(childrenOf(der, expectTag(parseRoot(der), 0x30, "CertificationRequest"))[0], 0x30, "CertificationRequestInfo"));
    const subject = expectTag(info[1], 0x30, "subject");
    let commonName: string | undefined;
    const organizations: string[] = [];
    for (const rdn of childrenOf(der, subject)) {
        for (const atv of childrenOf(der, expectTag(rdn, 0x31, "RDN"))) {
            const [oid, value] = childrenOf(der, atv);
            const id = oidOf(der, oid);
            if (id === "2.5.4.3") {
                if (commonName !== undefined) throw new Error("more than one common name");
                commonName = stringOf(der, value);
            } else if (id === "2.5.4.10") {
                organizations.push(stringOf(der, value));
            }
        }
    }
    return { commonName, organizations };
}

export type CsrVerdict =
    | { action: "ignore"; why: string }
    | { action: "approve" | "deny"; tokenId: string; providerId?: string; why: string };

/**
 * What to do with a CSR. `tokenProviderId(id)` returns the provider id of an admission token, or undefined
 * when `id` is no admission token (then the CSR is none of the approver's business).
 */
export function csrVerdict(csr: Csr, tokenProviderId: (tokenId: string) => string | undefined): CsrVerdict {
    if ((csr.status?.conditions ?? []).some((c) => c.type === "Approved" || c.type === "Denied" || c.type === "Failed")) return { action: "ignore", why: "already decided" };
    const m = /^system:bootstrap:([a-z0-9]{6})$/.exec(csr.spec.username ?? "");
    if (!m) return { action: "ignore", why: "not from a bootstrap token" };
    const tokenId = m[1];
    if (!(csr.spec.groups ?? []).includes(ADMITTED_GROUP)) return { action: "ignore", why: "not from an admission token" };
    const providerId = tokenProviderId(tokenId);
    const deny = (why: string): CsrVerdict => ({ action: "deny", tokenId, providerId, why });
    // A token of the admitted group whose node is unknown, or that was used: never left pending for later.
    if (providerId === undefined) return deny(`token ${tokenId} was used already or is unknown: one CSR per admission token`);
    if (csr.spec.signerName !== KUBELET_CLIENT_SIGNER) return deny(`signer ${csr.spec.signerName} is not ${KUBELET_CLIENT_SIGNER}`);
    let subject: ReturnType<typeof csrSubject>;
    try {
        subject = csrSubject(csr.spec.request);
    } catch (e) {
        return deny(`unreadable request: ${(e as Error).message}`);
    }
    const expected = `system:node:${providerId}`;
    if (subject.commonName !== expected) return deny(`common name ${subject.commonName ?? "(none)"} is not ${expected}, the node this token was issued to`);
    if (subject.organizations.length !== 1 || subject.organizations[0] !== "system:nodes") return deny(`organizations ${JSON.stringify(subject.organizations)} are not ["system:nodes"]`);
    const usages = new Set(csr.spec.usages ?? []);
    const allowed = new Set(["digital signature", "key encipherment", "client auth"]);
    if (!usages.has("client auth") || [...usages].some((u) => !allowed.has(u))) return deny(`usages ${JSON.stringify([...usages])} are not a kubelet client's`);
    return { action: "approve", tokenId, providerId, why: `kubelet client certificate of ${providerId}` };
}
