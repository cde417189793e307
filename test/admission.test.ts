// World: real PKCS#7 from openssl through the production decision, against modelled cloud and cluster state.
// Admission by cloud identity: real PKCS#7 made by openssl (a test CA standing in for Alibaba's), through the
// verification code production uses; the decision's effects asserted from the modelled cluster and cloud state.
import * as assert from "assert";
import * as crypto from "crypto";
import { admit, documentWithAudience, flatJsonMembers, type AdmissionSettings, type AdmitRequest } from "../src/admission/admit";
import { ADMITTED_GROUP, csrVerdict, KUBELET_CLIENT_SIGNER, type Csr } from "../src/admission/approver";
import { issueChallenge } from "../src/admission/challenge";
import { trustedSigners, verifySignedData } from "../src/admission/pkcs7";
import { makePki, type TestPki } from "../testing/admission/pki";
import { ModelCloud, ModelCluster } from "../testing/admission/model";
import { ALIBABA_IDENTITY_CERTIFICATE } from "../src/admission/alibabaCertificate";
import { identityCertificateProblem } from "../src/config";

const ACCOUNT = "1234567890123456";
const REGION = "cn-hangzhou";

/** The document the metadata service returns (field names of Alibaba's "use instance identities" page). */
function document(instanceId: string, ip: string, over: Record<string, string> = {}): string {
    return JSON.stringify({
        "owner-account-id": ACCOUNT, "instance-id": instanceId, "mac": "00:16:3e:00:00:01", "region-id": REGION, "serial-number": "abc",
        "zone-id": `${REGION}-h`, "instance-type": "ecs.g7.large", "image-id": "ubuntu_24_04_x64_20G_alibase_20250101.vhd", "private-ipv4": ip, ...over,
    });
}

