// World: the production decision (admit) with real PKCS#7 signatures from openssl (a test CA standing in for
// Alibaba's) against modelled cluster and cloud state; the Node record is what kube.ts reads from the API server
// (its Lease renewTime / Ready heartbeat, creation time, the readmit-until annotation), the instance's start time
// what DescribeInstances says (minutes). Asserted from the tokens issued. The same windows against the real API
// server's Node and Lease objects: test/realClusterAdmission.test.ts.
//
// Re-admission only for a machine that is really new: while a Node of the provider id exists, refused unless its
// heartbeat is stale and the instance was started after that heartbeat, or an operator allowed it.
import * as assert from "assert";
import * as crypto from "crypto";
import { admit, documentWithAudience, type AdmissionSettings } from "../src/admission/admit";
import { issueChallenge } from "../src/admission/challenge";
import { readmissionRefusal } from "../src/admission/nodes";
import { trustedSigners } from "../src/admission/pkcs7";
import { parseStartTime } from "../src/admission/cloud";
import { ModelCloud, ModelCluster } from "../testing/admission/model";
import { makePki, type TestPki } from "../testing/admission/pki";

const ACCOUNT = "1234567890123456";
const REGION = "cn-hangzhou";
const ID = "i-pool1", IP = "192.168.1.10", NODE = `${REGION}.${ID}`;
const MIN = 60_000;

