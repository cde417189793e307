// Verification of the ECS instance identity signature: a PKCS#7 SignedData (RFC 2315 / RFC 5652) made by
// Alibaba Cloud over the instance identity document. The signer must be one of the configured certificates
// (Alibaba's published signing certificate, docs/admission.md#alibaba-certificate): certificates embedded in
// the message are ignored, as with `openssl cms -verify -nointern -certfile <Alibaba's certificate>`. The
// framing is parsed strictly (der.ts); digests and signatures are node:crypto (OpenSSL). Node built-ins only.
import * as crypto from "crypto";
import { childrenOf, encodedOf, expectTag, octetsOf, oidOf, parseRoot, valueOf } from "./der";

const OID_SIGNED_DATA = "1.2.840.113549.1.7.2";
const OID_DATA = "1.2.840.113549.1.7.1";
const OID_CONTENT_TYPE = "1.2.840.113549.1.9.3";
const OID_MESSAGE_DIGEST = "1.2.840.113549.1.9.4";
/**
 * Digest algorithms accepted. SHA-1 is accepted unless switched off (`admission.allowSha1: false`): the algorithm
 * Alibaba signs with is documented nowhere and no public signature shows it (docs/security.md#sha-1).
 */
const DIGESTS: Record<string, string> = {
    "2.16.840.1.101.3.4.2.1": "sha256", "2.16.840.1.101.3.4.2.2": "sha384", "2.16.840.1.101.3.4.2.3": "sha512", "1.3.14.3.2.26": "sha1",
};
/** Signature algorithms accepted (the digest comes from the SignerInfo's digestAlgorithm). */
const SIGNATURE_ALGORITHMS = new Set([
    "1.2.840.113549.1.1.1", // rsaEncryption
    "1.2.840.113549.1.1.5", "1.2.840.113549.1.1.11", "1.2.840.113549.1.1.12", "1.2.840.113549.1.1.13", // sha{1,256,384,512}WithRSA
    "1.2.840.10045.4.3.2", "1.2.840.10045.4.3.3", "1.2.840.10045.4.3.4", // ecdsa-with-SHA{256,384,512}
]);

/** Why a signature was refused (the message is safe to log: it never contains the document). */
export class SignatureError extends Error {}

/** A trusted signing certificate, parsed once. */
export interface TrustedSigner {
    certificate: crypto.X509Certificate;
    /** DER of the certificate's issuer Name and serialNumber INTEGER value, to match IssuerAndSerialNumber. */
    issuer: Buffer;
    serial: Buffer;
    /** The certificate's subjectKeyIdentifier, to match a CMS signer identified by key id; none without the extension. */
    keyId?: Buffer;
}

const OID_SUBJECT_KEY_IDENTIFIER = "2.5.29.14";

/** The keyIdentifier of a certificate's subjectKeyIdentifier extension (RFC 5280 4.2.1.2), if it has one. */
function subjectKeyIdentifier(der: Buffer, tbs: ReturnType<typeof childrenOf>): Buffer | undefined {
    const extensions = tbs.find((t) => t.tag === 0xa3);
    if (!extensions) return undefined;
    for (const ext of childrenOf(der, expectTag(childrenOf(der, extensions)[0], 0x30, "certificate extensions"))) {
        const fields = childrenOf(der, expectTag(ext, 0x30, "extension"));
        if (oidOf(der, fields[0]) !== OID_SUBJECT_KEY_IDENTIFIER) continue;
        const extnValue = octetsOf(der, fields[fields.length - 1]);
        return Buffer.from(octetsOf(extnValue, expectTag(parseRoot(extnValue), 0x04, "subjectKeyIdentifier")));
    }
    return undefined;
}

