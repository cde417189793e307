// A clock that moves only by the pauses asked of it (src/cloud/wait.ts Clock): a wait on it records what it asked
// for instead of sleeping, so tests check the waits, never the machine's speed.
import type { Clock } from "../src/cloud/wait";

/** A clock at `start` (ms; default 0) that each sleep moves forward by its pause; `pauses` lists them in order. */
export function steppedClock(start = 0): Clock & { pauses: number[] } {
    let now = start;
    const pauses: number[] = [];
    return { pauses, now: () => now, sleep: async (ms) => { pauses.push(ms); now += ms; } };
}
