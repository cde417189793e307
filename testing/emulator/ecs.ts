/** ECS 2014-05-26 actions of the emulator: instances, user data, power, system disk, Cloud Assistant. */
import * as zlib from "zlib";
import { ApiError, CommandHandler, EmuCommand, EmuInstance, InstanceStatus, EmuInvocation, EmuInvocationRecord, EmulatorState, intParam, isoMinute, isoTime, listParam, page, required, tokenPage } from "./state";

type Handler = (st: EmulatorState, p: Record<string, string>) => Record<string, unknown> | Promise<Record<string, unknown>>;

const MAX_CONTENT_B64 = 24 * 1024;
/**
 * Kept (saved) commands: the pinned @alicloud/ecs20140526 7.11.6 CreateCommandRequest says 24 KB after Base64,
 * an older published model (aliyun/alibabacloud-typescript-sdk b63a41de, ecs-20140526/src/models/CreateCommandRequest.ts)
 * says 18 KB for kept commands. The sources disagree: the harsher 18 KB is modelled.
 */
const MAX_SAVED_CONTENT_B64 = 18 * 1024;
const MAX_OUTPUT = 24 * 1024;
const MAX_USERDATA_RAW = 32 * 1024;

function instanceOr404(st: EmulatorState, id: string, code = "InvalidInstanceId.NotFound"): EmuInstance {
    const i = st.instances.get(id);
    if (!i) throw new ApiError(404, code, `The specified InstanceId does not exist: ${id}.`);
    return i;
}

function incorrectStatus(i: EmuInstance, need: string): ApiError {
    return new ApiError(403, "IncorrectInstanceStatus", `The current status of the resource does not support this operation (instance ${i.instanceId} is ${i.status}, needs ${need}).`);
}

function instanceView(i: EmuInstance): Record<string, unknown> {
    return {
        InstanceId: i.instanceId, InstanceName: i.instanceName, HostName: i.hostName, Status: i.status, RegionId: i.regionId,
        ZoneId: i.zoneId, InstanceType: i.instanceType, ImageId: i.imageId, CreationTime: i.creationTime, OSType: "linux",
        InstanceChargeType: "PostPaid", InstanceNetworkType: "vpc",
        VpcAttributes: { VpcId: i.vpcId, VSwitchId: i.vSwitchId, PrivateIpAddress: { IpAddress: [i.privateIp] }, NatIpAddress: "" },
        OperationLocks: { LockReason: [] }, KeyPairName: i.keyPairName, StartTime: i.startTime,
        Tags: { Tag: Object.entries(i.tags).map(([TagKey, TagValue]) => ({ TagKey, TagValue })) },
    };
}

// ---------------------------------------------------------------------------------------------
// Cloud Assistant. Sources (all public):
//  [REQ]  ecs20140526 models RunCommandRequest / CreateCommandRequest / InvokeCommandRequest /
//         DeleteCommandRequest / DescribeCommandsRequest / DescribeInvocationsRequest (+ ResponseBody),
//         npm @alicloud/ecs20140526 (src/models/*.ts, dist/models/*.d.ts) = aliyun/alibabacloud-typescript-sdk ecs-20140526.
//  [ERR]  error tables of https://api.alibabacloud.com/document/Ecs/2014-05-26/CreateCommand,
//         .../InvokeCommand, .../RunCommand and https://www.alibabacloud.com/help/en/ecs/api-deletecommand.
//  [RES]  aliyun/alibabacloud-csharp-sdk ecs-20140526/core/Models/DescribeInvocationResultsResponseBody.cs
//         (per-instance InvocationStatus and ErrorCode/ErrorInfo enums; help.aliyun.com/document_detail/452179 has the same).
// ---------------------------------------------------------------------------------------------

/** Per-instance terminal/failed statuses ([RES] InvocationStatus). */
const FAILED_STATUSES = ["Invalid", "Aborted", "Failed", "Error", "Timeout"];
const STOPPED_STATUSES = ["Cancelled", "Terminated", "Stopped"];

/** [REQ] CreateCommandRequest.commandContent: "The number of custom parameters cannot exceed 20", names ≤ 64 bytes, `[a-zA-Z0-9_-]`, case-insensitive. */
const MAX_DECLARED_PARAMETERS = 20;
/** [REQ] InvokeCommandRequest.parameters: "The number of custom parameters ranges from 0 to 10", keys ≤ 64 characters. */
const MAX_PASSED_PARAMETERS = 10;
const MAX_PARAMETER_NAME = 64;
/** [REQ] CreateCommandRequest.commandContent: the built-in environment parameters. */
const BUILT_IN_PARAMETERS = ["ACS::RegionId", "ACS::AccountId", "ACS::InstanceId", "ACS::InstanceName", "ACS::InvokeId", "ACS::CommandId"];
/** Account id the emulator reports for `{{ACS::AccountId}}`. */
const EMULATOR_ACCOUNT_ID = "1000000000000000";
const PLACEHOLDER = /\{\{\s*([^{}]*?)\s*\}\}/g;

/** Decode `CommandContent` (`CmdContent.DecodeError` [ERR CreateCommand] when it is not Base64). */
function decodeContent(content: string, base64: boolean): string {
    if (!base64) return content;
    if (content.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(content)) throw new ApiError(400, "CmdContent.DecodeError", "The CommandContent can not be base64 decoded.");
    return Buffer.from(content, "base64").toString("utf8");
}

/**
 * Custom parameter names in a command's content (EnableParameter=true), first spelling wins.
 * Built-ins `{{ACS::…}}` are not custom parameters; `{{oos:…}}` / `{{oos-secret:…}}` are Parameter
 * Store references the agent resolves (not modelled: left as they are).
 * Errors per [ERR CreateCommand]: `CmdParam.EmptyKey`, `CmdParam.InvalidParamName` (400),
 * `CmdParamName.ExceedLimit`, `CmdParamCount.ExceedLimit` (403).
 */
