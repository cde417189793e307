import * as assert from "assert";
import { useEmulator } from "./emulator/fixture";
import { fakeCluster, type FakeCluster } from "./fakeCluster";
import { controlPlaneMemberProvider, joinControlPlaneMember } from "../src/providers/controlPlaneMember";
import { installNodeChannels, sealReply } from "./nodeChannel";
import { renderControlPlaneJoinCommand } from "../src/shell/render";
import { OPERATIONS } from "../src/rules";
import { createCommand, fill, operation } from "./savedCommands";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { renderOperation } from "../src/shell/render";
import { newRecipient } from "../src/cloud/channel";

const TOKEN = "k8sabc.0123456789abcdef";
const KEY = "f".repeat(64);
const ENC = "q".repeat(43) + "=";

describe("ControlPlaneMember", () => {
    const ctx = useEmulator();
    const joinScript = renderControlPlaneJoinCommand({
        region: "cn-shanghai", kubernetesVersion: "1.34.2", apiEndpoint: "nlb-x.example:6443", caCertHash: `sha256:${"a".repeat(64)}`,
    });
    /** The fake cluster and the saved control-plane join command, as the Cluster component saves it. */
    async function setup(): Promise<{ c: FakeCluster; joinCommandId: string; member: string }> {
        // fake: a control-plane kubeadm join (certificates, a second etcd member, static pods) cannot run against the harness; the handler plays it
        const c = await fakeCluster(ctx.emu, "cn-shanghai");
        const joinCommandId = await createCommand("cn-shanghai", {
            commandName: "test-control-plane-join", script: joinScript, parameters: true,
            timeoutSeconds: OPERATIONS["control-plane-join"].timeoutSeconds, description: OPERATIONS["control-plane-join"].description,
        });
        return { c, joinCommandId, member: ctx.emu.addInstance({ regionId: "cn-shanghai" }).instanceId };
    }
    const inputs = (s: { c: FakeCluster; joinCommandId: string; member: string }) => ({
        region: "cn-shanghai", masterInstanceId: s.c.master, memberInstanceId: s.member, joinCommandId: s.joinCommandId, commands: s.c.commands, pollSeconds: 0.02,
    });

    it("gets a fresh certificate key and token from master 0 sealed, sends them sealed to the member's one-use key, waits for Ready", async () => {
        const { emu } = ctx;
        const s = await setup();
        const { c, member } = s;
        const channels = installNodeChannels(emu);
        let opened = "";
        emu.onCommand(operation("join-secrets"), (x) => {
            c.log.push(`${x.instanceId}: join-secrets`);
            return { output: sealReply(x.script, `${TOKEN} ${KEY} ${ENC}`) };
        });
        emu.onCommand(/kubeadm join --config/, (x) => {
            opened = channels.take(x.instanceId, x.script);
            c.log.push(`${x.instanceId}: join`);
            c.addNode(member, { name: "master-1", pool: "control-plane" });
            return { output: "" };
        });
        const logs: string[] = [];
        const name = await joinControlPlaneMember(inputs(s), (m) => logs.push(m));
        assert.strictEqual(name, "master-1");
        assert.deepStrictEqual(c.log, [`${c.master}: get-nodes`, `${c.master}: join-secrets`, `${member}: join`, `${c.master}: get-nodes`]);
        assert.strictEqual(opened, `${TOKEN} ${KEY} ${ENC}`, "the member opened the token, the certificate key and master 0's encryption key with the key it made");
        assert.strictEqual(channels.keys.get(member)?.size, 0, "its one-use key is gone");
        assert.strictEqual(channels.received.get(member)?.size, 0, "the received secret was read and deleted");
        const join = emu.callsOf("InvokeCommand").find((x) => x.params.CommandId === s.joinCommandId)!;
        assert.strictEqual(join.params["InstanceId.1"], member);
        assert.deepStrictEqual(Object.keys(JSON.parse(join.params.Parameters)), ["channel"]);
        assert.ok(logs.every((l) => !l.includes(TOKEN) && !l.includes(KEY)), "secrets never logged");
        // No request, command content, parameter or output holds a secret in clear.
        for (const secret of [TOKEN, KEY, ENC]) {
            assert.ok(emu.calls.every((x) => !x.body.includes(secret) && !x.url.includes(secret) && !Buffer.from(x.params.CommandContent ?? "", "base64").toString().includes(secret)));
            assert.ok([...emu.state.invocations.values()].every((inv) => !JSON.stringify(inv).includes(secret)));
        }
    });

    it("a failed join reports the join log tail and never the secrets", async () => {
        const { emu } = ctx;
        const s = await setup();
        installNodeChannels(emu);
        emu.onCommand(operation("join-secrets"), (x) => ({ output: sealReply(x.script, `${TOKEN} ${KEY}`) }));
        emu.onCommand(/kubeadm join --config/, { exitCode: 1, output: `token ${TOKEN}` });
        emu.onCommand(operation("doctor-bootstrap-log"), { output: "[ERROR]: etcd cluster is not healthy\n" });
        await assert.rejects(joinControlPlaneMember(inputs(s)),
            (err: Error) => /join --control-plane failed on .*etcd cluster is not healthy/s.test(err.message) && !err.message.includes(TOKEN) && !err.message.includes(KEY));
    });

    it("an answer to join-secrets that is not sealed to this call's key is refused without echoing it", async () => {
        const { emu } = ctx;
        const s = await setup();
        emu.onCommand(operation("join-secrets"), { output: `${TOKEN} ${KEY}\n` });
        await assert.rejects(joinControlPlaneMember(inputs(s)), (e: Error) => !e.message.includes(TOKEN) && !e.message.includes(KEY) && /sealed/.test(e.message));
        assert.strictEqual(emu.callsOf("InvokeCommand").filter((x) => x.params.CommandId === s.joinCommandId).length, 0, "no join attempted");
    });

    it("delete: drain → reset (leaves etcd) → the member checked through another master → delete Node", async () => {
        const s = await setup();
        const { c, member } = s;
        c.addNode(c.master, { name: "master-0", controlPlane: true });
        c.addNode(member, { name: "master-1", controlPlane: true });
        c.etcd.set("master-1", ctx.emu.instances.get(member)!.privateIp);
        await controlPlaneMemberProvider.delete!(member, { ...inputs(s), masterInstanceIds: [c.master, member] });
        assert.deepStrictEqual(c.log.filter((x) => !x.endsWith("get-nodes")), [
            `${c.master}: drain master-1`, `${member}: reset`, `${c.master}: etcd-member-remove master-1 via master-0`, `${c.master}: delete-node master-1`]);
        assert.deepStrictEqual([...c.etcd.keys()], ["master-0"], "out of etcd");
        assert.ok(!c.nodes.has("master-1"));
    });

    it("delete with master 0 stopped (3 masters): runs through master 1, leaves etcd through master 1's etcd", async () => {
        const s = await setup();
        const { c } = s;
        c.addNode(c.master, { name: "master-0", controlPlane: true });
        const m1 = c.addMaster(), m2 = c.addMaster();
        ctx.emu.stopInstance(c.master);
        c.nodes.get("master-0")!.ready = false;
        await controlPlaneMemberProvider.delete!(m2, { ...inputs(s), memberInstanceId: m2, masterInstanceIds: c.masters });
        assert.deepStrictEqual([...c.etcd.keys()], ["master-0", "master-1"]);
        assert.ok(!c.nodes.has("master-2"));
        assert.ok(c.log.filter((x) => !x.startsWith(`${m2}:`)).every((x) => x.startsWith(`${m1}:`)), c.log.join("\n"));
    });

    it("a new join command or new command ids are an in-place update, never a replacement (which would reset the member)", async () => {
        const olds = { region: "r", masterInstanceId: "i-0", memberInstanceId: "i-1", joinCommandId: "c-1", commands: { drain: "c-d" }, providerVersion: "1" };
        for (const news of [{ ...olds, joinCommandId: "c-2" }, { ...olds, commands: { drain: "c-e" } }]) {
            const d = await controlPlaneMemberProvider.diff!("i-1", olds, news);
            assert.deepStrictEqual([d.changes, d.replaces], [true, []]);
        }
        assert.deepStrictEqual((await controlPlaneMemberProvider.diff!("i-1", olds, { ...olds, memberInstanceId: "i-2" })).replaces, ["memberInstanceId"]);
    });

});

