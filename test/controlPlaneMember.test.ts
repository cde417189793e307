import * as assert from "assert";
import { useEmulator } from "../testing/emulator/fixture";
import { fakeCluster, type FakeCluster } from "../testing/fakeCluster";
import { CONTROL_PLANE_MEMBER_PROVIDER_VERSION, controlPlaneMemberProvider, joinControlPlaneMember } from "../src/providers/controlPlaneMember";
import { installNodeChannels, sealReply } from "./nodeChannel";
import { renderControlPlaneJoinCommand } from "../src/shell/render";
import { fillOperation, OPERATIONS } from "../src/rules";
import { createCommand, fill, operation } from "../testing/savedCommands";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { renderOperation } from "../src/shell/render";
import { newRecipient, seal } from "../src/cloud/channel";
import * as crypto from "crypto";
import * as zlib from "zlib";
import { parseAllDocuments } from "yaml";
import { MAX_ENCRYPTION_CONFIG_GZ_B64, SEALED_PATTERN } from "../src/rules";
import { parseJoinSecrets } from "../src/cloud/operations";
import { callsOf, makeSandbox, type Sandbox } from "../testing/sandbox";

const TOKEN = "k8sabc.0123456789abcdef";
const KEY = "f".repeat(64);
/** Two aescbc keys in the middle of a rotation: key1 (new) seals, key2 (old) still opens what it sealed. */
const KEY1 = Buffer.alloc(32, 1).toString("base64");
const KEY2 = Buffer.alloc(32, 2).toString("base64");
const ROTATING = `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: ["secrets"]
    providers:
      - aescbc:
          keys:
            - name: key1
              secret: ${KEY1}
            - name: key2
              secret: ${KEY2}
      - identity: {}
`;
/** What join-secrets sends for it: the whole file, gzip + Base64. */
const ENC = zlib.gzipSync(ROTATING).toString("base64");

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
        joinSecretsScript: renderOperation("join-secrets"),
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
        assert.strictEqual(opened, `${TOKEN} ${KEY} ${ENC}`, "the member opened the token, the certificate key and the masters' whole encryption config with the key it made");
        assert.strictEqual(channels.keys.get(member)?.size, 0, "its one-use key is gone");
        assert.strictEqual(channels.received.get(member)?.size, 0, "the received secret was read and deleted");
        const join = emu.callsOf("InvokeCommand").find((x) => x.params.CommandId === s.joinCommandId)!;
        assert.strictEqual(join.params["InstanceId.1"], member);
        assert.deepStrictEqual(Object.keys(JSON.parse(join.params.Parameters)), ["channel"]);
        const asked = emu.callsOf("RunCommand").filter((x) => operation("join-secrets").test(Buffer.from(x.params.CommandContent, "base64").toString()));
        assert.deepStrictEqual(asked.map((x) => x.params["InstanceId.1"]), [c.master], "join-secrets ran once with RunCommand on master 0");
        assert.ok(!("join-secrets" in c.commands), "join-secrets is not among the saved commands");
        assert.ok(logs.every((l) => !l.includes(TOKEN) && !l.includes(KEY)), "secrets never logged");
        // No request, command content, parameter or output holds a secret in clear.
        for (const secret of [TOKEN, KEY, ENC, KEY1, KEY2]) {
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

    it("an encryption config in join-secrets' answer that is not a gzip + Base64 EncryptionConfiguration is refused without echoing it; nothing is sent to the member", async () => {
        const { emu } = ctx;
        const s = await setup();
        const channels = installNodeChannels(emu);
        const notConfig = zlib.gzipSync(`secret: ${KEY1}\n`).toString("base64");
        for (const bad of [KEY1, "%%%", notConfig]) {
            emu.onCommand(operation("join-secrets"), (x) => ({ output: sealReply(x.script, `${TOKEN} ${KEY} ${bad}`) }));
            await assert.rejects(joinControlPlaneMember(inputs(s)),
                (e: Error) => /not an EncryptionConfiguration in gzip \+ Base64/.test(e.message) && !e.message.includes(bad) && !e.message.includes(KEY1) && !e.message.includes(TOKEN));
        }
        // Longer than the channel carries (a sealed answer that long does not even open: SEALED_PATTERN).
        const tooLong = zlib.gzipSync(ROTATING + crypto.randomBytes(3000).toString("base64")).toString("base64");
        assert.throws(() => parseJoinSecrets(`${TOKEN} ${KEY} ${tooLong}`), (e: Error) => /of at most 2800 characters/.test(e.message) && !e.message.includes(tooLong));
        assert.strictEqual(emu.callsOf("InvokeCommand").filter((x) => x.params.CommandId === s.joinCommandId).length, 0, "no join attempted");
        assert.strictEqual([...channels.received.values()].reduce((n, m) => n + m.size, 0), 0, "nothing sent to the member");
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

    it("delete with master 0 unreachable (agent offline, NotReady; its etcd member runs) (3 masters): runs through master 1, leaves etcd through master 1's etcd", async () => {
        const s = await setup();
        const { c } = s;
        c.addNode(c.master, { name: "master-0", controlPlane: true });
        const m1 = c.addMaster(), m2 = c.addMaster();
        ctx.emu.setAgentOffline(c.master);
        c.nodes.get("master-0")!.ready = false;
        await controlPlaneMemberProvider.delete!(m2, { ...inputs(s), memberInstanceId: m2, masterInstanceIds: c.masters });
        assert.deepStrictEqual([...c.etcd.keys()], ["master-0", "master-1"]);
        assert.ok(!c.nodes.has("master-2"));
        assert.ok(c.log.filter((x) => !x.startsWith(`${m2}:`)).every((x) => x.startsWith(`${m1}:`)), c.log.join("\n"));
    });

    it("delete with master 0 stopped (3 masters): removing master 2 would leave one healthy member of two, so it is refused before any step", async () => {
        const s = await setup();
        const { c } = s;
        c.addNode(c.master, { name: "master-0", controlPlane: true });
        c.addMaster();
        const m2 = c.addMaster();
        ctx.emu.stopInstance(c.master);
        c.nodes.get("master-0")!.ready = false;
        const before = c.log.length;
        await assert.rejects(controlPlaneMemberProvider.delete!(m2, { ...inputs(s), memberInstanceId: m2, masterInstanceIds: c.masters }),
            /removing master-2 would leave 1 healthy of 2 members, under quorum/);
        assert.deepStrictEqual([...c.etcd.keys()], ["master-0", "master-1", "master-2"], "etcd untouched");
        assert.ok(c.nodes.has("master-2"), "its Node untouched");
        assert.deepStrictEqual(c.log.slice(before).filter((x) => !x.endsWith("get-nodes")), [], "nothing but listings ran");
    });

    it("a join into an etcd that already has a member per master, or has an unhealthy member, is refused before any secret is asked for", async () => {
        const s = await setup();
        const { c } = s;
        c.addNode(c.master, { name: "master-0", controlPlane: true });
        c.addMaster();
        const m2 = c.addMaster();
        // master 2 re-created as `extra` while its old member is still in etcd: three members for three masters already
        const extra = ctx.emu.addInstance({ regionId: "cn-shanghai" }).instanceId;
        await assert.rejects(joinControlPlaneMember({ ...inputs(s), memberInstanceId: extra, masterInstanceIds: [c.masters[0], c.masters[1], extra] }), /3 members for 3 masters .*: a join would make 4/);
        // master 0's own member reaches the cluster through masters 1 and 2 only: the member counts among the masters all the same
        await assert.rejects(joinControlPlaneMember({ ...inputs(s), masterInstanceId: c.masters[1], memberInstanceId: extra, masterInstanceIds: [c.masters[1], c.masters[2]] }),
            /3 members for 3 masters .*: a join would make 4/);
        ctx.emu.stopInstance(m2);
        await assert.rejects(joinControlPlaneMember({ ...inputs(s), memberInstanceId: extra, masterInstanceIds: [...c.masters, extra] }), /not every etcd member is healthy/);
        assert.ok(!c.log.some((x) => x.includes("join-secrets")));
    });

    it("a new master 0 is an in-place update of every member (never a replacement, which would remove it from etcd); only a new member instance replaces, delete first", async () => {
        const olds = { region: "r", masterInstanceId: "i-0", memberInstanceId: "i-1", joinCommandId: "c-1", joinSecretsScript: "a", commands: { drain: "c-d" }, providerVersion: "3" };
        const d = await controlPlaneMemberProvider.diff!("i-1", olds, { ...olds, masterInstanceId: "i-0b", masterInstanceIds: ["i-0b", "i-1"], providerVersion: "4" });
        assert.deepStrictEqual([d.changes, d.replaces], [true, []]);
        const r = await controlPlaneMemberProvider.diff!("i-1", olds, { ...olds, memberInstanceId: "i-1b" });
        assert.deepStrictEqual([r.replaces, r.deleteBeforeReplace], [["memberInstanceId"], true]);
    });

    it("state written by provider version 2 (join-secrets a saved command) runs the new code after one pulumi up: updated in place, then removed with the new code", async () => {
        const s = await setup();
        const { c, member } = s;
        c.addNode(c.master, { name: "master-0", controlPlane: true });
        c.addNode(member, { name: "master-1", controlPlane: true });
        c.etcd.set("master-1", ctx.emu.instances.get(member)!.privateIp);
        const { joinSecretsScript: _none, ...v2Inputs } = inputs(s);
        const v2 = { ...v2Inputs, commands: { ...c.commands, "join-secrets": "c-old-join-secrets", "token-create": "c-old-token-create" }, providerVersion: "2", nodeName: "master-1" };
        const news = { ...inputs(s), providerVersion: CONTROL_PLANE_MEMBER_PROVIDER_VERSION };
        const d = await controlPlaneMemberProvider.diff!(member, v2, news);
        assert.deepStrictEqual([d.changes, d.replaces], [true, []], "an update: the member is not reset");
        const upd = await controlPlaneMemberProvider.update!(member, v2, news);
        const outs = upd.outs as typeof news & { nodeName: string };
        assert.deepStrictEqual([outs.nodeName, outs.providerVersion, outs.joinSecretsScript], ["master-1", CONTROL_PLANE_MEMBER_PROVIDER_VERSION, renderOperation("join-secrets")]);
        assert.deepStrictEqual(c.log.filter((x) => !x.endsWith("get-nodes")), [], "the update ran nothing");
        await controlPlaneMemberProvider.delete!(member, { ...outs, masterInstanceIds: [c.master, member] });
        assert.deepStrictEqual([...c.etcd.keys()], ["master-0"], "removed by the new code");
        assert.ok(!c.nodes.has("master-1"));
    });

    it("a new join command, join-secrets script or new command ids are an in-place update, never a replacement (which would reset the member)", async () => {
        const olds = { region: "r", masterInstanceId: "i-0", memberInstanceId: "i-1", joinCommandId: "c-1", joinSecretsScript: "a", commands: { drain: "c-d" }, providerVersion: "1" };
        for (const news of [{ ...olds, joinCommandId: "c-2" }, { ...olds, commands: { drain: "c-e" } }, { ...olds, joinSecretsScript: "b" }]) {
            const d = await controlPlaneMemberProvider.diff!("i-1", olds, news);
            assert.deepStrictEqual([d.changes, d.replaces], [true, []]);
        }
        assert.deepStrictEqual((await controlPlaneMemberProvider.diff!("i-1", olds, { ...olds, memberInstanceId: "i-2" })).replaces, ["memberInstanceId"]);
    });

});

describe("join-secrets on a master (the real script, fake kubeadm) and the member's encryption config", () => {
    const dirs: string[] = [];
    const sandboxes: Sandbox[] = [];
    after(() => {
        dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true }));
        sandboxes.forEach((sb) => sb.cleanup());
    });
    const PKI_CONFIG = "/etc/kubernetes/pki/alicloud-kubeadm-encryption.yaml";
    const MANIFEST = "/etc/kubernetes/manifests/kube-apiserver.yaml";

    /** Runs the rendered join-secrets on a fake master whose root holds `files`; opens its answer. */
    function joinSecretsOn(files: Record<string, string>): { status: number | null; stdout: string; stderr: string; opened?: string; kubeadm: string[] } {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "join-secrets-"));
        dirs.push(dir);
        fs.mkdirSync(path.join(dir, "bin"));
        fs.writeFileSync(path.join(dir, "bin", "kubeadm"), `#!/bin/bash
echo "$1 $2" >>"${dir}/kubeadm-calls"
case "$1 $2" in
  "init phase") printf '[upload-certs] Using certificate key:\\n%s\\n' "${KEY}" ;;
  "token create") echo "${TOKEN}" ;;
  *) exit 2 ;;
esac
`, { mode: 0o755 });
        for (const [p, content] of Object.entries(files)) {
            fs.mkdirSync(path.dirname(path.join(dir, "root", p)), { recursive: true });
            fs.writeFileSync(path.join(dir, "root", p), content, { mode: 0o600 });
        }
        const key = newRecipient();
        const r = spawnSync("bash", ["-c", fillOperation(renderOperation("join-secrets"), "join-secrets", { recipient: key.publicKey })],
            { encoding: "utf8", env: { ...process.env, PATH: `${dir}/bin:${process.env.PATH}`, AK_ROOT: path.join(dir, "root") } });
        const calls = fs.existsSync(path.join(dir, "kubeadm-calls")) ? fs.readFileSync(path.join(dir, "kubeadm-calls"), "utf8").trim().split("\n") : [];
        return { status: r.status, stdout: r.stdout, stderr: r.stderr, opened: r.status === 0 ? key.open(r.stdout.trim()) : undefined, kubeadm: calls };
    }
    const keysOf = (yaml: string) => (parseAllDocuments(yaml)[0].toJS() as { resources: Array<{ providers: Array<Record<string, { keys?: Array<{ name: string; secret: string }> }>> }> })
        .resources.flatMap((r) => r.providers.map((p) => Object.entries(p).map(([kind, v]) => `${kind}:${(v.keys ?? []).map((k) => `${k.name}=${k.secret}`).join(",")}`)[0]));

    it("mid-rotation (aescbc key1 new, key2 old): answers the whole EncryptionConfiguration, both keys in order, sealed; none of it in clear", () => {
        const r = joinSecretsOn({ [PKI_CONFIG]: ROTATING });
        assert.strictEqual(r.status, 0, r.stderr);
        const secrets = parseJoinSecrets(r.opened!);
        assert.deepStrictEqual([secrets.token, secrets.certificateKey], [TOKEN, KEY]);
        assert.strictEqual(zlib.gunzipSync(Buffer.from(secrets.encryptionConfig!, "base64")).toString(), ROTATING, "the file as the masters have it");
        for (const secret of [TOKEN, KEY, KEY1, KEY2, secrets.encryptionConfig!]) assert.ok(!r.stdout.includes(secret) && !r.stderr.includes(secret), "nothing in clear");
    });

    it("reads the file kube-apiserver's --encryption-provider-config names; `-` when Secrets are not encrypted; refuses when the API server encrypts with a file it cannot read", () => {
        const elsewhere = "/etc/kubernetes/pki/rotated.yaml";
        const flagged = joinSecretsOn({ [PKI_CONFIG]: ROTATING.replace(/\n {12}- name: key2\n.*\n/, "\n"),
            [elsewhere]: ROTATING, [MANIFEST]: `    - --encryption-provider-config=${elsewhere}\n` });
        assert.strictEqual(flagged.status, 0, flagged.stderr);
        assert.strictEqual(zlib.gunzipSync(Buffer.from(parseJoinSecrets(flagged.opened!).encryptionConfig!, "base64")).toString(), ROTATING);

        const plain = joinSecretsOn({});
        assert.strictEqual(plain.status, 0, plain.stderr);
        assert.strictEqual(plain.opened, `${TOKEN} ${KEY} -`);
        assert.deepStrictEqual(parseJoinSecrets(plain.opened!), { token: TOKEN, certificateKey: KEY });

        const refused = joinSecretsOn({ [MANIFEST]: `    - --encryption-provider-config=${PKI_CONFIG}\n` });
        assert.strictEqual(refused.status, 1);
        assert.match(refused.stderr, /encrypts Secrets but its encryption config .* cannot be read/);
        assert.strictEqual(refused.stdout.trim(), "", "nothing sealed");
        assert.deepStrictEqual(refused.kubeadm, [], "no token made (and left behind) for a join that cannot happen");
        assert.deepStrictEqual(plain.kubeadm, ["init phase", "token create"]);
    });

    it(`an encryption config over ${MAX_ENCRYPTION_CONFIG_GZ_B64} characters gzip + Base64 is refused on the master with the fix (what fits, fits the sealed parameter)`, () => {
        const many = ROTATING.replace("            - name: key2\n", [...Array(80)].map((_, i) =>
            `            - name: old${i}\n              secret: ${crypto.randomBytes(32).toString("base64")}\n`).join("") + "            - name: key2\n");
        const r = joinSecretsOn({ [PKI_CONFIG]: many });
        assert.strictEqual(r.status, 1);
        assert.match(r.stderr, /is \d+ characters gzip \+ Base64, over the 2800 .* remove keys no Secret is sealed with any more/);
        assert.strictEqual(r.stdout.trim(), "", "nothing sealed");
        assert.deepStrictEqual(r.kubeadm, [], "no token made");
        assert.ok(!r.stderr.includes(KEY1));
        // The limit the script applies is the rule's, and a config of that size still travels as a channel-receive parameter.
        assert.match(renderOperation("join-secrets"), new RegExp(`-le ${MAX_ENCRYPTION_CONFIG_GZ_B64} \\]`));
        const largest = `${TOKEN} ${KEY} ${"A".repeat(MAX_ENCRYPTION_CONFIG_GZ_B64)}`;
        assert.match(seal(newRecipient().publicKey, largest), SEALED_PATTERN);
    });

    /** A sandboxed member that received `plaintext` on its channel and runs the saved control-plane join command. */
    async function memberJoin(plaintext: string, prepare?: (sb: Sandbox) => void) {
        const sb = makeSandbox({ os: "ubuntu", prebaked: true });
        sandboxes.push(sb);
        const channel = "0123456789abcdef0123456789abcdef";
        sb.write(`/run/alicloud-kubeadm/${channel}`, `${plaintext}\n`);
        prepare?.(sb);
        const script = renderControlPlaneJoinCommand({ region: "cn-shanghai", kubernetesVersion: "1.34.2", apiEndpoint: "192.168.0.10:6443", caCertHash: `sha256:${"a".repeat(64)}` });
        return { sb, r: await sb.run(fill(script, { channel })) };
    }

    it("master → member: the member writes an EncryptionConfiguration identical to the masters' (key1 then key2, then identity) before kubeadm join", async () => {
        const answer = joinSecretsOn({ [PKI_CONFIG]: ROTATING });
        const s = parseJoinSecrets(answer.opened!);
        const { sb, r } = await memberJoin(`${s.token} ${s.certificateKey} ${s.encryptionConfig}`);
        assert.strictEqual(r.code, 0, r.stderr);
        assert.strictEqual(sb.read(PKI_CONFIG), ROTATING, "byte for byte");
        assert.deepStrictEqual(keysOf(sb.read(PKI_CONFIG)!), [`aescbc:key1=${KEY1},key2=${KEY2}`, "identity:"]);
        assert.strictEqual((fs.statSync(sb.at(PKI_CONFIG)).mode & 0o777), 0o600);
        assert.strictEqual(callsOf(r.calls, "kubeadm", "join").length, 1);
        assert.ok(sb.read("/var/lib/alicloud-kubeadm/join.done"));
        const log = sb.read("/var/log/alicloud-kubeadm/attach-node.log") ?? "";
        for (const secret of [KEY1, KEY2, s.encryptionConfig!]) assert.ok(!log.includes(secret) && !r.stdout.includes(secret) && !r.stderr.includes(secret), "no key in the log");
    });

    it("a member whose encryption config cannot be written (or arrived damaged) fails the join with the reason, before kubeadm join and without a kube-apiserver", async () => {
        const config = zlib.gzipSync(ROTATING).toString("base64");
        // /etc/kubernetes/pki is a file: nothing can be written under it (root ignores permissions, so not a chmod).
        const unwritable = await memberJoin(`${TOKEN} ${KEY} ${config}`, (sb) => sb.write("/etc/kubernetes/pki", "not a directory\n"));
        const damaged = await memberJoin(`${TOKEN} ${KEY} ${config.slice(0, 40)}`);
        for (const [{ sb, r }, reason] of [[unwritable, /could not write \/etc\/kubernetes\/pki\/alicloud-kubeadm-encryption\.yaml: kube-apiserver must not start without/],
            [damaged, /the encryption config is not an EncryptionConfiguration/]] as const) {
            assert.strictEqual(r.code, 1);
            assert.match(sb.read("/var/lib/alicloud-kubeadm/join.failed") ?? "", /^status=failed$/m, "the failure marker the provider and doctor read");
            assert.strictEqual(sb.read("/var/lib/alicloud-kubeadm/join.done"), undefined);
            assert.strictEqual(callsOf(r.calls, "kubeadm", "join").length, 0, "never joined: no kube-apiserver without its encryption config");
            assert.strictEqual(sb.read(MANIFEST), undefined);
            assert.match(r.stderr, reason);
            assert.ok(!r.stderr.includes(KEY1) && !r.stderr.includes(config));
        }
        assert.ok(!fs.statSync(damaged.sb.at(PKI_CONFIG), { throwIfNoEntry: false })?.isFile(), "nothing written from a damaged config");
    });
});
