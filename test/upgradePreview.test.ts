/**
 * What `pulumi preview` refuses before an upgrade changes anything. World: the skew rules as pure functions, then
 * ControlPlaneVersion's preview check (its diff) against the local OpenAPI emulator with the fake cluster behind Cloud
 * Assistant (testing/fakeCluster.ts): a minor skipped, a downgrade, an autoscaler pinned to another minor, kubelets out
 * of skew, an unhealthy cluster — each at its property path with the fix, and the cluster left as it was; deprecated
 * APIs the target removes as a warning naming them.
 */
import * as assert from "assert";
import { useEmulator } from "../testing/emulator/fixture";
import { fakeCluster, type FakeCluster } from "../testing/fakeCluster";
import { healthProblems, removedApis, skewFindings, upgradeKind, upgradeProblems } from "../src/rules";
import { previewCheck, UpgradeRefused, type ControlPlaneVersionInputs } from "../src/providers/controlPlaneVersion";

const REGION = "cn-hangzhou";
const DEPRECATED = [
    'apiserver_requested_deprecated_apis{group="flowcontrol.apiserver.k8s.io",removed_release="1.36",resource="flowschemas",subresource="",version="v1beta3"} 1',
    'apiserver_requested_deprecated_apis{group="",removed_release="1.40",resource="endpoints",subresource="",version="v1"} 1',
].join("\n");

describe("upgrade rules: skew, health, deprecated APIs", () => {
    const facts = { running: "1.35.4", target: "1.36.3", kubelets: { a: "1.35.4", b: "1.33.2" }, autoscaled: true };
    it("one minor or a patch is allowed; a skip or a downgrade is refused at kubernetesVersion with the fix", () => {
        assert.strictEqual(upgradeKind("1.36.3", "1.36.4"), "patch");
        assert.strictEqual(upgradeKind("1.35.4", "1.36.3"), "minor");
        assert.deepStrictEqual(upgradeProblems(facts), []);
        const skip = upgradeProblems({ ...facts, target: "1.37.1" });
        // The skip, and what 1.37 would also break: no autoscaler release known for it, node b four minors behind.
        assert.deepStrictEqual(skip.map((p) => p.path), ["kubernetesVersion", "kubernetesVersion", "kubernetesVersion"]);
        assert.match(skip[0].reason, /one minor at a time.*1\.36\.x/);
        const down = upgradeProblems({ ...facts, target: "1.35.3" });
        assert.deepStrictEqual(down.map((p) => p.path), ["kubernetesVersion"]);
        assert.match(down[0].reason, /does not downgrade.*back to 1\.35\.4/);
    });
    it("an autoscaler pinned to another minor, or a target without an autoscaler release, is refused", () => {
        assert.deepStrictEqual(upgradeProblems({ ...facts, autoscalerVersion: "1.35.2" }).map((p) => p.path), ["autoscaler.version"]);
        assert.deepStrictEqual(upgradeProblems({ ...facts, autoscalerVersion: "1.36.1" }), []);
        assert.deepStrictEqual(upgradeProblems({ ...facts, autoscaled: false, autoscalerVersion: "1.35.2" }), []);
    });
    it("kubelets more than three minors older than the target are refused, named", () => {
        const p = upgradeProblems({ ...facts, kubelets: { old: "1.32.9", ok: "1.33.0" } });
        assert.strictEqual(p.length, 1);
        assert.match(p[0].reason, /old \(1\.32\.9\)/);
        assert.ok(!p[0].reason.includes("ok (1.33.0)"));
    });
    it("health: API servers, etcd members and NotReady Nodes each named", () => {
        const h = healthProblems({ masters: 3, apiServers: [{ node: "m0", version: "1.35.4", ready: true }, { node: "m1", version: "1.35.4", ready: false }],
            etcd: [{ name: "m0", healthy: true }, { name: "m2", healthy: false }], nodes: [{ name: "w1", ready: false }] }, "1.36.3");
        assert.strictEqual(h.length, 1);
        assert.match(h[0].reason, /2 of 3 API servers.*m1.*m2.*w1/);
    });
    it("deprecated APIs: only those the target minor removes, from the metric's series", () => {
        assert.deepStrictEqual(removedApis(DEPRECATED, "1.36.3"), [{ api: "flowcontrol.apiserver.k8s.io/v1beta3 flowschemas", removedRelease: "1.36" }]);
        assert.deepStrictEqual(removedApis(DEPRECATED, "1.35.4"), []);
    });
    it("doctor's skew findings: a kubelet newer than an API server, or four minors older", () => {
        assert.deepStrictEqual(skewFindings(["1.36.3", "1.36.3"], { a: "1.36.3", b: "1.37.0", c: "1.32.1" }).length, 2);
        assert.deepStrictEqual(skewFindings(["1.36.3"], { a: "1.33.0" }), []);
    });
});

