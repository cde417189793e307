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

    it("refuses anything but IPv4 addresses", () => {
        const key = crypto.generateKeyPairSync("ec", { namedCurve: "prime256v1" }).privateKey.export({ type: "pkcs8", format: "pem" }).toString();
        for (const bad of [[], ["master-0"], ["192.168.0.300"], ["::1"]]) assert.throws(() => signAdmissionCertificate(key, bad), /IPv4/);
    });
});
