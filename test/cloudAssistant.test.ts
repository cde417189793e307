// World: the OpenAPI emulator (testing/emulator).
import * as assert from "assert";
import * as pulumi from "@pulumi/pulumi";
import { CommandError, runCommand, RunCommandOptions, runOnInstance } from "../src/cloud/cloudAssistant";
import { OpenApiError } from "../src/cloud/openapi";
import { configurePacer } from "../src/cloud/pacer";
import { TEST_CREDENTIALS } from "../testing/emulator";
import { useEmulator } from "../testing/emulator/fixture";

const region = "cn-hangzhou";
/** Fast polling and retries so the suite stays quick. */
const fast: Partial<RunCommandOptions> = { pollIntervalMs: 20, pollMaxIntervalMs: 50, retry: { baseDelayMs: 1, maxDelayMs: 5 } };

function decodeScript(b64: string): string {
    return Buffer.from(b64, "base64").toString("utf8");
}

/** The InstanceId.N counts of calls, largest first. */
function batchSizes(calls: Array<{ params: Record<string, string> }>): number[] {
    return calls.map((c) => Object.keys(c.params).filter((k) => k.startsWith("InstanceId.")).length).sort((x, y) => y - x);
}

/** A handler that counts how often the command ran on each instance. */
function countingRuns(): { runs: Map<string, number>; handler: (ctx: { instanceId: string }) => { output: string } } {
    const runs = new Map<string, number>();
    return { runs, handler: (ctx) => { runs.set(ctx.instanceId, (runs.get(ctx.instanceId) ?? 0) + 1); return { output: "ran\n" }; } };
}

async function caught(p: Promise<unknown>): Promise<unknown> {
    try { await p; } catch (e) { return e; }
    throw new Error("expected a failure");
}

