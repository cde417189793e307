/**
 * The node operations at run time: invoke a saved command (src/rules/operations.ts, saved by the
 * NodeCommands component) on a master or a node with validated parameters, and read its answer. This is
 * how every dynamic provider, the removal core and doctor reach the Kubernetes API (kubectl on a master
 * with its admin kubeconfig) and the nodes themselves, without a network path from the machine running
 * Pulumi. The admin kubeconfig never leaves the master.
 */
import { runOnInstance } from "./cloudAssistant";
import { OPERATIONS, operationParameters, POOL_LABEL, providerIdOf, type JoinOperation, type NodeCommandIds, type OperationName, type ParameterName, type SavedOperation } from "../rules";

export { POOL_LABEL, providerIdOf, type NodeCommandIds };

/** Where the Kubernetes-side operations run. */
export interface ClusterAccess {
    /** Region id, e.g. `cn-hangzhou`. */
    region: string;
    /** A master with /etc/kubernetes/admin.conf (master 0). */
    masterInstanceId: string;
    /** The cluster's saved commands. */
    commands: NodeCommandIds;
    /** First Cloud Assistant poll delay, ms (≤ 1000). Default 1000; tests lower it. */
    pollIntervalMs?: number;
}

/** Options of one invocation. */
export interface InvokeOptions {
    /** Cloud Assistant timeout, seconds. Default: the operation's. */
    timeoutSeconds?: number;
    /** The output may carry secrets: keep it out of errors. Default false. */
    sensitive?: boolean;
}

/**
 * Invokes saved operation `op` on `instanceId` with its parameters (each checked against its pattern first)
 * and returns the output of a successful run.
 * @throws CommandError when the run did not succeed (see src/cloud/cloudAssistant.ts)
 */
export async function invokeOperation(access: Pick<ClusterAccess, "region" | "commands" | "pollIntervalMs">, op: SavedOperation, instanceId: string,
    values: Partial<Record<ParameterName, string>> = {}, opts: InvokeOptions = {}): Promise<string> {
    const spec: { timeoutSeconds: number } = OPERATIONS[op as OperationName];
    return runOnInstance({
        region: access.region, instanceId, commandId: access.commands[op], parameters: operationParameters(op, values),
        name: `alicloud-kubeadm ${op}`, timeoutSeconds: opts.timeoutSeconds ?? spec.timeoutSeconds, sensitiveOutput: opts.sensitive,
        pollIntervalMs: access.pollIntervalMs,
    });
}

/** Decodes the gzip+Base64 output the listing operations print. */
export function decompress(output: string): string {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const zlib = require("zlib") as typeof import("zlib");
    return zlib.gunzipSync(Buffer.from(output.trim(), "base64")).toString("utf8");
}

/** What the providers need to know about a Node. */
export interface NodeInfo {
    name: string;
    /** `spec.providerID`, e.g. `cn-hangzhou.i-bp1…` ("" when unset). */
    providerId: string;
    /** Condition Ready == True. */
    ready: boolean;
    /** `spec.unschedulable` (cordoned). */
    unschedulable: boolean;
    podCidr: string;
    /** Value of the `alicloud-kubeadm/pool` label ("" for none). */
    pool: string;
    /** Node creation time (ISO 8601). */
    createdAt: string;
}

/** Parses the lines list-nodes prints (src/shell/ops/list-nodes.sh): name, provider id, Ready, unschedulable, podCIDR, pool, created. */
export function parseNodeLines(text: string): NodeInfo[] {
    return text.split("\n").filter((l) => l.trim() !== "").map((line) => {
        const [name, providerId, ready, unschedulable, podCidr, pool, createdAt] = line.split("\t");
        return { name, providerId: providerId ?? "", ready: ready === "True", unschedulable: unschedulable === "true", podCidr: podCidr ?? "", pool: pool ?? "", createdAt: createdAt ?? "" };
    });
}

/** Every Node, optionally filtered by a label selector (e.g. `alicloud-kubeadm/pool=general`). */
export async function listNodes(access: ClusterAccess, selector = ""): Promise<NodeInfo[]> {
    return parseNodeLines(decompress(await invokeOperation(access, "list-nodes", access.masterInstanceId, { selector })));
}