describe("admission by cloud identity", function () {
    this.timeout(60_000);
    let pki: TestPki;
    let settings: AdmissionSettings;
    let cloud: ModelCloud;
    let cluster: ModelCluster;
    const key = crypto.randomBytes(32);

    before(() => {
        process.env.AK_ADMISSION_LOG = "off"; // decisions are asserted from the recorded state, not the log
        pki = makePki();
        settings = {
            accountId: ACCOUNT, regionId: REGION, signers: trustedSigners(pki.signerPem), challengeKeys: [key], challengeTtlSeconds: 120, tokenTtlSeconds: 600,
        };
    });
    after(() => {
        delete process.env.AK_ADMISSION_LOG;
        pki?.cleanup();
    });
    beforeEach(() => {
        cloud = new ModelCloud();
        cluster = new ModelCluster();
        cloud.members.set("i-pool1", { instanceId: "i-pool1", privateIp: "192.168.1.10", source: "pool", pool: "general", state: "Pending" });
        cloud.members.set("i-pool2", { instanceId: "i-pool2", privateIp: "192.168.1.11", source: "pool", pool: "general", state: "InService" });
    });

    /** What the attach script does on instance `id` at `ip`: challenge, then the signed document for it. */
    function request(id: string, ip: string, opts: { docOver?: Record<string, string>; impostor?: boolean; challengeIp?: string; now?: number } = {}): AdmitRequest {
        const audience = issueChallenge(key, opts.challengeIp ?? ip, 120, opts.now);
        const doc = document(id, ip, opts.docOver);
        return { document: doc, signature: pki.sign(documentWithAudience(doc, audience), { impostor: opts.impostor }), audience };
    }
    const tokensOf = (providerId: string) => [...cluster.tokens.values()].filter((t) => t.providerId === providerId);

    it("admits a pool member and issues one short-lived token for that node only", async () => {
        const r = await admit(request("i-pool1", "192.168.1.10"), "192.168.1.10", settings, cloud, cluster);
        assert.strictEqual(r.admitted, true, r.message);
        const tokens = tokensOf(`${REGION}.i-pool1`);
        assert.strictEqual(tokens.length, 1);
        assert.ok(tokens[0].expiresAt - Date.now() <= 600_000 && tokens[0].expiresAt > Date.now());
        assert.strictEqual(r.token, `${[...cluster.tokens.keys()][0]}.${tokens[0].secret}`);
        assert.deepStrictEqual(cluster.decisions.map((d) => [d.admitted, d.instanceId, d.pool]), [[true, "i-pool1", "general"]]);
        assert.ok(!JSON.stringify(cluster.decisions).includes(tokens[0].secret), "the token is not in the recorded decision");
    });

    it("verifies attached and PKCS#7 v1.5 (smime) signatures as well, agreeing with openssl cms -verify", async () => {
        const content = Buffer.from(document("i-pool1", "192.168.1.10"));
        for (const opts of [{ attached: true }, { format: "smime" as const }, {}]) {
            const sig = pki.sign(content, opts);
            assert.ok(verifySignedData(sig, content, settings.signers).equals(content), JSON.stringify(opts));
            assert.ok(pki.opensslVerifies(sig, content));
        }
    });

    it("verifies a CMS signer identified by subjectKeyIdentifier, and refuses an impostor's key id", async () => {
        const content = Buffer.from(document("i-pool1", "192.168.1.10"));
        const sig = pki.sign(content, { keyid: true });
        const der = Buffer.from(sig.replace(/\s+/g, ""), "base64");
        assert.ok(settings.signers[0].keyId && der.includes(Buffer.concat([Buffer.from([0x80, settings.signers[0].keyId.length]), settings.signers[0].keyId])),
            "the signature names its signer by key id");
        assert.ok(verifySignedData(sig, content, settings.signers).equals(content));
        assert.ok(pki.opensslVerifies(sig, content));
        const forged = pki.sign(content, { keyid: true, impostor: true });
        assert.throws(() => verifySignedData(forged, content, settings.signers), /not the configured instance identity certificate/);
    });

    it("reads the signed document as a flat JSON object with each key once (duplicates, nesting, trailing data refused)", () => {
        assert.deepStrictEqual(flatJsonMembers('{"a":"x\\"y\\u00e9","b":12.5e1,"c":true,"d":null}'), [["a", "x\"y\u00e9"], ["b", 125], ["c", true], ["d", null]]);
        assert.deepStrictEqual(flatJsonMembers(" { } "), []);
        for (const bad of ['{"a":"1","a":"2"}', '{"a":{"b":"c"}}', '{"a":["b"]}', '{"a":"1"} x', '{"a":"1",}', '{"a" "1"}', '{a:"1"}', '{"a":"\u0001"}', '["a"]']) {
            assert.throws(() => flatJsonMembers(bad), Error, bad);
        }
    });

    it("vendors Alibaba's published signing certificate intact: self-signature valid, until 2038, with a key id", () => {
        const pem = ALIBABA_IDENTITY_CERTIFICATE;
        const [signer] = trustedSigners(pem);
        assert.ok(signer.certificate.verify(signer.certificate.publicKey), "any altered byte breaks the self-signature");
        assert.strictEqual(signer.certificate.serialNumber, "6666D187");
        assert.ok(new Date(signer.certificate.validTo) > new Date("2038-01-01"));
        assert.strictEqual(signer.keyId?.toString("hex"), "0c30ae71e546016f3c6a3e503e734b5c40902f75");
        assert.strictEqual(identityCertificateProblem(pem), undefined);
    });

    it("refuses a forged signature (impostor certificate with the same issuer and serial), like openssl does", async () => {
        const req = request("i-pool1", "192.168.1.10", { impostor: true });
        const r = await admit(req, "192.168.1.10", settings, cloud, cluster);
        assert.deepStrictEqual([r.admitted, r.reason], [false, "signature-invalid"]);
        assert.strictEqual(pki.opensslVerifies(req.signature, documentWithAudience(req.document, req.audience)), false);
        assert.strictEqual(cluster.tokens.size, 0);
        assert.strictEqual(cluster.leases.size, 0, "a forged request does not burn a challenge");
    });

    it("refuses another instance's document: altered, or presented from another address", async () => {
        const req = request("i-pool1", "192.168.1.10");
        const altered = { ...req, document: req.document.replace("i-pool1", "i-pool2") };
        const r1 = await admit(altered, "192.168.1.10", settings, cloud, cluster);
        assert.deepStrictEqual([r1.admitted, r1.reason], [false, "signature-invalid"]);
        assert.strictEqual(pki.opensslVerifies(altered.signature, documentWithAudience(altered.document, altered.audience)), false);
        const r2 = await admit(req, "192.168.1.11", settings, cloud, cluster);
        assert.deepStrictEqual([r2.admitted, r2.reason], [false, "challenge-invalid"]);
        const own = request("i-pool2", "192.168.1.11");
        const r3 = await admit({ ...req, audience: own.audience }, "192.168.1.11", settings, cloud, cluster);
        assert.deepStrictEqual([r3.admitted, r3.reason], [false, "signature-invalid"], "i-pool1's signature is bound to its own challenge");
        assert.strictEqual(cluster.tokens.size, 0);
    });

    it("refuses a replayed document and an expired challenge", async () => {
        const req = request("i-pool1", "192.168.1.10");
        assert.strictEqual((await admit(req, "192.168.1.10", settings, cloud, cluster)).admitted, true);
        const again = await admit(req, "192.168.1.10", settings, cloud, cluster);
        assert.deepStrictEqual([again.admitted, again.reason], [false, "challenge-replayed"]);
        const old = request("i-pool1", "192.168.1.10", { now: Date.now() - 300_000 });
        const late = await admit(old, "192.168.1.10", settings, cloud, cluster);
        assert.deepStrictEqual([late.admitted, late.reason], [false, "challenge-expired"]);
        assert.strictEqual(cluster.tokens.size, 1);
    });

    it("refuses instances of another account or region", async () => {
        const a = await admit(request("i-pool1", "192.168.1.10", { docOver: { "owner-account-id": "999" } }), "192.168.1.10", settings, cloud, cluster);
        assert.deepStrictEqual([a.admitted, a.reason], [false, "account-mismatch"]);
        const b = await admit(request("i-pool1", "192.168.1.10", { docOver: { "region-id": "cn-beijing" } }), "192.168.1.10", settings, cloud, cluster);
        assert.deepStrictEqual([b.admitted, b.reason], [false, "region-mismatch"]);
        assert.strictEqual(cluster.tokens.size, 0);
    });

    it("refuses an instance in no pool of this cluster, and a source address that is not the instance's", async () => {
        const a = await admit(request("i-stranger", "192.168.1.50"), "192.168.1.50", settings, cloud, cluster);
        assert.deepStrictEqual([a.admitted, a.reason], [false, "not-a-member"]);
        const b = await admit(request("i-pool1", "192.168.1.10", { challengeIp: "192.168.1.99" }), "192.168.1.99", settings, cloud, cluster);
        assert.deepStrictEqual([b.admitted, b.reason], [false, "source-ip-mismatch"]);
        assert.strictEqual(cluster.tokens.size, 0);
        assert.deepStrictEqual(cluster.decisions.map((d) => d.reason), ["not-a-member", "source-ip-mismatch"]);
    });

    it("refuses a second claim of a Ready node's identity (every other window: test/admissionReadmission.test.ts)", async () => {
        cluster.nodes.set(`${REGION}.i-pool1`, { ready: true, lastHeartbeat: Date.now() - 5000 });
        const a = await admit(request("i-pool1", "192.168.1.10"), "192.168.1.10", settings, cloud, cluster);
        assert.deepStrictEqual([a.admitted, a.reason], [false, "already-registered"]);
        assert.strictEqual(cluster.tokens.size, 0);
    });

    it("the approver approves only its node's kubelet client CSR from an admission token, and denies other names (a master's too)", async () => {
        const r = await admit(request("i-pool1", "192.168.1.10"), "192.168.1.10", settings, cloud, cluster);
        const tokenId = r.token!.split(".")[0];
        const lookup = (id: string) => cluster.tokens.get(id)?.providerId;
        const csr = (cn: string, over: Partial<Csr["spec"]> = {}): Csr => ({
            metadata: { name: "csr-x" },
            spec: {
                request: Buffer.from(pki.csr(`/O=system:nodes/CN=${cn}`)).toString("base64"), signerName: KUBELET_CLIENT_SIGNER,
                username: `system:bootstrap:${tokenId}`, groups: ["system:bootstrappers", ADMITTED_GROUP, "system:authenticated"],
                usages: ["digital signature", "client auth"], ...over,
            },
        });
        // CSR requests are Base64 of PEM in the API; csrVerdict takes what spec.request decodes to.
        const decode = (c: Csr): Csr => ({ ...c, spec: { ...c.spec, request: Buffer.from(c.spec.request, "base64").toString() } });
        assert.strictEqual(csrVerdict(decode(csr(`system:node:${REGION}.i-pool1`)), lookup).action, "approve");
        for (const cn of [`system:node:${REGION}.i-pool2`, `system:node:${REGION}.i-master0`, "system:admin"]) {
            const v = csrVerdict(decode(csr(cn)), lookup);
            assert.strictEqual(v.action, "deny", cn);
        }
        assert.strictEqual(csrVerdict(decode(csr(`system:node:${REGION}.i-pool1`, { usages: ["client auth", "server auth"] })), lookup).action, "deny");
        assert.strictEqual(csrVerdict(decode(csr(`system:node:${REGION}.i-pool1`, { signerName: "kubernetes.io/kubelet-serving" })), lookup).action, "deny");
        // Not ours: kubeadm's own tokens and other users are left to their approvers.
        assert.strictEqual(csrVerdict(decode(csr("system:node:x", { username: "system:bootstrap:abcdef", groups: ["system:bootstrappers", "system:bootstrappers:kubeadm:default-node-token"] })), lookup).action, "ignore");
        // A token of the admitted group whose node is unknown or that was used: denied, never left pending.
        const unknown = csrVerdict(decode(csr(`system:node:${REGION}.i-pool1`, { username: "system:bootstrap:abcdef" })), lookup);
        assert.deepStrictEqual([unknown.action, unknown.action !== "ignore" && unknown.why], ["deny", "token abcdef was used already or is unknown: one CSR per admission token"]);
        assert.strictEqual(csrVerdict(decode(csr("system:node:x", { username: "system:node:x" })), lookup).action, "ignore");
    });
});

