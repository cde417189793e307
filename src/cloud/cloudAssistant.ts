/**
 * Cloud Assistant runner: run a command on ECS instances and wait for per-instance results
 * (`DescribeInvocationResults`). A command is either a saved command invoked with parameters
 * (`InvokeCommand`: the content is stored once, invocations carry only the parameters) or a one-off
 * script (`RunCommand`). Built on {@link callApi}; see `./openapi` for credentials, endpoints
 * (`ALICLOUD_KUBEADM_ENDPOINT`) and retries.
 *
 * Facts used (docs/upstream.md#alibaba-cloud-cloud-assistant): RunCommand content ≤ 24 KB after Base64
 * and PlainText by default, so we send `ContentEncoding=Base64`; results carry Base64 output; a stopped
 * instance or a dead agent usually shows up as a per-instance `ErrorCode`, sometimes as a synchronous
 * `InvalidInstance.NotMatch` — both are classified by ./errors.
 */
import { describeInstances } from "./ecs";
import { classify } from "./errors";
import { callApi, Clock, OpenApiError as OpenApiErrorType, RetryOptions, SYSTEM_CLOCK } from "./openapi";

/** RunCommand's limit on the command content, after Base64 (bytes). */
export const MAX_CONTENT_BASE64_BYTES = 24 * 1024;
/** Instances per RunCommand/InvokeCommand call (the API takes up to 100; older quotas 50, so 50 is safe). */
export const MAX_BATCH = 50;
/** Bytes of output quoted in error messages. */
export const OUTPUT_TAIL_BYTES = 2048;

// Plain arrays, not Sets: Pulumi function serialization cannot capture Set/Map values.
const NON_TERMINAL = ["Pending", "Running", "Scheduled", "Stopping"];
/** Synchronous codes of RunCommand/InvokeCommand that name a bad instance in the batch, not a bad request. */
const SYNC_INSTANCE_CODES = ["InvalidInstance.NotMatch", "InvalidInstance.NotFound", "InvalidInstanceId.NotFound"];

/** Options of {@link runCommand}: what to run (exactly one of `commandId` and `script`), where, and how long to wait. */
export interface RunCommandOptions {
    /** `InvokeCommand` of this saved command (`alicloud.ecs.Command`). */
    commandId?: string;
    /** Parameters of the saved command; values must already be validated (they reach a shell). */
    parameters?: Record<string, string>;
    /** `RunCommand` of this one-off script (bash/sh, run as root; never logged). */
    script?: string;
    /** Region id, e.g. `cn-hangzhou`. */
    region: string;
    /** Target instances (duplicates are ignored). */
    instanceIds: string[];
    /** Seconds before the agent kills the command (`Timeout`). Default 60 (RunCommand); the saved command's own (InvokeCommand). */
    timeoutSeconds?: number;
    /** Name shown in messages (and, for RunCommand, in the ECS console). Default `alicloud-kubeadm`. */
    name?: string;
    /** Working directory (RunCommand). Default: the API's (`/root`). */
    workingDir?: string;
    /** Instances per call, 1–50. Default 50. */
    batchSize?: number;
    /** Delay before the first poll, ms (capped at 1000). Default 1000. */
    pollIntervalMs?: number;
    /** Largest delay between polls, ms (capped at 10000). Default 10000. Delays grow ×1.5 per poll. */
    pollMaxIntervalMs?: number;
    /** Stop waiting this many ms after the command was sent; unfinished instances get status `Timeout`.
     * Default `timeoutSeconds * 1000 + 90000` (delivery can take up to a minute). */
    waitTimeoutMs?: number;
    /** The output may contain secrets: keep it out of error messages. Default false. */
    sensitiveOutput?: boolean;
    /** Use the VPC-internal endpoint. Default false. */
    vpcEndpoint?: boolean;
    /** Retry policy of the API calls (see `RetryOptions` in ./openapi). */
    retry?: RetryOptions;
    /** Progress messages (e.g. for `pulumi.log.info`). Never contain the script, parameters or output. Default none. */
    progress?: (message: string) => void;
    /** The clock the polls wait on and the wait ends by (tests). Default the real one (`SYSTEM_CLOCK` in ./openapi). */
    clock?: Clock;
}

