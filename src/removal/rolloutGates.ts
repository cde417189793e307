/**
 * A rollout's gates (docs/rotation.md#validation): the cluster validated before a rollout starts, after each surge and
 * after each batch of outdated nodes left, and the soak before that validation. Observe, then decide:
 * {@link validationProblems} is pure, over one reading of the pool's members (their instances' spec tags, their Nodes)
 * and of the cluster (the saved operation `cluster-validate`, src/shell/ops/cluster-validate.sh). Both waits run on
 * the caller's {@link Clock} and report progress to its log.
 */
import { decompress, invokeOnMaster, unescapeListed, type ClusterAccess } from "../cloud/operations";
import { SYSTEM_CLOCK, waitFor, type Clock } from "../cloud/wait";
import type { PoolMember } from "./victims";

/** What `cluster-validate` reads: every Node's Ready, the masters' Nodes, and the Deployments and not-Ready pods of kube-system and kube-flannel. */
export interface ClusterHealth {
    /** Node name → its Ready condition is True. */
    nodes: Map<string, boolean>;
    /** The Nodes labelled `node-role.kubernetes.io/control-plane` (none from a cluster-validate of an earlier release). */
    controlPlane: string[];
    /**
     * The Nodes whose `NetworkUnavailable` condition is True: the CCM's route controller has not created their pod
     * route (it sets the condition True when it initializes a Node, False once the route is in the route table).
     */
    networkUnavailable: Set<string>;
    deployments: Array<{ name: string; replicas: number; available: number }>;
    /** Pods that are not Ready (neither finished nor terminating), `namespace/name`, on `node` ("" when not scheduled). */
    unreadyPods: Array<{ name: string; node: string; phase: string }>;
}

/**
 * Parses the lines of `cluster-validate` (a line of another kind is ignored: a newer script's). The values a node
 * writes are printed escaped (docs/upstream.md#kubectl-go-template) and decoded here, as data.
 */
export function parseClusterHealth(text: string): ClusterHealth {
    const health: ClusterHealth = { nodes: new Map(), controlPlane: [], networkUnavailable: new Set(), deployments: [], unreadyPods: [] };
    for (const line of text.split("\n")) {
        const [kind, name, a = "", b = ""] = line.split("\t").map(unescapeListed);
        if (!name) continue;
        if (kind === "node") health.nodes.set(name, a === "True");
        if (kind === "node" && b === "True") health.networkUnavailable.add(name);
        if (kind === "control-plane") health.controlPlane.push(name);
        // A Deployment's replicas default to 1 when the spec leaves them out; availableReplicas is absent at 0.
        if (kind === "deployment") health.deployments.push({ name, replicas: a === "" ? 1 : Number(a), available: Number(b || "0") });
        if (kind === "pod") health.unreadyPods.push({ name, node: a, phase: b });
    }
    return health;
}

/** Reads the cluster's health on a master. */
export async function readClusterHealth(access: ClusterAccess): Promise<ClusterHealth> {
    return parseClusterHealth(decompress(await invokeOnMaster(access, "cluster-validate")));
}

/**
 * What keeps a rollout from going on, from one reading; empty when it may go on:
 * - a member made from the current spec that is not a Ready Node (a new node that never got Ready, or lost it);
 * - a member made from the current spec whose Node has no pod route yet (NetworkUnavailable True,
 *   docs/upstream.md#ccm-network-unavailable-race): Ready, yet the scheduler keeps pods off it;
 * - a master's Node (control-plane role) that is not Ready: the pods on it are not counted below, and no rollout
 *   should drain nodes while the control plane is short of a member;
 * - a Deployment of kube-system or kube-flannel with fewer replicas available than it asks for;
 * - one of their pods not Ready on a Ready Node, or on none (Pending).
 * An outdated member that is NotReady does not count (the rollout replaces it first, and its leaving costs no Ready
 * node), nor does a pod on a NotReady Node (the Node is what is wrong; a new one is counted by the first rule) or on a
 * Node that is gone (a removed member's: the pod garbage collector deletes it).
 */