describe("doctor lists admission refusals", () => {
    it("parses the AdmissionRefused events doctor-join reads, oldest first", async () => {
        const { parseAdmissionRefusals } = await import("../src/doctor/joinMaterial");
        const rows = parseAdmissionRefusals("2026-12-03T07:02:00Z\tnot-a-member\tnot-a-member: i-x from 10.0.0.9: instance i-x is not a member\n2026-12-03T07:01:00Z\tchallenge-replayed\tchallenge-replayed: i-y\n\n");
        assert.deepStrictEqual(rows.map((r) => r.reason), ["challenge-replayed", "not-a-member"]);
        assert.match(rows[1].message, /is not a member/);
    });
});

describe("the service (shipped on its own) and the library agree on the pool label, its taint and the re-admission default", () => {
    it("same literals in src/admission/nodes.ts, src/rules and the node's admission client; the kubelet may not set the label", async () => {
        const service = await import("../src/admission/nodes");
        const rules = await import("../src/rules");
        assert.deepStrictEqual([service.POOL_LABEL, service.LEGACY_POOL_LABEL, service.POOL_PENDING_TAINT, service.DEFAULT_READMIT_AFTER_SECONDS],
            [rules.POOL_LABEL, rules.LEGACY_POOL_LABEL, rules.POOL_PENDING_TAINT, rules.DEFAULT_READMIT_AFTER_SECONDS]);
        const client = (await import("fs")).readFileSync(require.resolve("../src/shell/admission_client.sh"), "utf8");
        assert.match(client, new RegExp(`^AK_POOL_PENDING_TAINT="${rules.POOL_PENDING_TAINT.replace(/\./g, "\\.")}:NoSchedule"$`, "m"));
        assert.strictEqual(rules.kubeletMaySetLabel(rules.POOL_LABEL), false, "NodeRestriction keeps node-restriction.kubernetes.io/ from kubelets");
        assert.ok(rules.POOL_PENDING_TAINT.startsWith("startup-taint.cluster-autoscaler.kubernetes.io/"), "the autoscaler's startup-taint prefix");
    });
});