/** Result for one instance. */
export interface InstanceResult {
    instanceId: string;
    /** Per-instance `InvocationStatus` (`Success`, `Failed`, `Timeout`, `Aborted`, `Invalid`, …). */
    status: string;
    /** Exit code, or null when the script did not run to completion. */
    exitCode: number | null;
    /** Decoded output (stdout and stderr as the agent captured them). */
    output: string;
    /** Bytes the service dropped from `output` (it keeps at most 24 KB). */
    dropped: number;
    /** Per-instance `ErrorCode` ("" on success), or a synchronous API code. */
    errorCode: string;
    /** The service's `ErrorInfo`. */
    errorInfo: string;
    /** Invocation id, "" when the command was never created for this instance. */
    invokeId: string;
    /** True when the status is `Success` and the exit code 0. */
    ok: boolean;
    /** Why it failed, with an actionable message; undefined when `ok`. */
    error?: CommandError;
}

/** A command that failed on one instance (or could not be sent at all). */
export class CommandError extends Error {
    constructor(
        message: string,
        /** Instance concerned; "" when the failure is not about one instance. */
        readonly instanceId: string,
        /** Cloud Assistant / API error code, e.g. `ClientNotRunning`, `ExitCodeNonzero`, `ExecutionTimeout`. */
        readonly errorCode: string,
        /** Exit code, or null. */
        readonly exitCode: number | null,
        /** Last 2 KB of output ("" when `sensitiveOutput`). */
        readonly outputTail: string,
    ) {
        super(message);
        this.name = "CommandError";
    }
}

/** Last `OUTPUT_TAIL_BYTES` bytes of a string. */
export function outputTail(output: string): string {
    const b = Buffer.from(output, "utf8");
    return b.length <= OUTPUT_TAIL_BYTES ? output : b.subarray(b.length - OUTPUT_TAIL_BYTES).toString("utf8");
}

/** Build the actionable error for a non-successful result (undefined when it succeeded). */
export function commandError(r: Omit<InstanceResult, "ok" | "error">, ctx: { region: string; name: string; timeoutSeconds: number; sensitiveOutput?: boolean }): CommandError | undefined {
    if (r.status === "Success" && (r.exitCode ?? 0) === 0) return undefined;
    const id = r.instanceId, code = r.errorCode;
    const tail = ctx.sensitiveOutput ? "" : outputTail(r.output);
    const shown = ctx.sensitiveOutput ? " (output withheld: it may contain secrets)" : tail ? `. Last ${OUTPUT_TAIL_BYTES} bytes of output:\n${tail}` : " (no output)";
    const info = r.errorInfo ? `: ${r.errorInfo}` : "";
    const cls = code ? classify(code) : undefined;
    let msg: string;
    if (cls === "agent-unreachable" && code !== "InvalidInstance.NotMatch") {
        const state = code === "ClientNotRunning" ? "not running" : code === "ClientNotResponse" ? "not responding"
            : code === "DeliveryTimeout" ? "not taking commands (delivery timed out)" : "being upgraded or too old";
        msg = `Cloud Assistant agent on ${id} is ${state} (${code}), so "${ctx.name}" could not run. ` +
            `Start it on the instance with \`systemctl restart aliyun.service\`, or install it (InstallCloudAssistant for ${id} in ${ctx.region}, then reboot the instance; ` +
            `public images from after 2017-12-01 include it). DescribeCloudAssistantStatus shows whether it is online.`;
    } else if (cls === "instance-not-running" || code === "InvalidInstance.NotMatch") {
        msg = `Instance ${id} is not Running (${code}${info}); Cloud Assistant only runs commands on Running instances. Start it (StartInstance or the ECS console) and retry.`;
    } else if (cls === "not-found") {
        msg = `Instance ${id} does not exist in ${ctx.region} (${code}): it was released or the id is wrong. Remove it from the configuration.`;
    } else if (r.status === "Timeout" || cls === "timeout") {
        const what = code === "ClientWaitTimeout" ? "no final result arrived in time" : `it did not finish within ${ctx.timeoutSeconds}s and was killed`;
        msg = `"${ctx.name}" on ${id} timed out (${code}): ${what}. Raise timeoutSeconds or find what the script waits for${shown}`;
    } else if (r.status === "Failed" || code === "ExitCodeNonzero") {
        msg = `"${ctx.name}" on ${id} exited with code ${r.exitCode ?? "unknown"}${shown}`;
    } else {
        msg = `Cloud Assistant could not run "${ctx.name}" on ${id}: status ${r.status}${code ? `, ${code}` : ""}${info}.`;
    }
    return new CommandError(msg, id, code || (r.status === "Failed" ? "ExitCodeNonzero" : r.status), r.exitCode, tail);
}


type Partial_ = Omit<InstanceResult, "ok" | "error">;

/** One run of a command over many instances: its options and the results gathered so far. */
interface Run {
    opts: RunCommandOptions;
    name: string;
    call: { region: string; vpcEndpoint?: boolean; retry?: RetryOptions };
    results: Map<string, Partial_>;
}

