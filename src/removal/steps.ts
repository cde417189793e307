/**
 * The step sequence of one node's removal: find its Node → drain → clear userdata (existing nodes) →
 * kubeadm reset on the node (or, for a control-plane member that cannot run it, its etcd member removed
 * through master 0) → delete the Node; and, after the ESS step (batch.ts), delete a left-over pod route.
 * Each step is idempotent: a target already gone counts as done, with a warning.
 */
import { CommandError } from "../cloud/cloudAssistant";
import { getUserData, setUserData } from "../cloud/ecs";
import { cannotRunCommands, classify } from "../cloud/errors";
import { deleteNode, drainNode, listNodes, providerIdOf, removeEtcdMember, resetNode, type ClusterAccess } from "../cloud/operations";
import { OpenApiError } from "../cloud/openapi";
import { customRouteEntries, deleteRouteEntry } from "../cloud/vpc";
import { notApplicable, runStep, skipStep, type NodeRemoval, type RemovalOptions } from "./types";

/** The no-op userdata left on a removed existing node, so a reboot or re-image cannot rejoin it. */
export const CLEARED_USERDATA = "#!/bin/sh\n# alicloud-kubeadm: this node was removed from its cluster; its join userdata was cleared.\n";

/** Where the Kubernetes-side operations of a removal run. */
export function accessOf(opts: RemovalOptions): ClusterAccess {
    return { region: opts.region, masterInstanceId: opts.masterInstanceId, commands: opts.commands, pollIntervalMs: opts.pollIntervalMs };
}

function isGone(err: unknown): boolean {
    return err instanceof OpenApiError && classify(err.code) === "not-found";
}

/** What the Kubernetes side learns while it runs. */
interface NodeFacts {
    /** The Node's name; null when there is none. */
    name: string | null;
    ready?: boolean;
    /** Master 0's Node name (the etcd clean-up goes through its etcd pod). */
    master0?: string;
}

/** Which Node is this instance? The provider id is the stable link. */
async function findNode(r: NodeRemoval, opts: RemovalOptions): Promise<NodeFacts> {
    const { target } = r;
    const facts: NodeFacts = { name: target.nodeName ?? null, ready: target.nodeReady };
    if (target.nodeName !== undefined && target.kind !== "control-plane") {
        return facts;
    }
    await runStep(r, "find-node", "check that master 0 is Running with its Cloud Assistant agent online", async () => {
        const nodes = await listNodes(accessOf(opts));
        const node = nodes.find((n) => n.providerId === providerIdOf(opts.region, target.instanceId));
        facts.master0 = nodes.find((n) => n.providerId === providerIdOf(opts.region, opts.masterInstanceId))?.name;
        if (target.nodeName === undefined) {
            facts.name = node?.name ?? null;
            facts.ready = node?.ready;
        }
    });
    return facts;
}

/** Cordon + drain through the eviction API, so PodDisruptionBudgets hold. */
async function drain(r: NodeRemoval, opts: RemovalOptions, facts: NodeFacts): Promise<void> {
    const id = r.target.instanceId;
    if (!facts.name) {
        skipStep(r, "drain", `no Node has provider id ${providerIdOf(opts.region, id)} (already deleted)`);
        return;
    }
    const name = facts.name;
    await runStep(r, "drain", `a PodDisruptionBudget or a slow pod blocks eviction from ${name}: free it, raise drainTimeoutSeconds, or set force: true to delete pods without a controller`, async () => {
        r.log(`draining ${id} (node ${name})`);
        const timeout = opts.drainTimeoutSeconds ?? 600;
        try {
            // On a NotReady node the kubelet never confirms pod deletion: stop waiting for evicted pods
            // after a minute instead of running into the drain timeout on every attempt.
            await drainNode(accessOf(opts), name, { timeoutSeconds: timeout, force: opts.force ?? false, skipWaitSeconds: facts.ready === false ? 60 : 0 });
            r.report.done.push("drain");
        } catch (err) {
            if (!(err instanceof CommandError && /\(NotFound\)|nodes? "[^"]*" not found/.test(err.outputTail))) {
                throw err;
            }
            facts.name = null; // deleted meanwhile (by an earlier run or by the CCM)
            skipStep(r, "drain", `Node ${name} is already deleted`);
        }
    });
}

