/**
 * One pacer for every cloud call a process makes: a token bucket per action (`<product>:<Action>`), shared by
 * everything in the process that calls the cloud — the dynamic providers of one `pulumi up`, the removal core,
 * doctor, and on a master the admission service. Alibaba Cloud limits each action per account and region
 * (docs/upstream.md#api-rate-limits); every process of the account draws on the same limit, and none knows the
 * others, so each paces itself and slows down when the cloud says it is throttled:
 *
 * - **Token bucket** per action: `rate` calls per second with a burst of `burst`; a call without a token waits in
 *   the action's queue, served in the order they asked, each at the rate the action has when its turn comes.
 * - **AIMD**: a throttling answer halves that action's rate and spends its burst — once per round: answers to calls
 *   sent before the last cut are the same signal — and each second without one gives back {@link RECOVERY_PER_SECOND}
 *   calls/s, up to the configured rate. So several processes sharing one limit settle near their share without
 *   knowing of each other.
 * - **Visible**: when a call's wait grows past {@link REPORT_WAIT_MS}, one line goes to the reporter set with
 *   {@link reportPacingTo} (the providers' Pulumi log), saying the action, its rate and the wait.
 *
 * State lives on `globalThis` under a versioned key, not in a module variable: Pulumi serializes a dynamic
 * provider's functions by value, and each resource would otherwise carry its own copy of the buckets. From the
 * installed package the module is required by name and the key changes nothing; in this repository (providers
 * serialized whole) the key is what makes two resources in one provider host share one bucket. A change of the
 * state's shape changes the key. Node built-ins only, no imports: the admission service ships this file as is.
 *
 * Defaults (assumptions, see docs/upstream.md#api-rate-limits): {@link DEFAULT_RATE_PER_SECOND} calls/s and a burst
 * of {@link DEFAULT_BURST} per action and process; `ALICLOUD_KUBEADM_API_RATE` overrides them, e.g. `5`,
 * or `*=5,ecs:DescribeInvocationResults=10,ess:*=2`.
 */

/** Calls per second per action when nothing else is configured (an assumption: Alibaba's quotas are per account and not published). */
export const DEFAULT_RATE_PER_SECOND = 20;
/** Calls one action may make at once after a quiet spell. */
export const DEFAULT_BURST = 40;
/** The slowest an action is paced after throttling answers: one call every 5 s. */
export const MIN_RATE_PER_SECOND = 0.2;
/** Calls/s given back per second without a throttling answer (the additive increase). */
export const RECOVERY_PER_SECOND = 0.5;
/**
 * The longest a server's retry-after holds an action: one minute. Alibaba counts an action's calls per window of at
 * most a minute ("throttled at minute T, the operation can continue to be called as of minute T+1",
 * docs/upstream.md#api-rate-limits), so a longer one is not a throttling window; and a wrong or hostile header must
 * not stall every call of that action in the process (the admission service's too) for hours.
 */
export const MAX_RETRY_AFTER_MS = 60_000;
/** A wait at least this long is reported (when it grew since the last report, or 30 s later). */
export const REPORT_WAIT_MS = 2000;
/** Environment variable with the rates: a number (every action), or `key=rate` pairs (`*`, `ecs:*`, `ecs:InvokeCommand`). */
export const RATE_ENV = "ALICLOUD_KUBEADM_API_RATE";

/** One action's bucket. */
export interface Bucket {
    /** `<product>:<Action>`. */
    key: string;
    /**
     * Calls per second as configured and now (lower after throttling answers), and the burst now (1 after a
     * throttling answer, until the rate is back).
     */
    configured: number;
    rate: number;
    burst: number;
    /** Tokens in the bucket (negative: a server's retry-after is waited out), when they were last topped up (ms), and the calls waiting for one. */
    tokens: number;
    refilledAt: number;
    queued: number;
    /** When the rate last changed (a cut or a recovery) and when it was last cut (0: never), ms. */
    adjusted: number;
    cutAt: number;
    /** Calls made (tokens handed out), throttling answers seen, the longest wait expected (ms), and the last report's wait and time. */
    calls: number;
    throttled: number;
    longestWaitMs: number;
    lastReportedWaitMs: number;
    lastReportAt: number;
}

/** Where the process's pacer lives on `globalThis` (see the module comment); a change of its shape changes the key. */
const STATE_KEY = "__alicloudKubeadmPacer_v1";

