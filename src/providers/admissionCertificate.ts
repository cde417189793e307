/**
 * AdmissionCertificate: the admission service's own TLS identity. An ECDSA P-256 key made here and a certificate
 * for the masters' private IPs, self-signed with that key; nodes pin its public key (`sha256:<hex>` of the
 * SubjectPublicKeyInfo, the form of kubeadm's CA pins) and trust nothing else when they talk to the service. So
 * the service serves TLS without the API server's key, and no CA is involved: whoever holds the masters' PKI gains
 * nothing here, and this key opens nothing but the admission endpoint.
 *
 * The key is made once and kept (a secret output); a change of the masters' addresses, or a certificate with less
 * than a year left, re-signs the certificate with the same key: the pin in every userdata stays valid. Nothing
 * lives in the cloud: create and update compute, delete has nothing to do. Node built-ins only.
 */
import * as pulumi from "@pulumi/pulumi";
import { dynamicResourceProps, type ResourceArgs } from "./access";
import { diffInputs, inputDiff } from "./diff";
import { withCarriedOutputs } from "./partialUpdate";
import { alwaysAnswered } from "./answered";

/** Bump when the provider's behaviour changes: Pulumi cannot see code changes of a dynamic provider. */
export const ADMISSION_CERTIFICATE_PROVIDER_VERSION = "1";

/** The outputs of an AdmissionCertificate that are secrets: the private key. */
export const ADMISSION_CERTIFICATE_SECRET_OUTPUTS = ["keyPem"] as const;

/** Certificate lifetime, days; re-signed at the first `pulumi up` with less than {@link RENEW_BEFORE_DAYS} left. */
export const CERTIFICATE_DAYS = 5 * 365;
const RENEW_BEFORE_DAYS = 365;
const DAY_MS = 86_400_000;

export interface AdmissionCertificateInputs {
    /** IPv4 addresses the certificate is for: every master's private IP (the service listens there). Required. */
    addresses: string[];
    /** Changes when the provider's code changes. */
    providerVersion?: string;
}

/** The arguments of {@link AdmissionCertificate}. */
export type AdmissionCertificateArgs = ResourceArgs<AdmissionCertificateInputs>;

/** New addresses (the masters changed) re-sign the certificate with the same key; nothing replaces it. */
const ADMISSION_CERTIFICATE_DIFF = inputDiff<AdmissionCertificateInputs>()({ replace: [], update: ["addresses", "providerVersion"], ignore: [] });

export interface AdmissionCertificateOutputs extends AdmissionCertificateInputs {
    /** The certificate (PEM), public. */
    certPem: string;
    /** The private key (PKCS#8 PEM), secret. */
    keyPem: string;
    /** `sha256:<hex>` of the key's SubjectPublicKeyInfo: what nodes pin. */
    pin: string;
    /** The certificate's notAfter, ISO 8601. */
    notAfter: string;
}

// A minimal DER writer: only what one certificate needs.
function der(tag: number, ...parts: Buffer[]): Buffer {
    const body = Buffer.concat(parts);
    const n = body.length;
    const length = n < 0x80 ? Buffer.from([n]) : Buffer.from([0x80 | (n > 0xff ? 2 : 1), ...(n > 0xff ? [n >> 8, n & 0xff] : [n])]);
    return Buffer.concat([Buffer.from([tag]), length, body]);
}
const seq = (...p: Buffer[]): Buffer => der(0x30, ...p);
function oid(dotted: string): Buffer {
    const [a, b, ...rest] = dotted.split(".").map(Number);
    const bytes = [40 * a + b];
    for (const v of rest) {
        const chunk = [v & 0x7f];
        for (let x = v >> 7; x > 0; x >>= 7) chunk.unshift(0x80 | (x & 0x7f));
        bytes.push(...chunk);
    }
    return der(0x06, Buffer.from(bytes));
}
/** UTCTime (RFC 5280: dates before 2050). */
const utcTime = (ms: number): Buffer => der(0x17, Buffer.from(new Date(ms).toISOString().replace(/^\d{2}|[-:T]|\.\d{3}/g, "")));
const extension = (id: string, critical: boolean, value: Buffer): Buffer => seq(oid(id), ...(critical ? [der(0x01, Buffer.from([0xff]))] : []), der(0x04, value));

/** `sha256:<hex>` of a public key's SubjectPublicKeyInfo (kubeadm's pin form). */
export function publicKeyPin(keyOrCert: string): string {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const crypto = require("crypto") as typeof import("crypto");
    const key = keyOrCert.includes("CERTIFICATE") ? new crypto.X509Certificate(keyOrCert).publicKey : crypto.createPublicKey(keyOrCert);
    return `sha256:${crypto.createHash("sha256").update(key.export({ type: "spki", format: "der" })).digest("hex")}`;
}

/**
 * A certificate for `addresses` (IP SANs), self-signed with `keyPem` (EC P-256): CN alicloud-kubeadm-admission,
 * serverAuth, not a CA, valid from a minute ago for {@link CERTIFICATE_DAYS} days.
 */