export function declaredParameters(content: string): string[] {
    const names: string[] = [];
    for (const m of content.matchAll(PLACEHOLDER)) {
        const name = m[1];
        if (/^oos(-secret)?\s*:/i.test(name)) continue;
        if (/^acs::/i.test(name)) {
            if (!BUILT_IN_PARAMETERS.some((b) => b.toLowerCase() === name.toLowerCase())) {
                throw new ApiError(400, "CmdParam.InvalidParamName", `Invalid parameter name ${name}: the acs:: prefix is reserved for the built-in environment parameters.`);
            }
            continue;
        }
        if (name === "") throw new ApiError(400, "CmdParam.EmptyKey", "You must specify the parameter names.");
        if (!/^[A-Za-z0-9_-]+$/.test(name)) throw new ApiError(400, "CmdParam.InvalidParamName", `Invalid parameter name ${name}. The name can contain only lowercase letters (a to z), uppercase letters (A to Z), numbers (0 to 9), hyphens (-), and underscores (_).`);
        if (Buffer.byteLength(name) > MAX_PARAMETER_NAME) throw new ApiError(403, "CmdParamName.ExceedLimit", "The maximum length of a parameter name is exceeded.");
        if (!names.some((n) => n.toLowerCase() === name.toLowerCase())) names.push(name);
    }
    if (names.length > MAX_DECLARED_PARAMETERS) throw new ApiError(403, "CmdParamCount.ExceedLimit", "The maximum number of custom parameters is exceeded.");
    return names;
}

/**
 * Validate `Parameters` (a JSON object string, as the SDK serialises it) against the declared names
 * ([REQ] InvokeCommandRequest.parameters; codes per [ERR InvokeCommand]):
 * - given while the command has EnableParameter=false → 404 `Parameter.Disabled`;
 * - more than 10 pairs → `ParameterCount.ExceedLimit`; a key over 64 characters → `ParameterKey.ExceedLimit`;
 *   the same name twice (names are case-insensitive) → `ParameterKey.Duplicate`;
 * - a value that is not a string → `ParameterType.NotSupported` (harsher choice: the doc does not say which types pass);
 * - an undeclared name, or a declared one left out → `Parameter.NotMatched`. The model says the passed
 *   names "must be a subset" and that left-out ones may be given as empty strings; the client.ts doc
 *   of InvokeCommand says that with EnableParameter=true "you must pass in custom parameters". The
 *   harsher reading is modelled: every declared parameter must be given.
 * - content + parameters over 24 KB after Base64 → `CmdContent.ExceedLimit`.
 * @returns The values keyed by lower-case name.
 */
export function checkParameters(declared: string[], enableParameter: boolean, raw: string | undefined, content: string): Record<string, string> {
    const given = raw === undefined || raw === "" ? undefined : parseParameters(raw);
    const b64 = (x: string) => Buffer.from(x, "utf8").toString("base64").length;
    if (b64(content) + (raw ? b64(raw) : 0) > MAX_CONTENT_B64) throw new ApiError(403, "CmdContent.ExceedLimit", "The maximum length of a command is exceeded (content and parameters over 24 KB after Base64).");
    if (!enableParameter) {
        if (given && Object.keys(given).length > 0) throw new ApiError(404, "Parameter.Disabled", "Parameters cannot be passed in when the command customization function is disabled.");
        return {};
    }
    const entries = Object.entries(given ?? {});
    if (entries.length > MAX_PASSED_PARAMETERS) throw new ApiError(403, "ParameterCount.ExceedLimit", "The maximum number of parameters is exceeded.");
    const values: Record<string, string> = {};
    for (const [k, v] of entries) {
        if (k.length > MAX_PARAMETER_NAME) throw new ApiError(403, "ParameterKey.ExceedLimit", "The maximum length of a parameter name is exceeded.");
        if (typeof v !== "string") throw new ApiError(403, "ParameterType.NotSupported", `The type of parameter value is not supported (${k}).`);
        if (values[k.toLowerCase()] !== undefined) throw new ApiError(403, "ParameterKey.Duplicate", "Parameter names cannot be duplicated.");
        values[k.toLowerCase()] = v;
    }
    const declaredLower = declared.map((n) => n.toLowerCase());
    const undeclared = Object.keys(values).filter((k) => !declaredLower.includes(k));
    const missing = declared.filter((n) => values[n.toLowerCase()] === undefined);
    if (undeclared.length || missing.length) {
        throw new ApiError(403, "Parameter.NotMatched", `The passed-in parameters do not match the parameters defined when you created the command (undeclared: ${undeclared.join(",") || "-"}; missing: ${missing.join(",") || "-"}).`);
    }
    return values;
}

function parseParameters(raw: string): Record<string, unknown> {
    let v: unknown;
    try { v = JSON.parse(raw); } catch { v = undefined; }
    // Code not documented; the SDK always sends a JSON object, so only a hand-made request gets here.
    if (typeof v !== "object" || v === null || Array.isArray(v)) throw new ApiError(400, "InvalidParameter.Parameters", "The specified parameter Parameters is not a JSON object.");
    return v as Record<string, unknown>;
}

/** Substitute custom values (keyed lower-case) and the built-ins ([REQ] CreateCommandRequest.commandContent). */
function substitute(content: string, values: Record<string, string>, builtIns: Record<string, string> | undefined): string {
    return content.replace(PLACEHOLDER, (whole, name: string) => {
        if (/^acs::/i.test(name)) return builtIns?.[name.toLowerCase()] ?? whole;
        const v = values[name.toLowerCase()];
        return v === undefined ? whole : v;
    });
}

/** What an invocation runs: shared by RunCommand and InvokeCommand. */
interface InvocationSpec {
    commandId: string;
    invokeId: string;
    content: string;
    enableParameter: boolean;
    values: Record<string, string>;
    parametersJson: string;
    timeoutSeconds: number;
    name: string;
    type: string;
    description: string;
    workingDir: string;
    username: string;
}

/** Check the target instances like RunCommand/InvokeCommand do ([ERR InvokeCommand]). */
function targetInstances(st: EmulatorState, p: Record<string, string>): string[] {
    const ids = listParam(p, "InstanceId");
    if (ids.length === 0) throw new ApiError(400, "MissingInstanceId", 'The input parameter "InstanceId" that is mandatory for processing this request is not supplied.');
    if (ids.length > st.maxInstancesPerInvocation) throw new ApiError(403, "InstanceIds.ExceedLimit", "The number of instance IDs exceeds the upper limit.");
    for (const id of ids) {
        const i = st.instances.get(id);
        if (!i) throw new ApiError(404, "InvalidInstance.NotFound", `The specified instance does not exist: ${id}.`);
        if (i.status !== "Running" && st.syncNotMatchForStoppedInstances) {
            throw new ApiError(400, "InvalidInstance.NotMatch", `The specified instance type does not match the command. Check whether the state of the instance meets the conditions (${id} is ${i.status}).`);
        }
    }
    return ids;
}

/**
 * Start an invocation on each instance: the per-instance execution machinery of RunCommand and
 * InvokeCommand. Handlers registered with `emu.onCommand` see the final script (custom parameters
 * and the per-instance built-ins substituted when EnableParameter=true).
 */
