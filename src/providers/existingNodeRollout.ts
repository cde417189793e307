/**
 * An existing node's rollout (docs/rotation.md#existing-nodes): an existing node cannot be surged (the instance is the
 * user's, there is no second one), so an outdated one is replaced in place, through what already takes a node out and
 * what already attaches one: the cluster validated, the node removed by the removal core (drain with
 * PodDisruptionBudgets, clear userdata, kubeadm reset, Node and pod route deleted), attached again
 * ({@link joinExistingNode}: the attach command, or in `auto` mode userdata and a new system disk), Ready, and the
 * cluster validated again before the update returns. One existing node at a time: the Cluster chains its memberships
 * with `dependsOn`, so Pulumi starts a node's update only once the one before has returned.
 *
 * Observe, then decide: what was done is read from the cluster and the instance, so a run that stopped at any step is
 * resumed by the next `pulumi up`. What the cluster cannot tell is recorded in the state when the update fails (a
 * partial update, src/providers/partialUpdate.ts): once the removal changed the node (its cordon or later), that the
 * node is out ({@link REMOVED}), so the next `pulumi up` attaches it again whatever its spec and rollout; once it
 * attached again, the new spec with `awaitingReady`, so the next `pulumi up` waits for Ready and validates instead of
 * removing it again (unless the cluster has no Node for it: then it is out, and attached again). A run killed without
 * an error records nothing: a refresh reads it (NodeMembership's `read`).
 */
import { describeInstance } from "../cloud/ecs";
import { listNodes, nodeOfInstance } from "../cloud/operations";
import { allSettled, SYSTEM_CLOCK, waitFor, type Clock } from "../cloud/wait";
import { readClusterHealth, removeNode, validateRollout, type RemovalOptions } from "../removal";
import { EXISTING_NODE_REMOVED } from "../rules";
import { clusterAccess } from "./access";
import type { NodeMembershipInputs, NodeMembershipOutputs } from "./nodeMembership";

/** What the state of a membership tells about its spec. */
export interface RecordedSpec {
    /** The spec hash the node joined with (the state's `joinedSpec`); absent in state written before specs were recorded. */
    joinedSpec?: string;
    /** The spec hash the inputs asked for then. */
    spec?: string;
    mode?: string;
    labels?: string;
    taints?: string;
    imageId?: string;
    /** The node attached again with `joinedSpec`; its Ready and the validation after were not seen yet. */
    awaitingReady?: boolean;
}

/** The `joinedSpec` of a node whose replacement started its removal and did not attach it again: it is out of the cluster. */
export const REMOVED = EXISTING_NODE_REMOVED;

/** What a node whose state recorded no spec joined with, once its recorded mode, labels, taints or image changed. */
const UNRECORDED = "unrecorded";

/**
 * The spec the node joined with. State written before this version recorded none: the node counts as joined with
 * today's spec when the mode, labels, taints and (`auto`) image it recorded are today's (nothing says otherwise), and
 * as outdated ("unrecorded") when one of them changed.
 */
export function joinedSpecOf(olds: RecordedSpec, news: NodeMembershipInputs): string | undefined {
    if (olds.joinedSpec !== undefined) return olds.joinedSpec;
    if (news.spec === undefined) return undefined;
    const same = (["mode", "labels", "taints"] as const).every((k) => (olds[k] ?? "") === (news[k] ?? "")) &&
        (news.mode !== "auto" || (olds.imageId ?? "") === (news.imageId ?? ""));
    return same ? news.spec : UNRECORDED;
}

/** Whether the node's spec is not the one asked for (never when no spec is asked for). */
export function isExistingNodeOutdated(olds: RecordedSpec, news: NodeMembershipInputs): boolean {
    const joined = joinedSpecOf(olds, news);
    return news.spec !== undefined && joined !== undefined && joined !== news.spec;
}

/** Whether a replacement took the node out and did not attach it again: the next update attaches it, whatever its spec and rollout. */
export function isExistingNodeRemoved(olds: RecordedSpec): boolean {
    return olds.joinedSpec === REMOVED;
}