function failed(run: Run, instanceId: string, errorCode: string, errorInfo: string, status = "Invalid"): void {
    run.results.set(instanceId, { instanceId, status, exitCode: null, output: "", dropped: 0, errorCode, errorInfo, invokeId: "" });
}

/** Starts the command on a batch (RunCommand or InvokeCommand); returns the invocation id. */
async function startInvocation(run: Run, batch: string[], content: string): Promise<string> {
    const { opts, name, call } = run;
    const res = opts.commandId !== undefined
        ? await callApi("ecs", "InvokeCommand", {
            CommandId: opts.commandId, InstanceId: batch, Timeout: opts.timeoutSeconds,
            Parameters: opts.parameters && Object.keys(opts.parameters).length > 0 ? JSON.stringify(opts.parameters) : undefined,
        }, call)
        : await callApi("ecs", "RunCommand", {
            Type: "RunShellScript", CommandContent: content, ContentEncoding: "Base64", Timeout: opts.timeoutSeconds ?? 60,
            Name: name, WorkingDir: opts.workingDir, InstanceId: batch,
        }, call);
    return String(res.InvokeId);
}

/** Sends one batch; instances the API refuses synchronously are marked failed and left out. */
async function sendBatch(run: Run, batch: string[], content: string): Promise<{ invokeId: string; sent: string[] } | undefined> {
    let pending = batch;
    while (pending.length > 0) {
        try {
            return { invokeId: await startInvocation(run, pending, content), sent: pending };
        } catch (e) {
            const err = e as OpenApiErrorType;
            if (!SYNC_INSTANCE_CODES.includes(err.code)) throw e;
            const bad = await unusableInstances(run, pending, err.code);
            if (bad.size === 0 && err.code === "InvalidInstance.NotMatch") {
                // Every instance is Running, yet refused: its agent is not ready to take commands yet.
                for (const id of pending) failed(run, id, "InvalidInstance.NotMatch", "the API refused a Running instance; its Cloud Assistant agent is probably not ready yet");
                return undefined;
            }
            if (bad.size === 0) throw e;
            for (const [id, why] of bad) failed(run, id, why.code, why.info);
            pending = pending.filter((id) => !bad.has(id));
        }
    }
    return undefined;
}

/** Which instances of a refused batch are missing or not Running. */
async function unusableInstances(run: Run, batch: string[], syncCode: string): Promise<Map<string, { code: string; info: string }>> {
    const found = await describeInstances(run.call.region, batch, run.call.retry);
    const bad = new Map<string, { code: string; info: string }>();
    for (const id of batch) {
        const st = found.get(id)?.status;
        if (st === undefined) bad.set(id, { code: "InvalidInstance.NotFound", info: `the API refused the batch with ${syncCode}` });
        else if (st !== "Running") bad.set(id, { code: "InstanceNotRunning", info: `instance is ${st}; the API refused the batch with ${syncCode}` });
    }
    return bad;
}

interface RawResult { InstanceId?: string; InvocationStatus?: string; ExitCode?: number; Output?: string; Dropped?: number; ErrorCode?: string; ErrorInfo?: string }

/** Polls one invocation until every sent instance reached a final status or the wait ends. */
async function pollInvocation(run: Run, invokeId: string, sent: string[], report: () => void): Promise<void> {
    const { opts, call, results } = run;
    const clock = opts.clock ?? SYSTEM_CLOCK;
    const deadline = clock.now() + (opts.waitTimeoutMs ?? (opts.timeoutSeconds ?? 60) * 1000 + 90_000);
    const maxDelay = Math.min(10_000, opts.pollMaxIntervalMs ?? 10_000);
    let delay = Math.min(1000, opts.pollIntervalMs ?? 1000);
    const waiting = new Set(sent);
    while (waiting.size > 0) {
        await clock.sleep(Math.max(0, Math.min(delay, deadline - clock.now())));
        let nextToken = "";
        do {
            const res = await callApi("ecs", "DescribeInvocationResults", { InvokeId: invokeId, MaxResults: 50, NextToken: nextToken || undefined }, call);
            const inv = (res.Invocation ?? {}) as { NextToken?: string; InvocationResults?: { InvocationResult?: RawResult[] } };
            for (const row of inv.InvocationResults?.InvocationResult ?? []) {
                const id = String(row.InstanceId);
                const status = String(row.InvocationStatus ?? "");
                if (!waiting.has(id) || NON_TERMINAL.includes(status)) continue;
                waiting.delete(id);
                results.set(id, {
                    instanceId: id, status, invokeId,
                    exitCode: typeof row.ExitCode === "number" && status !== "Invalid" && status !== "Aborted" ? row.ExitCode : null,
                    output: Buffer.from(String(row.Output ?? ""), "base64").toString("utf8"),
                    dropped: Number(row.Dropped ?? 0), errorCode: String(row.ErrorCode ?? ""), errorInfo: String(row.ErrorInfo ?? ""),
                });
            }
            nextToken = inv.NextToken ?? "";
        } while (nextToken);
        report();
        if (waiting.size > 0 && clock.now() >= deadline) {
            for (const id of waiting) results.set(id, { instanceId: id, status: "Timeout", exitCode: null, output: "", dropped: 0, errorCode: "ClientWaitTimeout", errorInfo: "no final result before the wait ended", invokeId });
            return;
        }
        delay = Math.min(maxDelay, delay * 1.5);
    }
}

