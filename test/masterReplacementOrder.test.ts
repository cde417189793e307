/**
 * `pulumi up --replace` of several masters in one run (docs/disaster-recovery.md#one-master-at-a-time). The preview
 * cannot see replacement targets, so nothing refuses them up front; what keeps etcd's quorum is the order: every master
 * depends on the one before (test/controlPlane.test.ts), so Pulumi replaces them one at a time, each replacement
 * starting with its ControlPlaneMember's delete, which re-checks the quorum after the member before it left. This runs
 * those deletes in that order against the emulator and the fake cluster (testing/fakeCluster.ts: etcd members healthy
 * while their machine runs), and reads etcd's members from its state after each.
 */
import * as assert from "assert";
import { useEmulator } from "../testing/emulator/fixture";
import { fakeCluster, type FakeCluster } from "../testing/fakeCluster";
import { controlPlaneMemberProvider } from "../src/providers/controlPlaneMember";
import { renderOperation } from "../src/shell/render";
import { quorumOf } from "../src/recovery/quorum";

describe("several masters replaced in one run: one after another, each removal re-checking the quorum", function () {
    this.timeout(60_000);
    const ctx = useEmulator();

    /** The fake cluster with master 0's Node too (the fake leaves it out; a real master 0 has one). */
    async function cluster(masters: number): Promise<FakeCluster> {
        const c = await fakeCluster(ctx.emu, "cn-hangzhou", { masters });
        c.addNode(c.masters[0], { name: "master-0", controlPlane: true });
        return c;
    }
    /** What a master's ControlPlaneMember holds in its state (its inputs and its Node's name). */
    const state = (c: FakeCluster, k: number) => ({
        region: c.region, masterInstanceId: c.masters[0], masterInstanceIds: c.masters, memberInstanceId: c.masters[k], commands: c.commands,
        joinCommandId: "c-join", joinSecretsScript: renderOperation("join-secrets"), pollSeconds: 0.01, nodeName: `master-${k}`,
    });
    /** The members left, and whether the healthy ones still make a quorum. */
    const etcd = (c: FakeCluster) => {
        const running = new Set([...ctx.emu.instances.values()].filter((i) => i.status === "Running").map((i) => i.privateIp));
        const members = [...c.etcd.entries()];
        return { names: members.map(([n]) => n).sort(), quorum: members.filter(([, ip]) => running.has(ip)).length >= quorumOf(members.length) };
    };
    /** The replacement of master k as Pulumi runs it: its member's delete, then the instance deleted (and created again, not yet joined). */
    async function replace(c: FakeCluster, k: number): Promise<void> {
        await controlPlaneMemberProvider.delete!(c.masters[k], state(c, k));
        ctx.emu.releaseInstance(c.masters[k]);
    }

    it("five masters, one dead: replacing three in one run removes two members in turn and refuses the third, which would leave no quorum", async () => {
        const c = await cluster(5);
        ctx.emu.stopInstance(c.masters[4]); // master 4's machine is dead: its member unhealthy
        await replace(c, 1);
        assert.deepStrictEqual(etcd(c), { names: ["master-0", "master-2", "master-3", "master-4"], quorum: true });
        await replace(c, 2);
        assert.deepStrictEqual(etcd(c), { names: ["master-0", "master-3", "master-4"], quorum: true });
        await assert.rejects(replace(c, 3), /removing it now is refused: removing master-3 would leave 1 healthy of 2 members, under quorum/);
        assert.deepStrictEqual(etcd(c), { names: ["master-0", "master-3", "master-4"], quorum: true }, "the refused member stays, etcd keeps its quorum");
        assert.ok(ctx.emu.instances.get(c.masters[3])?.status === "Running", "and its machine is not deleted (Pulumi stops at the failed delete)");
    });

    it("three healthy masters: replacing two in one run goes one after another, never under quorum", async () => {
        const c = await cluster(3);
        await replace(c, 1);
        assert.deepStrictEqual(etcd(c), { names: ["master-0", "master-2"], quorum: true });
        await replace(c, 2);
        assert.deepStrictEqual(etcd(c), { names: ["master-0"], quorum: true }, "master 0 alone, healthy: the new members join it one at a time");
    });
});
