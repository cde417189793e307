// World: the OpenAPI emulator (testing/emulator).
import * as assert from "assert";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { useEmulator } from "../testing/emulator/fixture";
import { BOOTSTRAP_TOKEN_PROVIDER_VERSION, bootstrapTokenProvider, createBootstrapToken, deleteBootstrapToken, generateToken, TOKEN_PATTERN } from "../src/providers/bootstrapToken";
import { renderOperation } from "../src/shell/render";
import { fillOperation, type NodeCommandIds } from "../src/rules";
import { fill, operation, saveNodeCommands } from "../testing/savedCommands";
import { headerValue } from "./tools";
import { newRecipient, type Recipient } from "../src/cloud/channel";

const createTokenScript = (tokenId: string, ttl: string, description: string, recipient: string) =>
    fillOperation(renderOperation("token-create"), "token-create", { tokenId, ttl, description, recipient });
/** Runs token-create for `tokenId` with a fresh recipient key; returns the status line and the opened token. */
function createWith(master: { run(script: string): { code: number; out: string } }, tokenId: string, ttl = "0", description = "d", key: Recipient = newRecipient()) {
    const r = master.run(createTokenScript(tokenId, ttl, description, key.publicKey));
    const [status, sealed] = r.out.trim().split("\n");
    return { code: r.code, out: r.out, status, token: r.code === 0 ? key.open(sealed) : "" };
}
const deleteTokenScript = (tokenId: string) => fill(renderOperation("token-delete"), { tokenId });

/**
 * A fake `kubeadm token` on a master: tokens live in a file; `create` refuses duplicates like kubeadm (and fails,
 * echoing the token, when the file `fail` exists), `delete` of an unknown id fails with kubeadm's "not found"; a fake
 * `kubectl get secret bootstrap-token-<id>` answers the token's secret half as the Secret's data holds it (Base64);
 * every call is logged.
 */
function fakeMaster(): { dir: string; run(script: string): { code: number; out: string }; tokens(): string[]; calls(): string[] } {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "token-"));
    fs.mkdirSync(path.join(dir, "bin"));
    fs.writeFileSync(path.join(dir, "tokens"), "");
    fs.writeFileSync(path.join(dir, "bin", "kubeadm"), `#!/bin/bash
echo "$*" >>"${dir}/calls"
db="${dir}/tokens"
case "$1 $2" in
  "token list") cat "$db" ;;
  "token create")
    if grep -q "^\${3%%.*}\\." "$db"; then echo "error: a token with id \${3%%.*} already exists ($3)" >&2; exit 1; fi
    if [ -f "${dir}/fail" ]; then echo "error: could not create token $3: connection refused" >&2; exit 1; fi
    echo "$3" >>"$db"; printf '%s' "$7" >"${dir}/desc-\${3%%.*}"; echo "$3" ;;
  "token delete")
    if ! grep -q "^$3\\." "$db"; then echo "error: failed to delete bootstrap token \\"$3\\": secrets \\"bootstrap-token-$3\\" not found" >&2; exit 1; fi
    grep -v "^$3\\." "$db" >"$db.new"; mv "$db.new" "$db"; echo "bootstrap token \\"$3\\" deleted" ;;
  *) echo "unexpected: $*" >&2; exit 2 ;;
esac
`, { mode: 0o755 });
    fs.writeFileSync(path.join(dir, "bin", "kubectl"), `#!/bin/bash
echo "kubectl $*" >>"${dir}/calls"
for a in "$@"; do case "$a" in bootstrap-token-*) id=\${a#bootstrap-token-} ;; esac; done
line=$(grep "^$id\\." "${dir}/tokens" || true)
if [ -n "$line" ]; then printf '%s %s' "$(printf '%s' "\${line#*.}" | base64 -w0)" "$(base64 -w0 <"${dir}/desc-$id")"; fi
`, { mode: 0o755 });
    return {
        dir,
        run(script: string) {
            // From a file, as Cloud Assistant runs a command (a saved one reads its parameters from it).
            const file = path.join(dir, `script-${Math.random().toString(36).slice(2)}.sh`);
            fs.writeFileSync(file, script, { mode: 0o700 });
            const r = spawnSync("bash", [file], { encoding: "utf8", env: { ...process.env, PATH: `${dir}/bin:${process.env.PATH}` } });
            return { code: r.status ?? -1, out: r.stdout + r.stderr };
        },
        tokens: () => fs.readFileSync(path.join(dir, "tokens"), "utf8").split("\n").filter(Boolean),
        calls: () => (fs.existsSync(path.join(dir, "calls")) ? fs.readFileSync(path.join(dir, "calls"), "utf8").split("\n").filter(Boolean) : []),
    };
}