function startInvocation(st: EmulatorState, spec: InvocationSpec, ids: string[]): EmuInvocation {
    const now = st.now();
    const script = spec.enableParameter ? substitute(spec.content, spec.values, undefined) : spec.content;
    const inv: EmuInvocation = {
        invokeId: spec.invokeId, commandId: spec.commandId, script, timeoutSeconds: spec.timeoutSeconds, createdAt: now, records: [],
        content: spec.content, parameters: spec.parametersJson, commandName: spec.name, commandType: spec.type,
        commandDescription: spec.description, workingDir: spec.workingDir, username: spec.username,
    };
    for (const id of ids) {
        const i = st.instances.get(id) as EmuInstance;
        const perInstance = spec.enableParameter
            ? substitute(spec.content, spec.values, {
                "acs::regionid": i.regionId, "acs::accountid": EMULATOR_ACCOUNT_ID, "acs::instanceid": i.instanceId,
                "acs::instancename": i.instanceName, "acs::invokeid": inv.invokeId, "acs::commandid": inv.commandId,
            })
            : spec.content;
        const rec: EmuInvocationRecord = { instanceId: id, startedAt: now, script: perInstance };
        if (i.status !== "Running") {
            rec.fixed = { status: "Invalid", errorCode: "InstanceNotRunning", errorInfo: "the instance is not running when create task" };
        } else if (!i.agentOnline && i.agentFailure === "DeliveryTimeout") {
            // [RES]: DeliveryTimeout "the command delivery has been timeout"; Aborted = "The command failed to be
            // sent to the instance ... the command can be sent to the instance within 1 minute". Never delivered:
            // Pending until the delivery window closes, then Aborted. The handler never runs.
            rec.deliveryTimeoutAt = now + st.deliveryTimeoutMs;
        } else if (!i.agentOnline) {
            rec.fixed = i.agentFailure === "ClientNotResponse"
                ? { status: "Aborted", errorCode: "ClientNotResponse", errorInfo: "the aliyun service is not responding on the instance" }
                : { status: "Aborted", errorCode: "ClientNotRunning", errorInfo: "the aliyun service is not running on the instance" };
        } else {
            const h = findHandler(st, perInstance);
            const ctx = { instanceId: id, script: perInstance, invokeId: inv.invokeId, instance: i, commandId: inv.commandId, parameters: { ...spec.values } };
            Promise.resolve(typeof h === "function" ? h(ctx) : h)
                .then((reply) => { rec.reply = reply; rec.doneAt = Math.max(st.now(), now + (reply.delayMs ?? 0)); },
                    (e: unknown) => { rec.reply = { exitCode: 1, output: `emulator handler threw: ${String(e)}\n` }; rec.doneAt = st.now(); });
        }
        inv.records.push(rec);
    }
    st.invocations.set(inv.invokeId, inv);
    return inv;
}

/** Current state of one instance's part of an invocation. */
function recordState(inv: EmuInvocation, r: EmuInvocationRecord, now: number): { status: string; exitCode?: number; output: string; errorCode: string; errorInfo: string; finished?: number } {
    const deadline = r.startedAt + inv.timeoutSeconds * 1000;
    if (r.fixed) return { ...r.fixed, output: "", finished: r.startedAt };
    if (r.deliveryTimeoutAt !== undefined) {
        return now < r.deliveryTimeoutAt
            ? { status: "Pending", output: "", errorCode: "", errorInfo: "" }
            : { status: "Aborted", output: "", errorCode: "DeliveryTimeout", errorInfo: "the command delivery has been timeout", finished: r.deliveryTimeoutAt };
    }
    if (r.doneAt !== undefined && r.doneAt <= deadline && now >= r.doneAt) {
        const exitCode = r.reply?.exitCode ?? 0;
        return {
            status: exitCode === 0 ? "Success" : "Failed", exitCode, output: r.reply?.output ?? "", finished: r.doneAt,
            errorCode: exitCode === 0 ? "" : "ExitCodeNonzero", errorInfo: exitCode === 0 ? "" : `the command exited with code ${exitCode}`,
        };
    }
    if (now >= deadline) return { status: "Timeout", errorCode: "ExecutionTimeout", errorInfo: "the command execution has timed out", output: r.reply?.output ?? "", finished: deadline };
    return { status: "Running", output: "", errorCode: "", errorInfo: "" };
}

function encodeOutput(output: string, plainText: boolean): { text: string; dropped: number } {
    const bytes = Buffer.from(output, "utf8");
    const kept = bytes.subarray(0, MAX_OUTPUT);
    return { text: plainText ? kept.toString("utf8") : kept.toString("base64"), dropped: bytes.length - kept.length };
}

/** Resolve an invocation record's current view (DescribeInvocationResults). */
function recordView(inv: EmuInvocation, r: EmuInvocationRecord, plainText: boolean, now: number): Record<string, unknown> {
    const s = recordState(inv, r, now);
    const terminal = s.finished !== undefined;
    const out = encodeOutput(s.output, plainText);
    return {
        InstanceId: r.instanceId, InvokeId: inv.invokeId, CommandId: inv.commandId, InvocationStatus: s.status,
        InvokeRecordStatus: terminal ? (s.status === "Success" ? "Finished" : "Failed") : "Running",
        ...(s.exitCode !== undefined ? { ExitCode: s.exitCode } : {}),
        ErrorCode: s.errorCode, ErrorInfo: s.errorInfo,
        Output: out.text, Dropped: out.dropped, Repeats: 1, Username: inv.username || "root",
        StartTime: isoTime(r.startedAt), FinishedTime: terminal ? isoTime(s.finished) : "",
    };
}

/**
 * Overall status of an invocation from its per-instance statuses, per the rules of
 * [REQ] DescribeInvocationsRequest.invokeStatus (and help.aliyun.com/zh/pai/user-guide/api-eflo-controller-2022-12-15-describeinvocations,
 * the same Cloud Assistant semantics): any Pending → Pending; any Running → Running; all
 * Stopped/Success with one Success → Success; all failed or stopped → Failed; all stopped → Stopped;
 * a mix of success and failure → PartialFailed. `invokeStatus` is the legacy field.
 */
export function aggregateStatus(statuses: string[]): { invocationStatus: string; invokeStatus: string } {
    if (statuses.includes("Pending")) return { invocationStatus: "Pending", invokeStatus: "Running" };
    if (statuses.includes("Running")) return { invocationStatus: "Running", invokeStatus: "Running" };
    if (statuses.includes("Stopping")) return { invocationStatus: "Stopping", invokeStatus: "Stopping" };
    if (statuses.every((x) => STOPPED_STATUSES.includes(x))) return { invocationStatus: "Stopped", invokeStatus: "Stopped" };
    if (statuses.every((x) => x === "Success" || STOPPED_STATUSES.includes(x))) return { invocationStatus: "Success", invokeStatus: "Finished" };
    if (statuses.every((x) => FAILED_STATUSES.includes(x) || STOPPED_STATUSES.includes(x))) return { invocationStatus: "Failed", invokeStatus: "Failed" };
    return { invocationStatus: "PartialFailed", invokeStatus: "PartialFailed" };
}

