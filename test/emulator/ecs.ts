/** ECS 2014-05-26 actions of the emulator: instances, user data, power, system disk, Cloud Assistant. */
import { ApiError, CommandHandler, EmuInstance, InstanceStatus, EmuInvocation, EmuInvocationRecord, EmulatorState, intParam, isoTime, listParam, page, required, tokenPage } from "./state";

type Handler = (st: EmulatorState, p: Record<string, string>) => Record<string, unknown> | Promise<Record<string, unknown>>;

const MAX_CONTENT_B64 = 24 * 1024;
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
        OperationLocks: { LockReason: [] },
        Tags: { Tag: Object.entries(i.tags).map(([TagKey, TagValue]) => ({ TagKey, TagValue })) },
    };
}

/** Resolve an invocation record's current view. */
function recordView(inv: EmuInvocation, r: EmuInvocationRecord, plainText: boolean, now: number): Record<string, unknown> {
    let status: string, exitCode: number | undefined, output = "", errorCode = "", errorInfo = "", finished: number | undefined;
    const deadline = r.startedAt + inv.timeoutSeconds * 1000;
    if (r.fixed) {
        ({ status, errorCode, errorInfo } = r.fixed);
        finished = r.startedAt;
    } else if (r.doneAt !== undefined && r.doneAt <= deadline && now >= r.doneAt) {
        exitCode = r.reply?.exitCode ?? 0;
        output = r.reply?.output ?? "";
        status = exitCode === 0 ? "Success" : "Failed";
        if (exitCode !== 0) { errorCode = "ExitCodeNonzero"; errorInfo = `the command exited with code ${exitCode}`; }
        finished = r.doneAt;
    } else if (now >= deadline) {
        status = "Timeout";
        errorCode = "ExecutionTimeout";
        errorInfo = "the command execution has timed out";
        output = r.reply?.output ?? "";
        finished = deadline;
    } else {
        status = "Running";
    }
    const bytes = Buffer.from(output, "utf8");
    const kept = bytes.subarray(0, MAX_OUTPUT);
    const terminal = finished !== undefined;
    return {
        InstanceId: r.instanceId, InvokeId: inv.invokeId, CommandId: inv.commandId, InvocationStatus: status,
        InvokeRecordStatus: terminal ? (status === "Success" ? "Finished" : "Failed") : "Running",
        ...(exitCode !== undefined ? { ExitCode: exitCode } : {}),
        ErrorCode: errorCode, ErrorInfo: errorInfo,
        Output: plainText ? kept.toString("utf8") : kept.toString("base64"),
        Dropped: bytes.length - kept.length, Repeats: 1, Username: "root",
        StartTime: isoTime(r.startedAt), FinishedTime: terminal ? isoTime(finished) : "",
    };
}

function findHandler(st: EmulatorState, script: string): CommandHandler {
    for (let k = st.handlers.length - 1; k >= 0; k--) {
        if (st.handlers[k].pattern.test(script)) return st.handlers[k].handler;
    }
    return { exitCode: 127, output: "emulator: no command handler matches this script\n" };
}

const runCommand: Handler = (st, p) => {
    const type = required(p, "Type");
    if (!["RunShellScript", "RunBatScript", "RunPowerShellScript"].includes(type)) throw new ApiError(400, "InvalidCommandType.NotFound", `The specified command type ${type} does not exist.`);
    const content = required(p, "CommandContent");
    const base64 = (p.ContentEncoding ?? "PlainText").toLowerCase() === "base64";
    const b64Len = base64 ? content.length : Buffer.from(content, "utf8").toString("base64").length;
    if (b64Len > MAX_CONTENT_B64) throw new ApiError(403, "CmdContent.ExceedLimit", "The length of the command content exceeds the upper limit (24 KB after Base64 encoding).");
    const ids = listParam(p, "InstanceId");
    if (ids.length === 0) throw new ApiError(400, "MissingInstanceId", 'The input parameter "InstanceId" that is mandatory for processing this request is not supplied.');
    if (ids.length > 100) throw new ApiError(403, "InstanceIds.ExceedLimit", "The number of instances exceeds the upper limit (100).");
    for (const id of ids) {
        const i = st.instances.get(id);
        if (!i) throw new ApiError(404, "InvalidInstance.NotFound", `The specified instance does not exist: ${id}.`);
        if (i.status !== "Running" && st.syncNotMatchForStoppedInstances) {
            throw new ApiError(400, "InvalidInstance.NotMatch", `The specified instance type does not match the command. Check whether the state of the instance meets the conditions (${id} is ${i.status}).`);
        }
    }
    const timeoutSeconds = intParam(p, "Timeout", 60, 1, 86400);
    const script = base64 ? Buffer.from(content, "base64").toString("utf8") : content;
    const now = Date.now();
    const inv: EmuInvocation = { invokeId: st.nextId("t-emu"), commandId: st.nextId("c-emu"), script, timeoutSeconds, createdAt: now, records: [] };
    for (const id of ids) {
        const i = st.instances.get(id) as EmuInstance;
        const rec: EmuInvocationRecord = { instanceId: id, startedAt: now };
        if (i.status !== "Running") {
            rec.fixed = { status: "Invalid", errorCode: "InstanceNotRunning", errorInfo: "the instance is not running when create task" };
        } else if (!i.agentOnline) {
            rec.fixed = i.agentFailure === "ClientNotResponse"
                ? { status: "Aborted", errorCode: "ClientNotResponse", errorInfo: "the aliyun service is not responding on the instance" }
                : { status: "Aborted", errorCode: "ClientNotRunning", errorInfo: "the aliyun service is not running on the instance" };
        } else {
            const h = findHandler(st, script);
            Promise.resolve(typeof h === "function" ? h({ instanceId: id, script, invokeId: inv.invokeId, instance: i }) : h)
                .then((reply) => { rec.reply = reply; rec.doneAt = Math.max(Date.now(), now + (reply.delayMs ?? 0)); },
                    (e: unknown) => { rec.reply = { exitCode: 1, output: `emulator handler threw: ${String(e)}\n` }; rec.doneAt = Date.now(); });
        }
        inv.records.push(rec);
    }
    st.invocations.set(inv.invokeId, inv);
    return { CommandId: inv.commandId, InvokeId: inv.invokeId };
};