/** The number of pods that are not DaemonSet pods, per node name. */
export async function workloadPods(access: ClusterAccess): Promise<Map<string, number>> {
    const counts = new Map<string, number>();
    for (const line of decompress(await invokeOperation(access, "pod-owners", access.masterInstanceId)).split("\n")) {
        const [node, kind] = line.split("\t");
        if (node && kind !== "DaemonSet") {
            counts.set(node, (counts.get(node) ?? 0) + 1);
        }
    }
    return counts;
}

/** Cordons and drains a Node through the eviction API. */
export async function drainNode(access: ClusterAccess, node: string, opts: { timeoutSeconds: number; force: boolean; skipWaitSeconds: number }): Promise<void> {
    await invokeOperation(access, "drain", access.masterInstanceId,
        { node, timeout: String(opts.timeoutSeconds), force: String(opts.force), skipWait: String(opts.skipWaitSeconds) },
        { timeoutSeconds: opts.timeoutSeconds + 60 });
}

/** Deletes a Node object (one already gone is fine). */
export async function deleteNode(access: ClusterAccess, node: string): Promise<void> {
    await invokeOperation(access, "delete-node", access.masterInstanceId, { node });
}

/** Removes the etcd member named `member` through the etcd of master `etcdNode`. */
export async function removeEtcdMember(access: ClusterAccess, member: string, etcdNode: string): Promise<"removed" | "absent"> {
    const out = await invokeOperation(access, "etcd-member-remove", access.masterInstanceId, { member, etcdNode });
    return out.includes("member-absent") ? "absent" : "removed";
}

/** Runs `kubeadm reset` (and its clean-up) on the node itself. */
export async function resetNode(access: Pick<ClusterAccess, "region" | "commands" | "pollIntervalMs">, instanceId: string): Promise<void> {
    await invokeOperation(access, "reset", instanceId);
}

/** Creates bootstrap token `token` on the master (idempotent: the same token already there is fine). */
export async function createToken(access: ClusterAccess, token: string, ttl: string, description: string): Promise<"created" | "exists"> {
    const out = await invokeOperation(access, "token-create", access.masterInstanceId, { token, ttl, description }, { sensitive: true });
    return out.includes("exists") ? "exists" : "created";
}

/** Deletes the bootstrap token with id `tokenId` (one already gone is fine). */
export async function deleteToken(access: ClusterAccess, tokenId: string): Promise<"deleted" | "already gone"> {
    const out = await invokeOperation(access, "token-delete", access.masterInstanceId, { tokenId });
    return out.includes("already gone") ? "already gone" : "deleted";
}

/** A fresh certificate key and a 30-minute token from the master, as it printed them (`<token> <key>`; secret). */
export async function joinSecrets(access: ClusterAccess): Promise<string> {
    return invokeOperation(access, "join-secrets", access.masterInstanceId, {}, { sensitive: true });
}

/** The tail of a node's bootstrap logs (doctor-bootstrap-log; token secrets blanked on the node). */
export async function bootstrapLog(access: Pick<ClusterAccess, "region" | "commands" | "pollIntervalMs">, instanceId: string, lines = 40): Promise<string> {
    return invokeOperation(access, "doctor-bootstrap-log", instanceId, { lines: String(lines) });
}

/**
 * Runs a saved join command (`attach` or `control-plane-join`, saved with the cluster's join material) on
 * the instance, with its parameters checked first. The output is kept out of errors (the join may echo them).
 */
export async function runJoin(region: string, op: JoinOperation, commandId: string, instanceId: string, values: Partial<Record<ParameterName, string>>,
    opts: { timeoutSeconds?: number; pollIntervalMs?: number } = {}): Promise<void> {
    await runOnInstance({
        region, instanceId, commandId, parameters: operationParameters(op, values), name: `alicloud-kubeadm ${op}`,
        timeoutSeconds: opts.timeoutSeconds ?? OPERATIONS[op].timeoutSeconds, sensitiveOutput: true, pollIntervalMs: opts.pollIntervalMs, pollMaxIntervalMs: 10_000,
    });
}
