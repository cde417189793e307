// A real PKCS#7 chain made by openssl, standing in for Alibaba's instance identity signing: a test CA, a
// signing certificate it issues (the certificate the service is configured with, as Alibaba's published one
// is), and a signer of documents. Also an impostor CA + signer with the same names and serial number.
import { execFile, execFileSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";

export interface TestPki {
    dir: string;
    /** PEM of the trusted signing certificate (what the service is configured with). */
    signerPem: string;
    /** Signs `content` as the instance identity service does: PKCS#7, detached, PEM body. */
    sign(content: string | Buffer, opts?: { impostor?: boolean; attached?: boolean; format?: "cms" | "smime"; keyid?: boolean; md?: "sha1" | "sha256" | "sha512" }): string;
    /** {@link TestPki.sign} without blocking the event loop (detached, cms). */
    signAsync(content: string | Buffer): Promise<string>;
    /** `openssl cms -verify` of the same inputs with Alibaba's documented flags (the reference the tests compare with). */
    opensslVerifies(signature: string, content: Buffer): boolean;
    /** A kubelet-style CSR (PEM) with this subject. */
    csr(subject: string): string;
    cleanup(): void;
}

function openssl(args: string[], cwd: string, input?: Buffer): Buffer {
    return execFileSync("openssl", args, { cwd, input, stdio: ["pipe", "pipe", "pipe"] });
}

export function makePki(): TestPki {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ak-admission-pki-"));
    const chain = (prefix: string): void => {
        openssl(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", `${prefix}ca.key`, "-out", `${prefix}ca.pem`, "-subj", "/O=Test Alibaba Cloud/CN=test-identity-ca", "-days", "2"], dir);
        openssl(["req", "-newkey", "rsa:2048", "-nodes", "-keyout", `${prefix}signer.key`, "-out", `${prefix}signer.csr`, "-subj", "/O=Test Alibaba Cloud/CN=test-instance-identity"], dir);
        // With a subjectKeyIdentifier, as Alibaba's certificate has, so a signer can also be named by key id.
        fs.writeFileSync(path.join(dir, "signer.ext"), "subjectKeyIdentifier=hash\n");
        openssl(["x509", "-req", "-in", `${prefix}signer.csr`, "-CA", `${prefix}ca.pem`, "-CAkey", `${prefix}ca.key`, "-set_serial", "4660", "-out", `${prefix}signer.pem`, "-days", "2",
            "-extfile", "signer.ext"], dir);
    };
    chain("");
    chain("impostor-");
    let n = 0;
    return {
        dir,
        signerPem: fs.readFileSync(path.join(dir, "signer.pem"), "utf8"),
        sign(content, opts = {}) {
            const file = `content-${n++}`;
            fs.writeFileSync(path.join(dir, file), content);
            const p = opts.impostor ? "impostor-" : "";
            const out = openssl([opts.format ?? "cms", "-sign", "-binary", "-in", file, "-signer", `${p}signer.pem`, "-inkey", `${p}signer.key`,
                ...(opts.attached ? ["-nodetach"] : []), ...(opts.keyid ? ["-keyid"] : []), ...(opts.md ? ["-md", opts.md] : []), "-outform", "PEM", ...(opts.format === "smime" ? ["-nocerts"] : [])], dir).toString();
            return out.replace(/-----(BEGIN|END) [A-Z0-9 ]+-----/g, "").replace(/\s+/g, "\n").trim();
        },
        signAsync(content) {
            const file = `content-${n++}`;
            fs.writeFileSync(path.join(dir, file), content);
            return new Promise((resolve, reject) => execFile("openssl", ["cms", "-sign", "-binary", "-in", file, "-signer", "signer.pem", "-inkey", "signer.key", "-outform", "PEM"],
                { cwd: dir }, (err, out) => err ? reject(err) : resolve(out.replace(/-----(BEGIN|END) [A-Z0-9 ]+-----/g, "").replace(/\s+/g, "\n").trim())));
        },
        opensslVerifies(signature, content) {
            const sig = `sig-${n}`, file = `verify-${n++}`;
            fs.writeFileSync(path.join(dir, sig), `-----BEGIN CMS-----\n${signature}\n-----END CMS-----\n`);
            fs.writeFileSync(path.join(dir, file), content);
            try {
                openssl(["cms", "-verify", "-binary", "-inform", "PEM", "-in", sig, "-content", file, "-certfile", "signer.pem", "-nointern", "-noverify", "-out", "/dev/null"], dir);
                return true;
            } catch {
                return false;
            }
        },
        csr(subject) {
            return openssl(["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "/dev/null", "-subj", subject], dir).toString();
        },
        cleanup() {
            fs.rmSync(dir, { recursive: true, force: true });
        },
    };
}