function findHandler(st: EmulatorState, script: string): CommandHandler {
    // Not Alibaba behaviour: handlers stand in for the instance's shell, which runs a script packed by
    // src/shell/render.ts packShell (gzip + Base64 between AK_PACKED markers) unpacked; patterns see both texts.
    const packed = /<<'AK_PACKED'[^\n]*\n([\s\S]*?)\nAK_PACKED\n/.exec(script)?.[1];
    const text = packed === undefined ? script : `${script}\n${zlib.gunzipSync(Buffer.from(packed.replace(/\s+/g, ""), "base64")).toString("utf8")}`;
    for (let k = st.handlers.length - 1; k >= 0; k--) {
        if (st.handlers[k].pattern.test(text)) return st.handlers[k].handler;
    }
    return { exitCode: 127, output: "emulator: no command handler matches this script\n" };
}

const COMMAND_TYPES = ["RunShellScript", "RunBatScript", "RunPowerShellScript"];

function commandType(p: Record<string, string>): string {
    const type = required(p, "Type");
    // [ERR RunCommand]: 403 InvalidCmdType.NotFound.
    if (!COMMAND_TYPES.includes(type)) throw new ApiError(403, "InvalidCmdType.NotFound", `The specified command type ${type} does not exist.`);
    return type;
}

function checkTextLimits(p: Record<string, string>): void {
    // [REQ] Name ≤ 128, Description ≤ 512, WorkingDir ≤ 200, Launcher ≤ 1 KB; codes per [ERR CreateCommand].
    if ((p.Name ?? "").length > 128) throw new ApiError(403, "CmdName.ExceedLimit", "The length of the command name exceeds the upper limit.");
    if ((p.Description ?? "").length > 512) throw new ApiError(403, "CmdDesc.ExceedLimit", "The length of the command description exceeds the upper limit.");
    if ((p.WorkingDir ?? "").length > 200) throw new ApiError(400, "InvalidParameter.WorkingDir", "The specified parameter WorkingDir is not valid.");
    if (Buffer.byteLength(p.Launcher ?? "") > 1024) throw new ApiError(403, "InvalidLauncher.LengthLimitExceeded", "The length of the parameter Launcher exceeds the limit of 1 KB characters.");
    if ((p.Username ?? "").length > 255) throw new ApiError(403, "Username.ExceedLimit", "The length of the username exceeds the upper limit.");
}

function newCommand(st: EmulatorState, commandId: string, p: Record<string, string>, type: string, content: string, enableParameter: boolean, declared: string[], timeoutSeconds: number): EmuCommand {
    const cmd: EmuCommand = {
        commandId, name: p.Name ?? "", description: p.Description ?? "", type, content, enableParameter, parameterNames: declared,
        timeoutSeconds, workingDir: p.WorkingDir ?? "", launcher: p.Launcher ?? "", creationTime: isoTime(), invokeTimes: 0,
    };
    st.commands.set(commandId, cmd);
    return cmd;
}

/**
 * RunCommand ([REQ] RunCommandRequest): CommandContent PlainText by default ("an invalid value is treated
 * as PlainText"), ≤ 24 KB after Base64; 1–100 instances; EnableParameter + Parameters as for
 * InvokeCommand; KeepCommand=true keeps the command (DescribeCommands lists it), default false.
 */
const runCommand: Handler = (st, p) => {
    const type = commandType(p);
    const raw = required(p, "CommandContent");
    const base64 = (p.ContentEncoding ?? "PlainText").toLowerCase() === "base64";
    const b64Len = base64 ? raw.length : Buffer.from(raw, "utf8").toString("base64").length;
    if (b64Len > MAX_CONTENT_B64) throw new ApiError(403, "CmdContent.ExceedLimit", "The length of the command content exceeds the upper limit (24 KB after Base64 encoding).");
    const content = decodeContent(raw, base64);
    checkTextLimits(p);
    const ids = targetInstances(st, p);
    const timeoutSeconds = intParam(p, "Timeout", 60, 1, 86400);
    const enableParameter = p.EnableParameter === "true";
    const declared = enableParameter ? declaredParameters(content) : [];
    const values = checkParameters(declared, enableParameter, p.Parameters, content);
    const invokeId = st.nextId("t-emu");
    const commandId = st.nextId("c-emu");
    if (p.KeepCommand === "true") newCommand(st, commandId, p, type, content, enableParameter, declared, timeoutSeconds).invokeTimes = 1;
    startInvocation(st, {
        commandId, invokeId, content, enableParameter, values, parametersJson: p.Parameters ?? "", timeoutSeconds,
        name: p.Name ?? "", type, description: p.Description ?? "", workingDir: p.WorkingDir ?? "", username: p.Username ?? "",
    }, ids);
    return { CommandId: commandId, InvokeId: invokeId };
};

/**
 * CreateCommand ([REQ] CreateCommandRequest): Name (required, ≤ 128), Type, CommandContent (Base64 by
 * default; "If an invalid value is specified, it is treated as Base64"; ≤ 18 KB after Base64, see MAX_SAVED_CONTENT_B64),
 * Description ≤ 512, Timeout (default 60), WorkingDir ≤ 200, EnableParameter (default false: `{{…}}`
 * is then plain text), Launcher ≤ 1 KB. Returns CommandId.
 */
const createCommand: Handler = (st, p) => {
    required(p, "Name");
    const type = commandType(p);
    const raw = required(p, "CommandContent");
    const base64 = (p.ContentEncoding ?? "Base64").toLowerCase() !== "plaintext";
    const b64Len = base64 ? raw.length : Buffer.from(raw, "utf8").toString("base64").length;
    if (b64Len > MAX_SAVED_CONTENT_B64) throw new ApiError(403, "CmdContent.ExceedLimit", "The length of the command content exceeds the upper limit (18 KB after Base64 for a kept command).");
    const content = decodeContent(raw, base64);
    checkTextLimits(p);
    const timeoutSeconds = intParam(p, "Timeout", 60, 1, 86400);
    const enableParameter = p.EnableParameter === "true";
    const declared = enableParameter ? declaredParameters(content) : [];
    const cmd = newCommand(st, st.nextId("c-emu"), p, type, content, enableParameter, declared, timeoutSeconds);
    return { CommandId: cmd.commandId };
};