/**
 * Runs a command (saved or one-off) on instances through Cloud Assistant and waits for every instance
 * to finish. Per-instance failures do not throw: they come back with `ok: false` and an actionable `error`.
 *
 * @param opts See {@link RunCommandOptions}.
 * @returns One result per distinct instance id, in input order.
 * @throws {@link CommandError} (code `CmdContent.ExceedLimit`) before any call when a one-off script is over 24 KB after Base64;
 *   `OpenApiError` when an API call fails for good.
 */
export async function runCommand(opts: RunCommandOptions): Promise<InstanceResult[]> {
    const ids = [...new Set(opts.instanceIds)];
    const name = opts.name ?? "alicloud-kubeadm";
    if ((opts.script === undefined) === (opts.commandId === undefined)) {
        throw new Error(`runCommand "${name}": give exactly one of script (RunCommand) and commandId (InvokeCommand)`);
    }
    const content = opts.script === undefined ? "" : Buffer.from(opts.script, "utf8").toString("base64");
    if (content.length > MAX_CONTENT_BASE64_BYTES) {
        throw new CommandError(`Script "${name}" is ${content.length} bytes after Base64, over the ${MAX_CONTENT_BASE64_BYTES}-byte limit of Cloud Assistant RunCommand. ` +
            `Shorten it, split it into several commands, or ship the bulk through user data or a download.`, "", "CmdContent.ExceedLimit", null, "");
    }
    if (ids.length === 0) return [];
    const run: Run = { opts, name, call: { region: opts.region, vpcEndpoint: opts.vpcEndpoint, retry: opts.retry }, results: new Map() };
    const batchSize = Math.max(1, Math.min(MAX_BATCH, opts.batchSize ?? MAX_BATCH));
    const batches: string[][] = [];
    for (let k = 0; k < ids.length; k += batchSize) batches.push(ids.slice(k, k + batchSize));
    opts.progress?.(`Cloud Assistant: running "${name}" on ${ids.length} instance(s) in ${batches.length} batch(es)`);
    const report = progressReporter(opts, name, ids.length, run.results);
    await Promise.all(batches.map(async (batch) => {
        const sent = await sendBatch(run, batch, content);
        if (sent) await pollInvocation(run, sent.invokeId, sent.sent, report);
    }));
    const ctx = { region: opts.region, name, timeoutSeconds: opts.timeoutSeconds ?? 60, sensitiveOutput: opts.sensitiveOutput };
    return ids.map((id) => {
        const r = run.results.get(id) as Partial_;
        const error = commandError(r, ctx);
        return { ...r, ok: !error, error };
    });
}

function progressReporter(opts: RunCommandOptions, name: string, total: number, results: Map<string, unknown>): () => void {
    let last = -1;
    return () => {
        if (!opts.progress || results.size === last) return;
        last = results.size;
        opts.progress(`Cloud Assistant: "${name}" finished on ${results.size}/${total} instance(s)`);
    };
}

/** Options of {@link runOnInstance}: those of {@link runCommand} for a single instance. */
export type RunOnInstanceOptions = Omit<RunCommandOptions, "instanceIds" | "batchSize"> & { instanceId: string };

/**
 * Run a script on one instance and return its output.
 * @returns The decoded output of a successful run (exit 0).
 * @throws {@link CommandError} when the run did not succeed, or when the service truncated the output
 *   (code `OutputTruncated`; Cloud Assistant keeps 24 KB).
 */
export async function runOnInstance(opts: RunOnInstanceOptions): Promise<string> {
    const [r] = await runCommand({ ...opts, instanceIds: [opts.instanceId] });
    if (r.error) throw r.error;
    if (r.dropped > 0) {
        throw new CommandError(`"${opts.name ?? "alicloud-kubeadm"}" on ${r.instanceId} printed more than Cloud Assistant keeps: ${r.dropped} bytes were dropped. Print less (write large data to a file and read it in parts).`,
            r.instanceId, "OutputTruncated", r.exitCode, "");
    }
    return r.output;
}
