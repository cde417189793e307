// World: the OpenAPI emulator (testing/emulator).
/**
 * The emulator's Cloud Assistant model (saved commands, parameters, DescribeInvocations, delivery
 * timeouts) and the ECS power/system-disk semantics, exercised through the real SDK path (callApi).
 */
import * as assert from "assert";
import { call, code, useEmulator } from "../../testing/emulator/fixture";
import type { Emulator } from "../../testing/emulator";
import type { ParamValue } from "../../src/cloud/openapi";

const b64 = (s: string) => Buffer.from(s, "utf8").toString("base64");
const unb64 = (s: string) => Buffer.from(s, "base64").toString("utf8");


interface Invocation { InvokeId: string; CommandId: string; CommandContent: string; Parameters: string; InvocationStatus: string; InvokeInstances: { InvokeInstance: { InstanceId: string; InvocationStatus: string; ErrorCode: string; ErrorInfo: string; Output?: string; ExitCode?: number }[] } }

async function invocation(invokeId: string, extra: Record<string, ParamValue> = {}): Promise<Invocation> {
    const res = await call("ecs", "DescribeInvocations", { InvokeId: invokeId, ...extra });
    return (res.Invocations as { Invocation: Invocation[] }).Invocation[0];
}

/** Reads the invocation until `done` holds, stepping the emulator's clock 20 ms between reads, for at most `timeoutMs` of it. */
async function until(emu: Emulator, invokeId: string, done: (i: Invocation) => boolean, timeoutMs = 3000): Promise<Invocation> {
    for (let waited = 0; ; waited += 20) {
        const inv = await invocation(invokeId, { IncludeOutput: true, ContentEncoding: "PlainText" });
        if (done(inv) || waited >= timeoutMs) return inv;
        emu.advance(20);
    }
}

