/**
 * Optional command-line tools of the test suite (shellcheck; later the upstream Kubernetes binaries). On a
 * fresh machine with Node.js only, assertions that need a missing tool skip, with one line saying which tool
 * and how to install it; in CI (`CI=true`, where .ci/run installs them) a missing tool is a failure.
 */
import * as assert from "node:assert/strict";
import * as crypto from "crypto";
import { spawnSync } from "child_process";
import * as zlib from "zlib";
import type { RunResult, Sandbox } from "../testing/sandbox";
import { PARAMETER_MARKER } from "../src/shell/render";

const announced = new Set<string>();
const present = new Map<string, boolean>();

/** Whether `tool` runs (`<tool> --version` exits 0). */
export function hasTool(tool: string): boolean {
    if (!present.has(tool)) {
        present.set(tool, spawnSync(tool, ["--version"], { stdio: "ignore" }).status === 0);
    }
    return present.get(tool) as boolean;
}

/**
 * In a mocha hook or test: skips the test (or suite) when `tool` is missing, printing once per run
 * `skipped: <what> need <tool> (install: <how>)`; throws instead when CI=true.
 */
export function requireTool(ctx: Mocha.Context, tool: string, install: string, what: string): void {
    if (hasTool(tool)) {
        return;
    }
    if (process.env.CI === "true") {
        throw new Error(`${tool} is required in CI (${what}); install it: ${install}`);
    }
    if (!announced.has(tool)) {
        announced.add(tool);
        console.log(`      skipped: ${what} need ${tool} (install: ${install})`);
    }
    ctx.skip();
}

/** How to install shellcheck on the build machines (Debian). */
export const SHELLCHECK_INSTALL = "apt-get update && apt-get install -y shellcheck";

/**
 * The whole script of a packed userdata or saved command (src/shell/render.ts packShell): its readable header
 * followed by the unpacked body. A script that is not packed comes back as it is.
 */
export function unpackScript(text: string): string {
    const packed = /<<'AK_PACKED'[^\n]*\n([\s\S]*?)\nAK_PACKED\n/.exec(text)?.[1];
    if (packed === undefined) return text;
    return `${text}\n${zlib.gunzipSync(Buffer.from(packed.replace(/\s+/g, ""), "base64")).toString("utf8")}`;
}

/** The `readonly AK_X='value'` parameters at the top of a rendered script (src/shell/render.ts), unquoted. */
export function headerOf(script: string): Record<string, string> {
    const out: Record<string, string> = {};
    for (const m of script.matchAll(/^readonly (AK_[A-Z0-9_]+)='((?:[^']|'\\'')*)'$/gm)) out[m[1]] = m[2].replace(/'\\''/g, "'");
    // A saved command's parameters: `# AK_X=value` lines after its final exit (src/shell/render.ts savedParameters).
    const at = script.indexOf(`\n${PARAMETER_MARKER}\n`);
    if (at >= 0) for (const m of script.slice(at).matchAll(/^# (AK_[A-Z0-9_]+)=(.*)$/gm)) out[m[1]] = m[2];
    return out;
}

/** One header parameter of a rendered script, or undefined when its header has none. */
export function headerValue(script: string, name: string): string | undefined {
    return headerOf(script)[name];
}

/** Asserts a sandbox run of a node script succeeded; on failure shows its stderr and the script's logs (`/var/log/alicloud-kubeadm/<log>.log`). */
export function assertOk(r: RunResult, sb: Sandbox, logs: readonly string[] = ["master-init", "attach-node"]): void {
    if (r.code === 0) return;
    const text = logs.map((n) => sb.read(`/var/log/alicloud-kubeadm/${n}.log`)).filter(Boolean).join("\n");
    assert.fail(`script exited ${r.code}\nstderr:\n${r.stderr}\nlog:\n${text}`);
}

/** A packed script made runnable without its packing: the readable header followed by the unpacked body. */
export function unpackRunnable(text: string): string {
    const at = text.indexOf("\nak_packed=");
    if (at < 0) return text;
    const packed = /<<'AK_PACKED'[^\n]*\n([\s\S]*?)\nAK_PACKED\n/.exec(text)?.[1] ?? "";
    // A saved command's parameter lines (`exit`, the marker, `AK_X=...`) follow the packed part: kept after it.
    const evalAt = text.indexOf('\neval "$ak_packed"\n');
    const trailer = evalAt < 0 ? "" : text.slice(evalAt + '\neval "$ak_packed"\n'.length);
    return `${text.slice(0, at + 1)}${zlib.gunzipSync(Buffer.from(packed.replace(/\s+/g, ""), "base64")).toString("utf8")}${trailer}`;
}

/** An unencrypted SSH private key (ed25519, PKCS#8 PEM, which the SSH client reads), made fresh: a connection's privateKey. */
export function testSshPrivateKey(): string {
    return crypto.generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }).toString();
}

/**
 * The text of an OpenSSH-format private key whose header names `cipher` (`none` when unencrypted), as
 * `ssh-keygen` writes it: the magic `openssh-key-v1\0`, the cipher, the KDF and its options; the key blob after them
 * is random bytes (nothing here decrypts it). For the checks that read whether a key is encrypted.
 */
export function opensshKeyText(cipher: string): string {
    const str = (b: Buffer) => {
        const length = Buffer.alloc(4);
        length.writeUInt32BE(b.length);
        return Buffer.concat([length, b]);
    };
    const kdf = cipher === "none" ? "none" : "bcrypt";
    const body = Buffer.concat([Buffer.from("openssh-key-v1\0", "latin1"), str(Buffer.from(cipher)), str(Buffer.from(kdf)), str(Buffer.alloc(0)), crypto.randomBytes(96)]);
    const lines = body.toString("base64").match(/.{1,70}/g)!.join("\n");
    return `-----BEGIN OPENSSH PRIVATE KEY-----\n${lines}\n-----END OPENSSH PRIVATE KEY-----\n`;
}
