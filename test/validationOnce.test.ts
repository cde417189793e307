/**
 * The config is validated once, at the boundary: synth of the dev stack (the stack program under Pulumi mocks,
 * as `npm run synth -- dev` runs it) checks each pool once and the whole config once, and the components the
 * Cluster builds trust what they are handed. Counted by wrapping rule functions that only those checks call:
 * `essNameProblem` (once per pool check), `masterInstanceTypeWarning` (once per whole-config validation) and
 * `checkNetworkLayout` (the network layout, also the Network component's rule). World: mocks, no cloud.
 */
import * as assert from "node:assert/strict";
import * as os from "node:os";
import * as path from "node:path";
import * as fs from "node:fs";

/** Replaces `module[name]` with a wrapper that records each call's arguments; returns the calls and an undo. */
function count(module: Record<string, unknown>, name: string): { calls: unknown[][]; undo(): void } {
    const original = module[name] as (...args: unknown[]) => unknown;
    const calls: unknown[][] = [];
    module[name] = (...args: unknown[]) => {
        calls.push(args);
        return original(...args);
    };
    return { calls, undo: () => { module[name] = original; } };
}

describe("validation runs once per config", () => {
    it("synth of the dev stack: each pool's checks once, the whole config once, the network layout once", async () => {
        const { synthesize } = await import("../scripts/synth");
        const pools = count(require("../src/rules/alibaba"), "essNameProblem");
        const whole = count(require("../src/rules/alibaba"), "masterInstanceTypeWarning");
        const layout = count(require("../src/rules/network"), "checkNetworkLayout");
        const out = fs.mkdtempSync(path.join(os.tmpdir(), "validation-once-"));
        try {
            const result = await synthesize("dev", out);
            assert.deepEqual(result.problems, []);
            const poolNames = result.config!.nodePools.map((p) => p.name);
            assert.ok(poolNames.length >= 2, "the dev stack has pools");
            const perPool = Object.fromEntries(poolNames.map((name) => [name, pools.calls.filter(([, pool]) => pool === name).length]));
            assert.deepEqual(perPool, Object.fromEntries(poolNames.map((name) => [name, 1])), "each pool's checks run once");
            assert.equal(whole.calls.length, 1, "the whole config is validated once");
            assert.equal(layout.calls.length, 1, "the network layout is checked once");
        } finally {
            pools.undo();
            whole.undo();
            layout.undo();
            fs.rmSync(out, { recursive: true, force: true });
        }
    });
});