/** One line for the Pulumi log saying what this `pulumi up` does about an outdated existing node. */
export function outdatedExistingNodeMessage(olds: RecordedSpec, news: NodeMembershipInputs): string {
    const joined = joinedSpecOf(olds, news);
    // In a preview that changes the spec's inputs too, the new hash is not known yet (Pulumi's unknown stands in).
    const now = /^[0-9a-f]{16}$/.test(news.spec ?? "") ? news.spec : "a spec known once its inputs are";
    if (joined === REMOVED) {
        return `existing node ${news.instanceId} is out of the cluster, or on its way out (cordoned): a replacement started its removal and did not ` +
            `attach it again. This update finishes the removal and attaches it again (spec now ${now}), whatever its rollout`;
    }
    const was = joined === UNRECORDED ? "a spec this library did not record yet, and its mode, labels, taints or image changed since" : `spec ${joined}`;
    return news.rollout === "replace"
        ? `existing node ${news.instanceId} is outdated (joined with ${was}; now ${now}): this update replaces it in place ` +
            "(cluster validated, drained with PodDisruptionBudgets, reset, attached again, Ready, validated), one existing node at a time"
        : `existing node ${news.instanceId} is outdated (joined with ${was}; now ${now}): it keeps what it joined with. ` +
            "Set existingNodes[].rollout: replace to have `pulumi up` replace it in place (drain, reset, attach again; mode auto replaces its system disk again)";
}

/** How far a replacement got: what the state must record when it fails (see the module's comment). */
export interface ReplacementProgress {
    /** The removal started (the node may be out of the cluster). */
    removed: boolean;
    /** The attach ran (the attach command, or the new system disk booted with the attach script). */
    attached: boolean;
    /** The step under way, in words (`the drain`, `the attach`, …): what a failed update's error names. */
    step?: string;
}

/** The two halves of a join ({@link joinExistingNode}): the attach, and the wait for the Node Ready. */
export interface JoinSteps {
    attach: (inputs: NodeMembershipInputs) => Promise<void>;
    ready: (inputs: NodeMembershipInputs) => Promise<NodeMembershipOutputs>;
}

/**
 * Replaces an outdated existing node in place: validation, removal (skipped when the Node is gone and the instance is
 * not running: a re-run after the removal, or stopped on its way to a new system disk), the attach, Ready, validation.
 * Resumed with `removed` (the state says a replacement took the node out), the same steps; with `attached` (it attached
 * again), only Ready and the validation after, or, when the cluster has no Node for it, the steps of `removed`.
 * @param join the attach and its wait for Ready (NodeMembership's)
 * @param removal the removal core's options (NodeMembership's, as its delete uses them)
 * @param progress set as the steps start (`removed` once the removal changed the node): how far it got when it throws
 * @throws a paused replacement (a validation that kept failing, a drain a PodDisruptionBudget blocked, an attach that
 *   failed), naming the instance, the step and the fix; the next `pulumi up` resumes
 */
