/**
 * One bounded wait: look, and until the look says done, pause (growing up to a cap) and look again, giving up
 * after a time budget with the caller's error; progress goes to the Pulumi log when the state changes and at
 * least every half minute. Every wait of this library for the cloud or the cluster (a scaling activity, an
 * instance status, routes gone, Cloud Assistant results, Ready nodes, an image build) goes through it, on the
 * real clock or on one a test steps.
 */

/** Pauses `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}

/** What a wait reads and waits on: the real clock, or a test's own (which checks the waits asked for, not the machine's speed). */
export interface Clock {
    /** Milliseconds since the epoch. */
    now(): number;
    /** Resolves after `ms` milliseconds. */
    sleep(ms: number): Promise<void>;
}

/** The real clock. */
export const SYSTEM_CLOCK: Clock = { now: () => Date.now(), sleep };

/** What one look found: done (with its value), or not yet (with a state for progress and for the timeout's error). */
export type Look<T> = { done: true; value: T } | { done: false; state: string };

/** How a wait polls, how long it lasts and how it reports. */
export interface WaitOptions {
    /** Give up after this long, ms (a look that would start after it does not start). */
    timeoutMs: number;
    /** First pause, ms. Default 1000. */
    firstDelayMs?: number;
    /** Largest pause, ms. Default 2000: an end is seen within about two seconds. */
    maxDelayMs?: number;
    /** Growth of the pause per look. Default 1.5. */
    factor?: number;
    /** Progress (the look's state): logged when it changes, and every `logEveryMs` while it does not. Default none. */
    log?: (message: string) => void;
    /** Default 30000. */
    logEveryMs?: number;
    /** Log nothing before this much time has passed, ms. Default 0. */
    quietMs?: number;
    /** Pause before the first look too (what is waited for cannot be done at once). Default false. */
    pauseFirst?: boolean;
    /** The clock the time waited is read from and the pauses are slept on (tests). Default {@link SYSTEM_CLOCK}. */
    clock?: Clock;
}

/**
 * Looks until done or out of time.
 * @param look one look; gets the time waited so far, ms
 * @param timedOut the error to throw when the time is up, from the last state and the time waited
 * @returns the value of the look that was done
 */
export async function waitFor<T>(look: (waitedMs: number) => Promise<Look<T>>, opts: WaitOptions, timedOut: (state: string, waitedMs: number) => Error): Promise<T> {
    const clock = opts.clock ?? SYSTEM_CLOCK;
    const started = clock.now();
    const maxDelay = Math.max(1, opts.maxDelayMs ?? 2000);
    let delay = Math.min(maxDelay, Math.max(1, opts.firstDelayMs ?? 1000));
    let logged = "";
    let loggedAt = started;
    if (opts.pauseFirst) await clock.sleep(delay);
    for (;;) {
        const r = await look(clock.now() - started);
        if (r.done) return r.value;
        const now = clock.now();
        const waited = now - started;
        if (waited + delay > opts.timeoutMs) throw timedOut(r.state, waited);
        if (opts.log && waited >= (opts.quietMs ?? 0) && (r.state !== logged || now - loggedAt >= (opts.logEveryMs ?? 30_000))) {
            opts.log(r.state);
            logged = r.state;
            loggedAt = now;
        }
        await clock.sleep(delay);
        delay = Math.min(maxDelay, delay * (opts.factor ?? 1.5));
    }
}

/**
 * Every read started side by side, each awaited to its end: the values in order, or the first error once none is
 * still running. (`Promise.all` rejects at the first error while the other reads go on, retrying, after the caller
 * has returned.)
 */
export async function allSettled<T extends readonly unknown[]>(reads: { [K in keyof T]: Promise<T[K]> }): Promise<T> {
    const results = await Promise.allSettled(reads);
    const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed) throw failed.reason;
    return results.map((r) => (r as PromiseFulfilledResult<unknown>).value) as unknown as T;
}
