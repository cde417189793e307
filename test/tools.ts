/**
 * Optional command-line tools of the test suite (shellcheck; later the upstream Kubernetes binaries). On a
 * fresh machine with Node.js only, assertions that need a missing tool skip, with one line saying which tool
 * and how to install it; in CI (`CI=true`, where .ci/run installs them) a missing tool is a failure.
 */
import { spawnSync } from "child_process";
import * as zlib from "zlib";

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
