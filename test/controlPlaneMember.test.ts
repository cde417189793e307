import * as assert from "assert";
import { useEmulator } from "./emulator/fixture";
import { fakeCluster } from "./fakeCluster";
import { controlPlaneMemberProvider, joinControlPlaneMember, parseJoinSecrets, setHeader } from "../src/providers/controlPlaneMember";
import { renderControlPlaneJoin } from "../src/shell/render";

const TOKEN = "k8sabc.0123456789abcdef";
const KEY = "f".repeat(64);
const PLACEHOLDER = { token: "abcdef.0123456789abcdef", certificateKey: "0".repeat(64) };

describe("ControlPlaneMember", () => {
    const ctx = useEmulator();
    const template = renderControlPlaneJoin({
        region: "cn-shanghai", kubernetesVersion: "1.34.2", apiEndpoint: "nlb-x.example:6443",
        token: PLACEHOLDER.token, certificateKey: PLACEHOLDER.certificateKey, caCertHash: `sha256:${"a".repeat(64)}`,
    });

    it("gets a fresh certificate key and token from master 0, joins the member with them, waits for Ready", async () => {
        const { emu } = ctx;
        const c = fakeCluster(emu, "cn-shanghai");
        const member = emu.addInstance().instanceId;
        let joinScript = "";
        emu.onCommand(/upload-certs --upload-certs/, (x) => {
            c.commands.push(`${x.instanceId}: join-secrets`);
            return { output: `${TOKEN} ${KEY}\n` };
        });
        emu.onCommand(/AK_CERTIFICATE_KEY=/, (x) => {
            joinScript = x.script;
            c.commands.push(`${x.instanceId}: join`);
            c.addNode(member, { name: "master-1", pool: "control-plane" });
            return { output: "" };
        });
        const logs: string[] = [];
        const name = await joinControlPlaneMember({ region: "cn-shanghai", masterInstanceId: c.master, memberInstanceId: member, joinScript: template, pollSeconds: 0.02 }, (m) => logs.push(m));
        assert.strictEqual(name, "master-1");
        assert.deepStrictEqual(c.commands, [`${c.master}: get-nodes`, `${c.master}: join-secrets`, `${member}: join`, `${c.master}: get-nodes`]);
        assert.match(joinScript, new RegExp(`^readonly AK_BOOTSTRAP_TOKEN='${TOKEN.replace(".", "\\.")}'$`, "m"));
        assert.match(joinScript, new RegExp(`^readonly AK_CERTIFICATE_KEY='${KEY}'$`, "m"));
        assert.ok(!joinScript.includes(PLACEHOLDER.certificateKey), "placeholders replaced");
        assert.ok(logs.every((l) => !l.includes(TOKEN) && !l.includes(KEY)), "secrets never logged");
        // The secrets travel only in RunCommand content to the member; the master's command is fixed text.
        const secretsCall = emu.callsOf("RunCommand").find((x) => Buffer.from(x.params.CommandContent, "base64").toString().includes("upload-certs"))!;
        assert.ok(!Buffer.from(secretsCall.params.CommandContent, "base64").toString().includes(KEY));
    });

    it("a failed join reports the join log tail and never the secrets", async () => {
        const { emu } = ctx;
        const c = fakeCluster(emu, "cn-shanghai");
        const member = emu.addInstance().instanceId;
        emu.onCommand(/upload-certs/, { output: `${TOKEN} ${KEY}\n` });
        emu.onCommand(/AK_CERTIFICATE_KEY=/, { exitCode: 1, output: `token ${TOKEN}` });
        emu.onCommand(/tail -c 2000/, { output: "[ERROR]: etcd cluster is not healthy\n" });
        await assert.rejects(joinControlPlaneMember({ region: "cn-shanghai", masterInstanceId: c.master, memberInstanceId: member, joinScript: template, pollSeconds: 0.02 }),
            (err: Error) => /join --control-plane failed on .*etcd cluster is not healthy/s.test(err.message) && !err.message.includes(TOKEN) && !err.message.includes(KEY));
    });

    it("delete: drain → reset (leaves etcd) → delete Node", async () => {
        const { emu } = ctx;
        const c = fakeCluster(emu, "cn-shanghai");
        const member = emu.addInstance().instanceId;
        c.addNode(member, { name: "master-1" });
        await controlPlaneMemberProvider.delete!(member, { region: "cn-shanghai", masterInstanceId: c.master, memberInstanceId: member, joinScript: template, pollSeconds: 0.02 });
        assert.deepStrictEqual(c.commands, [`${c.master}: get-nodes`, `${c.master}: drain master-1`, `${member}: reset`, `${c.master}: delete-node master-1`]);
    });

    it("refuses malformed join secrets without echoing them; replaces header lines exactly", () => {
        assert.throws(() => parseJoinSecrets("sekrit-value\n"), (e: Error) => !e.message.includes("sekrit") && /did not print a bootstrap token/.test(e.message));
        assert.deepStrictEqual(parseJoinSecrets(`${TOKEN} ${KEY}`), { token: TOKEN, certificateKey: KEY });
        assert.match(setHeader("readonly A='x'\nreadonly B='y'", "B", "it's"), /^readonly B='it'\\''s'$/m);
        assert.throws(() => setHeader("readonly A='x'", "B", "z"), /no B parameter/);
    });
});