describe("emulator: Cloud Assistant saved commands", () => {
    const fx = useEmulator();

    it("CreateCommand + InvokeCommand: the handler sees the substituted script; DescribeInvocations returns the content and the Parameters (the leak)", async () => {
        const [a, b] = fx.emu.addInstances(2);
        const seen: { id: string; script: string; commandId: string }[] = [];
        fx.emu.onCommand(/^kubeadm join/, (ctx) => { seen.push({ id: ctx.instanceId, script: ctx.script, commandId: ctx.commandId }); return { output: "joined\n" }; });
        const content = "kubeadm join {{ endpoint }} --token {{Token}} --node-name {{ACS::InstanceId}}";
        const { CommandId } = await call("ecs", "CreateCommand", { Name: "join", Type: "RunShellScript", CommandContent: b64(content), EnableParameter: true, Timeout: 120 });
        const cmdId = String(CommandId);
        const listed = await call("ecs", "DescribeCommands", { CommandId: cmdId, ContentEncoding: "PlainText" });
        const cmd = (listed.Commands as { Command: { Name: string; CommandContent: string; EnableParameter: boolean; Timeout: number; ParameterNames: { ParameterName: string[] } }[] }).Command[0];
        assert.deepStrictEqual([cmd.Name, cmd.CommandContent, cmd.EnableParameter, cmd.Timeout, cmd.ParameterNames.ParameterName], ["join", content, true, 120, ["endpoint", "Token"]]);

        // Parameter names are case-insensitive ([REQ] CreateCommandRequest.commandContent).
        const parameters = JSON.stringify({ ENDPOINT: "10.0.0.1:6443", token: "abcdef.0123456789abcdef" });
        const { InvokeId } = await call("ecs", "InvokeCommand", { CommandId: cmdId, InstanceId: [a, b], Parameters: parameters });
        const done = await until(fx.emu, String(InvokeId), (i) => i.InvocationStatus === "Success");
        assert.strictEqual(done.InvocationStatus, "Success");
        assert.deepStrictEqual(seen.map((s) => s.script).sort(), [a, b].map((id) => `kubeadm join 10.0.0.1:6443 --token abcdef.0123456789abcdef --node-name ${id}`).sort());
        assert.ok(seen.every((s) => s.commandId === cmdId), "the invocation records the saved command's id");
        assert.strictEqual(done.CommandId, cmdId);
        assert.deepStrictEqual(done.InvokeInstances.InvokeInstance.map((r) => [r.InvocationStatus, r.Output]), [["Success", "joined\n"], ["Success", "joined\n"]]);

        // Base64 by default: CommandContent is the template as created, Parameters the JSON as passed — the token included.
        const raw = await invocation(String(InvokeId));
        assert.strictEqual(unb64(raw.CommandContent), content);
        assert.strictEqual(raw.Parameters, parameters);
        assert.match(raw.Parameters, /abcdef\.0123456789abcdef/);
        assert.strictEqual(raw.InvokeInstances.InvokeInstance[0].Output, undefined, "Output only with IncludeOutput=true");

        const results = await call("ecs", "DescribeInvocationResults", { InvokeId: String(InvokeId) });
        const rows = (results.Invocation as { InvocationResults: { InvocationResult: { CommandId: string; InvocationStatus: string }[] } }).InvocationResults.InvocationResult;
        assert.deepStrictEqual(rows.map((r) => [r.CommandId, r.InvocationStatus]), [[cmdId, "Success"], [cmdId, "Success"]]);
        assert.strictEqual(fx.emu.commands.get(cmdId)?.invokeTimes, 1);
    });

    it("InvokeCommand validates Parameters against the declared names and the documented limits", async () => {
        const [a] = fx.emu.addInstances(1);
        const create = async (content: string, enable = true) => String((await call("ecs", "CreateCommand", { Name: "c", Type: "RunShellScript", CommandContent: b64(content), EnableParameter: enable })).CommandId);
        const two = await create("echo {{a}} {{b}}");
        const invoke = (cmd: string, parameters?: unknown) => call("ecs", "InvokeCommand", { CommandId: cmd, InstanceId: [a], Parameters: parameters === undefined ? undefined : JSON.stringify(parameters) });
        assert.strictEqual(await code(invoke(two, { a: "1" })), "Parameter.NotMatched", "a declared parameter left out");
        assert.strictEqual(await code(invoke(two)), "Parameter.NotMatched", "EnableParameter=true needs Parameters");
        assert.strictEqual(await code(invoke(two, { a: "1", b: "2", c: "3" })), "Parameter.NotMatched", "an undeclared parameter");
        assert.strictEqual(await code(invoke(two, { a: "1", A: "1", b: "2" })), "ParameterKey.Duplicate", "names are case-insensitive");
        assert.strictEqual(await code(invoke(two, { a: 1, b: "2" })), "ParameterType.NotSupported");
        assert.strictEqual(await code(invoke(two, Object.fromEntries(Array.from({ length: 11 }, (_, k) => [`p${k}`, "x"])))), "ParameterCount.ExceedLimit");
        assert.strictEqual(await code(invoke(two, { ["k".repeat(65)]: "x" })), "ParameterKey.ExceedLimit");
        const plain = await create("echo {{a}}", false);
        assert.strictEqual(await code(invoke(plain, { a: "1" })), "Parameter.Disabled");
        assert.strictEqual(await code(invoke("c-doesnotexist0000")), "InvalidCmdId.NotFound");
        assert.strictEqual(await code(invoke(two, { a: "x".repeat(12 * 1024), b: "y".repeat(12 * 1024) })), "CmdContent.ExceedLimit", "content + parameters ≤ 24 KB after Base64");
        assert.strictEqual(await code(call("ecs", "InvokeCommand", { CommandId: plain, InstanceId: [a], Timeout: 5 })), "InvalidParameter.Timeout", "Timeout ≥ 10 s");
        assert.strictEqual(fx.emu.state.invocations.size, 0, "no refused call started anything");

        // EnableParameter=false: {{a}} is plain text in the script.
        const scripts: string[] = [];
        fx.emu.onCommand(/^echo/, (ctx) => { scripts.push(ctx.script); return {}; });
        await invoke(plain);
        await invoke(two, { a: "1", b: "" }); // a handler sees the script when the invocation starts
        assert.deepStrictEqual(scripts, ["echo {{a}}", "echo 1 "]);
    });

    it("CreateCommand enforces the name, description, content and parameter-name limits", async () => {
        const create = (params: Record<string, ParamValue>) => call("ecs", "CreateCommand", { Name: "n", Type: "RunShellScript", CommandContent: b64("true"), ...params });
        assert.strictEqual(await code(create({ Name: "n".repeat(129) })), "CmdName.ExceedLimit");
        assert.strictEqual(await code(create({ Description: "d".repeat(513) })), "CmdDesc.ExceedLimit");
        assert.strictEqual(await code(create({ CommandContent: b64("x".repeat(18 * 1024 + 1)) })), "CmdContent.ExceedLimit");
        assert.strictEqual(await code(create({ CommandContent: "not base64!" })), "CmdContent.DecodeError", "CreateCommand content is Base64 by default");
        assert.strictEqual(await code(create({ Type: "RunPythonScript" })), "InvalidCmdType.NotFound");
        assert.strictEqual(await code(create({ CommandContent: b64("echo {{a b}}"), EnableParameter: true })), "CmdParam.InvalidParamName");
        assert.strictEqual(await code(create({ CommandContent: b64("echo {{ACS::Secret}}"), EnableParameter: true })), "CmdParam.InvalidParamName");
        assert.strictEqual(await code(create({ CommandContent: b64(`echo {{${"p".repeat(65)}}}`), EnableParameter: true })), "CmdParamName.ExceedLimit");
        const many = Array.from({ length: 21 }, (_, k) => `{{p${k}}}`).join(" ");
        assert.strictEqual(await code(create({ CommandContent: b64(many), EnableParameter: true })), "CmdParamCount.ExceedLimit");
        assert.strictEqual(await code(create({ CommandContent: b64(many) })), "", "without EnableParameter the braces are plain text");
        const { CommandId } = await create({ CommandContent: "echo plain", ContentEncoding: "PlainText" });
        assert.strictEqual(fx.emu.commands.get(String(CommandId))?.content, "echo plain");
    });

    it("DeleteCommand refuses a command that is running; its invocations (and their content) stay", async () => {
        const [a] = fx.emu.addInstances(1);
        fx.emu.stopClock(); // the command runs 150 ms of the emulator's time: still running at DeleteCommand, however slow the machine
        fx.emu.onCommand(/^sleep/, { delayMs: 150 });
        const cmd = String((await call("ecs", "CreateCommand", { Name: "s", Type: "RunShellScript", CommandContent: b64("sleep 1 # secret-ish") })).CommandId);
        const { InvokeId } = await call("ecs", "InvokeCommand", { CommandId: cmd, InstanceId: [a] });
        assert.strictEqual(await code(call("ecs", "DeleteCommand", { CommandId: cmd })), "InvalidStatus.CmdIdInUse");
        await until(fx.emu, String(InvokeId), (i) => i.InvocationStatus === "Success");
        await call("ecs", "DeleteCommand", { CommandId: cmd });
        const listed = await call("ecs", "DescribeCommands", {});
        assert.strictEqual(listed.TotalCount, 0);
        assert.strictEqual(unb64((await invocation(String(InvokeId))).CommandContent), "sleep 1 # secret-ish");
        assert.strictEqual(await code(call("ecs", "InvokeCommand", { CommandId: cmd, InstanceId: [a] })), "InvalidCmdId.NotFound");
        assert.strictEqual(await code(call("ecs", "DeleteCommand", { CommandId: cmd })), "InvalidCmdId.NotFound");
    });

    it("RunCommand keeps its command only with KeepCommand=true, and shows up in DescribeInvocations too", async () => {
        const [a] = fx.emu.addInstances(1);
        fx.emu.onCommand(/./, {});
        const r1 = await call("ecs", "RunCommand", { Type: "RunShellScript", CommandContent: "echo one", InstanceId: [a] });
        const r2 = await call("ecs", "RunCommand", { Type: "RunShellScript", CommandContent: "echo two", InstanceId: [a], KeepCommand: true, Name: "kept" });
        const listed = (await call("ecs", "DescribeCommands", {})).Commands as { Command: { CommandId: string; Name: string }[] };
        assert.deepStrictEqual(listed.Command.map((c) => [c.CommandId, c.Name]), [[String(r2.CommandId), "kept"]]);
        const invs = (await call("ecs", "DescribeInvocations", { InstanceId: a, ContentEncoding: "PlainText" })).Invocations as { Invocation: { InvokeId: string; CommandContent: string }[] };
        assert.deepStrictEqual(invs.Invocation.map((i) => [i.InvokeId, i.CommandContent]), [[String(r2.InvokeId), "echo two"], [String(r1.InvokeId), "echo one"]], "newest first");
        assert.strictEqual(await code(call("ecs", "RunCommand", { Type: "Bogus", CommandContent: "x", InstanceId: [a] })), "InvalidCmdType.NotFound");
    });

    it("an agent in DeliveryTimeout never gets the command: Pending, then Aborted / DeliveryTimeout; its status check still says true", async () => {
        const [a, b] = fx.emu.addInstances(2);
        fx.emu.setAgentOffline(b, "DeliveryTimeout");
        // The documented minute, ended by stepping the emulator's clock: the first read cannot come after it.
        fx.emu.state.deliveryTimeoutMs = 60_000;
        const ran: string[] = [];
        fx.emu.onCommand(/./, (ctx) => { ran.push(ctx.instanceId); return {}; });
        const cmd = String((await call("ecs", "CreateCommand", { Name: "x", Type: "RunShellScript", CommandContent: b64("true") })).CommandId);
        const { InvokeId } = await call("ecs", "InvokeCommand", { CommandId: cmd, InstanceId: [a, b] });
        let inv = await invocation(String(InvokeId));
        assert.deepStrictEqual(inv.InvokeInstances.InvokeInstance.map((r) => [r.InstanceId, r.InvocationStatus]), [[a, "Success"], [b, "Pending"]]);
        assert.strictEqual(inv.InvocationStatus, "Pending");
        fx.emu.advance(60_000);
        inv = await invocation(String(InvokeId), { IncludeOutput: true, ContentEncoding: "PlainText" });
        const rb = inv.InvokeInstances.InvokeInstance[1];
        assert.deepStrictEqual([rb.InvocationStatus, rb.ErrorCode, rb.ErrorInfo], ["Aborted", "DeliveryTimeout", "the command delivery has been timeout"]);
        assert.strictEqual(inv.InvocationStatus, "PartialFailed");
        assert.deepStrictEqual(ran, [a], "the handler never ran for the undeliverable instance");
        const results = await call("ecs", "DescribeInvocationResults", { InvokeId: String(InvokeId), InstanceId: b });
        const row = (results.Invocation as { InvocationResults: { InvocationResult: { InvocationStatus: string; ErrorCode: string; InvokeRecordStatus: string }[] } }).InvocationResults.InvocationResult[0];
        assert.deepStrictEqual([row.InvocationStatus, row.ErrorCode, row.InvokeRecordStatus], ["Aborted", "DeliveryTimeout", "Failed"]);
        const status = await call("ecs", "DescribeCloudAssistantStatus", { InstanceId: [b] });
        assert.strictEqual((status.InstanceCloudAssistantStatusSet as { InstanceCloudAssistantStatus: { CloudAssistantStatus: string }[] }).InstanceCloudAssistantStatus[0].CloudAssistantStatus, "true");
    });

    it("aggregate status: all failed → Failed; an offline agent and a stopped instance end at once", async () => {
        const [a, b] = fx.emu.addInstances(2);
        fx.emu.setAgentOffline(a);
        fx.emu.stopInstance(b);
        const { InvokeId } = await call("ecs", "RunCommand", { Type: "RunShellScript", CommandContent: "true", InstanceId: [a, b] });
        const inv = await invocation(String(InvokeId));
        assert.strictEqual(inv.InvocationStatus, "Failed");
        assert.deepStrictEqual(inv.InvokeInstances.InvokeInstance.map((r) => [r.InvocationStatus, r.ErrorCode]), [["Aborted", "ClientNotRunning"], ["Invalid", "InstanceNotRunning"]]);
    });
});

