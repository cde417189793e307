// Rules of node admission by cloud identity (docs/admission.md): the identity signing certificate the service
// trusts, and the ECS tag that opens the one-line manual path.
import * as crypto from "crypto";

/** Why `pem` is not one or more PEM certificates, or undefined. */
export function identityCertificateProblem(pem: string): string | undefined {
    const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
    if (blocks.length === 0) return "must be PEM (-----BEGIN CERTIFICATE-----): Alibaba's instance identity certificate, see docs/admission.md";
    for (const b of blocks) {
        try {
            new crypto.X509Certificate(b);
        } catch (e) {
            return `a certificate does not parse: ${(e as Error).message}`;
        }
    }
    return undefined;
}

/** An ECS tag as `key=value`: a key of 1–128 characters without `=` or spaces, a value of at most 128 without spaces. */
export const JOIN_TAG_PATTERN = /^[^=\s]{1,128}=[^\s]{0,128}$/;

/** Why `joinTag` is not an ECS tag `key=value`, or undefined. */
export function joinTagProblem(joinTag: string): string | undefined {
    return JOIN_TAG_PATTERN.test(joinTag) ? undefined : `"${joinTag}" must be key=value (an ECS tag; e.g. alicloud-kubeadm/join=dev)`;
}
