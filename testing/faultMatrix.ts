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