function commandOr404(st: EmulatorState, id: string): EmuCommand {
    const c = st.commands.get(id);
    if (!c) throw new ApiError(404, "InvalidCmdId.NotFound", `The specified command ID does not exist: ${id}.`);
    return c;
}

/**
 * InvokeCommand ([REQ] InvokeCommandRequest): CommandId (unknown → 404 `InvalidCmdId.NotFound`),
 * InstanceId.N (1–100), Parameters (see {@link checkParameters}), Timeout (≥ 10 s; overrides the
 * command's for this run only), WorkingDir, Username. Returns InvokeId.
 */
const invokeCommand: Handler = (st, p) => {
    const cmd = commandOr404(st, required(p, "CommandId"));
    checkTextLimits(p);
    const ids = targetInstances(st, p);
    // [REQ] InvokeCommandRequest.timeout: "The value must be at least 10 seconds". Code not documented.
    const timeoutSeconds = intParam(p, "Timeout", cmd.timeoutSeconds, 10, 86400);
    const values = checkParameters(cmd.parameterNames, cmd.enableParameter, p.Parameters, cmd.content);
    cmd.invokeTimes += 1;
    const inv = startInvocation(st, {
        commandId: cmd.commandId, invokeId: st.nextId("t-emu"), content: cmd.content, enableParameter: cmd.enableParameter, values,
        parametersJson: p.Parameters ?? "", timeoutSeconds, name: cmd.name, type: cmd.type, description: cmd.description,
        workingDir: p.WorkingDir ?? cmd.workingDir, username: p.Username ?? "",
    }, ids);
    return { InvokeId: inv.invokeId };
};

/**
 * DeleteCommand: "Commands that are being run cannot be deleted" → 403 `InvalidStatus.CmdIdInUse`;
 * unknown → 404 `InvalidCmdId.NotFound` (alibabacloud.com/help/en/ecs/api-deletecommand). The
 * invocation records (and their CommandContent) stay: DescribeInvocations keeps 30 days of history
 * ([REQ] client.ts describeInvocations) and no source says deleting the command purges it (harsher choice).
 */
const deleteCommand: Handler = (st, p) => {
    const cmd = commandOr404(st, required(p, "CommandId"));
    const now = st.now();
    const running = [...st.invocations.values()].some((inv) => inv.commandId === cmd.commandId && inv.records.some((r) => recordState(inv, r, now).finished === undefined));
    if (running) throw new ApiError(403, "InvalidStatus.CmdIdInUse", "The specified commandId is in use by some runing Invocation.");
    st.commands.delete(cmd.commandId);
    return {};
};

const wildcard = (pattern: string, value: string) => new RegExp(`^${pattern.split("*").map((x) => x.replace(/[.+?^${}()|[\]\\]/g, "\\$&")).join(".*")}$`).test(value);

/** DescribeCommands ([REQ] DescribeCommandsRequest/ResponseBody): CommandContent Base64 by default; NextToken/MaxResults (≤ 50, default 10). */
const describeCommands: Handler = (st, p) => {
    const plain = (p.ContentEncoding ?? "Base64").toLowerCase() === "plaintext";
    let list = [...st.commands.values()];
    if (p.CommandId) list = list.filter((c) => c.commandId === p.CommandId);
    if (p.Name) list = list.filter((c) => wildcard(p.Name, c.name));
    if (p.Type) list = list.filter((c) => c.type === p.Type);
    if (p.Description) list = list.filter((c) => wildcard(p.Description, c.description));
    const pg = tokenPage(list, p, "MaxResults", 50, 10);
    return {
        TotalCount: list.length, PageSize: pg.MaxResults, PageNumber: 1, NextToken: pg.NextToken,
        Commands: { Command: pg.items.map((c) => ({
            CommandId: c.commandId, Name: c.name, Description: c.description, Type: c.type,
            CommandContent: plain ? c.content : Buffer.from(c.content, "utf8").toString("base64"),
            WorkingDir: c.workingDir, Timeout: c.timeoutSeconds, EnableParameter: c.enableParameter,
            ParameterNames: { ParameterName: c.parameterNames }, CreationTime: c.creationTime, InvokeTimes: c.invokeTimes,
            Launcher: c.launcher, Provider: "", Category: "", Latest: true, Version: 1,
        })) },
    };
};

/**
 * DescribeInvocations ([REQ] DescribeInvocationsRequest/ResponseBody): per-invocation aggregate status,
 * the per-instance records, and — only this call — `CommandContent` (the content as submitted, with
 * its `{{name}}` placeholders) and the `Parameters` JSON as passed. Both are Base64 by default
 * (`ContentEncoding`). Output only with IncludeOutput=true. NextToken/MaxResults (≤ 50, default 10), newest first.
 */
const describeInvocations: Handler = (st, p) => {
    const plain = (p.ContentEncoding ?? "Base64").toLowerCase() === "plaintext";
    const includeOutput = p.IncludeOutput === "true";
    const now = st.now();
    const enc = (x: string) => (plain ? x : Buffer.from(x, "utf8").toString("base64"));
    let rows = [...st.invocations.values()].reverse().map((inv) => {
        const recs = inv.records.filter((r) => !p.InstanceId || r.instanceId === p.InstanceId);
        const states = recs.map((r) => ({ r, s: recordState(inv, r, now) }));
        const agg = aggregateStatus(inv.records.map((r) => recordState(inv, r, now).status));
        return { inv, agg, row: {
            InvokeId: inv.invokeId, CommandId: inv.commandId, CommandName: inv.commandName ?? "", CommandType: inv.commandType ?? "RunShellScript",
            CommandDescription: inv.commandDescription ?? "", CommandContent: enc(inv.content ?? inv.script), Parameters: inv.parameters ?? "",
            InvocationStatus: agg.invocationStatus, InvokeStatus: agg.invokeStatus, Timeout: inv.timeoutSeconds, WorkingDir: inv.workingDir ?? "",
            Username: inv.username || "root", RepeatMode: "Once", Frequency: "", Timed: false, CreationTime: isoTime(inv.createdAt),
            InvokeInstances: { InvokeInstance: states.map(({ r, s }) => {
                const out = encodeOutput(s.output, plain);
                const terminal = s.finished !== undefined;
                return {
                    InstanceId: r.instanceId, InvocationStatus: s.status,
                    InstanceInvokeStatus: terminal ? (s.status === "Success" ? "Finished" : "Failed") : "Running",
                    ...(s.exitCode !== undefined ? { ExitCode: s.exitCode } : {}), ErrorCode: s.errorCode, ErrorInfo: s.errorInfo,
                    ...(includeOutput ? { Output: out.text, Dropped: out.dropped } : {}), Repeats: 1, Timed: false,
                    CreationTime: isoTime(inv.createdAt), StartTime: isoTime(r.startedAt), FinishTime: terminal ? isoTime(s.finished) : "",
                    UpdateTime: isoTime(s.finished ?? now), StopTime: "",
                };
            }) },
        } };
    });
    if (p.InvokeId) rows = rows.filter((x) => x.inv.invokeId === p.InvokeId);
    if (p.InstanceId) rows = rows.filter((x) => x.inv.records.some((r) => r.instanceId === p.InstanceId));
    if (p.CommandId) rows = rows.filter((x) => x.inv.commandId === p.CommandId);
    if (p.CommandName && !p.InstanceId) rows = rows.filter((x) => x.inv.commandName === p.CommandName);
    if (p.CommandType) rows = rows.filter((x) => (x.inv.commandType ?? "RunShellScript") === p.CommandType);
    if (p.InvokeStatus) rows = rows.filter((x) => x.agg.invokeStatus === p.InvokeStatus || x.agg.invocationStatus === p.InvokeStatus);
    const pg = tokenPage(rows, p, "MaxResults", 50, 10);
    return { TotalCount: rows.length, PageSize: pg.MaxResults, PageNumber: 1, NextToken: pg.NextToken, Invocations: { Invocation: pg.items.map((x) => x.row) } };
};

