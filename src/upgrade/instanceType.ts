/**
 * The masters to a new instance type, one at a time (docs/upgrades.md#instance-type), after an etcd backup: ECS changes a pay-as-you-go instance's
 * type only while it is Stopped (ModifyInstanceSpec, docs/upstream.md#ecs-modify-spec), so each master is drained, stopped,
 * resized, started, uncordoned and gated — every API server ready, every etcd member healthy, its Node Ready — before the
 * next one is touched. The masters' `instanceType` is ignored on their ECS instances (the alicloud provider would stop all
 * of them at once); it is applied here.
 *
 * Observe, then decide: each master's steps come from its instance (status, type) and its Node (the resize's own drain mark,
 * `alicloud-kubeadm/resizing`, which no version upgrade or removal undoes), so a run that was interrupted resumes with the
 * master it left half-way, and nothing is done twice. ControlPlaneVersion first finishes a master an interrupted run left
 * half-way ({@link MastersResize.interruptedOnly}), so the version upgrade always starts with every master running.
 */
import { describeInstances, modifyInstanceType, startInstance, stopInstanceAndWait, waitForInstance, type Instance } from "../cloud/ecs";
import { drainNode, uncordonNode, type ClusterAccess } from "../cloud/operations";
import type { Clock } from "../cloud/wait";
import { backupBeforeChange } from "../recovery/backup";
import { gateWait, waitForGate, type GateOptions } from "./gate";
import { asStep, UpgradeError } from "./run";
import { nodeOfInstance, readClusterStatus, type ClusterStatus, type NodeStatus } from "./status";

/** One master's steps, in order. */
export type ResizeStep = "drain" | "stop" | "resize" | "start" | "uncordon";

/** Everything one resize needs. */
export interface MastersResize {
    /** The masters, master 0 first (the order they are resized in). */
    access: ClusterAccess;
    /** The instance type every master should have (`controlPlane.instanceType`). */
    instanceType: string;
    /** Drain timeout per master, seconds. Default 600. */
    drainTimeoutSeconds?: number;
    gate?: GateOptions;
    /** How long a stop, the new type showing and a start may each take, ms. Default 600 000. */
    instanceTimeoutMs?: number;
    /** Only finish the masters an interrupted run left marked (drained, maybe stopped); touch no other. Default false. */
    interruptedOnly?: boolean;
    log?: (message: string) => void;
    warn?: (message: string) => void;
}

/**
 * What is left to do on one master (empty: nothing). A Stopped master is resumed only when the resize's drain marked its Node
 * (a resize stopped it); one stopped by somebody else stops the run.
 */
export function resizeSteps(inst: Pick<Instance, "status" | "instanceType">, node: Pick<NodeStatus, "resizeMark"> | undefined, instanceType: string): ResizeStep[] {
    const marked = !!node?.resizeMark;
    const wrongType = inst.instanceType !== instanceType;
    if (inst.status === "Running" || inst.status === "Starting" || inst.status === "Pending") {
        if (wrongType) return ["drain", "stop", "resize", "start", "uncordon"];
        return marked ? ["uncordon"] : [];
    }
    // Stopping or Stopped: half-way through this resize.
    return wrongType ? ["stop", "resize", "start", "uncordon"] : ["stop", "start", "uncordon"];
}

/**
 * Resizes every master whose type is not `u.instanceType`, one at a time.
 * @throws UpgradeError naming the master, the step and the fix
 */
