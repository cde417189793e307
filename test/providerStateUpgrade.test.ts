/**
 * State written by the previous version of each provider this change touched runs the new code after one `pulumi up`:
 * the engine calls diff(old state, new inputs) and then update (never a replacement, which would re-join or reset a
 * master, or lose the backup key). ControlPlaneMember 3 → 6, JoinInfo 2 → 3, against the emulator and the fake cluster
 * (testing/fakeCluster.ts) where they reach a master.
 */
import * as assert from "assert";
import { useEmulator } from "../testing/emulator/fixture";
import { fakeCluster } from "../testing/fakeCluster";
import { CONTROL_PLANE_MEMBER_PROVIDER_VERSION, controlPlaneMemberProvider } from "../src/providers/controlPlaneMember";
import { JOIN_INFO_PROVIDER_VERSION, joinInfoProvider } from "../src/providers/joinInfo";
import { backupKeyProvider, BACKUP_KEY_PROVIDER_VERSION } from "../src/providers/backupKey";
import { masterMaintenanceProvider } from "../src/providers/masterMaintenance";
import { createCommand } from "../testing/savedCommands";

describe("provider state written by the previous version, after one pulumi up", () => {
    const ctx = useEmulator();

    // Version 3 state goes straight to the current version (6) in one `pulumi up`; 5 → 6 is test/providerUpgrades.test.ts.
    it("ControlPlaneMember 3 → 6: an update that keeps its node name and touches nothing; then the new code removes it with the quorum check", async () => {
        assert.strictEqual(CONTROL_PLANE_MEMBER_PROVIDER_VERSION, "6");
        const c = await fakeCluster(ctx.emu, "cn-hangzhou");
        c.addNode(c.master, { name: "master-0", controlPlane: true });
        const m1 = c.addMaster();
        const v2 = { region: "cn-hangzhou", masterInstanceId: c.master, masterInstanceIds: c.masters, memberInstanceId: m1, joinCommandId: "c-join", joinSecretsScript: "#!/bin/bash\n",
            commands: c.commands, routeTableId: ctx.emu.addRouteTable().routeTableId, podCidr: "172.16.0.0/16", providerVersion: "3", nodeName: "master-1", pollSeconds: 0.02 };
        const news = { ...v2, providerVersion: CONTROL_PLANE_MEMBER_PROVIDER_VERSION };
        delete (news as Partial<typeof v2>).nodeName;
        const d = await controlPlaneMemberProvider.diff!(m1, v2, news);
        assert.deepStrictEqual([d.changes, d.replaces], [true, []]);
        const before = c.log.length;
        const u = await controlPlaneMemberProvider.update!(m1, v2, news);
        assert.strictEqual(u.outs.nodeName, "master-1");
        assert.strictEqual(c.log.length, before, "an update runs nothing on the masters");
        // The state the update wrote runs the new delete: quorum read first (2 members healthy), then the removal.
        await controlPlaneMemberProvider.delete!(m1, u.outs);
        assert.deepStrictEqual([...c.etcd.keys()], ["master-0"]);
    });

    it("ControlPlaneMember 5 → 6, master 0's own member (masters 1..n as its masters): an update; its delete then leaves through master 1", async () => {
        const c = await fakeCluster(ctx.emu, "cn-hangzhou", { masters: 3 });
        c.addNode(c.master, { name: "master-0", controlPlane: true });
        const [m0, m1, m2] = c.masters;
        const v5 = { region: "cn-hangzhou", masterInstanceId: m1, masterInstanceIds: [m1, m2], memberInstanceId: m0, joinCommandId: "c-join", joinSecretsScript: "#!/bin/bash\n",
            commands: c.commands, providerVersion: "5", nodeName: "master-0", pollSeconds: 0.02 };
        const news = { ...v5, providerVersion: CONTROL_PLANE_MEMBER_PROVIDER_VERSION };
        delete (news as Partial<typeof v5>).nodeName;
        const d = await controlPlaneMemberProvider.diff!(m0, v5, news);
        assert.deepStrictEqual([d.changes, d.replaces], [true, []]);
        const u = await controlPlaneMemberProvider.update!(m0, v5, news);
        await controlPlaneMemberProvider.delete!(m0, u.outs);
        assert.deepStrictEqual([...c.etcd.keys()].sort(), ["master-1", "master-2"]);
        // (its re-created master then joins as the third member: test/masterZeroRecreate.test.ts, refused by version 5 and before)
    });

    it("JoinInfo 2 → 3: a new master 0 in a state of version 2 is an update that keeps the CA pin and the credential, without asking the new master", async () => {
        assert.strictEqual(JOIN_INFO_PROVIDER_VERSION, "3");
        const scripts = { initStatus: "#!/bin/bash\n", stackCredential: "#!/bin/bash\n", stackCredentialRevoke: "#!/bin/bash\n" };
        const v2 = { region: "cn-hangzhou", masterInstanceId: "i-old0", kubeconfigServer: "https://nlb:6443", scripts, providerVersion: "2",
            caCertHash: `sha256:${"a".repeat(64)}`, kubeconfig: "apiVersion: v1\nclusters: [{cluster: {server: https://nlb:6443}}]\n", credential: "alicloud-kubeadm-stack-abcd1234" };
        const news = { region: "cn-hangzhou", masterInstanceId: "i-new0", kubeconfigServer: "https://nlb:6443", scripts, providerVersion: "3" };
        const d = await joinInfoProvider.diff!("i-old0/join-info", v2, news);
        assert.deepStrictEqual([d.changes, d.replaces], [true, []], "a new master 0 never replaces the join material");
        const u = await joinInfoProvider.update!("i-old0/join-info", v2, news);
        assert.deepStrictEqual([u.outs.caCertHash, u.outs.kubeconfig, u.outs.credential], [v2.caCertHash, v2.kubeconfig, v2.credential]);
        assert.deepStrictEqual(ctx.emu.calls, [], "nothing was asked of any instance");
    });

    it("BackupKey: a new generation is an update that retires the old key pair (kept, secret), never a replacement", async () => {
        const created = await backupKeyProvider.create!({ generation: 1, providerVersion: BACKUP_KEY_PROVIDER_VERSION });
        const olds = created.outs;
        const d = await backupKeyProvider.diff!(created.id, olds, { generation: 2, providerVersion: BACKUP_KEY_PROVIDER_VERSION });
        assert.deepStrictEqual([d.changes, d.replaces], [true, []]);
        const u = await backupKeyProvider.update!(created.id, olds, { generation: 2, providerVersion: BACKUP_KEY_PROVIDER_VERSION });
        assert.notStrictEqual(u.outs.keyId, olds.keyId);
        assert.deepStrictEqual(u.outs.retired, [{ keyId: olds.keyId, publicKey: olds.publicKey, privateKey: olds.privateKey }]);
        const same = await backupKeyProvider.update!(created.id, u.outs, { generation: 2, providerVersion: BACKUP_KEY_PROVIDER_VERSION });
        assert.strictEqual(same.outs.keyId, u.outs.keyId, "no new key without a new generation");
    });

    it("MasterMaintenance: a new command reaches every master, one at a time; a replaced master alone gets the unchanged one", async () => {
        const emu = ctx.emu;
        const masters = emu.addInstances(3, { regionId: "cn-hangzhou" });
        const ran: string[] = [];
        emu.onCommand(/maintenance-installed/, (x) => { ran.push(x.instanceId); return { output: "maintenance-installed\n" }; });
        const v1 = await createCommand("cn-hangzhou", { commandName: "m1", script: "#!/bin/bash\necho maintenance-installed\n", parameters: false, timeoutSeconds: 60, description: "m" });
        const v2 = await createCommand("cn-hangzhou", { commandName: "m2", script: "#!/bin/bash\necho maintenance-installed 2\n", parameters: false, timeoutSeconds: 60, description: "m" });
        const inputs = { region: "cn-hangzhou", masterInstanceIds: masters, commandId: v1, pollIntervalMs: 10, providerVersion: "1" };
        await masterMaintenanceProvider.create!(inputs);
        assert.deepStrictEqual(ran, masters);
        ran.length = 0;
        await masterMaintenanceProvider.update!("m", inputs, { ...inputs, commandId: v2 });
        assert.deepStrictEqual(ran, masters);
        ran.length = 0;
        const replaced = emu.addInstance({ regionId: "cn-hangzhou" }).instanceId;
        await masterMaintenanceProvider.update!("m", { ...inputs, commandId: v2 }, { ...inputs, commandId: v2, masterInstanceIds: [masters[0], masters[1], replaced] });
        assert.deepStrictEqual(ran, [replaced]);
        emu.setAgentOffline(masters[1]);
        await assert.rejects(masterMaintenanceProvider.update!("m", { ...inputs, commandId: v2 }, { ...inputs, commandId: v1 }), new RegExp(`master ${masters[1]}: installing the backup and renewal timers failed`));
    });
});