interface PacerState {
    buckets: Record<string, Bucket>;
    /** Per action, the calls waiting for a token, in order (kept apart from the buckets: functions, not data). */
    waiters: Record<string, Array<(slotTakenAt: number) => void>>;
    /** Per action, whether a timer will hand out the next token. */
    timers: Record<string, boolean>;
    /** Rates by key (`*`, `<product>:*`, `<product>:<Action>`), calls per second. */
    rates: Record<string, number>;
    burst: number;
    report?: (message: string) => void;
    /** The clock set by {@link configurePacer} (tests); absent: the real one. Optional, so a state an older copy made still reads. */
    clock?: PacerClock;
}

/** What the pacer reads the time from and waits on: `src/cloud/wait.ts`'s `Clock`, spelt out here (this file imports nothing). */
export interface PacerClock {
    /** Milliseconds since the epoch. */
    now(): number;
    /** Resolves after `ms` milliseconds. */
    sleep(ms: number): Promise<void>;
}

const REAL_CLOCK: PacerClock = { now: () => Date.now(), sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)) };
const clockOf = (s: PacerState): PacerClock => s.clock ?? REAL_CLOCK;

/** Parses `ALICLOUD_KUBEADM_API_RATE`: a number, or comma-separated `key=rate`. Anything unreadable is ignored (the default holds). */
export function parseRates(text: string | undefined): Record<string, number> {
    const out: Record<string, number> = {};
    for (const part of (text ?? "").split(",").map((p) => p.trim()).filter(Boolean)) {
        const [key, value] = part.includes("=") ? part.split("=", 2).map((s) => s.trim()) : ["*", part];
        const rate = Number(value);
        if (key && Number.isFinite(rate) && rate > 0) out[key] = rate;
    }
    return out;
}

function state(): PacerState {
    const g = globalThis as unknown as Record<string, PacerState | undefined>;
    let s = g[STATE_KEY];
    if (!s) {
        s = { buckets: {}, waiters: {}, timers: {}, rates: { "*": DEFAULT_RATE_PER_SECOND, ...parseRates(process.env[RATE_ENV]) }, burst: DEFAULT_BURST };
        g[STATE_KEY] = s;
    }
    return s;
}

function configuredRate(s: PacerState, key: string): number {
    return Math.max(MIN_RATE_PER_SECOND, s.rates[key] ?? s.rates[`${key.split(":")[0]}:*`] ?? s.rates["*"] ?? DEFAULT_RATE_PER_SECOND);
}

function bucketOf(key: string, now: number): Bucket {
    const s = state();
    let b = s.buckets[key];
    if (!b) {
        const configured = configuredRate(s, key);
        b = {
            key, configured, rate: configured, burst: s.burst, tokens: s.burst, refilledAt: now, queued: 0, adjusted: now, cutAt: 0, calls: 0, throttled: 0,
            longestWaitMs: 0, lastReportedWaitMs: 0, lastReportAt: 0,
        };
        s.buckets[key] = b;
    }
    return b;
}

/** Tops the bucket up for the time since the last top-up, at its rate; the rate itself recovers with time (additive increase). */
function refill(b: Bucket, now: number): void {
    if (b.rate < b.configured && now > b.adjusted) {
        b.rate = Math.min(b.configured, b.rate + ((now - b.adjusted) / 1000) * RECOVERY_PER_SECOND);
        b.adjusted = now;
        if (b.rate >= b.configured) b.burst = state().burst;
    }
    b.tokens = Math.min(b.burst, b.tokens + ((now - b.refilledAt) / 1000) * b.rate);
    b.refilledAt = now;
}

/** Hands tokens to the waiting calls of `key`, in order, as they come; one timer per action while any wait. */
function serve(key: string): void {
    const s = state();
    const b = s.buckets[key];
    const waiting = s.waiters[key] ?? [];
    if (!b) return; // forgotten by resetPacer meanwhile
    const clock = clockOf(s);
    const now = clock.now();
    refill(b, now);
    while (waiting.length > 0 && b.tokens >= 1) {
        b.tokens -= 1;
        b.queued -= 1;
        waiting.shift()!(now);
    }
    s.timers[key] = waiting.length > 0;
    if (waiting.length > 0) void clock.sleep(Math.max(1, Math.ceil(((1 - b.tokens) / b.rate) * 1000))).then(() => serve(key));
}