export async function resizeMasters(u: MastersResize): Promise<void> {
    const log = u.log ?? (() => undefined);
    const { region, masterInstanceIds: masters } = u.access;
    // The instance polls: the cluster access's pace when set (tests), else 1 s growing to 10 s.
    const waits = { timeoutMs: u.instanceTimeoutMs ?? 600_000, pollMs: u.access.pollIntervalMs, log, clock: u.gate?.clock };
    const first = await asStep(masters[0], "status", () => describeInstances(region, masters));
    const only = masters.length === 1 ? first.get(masters[0]) : undefined;
    if (only && (only.status === "Stopped" || only.status === "Stopping")) return resumeOnlyMaster(u, only, waits);
    const s0 = await asStep(masters[0], "status", () => readClusterStatus(u.access));
    const marked = masters.filter((m) => nodeOfInstance(s0, region, m)?.resizeMark);
    // The masters of another type, and those a resize left marked; no other master is read again or touched.
    const todo = u.interruptedOnly ? marked : masters.filter((m) => marked.includes(m) || (first.get(m) !== undefined && first.get(m)!.instanceType !== u.instanceType));
    if (todo.length === 0) return;
    log(`resizing the masters to ${u.instanceType}, one at a time (drain, stop, ModifyInstanceSpec, start, uncordon, health gate): ${todo.join(", ")}`);
    if (masters.length === 1) u.warn?.(`the only master ${masters[0]} stops for its new instance type: the API is unavailable until it runs again`);
    // An etcd backup before the first master of a new resize stops (a resumed one had its backup when it began).
    if (todo.some((m) => !marked.includes(m))) await asStep(masters[0], "backup", () => backupBeforeChange(u.access, `resizing the masters to ${u.instanceType}`, log, u.warn));
    for (const [i, m] of masters.entries()) {
        if (!todo.includes(m)) continue;
        const inst = await asStep(m, "status", async () => (await describeInstances(region, [m])).get(m));
        if (!inst) throw new UpgradeError(m, "status", "the master's instance does not exist (released?); replace it first (docs/disaster-recovery.md#lost-member)");
        const s = await asStep(m, "status", () => readClusterStatus(u.access));
        const node = nodeOfInstance(s, region, m);
        const steps = resizeSteps(inst, node, u.instanceType);
        if (steps.length === 0) continue;
        if (!node) throw new UpgradeError(m, "status", "the master has no Node in the cluster (it did not join, or its Node was deleted)");
        if (inst.status !== "Running" && !node.resizeMark) {
            throw new UpgradeError(m, "status", `the master is ${inst.status} and not drained by this library: somebody else stopped it; start it (StartInstance or the ECS console) and check it with \`npm run doctor\``);
        }
        // A master whose resize starts now: only when the whole control plane is healthy with it in (never two out at once).
        if (steps[0] === "drain" && !node.resizeMark) await asStep(m, "health gate", () => waitForGate(u.access, m, node.kubelet, true, u.gate));
        log(`master ${m} (${i + 1}/${masters.length}): ${inst.instanceType} → ${u.instanceType}: ${steps.join(", ")}, then the health gate`);
        for (const step of steps) {
            log(`master ${m}: ${step}`);
            if (step === "drain") {
                await asStep(m, step, () => drainNode(u.access, node.name, { timeoutSeconds: u.drainTimeoutSeconds ?? 600, force: false, skipWaitSeconds: 0, mark: "resizing" }));
            } else if (step === "stop") {
                await asStep(m, step, () => stopInstanceAndWait(region, m, waits));
            } else if (step === "resize") {
                await asStep(m, step, async () => {
                    await modifyInstanceType(region, m, u.instanceType);
                    await waitForInstance(region, m, `instance type ${u.instanceType}`, (x) => x.instanceType === u.instanceType, waits);
                });
            } else if (step === "start") {
                await asStep(m, step, async () => {
                    await startInstance(region, m);
                    await waitForInstance(region, m, "Running", (x) => x.status === "Running", waits);
                });
            } else {
                await asStep(m, step, () => uncordonNode(u.access, node.name, "resizing"));
            }
        }
        await asStep(m, "health gate", () => waitForGate(u.access, m, node.kubelet, true, u.gate));
        log(`master ${m} runs as ${u.instanceType}: every API server ready, every etcd member healthy, its Node Ready`);
    }
}

/**
 * The only master stopped: the API (and the Node's resize mark) went down with it, so its steps come from its instance
 * alone. Of another type than asked, it is this resize's (ECS changes a type only while Stopped): resize, start, wait until
 * the API answers, uncordon what the resize marked, gate. Already of the asked type, it cannot tell a resize killed between
 * ModifyInstanceSpec and StartInstance from a stop by somebody else, and starts nothing.
 */
async function resumeOnlyMaster(u: MastersResize, inst: Instance, waits: { timeoutMs: number; pollMs?: number; log: (m: string) => void; clock?: Clock }): Promise<void> {
    const m = inst.instanceId;
    const { region } = u.access;
    if (inst.instanceType === u.instanceType) {
        throw new UpgradeError(m, "status", `the only master is ${inst.status}, already of type ${u.instanceType} (a resize stopped after ModifyInstanceSpec, or somebody else ` +
            "stopped it): start it (StartInstance or the ECS console); the next `pulumi up` uncordons it");
    }
    waits.log(`the only master ${m} is ${inst.status} as ${inst.instanceType}: resize to ${u.instanceType}, start, uncordon, then the health gate`);
    await asStep(m, "stop", () => stopInstanceAndWait(region, m, waits));
    await asStep(m, "resize", async () => {
        await modifyInstanceType(region, m, u.instanceType);
        await waitForInstance(region, m, `instance type ${u.instanceType}`, (x) => x.instanceType === u.instanceType, waits);
    });
    await asStep(m, "start", async () => {
        await startInstance(region, m);
        await waitForInstance(region, m, "Running", (x) => x.status === "Running", waits);
    });
    const s = await asStep(m, "health gate", () => readWhenUp(u.access, u.gate));
    const node = nodeOfInstance(s, region, m);
    if (!node) throw new UpgradeError(m, "status", "the master has no Node in the cluster (it did not join, or its Node was deleted)");
    if (node.resizeMark) await asStep(m, "uncordon", () => uncordonNode(u.access, node.name, "resizing"));
    await asStep(m, "health gate", () => waitForGate(u.access, m, node.kubelet, true, u.gate));
    waits.log(`master ${m} runs as ${u.instanceType}`);
}

/** The cluster's status once the API answers again (a master just started), within the gate's time. */
function readWhenUp(access: ClusterAccess, gate: GateOptions = {}): Promise<ClusterStatus> {
    return gateWait(gate, async () => {
        try {
            return { done: true, value: await readClusterStatus(access) };
        } catch (err) {
            return { done: false, state: (err as Error).message.split("\n")[0] };
        }
    }, (state) => `the API did not answer after the start: ${state}`);
}
