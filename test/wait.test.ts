/**
 * The one bounded wait (src/cloud/wait.ts) on a clock the test steps: plain unit tests, no cloud, no emulator, no
 * real time (the pauses asked for are recorded, not slept); and reads side by side (allSettled).
 */
import * as assert from "assert";
import { allSettled, waitFor } from "../src/cloud/wait";
import { steppedClock } from "../testing/steppedClock";

describe("a bounded wait (waitFor) on an injected clock", () => {
    it("pauses grow by the factor up to the cap, and the look is given the time waited", async () => {
        const clock = steppedClock();
        const seen: number[] = [];
        const value = await waitFor(async (waited) => {
            seen.push(waited);
            return seen.length === 5 ? { done: true, value: "ready" } : { done: false, state: "pending" };
        }, { timeoutMs: 60_000, firstDelayMs: 1000, maxDelayMs: 2000, factor: 1.5, clock }, () => new Error("timed out"));
        assert.strictEqual(value, "ready");
        assert.deepStrictEqual(clock.pauses, [1000, 1500, 2000, 2000]);
        assert.deepStrictEqual(seen, [0, 1000, 2500, 4500, 6500]);
    });

    it("gives up with the caller's error, naming the last state, when the next pause would pass the budget", async () => {
        const clock = steppedClock();
        const err = await waitFor(async () => ({ done: false, state: "2 running" }), { timeoutMs: 5000, firstDelayMs: 1000, maxDelayMs: 2000, clock },
            (state, waited) => new Error(`still ${state} after ${waited} ms`)).then(() => undefined, (e: Error) => e);
        assert.deepStrictEqual(clock.pauses, [1000, 1500, 2000], "a fourth pause (2000 ms, at 4500 ms) would end past 5000 ms");
        assert.strictEqual(err?.message, "still 2 running after 4500 ms");
    });

    it("pauses before the first look when asked (pauseFirst), and logs a state when it changes, not every look", async () => {
        const clock = steppedClock();
        const logged: string[] = [];
        const states = ["a", "a", "b", "b"];
        let looks = 0;
        await waitFor(async () => (looks < states.length ? { done: false, state: states[looks++] } : { done: true, value: undefined }),
            { timeoutMs: 60_000, firstDelayMs: 300, maxDelayMs: 300, pauseFirst: true, log: (m) => logged.push(m), clock }, () => new Error("timed out"));
        assert.deepStrictEqual(clock.pauses, [300, 300, 300, 300, 300]);
        assert.deepStrictEqual(logged, ["a", "b"]);
    });
});

describe("reads side by side (allSettled)", () => {
    it("a read that fails first is thrown only once the other read has ended: nothing still runs when the caller sees the error", async () => {
        let finish!: (v: string) => void;
        const slow = new Promise<string>((resolve) => { finish = resolve; });
        let thrown: unknown;
        const both = allSettled<[string, number]>([slow, Promise.reject(new Error("nodes unreadable"))]).catch((e) => { thrown = e; });
        for (let k = 0; k < 10; k++) await Promise.resolve();
        assert.strictEqual(thrown, undefined, "not thrown while the slow read runs");
        finish("routes");
        await both;
        assert.match(String(thrown), /nodes unreadable/);
    });

    it("gives the values in order when every read succeeds", async () => {
        assert.deepStrictEqual(await allSettled<[number, string]>([Promise.resolve(1), Promise.resolve("b")]), [1, "b"]);
    });
});