/**
 * StopInvocation ([REQ] StopInvocationRequest: InvokeId, InstanceId.N optional — every instance when absent; no
 * ClientToken): the instances whose part has not finished end `Stopped` ([RES] InvocationStatus "Stopped: The
 * execution is stopped"); a handler already running has done what it did (the harsher case: a stop does not undo
 * a script halfway). Unknown invocation → 404 `InvalidInvokeId.NotFound` ([ERR]).
 */
const stopInvocation: Handler = (st, p) => {
    const inv = st.invocations.get(required(p, "InvokeId"));
    if (!inv) throw new ApiError(404, "InvalidInvokeId.NotFound", "The specified invoke ID does not exist.");
    const ids = listParam(p, "InstanceId");
    const now = st.now();
    for (const r of inv.records) {
        if ((ids.length > 0 && !ids.includes(r.instanceId)) || recordState(inv, r, now).finished !== undefined) continue;
        r.fixed = { status: "Stopped", errorCode: "", errorInfo: "the execution was stopped" };
        r.startedAt = Math.min(r.startedAt, now);
    }
    return {};
};

const describeInvocationResults: Handler = (st, p) => {
    const plain = (p.ContentEncoding ?? "Base64").toLowerCase() === "plaintext";
    const now = st.now();
    let rows: Record<string, unknown>[] = [];
    const invs = p.InvokeId ? [st.invocations.get(p.InvokeId)].filter((x): x is EmuInvocation => !!x) : [...st.invocations.values()];
    for (const inv of invs) {
        if (p.CommandId && inv.commandId !== p.CommandId) continue;
        for (const r of inv.records) if (!p.InstanceId || p.InstanceId === r.instanceId) rows.push(recordView(inv, r, plain, now));
    }
    if (p.InvokeRecordStatus) rows = rows.filter((r) => r.InvokeRecordStatus === p.InvokeRecordStatus);
    const pg = tokenPage(rows, p, "MaxResults", 50, 10, st.invocationResultsPageCap);
    return { Invocation: { PageSize: pg.MaxResults, TotalCount: rows.length, NextToken: pg.NextToken, InvocationResults: { InvocationResult: pg.items } } };
};

const describeInstances: Handler = (st, p) => {
    let list = [...st.instances.values()];
    if (p.InstanceIds) {
        let ids: unknown;
        try { ids = JSON.parse(p.InstanceIds); } catch { ids = undefined; }
        if (!Array.isArray(ids) || ids.length > 100) throw new ApiError(400, "InvalidInstanceIds.Malformed", "The specified parameter InstanceIds is not valid (a JSON array of up to 100 ids).");
        list = list.filter((i) => (ids as string[]).includes(i.instanceId));
    }
    if (p.VpcId) list = list.filter((i) => i.vpcId === p.VpcId);
    for (const i of list) readTransition(i);
    if (p.Status) list = list.filter((i) => i.status === p.Status);
    if (p.InstanceName) list = list.filter((i) => i.instanceName === p.InstanceName);
    const pg = page(list, p, 100, 10);
    return { TotalCount: pg.TotalCount, PageNumber: pg.PageNumber, PageSize: pg.PageSize, Instances: { Instance: pg.items.map(instanceView) } };
};

/**
 * DescribeDisks by `InstanceId` and `DiskType` (`system`, `data`, `all`): the instance's system disk with its `Category`
 * (https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-describedisks); the emulator keeps no
 * data disks.
 */
const describeDisks: Handler = (st, p) => {
    const list = [...st.instances.values()].filter((i) => !p.InstanceId || i.instanceId === p.InstanceId)
        .filter(() => !p.DiskType || p.DiskType === "system" || p.DiskType === "all")
        .map((i) => ({ DiskId: i.systemDiskId, InstanceId: i.instanceId, Type: "system", Category: i.systemDiskCategory ?? "cloud_essd", ZoneId: i.zoneId, Status: "In_use" }));
    const pg = page(list, p, 100, 10);
    return { TotalCount: pg.TotalCount, PageNumber: pg.PageNumber, PageSize: pg.PageSize, Disks: { Disk: pg.items } };
};

/**
 * Instance types the stacks use, with their public sizes (vCPU, GiB): g7/g6 are 1:4, c7 1:2
 * (https://www.alibabacloud.com/help/en/ecs/user-guide/overview-of-instance-families). The Cluster Autoscaler
 * reads them for its scale-from-zero template.
 */
export const INSTANCE_TYPES: Record<string, { cpu: number; memoryGiB: number; family: string }> = {
    "ecs.g7.large": { cpu: 2, memoryGiB: 8, family: "ecs.g7" }, "ecs.g7.xlarge": { cpu: 4, memoryGiB: 16, family: "ecs.g7" },
    "ecs.g7.2xlarge": { cpu: 8, memoryGiB: 32, family: "ecs.g7" }, "ecs.g6.2xlarge": { cpu: 8, memoryGiB: 32, family: "ecs.g6" },
    "ecs.c7.xlarge": { cpu: 4, memoryGiB: 8, family: "ecs.c7" }, "ecs.c7.2xlarge": { cpu: 8, memoryGiB: 16, family: "ecs.c7" },
    "ecs.c7.4xlarge": { cpu: 16, memoryGiB: 32, family: "ecs.c7" },
};

