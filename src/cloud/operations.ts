/**
 * The node operations at run time: invoke a saved command (src/rules/operations.ts, saved by the
 * NodeCommands component) on a master or a node with validated parameters, and read its answer. This is
 * how every dynamic provider, the removal core and doctor reach the Kubernetes API (kubectl on a master
 * with its admin kubeconfig) and the nodes themselves, without a network path from the machine running
 * Pulumi. The admin kubeconfig never leaves the master; a secret crosses only sealed (./channel.ts).
 */
import { CommandError, runOnInstance } from "./cloudAssistant";
import { OpenApiError } from "./openapi";
import { newChannelId, newRecipient, seal } from "./channel";
import { cannotRunCommands, classify } from "./errors";
import { CERTIFICATE_KEY_PATTERN, fillOperation, MAX_ENCRYPTION_CONFIG_GZ_B64, MAX_NODES_PARAMETER_BYTES, nodePool, OPERATIONS, operationParameters, TOKEN_PATTERN, POOL_LABEL, providerIdOf, type JoinOperation, type NodeCommandIds, type OperationName, type ParameterName, type SavedOperation } from "../rules";

export { POOL_LABEL, providerIdOf, type NodeCommandIds };

/** Where the Kubernetes-side operations run. */
export interface ClusterAccess {
    /** Region id, e.g. `cn-hangzhou`. */
    region: string;
    /**
     * The masters, master 0 first. A master-side operation runs on the first of them that can run
     * commands (Running, agent online): losing master 0 does not block removals or joins in a 3- or
     * 5-master cluster, whose admin kubeconfigs reach the API through the load balancer.
     */
    masterInstanceIds: readonly string[];
    /** The master that last ran an operation for this access (set by {@link invokeOnMaster}; tried first next time). */
    workingMaster?: string;
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
    /** Only the exit status matters: output Cloud Assistant cut (it keeps 24 KB) is not an error. Default false. */
    truncatedOutputIsFine?: boolean;
}

/** The masters in the order to try them: the one that last worked for this access first, then master 0 onwards. */
function masterOrder(access: ClusterAccess): string[] {
    const first = access.masterInstanceIds.find((id) => id === access.workingMaster);
    return first ? [first, ...access.masterInstanceIds.filter((id) => id !== first)] : [...access.masterInstanceIds];
}

/** True when the command did not run because of the instance (stopped, released, agent down): another master may. */
function masterUnusable(err: unknown): boolean {
    return err instanceof CommandError && (cannotRunCommands(err.errorCode) || classify(err.errorCode) === "not-found");
}

/**
 * Invokes master-side operation `op` on a master that can run it (see {@link ClusterAccess.masterInstanceIds}).
 * @throws the last master's CommandError, listing why each master could not run it, when none could
 */
export async function invokeOnMaster(access: ClusterAccess, op: SavedOperation, values: Partial<Record<ParameterName, string>> = {}, opts: InvokeOptions = {}): Promise<string> {
    return onMaster(access, op, (master) => invokeOperation(access, op, master, values, opts));
}

/**
 * Runs one-off operation `op` (src/rules/operations.ts `saved: false`) on a master that can run it, as RunCommand:
 * `script` is the operation rendered with its parameters left as templates (renderOperation), which are checked and
 * filled in here (fillOperation). For the operations that hand out a credential sealed to a key of the caller's
 * choosing (token-create, join-secrets): only a caller who may run anything on the masters can run them.
 * @throws as {@link invokeOnMaster}
 */
