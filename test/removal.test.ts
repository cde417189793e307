/**
 * The removal core. Its Kubernetes steps, timelines, cloud-side failures and pool scale-in run against a real API
 * server in test/realClusterRemoval.test.ts; what stays here needs no cluster (victim choice) or a failure the real
 * control plane of the harness cannot produce (an etcd member to remove: it runs no etcd static pod).
 */
import * as assert from "assert";
import { useEmulator } from "./emulator/fixture";
import { fakeCluster, type FakeCluster } from "./fakeCluster";
import { chooseVictims, removeNode, type RemovalOptions } from "../src/removal";

const REGION = "cn-hangzhou";

describe("removal core", () => {
    const ctx = useEmulator();
    let c: FakeCluster;
    let opts: RemovalOptions;

    beforeEach(async () => {
        // fake: etcd-member-remove execs etcdctl in master 0's etcd static pod, which the real-cluster harness does not run
        c = await fakeCluster(ctx.emu, REGION);
        opts = { region: REGION, masterInstanceId: c.master, commands: c.commands, pollIntervalMs: 10, log: () => undefined };
    });

    it("a control-plane member that cannot reset leaves etcd through master 0", async () => {
        const id = ctx.emu.addInstance().instanceId;
        c.addNode(c.master, { name: "master-0" });
        c.addNode(id, { name: "master-1" });
        ctx.emu.stopInstance(id);
        const report = await removeNode({ instanceId: id, kind: "control-plane" }, opts);
        assert.deepStrictEqual(c.log.filter((x) => !x.endsWith("get-nodes")),
            [`${c.master}: drain master-1`, `${c.master}: etcd-member-remove master-1 via master-0`, `${c.master}: delete-node master-1`]);
        assert.deepStrictEqual(report.done, ["drain", "reset", "delete-node"]);
    });

    it("chooseVictims orders NotReady / Node-less, then workload pods, then newest", () => {
        const m = (instanceId: string, ready: boolean, workloadPods: number, createdAt: string, nodeName: string | null = instanceId) => ({ instanceId, nodeName, ready, workloadPods, createdAt });
        const members = [m("a", true, 0, "2026-01-01"), m("b", true, 0, "2026-01-03"), m("c", false, 9, "2026-01-01"), m("d", true, 5, "2026-01-02"), m("e", true, 0, "2026-01-02", null)];
        assert.deepStrictEqual(chooseVictims(members, 4).map((v) => v.instanceId), ["e", "c", "b", "a"]);
        assert.deepStrictEqual(chooseVictims(members, 0), []);
    });
});
