/**
 * ECS, typed: instances, user data, power and system disk. Every response is read here, once; callers get
 * plain typed values. Sources: docs/upstream.md#alibaba-cloud-ecs.
 */
import { callApi, type RetryOptions } from "./openapi";

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
    tags: Record<string, string>;
}

interface RawInstance {
    InstanceId: string;
    Status?: string;
    CreationTime?: string;
    KeyPairName?: string;
    VpcAttributes?: { PrivateIpAddress?: { IpAddress?: string[] } };
    OperationLocks?: { LockReason?: unknown[] };
    Tags?: { Tag?: Array<{ TagKey?: string; TagValue?: string }> };
}

function toInstance(i: RawInstance): Instance {
    return {
        instanceId: i.InstanceId, status: i.Status ?? "", creationTime: i.CreationTime ?? "", keyPairName: i.KeyPairName ?? "",
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

/** StopInstance with the pay-as-you-go standard stop (the instance keeps its resources and billing). */
export async function stopInstance(region: string, instanceId: string): Promise<void> {
    await callApi("ecs", "StopInstance", { InstanceId: instanceId, StoppedMode: "KeepCharging" }, { region, retry: { retryableCodes: ["IncorrectInstanceStatus"] } });
}

/**
 * Stops every instance of `ids` that runs (one starting is waited for first) and waits until each is Stopped
 * or gone. A released instance, or one stopped already, is fine.
 * @throws when one is not Stopped after `timeoutMs`
 */
export async function stopInstancesAndWait(region: string, ids: readonly string[], opts: { pollMs?: number; timeoutMs?: number } = {}): Promise<void> {
    const deadline = Date.now() + (opts.timeoutMs ?? 300_000);
    let pause = opts.pollMs ?? 1000;
    const stopping = new Set<string>();
    for (;;) {
        const left = [...(await describeInstances(region, ids)).values()].filter((i) => i.status !== "Stopped");
        if (left.length === 0) return;
        for (const i of left.filter((x) => x.status === "Running" && !stopping.has(x.instanceId))) {
            await stopInstance(region, i.instanceId);
            stopping.add(i.instanceId);
        }
        if (Date.now() + pause > deadline) throw new Error(`not Stopped in time: ${left.map((i) => `${i.instanceId} (${i.status})`).join(", ")}`);
        await new Promise((resolve) => setTimeout(resolve, pause));
        pause = Math.min(10_000, pause * 1.5);
    }
}

export async function startInstance(region: string, instanceId: string): Promise<void> {
    await callApi("ecs", "StartInstance", { InstanceId: instanceId }, { region, retry: { retryableCodes: ["IncorrectInstanceStatus"] } });
}

/**
 * Replaces the (Stopped) instance's system disk with `imageId`, logging in with key pair `keyPairName` (the
 * instance's own: `PasswordInherit` would mean the image's preset password, docs/upstream.md#pitfall-passwordinherit);
 * user data runs again at the next start.
 */
export async function replaceSystemDisk(region: string, instanceId: string, imageId: string, login: { keyPairName: string }): Promise<void> {
    await callApi("ecs", "ReplaceSystemDisk", { InstanceId: instanceId, ImageId: imageId, KeyPairName: login.keyPairName }, { region });
}