export async function runOnMaster(access: ClusterAccess, op: Exclude<OperationName, SavedOperation | JoinOperation>, script: string,
    values: Partial<Record<ParameterName, string>> = {}, opts: InvokeOptions = {}): Promise<string> {
    if (!script.includes(`# alicloud-kubeadm operation: ${op} (`)) throw new Error(`operation ${op}: the script given is not that operation's`);
    const content = fillOperation(script, op, values);
    const spec: { timeoutSeconds: number } = OPERATIONS[op];
    return onMaster(access, op, (master) => runOnInstance({
        region: access.region, instanceId: master, script: content, name: `alicloud-kubeadm ${op}`,
        timeoutSeconds: opts.timeoutSeconds ?? spec.timeoutSeconds, sensitiveOutput: opts.sensitive, pollIntervalMs: access.pollIntervalMs,
    }));
}

/** Runs `run` on the first master that can run commands (see {@link ClusterAccess.masterInstanceIds}); `op` names it in errors. */
async function onMaster(access: ClusterAccess, op: string, run: (master: string) => Promise<string>): Promise<string> {
    if (access.masterInstanceIds.length === 0) throw new Error(`operation ${op}: no master instance id given`);
    const refused: string[] = [];
    for (const master of masterOrder(access)) {
        try {
            const out = await run(master);
            access.workingMaster = master;
            return out;
        } catch (err) {
            if (!masterUnusable(err)) throw err;
            const e = err as CommandError;
            refused.push(`${master} (${e.errorCode})`);
            if (refused.length === access.masterInstanceIds.length) {
                if (refused.length === 1) throw err;
                throw new CommandError(`no master could run "${op}": ${refused.join(", ")}. ${e.message}`, e.instanceId, e.errorCode, e.exitCode, e.outputTail);
            }
        }
    }
    throw new Error("unreachable");
}

/**
 * Invokes saved operation `op` on `instanceId` with its parameters (each checked against its pattern first)
 * and returns the output of a successful run.
 * @throws CommandError when the run did not succeed (see src/cloud/cloudAssistant.ts)
 */
export async function invokeOperation(access: Pick<ClusterAccess, "region" | "commands" | "pollIntervalMs">, op: SavedOperation, instanceId: string,
    values: Partial<Record<ParameterName, string>> = {}, opts: InvokeOptions = {}): Promise<string> {
    const spec: { timeoutSeconds: number } = OPERATIONS[op as OperationName];
    const parameters = operationParameters(op, values);
    const run = (commandId: string) => runOnInstance({
        region: access.region, instanceId, commandId, parameters,
        name: `alicloud-kubeadm ${op}`, timeoutSeconds: opts.timeoutSeconds ?? spec.timeoutSeconds, sensitiveOutput: opts.sensitive,
        pollIntervalMs: access.pollIntervalMs, truncatedOutputIsFine: opts.truncatedOutputIsFine,
    });
    try {
        return await run(access.commands[op]);
    } catch (err) {
        if (!(err instanceof OpenApiError) || err.code !== "Parameter.NotMatched") throw err;
        throw new Error(`operation ${op}: the saved command ${access.commands[op]} named in this resource's state is an earlier version's and ` +
            `refuses this version's parameters [${Object.keys(parameters).sort().join(", ")}] (${err.message}). This happens to a resource deleted in the ` +
            "same `pulumi up` that upgrades alicloud-kubeadm (Pulumi deletes with the state it has). Put the resource back in the program, run " +
            "`pulumi up` (its state then names this version's commands), then remove it; nothing was run on the instance.");
    }
}

/**
 * Decodes the gzip+Base64 payload the listing operations print, framed as `@@@ <base64>` on a line of its own
 * (src/shell/ops/lib.sh ak_compact): Cloud Assistant merges stderr into the output, so the frame is read and whatever else
 * was printed is left aside. Output without a frame (a saved command from before it, until `pulumi up` saves the new
 * one) is read whole, as before.
 * @throws Error naming what the operation printed when there is no payload to decode
 */