describe("Cloud Assistant runner", () => {
    const fx = useEmulator();

    it("runs a script on instances and returns decoded per-instance output", async () => {
        const ids = fx.emu.addInstances(3);
        fx.emu.onCommand(/^echo hello$/, (ctx) => ({ output: `hello from ${ctx.instanceId}\n`, delayMs: 30 }));
        const results = await runCommand({ region, instanceIds: ids, script: "echo hello", timeoutSeconds: 30, name: "greet", ...fast });
        assert.deepStrictEqual(results.map((r) => [r.instanceId, r.ok, r.status, r.exitCode, r.output]),
            ids.map((id) => [id, true, "Success", 0, `hello from ${id}\n`]));
        const [call] = fx.emu.callsOf("RunCommand");
        assert.strictEqual(call.params.Type, "RunShellScript");
        assert.strictEqual(call.params.ContentEncoding, "Base64");
        assert.strictEqual(decodeScript(call.params.CommandContent), "echo hello");
        assert.strictEqual(call.params.Timeout, "30");
        assert.strictEqual(call.params.Name, "greet");
        assert.ok(call.params.ClientToken, "RunCommand carries a ClientToken");
        assert.ok(fx.emu.callsOf("DescribeInvocationResults").every((c) => c.params.InvokeId === results[0].invokeId));
    });

    it("runOnInstance returns stdout", async () => {
        const [id] = fx.emu.addInstances(1);
        fx.emu.onCommand(/cat \/etc\/kubernetes\/pki\/ca.crt/, { output: "-----BEGIN CERTIFICATE-----\n" });
        assert.strictEqual(await runOnInstance({ region, instanceId: id, script: "cat /etc/kubernetes/pki/ca.crt", ...fast }), "-----BEGIN CERTIFICATE-----\n");
    });

    it("retries a throttled RunCommand and still creates one invocation", async () => {
        const ids = fx.emu.addInstances(2);
        fx.emu.onCommand(/true/, {});
        fx.emu.throttle("RunCommand", 2);
        fx.emu.throttle("DescribeInvocationResults", 1);
        const results = await runCommand({ region, instanceIds: ids, script: "true", ...fast });
        assert.ok(results.every((r) => r.ok));
        const runs = fx.emu.callsOf("RunCommand");
        assert.deepStrictEqual(runs.map((c) => c.status), [400, 400, 200]);
        assert.strictEqual(new Set(runs.map((c) => c.params.ClientToken)).size, 1);
        assert.strictEqual(fx.emu.state.invocations.size, 1);
    });

    it("a single instance whose command could not be sent: runOnInstance throws the API's typed error", async () => {
        const [id] = fx.emu.addInstances(1);
        fx.emu.fail5xx("RunCommand", 50);
        const err = await caught(runOnInstance({ region, instanceId: id, script: "true", ...fast, retry: { baseDelayMs: 1, maxDelayMs: 2, maxAttempts: 3 } }));
        assert.ok(err instanceof OpenApiError);
        assert.strictEqual(err.code, "ServiceUnavailable");
        assert.strictEqual(err.attempts, 3);
        assert.strictEqual(fx.emu.state.invocations.size, 0);
    });

    it("agent offline: says how to start or install the Cloud Assistant agent", async () => {
        const [down, silent, fine] = fx.emu.addInstances(3);
        fx.emu.setAgentOffline(down);
        fx.emu.setAgentOffline(silent, "ClientNotResponse");
        fx.emu.onCommand(/true/, {});
        const results = await runCommand({ region, instanceIds: [down, silent, fine], script: "true", ...fast });
        const [a, b, c] = results;
        assert.strictEqual(c.ok, true);
        assert.strictEqual(a.errorCode, "ClientNotRunning");
        assert.ok(a.error instanceof CommandError);
        assert.match(a.error.message, new RegExp(`agent on ${down} is not running \\(ClientNotRunning\\)`));
        assert.match(a.error.message, /systemctl restart aliyun\.service/);
        assert.match(a.error.message, /InstallCloudAssistant/);
        assert.match(b.error?.message ?? "", /not responding \(ClientNotResponse\)/);
        const thrown = await caught(runOnInstance({ region, instanceId: down, script: "true", ...fast }));
        assert.ok(thrown instanceof CommandError && thrown.errorCode === "ClientNotRunning" && thrown.instanceId === down);
    });

    it("stopped instance: per-instance InstanceNotRunning", async () => {
        const [stopped] = fx.emu.addInstances(1);
        fx.emu.stopInstance(stopped);
        const [r] = await runCommand({ region, instanceIds: [stopped], script: "true", ...fast });
        assert.strictEqual(r.errorCode, "InstanceNotRunning");
        assert.strictEqual(r.exitCode, null);
        assert.match(r.error?.message ?? "", new RegExp(`Instance ${stopped} is not Running .*StartInstance`));
    });

    it("stopped instance refused synchronously (InvalidInstance.NotMatch): the rest of the batch still runs", async () => {
        fx.emu.state.syncNotMatchForStoppedInstances = true;
        const [a, stopped, c] = fx.emu.addInstances(3);
        fx.emu.stopInstance(stopped);
        fx.emu.onCommand(/true/, {});
        const results = await runCommand({ region, instanceIds: [a, stopped, c], script: "true", ...fast });
        assert.deepStrictEqual(results.map((r) => [r.instanceId, r.ok, r.errorCode]), [[a, true, ""], [stopped, false, "InstanceNotRunning"], [c, true, ""]]);
        assert.match(results[1].error?.message ?? "", /InvalidInstance\.NotMatch/);
        assert.deepStrictEqual(fx.emu.callsOf("RunCommand").map((x) => x.code), ["InvalidInstance.NotMatch", ""]);
        assert.strictEqual(fx.emu.callsOf("RunCommand")[1].params["InstanceId.2"], c);
        assert.strictEqual(fx.emu.callsOf("DescribeInstances").length, 1);
    });

    it("released instance: InvalidInstance.NotFound, named as gone", async () => {
        const [gone, ok] = fx.emu.addInstances(2);
        fx.emu.releaseInstance(gone);
        fx.emu.onCommand(/true/, {});
        const [r, s] = await runCommand({ region, instanceIds: [gone, ok], script: "true", ...fast });
        assert.strictEqual(s.ok, true);
        assert.strictEqual(r.errorCode, "InvalidInstance.NotFound");
        assert.match(r.error?.message ?? "", new RegExp(`Instance ${gone} does not exist in ${region}.*released`));
    });

    it("non-zero exit: the error carries the exit code and the last 2 KB of output", async () => {
        const [id] = fx.emu.addInstances(1);
        const output = "BEGIN-MARKER\n" + "x".repeat(5000) + "\nkubeadm: error execution phase preflight\n";
        fx.emu.onCommand(/kubeadm join/, { exitCode: 3, output });
        const err = await caught(runOnInstance({ region, instanceId: id, script: "kubeadm join ...", name: "join", ...fast }));
        assert.ok(err instanceof CommandError);
        assert.strictEqual(err.exitCode, 3);
        assert.strictEqual(err.errorCode, "ExitCodeNonzero");
        assert.strictEqual(Buffer.byteLength(err.outputTail), 2048);
        assert.ok(output.endsWith(err.outputTail));
        assert.match(err.message, new RegExp(`"join" on ${id} exited with code 3`));
        assert.match(err.message, /error execution phase preflight\n$/);
        assert.ok(!err.message.includes("BEGIN-MARKER"), "only the tail is quoted");
    });

    it("sensitive output stays out of errors", async () => {
        const [id] = fx.emu.addInstances(1);
        fx.emu.onCommand(/token/, { exitCode: 1, output: "abcdef.0123456789abcdef\n" });
        const err = await caught(runOnInstance({ region, instanceId: id, script: "kubeadm token create", sensitiveOutput: true, ...fast }));
        assert.ok(err instanceof CommandError);
        assert.ok(!err.message.includes("0123456789abcdef") && err.outputTail === "");
        assert.match(err.message, /output withheld/);
    });

    it("timeout: the agent kills the script after timeoutSeconds", async () => {
        const [id] = fx.emu.addInstances(1);
        fx.emu.onCommand(/sleep/, { delayMs: 5000, output: "still waiting\n" });
        const [r] = await runCommand({ region, instanceIds: [id], script: "sleep 600", timeoutSeconds: 1, ...fast });
        assert.strictEqual(r.status, "Timeout");
        assert.strictEqual(r.errorCode, "ExecutionTimeout");
        assert.match(r.error?.message ?? "", /timed out \(ExecutionTimeout\): it did not finish within 1s.*Raise timeoutSeconds/s);
    });

    it("timeout: gives up waiting when no final result arrives", async () => {
        const [id] = fx.emu.addInstances(1);
        fx.emu.onCommand(/hang/, () => new Promise(() => undefined));
        // The runner's own clock, moved only by the pauses it asks for: the wait ends by its bound, not the machine's speed.
        let now = 0;
        const clock = { now: () => now, sleep: async (ms: number) => { now += ms; } };
        const [r] = await runCommand({ region, instanceIds: [id], script: "hang", timeoutSeconds: 60, waitTimeoutMs: 300, ...fast, clock });
        assert.ok(now <= 300, `waited ${now} ms of its clock, past the 300 ms bound (the script's 60 s timeout is not what ends the wait)`);
        assert.strictEqual(r.status, "Timeout");
        assert.strictEqual(r.errorCode, "ClientWaitTimeout");
        assert.match(r.error?.message ?? "", /no final result arrived in time/);
    });

    it("120 instances go out in 2 RunCommand calls of at most 100", async () => {
        const ids = fx.emu.addInstances(120);
        fx.emu.onCommand(/true/, { delayMs: 20 });
        const progress: string[] = [];
        const results = await runCommand({ region, instanceIds: ids, script: "true", ...fast, progress: (m) => progress.push(m) });
        assert.strictEqual(results.length, 120);
        assert.ok(results.every((r) => r.ok && r.outcome === "done"));
        assert.deepStrictEqual(batchSizes(fx.emu.callsOf("RunCommand")), [100, 20]);
        assert.match(progress[0], /120 instance\(s\) in 2 batch\(es\)/);
        assert.match(progress[progress.length - 1], /finished on 120\/120/);
    });

    it("pages DescribeInvocationResults with NextToken", async () => {
        const ids = fx.emu.addInstances(20);
        fx.emu.state.invocationResultsPageCap = 7;
        fx.emu.onCommand(/true/, (ctx) => ({ output: ctx.instanceId }));
        const results = await runCommand({ region, instanceIds: ids, script: "true", ...fast });
        assert.deepStrictEqual(results.map((r) => r.output), ids);
        const polls = fx.emu.callsOf("DescribeInvocationResults");
        assert.strictEqual(polls.length, 3, "one poll, three pages");
        assert.deepStrictEqual(polls.map((c) => Boolean(c.params.NextToken)), [false, true, true]);
    });

    it("refuses content over 24 KB after Base64 without calling the API", async () => {
        const [id] = fx.emu.addInstances(1);
        const script = "#".repeat(18 * 1024 + 1); // 24 KB + 4 bytes once Base64-encoded
        const err = await caught(runCommand({ region, instanceIds: [id], script, ...fast }));
        assert.ok(err instanceof CommandError);
        assert.strictEqual(err.errorCode, "CmdContent.ExceedLimit");
        assert.match(err.message, /24576-byte limit/);
        assert.strictEqual(fx.emu.calls.length, 0);
        const atLimit = "#".repeat(18 * 1024);
        fx.emu.onCommand(/^#+$/, {});
        assert.strictEqual((await runCommand({ region, instanceIds: [id], script: atLimit, ...fast }))[0].ok, true);
    });

    it("runOnInstance refuses truncated output rather than returning part of it", async () => {
        const [id] = fx.emu.addInstances(1);
        fx.emu.onCommand(/big/, { output: "y".repeat(30 * 1024) });
        const err = await caught(runOnInstance({ region, instanceId: id, script: "big", ...fast }));
        assert.ok(err instanceof CommandError);
        assert.strictEqual(err.errorCode, "OutputTruncated");
        assert.match(err.message, /6144 bytes were dropped/);
    });

    it("a quick command is seen done at the first poll, which comes 300 ms after the call by default", async () => {
        const [id] = fx.emu.addInstances(1);
        fx.emu.onCommand(/true/, {});
        // The runner's own clock, so the waits it asks for are what is checked, not how long the machine took.
        const waits: number[] = [];
        const clock = { now: () => 0, sleep: async (ms: number) => { waits.push(ms); } };
        const [r] = await runCommand({ region, instanceIds: [id], script: "true", clock });
        assert.ok(r.ok);
        assert.deepStrictEqual(waits, [300]);
        assert.strictEqual(fx.emu.callsOf("DescribeInvocationResults").length, 1, "one poll: the first found it done");
    });
});

describe("Cloud Assistant fan-out: no accepted work is lost", () => {
    const fx = useEmulator();

    it("a batch whose call fails comes back not sent while the others' results are kept; a retry sends only that batch, with its ClientToken", async () => {
        const ids = fx.emu.addInstances(4);
        const count = countingRuns();
        fx.emu.onCommand(/true/, count.handler);
        // The call for the batch holding ids[2] is applied, but every answer to it is lost (the harsher failure: it ran).
        fx.emu.inject("RunCommand", { status: 503, code: "ServiceUnavailable", message: "answer lost", times: 3, afterApply: true, when: (p) => p["InstanceId.1"] === ids[2] });
        const first = await runCommand({ region, instanceIds: ids, script: "true", batchSize: 2, ...fast, retry: { baseDelayMs: 1, maxDelayMs: 2, maxAttempts: 3 } });
        assert.deepStrictEqual(first.map((r) => r.outcome), ["done", "done", "not-sent", "not-sent"]);
        assert.strictEqual(first[2].errorCode, "ServiceUnavailable");
        assert.match(first[2].error?.message ?? "", /was not sent to .*run again to send it/);
        const retry = await runCommand({ region, instanceIds: ids, script: "true", batchSize: 2, ...fast, previous: first });
        assert.deepStrictEqual(retry.map((r) => r.outcome), ["done", "done", "done", "done"]);
        assert.deepStrictEqual(ids.map((id) => count.runs.get(id)), [1, 1, 1, 1], "nothing ran twice");
        const retryCalls = fx.emu.callsOf("RunCommand").slice(4);
        assert.deepStrictEqual(retryCalls.map((c) => [c.params["InstanceId.1"], c.params.ClientToken]), [[ids[2], first[2].batch!.clientToken]], "only the unsent batch, with its ClientToken");
    });

    it(`a batch over the API's count (InstanceIds.ExceedLimit) halves the batch for the rest of the run and sends nothing twice`, async () => {
        fx.emu.state.maxInstancesPerInvocation = 50;
        const ids = fx.emu.addInstances(230);
        const count = countingRuns();
        fx.emu.onCommand(/true/, count.handler);
        const results = await runCommand({ region, instanceIds: ids, script: "true", ...fast });
        assert.ok(results.every((r) => r.outcome === "done"), JSON.stringify(results.filter((r) => r.outcome !== "done").slice(0, 2)));
        assert.ok(ids.every((id) => count.runs.get(id) === 1), "every instance ran once");
        const calls = fx.emu.callsOf("RunCommand");
        assert.ok(calls.filter((c) => c.code === "InstanceIds.ExceedLimit").length >= 1);
        assert.ok(batchSizes(calls.filter((c) => c.code === "")).every((n) => n <= 50));
        assert.strictEqual(fx.emu.state.invocations.size, calls.filter((c) => c.code === "").length);
    });

    it("a progress callback that throws stops the run: no command is sent after the throw, and the run fails with the callback's error", async () => {
        fx.emu.state.maxInstancesPerInvocation = 10;
        const ids = fx.emu.addInstances(120);
        const count = countingRuns();
        fx.emu.onCommand(/true/, count.handler);
        // Both batches (100 and 20) are refused as too large; the first one's split message throws (the caller's log is
        // gone, say), once: the other batch must not go on splitting and sending.
        let sentAtThrow = -1;
        const progress = (m: string) => {
            if (sentAtThrow < 0 && /takes fewer than/.test(m)) {
                sentAtThrow = fx.emu.state.invocations.size;
                throw new Error("the progress log is closed");
            }
        };
        const err = await caught(runCommand({ region, instanceIds: ids, script: "true", ...fast, progress }));
        assert.match(String(err), /the progress log is closed/);
        // Whatever a run left going would have sent by now (each call answers in milliseconds here).
        await new Promise((r) => setTimeout(r, 300));
        assert.ok(sentAtThrow >= 0, "the callback threw");
        assert.strictEqual(fx.emu.state.invocations.size, sentAtThrow, "commands were sent after the progress callback threw");
        assert.strictEqual(count.runs.size, 0);
    });

    it("under an API rate limit every instance is accounted for (done, failed or not sent); the retry finishes the rest and runs nothing twice", async () => {
        // Three RunCommand calls a minute: three of the six batches cannot go within the throttling budget, and go in
        // the next minute.
        fx.emu.rateLimit({ RunCommand: 3 }, 60_000);
        fx.emu.advance(60_000 - (fx.emu.state.now() % 60_000)); // the start of a window on the emulator's clock: the run cannot straddle two
        configurePacer({ rates: { "*": 10 }, burst: 5 });
        const ids = fx.emu.addInstances(6);
        const [broken] = ids;
        const count = countingRuns();
        fx.emu.onCommand(/true/, (ctx) => (ctx.instanceId === broken ? { exitCode: 2, output: "no\n" } : count.handler(ctx)));
        const opts = { region, instanceIds: ids, script: "true", batchSize: 1, ...fast, retry: { baseDelayMs: 1, maxDelayMs: 2, throttleBudgetMs: 300 } };
        const first = await runCommand(opts);
        assert.strictEqual(first.length, ids.length);
        assert.strictEqual(first.filter((r) => r.outcome === "not-sent").length, 3, JSON.stringify(first.map((r) => r.outcome)));
        assert.ok(first.filter((r) => r.outcome === "not-sent").every((r) => /^Throttling/.test(r.errorCode)));
        assert.ok(first.filter((r) => r.outcome !== "not-sent").every((r) => r.outcome === (r.instanceId === broken ? "failed" : "done")));
        fx.emu.advance(60_000); // the next minute
        const retry = await runCommand({ ...opts, retry: { baseDelayMs: 1, maxDelayMs: 2 }, previous: first });
        assert.deepStrictEqual(retry.map((r) => r.outcome), ids.map((id) => (id === broken ? "failed" : "done")));
        assert.ok(ids.filter((id) => id !== broken).every((id) => count.runs.get(id) === 1), "nothing ran twice");
        assert.strictEqual(fx.emu.state.invocations.size, ids.length, "one invocation per instance");
    });
});

describe("dynamic provider serialization", () => {
    const fx = useEmulator();

    it("a provider using the runner serializes without credentials and runs after deserialization", async () => {
        const canary = "CANARY-SECRET-Zq81";
        process.env.ALIBABA_CLOUD_ACCESS_KEY_SECRET = canary;
        // The pattern every provider follows: library modules imported at the top (Pulumi captures
        // them by value); SDK packages are require()d inside the library's functions; credentials
        // come from the environment at call time.
        const provider: pulumi.dynamic.ResourceProvider = {
            async create(inputs: { region: string; instanceId: string }) {
                const out = await runOnInstance({ region: inputs.region, instanceId: inputs.instanceId, script: "hostname", pollIntervalMs: 20 });
                return { id: inputs.instanceId, outs: { hostname: out.trim() } };
            },
        };
        const serialized = await pulumi.runtime.serializeFunction(() => provider, { allowSecrets: true });
        assert.ok(!serialized.text.includes(canary), "no secret in the serialized provider");
        assert.ok(!serialized.text.includes(TEST_CREDENTIALS.accessKeyId), "no AccessKey id in the serialized provider");
        assert.match(serialized.text, /require\("@alicloud\/openapi-core"\)/, "SDK is required at call time, not captured");

        // Run it the way Pulumi's dynamic provider host does: from the source text, in another directory.
        process.env.ALIBABA_CLOUD_ACCESS_KEY_SECRET = TEST_CREDENTIALS.accessKeySecret;
        const [id] = fx.emu.addInstances(1);
        fx.emu.onCommand(/^hostname$/, { output: "node-1\n" });
        const cwd = process.cwd();
        process.chdir(__dirname + "/emulator");
        try {
            const requireFromString = require("require-from-string") as (code: string) => { handler: () => pulumi.dynamic.ResourceProvider };
            const revived = requireFromString(serialized.text).handler();
            const res = await revived.create({ region, instanceId: id });
            assert.deepStrictEqual(res.outs, { hostname: "node-1" });
        } finally {
            process.chdir(cwd);
        }
    });
});