describe("re-admission of an instance whose Node exists", function () {
    this.timeout(60_000);
    let pki: TestPki;
    let settings: AdmissionSettings;
    let cloud: ModelCloud;
    let cluster: ModelCluster;
    const key = crypto.randomBytes(32);
    /** The clock of the test now running: mocha loads every file before the first test, so a time taken at load is minutes old by then. */
    let now = 0;

    before(() => {
        process.env.AK_ADMISSION_LOG = "off";
        pki = makePki();
        settings = {
            accountId: ACCOUNT, regionId: REGION, signers: trustedSigners(pki.signerPem), challengeKeys: [key], challengeTtlSeconds: 120, tokenTtlSeconds: 600,
            readmitAfterSeconds: 300,
        };
    });
    after(() => {
        delete process.env.AK_ADMISSION_LOG;
        pki?.cleanup();
    });
    beforeEach(() => {
        now = Date.now();
        cloud = new ModelCloud();
        cluster = new ModelCluster();
    });

    /** The instance as the cloud sees it, started at `startedAt` (to the minute, as DescribeInstances says). */
    const instance = (startedAt: number | undefined) =>
        cloud.members.set(ID, { instanceId: ID, privateIp: IP, source: "pool", pool: "general", state: "InService", startedAt });
    /** One join attempt of the instance; whether it got a token (from the modelled cluster's state). */
    async function joins(): Promise<{ admitted: boolean; message: string }> {
        const before = cluster.tokens.size;
        // One clock for the heartbeats, the start times, the challenge and the decision: how long the suite took to get
        // here (minutes on a loaded machine, `now` being read when the file loads) changes nothing.
        const audience = issueChallenge(key, IP, 120, now);
        const doc = JSON.stringify({ "owner-account-id": ACCOUNT, "instance-id": ID, "region-id": REGION, "private-ipv4": IP });
        const r = await admit({ document: doc, signature: pki.sign(documentWithAudience(doc, audience)), audience }, IP, settings, cloud, cluster, now);
        assert.strictEqual(cluster.tokens.size - before, r.admitted ? 1 : 0);
        if (!r.admitted) assert.strictEqual(r.reason, "already-registered", r.message);
        return r;
    }

    it("admits an instance that has no Node", async () => {
        instance(now - 10 * MIN);
        assert.strictEqual((await joins()).admitted, true);
        assert.strictEqual([...cluster.tokens.values()][0].pool, "general", "the token records the pool its Node is labelled with");
    });

    it("refuses while the Node is Ready with a fresh heartbeat, even on an instance started since", async () => {
        cluster.nodes.set(NODE, { ready: true, lastHeartbeat: now - 10_000 });
        instance(now - MIN);
        assert.strictEqual((await joins()).admitted, false);
    });

    it("refuses a NotReady Node whose heartbeat is fresh (its kubelet still renews the Lease)", async () => {
        cluster.nodes.set(NODE, { ready: false, lastHeartbeat: now - 30_000 });
        instance(now - 2 * MIN);
        const r = await joins();
        assert.strictEqual(r.admitted, false);
        assert.match(r.message, /heartbeat is fresh/);
    });

    it("refuses a stale Node whose instance was not restarted since its last heartbeat", async () => {
        cluster.nodes.set(NODE, { ready: false, lastHeartbeat: now - 30 * MIN });
        instance(now - 60 * MIN);
        const r = await joins();
        assert.strictEqual(r.admitted, false);
        assert.match(r.message, /not started after it/);
    });

    it("refuses a stale Node when the cloud does not say when the instance started", async () => {
        cluster.nodes.set(NODE, { ready: false, lastHeartbeat: now - 30 * MIN });
        instance(undefined);
        assert.strictEqual((await joins()).admitted, false);
    });

    it("refuses a start in the same minute as the last heartbeat (StartTime is read to the minute)", async () => {
        const heartbeat = Math.floor((now - 30 * MIN) / MIN) * MIN + 30_000; // hh:mm:30
        cluster.nodes.set(NODE, { ready: false, lastHeartbeat: heartbeat });
        instance(parseStartTime(new Date(heartbeat + 20_000).toISOString().replace(/:\d{2}\.\d{3}Z$/, "Z"))); // hh:mm:50, printed hh:mm
        assert.strictEqual((await joins()).admitted, false);
    });

    it("admits a restarted machine once its Node's heartbeat is stale (a new system disk: auto existing node, repaired pool node)", async () => {
        cluster.nodes.set(NODE, { ready: false, lastHeartbeat: now - 8 * MIN });
        instance(now - 4 * MIN);
        const r = await joins();
        assert.strictEqual(r.admitted, true);
        assert.match(r.message, /over its existing Node/);
    });

    it("keeps refusing a restarted machine until the heartbeat is older than readmitAfterSeconds", async () => {
        cluster.nodes.set(NODE, { ready: false, lastHeartbeat: now - 4 * MIN });
        instance(now - 2 * MIN);
        assert.strictEqual((await joins()).admitted, false, "4 min < 300 s: a rebooted kubelet may still come back");
        settings.readmitAfterSeconds = 180;
        try {
            assert.strictEqual((await joins()).admitted, true);
        } finally {
            settings.readmitAfterSeconds = 300;
        }
    });

    it("counts a Node that never reported as alive from its creation", async () => {
        cluster.nodes.set(NODE, { ready: false, createdAt: now - 60_000 });
        instance(now - 30_000);
        assert.strictEqual((await joins()).admitted, false);
        cluster.nodes.set(NODE, { ready: false, createdAt: now - 20 * MIN });
        assert.strictEqual((await joins()).admitted, true);
    });

    it("admits when an operator allowed it (readmit-until in the future, at most 24 h ahead), whatever the heartbeat", async () => {
        instance(now - 60 * MIN);
        cluster.nodes.set(NODE, { ready: true, lastHeartbeat: now - 5000, readmitUntil: now + 10 * MIN });
        assert.strictEqual((await joins()).admitted, true);
        cluster.nodes.set(NODE, { ready: true, lastHeartbeat: now - 5000, readmitUntil: now - MIN });
        assert.strictEqual((await joins()).admitted, false, "an expired allowance");
        cluster.nodes.set(NODE, { ready: true, lastHeartbeat: now - 5000, readmitUntil: now + 48 * 3600_000 });
        assert.strictEqual((await joins()).admitted, false, "an allowance beyond 24 h is ignored");
    });

    it("reads ECS StartTime to the minute or the second, and nothing else", () => {
        assert.strictEqual(parseStartTime("2017-12-10T04:04Z"), Date.parse("2017-12-10T04:04:00Z"));
        assert.strictEqual(parseStartTime("2017-12-10T04:04:31Z"), Date.parse("2017-12-10T04:04:31Z"));
        for (const bad of ["", "2017-12-10", "2017-12-10 04:04:31", undefined, 5]) assert.strictEqual(parseStartTime(bad), undefined);
        assert.strictEqual(readmissionRefusal(NODE, { ready: false, lastHeartbeat: 1000 }, 2000, 0, 10_000), undefined);
    });
});