export function decompress(output: string): string {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const zlib = require("zlib") as typeof import("zlib");
    const framed = [...output.matchAll(/^@@@ ([A-Za-z0-9+/=]*)$/gm)].pop()?.[1];
    try {
        return zlib.gunzipSync(Buffer.from(framed ?? output.trim(), "base64")).toString("utf8");
    } catch {
        const said = output.split("\n").filter((l) => l.trim() !== "" && !l.startsWith("@@@ ")).slice(0, 3).join(" / ").slice(0, 300);
        throw new Error(`the operation printed no compressed payload${said ? `; it printed: ${said}` : " (no output)"}`);
    }
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
    /**
     * The node's pool: its `node-restriction.kubernetes.io/alicloud-kubeadm-pool` label (set by the admission
     * service), or for a Node without it the `alicloud-kubeadm/pool` label it set itself ("" for neither).
     */
    pool: string;
    /** Node creation time (ISO 8601). */
    createdAt: string;
    /** When a removal marked it (annotation `alicloud-kubeadm/removing`, set by the drain); "" when not marked. */
    removing: string;
    /** Its first `InternalIP` address ("" when none, or listed by a list-nodes from before the column). */
    internalIp: string;
    /**
     * Its Ready condition's `lastTransitionTime` as the API server holds it (ISO 8601): since when the Node has been
     * Ready, or not ("" when it has no Ready condition, or listed by a list-nodes from before the column).
     */
    readySince: string;
    /**
     * The drain mark of an upgrade or a resize that cordoned it (annotation `alicloud-kubeadm/upgrading` or
     * `/resizing`, each undone only by what set it): e.g. "upgrading since 2026-…"; "" when neither; "marks not
     * listed" for a list-nodes from before the columns (its Nodes are then never health-repaired).
     */
    heldBy: string;
}

/** Columns list-nodes prints now, and at most those of a saved command of an earlier release (before the Ready-time and drain-mark columns). */
const NODE_COLUMNS = 13;
const NODE_COLUMNS_BEFORE_MARKS = 10;

/**
 * A value as list-nodes prints it, decoded: kubectl's go-template `js` escaper (Go's text/template JSEscape) writes
 * `\\`, `\'` and `\"` for those characters and `\uXXXX` for control characters and `<`, `>`, `&`, `=` (a non-printable
 * rune above U+FFFF gets more hex digits: only that value reads wrong, never the columns). Read as data, character
 * by character: nothing in it is evaluated. A value printed raw by an earlier release's jsonpath reads unchanged
 * unless it holds a backslash.
 */