export function signAdmissionCertificate(keyPem: string, addresses: string[], now = Date.now()): { certPem: string; notAfter: string } {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const crypto = require("crypto") as typeof import("crypto");
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const net = require("net") as typeof import("net");
    const bad = addresses.filter((a) => net.isIPv4(a) === false);
    if (addresses.length === 0 || bad.length > 0) throw new Error(`admission certificate: addresses must be IPv4 addresses (got ${JSON.stringify(bad.length ? bad : addresses)})`);
    const key = crypto.createPrivateKey(keyPem);
    const spki = crypto.createPublicKey(key).export({ type: "spki", format: "der" });
    const ecdsaWithSha256 = seq(oid("1.2.840.10045.4.3.2"));
    const name = seq(der(0x31, seq(oid("2.5.4.3"), der(0x0c, Buffer.from("alicloud-kubeadm-admission")))));
    const serial = crypto.randomBytes(16);
    serial[0] = (serial[0] & 0x3f) | 0x40; // positive, and its first byte not 0: DER wants the shortest form (a 0 byte before one below 0x80 is "illegal padding" to OpenSSL)
    const notAfter = now + CERTIFICATE_DAYS * DAY_MS;
    const tbs = seq(
        der(0xa0, der(0x02, Buffer.from([2]))), // v3
        der(0x02, serial),
        ecdsaWithSha256,
        name,
        seq(utcTime(now - 60_000), utcTime(notAfter)),
        name,
        spki,
        der(0xa3, seq(
            extension("2.5.29.19", true, seq()), // basicConstraints: not a CA
            extension("2.5.29.15", true, der(0x03, Buffer.from([7, 0x80]))), // keyUsage: digitalSignature
            extension("2.5.29.37", false, seq(oid("1.3.6.1.5.5.7.3.1"))), // extKeyUsage: serverAuth
            extension("2.5.29.17", false, seq(...addresses.map((a) => der(0x87, Buffer.from(a.split(".").map(Number)))))), // subjectAltName: IP addresses
            extension("2.5.29.14", false, der(0x04, crypto.createHash("sha1").update(spki).digest())), // subjectKeyIdentifier
        )),
    );
    const cert = seq(tbs, ecdsaWithSha256, der(0x03, Buffer.from([0]), crypto.sign("sha256", tbs, key)));
    const b64 = cert.toString("base64").replace(/.{1,64}/g, "$&\n");
    return { certPem: `-----BEGIN CERTIFICATE-----\n${b64}-----END CERTIFICATE-----\n`, notAfter: new Date(notAfter).toISOString() };
}

/** A fresh EC P-256 key (PKCS#8 PEM). */
export function newAdmissionKey(): string {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const crypto = require("crypto") as typeof import("crypto");
    return crypto.generateKeyPairSync("ec", { namedCurve: "prime256v1" }).privateKey.export({ type: "pkcs8", format: "pem" }).toString();
}

function issue(keyPem: string, inputs: AdmissionCertificateInputs): AdmissionCertificateOutputs {
    const { certPem, notAfter } = signAdmissionCertificate(keyPem, inputs.addresses);
    return { ...inputs, certPem, keyPem, pin: publicKeyPin(keyPem), notAfter };
}

/** OpenSSL (through node:crypto) reads the certificate. */
function parses(certPem: string): boolean {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const crypto = require("crypto") as typeof import("crypto");
    try {
        new crypto.X509Certificate(certPem);
        return true;
    } catch {
        return false;
    }
}

/** The addresses in one order: the same masters listed otherwise are no change. */
const sorted = (i: Partial<AdmissionCertificateInputs>): Partial<AdmissionCertificateInputs> => ({ ...i, addresses: [...(i.addresses ?? [])].sort() });

export const admissionCertificateProvider: pulumi.dynamic.ResourceProvider = withCarriedOutputs({
    async create(inputs: AdmissionCertificateInputs) {
        return { id: "admission-certificate", outs: issue(newAdmissionKey(), inputs) };
    },
    async diff(_id: string, olds: AdmissionCertificateOutputs, news: AdmissionCertificateInputs) {
        // A certificate with less than a year left is re-signed too (the same key), and so is one that OpenSSL cannot
        // read: earlier versions gave about 1 in 256 certificates a serial with a leading 0 byte (not DER), which
        // the admission service and the nodes' curl refuse.
        const expiring = !(Date.parse(olds.notAfter) - Date.now() > RENEW_BEFORE_DAYS * DAY_MS);
        return { changes: diffInputs(ADMISSION_CERTIFICATE_DIFF, sorted(olds), sorted(news)).changes || expiring || !parses(olds.certPem), replaces: [] };
    },
    async update(_id: string, olds: AdmissionCertificateOutputs, news: AdmissionCertificateInputs) {
        // The same key: the pin nodes carry stays valid.
        return { outs: issue(olds.keyPem, news) };
    },
});

/** The admission service's key and certificate; `pin` goes into every joining node's userdata. */
export class AdmissionCertificate extends pulumi.dynamic.Resource {
    /** The certificate (PEM). */
    declare readonly certPem: pulumi.Output<string>;
    /** The private key (PEM, secret). */
    declare readonly keyPem: pulumi.Output<string>;
    /** `sha256:<hex>` of the public key: nodes trust the service only with this key. */
    declare readonly pin: pulumi.Output<string>;
    declare readonly notAfter: pulumi.Output<string>;

    constructor(name: string, args: AdmissionCertificateArgs, opts?: pulumi.CustomResourceOptions) {
        super(admissionCertificateProvider, name, ...dynamicResourceProps(["certPem", "keyPem", "pin", "notAfter"], ADMISSION_CERTIFICATE_PROVIDER_VERSION, args,
            ADMISSION_CERTIFICATE_SECRET_OUTPUTS, opts));
        alwaysAnswered(this, ["certPem", "keyPem", "pin", "notAfter"]);
    }
}
