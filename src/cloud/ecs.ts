/**
 * ECS, typed: instances, user data, power and system disk. Every response is read here, once; callers get
 * plain typed values. Sources: docs/upstream.md#alibaba-cloud-ecs.
 */
import { callApi, type RetryOptions } from "./openapi";
import { type Clock, waitFor } from "./wait";

/** What callers need to know about an instance. */
export interface Instance {
    instanceId: string;
    /** `Pending`, `Starting`, `Running`, `Stopping`, `Stopped`. */
    status: string;
    /** First private IPv4 address ("" when none). */
    privateIp: string;
    /** ISO 8601. */
    creationTime: string;
    /** An operation (e.g. a system disk replacement) still locks the instance. */
    locked: boolean;
    /** Key pair bound to the instance ("" when it logs in by password). */
    keyPairName: string;
    /** Its instance type (`ecs.g7.large`); a ModifyInstanceSpec shows here once ECS applied it. */
    instanceType: string;
    tags: Record<string, string>;
}

interface RawInstance {
    InstanceId: string;
    Status?: string;
    CreationTime?: string;
    KeyPairName?: string;
    InstanceType?: string;
    VpcAttributes?: { PrivateIpAddress?: { IpAddress?: string[] } };
    OperationLocks?: { LockReason?: unknown[] };
    Tags?: { Tag?: Array<{ TagKey?: string; TagValue?: string }> };
}

function toInstance(i: RawInstance): Instance {
    return {
        instanceId: i.InstanceId, status: i.Status ?? "", creationTime: i.CreationTime ?? "", keyPairName: i.KeyPairName ?? "", instanceType: i.InstanceType ?? "",
        privateIp: i.VpcAttributes?.PrivateIpAddress?.IpAddress?.[0] ?? "",
        locked: (i.OperationLocks?.LockReason ?? []).length > 0,
        tags: Object.fromEntries((i.Tags?.Tag ?? []).map((t) => [t.TagKey ?? "", t.TagValue ?? ""])),
    };
}

/** DescribeInstances takes at most 100 ids per call. */
const IDS_PER_CALL = 100;

/** The instances among `ids` that exist, keyed by id (100 per call). */
export async function describeInstances(region: string, ids: readonly string[], retry?: RetryOptions): Promise<Map<string, Instance>> {
    const out = new Map<string, Instance>();
    const unique = [...new Set(ids)];
    for (let k = 0; k < unique.length; k += IDS_PER_CALL) {
        const res = await callApi("ecs", "DescribeInstances", { InstanceIds: JSON.stringify(unique.slice(k, k + IDS_PER_CALL)), PageSize: IDS_PER_CALL }, { region, retry });
        for (const raw of (res.Instances as { Instance?: RawInstance[] } | undefined)?.Instance ?? []) {
            out.set(raw.InstanceId, toInstance(raw));
        }
    }
    return out;
}

/** One instance, or undefined when it does not exist. */
export async function describeInstance(region: string, instanceId: string): Promise<Instance | undefined> {
    return (await describeInstances(region, [instanceId])).get(instanceId);
}

/** The instance's user data, decoded ("" when none). */
export async function getUserData(region: string, instanceId: string): Promise<string> {
    const res = await callApi("ecs", "DescribeUserData", { InstanceId: instanceId }, { region });
    return Buffer.from(String(res.UserData ?? ""), "base64").toString("utf8");
}

/** Replaces the instance's user data (runs only at first boot or after a system disk replacement). */
export async function setUserData(region: string, instanceId: string, userData: string): Promise<void> {
    await callApi("ecs", "ModifyInstanceAttribute", { InstanceId: instanceId, UserData: Buffer.from(userData, "utf8").toString("base64") }, { region });
}

/**
 * Brings one instance to `Stopped` (StopInstance in the pay-as-you-go standard stop, `KeepCharging`: the
 * instance keeps its resources) and waits (bounded) until it is, with no operation locking it: one
 * `Pending` or `Starting` is waited out until it runs, one `Running` is stopped (standard stop), one
 * `Stopping` is waited for, one `Stopped` is left alone. A StopInstance refused with
 * `IncorrectInstanceStatus` (a retry after a lost answer: the first call stopped it) is read again, not
 * retried. docs/upstream.md#ecs-stop-start.
 * @returns `"stopped"`, or `"gone"` when the instance does not exist (released meanwhile)
 * @throws when StopInstance is refused, or the instance is not Stopped after `timeoutMs` (default 300 s)
 */
