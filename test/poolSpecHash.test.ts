// Pure: a pool's spec hash (src/rules/spec.ts) and when an instance counts as outdated. No cloud, no Pulumi.
import * as assert from "assert";
import { isOutdated, poolSpecHash, SPEC_TAG, type PoolSpec } from "../src/rules";

const BASE: PoolSpec = {
    imageId: "m-base", instanceTypes: ["ecs.g7.large", "ecs.g6.large"], systemDisk: { category: "cloud_essd", size: 40 }, kubernetesVersion: "1.36.3",
    labels: { team: "a", "node-restriction.kubernetes.io/alicloud-kubeadm-pool": "general" }, taints: ["dedicated=db:NoSchedule"], userdata: "#!/bin/bash\necho join\n",
};

describe("pool spec hash", () => {
    it("is 16 hex digits, the same for the same spec whatever the order its labels were written in", () => {
        const hash = poolSpecHash(BASE);
        assert.match(hash, /^[0-9a-f]{16}$/);
        const reordered = { ...BASE, labels: { "node-restriction.kubernetes.io/alicloud-kubeadm-pool": "general", team: "a" } };
        assert.strictEqual(poolSpecHash(reordered), hash);
    });

    it("changes with each thing that decides what a new node becomes", () => {
        const variants: Array<[string, Partial<PoolSpec>]> = [
            ["image", { imageId: "m-new" }], ["instance types", { instanceTypes: ["ecs.g7.large"] }], ["type order", { instanceTypes: ["ecs.g6.large", "ecs.g7.large"] }],
            ["disk", { systemDisk: { category: "cloud_essd", size: 80 } }], ["version", { kubernetesVersion: "1.36.4" }],
            ["labels", { labels: { ...BASE.labels, team: "b" } }], ["taints", { taints: [] }], ["userdata", { userdata: "#!/bin/bash\necho join again\n" }],
        ];
        const seen = new Set([poolSpecHash(BASE)]);
        for (const [what, change] of variants) {
            const h = poolSpecHash({ ...BASE, ...change });
            assert.ok(!seen.has(h), `${what} changes the hash`);
            seen.add(h);
        }
    });

    it("an instance is outdated when its tag differs or is missing; nothing is outdated without a current hash", () => {
        const current = poolSpecHash(BASE);
        assert.strictEqual(isOutdated({ [SPEC_TAG]: current }, current), false);
        assert.strictEqual(isOutdated({ [SPEC_TAG]: "0000000000000000" }, current), true);
        assert.strictEqual(isOutdated({}, current), true, "made before pools carried the tag, or attached by hand");
        assert.strictEqual(isOutdated({}, undefined), false, "state written before the hash existed");
    });
});