const describeInvocationResults: Handler = (st, p) => {
    const plain = (p.ContentEncoding ?? "Base64").toLowerCase() === "plaintext";
    const now = Date.now();
    let rows: Record<string, unknown>[] = [];
    const invs = p.InvokeId ? [st.invocations.get(p.InvokeId)].filter((x): x is EmuInvocation => !!x) : [...st.invocations.values()];
    for (const inv of invs) for (const r of inv.records) if (!p.InstanceId || p.InstanceId === r.instanceId) rows.push(recordView(inv, r, plain, now));
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
    if (p.Status) list = list.filter((i) => i.status === p.Status);
    if (p.InstanceName) list = list.filter((i) => i.instanceName === p.InstanceName);
    const pg = page(list, p, 100, 10);
    return { TotalCount: pg.TotalCount, PageNumber: pg.PageNumber, PageSize: pg.PageSize, Instances: { Instance: pg.items.map(instanceView) } };
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
            InstanceId: i.instanceId, CloudAssistantStatus: String(i.agentOnline && i.status === "Running"), CloudAssistantVersion: "2.2.3.857",
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

const stopInstance: Handler = (st, p) => {
    const i = instanceOr404(st, required(p, "InstanceId"));
    if (i.status === "Stopped") return {};
    if (i.status !== "Running") throw incorrectStatus(i, "Running");
    transition(st, i, "Stopping", "Stopped", () => undefined);
    return {};
};

/** Move through an intermediate status when `st.transitionMs` > 0, then run `done`. */
function transition(st: EmulatorState, i: EmuInstance, via: InstanceStatus, to: InstanceStatus, done: () => void): void {
    if (st.transitionMs <= 0) { i.status = to; done(); return; }
    i.status = via;
    setTimeout(() => { if (i.status === via) { i.status = to; done(); } }, st.transitionMs).unref();
}

const startInstance: Handler = (st, p) => {
    const i = instanceOr404(st, required(p, "InstanceId"));
    if (i.status !== "Stopped") throw incorrectStatus(i, "Stopped");
    transition(st, i, "Starting", "Running", () => {
        if (!i.pendingUserDataRun) return;
        i.pendingUserDataRun = false;
        i.userDataRuns += 1;
        st.onUserDataRun?.(i);
    });
    return {};
};

const replaceSystemDisk: Handler = (st, p) => {
    const i = instanceOr404(st, required(p, "InstanceId"));
    const imageId = required(p, "ImageId");
    if (i.status !== "Stopped") throw incorrectStatus(i, "Stopped");
    i.imageId = imageId;
    i.systemDiskId = st.nextId("d-emu");
    i.pendingUserDataRun = true;
    return { DiskId: i.systemDiskId };
};

const deleteInstance: Handler = (st, p) => {
    const i = instanceOr404(st, required(p, "InstanceId"));
    if (i.status === "Running" && p.Force !== "true") throw incorrectStatus(i, "Stopped (or Force=true)");
    st.instances.delete(i.instanceId);
    for (const [id, si] of st.scalingInstances) if (si.instanceId === i.instanceId) st.scalingInstances.delete(id);
    return {};
};

/** ECS action table. */
export const ECS_ACTIONS: Record<string, Handler> = {
    RunCommand: runCommand,
    DescribeInvocationResults: describeInvocationResults,
    DescribeInstances: describeInstances,
    DescribeInstanceStatus: describeInstanceStatus,
    DescribeCloudAssistantStatus: describeCloudAssistantStatus,
    ModifyInstanceAttribute: modifyInstanceAttribute,
    DescribeUserData: describeUserData,
    StopInstance: stopInstance,
    StartInstance: startInstance,
    ReplaceSystemDisk: replaceSystemDisk,
    DeleteInstance: deleteInstance,
};
