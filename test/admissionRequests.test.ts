// What the admission service does with requests it cannot trust (src/admission/admit.ts, server.ts): a signed
// identity document that names two instances, and requests without any credential. World: a real PKCS#7 from
// openssl (a test CA standing in for Alibaba's), the real HTTPS server on loopback, the modelled cloud and cluster;
// asserted from the model's tokens and recorded decisions.
import * as assert from "assert";
import * as crypto from "crypto";
import * as fs from "fs";
import * as https from "https";
import * as os from "os";
import * as path from "path";
import { admit, documentWithAudience, type AdmissionSettings } from "../src/admission/admit";
import { issueChallenge } from "../src/admission/challenge";
import { trustedSigners } from "../src/admission/pkcs7";
import { startServer } from "../src/admission/server";
import { makeClusterCa } from "../testing/admission/harness";
import { ModelCloud, ModelCluster } from "../testing/admission/model";
import { makePki, type TestPki } from "../testing/admission/pki";

const ACCOUNT = "1234567890123456";
const REGION = "cn-hangzhou";

describe("admission requests the service cannot trust", function () {
    this.timeout(120_000);
    let pki: TestPki;
    let dir: string;
    let settings: AdmissionSettings;
    const key = crypto.randomBytes(32);

    before(() => {
        process.env.AK_ADMISSION_LOG = "off";
        pki = makePki();
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "ak-admission-requests-"));
        settings = { accountId: ACCOUNT, regionId: REGION, signers: trustedSigners(pki.signerPem), challengeKeys: [key], challengeTtlSeconds: 120, tokenTtlSeconds: 600 };
    });
    after(() => {
        delete process.env.AK_ADMISSION_LOG;
        pki?.cleanup();
        if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });

    it("a signed identity document with duplicate keys is refused, not read with its last value", async () => {
        // What Alibaba would sign if it appends the caller's audience without escaping it (docs/admission.md quotes
        // the format "audience":"<VALUE>"; the attacker chooses VALUE in the metadata request): the attacker's own
        // document followed by injected members. The service must not let a second "instance-id"/"owner-account-id" win.
        const cloud = new ModelCloud();
        const cluster = new ModelCluster();
        cloud.members.set("i-pool1", { instanceId: "i-pool1", privateIp: "192.168.1.10", source: "pool", pool: "general", state: "Pending" });
        const audience = issueChallenge(key, "192.168.1.10", 120);
        const injected = `{"owner-account-id":"999999","instance-id":"i-stranger","region-id":"${REGION}","private-ipv4":"192.168.1.10","audience":"${audience}",` +
            `"owner-account-id":"${ACCOUNT}","instance-id":"i-pool1"}`;
        const r = await admit({ document: injected, signature: pki.sign(documentWithAudience(injected, audience)), audience }, "192.168.1.10", settings, cloud, cluster);
        assert.deepStrictEqual([r.admitted, cluster.tokens.size], [false, 0], `admitted ${r.instanceId} from a document that names i-stranger of account 999999 first`);
    });

    it("requests to /admit without any credential write (almost) nothing to the API server: no Event each", async () => {
        const ca = makeClusterCa(fs.mkdtempSync(path.join(dir, "srv-")));
        const cluster = new ModelCluster();
        const running = await startServer({ settings, cloud: new ModelCloud(), cluster, tls: () => ({ cert: ca.certPem, key: ca.keyPem }), host: "127.0.0.1", port: 0 });
        try {
            const post = (body: string) => new Promise<void>((resolve) => {
                const req = https.request({ host: "127.0.0.1", port: running.port, path: "/admit", method: "POST", rejectUnauthorized: false, headers: { "content-type": "application/json" } },
                    (res) => { res.resume(); res.on("end", () => resolve()); });
                req.on("error", () => resolve());
                req.end(body);
            });
            for (let i = 0; i < 40; i++) await post(i % 2 ? "{}" : JSON.stringify({ document: "x", signature: "x", audience: "ak1.garbage" }));
            assert.ok(cluster.decisions.length <= 4, `40 requests without any credential (no challenge, no signature) made ${cluster.decisions.length} API writes`);
        } finally {
            await running.close();
        }
    });
});
