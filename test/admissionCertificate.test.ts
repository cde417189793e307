// World: the AdmissionCertificate dynamic provider's create/diff/update run in-process (it touches no cloud); the
// certificate it makes is checked with node:crypto and with openssl as a TLS client would (server purpose, the
// masters' addresses). What nodes pin — the key — survives every update.
import * as assert from "assert";
import { execFileSync } from "child_process";
import * as crypto from "crypto";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import {
    ADMISSION_CERTIFICATE_PROVIDER_VERSION, admissionCertificateProvider, CERTIFICATE_DAYS, publicKeyPin, signAdmissionCertificate, type AdmissionCertificateOutputs,
} from "../src/providers/admissionCertificate";

const DAY = 86_400_000;

describe("AdmissionCertificate: the admission service's own key and certificate", () => {
    const inputs = (addresses: string[]) => ({ addresses, providerVersion: ADMISSION_CERTIFICATE_PROVIDER_VERSION });
    const create = async (addresses: string[]) => (await admissionCertificateProvider.create!(inputs(addresses))).outs as AdmissionCertificateOutputs;

    it("a certificate for exactly the masters' addresses, for serving TLS only, self-signed with its own key, whose pin is that key's", async () => {
        const outs = await create(["192.168.0.10", "192.168.16.11"]);
        const cert = new crypto.X509Certificate(outs.certPem);
        assert.strictEqual(cert.subjectAltName, "IP Address:192.168.0.10, IP Address:192.168.16.11");
        assert.ok(cert.checkIP("192.168.16.11") && !cert.checkIP("192.168.0.11"));
        assert.strictEqual(cert.ca, false);
        assert.deepStrictEqual(cert.keyUsage, ["1.3.6.1.5.5.7.3.1"], "serverAuth");
        assert.ok(cert.verify(crypto.createPublicKey(outs.keyPem)) && cert.checkPrivateKey(crypto.createPrivateKey(outs.keyPem)));
        assert.strictEqual(outs.pin, publicKeyPin(outs.certPem));
        assert.match(outs.pin, /^sha256:[0-9a-f]{64}$/);
        assert.ok(Math.abs(Date.parse(cert.validTo) - (Date.now() + CERTIFICATE_DAYS * DAY)) < 120_000);
        // openssl, as curl on a node uses it: the certificate as its own trust anchor, for a TLS server.
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ak-admission-cert-"));
        try {
            fs.writeFileSync(path.join(dir, "c.pem"), outs.certPem);
            execFileSync("openssl", ["verify", "-CAfile", "c.pem", "-purpose", "sslserver", "-verify_ip", "192.168.0.10", "c.pem"], { cwd: dir, stdio: "pipe" });
            assert.throws(() => execFileSync("openssl", ["verify", "-CAfile", "c.pem", "-verify_ip", "10.1.1.1", "c.pem"], { cwd: dir, stdio: "pipe" }), "another address");
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });

    it("new masters' addresses re-sign the certificate with the same key: the pin in every userdata stays valid", async () => {
        const olds = await create(["192.168.0.10"]);
        const diff = await admissionCertificateProvider.diff!("x", olds, inputs(["192.168.0.10", "192.168.0.12"]));
        assert.deepStrictEqual([diff.changes, diff.replaces], [true, []]);
        const news = (await admissionCertificateProvider.update!("x", olds, inputs(["192.168.0.10", "192.168.0.12"]))).outs as AdmissionCertificateOutputs;
        assert.strictEqual(news.keyPem, olds.keyPem);
        assert.strictEqual(news.pin, olds.pin);
        assert.notStrictEqual(news.certPem, olds.certPem);
        assert.ok(new crypto.X509Certificate(news.certPem).checkIP("192.168.0.12"));
        const same = await admissionCertificateProvider.diff!("x", news, inputs(["192.168.0.12", "192.168.0.10"]));
        assert.strictEqual(same.changes, false, "the same addresses in another order change nothing");
    });

    it("a certificate with less than a year left is re-signed at the next pulumi up; two keys made are two pins", async () => {
        const olds = await create(["192.168.0.10"]);
        const expiring = { ...olds, notAfter: new Date(Date.now() + 300 * DAY).toISOString() };
        assert.strictEqual((await admissionCertificateProvider.diff!("x", expiring, inputs(["192.168.0.10"]))).changes, true);
        assert.notStrictEqual((await create(["192.168.0.10"])).pin, olds.pin);
    });

    it("every certificate it signs parses: 2000 signed with one key, each read by OpenSSL (a random serial is DER in its shortest form)", () => {
        const key = crypto.generateKeyPairSync("ec", { namedCurve: "prime256v1" }).privateKey.export({ type: "pkcs8", format: "pem" }).toString();
        const unparseable: string[] = [];
        for (let k = 0; k < 2000; k++) {
            const { certPem } = signAdmissionCertificate(key, ["192.168.0.10"]);
            try { new crypto.X509Certificate(certPem); } catch (e) { unparseable.push(String(e)); }
        }
        assert.deepStrictEqual(unparseable, []);
    });

    it("a stored certificate OpenSSL cannot read (a serial with a leading 0 byte, as earlier versions signed 1 in 256) is re-signed at the next pulumi up with the same key", async () => {
        const olds = await create(["192.168.0.10"]);
        const padded = withPaddedSerial(olds.certPem);
        assert.throws(() => new crypto.X509Certificate(padded), "the padded serial is refused");
        const stored = { ...olds, certPem: padded };
        assert.strictEqual((await admissionCertificateProvider.diff!("x", stored, inputs(["192.168.0.10"]))).changes, true);
        const news = (await admissionCertificateProvider.update!("x", stored, inputs(["192.168.0.10"]))).outs as AdmissionCertificateOutputs;
        assert.ok(new crypto.X509Certificate(news.certPem).checkIP("192.168.0.10"));
        assert.strictEqual(news.pin, olds.pin, "the same key: the nodes' pin stays valid");
        assert.strictEqual((await admissionCertificateProvider.diff!("x", olds, inputs(["192.168.0.10"]))).changes, false, "a readable one is left alone");
    });

    it("refuses anything but IPv4 addresses", () => {
        const key = crypto.generateKeyPairSync("ec", { namedCurve: "prime256v1" }).privateKey.export({ type: "pkcs8", format: "pem" }).toString();
        for (const bad of [[], ["master-0"], ["192.168.0.300"], ["::1"]]) assert.throws(() => signAdmissionCertificate(key, bad), /IPv4/);
    });
});

/** DER header: tag, length, and where the content starts. */
function header(b: Buffer, at: number): { len: number; start: number } {
    const first = b[at + 1];
    if (first < 0x80) return { len: first, start: at + 2 };
    const n = first & 0x7f;
    return { len: b.subarray(at + 2, at + 2 + n).readUIntBE(0, n), start: at + 2 + n };
}

/** A DER length of `len` (short form, or long form in two bytes: a certificate is under 64 KiB). */
const derLength = (len: number): Buffer => (len < 0x80 ? Buffer.from([len]) : Buffer.from([0x82, len >> 8, len & 0xff]));

/** The certificate with a 0 byte put before its serial (not DER's shortest form); the signature is not made again. */
function withPaddedSerial(certPem: string): string {
    const cert = Buffer.from(certPem.replace(/-----[^-]+-----|\s/g, ""), "base64");
    const outer = header(cert, 0);
    const tbs = header(cert, outer.start);
    const version = header(cert, tbs.start);
    const serialAt = version.start + version.len;
    const serial = header(cert, serialAt);
    const tbsBody = Buffer.concat([cert.subarray(tbs.start, serialAt), Buffer.from([0x02]), derLength(serial.len + 1), Buffer.from([0]),
        cert.subarray(serial.start, tbs.start + tbs.len)]);
    const rest = cert.subarray(tbs.start + tbs.len, outer.start + outer.len);
    const body = Buffer.concat([Buffer.from([0x30]), derLength(tbsBody.length), tbsBody, rest]);
    const der = Buffer.concat([Buffer.from([0x30]), derLength(body.length), body]);
    return `-----BEGIN CERTIFICATE-----\n${der.toString("base64").replace(/.{1,64}/g, "$&\n")}-----END CERTIFICATE-----\n`;
}