export function validationProblems(members: ReadonlyArray<PoolMember & { outdated: boolean }>, health: ClusterHealth): string[] {
    const problems: string[] = [];
    const notReady = members.filter((m) => !m.outdated && !(m.ready && m.nodeName !== null));
    if (notReady.length > 0) {
        problems.push(`new node(s) not Ready: ${notReady.map((m) => (m.nodeName === null ? `${m.instanceId} (no Node)` : `${m.instanceId} (${m.nodeName})`)).join(", ")}`);
    }
    const unrouted = members.filter((m) => !m.outdated && m.nodeName !== null && health.networkUnavailable.has(m.nodeName));
    if (unrouted.length > 0) {
        problems.push(`new node(s) without their pod route (NetworkUnavailable; the CCM's route controller has not created it): ` +
            unrouted.map((m) => `${m.instanceId} (${m.nodeName})`).join(", "));
    }
    const mastersDown = health.controlPlane.filter((name) => health.nodes.get(name) !== true);
    if (mastersDown.length > 0) problems.push(`control-plane Node(s) not Ready: ${mastersDown.join(", ")}`);
    for (const d of health.deployments) {
        if (d.available < d.replicas) problems.push(`Deployment ${d.name}: ${d.available} of ${d.replicas} replica(s) available`);
    }
    for (const p of health.unreadyPods) {
        if (p.node === "" || health.nodes.get(p.node) === true) problems.push(`pod ${p.name} ${p.node === "" ? "not scheduled" : `on ${p.node}`} not Ready (${p.phase || "no phase"})`);
    }
    return problems;
}

/** How a gate reads and waits. */
export interface GateContext {
    poolName: string;
    /** One reading: the pool's staying members (with `outdated` from their instances' tags) and the cluster's health. */
    read: () => Promise<{ members: Array<PoolMember & { outdated: boolean }>; health: ClusterHealth }>;
    /** How long a validation may keep failing before the rollout pauses, ms. */
    timeoutMs: number;
    /** Pause between readings, ms (at least 2 s: a reading is several calls). */
    pollMs: number;
    /** Progress, for the Pulumi log. */
    log: (message: string) => void;
    /** Default {@link SYSTEM_CLOCK}. */
    clock?: Clock;
    /** The fix a paused rollout's error names. Default: a pool's (see why, fix it or set the pool's spec back; `rollout.validate: false` skips it). */
    fix?: string;
}

/**
 * Waits until a reading finds no {@link validationProblems}, for at most `timeoutMs`.
 * @param when what the validation follows, for the log and the error (`before the rollout`, `after the surge`, …)
 * @throws naming every problem of the last reading, as a paused rollout that the next `pulumi up` resumes
 */
export async function validateRollout(ctx: GateContext, when: string): Promise<void> {
    const pollMs = Math.max(ctx.pollMs, 2000);
    let problems: string[] = [];
    await waitFor(async () => {
        const { members, health } = await ctx.read();
        problems = validationProblems(members, health);
        return problems.length === 0 ? { done: true, value: undefined } : { done: false, state: `pool ${ctx.poolName}: validation ${when}: ${problems.join("; ")}` };
    }, { timeoutMs: ctx.timeoutMs, firstDelayMs: pollMs, maxDelayMs: pollMs, factor: 1, log: ctx.log, clock: ctx.clock ?? SYSTEM_CLOCK },
    (_state, waitedMs) => new Error(`pool ${ctx.poolName}: rollout paused: the cluster failed validation ${when} for ${Math.round(waitedMs / 1000)} s: ${problems.join("; ")}.\n` +
        `  fix: ${ctx.fix ?? "see why (`npm run doctor`, `kubectl describe` of what is named); fix it, or set the pool's spec back; the next `pulumi up` validates again " +
        "and resumes the rollout where it stopped (rollout.validate: false skips validation)."}`));
    ctx.log(`pool ${ctx.poolName}: cluster valid ${when}`);
}

/** Waits `seconds` (a batch's soak), logging what is left at least every half minute. */
export async function soak(poolName: string, seconds: number, after: string, log: (message: string) => void, clock: Clock = SYSTEM_CLOCK): Promise<void> {
    if (seconds <= 0) return;
    const started = clock.now();
    const totalMs = seconds * 1000;
    log(`pool ${poolName}: soaking ${seconds} s after ${after}`);
    for (;;) {
        const leftMs = totalMs - (clock.now() - started);
        if (leftMs <= 0) return;
        await clock.sleep(Math.min(leftMs, 30_000));
        const now = totalMs - (clock.now() - started);
        if (now > 0) log(`pool ${poolName}: soaking, ${Math.ceil(now / 1000)} s left`);
    }
}
