/**
 * Mocha fixture: a fresh emulator per test, the environment pointed at it (endpoint + test
 * credentials, IMDS credential lookup disabled), restored afterwards, and a guard that fails any
 * connection to an address other than 127.0.0.1.
 */
import * as net from "net";
import { callApi, OpenApiError, type ParamValue, type Product } from "../../src/cloud/openapi";
import { configurePacer, resetPacer } from "../../src/cloud/pacer";

/**
 * The pacer's rate in tests that are not about pacing: high enough never to hold a call (tests poll every few ms,
 * far faster than a real run); a pacing test sets its own with `configurePacer` after the fixture's reset.
 */
export const UNPACED = { rates: { "*": 10_000 }, burst: 10_000 };
import { Emulator, EmulatorOptions, startEmulator, TEST_CREDENTIALS } from "./index";

const ENV_KEYS = ["ALICLOUD_KUBEADM_ENDPOINT", "ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET", "ALIBABA_CLOUD_SECURITY_TOKEN", "ALIBABA_CLOUD_ECS_METADATA_DISABLED", "ALIBABA_CLOUD_CLI_PROFILE_DISABLED"];

/** Refuse sockets to anything but loopback (unix sockets allowed). Returns the restore function. */
export function guardLoopbackOnly(): () => void {
    const original = net.Socket.prototype.connect;
    net.Socket.prototype.connect = function (this: net.Socket, ...args: unknown[]) {
        const first = Array.isArray(args[0]) ? (args[0] as unknown[])[0] : args[0];
        const opts = (typeof first === "object" && first !== null ? first : { host: args[1] }) as { host?: string; path?: string };
        if (!opts.path && opts.host !== undefined && opts.host !== "127.0.0.1") {
            throw new Error(`test tried to connect to ${opts.host}; only 127.0.0.1 is allowed`);
        }
        return (original as (...a: unknown[]) => net.Socket).apply(this, args);
    } as typeof net.Socket.prototype.connect;
    return () => { net.Socket.prototype.connect = original; };
}

/**
 * For tests that start emulators of their own (several per test: a fresh world per injected fault): before the
 * suite, the test credentials in the environment (IMDS and profile lookups off) and the loopback guard; after
 * it, both undone. Start each emulator with {@link startEmulatorHere}.
 */
export function useEmulatorEnvironment(): void {
    let saved: Record<string, string | undefined> = {};
    let unguard: () => void = () => undefined;
    before(() => {
        saved = Object.fromEntries(ENV_KEYS.map((k) => [k, process.env[k]]));
        Object.assign(process.env, {
            ALIBABA_CLOUD_ACCESS_KEY_ID: TEST_CREDENTIALS.accessKeyId, ALIBABA_CLOUD_ACCESS_KEY_SECRET: TEST_CREDENTIALS.accessKeySecret,
            ALIBABA_CLOUD_ECS_METADATA_DISABLED: "true", ALIBABA_CLOUD_CLI_PROFILE_DISABLED: "true",
        });
        delete process.env.ALIBABA_CLOUD_SECURITY_TOKEN;
        unguard = guardLoopbackOnly();
    });
    beforeEach(function () { here.test = this.currentTest?.fullTitle() ?? "a test"; here.started = []; });
    afterEach(() => { const started = here.started; here.started = []; assertNoStrayRequests(started); });
    after(() => {
        unguard();
        for (const [k, v] of Object.entries(saved)) {
            if (v === undefined) delete process.env[k];
            else process.env[k] = v;
        }
    });
}

/** The emulators {@link startEmulatorHere} started in the current test of {@link useEmulatorEnvironment}, and its title. */
const here: { test: string; started: Emulator[] } = { test: "a test", started: [] };

/** A fresh emulator the environment points at, with fresh rate buckets (unpaced); close it when done. */
export async function startEmulatorHere(opts: EmulatorOptions = {}): Promise<Emulator> {
    resetPacer();
    configurePacer(UNPACED);
    const emu = await startEmulator(opts);
    emu.claim(here.test);
    here.started.push(emu);
    process.env.ALICLOUD_KUBEADM_ENDPOINT = emu.endpoint;
    return emu;
}

/**
 * Fails (naming the test that left it) when a loop of an earlier test called one of these emulators: its requests
 * named ids another emulator minted ({@link Emulator.strayRequests}). Such a loop would otherwise answer into this
 * test's calls, rate limits and counts.
 */
