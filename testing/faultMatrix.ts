// The fault matrix of a resumable operation, in the emulator world: a clean run names the mutating calls it makes, each
// as (action, its occurrence); then, for each, a fresh world has that call refused once (Emulator.refuseOnce), runs, and
// runs again (`pulumi up` once more). What must hold is read from each world's state by the caller.
import type { Emulator } from "./emulator";

/** A fresh world: its emulator and one run of the operation (`pulumi up`). */
export interface FaultWorld {
    emu: Emulator;
    run: () => Promise<unknown>;
}

/**
 * Refuses each mutating call of a clean run once in turn, in a fresh world each time, then re-runs.
 * @param world makes a fresh world (its own emulator, closed here)
 * @param check what broke in a world after the faulty run and the re-run (empty when nothing), given its `at` label
 *   (the refused call and the first run's outcome)
 * @returns the mutating steps of the clean run, and every failure (`check`'s, and a re-run that failed)
 */
export async function faultMatrix<W extends FaultWorld>(world: () => Promise<W>, check: (w: W, at: string) => string[]):
    Promise<{ steps: Array<[string, number]>; failures: string[] }> {
    const clean = await world();
    const first = clean.emu.calls.length;
    await clean.run();
    const steps = clean.emu.mutatingSteps(first);
    await clean.emu.close();
    const failures: string[] = [];
    for (const [action, occurrence] of steps) {
        const w = await world();
        w.emu.refuseOnce(action, occurrence);
        const firstRun = await w.run().then(() => "ok", (e: Error) => e.message);
        await w.run().catch((e: Error) => failures.push(`${action}#${occurrence}: the re-run failed: ${e.message.split("\n")[0]}`));
        failures.push(...check(w, `${action}#${occurrence} (first run: ${firstRun.split("\n")[0]})`));
        await w.emu.close();
    }
    return { steps, failures };
}

/** One case of a rollout's property tests. */
export interface RolloutCase {
    size: number;
    maxSurge: number;
    maxUnavailable: number;
    canary: boolean;
    /** The case, in words, for a failure. */
    at: string;
}

/**
 * The rollouts the property tests run: pool sizes 1–4, `maxSurge` 0–2, `maxUnavailable` 0–1, with and without a
 * canary; never both 0 (the config refuses it).
 */
export function* rolloutCases(): Generator<RolloutCase> {
    for (let size = 1; size <= 4; size++) {
        for (let maxSurge = 0; maxSurge <= 2; maxSurge++) {
            for (let maxUnavailable = 0; maxUnavailable <= 1; maxUnavailable++) {
                for (const canary of [true, false]) {
                    if (maxSurge === 0 && maxUnavailable === 0) continue;
                    yield { size, maxSurge, maxUnavailable, canary, at: `size ${size}, maxSurge ${maxSurge}, maxUnavailable ${maxUnavailable}, canary ${canary}` };
                }
            }
        }
    }
}