describe("join-secrets on a master (the real script, fake kubeadm) and the member's encryption key", () => {
    for (const encrypted of [true, false]) {
        it(`answers <token> <certificate key> ${encrypted ? "<master 0's encryption key>" : "-"} sealed, none of it in clear`, () => {
            const dir = fs.mkdtempSync(path.join(os.tmpdir(), "join-secrets-"));
            try {
                fs.mkdirSync(path.join(dir, "bin"));
                fs.writeFileSync(path.join(dir, "bin", "kubeadm"), `#!/bin/bash
case "$1 $2" in
  "init phase") printf '[upload-certs] Using certificate key:\\n%s\\n' "${KEY}" ;;
  "token create") echo "${TOKEN}" ;;
  *) exit 2 ;;
esac
`, { mode: 0o755 });
                if (encrypted) {
                    const pki = path.join(dir, "root", "etc", "kubernetes", "pki");
                    fs.mkdirSync(pki, { recursive: true });
                    fs.writeFileSync(path.join(pki, "alicloud-kubeadm-encryption.yaml"), `kind: EncryptionConfiguration\nresources:\n  - resources: ["secrets"]\n    providers:\n      - secretbox:\n          keys:\n            - name: alicloud-kubeadm-1\n              secret: ${ENC}\n      - identity: {}\n`);
                }
                const key = newRecipient();
                const r = spawnSync("bash", ["-c", fill(renderOperation("join-secrets"), { recipient: key.publicKey })],
                    { encoding: "utf8", env: { ...process.env, PATH: `${dir}/bin:${process.env.PATH}`, AK_ROOT: path.join(dir, "root") } });
                assert.strictEqual(r.status, 0, r.stderr);
                assert.strictEqual(key.open(r.stdout.trim()), `${TOKEN} ${KEY} ${encrypted ? ENC : "-"}`);
                for (const secret of [TOKEN, KEY, ENC]) assert.ok(!r.stdout.includes(secret) && !r.stderr.includes(secret), "nothing in clear");
                if (!encrypted) {
                    // An API server that encrypts with a key the script cannot read: refused, not answered without it.
                    const manifests = path.join(dir, "root", "etc", "kubernetes", "manifests");
                    fs.mkdirSync(manifests, { recursive: true });
                    fs.writeFileSync(path.join(manifests, "kube-apiserver.yaml"), "    - --encryption-provider-config=/etc/kubernetes/pki/alicloud-kubeadm-encryption.yaml\n");
                    const refused = spawnSync("bash", ["-c", fill(renderOperation("join-secrets"), { recipient: key.publicKey })],
                        { encoding: "utf8", env: { ...process.env, PATH: `${dir}/bin:${process.env.PATH}`, AK_ROOT: path.join(dir, "root") } });
                    assert.strictEqual(refused.status, 1);
                    assert.match(refused.stderr, /encrypts Secrets but its encryption config .* cannot be read/);
                    assert.strictEqual(refused.stdout.trim(), "", "nothing sealed");
                }
            } finally {
                fs.rmSync(dir, { recursive: true, force: true });
            }
        });
    }
});