export async function replaceExistingNode(inputs: NodeMembershipInputs, removal: RemovalOptions, join: JoinSteps, log: (m: string) => void,
    progress: ReplacementProgress, opts: { clock?: Clock; resume?: "removed" | "attached" } = {}): Promise<NodeMembershipOutputs> {
    const id = inputs.instanceId;
    if (inputs.mode === "ssh") {
        throw new Error(`existing node ${id} is attached over SSH (a remote command that runs once): an update cannot attach it again, so it is not removed.\n` +
            "  fix: set its rollout to report, or attach it over Cloud Assistant (remove its connection); nothing was changed.");
    }
    const access = clusterAccess(inputs);
    const gate = (outdated: boolean, fix: string) => ({
        poolName: "existing",
        read: async () => {
            const [nodes, health] = await allSettled([listNodes(access), readClusterHealth(access)]);
            const node = nodeOfInstance(nodes, inputs.region, inputs);
            return { members: [{ instanceId: id, nodeName: node?.name ?? null, ready: node?.ready ?? false, workloadPods: 0, createdAt: "", outdated }], health };
        },
        timeoutMs: (inputs.readyTimeoutSeconds ?? 900) * 1000, pollMs: (inputs.pollSeconds ?? 10) * 1000, log, clock: opts.clock ?? SYSTEM_CLOCK, fix,
    });
    const see = "see why (`npm run doctor`, `kubectl describe` of what is named) and fix it";
    let resume = opts.resume;
    if (resume === "attached" && !(await nodeAppears(access, inputs, gate(false, see), log))) {
        // Attached and still no Node after a whole Ready wait more (a first boot that failed, a kubelet that never came up,
        // a `kubeadm reset` by hand): it is out of the cluster, and attached again as after its removal. A slow first
        // boot gets that wait first, so it is not reset while it joins.
        log(`${id}: attached again earlier, but the cluster has no Node for it: it is out of the cluster; cleaning up and attaching it again` +
            (inputs.mode === "auto" ? " (a new system disk: only a first boot runs the attach script)" : ""));
        resume = "removed";
    }
    if (resume !== "attached") {
        // Nothing removed yet: putting the spec back (or the rollout to report) leaves the node as it is. Once out, it comes back whatever they say.
        const fix = resume === "removed"
            ? `${see}; ${id} is out of the cluster and the next \`pulumi up\` validates again and attaches it again, whatever its spec and rollout`
            : `${see}, or set the node's labels, taints or image back, or its rollout to report; the next \`pulumi up\` validates again and resumes this node's replacement where it stopped`;
        progress.step = "the validation before its removal";
        await validateRollout(gate(true, fix), `before ${id} is replaced`);
        const node = nodeOfInstance(await listNodes(access), inputs.region, inputs);
        const instance = await describeInstance(inputs.region, id);
        if (!instance) throw new Error(`ECS instance ${id} does not exist in ${inputs.region}; check existingNodes[].instanceId`);
        // Out only once the removal changed something (its cordon or later): a removal that fails at its first reads leaves the node as it was.
        if (resume === "removed") progress.removed = true;
        if (node || instance.status === "Running") {
            log(`${id}: leaving the cluster to attach again with the new spec`);
            progress.step = "its removal";
            await removeNode({ instanceId: id, kind: "existing", joinCommandId: inputs.mode === "manual" ? inputs.attachCommandId : undefined },
                { ...removal, onChange: () => { progress.removed = true; } });
        } else {
            log(`${id}: no Node and ${instance.status}: its removal is done, attaching again`);
        }
        progress.removed = true;
        progress.step = "the attach";
        await join.attach(inputs);
        progress.attached = true;
    }
    progress.step = "the wait for its Node Ready";
    const outs = await join.ready(inputs);
    // The node attached again: the next `pulumi up` waits and validates again, whatever its spec and rollout.
    progress.step = "the validation after its attach";
    await validateRollout(gate(false, `${see}; ${id} is attached again, and the next \`pulumi up\` waits for it and validates again (it is not removed again)`),
        `after ${id} was replaced`);
    log(`existing node ${id}: replaced in place with spec ${inputs.spec}`);
    return outs;
}

/**
 * Whether the instance's Node is in the cluster now or appears within the gate's wait (its Ready timeout), polled at
 * the gate's pace on its clock; the listing's errors are retried like the wait's.
 */
async function nodeAppears(access: ReturnType<typeof clusterAccess>, inputs: NodeMembershipInputs,
    wait: { timeoutMs: number; pollMs: number; clock: Clock }, log: (m: string) => void): Promise<boolean> {
    const none = new Error("no Node");
    return waitFor<boolean>(async () => {
        try {
            if (nodeOfInstance(await listNodes(access), inputs.region, inputs)) return { done: true, value: true };
            return { done: false, state: `${inputs.instanceId}: attached again earlier; waiting for its Node to register` };
        } catch (err) {
            return { done: false, state: `${inputs.instanceId}: the cluster's Nodes could not be listed (${(err as Error).message.split("\n")[0]}); retrying` };
        }
    }, { timeoutMs: wait.timeoutMs, firstDelayMs: wait.pollMs, maxDelayMs: wait.pollMs, clock: wait.clock, log }, () => none)
        .catch((err) => { if (err === none) return false; throw err; });
}
