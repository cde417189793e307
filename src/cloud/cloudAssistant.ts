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
import { callApi, OpenApiError, type OpenApiError as OpenApiErrorType, type RetryOptions } from "./openapi";
import { type Clock, waitFor } from "./wait";

/** RunCommand's limit on the command content, after Base64 (bytes). */
export const MAX_CONTENT_BASE64_BYTES = 24 * 1024;
/**
 * Instances per RunCommand/InvokeCommand call: the API takes up to 100 (older references 50, older still 20);
 * a call refused with `InstanceIds.ExceedLimit` halves the batch for the rest of the run (docs/upstream.md#cas-batch-size).
 */
export const MAX_BATCH = 100;
/** Bytes of output quoted in error messages. */
export const OUTPUT_TAIL_BYTES = 2048;

// Plain arrays, not Sets: Pulumi function serialization cannot capture Set/Map values.
const NON_TERMINAL = ["Pending", "Running", "Scheduled", "Stopping"];
/** Synchronous codes of RunCommand/InvokeCommand that name a bad instance in the batch, not a bad request. */
const SYNC_INSTANCE_CODES = ["InvalidInstance.NotMatch", "InvalidInstance.NotFound", "InvalidInstanceId.NotFound"];
/** The synchronous code of a batch with more instances than the API takes (docs/upstream.md#cas-batch-size). */
const BATCH_TOO_LARGE = "InstanceIds.ExceedLimit";
/** Per-instance code of a result that was sent but could not be read (DescribeInvocationResults failed for good). */
export const RESULT_UNREAD = "ResultUnread";

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
    /** Instances per call, 1–100. Default 100 (halved for the rest of the run when the API refuses the count). */
    batchSize?: number;
    /** Delay before the first poll, ms (capped at 1000). Default 300: a quick command (a listing) is seen done at once. */
    pollIntervalMs?: number;
    /** Largest delay between polls, ms (capped at 10000). Default 2000: an end is seen within two seconds. Delays grow ×1.5 per poll. */
    pollMaxIntervalMs?: number;
    /**
     * The results of an earlier run of the same command (a retry): instances done or failed there are returned as
     * they were, without a call; those whose result was not read yet (a wait that ended, a poll that failed) are
     * polled again; those not sent are sent in their earlier batch with its ClientToken, so that a call the API
     * accepted but whose answer was lost is not run twice. Default none.
     */
    previous?: readonly InstanceResult[];
    /** Stop waiting this many ms after the command was sent; unfinished instances get status `Timeout`.
     * Default `timeoutSeconds * 1000 + 90000` (delivery can take up to a minute). */
    waitTimeoutMs?: number;
    /** The output may contain secrets: keep it out of error messages. Default false. */
    sensitiveOutput?: boolean;
    /** Use the VPC-internal endpoint. Default false. */
    vpcEndpoint?: boolean;
    /** Retry policy of the API calls (see `RetryOptions` in ./openapi). */
    retry?: RetryOptions;
    /**
     * Progress messages (e.g. for `pulumi.log.info`). Never contain the script, parameters or output. Default none. One
     * that throws stops the run: nothing more is sent or polled, and the run fails with its error.
     */
    progress?: (message: string) => void;
    /** The clock the polls wait on and the wait ends by (tests); the API calls' retries take theirs from `retry.clock`. Default the real one (`SYSTEM_CLOCK` in ./wait). */
    clock?: Clock;
}

/** How one instance's part of a run ended: it ran to the end (`done`), failed or could not be read (`failed`), or was never sent. */
export type Outcome = "done" | "failed" | "not-sent";

