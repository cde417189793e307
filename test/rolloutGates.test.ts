/**
 * A rollout's gates (src/removal/rolloutGates.ts) as plain unit tests: what one reading of the pool and the cluster
 * makes a validation fail on, and the soak, on a stepped clock (no cloud, no emulator, no real time). The script that
 * reads the cluster runs against a real API server in test/realClusterRemoval.test.ts; the gates in a whole rollout,
 * in test/poolRotation.test.ts.
 */
import * as assert from "assert";
import { parseClusterHealth, soak, validateRollout, validationProblems, type ClusterHealth, type PoolMember } from "../src/removal";
import { steppedClock } from "../testing/steppedClock";

const member = (instanceId: string, outdated: boolean, ready: boolean, nodeName: string | null = `node-${instanceId}`): PoolMember & { outdated: boolean } =>
    ({ instanceId, nodeName, ready, workloadPods: 0, createdAt: "2026-12-01T00:00:00Z", outdated });

describe("a rollout's validation and soak", () => {
    const healthy = (): ClusterHealth => parseClusterHealth([
        "node\tnode-a\tTrue", "node\tnode-b\tFalse", "node\tnode-c\tTrue",
        "deployment\tkube-system/coredns\t2\t2",
    ].join("\n"));

    it("parses cluster-validate's lines: a Deployment without availableReplicas has 0 available, one without replicas asks for 1", () => {
        const h = parseClusterHealth("node\tn1\tTrue\nnode\tn2\tUnknown\ndeployment\tkube-system/a\t3\t\ndeployment\tkube-system/b\t\t1\npod\tkube-system/p\t\tPending\nfuture\tx\ty\n");
        assert.deepStrictEqual([...h.nodes], [["n1", true], ["n2", false]]);
        assert.deepStrictEqual(h.deployments, [{ name: "kube-system/a", replicas: 3, available: 0 }, { name: "kube-system/b", replicas: 1, available: 1 }]);
        assert.deepStrictEqual(h.unreadyPods, [{ name: "kube-system/p", node: "", phase: "Pending" }]);
    });

    it("a new member that is not a Ready Node fails it; an outdated NotReady one does not (the rollout replaces it first)", () => {
        assert.deepStrictEqual(validationProblems([member("a", false, true), member("b", true, false)], healthy()), []);
        assert.deepStrictEqual(validationProblems([member("a", false, true), member("b", false, false), member("d", false, false, null)], healthy()),
            ["new node(s) not Ready: b (node-b), d (no Node)"]);
    });

    it("a master's Node (control-plane role) not Ready, or listed as one and then gone, fails it; a listing of an earlier release (no control-plane lines) checks none", () => {
        const h = parseClusterHealth("node\tm0\tTrue\nnode\tm1\tUnknown\nnode\tw\tFalse\ncontrol-plane\tm0\ncontrol-plane\tm1\ncontrol-plane\tm2\n");
        assert.deepStrictEqual(h.controlPlane, ["m0", "m1", "m2"]);
        assert.deepStrictEqual(validationProblems([], h), ["control-plane Node(s) not Ready: m1, m2"]);
        assert.deepStrictEqual(validationProblems([], parseClusterHealth("node\tm1\tUnknown\n")), []);
    });

    it("a new member whose Node has no pod route (NetworkUnavailable True) fails it; an outdated one does not; a listing of an earlier release (no such column) checks none", () => {
        const h = parseClusterHealth("node\tnode-a\tTrue\tTrue\nnode\tnode-b\tTrue\tTrue\nnode\tnode-c\tTrue\tFalse\n");
        assert.deepStrictEqual(validationProblems([member("a", false, true), member("b", true, true), member("c", false, true)], h),
            ["new node(s) without their pod route (NetworkUnavailable; the CCM's route controller has not created it): a (node-a)"]);
        assert.deepStrictEqual(validationProblems([member("a", false, true)], parseClusterHealth("node\tnode-a\tTrue\n")), []);
    });

    it("a Deployment short of replicas fails it; a pod not Ready fails it on a Ready Node or unscheduled, not on a NotReady or gone Node", () => {
        const h = healthy();
        h.deployments.push({ name: "kube-flannel/x", replicas: 2, available: 1 });
        h.unreadyPods.push(
            { name: "kube-system/kube-proxy-1", node: "node-a", phase: "Running" },
            { name: "kube-system/kube-proxy-2", node: "node-b", phase: "Running" },
            { name: "kube-system/kube-proxy-3", node: "node-gone", phase: "Running" },
            { name: "kube-system/coredns-4", node: "", phase: "Pending" },
        );
        assert.deepStrictEqual(validationProblems([], h), [
            "Deployment kube-flannel/x: 1 of 2 replica(s) available",
            "pod kube-system/kube-proxy-1 on node-a not Ready (Running)",
            "pod kube-system/coredns-4 not scheduled not Ready (Pending)",
        ]);
    });

    it("validation waits until a reading passes, on the gate's clock; one that keeps failing pauses naming the problems", async () => {
        const clock = steppedClock();
        let readings = 0;
        const read = async () => {
            readings++;
            return { members: [member("a", false, readings >= 3)], health: healthy() };
        };
        await validateRollout({ poolName: "p", read, timeoutMs: 60_000, pollMs: 10, log: () => undefined, clock }, "after the surge");
        assert.strictEqual(readings, 3);
        assert.deepStrictEqual(clock.pauses, [2000, 2000], "polls at least 2 s apart");
        const never = async () => ({ members: [member("a", false, false)], health: healthy() });
        await assert.rejects(validateRollout({ poolName: "p", read: never, timeoutMs: 10_000, pollMs: 5000, log: () => undefined, clock: steppedClock() }, "before the rollout"),
            /pool p: rollout paused: the cluster failed validation before the rollout for 10 s: new node\(s\) not Ready: a \(node-a\)/);
    });

    it("soak waits its whole time on the clock, logging what is left; 0 waits nothing", async () => {
        const clock = steppedClock();
        const log: string[] = [];
        await soak("p", 75, "replacing 1 outdated node(s)", (m) => log.push(m), clock);
        assert.strictEqual(clock.now(), 75_000);
        assert.ok(clock.pauses.every((ms) => ms <= 30_000), "progress at least every half minute");
        const none = steppedClock();
        await soak("p", 0, "x", () => undefined, none);
        assert.deepStrictEqual(none.pauses, []);
    });
});