export async function stopInstanceAndWait(region: string, instanceId: string,
    opts: { pollMs?: number; timeoutMs?: number; log?: (message: string) => void; clock?: Clock } = {}): Promise<"stopped" | "gone"> {
    const timeoutMs = opts.timeoutMs ?? 300_000;
    return waitFor<"stopped" | "gone">(async () => {
        const inst = await describeInstance(region, instanceId);
        if (!inst) return { done: true, value: "gone" };
        if (inst.status === "Stopped" && !inst.locked) return { done: true, value: "stopped" };
        if (inst.status === "Running" && !inst.locked) {
            try {
                await callApi("ecs", "StopInstance", { InstanceId: instanceId, StoppedMode: "KeepCharging" }, { region });
            } catch (err) {
                const code = (err as { code?: string }).code ?? "";
                if (/NotFound/.test(code)) return { done: true, value: "gone" };
                if (code !== "IncorrectInstanceStatus") throw err;
            }
        }
        return { done: false, state: `now ${inst.status}${inst.locked ? ", operation in progress" : ""}` };
    }, { timeoutMs, firstDelayMs: opts.pollMs ?? 1000, maxDelayMs: 10_000, log: opts.log && ((state) => opts.log!(`${instanceId}: waiting for Stopped (${state})`)), clock: opts.clock },
    (state) => new Error(`${instanceId} did not become Stopped within ${Math.round(timeoutMs / 1000)} s (${state}); look at the instance in the ECS console, then run again`));
}

/**
 * Waits (bounded) until the instance is `status` with no operation locking it.
 * @throws when it does not exist, or is not there after `timeoutMs`
 */
export async function waitForInstanceStatus(region: string, instanceId: string, status: string,
    opts: { pollMs?: number; timeoutMs: number; log?: (message: string) => void; fix: string }): Promise<void> {
    await waitFor(async () => {
        const inst = await describeInstance(region, instanceId);
        if (!inst) throw new Error(`ECS instance ${instanceId} does not exist in ${region}; ${opts.fix}`);
        return inst.status === status && !inst.locked ? { done: true, value: undefined }
            : { done: false, state: `now ${inst.status}${inst.locked ? ", operation in progress" : ""}` };
    }, { timeoutMs: opts.timeoutMs, firstDelayMs: opts.pollMs ?? 1000, maxDelayMs: opts.pollMs ?? 10_000, factor: 1, log: opts.log && ((state) => opts.log!(`${instanceId}: waiting for ${status} (${state})`)) },
    (state) => new Error(`${instanceId} did not become ${status} within ${Math.round(opts.timeoutMs / 1000)} s (${state}); look at the instance in the ECS console, then run \`pulumi up\` again`));
}

export async function startInstance(region: string, instanceId: string): Promise<void> {
    await callApi("ecs", "StartInstance", { InstanceId: instanceId }, { region, retry: { retryableCodes: ["IncorrectInstanceStatus"] } });
}

/**
 * Waits (bounded) until the instance satisfies `done` with no operation locking it, e.g. `Running` after StartInstance or
 * a new instance type after ModifyInstanceSpec (both asynchronous, docs/upstream.md#ecs-stop-start, #ecs-modify-spec).
 * @param what what is waited for, for the progress line and the error
 * @throws when the instance does not exist, or the time runs out (naming its status)
 */
export async function waitForInstance(region: string, instanceId: string, what: string, done: (i: Instance) => boolean,
    opts: { pollMs?: number; timeoutMs?: number; log?: (message: string) => void; clock?: Clock } = {}): Promise<Instance> {
    const timeoutMs = opts.timeoutMs ?? 600_000;
    return waitFor<Instance>(async () => {
        const inst = await describeInstance(region, instanceId);
        if (!inst) throw new Error(`${instanceId} does not exist any more (released?)`);
        if (done(inst) && !inst.locked) return { done: true, value: inst };
        return { done: false, state: `status ${inst.status}, type ${inst.instanceType}${inst.locked ? ", operation locked" : ""}` };
    }, { timeoutMs, firstDelayMs: opts.pollMs ?? 1000, maxDelayMs: 10_000, log: opts.log && ((state) => opts.log!(`${instanceId}: waiting for ${what} (now ${state})`)), logEveryMs: 0, clock: opts.clock },
    (state) => new Error(`${instanceId}: not ${what} within ${Math.round(timeoutMs / 1000)} s (${state}); look at the instance in the ECS console, then run again`));
}

/**
 * Changes a (Stopped, pay-as-you-go) instance's type: ModifyInstanceSpec with `InstanceType`, which ECS accepts only while the
 * instance is Stopped and applies at its next start (docs/upstream.md#ecs-modify-spec). One with a ClientToken, so a retry
 * after a lost answer does not act twice.
 */
export async function modifyInstanceType(region: string, instanceId: string, instanceType: string): Promise<void> {
    await callApi("ecs", "ModifyInstanceSpec", { InstanceId: instanceId, InstanceType: instanceType }, { region });
}