describe("ControlPlaneVersion at preview: refusals read from the cluster, nothing changed", function () {
    this.timeout(60_000);
    const fx = useEmulator();
    let c: FakeCluster;
    beforeEach(async () => {
        c = await fakeCluster(fx.emu, REGION, { masters: 3, version: "1.35.4" });
        c.addNode(c.master, { name: "master-0", controlPlane: true });
        c.addNode(fx.emu.addInstance({ regionId: REGION }).instanceId, { name: "worker-1" });
    });

    const inputs = (target: string): ControlPlaneVersionInputs => ({
        region: REGION, masterInstanceId: c.master, masterInstanceIds: c.masters, commands: c.commands, pollIntervalMs: 2,
        targetVersion: target, upgradeCommandId: "c-unused", autoscaled: true, autoscalerVersion: "",
    });
    const state = { runningVersion: "1.35.4" };
    const refusal = async (target: string): Promise<UpgradeRefused> => {
        const before = JSON.stringify([...c.versions]);
        const err = await previewCheck(state, inputs(target)).then(() => undefined, (e: unknown) => e);
        assert.ok(err instanceof UpgradeRefused, `no refusal for ${target}: ${String(err)}`);
        assert.strictEqual(JSON.stringify([...c.versions]), before, "the preview changed a version");
        assert.ok(!c.log.some((l) => /: (upgrade |drain|backup)/.test(l)), `the preview ran a step: ${c.log.join(", ")}`);
        return err as UpgradeRefused;
    };

    it("a minor skipped", async () => {
        const err = await refusal("1.37.1");
        assert.ok(err.problems.some((p) => p.path === "kubernetesVersion" && /one minor at a time/.test(p.reason)), err.message);
    });
    it("a downgrade", async () => {
        const err = await refusal("1.35.3");
        assert.deepStrictEqual(err.problems.map((p) => p.path), ["kubernetesVersion"]);
    });
    it("an unhealthy cluster: a Node NotReady, an etcd member down", async () => {
        c.nodes.get("worker-1")!.ready = false;
        const err = await refusal("1.36.3");
        assert.match(err.message, /kubernetesVersion: .*not healthy.*Nodes NotReady: worker-1/);
        c.nodes.get("worker-1")!.ready = true;
        fx.emu.instances.get(c.masters[2])!.status = "Stopped";
        const err2 = await refusal("1.36.3");
        assert.match(err2.message, /not healthy.*(API servers found|etcd members not healthy)/);
    });
    it("a healthy cluster passes, warning of the deprecated APIs the target removes", async () => {
        c.deprecatedMetrics = DEPRECATED;
        const warnings: string[] = [];
        await previewCheck(state, inputs("1.36.3"), (m) => warnings.push(m));
        assert.strictEqual(warnings.length, 1);
        assert.match(warnings[0], /flowcontrol\.apiserver\.k8s\.io\/v1beta3 flowschemas \(removed in 1\.36\)/);
        assert.ok(!warnings[0].includes("endpoints"));
    });
    it("nothing to check when the target is the running version", async () => {
        await previewCheck({ runningVersion: "1.36.3" }, inputs("1.36.3"));
        assert.deepStrictEqual(c.log, []);
    });
});