/** DescribeInstanceTypes: every type above, or those named by `InstanceTypes.N`. */
const describeInstanceTypes: Handler = (_st, p) => {
    const wanted = listParam(p, "InstanceTypes");
    const ids = Object.keys(INSTANCE_TYPES).filter((id) => wanted.length === 0 || wanted.includes(id));
    return {
        InstanceTypes: { InstanceType: ids.map((id) => ({
            InstanceTypeId: id, CpuCoreCount: INSTANCE_TYPES[id].cpu, MemorySize: INSTANCE_TYPES[id].memoryGiB, GPUAmount: 0, GPUSpec: "",
            InstanceTypeFamily: INSTANCE_TYPES[id].family,
        })) },
    };
};

const describeInstanceStatus: Handler = (st, p) => {
    const ids = listParam(p, "InstanceId");
    const list = [...st.instances.values()].filter((i) => ids.length === 0 || ids.includes(i.instanceId));
    const pg = page(list, p, 50, 10);
    return { TotalCount: pg.TotalCount, PageNumber: pg.PageNumber, PageSize: pg.PageSize, InstanceStatuses: { InstanceStatus: pg.items.map((i) => ({ InstanceId: i.instanceId, Status: i.status })) } };
};

const describeCloudAssistantStatus: Handler = (st, p) => {
    const ids = listParam(p, "InstanceId");
    const list = [...st.instances.values()].filter((i) => ids.length === 0 || ids.includes(i.instanceId));
    const pg = page(list, p, 50, 10);
    return {
        TotalCount: pg.TotalCount, PageNumber: pg.PageNumber, PageSize: pg.PageSize,
        InstanceCloudAssistantStatusSet: { InstanceCloudAssistantStatus: pg.items.map((i) => ({
            // An agent in DeliveryTimeout still reports "true": a status check passes while commands are never
            // delivered (not sourced; the harsher case for a caller that checks the status first).
            InstanceId: i.instanceId, CloudAssistantStatus: String((i.agentOnline || i.agentFailure === "DeliveryTimeout") && i.status === "Running"), CloudAssistantVersion: "2.2.3.857",
            LastHeartbeatTime: isoTime(), ActiveTaskCount: 0, OSType: "Linux", SupportSessionManager: true,
        })) },
    };
};

const modifyInstanceAttribute: Handler = (st, p) => {
    const i = instanceOr404(st, required(p, "InstanceId"));
    if (p.UserData !== undefined) {
        if (Buffer.from(p.UserData, "base64").length > MAX_USERDATA_RAW) throw new ApiError(400, "InvalidUserData.SizeExceeded", "The specified parameter UserData exceeds the size limit (32 KB before Base64).");
        i.userData = p.UserData;
    }
    if (p.InstanceName !== undefined) i.instanceName = p.InstanceName;
    if (p.HostName !== undefined) i.hostName = p.HostName;
    return {};
};

const describeUserData: Handler = (st, p) => {
    const i = instanceOr404(st, required(p, "InstanceId"));
    return { RegionId: i.regionId, InstanceId: i.instanceId, UserData: i.userData };
};

/**
 * StopInstance "Stops an ECS instance in the Running state"
 * (alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-stopinstance). No source says what
 * a Stopped (or Stopping) instance gets; the harsher answer is modelled: 403 `IncorrectInstanceStatus`,
 * the code Terraform retries around StopInstance (resource_alicloud_instance.go). StopInstanceRequest has
 * no ClientToken, so a retried StopInstance after a lost response gets this error too.
 */
const stopInstance: Handler = (st, p) => {
    const i = instanceOr404(st, required(p, "InstanceId"));
    if (i.status !== "Running") throw incorrectStatus(i, "Running");
    st.onStopInstance?.(i);
    transition(st, i, "Stopping", "Stopped", () => undefined);
    return {};
};

/** Move through an intermediate status when `st.transitionReads` or `st.transitionMs` > 0, then run `done`. */
function transition(st: EmulatorState, i: EmuInstance, via: InstanceStatus, to: InstanceStatus, done: () => void): void {
    if (st.transitionReads > 0) { i.status = via; i.pendingTransition = { to, reads: st.transitionReads, done }; return; }
    if (st.transitionMs <= 0) { i.status = to; done(); return; }
    i.status = via;
    setTimeout(() => { if (i.status === via) { i.status = to; done(); } }, st.transitionMs).unref();
}

/** A read of an instance in a counted transition: the intermediate status while reads are left, then the final one. */
function readTransition(i: EmuInstance): void {
    const t = i.pendingTransition;
    if (!t) return;
    if (t.reads > 0) { t.reads -= 1; return; }
    i.pendingTransition = undefined;
    i.status = t.to;
    t.done();
}

const startInstance: Handler = (st, p) => {
    const i = instanceOr404(st, required(p, "InstanceId"));
    if (i.status !== "Stopped") throw incorrectStatus(i, "Stopped");
    transition(st, i, "Starting", "Running", () => {
        i.startTime = isoMinute();
        if (!i.pendingUserDataRun) return;
        i.pendingUserDataRun = false;
        i.userDataRuns += 1;
        st.onUserDataRun?.(i);
    });
    return {};
};

/**
 * ReplaceSystemDisk (ecs20140526 ReplaceSystemDiskRequest): the instance must be Stopped. The new disk's
 * login, recorded on the instance (`keyPairName`, `passwordSource`):
 * - `PasswordInherit=true` means "use the preset password of the image" ("Make sure that the image you use
 *   has a preset password"; "the Password parameter must be empty"). On an image without one (see
 *   `EmulatorState.presetPasswordImages`; public images have none) the call is accepted and the disk has
 *   no usable password (`none`): whether the API refuses it is not documented; the silent loss is modelled.
 * - `Password` sets it (`request`); neither keeps the old one (`instance`: "Default value: The password
 *   remains unchanged"). Password together with PasswordInherit=true → 400 `InvalidParameter.Conflict`
 *   (the doc forbids it; the code is not documented).
 * - The key pair is NOT kept unless `KeyPairName` is passed: Terraform's modifyInstanceImage reads
 *   KeyPairName before ReplaceSystemDisk and calls AttachKeyPair again after it
 *   (terraform-provider-alicloud alicloud/resource_alicloud_instance.go, "After updating image, it need
 *   to re-attach key pair").
 */