describe("emulator: ECS power and system disk", () => {
    const fx = useEmulator();

    it("StopInstance on a Stopped (or Stopping) instance is refused with IncorrectInstanceStatus", async () => {
        const inst = fx.emu.addInstance();
        await call("ecs", "StopInstance", { InstanceId: inst.instanceId });
        assert.strictEqual(inst.status, "Stopped");
        assert.strictEqual(await code(call("ecs", "StopInstance", { InstanceId: inst.instanceId })), "IncorrectInstanceStatus");
        fx.emu.state.transitionMs = 60_000; // still Stopping however long the next call takes
        const other = fx.emu.addInstance();
        await call("ecs", "StopInstance", { InstanceId: other.instanceId });
        assert.strictEqual(other.status, "Stopping");
        assert.strictEqual(await code(call("ecs", "StopInstance", { InstanceId: other.instanceId })), "IncorrectInstanceStatus");
    });

    it("ReplaceSystemDisk: PasswordInherit=true means the image's preset password, and the key pair is lost unless KeyPairName is passed", async () => {
        const inst = fx.emu.addInstance({ keyPairName: "ops-key" });
        const keyOf = async () => ((await call("ecs", "DescribeInstances", { InstanceIds: JSON.stringify([inst.instanceId]) })).Instances as { Instance: { KeyPairName: string }[] }).Instance[0].KeyPairName;
        assert.strictEqual(await keyOf(), "ops-key");
        fx.emu.stopInstance(inst.instanceId);
        await call("ecs", "ReplaceSystemDisk", { InstanceId: inst.instanceId, ImageId: "public-image", PasswordInherit: true });
        assert.deepStrictEqual([inst.keyPairName, inst.passwordSource], ["", "none"], "a public image has no preset password: no login at all");
        assert.strictEqual(await keyOf(), "");
        fx.emu.state.presetPasswordImages.add("custom-image");
        await call("ecs", "ReplaceSystemDisk", { InstanceId: inst.instanceId, ImageId: "custom-image", PasswordInherit: true });
        assert.deepStrictEqual([inst.keyPairName, inst.passwordSource], ["", "image"]);
        await call("ecs", "ReplaceSystemDisk", { InstanceId: inst.instanceId, ImageId: "public-image", KeyPairName: "ops-key" });
        assert.deepStrictEqual([inst.keyPairName, inst.passwordSource], ["ops-key", "instance"]);
        await call("ecs", "ReplaceSystemDisk", { InstanceId: inst.instanceId, ImageId: "public-image", Password: "Secret#2026x" });
        assert.deepStrictEqual([inst.keyPairName, inst.passwordSource], ["", "request"]);
        assert.strictEqual(await code(call("ecs", "ReplaceSystemDisk", { InstanceId: inst.instanceId, ImageId: "public-image", Password: "Secret#2026x", PasswordInherit: true })), "InvalidParameter.Conflict");
    });
});