export function assertNoStrayRequests(emulators: Emulator[]): void {
    const stray = emulators.flatMap((e) => e.strayRequests);
    if (stray.length === 0) return;
    const lines = stray.map((r) => `${r.action} for ${r.ids.join(", ")} (from the emulator of: ${r.from.join("; ")})`);
    throw new Error(`${stray.length} request(s) from a loop an earlier test left running reached this test's emulator; `
        + `make that test wait for (or stop) everything it started before it ends:\n  ${lines.join("\n  ")}`);
}

/** Register beforeEach/afterEach hooks; read `.emu` inside tests. */
export function useEmulator(opts: EmulatorOptions = {}): { readonly emu: Emulator } {
    const box: { emu?: Emulator } = {};
    let saved: Record<string, string | undefined> = {};
    let unguard: () => void = () => undefined;
    beforeEach(async function () {
        saved = Object.fromEntries(ENV_KEYS.map((k) => [k, process.env[k]]));
        unguard = guardLoopbackOnly();
        // Each test starts with fresh rate buckets: one test's throttling must not slow the next.
        resetPacer();
        configurePacer(UNPACED);
        box.emu = await startEmulator(opts);
        box.emu.claim(this.currentTest?.fullTitle() ?? "a test");
        process.env.ALICLOUD_KUBEADM_ENDPOINT = box.emu.endpoint;
        process.env.ALIBABA_CLOUD_ACCESS_KEY_ID = TEST_CREDENTIALS.accessKeyId;
        process.env.ALIBABA_CLOUD_ACCESS_KEY_SECRET = TEST_CREDENTIALS.accessKeySecret;
        process.env.ALIBABA_CLOUD_ECS_METADATA_DISABLED = "true";
        process.env.ALIBABA_CLOUD_CLI_PROFILE_DISABLED = "true";
        delete process.env.ALIBABA_CLOUD_SECURITY_TOKEN;
    });
    afterEach(async () => {
        await box.emu?.close();
        unguard();
        for (const [k, v] of Object.entries(saved)) {
            if (v === undefined) delete process.env[k];
            else process.env[k] = v;
        }
        if (box.emu) assertNoStrayRequests([box.emu]);
    });
    return { get emu(): Emulator { if (!box.emu) throw new Error("emulator not started"); return box.emu; } };
}

/** One OpenAPI call to the emulator through the real SDK path, without retries, throttling included (the emulator's self-tests). */
export const call = (product: Product, action: string, params: Record<string, ParamValue>) =>
    callApi(product, action, params, { region: "cn-hangzhou", retry: { maxAttempts: 1, throttleBudgetMs: 0 } });

/** The error code a call fails with, "" when it succeeds. */
export async function code(p: Promise<unknown>): Promise<string> {
    try {
        await p;
    } catch (e) {
        if (e instanceof OpenApiError) return e.code;
        throw e;
    }
    return "";
}

/** `key → value` of the rows a Describe call lists under `container.item`, e.g. members' LifecycleState by InstanceId. */
export async function describeMap(product: Product, action: string, params: Record<string, ParamValue>, list: [string, string], key: string, value: string): Promise<Record<string, string>> {
    const res = await call(product, action, params);
    const rows = ((res[list[0]] as Record<string, unknown> | undefined)?.[list[1]] ?? []) as Array<Record<string, string>>;
    return Object.fromEntries(rows.map((r) => [r[key], r[value]]));
}

/**
 * Fault injection for fault matrices: the `index`-th Cloud Assistant command (1-based) from now fails with exit code 1;
 * every other one is answered by the handler that would have answered it (the most recent match registered before).
 * @returns a flag that turns true once the fault has struck
 */
export function failNthCommand(emu: Emulator, index: number): { struck: boolean } {
    const hit = { struck: false };
    let k = 0;
    const handlers = emu.state.handlers;
    emu.onCommand(/[\s\S]*/, (ctx) => {
        if (++k === index) {
            hit.struck = true;
            return { exitCode: 1, output: "injected failure\n" };
        }
        for (let h = handlers.length - 2; h >= 0; h--) {
            if (handlers[h].pattern.test(ctx.script)) {
                const handler = handlers[h].handler;
                return typeof handler === "function" ? handler(ctx) : handler;
            }
        }
        return { exitCode: 127, output: "no handler" };
    });
    return hit;
}

/** Takes every fault of a fault matrix off: the request hooks and {@link failNthCommand}'s catch-all handler. */
export function disarmFaults(emu: Emulator): void {
    emu.beforeRequest = undefined;
    emu.afterRequest = undefined;
    const k = emu.state.handlers.findIndex((h) => h.pattern.source === "[\\s\\S]*");
    if (k >= 0) emu.state.handlers.splice(k, 1);
}