/** Result for one instance. */
export interface InstanceResult {
    instanceId: string;
    /** Done (ran, exit 0), failed (ran and failed, refused for this instance, or its result unread), or not sent (the call for its batch failed). */
    outcome: Outcome;
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
    /** The call of its batch: its ClientToken and instances (a retry with `previous` sends the batch again as it was). */
    batch?: { clientToken: string; instanceIds: string[] };
    /** Not sent: the API's answer to the batch's call. */
    sendError?: OpenApiErrorType;
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
export function commandError(r: Omit<InstanceResult, "ok" | "error" | "outcome">, ctx: { region: string; name: string; timeoutSeconds: number; sensitiveOutput?: boolean }): CommandError | undefined {
    if (r.status === "Success" && (r.exitCode ?? 0) === 0) return undefined;
    const id = r.instanceId, code = r.errorCode;
    const tail = ctx.sensitiveOutput ? "" : outputTail(r.output);
    const shown = ctx.sensitiveOutput ? " (output withheld: it may contain secrets)" : tail ? `. Last ${OUTPUT_TAIL_BYTES} bytes of output:\n${tail}` : " (no output)";
    const info = r.errorInfo ? `: ${r.errorInfo}` : "";
    const cls = code ? classify(code) : undefined;
    let msg: string;
    if (r.status === "NotSent") {
        msg = `"${ctx.name}" was not sent to ${id}: ${r.errorInfo}. Nothing ran there; run again to send it.`;
    } else if (code === RESULT_UNREAD) {
        msg = `"${ctx.name}" was sent to ${id} (invocation ${r.invokeId}) but its result could not be read: ${r.errorInfo}. ` +
            "Run again: the result is read again, the command is not sent twice.";
    } else if (cls === "agent-unreachable" && code !== "InvalidInstance.NotMatch") {
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

/** The outcome of a finished result. */
function outcomeOf(r: Partial_, error: CommandError | undefined): Outcome {
    return r.status === "NotSent" ? "not-sent" : error ? "failed" : "done";
}

type Partial_ = Omit<InstanceResult, "ok" | "error" | "outcome">;

/** One run of a command over many instances: its options, the results gathered so far, and the batch size now. */
interface Run {
    opts: RunCommandOptions;
    name: string;
    content: string;
    call: { region: string; vpcEndpoint?: boolean; retry?: RetryOptions };
    results: Map<string, Partial_>;
    batchSize: number;
    /** What the caller's progress callback threw: the run sends nothing more, stops polling, and fails with it. */
    stopped?: { error: unknown };
}

/**
 * Hands a message to the caller's progress callback. One that throws stops the run (see {@link Run.stopped}): its
 * batches would otherwise go on sending after the caller has its error.
 */
function say(run: Run, message: string): void {
    if (run.stopped || !run.opts.progress) return;
    try {
        run.opts.progress(message);
    } catch (error) {
        run.stopped = { error };
    }
}

function failed(run: Run, instanceId: string, errorCode: string, errorInfo: string, status = "Invalid"): void {
    run.results.set(instanceId, { instanceId, status, exitCode: null, output: "", dropped: 0, errorCode, errorInfo, invokeId: "" });
}

/** A batch to send: its instances and the ClientToken of its call (kept when a retry sends it again). */
interface Batch { instanceIds: string[]; clientToken: string }

/** Starts the command on a batch (RunCommand or InvokeCommand); returns the invocation id. */
async function startInvocation(run: Run, batch: Batch): Promise<string> {
    const { opts, name, call, content } = run;
    const res = opts.commandId !== undefined
        ? await callApi("ecs", "InvokeCommand", {
            CommandId: opts.commandId, InstanceId: batch.instanceIds, Timeout: opts.timeoutSeconds, ClientToken: batch.clientToken,
            Parameters: opts.parameters && Object.keys(opts.parameters).length > 0 ? JSON.stringify(opts.parameters) : undefined,
        }, call)
        : await callApi("ecs", "RunCommand", {
            Type: "RunShellScript", CommandContent: content, ContentEncoding: "Base64", Timeout: opts.timeoutSeconds ?? 60,
            Name: name, WorkingDir: opts.workingDir, InstanceId: batch.instanceIds, ClientToken: batch.clientToken,
        }, call);
    return String(res.InvokeId);
}

function newBatch(instanceIds: string[]): Batch {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return { instanceIds, clientToken: (require("crypto") as typeof import("crypto")).randomUUID() };
}

/**
 * Sends one batch and reads its results. Instances the API refuses synchronously are marked failed and the rest
 * sent again (a new call); a batch over the API's count is split (the run's batch size halved); any other failure
 * of the call marks the batch's instances not sent, with its ClientToken, for a retry. Never throws.
 */
async function runBatch(run: Run, batch: Batch, report: () => void): Promise<void> {
    let pending = batch;
    while (pending.instanceIds.length > 0) {
        if (run.stopped) return; // runCommand fails with the callback's error
        let invokeId: string;
        try {
            invokeId = await startInvocation(run, pending);
        } catch (e) {
            const err = e as OpenApiErrorType;
            if (err.code === BATCH_TOO_LARGE && pending.instanceIds.length > 1) {
                // Refused before anything ran: the halves are new calls; later batches use the smaller size too.
                const half = Math.ceil(pending.instanceIds.length / 2);
                run.batchSize = Math.min(run.batchSize, half);
                say(run, `Cloud Assistant: the API takes fewer than ${pending.instanceIds.length} instances per call (${err.code}); sending ${half} at a time`);
                await Promise.all([pending.instanceIds.slice(0, half), pending.instanceIds.slice(half)].map((ids) => runBatch(run, newBatch(ids), report)));
                return;
            }
            const bad = SYNC_INSTANCE_CODES.includes(err.code) ? await unusableInstances(run, pending.instanceIds, err.code).catch(() => undefined) : undefined;
            if (bad && bad.size === 0 && err.code === "InvalidInstance.NotMatch") {
                // Every instance is Running, yet refused: its agent is not ready to take commands yet.
                for (const id of pending.instanceIds) failed(run, id, "InvalidInstance.NotMatch", "the API refused a Running instance; its Cloud Assistant agent is probably not ready yet");
                return;
            }
            if (!bad || bad.size === 0) {
                notSent(run, pending, err);
                return;
            }
            for (const [id, why] of bad) failed(run, id, why.code, why.info);
            pending = newBatch(pending.instanceIds.filter((id) => !bad.has(id)));
            continue;
        }
        await pollInvocation(run, invokeId, pending, report);
        return;
    }
}

/** The batch's call failed for good: its instances are not sent (a retry sends the batch again with the same ClientToken). */
function notSent(run: Run, batch: Batch, err: OpenApiErrorType): void {
    for (const id of batch.instanceIds) {
        run.results.set(id, {
            instanceId: id, status: "NotSent", exitCode: null, output: "", dropped: 0, errorCode: err.code ?? "UnknownError",
            errorInfo: `${err.message ?? String(err)}`, invokeId: "", batch: { clientToken: batch.clientToken, instanceIds: [...batch.instanceIds] }, sendError: err,
        });
    }
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

/** Reads one invocation's results (all pages); records those of `waiting` that reached a final status. */
async function readResults(run: Run, invokeId: string, waiting: Set<string>): Promise<void> {
    let nextToken = "";
    do {
        const res = await callApi("ecs", "DescribeInvocationResults", { InvokeId: invokeId, MaxResults: 50, NextToken: nextToken || undefined }, run.call);
        const inv = (res.Invocation ?? {}) as { NextToken?: string; InvocationResults?: { InvocationResult?: RawResult[] } };
        for (const row of inv.InvocationResults?.InvocationResult ?? []) {
            const id = String(row.InstanceId);
            const status = String(row.InvocationStatus ?? "");
            if (!waiting.has(id) || NON_TERMINAL.includes(status)) continue;
            waiting.delete(id);
            run.results.set(id, {
                instanceId: id, status, invokeId,
                exitCode: typeof row.ExitCode === "number" && status !== "Invalid" && status !== "Aborted" ? row.ExitCode : null,
                output: Buffer.from(String(row.Output ?? ""), "base64").toString("utf8"),
                dropped: Number(row.Dropped ?? 0), errorCode: String(row.ErrorCode ?? ""), errorInfo: String(row.ErrorInfo ?? ""),
            });
        }
        nextToken = inv.NextToken ?? "";
    } while (nextToken);
}

/**
 * Polls one invocation until every sent instance reached a final status or the wait ends (then `ClientWaitTimeout`);
 * a poll that fails for good leaves the instances still waiting `ResultUnread`, with the invocation id to read later.
 */
async function pollInvocation(run: Run, invokeId: string, sent: Batch, report: () => void): Promise<void> {
    const { opts, results } = run;
    const waiting = new Set(sent.instanceIds.filter((id) => !results.has(id) || results.get(id)!.invokeId === invokeId));
    const unfinished = (errorCode: string, errorInfo: string, status: string) => {
        for (const id of waiting) results.set(id, { instanceId: id, status, exitCode: null, output: "", dropped: 0, errorCode, errorInfo, invokeId, batch: { ...sent } });
    };
    const timeoutMs = opts.waitTimeoutMs ?? (opts.timeoutSeconds ?? 60) * 1000 + 90_000;
    try {
        await waitFor(async () => {
            if (run.stopped) return { done: true, value: undefined };
            await readResults(run, invokeId, waiting);
            report();
            return waiting.size === 0 || run.stopped ? { done: true, value: undefined } : { done: false, state: `${waiting.size} running` };
        }, {
            timeoutMs, firstDelayMs: Math.min(1000, opts.pollIntervalMs ?? 300), maxDelayMs: Math.min(10_000, opts.pollMaxIntervalMs ?? 2000), pauseFirst: true,
            clock: opts.clock,
        }, () => new Error("wait ended"));
    } catch (err) {
        if (err instanceof OpenApiError) unfinished(RESULT_UNREAD, `DescribeInvocationResults failed: ${err.message}`, "Unknown");
        else unfinished("ClientWaitTimeout", "no final result before the wait ended", "Timeout");
    }
}

/**
 * Runs a command (saved or one-off) on instances through Cloud Assistant and waits for every instance
 * to finish. Nothing a call answers throws: every instance comes back done, failed (with an actionable `error`) or
 * not sent (its batch's call failed: `sendError`); an instance whose result could not be read is failed with code
 * {@link RESULT_UNREAD}. Batches go out at once, paced by the process's pacer (./pacer.ts), each with its own
 * ClientToken. A retry passes the results as `previous`: it sends only what was not sent, and runs nothing twice.
 *
 * @param opts See {@link RunCommandOptions}.
 * @returns One result per distinct instance id, in input order.
 * @throws {@link CommandError} (code `CmdContent.ExceedLimit`) before any call when a one-off script is over 24 KB after Base64;
 *   what `opts.progress` threw, once the batches it stopped have returned.
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
    const run: Run = {
        opts, name, content, call: { region: opts.region, vpcEndpoint: opts.vpcEndpoint, retry: opts.retry }, results: new Map(),
        batchSize: Math.max(1, Math.min(MAX_BATCH, opts.batchSize ?? MAX_BATCH)),
    };
    const { batches, polls } = planRetry(run, ids);
    const fresh = ids.filter((id) => !run.results.has(id) && !batches.some((b) => b.instanceIds.includes(id)) && !polls.some((p) => p.batch.instanceIds.includes(id)));
    for (let k = 0; k < fresh.length; k += run.batchSize) batches.push(newBatch(fresh.slice(k, k + run.batchSize)));
    const sending = batches.reduce((n, b) => n + b.instanceIds.length, 0);
    say(run, `Cloud Assistant: running "${name}" on ${ids.length} instance(s)` +
        (sending === ids.length ? ` in ${batches.length} batch(es)` : `: ${sending} to send in ${batches.length} batch(es), ${ids.length - sending} from the earlier run`));
    const report = progressReporter(run, ids.length);
    await Promise.all([
        ...batches.map((b) => runBatch(run, b, report)),
        ...polls.map((p) => pollInvocation(run, p.invokeId, p.batch, report)),
    ]);
    if (run.stopped) throw run.stopped.error;
    const ctx = { region: opts.region, name, timeoutSeconds: opts.timeoutSeconds ?? 60, sensitiveOutput: opts.sensitiveOutput };
    return ids.map((id) => {
        const r = run.results.get(id) as Partial_;
        const error = commandError(r, ctx);
        return { ...r, ok: !error, error, outcome: outcomeOf(r, error) };
    });
}

/**
 * What a retry (`previous`) does: results that are final are kept as they were; results not read yet are polled
 * again (their invocation); instances not sent go out again in their earlier batches, with the same ClientToken.
 */
function planRetry(run: Run, ids: readonly string[]): { batches: Batch[]; polls: Array<{ invokeId: string; batch: Batch }> } {
    const batches: Batch[] = [];
    const polls: Array<{ invokeId: string; batch: Batch }> = [];
    const wanted = new Set(ids);
    for (const r of run.opts.previous ?? []) {
        if (!wanted.has(r.instanceId) || run.results.has(r.instanceId) || batches.some((b) => b.instanceIds.includes(r.instanceId))) continue;
        const unread = r.invokeId !== "" && (r.errorCode === RESULT_UNREAD || r.errorCode === "ClientWaitTimeout");
        if (r.outcome === "not-sent" && r.batch) {
            // The whole batch as it was (a call the API took but whose answer was lost is answered again, not run again).
            batches.push({ clientToken: r.batch.clientToken, instanceIds: r.batch.instanceIds.filter((id) => wanted.has(id)) });
            if (r.batch.instanceIds.some((id) => !wanted.has(id))) batches[batches.length - 1].clientToken = newBatch([]).clientToken;
        } else if (unread) {
            const poll = polls.find((p) => p.invokeId === r.invokeId);
            if (poll) poll.batch.instanceIds.push(r.instanceId);
            else polls.push({ invokeId: r.invokeId, batch: { clientToken: r.batch?.clientToken ?? "", instanceIds: [r.instanceId] } });
        } else if (r.outcome !== "not-sent") {
            const { ok: _ok, error: _error, outcome: _outcome, ...kept } = r;
            run.results.set(r.instanceId, kept);
        }
    }
    return { batches, polls };
}

function progressReporter(run: Run, total: number): () => void {
    let last = -1;
    return () => {
        if (run.results.size === last) return;
        last = run.results.size;
        say(run, `Cloud Assistant: "${run.name}" finished on ${run.results.size}/${total} instance(s)`);
    };
}

/** Options of {@link runOnInstance}: those of {@link runCommand} for a single instance. */
export type RunOnInstanceOptions = Omit<RunCommandOptions, "instanceIds" | "batchSize" | "previous"> & {
    instanceId: string;
    /** A successful run whose output Cloud Assistant cut (it keeps 24 KB) is success: the caller reads only the exit status. Default false. */
    truncatedOutputIsFine?: boolean;
};

/**
 * Run a script on one instance and return its output.
 * @returns The decoded output of a successful run (exit 0).
 * @throws {@link CommandError} when the run did not succeed, or when the service truncated the output
 *   (code `OutputTruncated`; Cloud Assistant keeps 24 KB) unless `truncatedOutputIsFine`; the API's
 *   `OpenApiError` when the command could not be sent.
 */
export async function runOnInstance(opts: RunOnInstanceOptions): Promise<string> {
    const [r] = await runCommand({ ...opts, instanceIds: [opts.instanceId] });
    if (r.sendError) throw r.sendError;
    if (r.error) throw r.error;
    if (r.dropped > 0 && !opts.truncatedOutputIsFine) {
        throw new CommandError(`"${opts.name ?? "alicloud-kubeadm"}" on ${r.instanceId} printed more than Cloud Assistant keeps: ${r.dropped} bytes were dropped. Print less (write large data to a file and read it in parts).`,
            r.instanceId, "OutputTruncated", r.exitCode, "");
    }
    return r.output;
}

/**
 * Stops the invocations of saved command `commandId` still running (or pending) on the instance
 * (DescribeInvocations, then StopInvocation for that instance) and waits until none runs; a join still running
 * there would otherwise register its Node again after a removal's reset. docs/upstream.md#cas-stop-invocation.
 * @returns the invocations stopped ([] when none ran)
 */
export async function stopRunningInvocations(region: string, instanceId: string, commandId: string, opts: { pollMs?: number; timeoutMs?: number; clock?: Clock } = {}): Promise<string[]> {
    const running = async () => {
        const res = await callApi("ecs", "DescribeInvocations", { InstanceId: instanceId, CommandId: commandId, MaxResults: 50 }, { region });
        type Raw = { InvokeId?: string; InvokeInstances?: { InvokeInstance?: Array<{ InstanceId?: string; InvocationStatus?: string }> } };
        return ((res.Invocations as { Invocation?: Raw[] } | undefined)?.Invocation ?? [])
            .filter((inv) => (inv.InvokeInstances?.InvokeInstance ?? []).some((x) => x.InstanceId === instanceId && NON_TERMINAL.includes(String(x.InvocationStatus))))
            .map((inv) => String(inv.InvokeId));
    };
    const stopped = await running();
    for (const invokeId of stopped) await callApi("ecs", "StopInvocation", { InvokeId: invokeId, InstanceId: [instanceId] }, { region });
    if (stopped.length === 0) return [];
    const timeoutMs = opts.timeoutMs ?? 120_000;
    await waitFor(async () => {
        const left = await running();
        return left.length === 0 ? { done: true, value: undefined } : { done: false, state: left.join(", ") };
    }, { timeoutMs, firstDelayMs: opts.pollMs ?? 1000, pauseFirst: true, clock: opts.clock },
    (left) => new Error(`invocation(s) ${left} of command ${commandId} still run on ${instanceId} ${Math.round(timeoutMs / 1000)} s after StopInvocation`));
    return stopped;
}
