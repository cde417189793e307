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
 * resumed by the next `pulumi up` (the state records the new spec only when the node is Ready again and the cluster valid).
 */
import { describeInstance } from "../cloud/ecs";
import { listNodes, nodeOfInstance } from "../cloud/operations";
import { allSettled, SYSTEM_CLOCK, type Clock } from "../cloud/wait";
import { readClusterHealth, removeNode, validateRollout, type RemovalOptions } from "../removal";
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
}

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

/** One line for the Pulumi log saying what this `pulumi up` does about an outdated existing node. */
export function outdatedExistingNodeMessage(olds: RecordedSpec, news: NodeMembershipInputs): string {
    const joined = joinedSpecOf(olds, news);
    // In a preview that changes the spec's inputs too, the new hash is not known yet (Pulumi's unknown stands in).
    const now = /^[0-9a-f]{16}$/.test(news.spec ?? "") ? news.spec : "a spec known once its inputs are";
    const was = joined === UNRECORDED ? "a spec this library did not record yet, and its mode, labels, taints or image changed since" : `spec ${joined}`;
    return news.rollout === "replace"
        ? `existing node ${news.instanceId} is outdated (joined with ${was}; now ${now}): this update replaces it in place ` +
            "(cluster validated, drained with PodDisruptionBudgets, reset, attached again, Ready, validated), one existing node at a time"
        : `existing node ${news.instanceId} is outdated (joined with ${was}; now ${now}): it keeps what it joined with. ` +
            "Set existingNodes[].rollout: replace to have `pulumi up` replace it in place (drain, reset, attach again; mode auto replaces its system disk again)";
}

/**
 * Replaces an outdated existing node in place: validation, removal (skipped when the Node is gone and the instance is
 * not running: a re-run after the removal, or stopped on its way to a new system disk), the attach, Ready, validation.
 * @param join the attach and its wait for Ready (NodeMembership's {@link joinExistingNode})
 * @param removal the removal core's options (NodeMembership's, as its delete uses them)
 * @throws a paused replacement (a validation that kept failing, a drain a PodDisruptionBudget blocked, an attach that
 *   failed), naming the instance, the step and the fix; the next `pulumi up` resumes
 */
export async function replaceExistingNode(inputs: NodeMembershipInputs, removal: RemovalOptions,
    join: (inputs: NodeMembershipInputs) => Promise<NodeMembershipOutputs>, log: (m: string) => void, clock: Clock = SYSTEM_CLOCK): Promise<NodeMembershipOutputs> {
    const id = inputs.instanceId;
    if (inputs.mode === "ssh") {
        throw new Error(`existing node ${id} is attached over SSH (a remote command that runs once): an update cannot attach it again, so it is not removed.\n` +
            "  fix: set its rollout to report, or attach it over Cloud Assistant (remove its connection); nothing was changed.");
    }
    const access = clusterAccess(inputs);
    const gate = (outdated: boolean) => ({
        poolName: "existing",
        read: async () => {
            const [nodes, health] = await allSettled([listNodes(access), readClusterHealth(access)]);
            const node = nodeOfInstance(nodes, inputs.region, inputs);
            return { members: [{ instanceId: id, nodeName: node?.name ?? null, ready: node?.ready ?? false, workloadPods: 0, createdAt: "", outdated }], health };
        },
        timeoutMs: (inputs.readyTimeoutSeconds ?? 900) * 1000, pollMs: (inputs.pollSeconds ?? 10) * 1000, log, clock,
        fix: "see why (`npm run doctor`, `kubectl describe` of what is named) and fix it, or set the node's labels, taints or image back, or its rollout " +
            "to report; the next `pulumi up` validates again and resumes this node's replacement where it stopped",
    });
    await validateRollout(gate(true), `before ${id} is replaced`);
    const node = nodeOfInstance(await listNodes(access), inputs.region, inputs);
    const instance = await describeInstance(inputs.region, id);
    if (!instance) throw new Error(`ECS instance ${id} does not exist in ${inputs.region}; check existingNodes[].instanceId`);
    if (node || instance.status === "Running") {
        log(`${id}: leaving the cluster to attach again with the new spec`);
        await removeNode({ instanceId: id, kind: "existing", joinCommandId: inputs.mode === "manual" ? inputs.attachCommandId : undefined }, removal);
    } else {
        log(`${id}: no Node and ${instance.status}: its removal is done, attaching again`);
    }
    const outs = await join(inputs);
    await validateRollout(gate(false), `after ${id} was replaced`);
    log(`existing node ${id}: replaced in place with spec ${inputs.spec}`);
    return outs;
}
