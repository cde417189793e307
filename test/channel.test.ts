// World: both halves of the channel for real: the provider's code in-process, the node's in bash with openssl.
/**
 * The secret channel: the provider's half (src/cloud/channel.ts) against the node's half (src/shell/channel.sh,
 * run by bash with this machine's real openssl), in both directions; tampering, a wrong key and a second use fail.
 */
import * as assert from "assert";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { newChannelId, newRecipient, seal } from "../src/cloud/channel";
import { renderOperation } from "../src/shell/render";
import { CHANNEL_KEY_PATTERN, SEALED_PATTERN } from "../src/rules";
import { bashFromFile, fill } from "../testing/savedCommands";

const FUNCTIONS = fs.readFileSync(path.join(__dirname, "..", "src", "shell", "channel.sh"), "utf8");

describe("secret channel (TypeScript ⇄ openssl on the node)", () => {
    let root: string;
    beforeEach(() => {
        root = fs.mkdtempSync(path.join(os.tmpdir(), "ak-channel-"));
        fs.mkdirSync(path.join(root, "dev", "shm"), { recursive: true });
    });
    afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

    /** Runs node-side shell with the channel functions, AK_ROOT = a temporary directory. */
    function node(script: string, input = ""): { code: number; out: string; err: string } {
        const r = spawnSync("bash", ["-c", `set -euo pipefail\nAK_ROOT=${root}\n${FUNCTIONS}\n${script}`], { input, encoding: "utf8" });
        return { code: r.status ?? -1, out: r.stdout, err: r.stderr };
    }

    it("instance → provider: ak_seal output opens with the provider's one-use key, byte for byte; not with another key", () => {
        const key = newRecipient();
        assert.match(key.publicKey, CHANNEL_KEY_PATTERN);
        const secret = "abcdef.0123456789abcdef 0123\nline two ✓ with 'quotes' and $dollars\n";
        const r = node(`ak_seal '${key.publicKey}'`, secret);
        assert.strictEqual(r.code, 0, r.err);
        assert.match(r.out.trim(), SEALED_PATTERN);
        assert.ok(!r.out.includes("0123456789abcdef"), "nothing of the secret in the output");
        assert.strictEqual(key.open(r.out), secret);
        assert.throws(() => newRecipient().open(r.out), /does not open|altered/);
        assert.deepStrictEqual(fs.readdirSync(root), ["dev"]);
        assert.deepStrictEqual(fs.readdirSync(path.join(root, "dev", "shm")), [], "the ephemeral key and the shared secret lived on tmpfs and are gone");
    });

    it("provider → instance: ak_channel_open makes a root-only key, ak_unseal opens the provider's sealed text once", () => {
        const id = newChannelId();
        const opened = node(`ak_channel_open ${id}`);
        assert.strictEqual(opened.code, 0, opened.err);
        const keyFile = path.join(root, "run", "alicloud-kubeadm", `${id}.key`);
        assert.strictEqual(fs.statSync(keyFile).mode & 0o077, 0, "the private key is readable by its owner only");
        const secret = "k9x2ab.0123456789abcdef " + "c3".repeat(32);
        const sealed = seal(opened.out.trim(), secret);
        const r = node(`ak_unseal ${id} '${sealed}'`);
        assert.deepStrictEqual([r.code, r.out], [0, secret], r.err);
        assert.ok(!fs.existsSync(keyFile), "the key is deleted after one use");
        const again = node(`ak_unseal ${id} '${sealed}'`);
        assert.strictEqual(again.code, 1);
        assert.match(again.err, /not open on this instance/);
    });

    it("a sealed text that was altered is refused on the node and in the provider, and the key is still dropped", () => {
        const id = newChannelId();
        const pub = node(`ak_channel_open ${id}`).out.trim();
        const sealed = seal(pub, "s3cr3t-value-0123456789");
        const [eph, body] = sealed.split(".");
        const bytes = Buffer.from(body, "base64");
        bytes[bytes.length - 20] ^= 1;
        const r = node(`ak_unseal ${id} '${eph}.${bytes.toString("base64")}'`);
        assert.strictEqual(r.code, 1);
        assert.ok(!r.out.includes("s3cr3t") && !r.err.includes("s3cr3t"));
        assert.ok(!fs.existsSync(path.join(root, "run", "alicloud-kubeadm", `${id}.key`)));

        const key = newRecipient();
        const out = node(`ak_seal '${key.publicKey}'`, "another-s3cr3t").out.trim();
        const [e2, b2] = out.split(".");
        const t = Buffer.from(b2, "base64");
        t[20] ^= 1;
        assert.throws(() => key.open(`${e2}.${t.toString("base64")}`), (err: Error) => !err.message.includes("s3cr3t"));
        assert.throws(() => key.open("plain text"), /did not answer with a sealed text/);
    });

    it("the channel-receive operation keeps the secret root-only for the join script; channel-open prints only a public key", () => {
        const id = newChannelId();
        const env = { ...process.env, AK_ROOT: root };
        const open = bashFromFile(fill(renderOperation("channel-open"), { channel: id }), { env });
        assert.strictEqual(open.status, 0, open.stderr);
        assert.match(open.stdout.trim(), CHANNEL_KEY_PATTERN);
        const recv = bashFromFile(fill(renderOperation("channel-receive"), { channel: id, sealed: seal(open.stdout.trim(), "k9x2ab.0123456789abcdef") }), { env });
        assert.deepStrictEqual([recv.status, recv.stdout], [0, "received\n"], recv.stderr);
        const file = path.join(root, "run", "alicloud-kubeadm", id);
        assert.strictEqual(fs.readFileSync(file, "utf8"), "k9x2ab.0123456789abcdef\n");
        assert.strictEqual(fs.statSync(file).mode & 0o077, 0);
        const bad = bashFromFile(fill(renderOperation("channel-receive"), { channel: id, sealed: "x; rm -rf /" }), { env });
        assert.strictEqual(bad.status, 1);
        assert.match(bad.stderr, /parameter SEALED must be a sealed secret/);
    });
});