describe("the service's files are an immutable ConfigMap named after their content, which the DaemonSet mounts (pure rendering)", () => {
    it("a new served script is a new ConfigMap name the pod template mounts; the same files are the same name; nothing else of the template refers to them", async () => {
        const { admissionWorkloadObjects, serviceConfig } = await import("../src/components/admission");
        type Template = { metadata: { annotations?: Record<string, string> }; spec: { volumes: Array<{ name: string; configMap?: { name: string } }>; containers: Array<{ env: Array<{ name: string }> }> } };
        const render = (script: string, config = serviceConfig({ accountId: "1234567890", region: "cn-hangzhou", attachScript: true })) => {
            const [configMap, , daemonSet] = admissionWorkloadObjects({ config, identityCertificate: "PEM", attachScript: script, clusterName: "c" });
            const template = (daemonSet as unknown as { spec: { template: Template } }).spec.template;
            return { configMap, name: configMap.metadata.name, mounted: template.spec.volumes.find((v) => v.name === "code")!.configMap!.name, template };
        };
        const v1 = render("#!/bin/bash\necho one");
        assert.match(v1.name, /^alicloud-kubeadm-admission-[0-9a-f]{16}$/);
        assert.strictEqual(v1.mounted, v1.name, "the pods mount the ConfigMap of these files");
        assert.strictEqual(v1.configMap.immutable, true, "nobody can change the files under a name (kubectl edit is refused)");
        assert.ok((v1.configMap.data as Record<string, string>)["server.js"] && (v1.configMap.data as Record<string, string>)["attach.sh"] === "#!/bin/bash\necho one");
        const v2 = render("#!/bin/bash\necho two");
        assert.notStrictEqual(v2.name, v1.name, "a new served script is a new ConfigMap");
        assert.strictEqual(v2.mounted, v2.name, "and a new pod template that mounts it");
        assert.strictEqual(render("#!/bin/bash\necho one").name, v1.name, "the same files, the same name: no roll");
        const listed = render("#!/bin/bash\necho one", serviceConfig({ accountId: "1234567890", region: "cn-hangzhou", attachScript: true, existingNodes: { "i-x": "existing" } }));
        assert.notStrictEqual(listed.name, v1.name, "a change of config.json is a new ConfigMap too");
        // The component passes the name the Kubernetes provider gave its ConfigMap.
        const [named, , namedSet] = admissionWorkloadObjects({ config: serviceConfig({ accountId: "1234567890", region: "cn-hangzhou" }), identityCertificate: "PEM", clusterName: "c", filesName: "given-name" });
        assert.deepStrictEqual([named.metadata.name, (namedSet as unknown as { spec: { template: Template } }).spec.template.spec.volumes.find((v) => v.name === "code")!.configMap!.name], ["given-name", "given-name"]);
        // The name alone rolls the pods: no checksum annotation or environment a pod could disagree with.
        assert.deepStrictEqual(Object.keys(v1.template.metadata.annotations ?? {}), []);
        assert.deepStrictEqual(v1.template.spec.containers[0].env.map((e) => e.name), ["HOSTNAME"]);
    });
});