/**
 * Replaces the (Stopped) instance's system disk with `imageId`, logging in with key pair `keyPairName` (the
 * instance's own: `PasswordInherit` would mean the image's preset password, docs/upstream.md#pitfall-passwordinherit);
 * user data runs again at the next start.
 */
export async function replaceSystemDisk(region: string, instanceId: string, imageId: string, login: { keyPairName: string }): Promise<void> {
    await callApi("ecs", "ReplaceSystemDisk", { InstanceId: instanceId, ImageId: imageId, KeyPairName: login.keyPairName }, { region });
}

/** An image build (ECS Image Builder, `StartImagePipelineExecution`) as DescribeImagePipelineExecutions reports it. */
export interface ImageBuild {
    executionId: string;
    /** `PREPARING`, `BUILDING`, `DISTRIBUTING`, `RELEASING`, `SUCCESS`, `FAILED`, `CANCELLING`, `CANCELLED`. */
    status: string;
    /** The image built ("" until it exists). */
    imageId: string;
    /** Why it failed ("" otherwise). */
    message: string;
}

/** One image build by execution id, or undefined when ECS does not know it. */
export async function describeImageBuild(region: string, executionId: string): Promise<ImageBuild | undefined> {
    const res = await callApi("ecs", "DescribeImagePipelineExecutions", { ExecutionId: executionId }, { region });
    type Raw = { ExecutionId?: string; Status?: string; ImageId?: string; Message?: string; ErrorInfo?: string };
    const raw = ((res.ImagePipelineExecution as { ImagePipelineExecutionSet?: Raw[] } | undefined)?.ImagePipelineExecutionSet ?? [])
        .find((e) => e.ExecutionId === executionId);
    return raw && { executionId, status: raw.Status ?? "", imageId: raw.ImageId ?? "", message: raw.ErrorInfo || raw.Message || "" };
}

/** A custom image: id, name and status (`Available`, `Creating`, …). */
export interface ImageInfo {
    imageId: string;
    imageName: string;
    status: string;
    tags: Record<string, string>;
}

/** This account's custom images whose name starts with `namePrefix` (ECS matches ImageName as a prefix with a trailing `*`). */
export async function describeOwnImages(region: string, namePrefix: string): Promise<ImageInfo[]> {
    const res = await callApi("ecs", "DescribeImages", { ImageOwnerAlias: "self", ImageName: `${namePrefix}*`, PageSize: 100 }, { region });
    type Raw = { ImageId: string; ImageName?: string; Status?: string; Tags?: { Tag?: Array<{ TagKey?: string; TagValue?: string }> } };
    return ((res.Images as { Image?: Raw[] } | undefined)?.Image ?? [])
        .filter((i) => (i.ImageName ?? "").startsWith(namePrefix))
        .map((i) => ({ imageId: i.ImageId, imageName: i.ImageName ?? "", status: i.Status ?? "",
            tags: Object.fromEntries((i.Tags?.Tag ?? []).map((t) => [t.TagKey ?? "", t.TagValue ?? ""])) }));
}

/**
 * Deletes a custom image. `Force`: instances created from it keep running (only a re-initialisation of their
 * system disk from the image becomes impossible); without it ECS refuses while any instance uses the image.
 * @returns "already gone" when the image did not exist
 */
export async function deleteImage(region: string, imageId: string, force: boolean): Promise<"deleted" | "already gone"> {
    try {
        await callApi("ecs", "DeleteImage", { ImageId: imageId, Force: force }, { region });
        return "deleted";
    } catch (err) {
        if ((err as { code?: string }).code === "InvalidImageId.NotFound") return "already gone";
        throw err;
    }
}

/** Where a master is and what its system disk is: the attributes whose change replaces an instance. */
export interface MasterPlacement { instanceId: string; zone: string; systemDiskCategory: string }

/**
 * The instance named `name` (ECS names are not unique: the newest one), its zone and its system disk's category;
 * undefined when there is none.
 */
export async function placementByName(region: string, name: string): Promise<MasterPlacement | undefined> {
    const res = await callApi("ecs", "DescribeInstances", { InstanceName: name, PageSize: 100 }, { region });
    const rows = ((res.Instances as { Instance?: Array<RawInstance & { ZoneId?: string; InstanceName?: string }> } | undefined)?.Instance ?? [])
        .filter((i) => i.InstanceName === name).sort((a, b) => (b.CreationTime ?? "").localeCompare(a.CreationTime ?? ""));
    const inst = rows[0];
    if (!inst) return undefined;
    const disks = await callApi("ecs", "DescribeDisks", { InstanceId: inst.InstanceId, DiskType: "system" }, { region });
    const disk = ((disks.Disks as { Disk?: Array<{ Category?: string }> } | undefined)?.Disk ?? [])[0];
    return { instanceId: inst.InstanceId, zone: inst.ZoneId ?? "", systemDiskCategory: disk?.Category ?? "" };
}