describe("BootstrapToken", () => {
    const ctx = useEmulator();
    let master: ReturnType<typeof fakeMaster>;
    let commands: NodeCommandIds;
    beforeEach(async () => {
        master = fakeMaster();
        commands = await saveNodeCommands();
    });
    afterEach(() => fs.rmSync(master.dir, { recursive: true, force: true }));

    /** Master 0 in the emulator runs Cloud Assistant scripts with the fake kubeadm. */
    function emulatedMaster(): string {
        const id = ctx.emu.addInstance().instanceId;
        ctx.emu.onCommand(/kubeadm token/, (c) => {
            const r = master.run(c.script);
            return { exitCode: r.code, output: r.out };
        });
        return id;
    }
    const inputs = (masterInstanceId: string) => ({ region: "cn-hangzhou", masterInstanceId, commands, tokenCreateScript: renderOperation("token-create"),
        ttl: "0", description: "alicloud-kubeadm dev pool general", pollIntervalMs: 20 });

    it("generates tokens of the form [a-z0-9]{6}.[a-z0-9]{16}, all different", () => {
        const tokens = Array.from({ length: 500 }, generateToken);
        assert.ok(tokens.every((t) => TOKEN_PATTERN.test(t)), tokens.find((t) => !TOKEN_PATTERN.test(t)));
        assert.strictEqual(new Set(tokens).size, tokens.length);
        const chars = new Set(tokens.join("").replace(/\./g, ""));
        assert.ok(chars.size >= 34, `uses the whole alphabet (${chars.size} distinct characters)`);
    });

    it("the create script makes the secret half on the master, answers the token only sealed, and a second run reads it back", () => {
        const key = newRecipient();
        const first = createWith(master, "abc123", "0", "alicloud-kubeadm dev pool general", key);
        assert.strictEqual(first.status, "created");
        assert.match(first.token, /^abc123\.[a-z0-9]{16}$/);
        assert.ok(!first.out.includes(first.token.slice(7)), "the output holds the token only sealed");
        const again = createWith(master, "abc123", "0", "alicloud-kubeadm dev pool general");
        assert.deepStrictEqual([again.status, again.token], ["exists", first.token], "a retried create answers the same token");
        assert.deepStrictEqual(master.tokens(), [first.token]);
        assert.deepStrictEqual(master.calls().filter((c) => c.includes("create")), [`token create ${first.token} --ttl 0 --description alicloud-kubeadm dev pool general`]);
    });

    it("another token with the same id (another description) is refused, never answered", () => {
        const mine = createWith(master, "abc123", "0", "alicloud-kubeadm dev pool general");
        const other = createWith(master, "abc123", "0", "alicloud-kubeadm dev existing nodes");
        assert.strictEqual(other.code, 1);
        assert.match(other.out, /already exists with another description/);
        assert.ok(!other.out.includes(mine.token.slice(7)));
        assert.deepStrictEqual(master.tokens(), [mine.token]);
    });

    it("the create script keeps the token out of kubeadm's error output", () => {
        fs.writeFileSync(path.join(master.dir, "fail"), "");
        const r = createWith(master, "abc123");
        assert.strictEqual(r.code, 1);
        assert.match(r.out, /connection refused/);
        assert.match(r.out, /abc123\.<redacted>/);
        assert.deepStrictEqual(master.tokens(), []);
    });

    it("the delete script deletes the token and accepts one already gone", () => {
        const { token } = createWith(master, "abc123");
        assert.deepStrictEqual(master.run(deleteTokenScript(token.slice(0, 6))), { code: 0, out: "deleted\n" });
        assert.deepStrictEqual(master.tokens(), []);
        assert.deepStrictEqual(master.run(deleteTokenScript(token.slice(0, 6))), { code: 0, out: "already gone\n" });
        assert.deepStrictEqual(master.run(deleteTokenScript("ABC; rm")), { code: 1, out: "error: parameter TOKEN_ID must be a bootstrap token id [a-z0-9]{6}\n" },
            "the script itself refuses a value that is not a token id");
    });

    it("provider create runs one token create on master 0 (RunCommand, no saved command) and returns the token as output, which no record holds in clear; delete removes it", async () => {
        const id = emulatedMaster();
        const res = await bootstrapTokenProvider.create!(inputs(id));
        const outs = res.outs as { token: string; tokenId: string; ttl: string };
        assert.match(outs.token, TOKEN_PATTERN);
        assert.strictEqual(outs.tokenId, outs.token.slice(0, 6));
        assert.strictEqual(res.id, `${id}/token/${outs.tokenId}`);
        assert.deepStrictEqual(master.tokens(), [outs.token]);
        assert.strictEqual(ctx.emu.callsOf("InvokeCommand").length, 0, "no saved command makes a token");
        assert.ok(!("token-create" in commands), "token-create is not among the saved commands");
        const runs = ctx.emu.callsOf("RunCommand");
        assert.strictEqual(runs.length, 1);
        assert.strictEqual(runs[0].params["InstanceId.1"], id);
        const content = Buffer.from(runs[0].params.CommandContent, "base64").toString("utf8");
        const sent = Object.fromEntries(["AK_TOKEN_ID", "AK_TTL", "AK_DESCRIPTION", "AK_RECIPIENT"].map((n) => [n, headerValue(content, n) ?? ""]));
        assert.deepStrictEqual({ ...sent, AK_RECIPIENT: "…" }, { AK_TOKEN_ID: outs.tokenId, AK_TTL: "0", AK_DESCRIPTION: "alicloud-kubeadm dev pool general", AK_RECIPIENT: "…" });
        assert.match(sent.AK_RECIPIENT, /^MCowBQYDK2VuAyEA/, "an X25519 key made for this call");
        const secretHalf = outs.token.slice(7);
        assert.ok(ctx.emu.calls.every((c) => !c.body.includes(secretHalf) && !c.url.includes(secretHalf)), "no request holds the token");
        assert.ok([...ctx.emu.state.invocations.values()].every((inv) => !JSON.stringify(inv).includes(secretHalf)), "no recorded content, parameter or output holds it");
        assert.deepStrictEqual(master.calls().filter((c) => c.includes("create")), [`token create ${outs.token} --ttl 0 --description alicloud-kubeadm dev pool general`]);

        await bootstrapTokenProvider.delete!(res.id, { ...inputs(id), ...outs });
        assert.deepStrictEqual(master.tokens(), []);
        const del = ctx.emu.callsOf("InvokeCommand")[0];
        assert.strictEqual(del.params.CommandId, commands["token-delete"]);
        assert.deepStrictEqual(JSON.parse(del.params.Parameters), { tokenId: outs.tokenId }, "delete sends only the public token id");
    });

    it("delete is fine when the token or master 0 is already gone, with a warning", async () => {
        const id = emulatedMaster();
        const warnings: string[] = [];
        await deleteBootstrapToken(inputs(id), "abcdef", (m) => warnings.push(m));
        ctx.emu.releaseInstance(id);
        await deleteBootstrapToken(inputs(id), "abcdef", (m) => warnings.push(m));
        assert.match(warnings[0], /abcdef was already gone/);
        assert.match(warnings[1], /no longer exists/);
    });

    it("a failed create names the master and the fix, never the token, and deletes the token it may have left", async () => {
        const id = ctx.emu.addInstance().instanceId;
        let sent = "";
        const deleted: string[] = [];
        ctx.emu.onCommand(operation("token-delete"), (c) => {
            deleted.push(c.parameters.tokenid);
            return { output: "deleted\n" };
        });
        ctx.emu.onCommand(operation("token-create"), (c) => {
            sent = headerValue(c.script, "AK_TOKEN_ID") ?? "";
            return { exitCode: 1, output: `failed to create token ${sent}.s3cr3tpartabcdef: connection refused\n` };
        });
        await assert.rejects(createBootstrapToken(inputs(id)), (err: Error) => {
            assert.match(err.message, new RegExp(`master 0 \\(${id}\\) failed \\(ExitCodeNonzero\\)`));
            assert.match(err.message, /kubeadm init finished/);
            assert.ok(!err.message.includes("s3cr3tpartabcdef"), err.message);
            return true;
        });
        assert.deepStrictEqual(deleted, [sent], "a token whose create result was lost is not left unowned");
    });

    it("state written by provider version 2 (token-create a saved command) runs the new code after one pulumi up: updated in place, the same token, deleted through token-delete", async () => {
        const id = emulatedMaster();
        const token = `abcdef.${"0123456789abcdef"}`;
        fs.writeFileSync(path.join(master.dir, "tokens"), `${token}\n`);
        // What version 2 wrote: the saved commands included token-create and join-secrets; no token-create script.
        const v2 = { region: "cn-hangzhou", masterInstanceId: id, commands: { ...commands, "token-create": "c-old-create", "join-secrets": "c-old-join" },
            ttl: "0", description: "alicloud-kubeadm dev pool general", pollIntervalMs: 20, providerVersion: "2", token, tokenId: "abcdef" };
        const news = { ...inputs(id), providerVersion: BOOTSTRAP_TOKEN_PROVIDER_VERSION };
        const diff = await bootstrapTokenProvider.diff!(`${id}/token/abcdef`, v2, news);
        assert.deepStrictEqual([diff.changes, diff.replaces], [true, []], "an update: the pools keep their token");
        const upd = await bootstrapTokenProvider.update!(`${id}/token/abcdef`, v2, news);
        const outs = upd.outs as typeof v2 & { tokenCreateScript: string };
        assert.deepStrictEqual([outs.token, outs.tokenId, outs.providerVersion], [token, "abcdef", BOOTSTRAP_TOKEN_PROVIDER_VERSION]);
        assert.match(outs.tokenCreateScript, operation("token-create"));
        assert.deepStrictEqual(master.tokens(), [token], "nothing ran on the master");
        await bootstrapTokenProvider.delete!(`${id}/token/abcdef`, outs);
        assert.deepStrictEqual(master.tokens(), [], "the new code deletes it through the saved token-delete");
        assert.deepStrictEqual(ctx.emu.callsOf("InvokeCommand").map((c) => c.params.CommandId), [commands["token-delete"]]);
    });

    it("ttl, description or master changes replace the token; a provider version bump only updates", async () => {
        const olds = { region: "r", masterInstanceId: "i-1", commands, tokenCreateScript: renderOperation("token-create"), ttl: "0", description: "d",
            token: "abcdef.0123456789abcdef", tokenId: "abcdef", providerVersion: "1" };
        assert.deepStrictEqual((await bootstrapTokenProvider.diff!("x", olds, { ...olds, ttl: "24h" })).replaces, ["ttl"]);
        assert.deepStrictEqual((await bootstrapTokenProvider.diff!("x", olds, { ...olds, masterInstanceId: "i-2" })).replaces, ["masterInstanceId"]);
        const bump = await bootstrapTokenProvider.diff!("x", olds, { ...olds, providerVersion: "2" });
        assert.deepStrictEqual([bump.changes, bump.replaces], [true, []]);
        const moved = await bootstrapTokenProvider.diff!("x", olds, { ...olds, commands: { ...commands, "token-delete": "c-new" } });
        assert.deepStrictEqual([moved.changes, moved.replaces], [true, []], "a new command id is an update, never a new token");
        const upd = await bootstrapTokenProvider.update!("x", olds, { ...olds, providerVersion: "2" });
        assert.strictEqual((upd.outs as { token: string }).token, olds.token, "an update keeps the token");
    });
});