/** Parses PEM certificates (one or more, concatenated) into trusted signers. */
export function trustedSigners(pem: string): TrustedSigner[] {
    const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
    if (blocks.length === 0) throw new Error("no PEM certificate found for the instance identity signer");
    return blocks.map((block) => {
        const certificate = new crypto.X509Certificate(block);
        const der = certificate.raw;
        const tbs = childrenOf(der, childrenOf(der, parseRoot(der))[0]);
        const hasVersion = tbs[0].tag === 0xa0;
        const serialTlv = expectTag(tbs[hasVersion ? 1 : 0], 0x02, "certificate serialNumber");
        const issuerTlv = expectTag(tbs[hasVersion ? 3 : 2], 0x30, "certificate issuer");
        return {
            certificate, issuer: Buffer.from(encodedOf(der, issuerTlv)), serial: Buffer.from(der.subarray(serialTlv.start, serialTlv.end)),
            keyId: subjectKeyIdentifier(der, tbs),
        };
    });
}

/** Base64 or PEM text (with or without the `-----BEGIN PKCS7-----` lines) to DER. */
export function pkcs7Der(text: string): Buffer {
    const body = text.replace(/-----(BEGIN|END) [A-Z0-9 ]+-----/g, "").replace(/\s+/g, "");
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(body)) throw new SignatureError("the signature is not Base64/PEM");
    return Buffer.from(body, "base64");
}

/**
 * Verifies a PKCS#7 SignedData and returns the signed content: the encapsulated content when the message
 * carries one, else `detached` (which must then be given). Throws {@link SignatureError} with the reason.
 * @param signature PKCS#7 as PEM or Base64 (what `/latest/dynamic/instance-identity/pkcs7` returns).
 * @param detached The content when the signature is detached.
 * @param signers The trusted signing certificates.
 * @param opts `allowSha1` (default true): accept a SHA-1 digest; `onDigest`: told the digest algorithm of a verified signature.
 */
export function verifySignedData(signature: string, detached: Buffer | undefined, signers: readonly TrustedSigner[],
    opts: { allowSha1?: boolean; onDigest?: (name: string) => void } = {}): Buffer {
    let der: Buffer;
    try {
        der = pkcs7Der(signature);
    } catch (e) {
        throw e instanceof SignatureError ? e : new SignatureError(String(e));
    }
    try {
        return verifyDer(der, detached, signers, opts.allowSha1 !== false, opts.onDigest ?? (() => undefined));
    } catch (e) {
        if (e instanceof SignatureError) throw e;
        throw new SignatureError(`malformed PKCS#7: ${(e as Error).message}`);
    }
}