/**
 * Takes a token of `key`, waiting in the action's queue for one when there is none.
 * @param key `<product>:<Action>`, e.g. `ecs:InvokeCommand`
 * @returns how long the call waited, ms, and when it took its token (for {@link throttled})
 */
export async function pace(key: string): Promise<{ waitedMs: number; slotTakenAt: number }> {
    const s = state();
    const now = clockOf(s).now();
    const b = bucketOf(key, now);
    refill(b, now);
    b.calls += 1;
    if (b.queued === 0 && b.tokens >= 1) {
        b.tokens -= 1;
        return { waitedMs: 0, slotTakenAt: now };
    }
    b.queued += 1;
    const expectedMs = ((b.queued - b.tokens) / b.rate) * 1000;
    b.longestWaitMs = Math.max(b.longestWaitMs, expectedMs);
    report(b, expectedMs, now);
    const slotTakenAt = await new Promise<number>((resolve) => {
        (s.waiters[key] ??= []).push(resolve);
        if (!s.timers[key]) serve(key);
    });
    return { waitedMs: slotTakenAt - now, slotTakenAt };
}

function report(b: Bucket, waitMs: number, now: number): void {
    const sink = state().report;
    if (!sink || waitMs < REPORT_WAIT_MS) return;
    if (waitMs <= b.lastReportedWaitMs * 1.5 && now - b.lastReportAt < 30_000) return;
    b.lastReportedWaitMs = waitMs;
    b.lastReportAt = now;
    const why = b.rate < b.configured ? `slowed to ${b.rate.toFixed(1)} calls/s after ${b.throttled} throttling answer(s) (configured ${b.configured}/s)` : `at ${b.configured} calls/s`;
    sink(`cloud API ${b.key}: ${why}; calls queue, the next waits ${(waitMs / 1000).toFixed(1)} s (${RATE_ENV} sets the rate)`);
}

/**
 * The cloud answered `key` with a throttling code: halve its rate (unless the call's slot was taken before the last
 * cut: that answer is the same signal), spend its burst, and hold the next slot for `retryAfterMs` when the server
 * said how long (at most {@link MAX_RETRY_AFTER_MS}).
 * @param slotTakenAt when the throttled call took its slot, ms (what {@link pace} returned; default now)
 */
export function throttled(key: string, retryAfterMs?: number, slotTakenAt?: number): void {
    const now = clockOf(state()).now();
    slotTakenAt ??= now;
    const b = bucketOf(key, now);
    refill(b, now);
    b.throttled += 1;
    if (slotTakenAt >= b.cutAt) {
        b.rate = Math.max(MIN_RATE_PER_SECOND, b.rate / 2);
        b.adjusted = now;
        b.cutAt = now;
    }
    b.burst = 1;
    const holdMs = Number.isFinite(retryAfterMs) ? Math.min(MAX_RETRY_AFTER_MS, Math.max(0, retryAfterMs!)) : 0;
    b.tokens = Math.min(b.tokens, 0, -(holdMs / 1000) * b.rate);
}

/** Sets where waits are reported (the Pulumi log in a provider; none by default). */
export function reportPacingTo(sink: ((message: string) => void) | undefined): void {
    state().report = sink;
}

/**
 * Sets rates (calls per second by `*`, `<product>:*` or `<product>:<Action>`) and the burst for buckets made from now on,
 * and the clock the pacer reads and waits on (default the real one; {@link resetPacer} puts it back); tests and tools.
 */
export function configurePacer(settings: { rates?: Record<string, number>; burst?: number; clock?: PacerClock }): void {
    const s = state();
    if (settings.rates) s.rates = { ...s.rates, ...settings.rates };
    if (settings.burst !== undefined) s.burst = Math.max(1, Math.floor(settings.burst));
    if (settings.clock) s.clock = settings.clock;
}

/** A copy of every bucket (tests, benchmarks). */
export function pacerBuckets(): Record<string, Bucket> {
    return JSON.parse(JSON.stringify(state().buckets)) as Record<string, Bucket>;
}

/** Forgets every bucket and setting; the next call starts from the defaults and the environment (tests, benchmarks). */
export function resetPacer(): void {
    const g = globalThis as unknown as Record<string, PacerState | undefined>;
    const old = g[STATE_KEY];
    delete g[STATE_KEY];
    // Calls still waiting go at once: nothing may wait for a bucket that no longer exists.
    for (const waiting of Object.values(old?.waiters ?? {})) waiting.splice(0).forEach((go) => go(clockOf(old!).now()));
}