export function unescapeListed(value: string): string {
    return value.replace(/\\(u[0-9A-Fa-f]{4}|[\\'"])/g, (_m, e: string) => (e.length === 1 ? e : String.fromCharCode(parseInt(e.slice(1), 16))));
}

/** What one list-nodes printed: its Nodes, and the master's clock when it listed them. */
export interface NodeListing {
    nodes: NodeInfo[];
    /**
     * The listing master's clock just before it listed (ms since the epoch, whole seconds): the clock the API server's
     * times (a Ready condition's lastTransitionTime) come from. Undefined from a list-nodes of an earlier release.
     */
    masterNow?: number;
}

/**
 * Parses what list-nodes prints (src/shell/ops/list-nodes.sh): the `@now` line, then per Node: name, provider id, Ready,
 * unschedulable, podCIDR, old pool label, created, removal mark, pool label, InternalIP(s), Ready since, upgrade mark,
 * resize mark, each value escaped (a saved command of an earlier version prints raw values, no `@now` line and maybe
 * fewer columns: the old label then decides the pool, and no IP is known).
 */
export function parseNodeListing(text: string): NodeListing {
    let masterNow: number | undefined;
    const nodes = text.split("\n").filter((l) => l.trim() !== "").flatMap((line): NodeInfo[] => {
        const fields = line.split("\t");
        // No Node is named so (a Node name is a DNS subdomain), and no escaped value holds a tab or a newline.
        if (fields[0] === "@now") {
            const seconds = /^[0-9]{1,12}$/.test(fields[1] ?? "") ? Number(fields[1]) : NaN;
            if (fields.length !== 2 || Number.isNaN(seconds)) throw new Error(`list-nodes: the master's time line ${JSON.stringify(line.slice(0, 80))} is not \`@now<TAB><seconds>\``);
            masterNow = seconds * 1000;
            return [];
        }
        // The values are escaped now; an earlier release's jsonpath printed them raw, where a tab inside a value would
        // shift the columns after it. A line of any other width than list-nodes prints is refused, never read.
        if (fields.length > NODE_COLUMNS || (fields.length > NODE_COLUMNS_BEFORE_MARKS && fields.length < NODE_COLUMNS)) {
            throw new Error(`list-nodes: Node ${JSON.stringify(fields[0])} is listed with ${fields.length} columns, not ${NODE_COLUMNS}: one of its annotations ` +
                "(alicloud-kubeadm/removing, /upgrading, /resizing) holds a tab. fix: look at them (`kubectl get node -o yaml`) and remove the one that " +
                "no alicloud-kubeadm step wrote (`kubectl annotate node <name> alicloud-kubeadm/<mark>-`)");
        }
        const [name, providerId, ready, unschedulable, podCidr, legacyPool, createdAt, removing, pool, addresses, readySince, upgrading, resizing] = fields.map(unescapeListed);
        const heldBy = fields.length < NODE_COLUMNS ? "marks not listed (a list-nodes from before the drain-mark columns)"
            : upgrading ? `upgrading since ${upgrading}` : resizing?.trim() ? `resizing since ${resizing.trim()}` : "";
        return [{
            name, providerId: providerId ?? "", ready: ready === "True", unschedulable: unschedulable === "true", podCidr: podCidr ?? "",
            pool: nodePool({ pool, legacyPool }), createdAt: createdAt ?? "", removing: removing ?? "", internalIp: (addresses ?? "").trim().split(/\s+/)[0] ?? "",
            readySince: (readySince ?? "").trim(), heldBy,
        }];
    });
    return { nodes, masterNow };
}

/** The Nodes of a list-nodes output ({@link parseNodeListing} without the master's time). */
export function parseNodeLines(text: string): NodeInfo[] {
    return parseNodeListing(text).nodes;
}

/** The instance id a provider id names: `<region>.<id>`, or any form ending in `.<id>` or `/<id>` (another region, an `alicloud://` prefix); "" for none. */
export function instanceOfProviderId(providerId: string): string {
    return /(?:^|[./])(i-[A-Za-z0-9]+)$/.exec(providerId)?.[1] ?? "";
}

/**
 * Whether a Node of this name may be the instance's: its name names that instance or none. A kubelet's credential
 * fixes its Node's name (NodeRestriction), while it writes its provider id and addresses itself, so a Node named after
 * another instance is that one's, whatever it claims (docs/security.md#node-names).
 */
export function nameAllowsInstance(nodeName: string, instanceId: string): boolean {
    return [instanceId, ""].includes(instanceOfProviderId(nodeName));
}

/**
 * The Node of an instance: the one named `<region>.<instance-id>` (the name its kubelet's credential fixes); else one
 * whose provider id is that; else one whose provider id names the instance in another form (another region, a prefix:
 * kubelets set up by hand); else one with the instance's private IP whose provider id names no other instance (empty,
 * or a form we cannot read). Matching the IP too is the safe side: an instance believed Node-less is stopped and
 * released without a drain. A Node whose name names another instance is never this one's, whatever provider id and
 * addresses its kubelet registered: NodeRestriction fixes a kubelet's Node name, not what it writes into the Node
 * (docs/upstream.md#provider-id, docs/security.md#node-names).
 */
export function nodeOfInstance(nodes: readonly NodeInfo[], region: string, instance: { instanceId: string; privateIp?: string }): NodeInfo | undefined {
    const id = instance.instanceId;
    const want = providerIdOf(region, id);
    const mayBe = nodes.filter((n) => nameAllowsInstance(n.name, id));
    return mayBe.find((n) => n.name === want)
        ?? mayBe.find((n) => n.providerId === want)
        ?? mayBe.find((n) => instanceOfProviderId(n.providerId) === id)
        ?? (instance.privateIp ? mayBe.find((n) => n.internalIp === instance.privateIp && instanceOfProviderId(n.providerId) === "") : undefined);
}

/** Every Node, optionally filtered by a label selector (e.g. `kubernetes.io/os=linux`). */
export async function listNodes(access: ClusterAccess, selector = ""): Promise<NodeInfo[]> {
    return (await listNodesAt(access, selector)).nodes;
}

/** {@link listNodes}, with the listing master's clock (one call). */
export async function listNodesAt(access: ClusterAccess, selector = ""): Promise<NodeListing> {
    return parseNodeListing(decompress(await invokeOnMaster(access, "list-nodes", { selector })));
}

/**
 * The Nodes of one pool, by {@link NodeInfo.pool}: the label the admission service set, or on a Node joined before
 * it did, the node's own (one listing; a label selector cannot say "this label, else that one").
 */
export async function poolNodes(access: ClusterAccess, pool: string): Promise<NodeInfo[]> {
    return (await listNodes(access)).filter((n) => n.pool === pool);
}

/** The number of pods that are not DaemonSet pods, per node name (the values come escaped: read back as data). */
export async function workloadPods(access: ClusterAccess): Promise<Map<string, number>> {
    const counts = new Map<string, number>();
    for (const line of decompress(await invokeOnMaster(access, "pod-owners")).split("\n")) {
        const [node, kind] = line.split("\t").map(unescapeListed);
        if (node && kind !== "DaemonSet") {
            counts.set(node, (counts.get(node) ?? 0) + 1);
        }
    }
    return counts;
}

/**
 * Cordons and drains a Node through the eviction API (`force: "delete"`: deletes the pods instead, PodDisruptionBudgets
 * bypassed), marking it as `mark`'s (default `removing`). Its exit status decides: a drain that succeeded but printed
 * more than Cloud Assistant keeps is a success (the output is only quoted when it fails).
 */
export async function drainNode(access: ClusterAccess, node: string, opts: { timeoutSeconds: number; force: boolean | "delete"; skipWaitSeconds: number; mark?: DrainMark }): Promise<void> {
    await invokeOnMaster(access, "drain", { node, timeout: String(opts.timeoutSeconds), force: String(opts.force), skipWait: String(opts.skipWaitSeconds), mark: opts.mark ?? "removing" },
        { timeoutSeconds: opts.timeoutSeconds + 60, truncatedOutputIsFine: true });
}

/**
 * Whose cordon a drain leaves (annotation `alicloud-kubeadm/<mark>`): a removal's (`removing`: the node is on its way out,
 * PoolCapacity finishes or undoes it), a version upgrade's (`upgrading`: the node comes back once its kubelet moved) or a
 * master resize's (`resizing`: the master comes back once it runs as its new instance type). Each is undone only by what
 * set it. Default of {@link drainNode}: `removing`.
 */
export type DrainMark = "removing" | "upgrading" | "resizing";

/** Uncordons a Node that a removal (or, with `mark`, an upgrade) marked and cordoned, and takes the mark off (a Node not so marked is left alone). */
export async function uncordonNode(access: ClusterAccess, node: string, mark: DrainMark = "removing"): Promise<"uncordoned" | "not-marked"> {
    const out = await invokeOnMaster(access, "uncordon", { node, mark });
    return out.includes("not-marked") ? "not-marked" : "uncordoned";
}

/** Deletes Node objects (ones already gone are fine): one command for as many names as its parameter holds. */
export async function deleteNodes(access: ClusterAccess, nodes: readonly string[]): Promise<void> {
    for (const chunk of nameChunks(nodes)) await invokeOnMaster(access, "delete-node", { nodes: chunk });
}

/** Node names as space-separated lists of at most {@link MAX_NODES_PARAMETER_BYTES} each (one parameter's worth). */
function nameChunks(nodes: readonly string[]): string[] {
    const chunks: string[][] = [];
    for (const name of nodes) {
        const last = chunks[chunks.length - 1];
        if (last && [...last, name].join(" ").length <= MAX_NODES_PARAMETER_BYTES) last.push(name);
        else chunks.push([name]);
    }
    return chunks.map((c) => c.join(" "));
}

/**
 * Puts the rollout's taint (`OUTDATED_TAINT=<pool>:PreferNoSchedule`) on the Nodes named (one gone meanwhile is
 * skipped), or with `nodes` empty on none. Returns how many were tainted.
 */
export async function taintOutdated(access: ClusterAccess, pool: string, nodes: readonly string[]): Promise<number> {
    let tainted = 0;
    for (const chunk of nameChunks(nodes)) {
        tainted += Number(/^tainted (\d+)$/m.exec(await invokeOnMaster(access, "outdated-taint", { pool, taintMode: "add", outdated: chunk }))?.[1] ?? 0);
    }
    return tainted;
}

/**
 * Puts `SCALE_DOWN_DISABLED=true` with the rollout's mark (`SCALE_DOWN_HELD=<pool>`) on the Nodes named (an
 * autoscaled pool's current Nodes while its rollout runs), so the Cluster Autoscaler does not scale them down; a Node
 * gone meanwhile, or whose annotation somebody else set, is skipped. Returns how many are held.
 */
export async function holdScaleDown(access: ClusterAccess, pool: string, nodes: readonly string[]): Promise<number> {
    let held = 0;
    for (const chunk of nameChunks(nodes)) {
        held += Number(/^held (\d+)$/m.exec(await invokeOnMaster(access, "outdated-taint", { pool, taintMode: "hold", outdated: chunk }))?.[1] ?? 0);
    }
    return held;
}

/**
 * The rollout of `pool` is over (or there is none): removes its taint from every Node whose taint names the pool, and
 * the scale-down hold from every Node the pool's rollout held. Returns how many Nodes lost each.
 */
export async function clearOutdatedTaint(access: ClusterAccess, pool: string): Promise<{ cleared: number; released: number }> {
    const out = await invokeOnMaster(access, "outdated-taint", { pool, taintMode: "clear", outdated: "" });
    return { cleared: Number(/^cleared (\d+)$/m.exec(out)?.[1] ?? 0), released: Number(/^released (\d+)$/m.exec(out)?.[1] ?? 0) };
}

/** Removes the etcd member named `member` or with peer address `peerIp` (either may be "") through the etcd of master `etcdNode`. */
export async function removeEtcdMember(access: ClusterAccess, which: { member: string; peerIp: string }, etcdNode: string): Promise<"removed" | "absent"> {
    const out = await invokeOnMaster(access, "etcd-member-remove", { member: which.member, peerIp: which.peerIp, etcdNode });
    return out.includes("member-absent") ? "absent" : "removed";
}

/** Runs `kubeadm reset` (and its clean-up) on the node itself. */
export async function resetNode(access: Pick<ClusterAccess, "region" | "commands" | "pollIntervalMs">, instanceId: string): Promise<void> {
    await invokeOperation(access, "reset", instanceId);
}

/**
 * Creates the bootstrap token with id `tokenId` on a master, which makes its secret half and answers it sealed
 * to a key made for this one call (idempotent: a token with this id already there is read back). `script` is
 * `renderOperation("token-create")`, run once (RunCommand), never a saved command.
 * @returns the whole token `id.secret` and whether it was made now
 */
export async function createToken(access: ClusterAccess, script: string, tokenId: string, ttl: string, description: string): Promise<{ token: string; status: "created" | "exists" }> {
    const recipient = newRecipient();
    const out = await runOnMaster(access, "token-create", script, { tokenId, ttl, description, recipient: recipient.publicKey }, { sensitive: true });
    const [status, sealed] = out.trim().split("\n").map((l) => l.trim());
    const token = recipient.open(sealed ?? "");
    if (!TOKEN_PATTERN.test(token) || !token.startsWith(`${tokenId}.`)) throw new Error(`the master answered token-create with something that is not bootstrap token ${tokenId}`);
    return { token, status: status === "exists" ? "exists" : "created" };
}

/** Deletes the bootstrap token with id `tokenId` (one already gone is fine). */
export async function deleteToken(access: ClusterAccess, tokenId: string): Promise<"deleted" | "already gone"> {
    const out = await invokeOnMaster(access, "token-delete", { tokenId });
    return out.includes("already gone") ? "already gone" : "deleted";
}

/** Secrets from a master for one control-plane join (what join-secrets answers, opened). */
export interface JoinSecrets {
    token: string;
    certificateKey: string;
    /**
     * The masters' whole EncryptionConfiguration (every provider and key, in order), gzip + Base64, passed on to
     * the member as is; absent when Secrets are not encrypted at rest.
     */
    encryptionConfig?: string;
}

/**
 * A fresh certificate key and a 30-minute token from a master, with the masters' whole encryption config when
 * Secrets are encrypted at rest, answered sealed to a key made for this one call. `script` is
 * `renderOperation("join-secrets")`, run once (RunCommand), never a saved command.
 */
export async function joinSecrets(access: ClusterAccess, script: string): Promise<JoinSecrets> {
    const recipient = newRecipient();
    return parseJoinSecrets(recipient.open(await runOnMaster(access, "join-secrets", script, { recipient: recipient.publicKey }, { sensitive: true })));
}

/**
 * Reads join-secrets' opened answer `<token> <certificate key> <encryption config | ->`; errors never quote it.
 * The encryption config must be gzip + Base64 of an EncryptionConfiguration that fits a sealed channel message.
 */
export function parseJoinSecrets(answer: string): JoinSecrets {
    const [token, certificateKey, encryption] = answer.split(" ");
    if (!TOKEN_PATTERN.test(token ?? "") || !CERTIFICATE_KEY_PATTERN.test(certificateKey ?? "")) {
        throw new Error("master did not answer a bootstrap token and a certificate key (kubeadm upload-certs / token create failed); check kubeadm on the master");
    }
    if (encryption === undefined || encryption === "-") return { token, certificateKey };
    const problem = "master answered an encryption config that is not an EncryptionConfiguration in gzip + Base64 of at most " +
        `${MAX_ENCRYPTION_CONFIG_GZ_B64} characters; check /etc/kubernetes/pki/alicloud-kubeadm-encryption.yaml (or the file kube-apiserver's --encryption-provider-config names) there`;
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encryption) || encryption.length > MAX_ENCRYPTION_CONFIG_GZ_B64) throw new Error(problem);
    let text: string;
    try {
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        text = (require("zlib") as typeof import("zlib")).gunzipSync(Buffer.from(encryption, "base64")).toString("utf8");
    } catch {
        throw new Error(problem);
    }
    if (!text.includes("EncryptionConfiguration")) throw new Error(problem);
    return { token, certificateKey, encryptionConfig: encryption };
}

/**
 * Sends a secret to an instance (src/cloud/channel.ts): it makes a one-use key pair and answers the public key
 * (channel-open), then opens the secret sealed to it and keeps it root-only on tmpfs (channel-receive) for the
 * join command invoked next with the returned channel id, which reads and deletes it.
 * @returns the channel id to give the join command
 */
export async function sendSecret(access: Pick<ClusterAccess, "region" | "commands" | "pollIntervalMs">, instanceId: string, secret: string): Promise<string> {
    const channel = newChannelId();
    const publicKey = (await invokeOperation(access, "channel-open", instanceId, { channel })).trim();
    await invokeOperation(access, "channel-receive", instanceId, { channel, sealed: seal(publicKey, secret) });
    return channel;
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