const replaceSystemDisk: Handler = (st, p) => {
    const i = instanceOr404(st, required(p, "InstanceId"));
    const imageId = required(p, "ImageId");
    if (i.status !== "Stopped") throw incorrectStatus(i, "Stopped");
    const inherit = p.PasswordInherit === "true";
    if (inherit && p.Password) throw new ApiError(400, "InvalidParameter.Conflict", "PasswordInherit cannot be used together with Password.");
    i.keyPairName = p.KeyPairName ?? "";
    i.passwordSource = p.Password ? "request" : inherit ? (st.presetPasswordImages.has(imageId) ? "image" : "none") : "instance";
    i.imageId = imageId;
    i.systemDiskId = st.nextId("d-emu");
    i.pendingUserDataRun = true;
    return { DiskId: i.systemDiskId };
};

/**
 * ModifyInstanceSpec with `InstanceType` (https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-modifyinstancespec):
 * "The instance status must be Stopped before you can modify the instance type. After the modification, you must start the
 * instance for the change to take effect"; one configuration per call (type or bandwidth). What a Running instance gets is
 * not documented: the harsher answer is modelled, 403 `IncorrectInstanceStatus` (the code of every other status refusal here).
 * A type ECS does not sell (not in {@link INSTANCE_TYPES}) → 400 `InvalidInstanceType.ValueNotSupported`: the code is not
 * documented for this action; the one of that family doctor explains for ECS instance creation (src/doctor/ess.ts) is modelled. Terraform's modifyInstanceType polls DescribeInstances
 * until the new type shows (terraform-provider-alicloud alicloud/resource_alicloud_instance.go): the change is asynchronous,
 * modelled as visible after `transitionMs`. Not modelled: "an instance that was successfully modified once cannot be modified
 * again within 5 minutes" (doc-detail/57633; no error code is documented) and a stock shortage of the new type.
 */
const modifyInstanceSpec: Handler = (st, p) => {
    const i = instanceOr404(st, required(p, "InstanceId"));
    const type = p.InstanceType;
    if (type !== undefined && p.InternetMaxBandwidthOut !== undefined) throw new ApiError(400, "InvalidParameter.Conflict", "The instance type and the public bandwidth cannot be changed together.");
    if (type === undefined) return {};
    if (!INSTANCE_TYPES[type]) throw new ApiError(400, "InvalidInstanceType.ValueNotSupported", `The specified InstanceType ${type} is not supported.`);
    if (i.status !== "Stopped") throw incorrectStatus(i, "Stopped");
    if (st.transitionMs <= 0) i.instanceType = type;
    else setTimeout(() => { i.instanceType = type; }, st.transitionMs).unref();
    return {};
};

const deleteInstance: Handler = (st, p) => {
    const i = instanceOr404(st, required(p, "InstanceId"));
    if (i.status === "Running" && p.Force !== "true") throw incorrectStatus(i, "Stopped (or Force=true)");
    st.instances.delete(i.instanceId);
    for (const [id, si] of st.scalingInstances) if (si.instanceId === i.instanceId) st.scalingInstances.delete(id);
    return {};
};

/** ECS action table. */
// ---------------------------------------------------------------------------------------------
// Custom images and Image Builder executions. Sources (all public):
//  [IMG] ecs20140526 models DescribeImagesRequest (`ImageName` "supports fuzzy search": a trailing `*` matches a
//        prefix; `ImageOwnerAlias` self), DeleteImageRequest (`Force`: "forcefully delete the custom image,
//        regardless of whether the image is currently being used by other instances"),
//        DescribeImagePipelineExecutionsRequest/ResponseBody (`ImagePipelineExecution.ImagePipelineExecutionSet[]`
//        with ExecutionId, Status, ImageId, ErrorInfo) — aliyun/alibabacloud-*-sdk ecs-20140526.
//  [ERR] `InvalidImageId.NotFound` (404, "The specified ImageId does not exist."): the ECS API error tables.
//  The code DeleteImage answers without `Force` for an image in use is not documented in the sources found; the
//  harsher behaviour (refused) is modelled with `IncorrectImageStatus`, a documented ECS image-status code.
// ---------------------------------------------------------------------------------------------

function describeImagePipelineExecutions(st: EmulatorState, p: Record<string, string>): Record<string, unknown> {
    const builds = [...st.imageBuilds.values()].filter((b) => !p.ExecutionId || b.executionId === p.ExecutionId);
    return {
        TotalCount: builds.length,
        ImagePipelineExecution: { ImagePipelineExecutionSet: builds.map((b) => ({ ExecutionId: b.executionId, Status: b.status, ImageId: b.imageId, ErrorInfo: b.errorInfo })) },
    };
}

function describeImages(st: EmulatorState, p: Record<string, string>): Record<string, unknown> {
    const name = p.ImageName ?? "";
    const matches = (n: string) => !name || (name.endsWith("*") ? n.startsWith(name.slice(0, -1)) : n === name);
    const images = p.ImageOwnerAlias && p.ImageOwnerAlias !== "self" ? [] : [...st.images.values()].filter((i) => matches(i.imageName));
    return { TotalCount: images.length, Images: { Image: images.map((i) => ({ ImageId: i.imageId, ImageName: i.imageName, Status: i.status, ImageOwnerAlias: "self" })) } };
}

function deleteImage(st: EmulatorState, p: Record<string, string>): Record<string, unknown> {
    const id = required(p, "ImageId");
    if (!st.images.has(id)) throw new ApiError(404, "InvalidImageId.NotFound", "The specified ImageId does not exist.");
    const users = [...st.instances.values()].filter((i) => i.imageId === id);
    if (users.length > 0 && p.Force !== "true") {
        throw new ApiError(400, "IncorrectImageStatus", `The image is used by ${users.map((i) => i.instanceId).join(", ")}; set Force to delete it.`);
    }
    st.images.delete(id);
    return {};
}

export const ECS_ACTIONS: Record<string, Handler> = {
    DescribeImagePipelineExecutions: describeImagePipelineExecutions,
    DescribeImages: describeImages,
    DeleteImage: deleteImage,
    RunCommand: runCommand,
    CreateCommand: createCommand,
    InvokeCommand: invokeCommand,
    DeleteCommand: deleteCommand,
    DescribeCommands: describeCommands,
    DescribeInvocations: describeInvocations,
    StopInvocation: stopInvocation,
    DescribeInvocationResults: describeInvocationResults,
    DescribeInstances: describeInstances,
    DescribeDisks: describeDisks,
    DescribeInstanceStatus: describeInstanceStatus,
    DescribeInstanceTypes: describeInstanceTypes,
    DescribeCloudAssistantStatus: describeCloudAssistantStatus,
    ModifyInstanceAttribute: modifyInstanceAttribute,
    DescribeUserData: describeUserData,
    StopInstance: stopInstance,
    StartInstance: startInstance,
    ModifyInstanceSpec: modifyInstanceSpec,
    ReplaceSystemDisk: replaceSystemDisk,
    DeleteInstance: deleteInstance,
};
