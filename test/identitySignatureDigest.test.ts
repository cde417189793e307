/**
 * The digest of Alibaba's instance identity signature (docs/security.md#sha-1): SHA-1 accepted unless
 * `admission.allowSha1` is false, the digest recorded with every admission, and doctor naming the digests the
 * recent joins used. World: real PKCS#7 made by openssl (`cms -sign -md`, a test CA standing in for Alibaba's)
 * through the verification and decision code production runs, the modelled cluster and cloud (testing/admission/model.ts);
 * the whole stack under Pulumi mocks for the config's way to the service; doctor against the emulator.
 */
import * as assert from "node:assert/strict";
import * as crypto from "crypto";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import * as YAML from "yaml";
import { synthesize } from "../scripts/synth";
import { admit, documentWithAudience, type AdmissionSettings } from "../src/admission/admit";
import { issueChallenge } from "../src/admission/challenge";
import { trustedSigners, verifySignedData } from "../src/admission/pkcs7";
import { parseAdmittedDigests } from "../src/doctor/joinMaterial";
import { makePki, type TestPki } from "../testing/admission/pki";
import { ModelCloud, ModelCluster } from "../testing/admission/model";

const ACCOUNT = "1234567890123456";
const REGION = "cn-hangzhou";

describe("instance identity signature digest: SHA-1 behind admission.allowSha1, the digest recorded", function () {
    this.timeout(60_000);
    let pki: TestPki;
    let settings: AdmissionSettings;
    const key = crypto.randomBytes(32);
    before(() => {
        process.env.AK_ADMISSION_LOG = "off";
        pki = makePki();
        settings = { accountId: ACCOUNT, regionId: REGION, signers: trustedSigners(pki.signerPem), challengeKeys: [key], challengeTtlSeconds: 120, tokenTtlSeconds: 600 };
    });
    after(() => {
        delete process.env.AK_ADMISSION_LOG;
        pki?.cleanup();
    });

    const request = (md: "sha1" | "sha256") => {
        const audience = issueChallenge(key, "192.168.1.10", 120);
        const doc = JSON.stringify({ "owner-account-id": ACCOUNT, "instance-id": "i-pool1", "region-id": REGION, "private-ipv4": "192.168.1.10" });
        return { document: doc, signature: pki.sign(documentWithAudience(doc, audience), { md }), audience };
    };
    const fresh = () => {
        const cloud = new ModelCloud();
        cloud.members.set("i-pool1", { instanceId: "i-pool1", privateIp: "192.168.1.10", source: "pool", pool: "general", state: "Pending" });
        return { cloud, cluster: new ModelCluster() };
    };

    it("the verifier reports the digest of a valid signature; SHA-1 verifies by default and is refused with allowSha1 false", () => {
        const content = Buffer.from("{\"instance-id\":\"i-1\"}");
        for (const md of ["sha1", "sha256", "sha512"] as const) {
            const seen: string[] = [];
            assert.ok(verifySignedData(pki.sign(content, { md }), content, settings.signers, { onDigest: (d) => seen.push(d) }).equals(content), md);
            assert.deepEqual(seen, [md]);
        }
        assert.throws(() => verifySignedData(pki.sign(content, { md: "sha1" }), content, settings.signers, { allowSha1: false }), /digest is SHA-1, refused \(admission\.allowSha1 is false\)/);
        assert.ok(verifySignedData(pki.sign(content, { md: "sha256" }), content, settings.signers, { allowSha1: false }).equals(content));
    });

    it("an admission records the digest; with allowSha1 false a SHA-1 document is refused, a SHA-256 one admitted", async () => {
        for (const md of ["sha1", "sha256"] as const) {
            const { cloud, cluster } = fresh();
            const r = await admit(request(md), "192.168.1.10", settings, cloud, cluster);
            assert.equal(r.admitted, true, r.message);
            assert.match(cluster.decisions[0].message, new RegExp(`identity signed with ${md}$`));
            assert.deepEqual([...parseAdmittedDigests(`2026-12-03T10:00:00Z\t${cluster.decisions[0].message}\n`)], [[md, 1]], "what doctor reads back");
        }
        const strict = { ...settings, allowSha1: false };
        const { cloud, cluster } = fresh();
        const refused = await admit(request("sha1"), "192.168.1.10", strict, cloud, cluster);
        assert.equal(refused.admitted, false);
        assert.equal(refused.reason, "signature-invalid");
        assert.match(refused.message, /SHA-1, refused/);
        assert.equal(cluster.tokens.size, 0, "no token");
        assert.equal((await admit(request("sha256"), "192.168.1.10", strict, fresh().cloud, fresh().cluster)).admitted, true);
    });

    it("admission.allowSha1 (default true) reaches the service's config; false is passed as false", async () => {
        const out = fs.mkdtempSync(path.join(os.tmpdir(), "sha1-"));
        try {
            for (const allow of [undefined, false]) {
                const doc = YAML.parse(fs.readFileSync(path.join(__dirname, "..", "stacks", "Pulumi.dev.yaml"), "utf8"));
                if (allow !== undefined) doc.config["alicloud-kubeadm:cluster"].admission = { allowSha1: allow };
                const file = path.join(out, `Pulumi.sha1-${String(allow)}.yaml`);
                fs.writeFileSync(file, YAML.stringify(doc));
                const result = await synthesize(file, out);
                assert.deepEqual(result.problems, []);
                // The service's ConfigMap (the pools' registrations are ConfigMaps too).
                const cm = result.resources.find((r) => r.type === "kubernetes:core/v1:ConfigMap" && /-configmap-kube-system-alicloud-kubeadm-admission$/.test(r.name))!;
                const config = JSON.parse((cm.rawInputs.data as Record<string, string>)["config.json"]);
                assert.equal(config.allowSha1, allow ?? true);
            }
        } finally {
            fs.rmSync(out, { recursive: true, force: true });
        }
    });

    it("doctor's reading of the NodeAdmitted Events counts each digest", () => {
        const events = ["admitted i-1 (pool general) as cn-hangzhou.i-1; identity signed with sha1", "admitted i-2 (pool general) as cn-hangzhou.i-2; identity signed with sha256",
            "admitted i-3 (pool general) as cn-hangzhou.i-3; identity signed with sha1"].map((m, i) => `2026-12-03T10:0${i}:00Z\t${m}`).join("\n");
        assert.deepEqual([...parseAdmittedDigests(events)], [["sha1", 2], ["sha256", 1]]);
        assert.deepEqual([...parseAdmittedDigests("")], []);
    });
});