function verifyDer(der: Buffer, detached: Buffer | undefined, signers: readonly TrustedSigner[], allowSha1: boolean, onDigest: (name: string) => void): Buffer {
    const root = expectTag(parseRoot(der), 0x30, "ContentInfo");
    const [typeTlv, explicit] = childrenOf(der, root);
    if (oidOf(der, typeTlv) !== OID_SIGNED_DATA) throw new SignatureError("not a PKCS#7 SignedData");
    const signedData = expectTag(childrenOf(der, expectTag(explicit, 0xa0, "content"))[0], 0x30, "SignedData");
    const parts = childrenOf(der, signedData);
    expectTag(parts[0], 0x02, "SignedData version");
    expectTag(parts[1], 0x31, "digestAlgorithms");
    const encap = childrenOf(der, expectTag(parts[2], 0x30, "encapContentInfo"));
    const contentType = oidOf(der, encap[0]);
    let content: Buffer;
    if (encap[1]) {
        const inner = childrenOf(der, expectTag(encap[1], 0xa0, "eContent"));
        content = Buffer.from(octetsOf(der, inner[0]));
    } else {
        if (!detached) throw new SignatureError("the signature is detached and no document was given");
        content = detached;
    }
    const signerInfos = childrenOf(der, parts[parts.length - 1].tag === 0x31 ? parts[parts.length - 1] : expectTag(undefined, 0x31, "signerInfos"));
    if (signerInfos.length !== 1) throw new SignatureError(`expected exactly one signer, found ${signerInfos.length}`);
    const si = childrenOf(der, expectTag(signerInfos[0], 0x30, "SignerInfo"));
    // The signer: issuerAndSerialNumber (PKCS#7, CMS v1) or [0] subjectKeyIdentifier (CMS v3, RFC 5652 5.3).
    const sid = si[1];
    let signer: TrustedSigner | undefined;
    if (sid.tag === 0x80) {
        const keyId = valueOf(der, sid);
        signer = signers.find((s) => s.keyId?.equals(keyId));
    } else {
        const [issuerTlv, serialTlv] = childrenOf(der, expectTag(sid, 0x30, "signer identifier"));
        const issuer = encodedOf(der, expectTag(issuerTlv, 0x30, "signer issuer"));
        const serial = der.subarray(expectTag(serialTlv, 0x02, "signer serial").start, serialTlv.end);
        signer = signers.find((s) => s.issuer.equals(issuer) && s.serial.equals(serial));
    }
    if (!signer) throw new SignatureError("the signer is not the configured instance identity certificate (forged, or the certificate was rotated: see docs/admission.md)");
    const digestName = DIGESTS[oidOf(der, childrenOf(der, expectTag(si[2], 0x30, "digestAlgorithm"))[0])];
    if (!digestName) throw new SignatureError("unsupported digest algorithm");
    if (digestName === "sha1" && !allowSha1) throw new SignatureError("the signature's digest is SHA-1, refused (admission.allowSha1 is false)");
    let i = 3;
    let signedBytes: Buffer = content;
    if (si[i].tag === 0xa0) {
        const attrs = si[i++];
        let digest: Buffer | undefined;
        let attrContentType: string | undefined;
        for (const attr of childrenOf(der, attrs)) {
            const [oid, values] = childrenOf(der, expectTag(attr, 0x30, "attribute"));
            const id = oidOf(der, oid);
            const vals = childrenOf(der, expectTag(values, 0x31, "attribute values"));
            if (id === OID_MESSAGE_DIGEST) {
                if (digest || vals.length !== 1) throw new SignatureError("messageDigest attribute must occur once with one value");
                digest = octetsOf(der, vals[0]);
            } else if (id === OID_CONTENT_TYPE) {
                if (attrContentType || vals.length !== 1) throw new SignatureError("contentType attribute must occur once with one value");
                attrContentType = oidOf(der, vals[0]);
            }
        }
        if (!digest) throw new SignatureError("signed attributes without a messageDigest");
        if (attrContentType !== contentType) throw new SignatureError("contentType attribute does not match the content");
        const actual = crypto.createHash(digestName).update(content).digest();
        if (actual.length !== digest.length || !crypto.timingSafeEqual(actual, digest)) {
            throw new SignatureError("the document does not match the signature (message digest differs)");
        }
        // The signature covers the DER of the attributes as a SET OF (tag 0x31), not the [0] IMPLICIT tag.
        const encoded = Buffer.from(encodedOf(der, attrs));
        if (attrs.indefinite) throw new SignatureError("signed attributes must be DER");
        encoded[0] = 0x31;
        signedBytes = encoded;
    } else if (contentType !== OID_DATA) {
        throw new SignatureError("content type other than data without signed attributes");
    }
    const sigAlg = oidOf(der, childrenOf(der, expectTag(si[i++], 0x30, "signatureAlgorithm"))[0]);
    if (!SIGNATURE_ALGORITHMS.has(sigAlg)) throw new SignatureError("unsupported signature algorithm");
    const sig = octetsOf(der, expectTag(si[i], 0x04, "signature"));
    let ok = false;
    try {
        ok = crypto.verify(digestName, signedBytes, signer.certificate.publicKey, sig);
    } catch {
        ok = false;
    }
    if (!ok) throw new SignatureError("the signature does not verify with the configured instance identity certificate (forged or altered)");
    onDigest(digestName);
    return content;
}