/** Existing nodes: clear the join userdata so a reboot or re-image cannot rejoin the cluster. */
async function clearUserdata(r: NodeRemoval, opts: RemovalOptions): Promise<void> {
    const id = r.target.instanceId;
    if (r.target.kind !== "existing") {
        notApplicable(r, "clear-userdata", `not an existing node (${r.target.kind})`);
        return;
    }
    await runStep(r, "clear-userdata", `allow ecs:ModifyInstanceAttribute for the caller, or clear the userdata of ${id} in the ECS console`, async () => {
        try {
            const current = await getUserData(opts.region, id);
            if (current === "" || current === CLEARED_USERDATA) {
                skipStep(r, "clear-userdata", "userdata already cleared");
                return;
            }
            r.log(`clearing the join userdata of ${id}`);
            await setUserData(opts.region, id, CLEARED_USERDATA);
            r.report.done.push("clear-userdata");
        } catch (err) {
            if (isGone(err)) {
                skipStep(r, "clear-userdata", `instance ${id} no longer exists`);
                return;
            }
            throw err;
        }
    });
}

/**
 * kubeadm reset on the node (for masters this also leaves etcd). A node already deleted from Kubernetes
 * was reset before (reset precedes delete-node), so a resumed run skips it.
 */
async function reset(r: NodeRemoval, opts: RemovalOptions, facts: NodeFacts): Promise<void> {
    const id = r.target.instanceId;
    if (!facts.name) {
        skipStep(r, "reset", "the Node is already deleted, so the reset step ran before (or the node never joined)");
        return;
    }
    const memberName = facts.name;
    await runStep(r, "reset", `start ${id} and its Cloud Assistant agent, or run the reset by hand, then retry`, async () => {
        try {
            r.log(`resetting ${id}: kubeadm reset, CNI config, cni0, iptables`);
            await resetNode(accessOf(opts), id);
            r.report.done.push("reset");
        } catch (err) {
            if (!(err instanceof CommandError && (cannotRunCommands(err.errorCode) || classify(err.errorCode) === "not-found"))) {
                throw err;
            }
            if (r.target.kind !== "control-plane") {
                skipStep(r, "reset", `${id} cannot run commands (${err.errorCode}); the Kubernetes side still completes`);
                return;
            }
            // A member that cannot reset itself would stay in etcd and keep counting toward quorum.
            if (!facts.master0) {
                throw new Error(`${id} cannot run kubeadm reset (${err.errorCode}) and master 0 has no Node to reach etcd through`);
            }
            r.log(`${id} cannot run kubeadm reset (${err.errorCode}); removing its etcd member through master 0`);
            const result = await removeEtcdMember(accessOf(opts), memberName, facts.master0);
            r.report.done.push("reset");
            if (result === "absent") {
                r.warn(`${id}: reset skipped (${err.errorCode}); it was no longer an etcd member`);
            }
        }
    });
}

/** Deletes the Node object. */
async function removeNodeObject(r: NodeRemoval, opts: RemovalOptions, facts: NodeFacts): Promise<void> {
    if (!facts.name) {
        notApplicable(r, "delete-node", "no Node object");
        return;
    }
    const name = facts.name;
    await runStep(r, "delete-node", `check master 0, then \`kubectl delete node ${name}\``, async () => {
        await deleteNode(accessOf(opts), name);
        r.report.done.push("delete-node");
    });
}

/** The Kubernetes side of one node: find its Node, drain, clear userdata, reset, delete the Node. */
export async function kubernetesSide(r: NodeRemoval, opts: RemovalOptions): Promise<void> {
    const facts = await findNode(r, opts);
    await drain(r, opts, facts);
    await clearUserdata(r, opts);
    await reset(r, opts, facts);
    await removeNodeObject(r, opts, facts);
}

/** A pod route the CCM left behind (it deletes routes of deleted nodes only from its memory). */
export async function deletePodRoutes(r: NodeRemoval, opts: RemovalOptions): Promise<void> {
    const id = r.target.instanceId;
    const table = opts.routeTableId;
    if (!table) {
        return;
    }
    await runStep(r, "delete-route", `delete the route with next hop ${id} from ${table} in the VPC console`, async () => {
        const entries = await customRouteEntries(opts.region, table, { nextHopId: id });
        if (entries.length === 0) {
            notApplicable(r, "delete-route", "no route points at the instance");
            return;
        }
        for (const e of entries) {
            r.log(`deleting pod route ${e.destinationCidrBlock} → ${id}`);
            try {
                await deleteRouteEntry(opts.region, table, e);
            } catch (err) {
                if (!isGone(err)) {
                    throw err;
                }
            }
        }
        r.report.done.push("delete-route");
    });
}
