// World: the OpenAPI emulator (testing/emulator).
/**
 * The preview-time refusal of a change that would re-create more than one master at once (src/providers/masterGuard.ts)
 * against the emulator's ECS: the masters as they are (instance names, zones, system disk categories: DescribeInstances,
 * DescribeDisks) against what the config wants.
 */
import * as assert from "assert";
import { useEmulator } from "../testing/emulator/fixture";
import { masterGuardProvider, type MasterSpec } from "../src/providers/masterGuard";

describe("refusing, at preview, a change that re-creates more than one master", () => {
    const ctx = useEmulator();
    const zones = ["cn-hangzhou-h", "cn-hangzhou-i", "cn-hangzhou-j"];
    const want = (z: string[], category = "cloud_essd"): MasterSpec[] => z.map((zone, i) => ({ name: `prod-master-${i}`, zone, systemDiskCategory: category }));
    const check = (masters: MasterSpec[]) => masterGuardProvider.check!({ region: "cn-hangzhou", masters: [] }, { region: "cn-hangzhou", masters });
    const running = () => zones.forEach((zoneId, i) => ctx.emu.addInstance({ instanceName: `prod-master-${i}`, zoneId, regionId: "cn-hangzhou" }));

    it("a new cluster (no master yet) and a change that touches nothing pass", async () => {
        assert.deepStrictEqual((await check(want(zones))).failures ?? [], []);
        running();
        assert.deepStrictEqual((await check(want(zones))).failures ?? [], []);
    });

    it("a new system disk category for every master is refused, naming each and the safe way; once two are re-created, the last passes", async () => {
        running();
        const r = await check(want(zones, "cloud_auto"));
        assert.strictEqual(r.failures?.length, 1);
        assert.match(r.failures![0].reason, /would re-create 3 masters at once: prod-master-0 \(i-[a-z0-9]+: system disk cloud_essd → cloud_auto\); prod-master-1/);
        assert.match(r.failures![0].reason, /--target '<urn of one master>' --target-dependents/);
        // one master at a time (pulumi up --target …): two done, one left to differ
        for (const inst of ctx.emu.instances.values()) if (inst.instanceName !== "prod-master-2") inst.systemDiskCategory = "cloud_auto";
        assert.deepStrictEqual((await check(want(zones, "cloud_auto"))).failures ?? [], []);
    });

    it("a new zone order that moves two masters is refused", async () => {
        running();
        const r = await check(want(["cn-hangzhou-i", "cn-hangzhou-h", "cn-hangzhou-j"]));
        assert.match(r.failures?.[0]?.reason ?? "", /would re-create 2 masters at once: prod-master-0 \(i-[a-z0-9]+: zone cn-hangzhou-h → cn-hangzhou-i\); prod-master-1/);
    });
});
