/**
 * Which Node is a master's or a worker's in the upgrade's reading of the cluster. World: the functions themselves
 * (parseClusterStatus on upgrade-status lines, nodeOfInstance, nodesToUpgrade). A kubelet's credential fixes its
 * Node's name (`system:node:<region>.<instance>`), while it registers any provider id: a Node named after one instance
 * that claims another's provider id must not stand in for it.
 */
import * as assert from "assert";
import { nodesToUpgrade } from "../src/upgrade/nodes";
import { nodeOfInstance, parseClusterStatus } from "../src/upgrade/status";

const R = "cn-hangzhou";
const node = (name: string, providerId: string, kubelet: string, ready = true) => ["node", name, providerId, `v${kubelet}`, ready ? "True" : "False", "", "", ""].join("\t");

describe("upgrade reading: a Node is an instance's by its name first", () => {
    it("a master's Node is the one named after it, not an impostor listed first with its provider id, Ready on the target", () => {
        const s = parseClusterStatus([
            node(`${R}.i-aaimpostor`, `${R}.i-master`, "1.36.3"),
            node(`${R}.i-master`, `${R}.i-master`, "1.35.8", false),
            `control-plane\t${R}.i-master`,
        ].join("\n"));
        const n = nodeOfInstance(s, R, "i-master");
        assert.deepStrictEqual([n?.name, n?.kubelet, n?.ready], [`${R}.i-master`, "1.35.8", false]);
    });

    it("without its own Node a master has none, whatever another Node claims", () => {
        const s = parseClusterStatus(node(`${R}.i-aaimpostor`, `${R}.i-master`, "1.36.3"));
        assert.strictEqual(nodeOfInstance(s, R, "i-master"), undefined);
    });

    it("a Node named by hand (no instance in its name) is still found by its provider id", () => {
        const s = parseClusterStatus(node("master-0", `${R}.i-master`, "1.36.3"));
        assert.strictEqual(nodeOfInstance(s, R, "i-master")?.name, "master-0");
    });

    it("a worker's upgrade never takes an impostor's Node for the instance it names: only the worker's own Node is moved", () => {
        const s = parseClusterStatus([
            node(`${R}.i-aaimpostor`, `${R}.i-worker`, "1.35.8"),
            node(`${R}.i-worker`, `${R}.i-worker`, "1.35.8"),
        ].join("\n"));
        assert.deepStrictEqual(nodesToUpgrade(s, "1.36.3").map((n) => n.name), [`${R}.i-worker`]);
    });
});
