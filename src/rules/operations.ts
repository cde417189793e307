// The node operations: what runs on a master or a node over Cloud Assistant, as saved commands
// (`alicloud.ecs.Command`, run with InvokeCommand) or one-off scripts (RunCommand). One table says which
// operations exist, where they run, and which per-node parameters each takes; every parameter value is
// checked against its pattern before it reaches a shell (Cloud Assistant substitutes `{{name}}` verbatim).
// The scripts are src/shell/ops/<name>.sh; src/shell/render.ts renders them, the NodeCommands component
// saves them, src/cloud/operations.ts invokes them.
import { CHANNEL_ID_PATTERN, CHANNEL_KEY_PATTERN, GO_DURATION_ERE, SEALED_PATTERN, STACK_CREDENTIAL_PATTERN, TOKEN_ID_PATTERN } from "./formats";
import { formatTaint, type Taint } from "./labels";

/** Where the attach script logs on a node (src/shell/attach_node.sh): the first place to look when a join fails. */
export const ATTACH_LOG = "/var/log/alicloud-kubeadm/attach-node.log";

/**
 * The most bytes of labels and taints together (`key=value,...` plus `key[=value]:Effect,...`) an existing node
 * joined over Cloud Assistant may carry. They are the attach command's parameters, and an invocation's content
 * and parameters together are at most 24 KB after Base64 (docs/upstream.md#cas-content-limit); the saved
 * attach command may take 18 KB of that, which leaves 6 KB of Base64, 4.5 KB of JSON parameters: 4096 bytes of
 * values with room for the JSON around them.
 */
export const MAX_NODE_PARAMETER_BYTES = 4096;
/**
 * The most bytes of labels and taints together in a node's userdata (pools, existing nodes in `auto` mode or
 * over SSH). ECS takes 32 KB of userdata; the attach script without them stays below 24 KB (test/rules.test.ts).
 */
export const MAX_USERDATA_LABELS_TAINTS_BYTES = 8192;

/** `key=value,...` and `key[=value]:Effect,...`: a node's labels and taints as the attach script receives them. */
export function nodeFlagTexts(labels: Readonly<Record<string, string>>, taints: ReadonlyArray<Taint>): { labels: string; taints: string } {
    return { labels: Object.entries(labels).map(([k, v]) => `${k}=${v}`).join(","), taints: taints.map(formatTaint).join(",") };
}

/**
 * Checks that a node's labels and taints fit where they travel: `parameters` (the Cloud Assistant attach command,
 * {@link MAX_NODE_PARAMETER_BYTES}) or `userdata` ({@link MAX_USERDATA_LABELS_TAINTS_BYTES}). Reported at
 * `labels` or `taints`, whichever is larger, before anything is registered.
 */
export function nodeFlagsSizeProblems(labels: Readonly<Record<string, string>>, taints: ReadonlyArray<Taint>, via: "parameters" | "userdata",
    report: (path: string, reason: string) => void): void {
    const text = nodeFlagTexts(labels, taints);
    const l = new TextEncoder().encode(text.labels).length;
    const t = new TextEncoder().encode(text.taints).length;
    const limit = via === "parameters" ? MAX_NODE_PARAMETER_BYTES : MAX_USERDATA_LABELS_TAINTS_BYTES;
    if (l + t > limit) {
        const where = via === "parameters"
            ? "the Cloud Assistant attach command's parameters (an invocation holds at most 24 KB after Base64, the command included)"
            : "the node's userdata (ECS takes at most 32 KB, the attach script included)";
        report(l >= t ? "labels" : "taints", `labels (${l} bytes as key=value,...) and taints (${t} bytes as key[=value]:Effect,...) make ${l + t} bytes; ` +
            `they travel in ${where}, which leaves room for ${limit}: remove labels or taints, or shorten them`);
    }
}

/** The most bytes of Node names one delete-node takes (a batch of removals: 100 names of ~35 bytes fit; more are split). */
export const MAX_NODES_PARAMETER_BYTES = 4096;

/** A parameter of an operation: the shell variable it becomes and what a value must look like. */
export interface OperationParameter {
    /** `AK_<NAME>` in the script. */
    variable: string;
    pattern: RegExp;
    /** What the pattern means, for the error. */
    what: string;
    /** The most bytes a value may have, when the pattern does not say. */
    maxBytes?: number;
}

/** Every parameter any operation takes (Cloud Assistant allows 10 per invocation and 20 per command). */
export const OPERATION_PARAMETERS = {
    node: { variable: "AK_NODE", pattern: /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/, what: "a Node name (DNS subdomain)" },
    nodes: { variable: "AK_NODES", pattern: /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?( [a-z0-9]([-a-z0-9.]*[a-z0-9])?)*$/, what: "Node names separated by single spaces", maxBytes: MAX_NODES_PARAMETER_BYTES },
    selector: { variable: "AK_SELECTOR", pattern: /^[A-Za-z0-9./_=,!-]{0,512}$/, what: "a label selector (key=value,...) or empty" },
    timeout: { variable: "AK_TIMEOUT", pattern: /^[1-9][0-9]{0,5}$/, what: "a number of seconds" },
    force: { variable: "AK_FORCE", pattern: /^(true|false|delete)$/, what: "true, false or delete (pods deleted, not evicted: PodDisruptionBudgets bypassed)" },
    skipWait: { variable: "AK_SKIP_WAIT", pattern: /^[0-9]{1,6}$/, what: "a number of seconds (0: wait for every pod)" },
    mark: { variable: "AK_MARK", pattern: /^(removing|upgrading|resizing)$/, what: "removing, upgrading or resizing (whose cordon it is: a removal's, a version upgrade's or a master resize's)" },
    member: { variable: "AK_MEMBER", pattern: /^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?)?$/, what: "an etcd member name (the master's Node name), or empty" },
    peerIp: { variable: "AK_PEER_IP", pattern: /^((25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9])(\.(25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9])){3})?$/, what: "an IPv4 address (the master's etcd peer address), or empty" },
    etcdNode: { variable: "AK_ETCD_NODE", pattern: /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/, what: "the Node name of a master whose etcd is healthy" },
    tokenId: { variable: "AK_TOKEN_ID", pattern: TOKEN_ID_PATTERN, what: "a bootstrap token id [a-z0-9]{6}" },
    ttl: { variable: "AK_TTL", pattern: new RegExp(GO_DURATION_ERE), what: "a Go duration (0: never expires)" },
    description: { variable: "AK_DESCRIPTION", pattern: /^[A-Za-z0-9 ._-]{0,200}$/, what: "a description of letters, digits, spaces and ._-" },
    recipient: { variable: "AK_RECIPIENT", pattern: CHANNEL_KEY_PATTERN, what: "the channel's X25519 public key (SPKI DER, Base64)" },
    channel: { variable: "AK_CHANNEL", pattern: CHANNEL_ID_PATTERN, what: "a channel id (32 hex digits)" },
    sealed: { variable: "AK_SEALED", pattern: SEALED_PATTERN, what: "a sealed secret (src/cloud/channel.ts)" },
    credential: { variable: "AK_CREDENTIAL", pattern: STACK_CREDENTIAL_PATTERN, what: "a stack credential name alicloud-kubeadm-stack-<8 of [a-z0-9]>" },
    labels: { variable: "AK_NODE_LABELS", pattern: new RegExp(`^[A-Za-z0-9./_=,-]{0,${MAX_NODE_PARAMETER_BYTES}}$`), what: "node labels key=value,..." },
    taints: { variable: "AK_NODE_TAINTS", pattern: new RegExp(`^[A-Za-z0-9./_=,:-]{0,${MAX_NODE_PARAMETER_BYTES}}$`), what: "node taints key[=value]:Effect,..." },
    pool: { variable: "AK_POOL", pattern: /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, what: "a pool name (DNS label)" },
    taintMode: { variable: "AK_TAINT_MODE", pattern: /^(add|hold|clear)$/, what: "add (taint the Nodes named), hold (annotate the Nodes named scale-down-disabled) or clear (untaint and release every Node of the pool)" },
    outdated: { variable: "AK_OUTDATED", pattern: /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?( [a-z0-9]([-a-z0-9.]*[a-z0-9])?)*)?$/, what: "Node names separated by single spaces, or empty", maxBytes: MAX_NODES_PARAMETER_BYTES },
    lines: { variable: "AK_LINES", pattern: /^[1-9][0-9]{0,3}$/, what: "a number of lines" },
    upgradeStep: { variable: "AK_UPGRADE_STEP", pattern: /^(status|kubeadm|plan|apply|node|kubelet|control-plane)$/, what: "an upgrade step (status, kubeadm, plan, apply, node, kubelet, control-plane)" },
    step: { variable: "AK_STEP", pattern: /^(status|fetch|stop|restore|start|leases)$/, what: "a restore step (status, fetch, stop, restore, start, leases)" },
    restoreId: { variable: "AK_RESTORE_ID", pattern: /^[0-9a-f]{16}$/, what: "a restore id (16 hex digits)" },
    discardCa: { variable: "AK_DISCARD_CA", pattern: /^([0-9a-f]{64})?$/, what: "the SHA-256 (64 hex digits) of the CA file of a new stack's own cluster that a restore discards, or empty" },
} as const satisfies Record<string, OperationParameter>;

export type ParameterName = keyof typeof OPERATION_PARAMETERS;

/** One operation: where it runs, its parameters, and how long Cloud Assistant lets it run by default. */
export interface Operation {
    /** `master`: a master with /etc/kubernetes/admin.conf; `node`: the node itself. */
    on: "master" | "node";
    parameters: readonly ParameterName[];
    /** The saved command's default `Timeout`, seconds (an invocation may set its own). */
    timeoutSeconds: number;
    /** One line for the ECS console's command description. */
    description: string;
    /** Saved as an `alicloud.ecs.Command` (true), or only rendered for a one-off RunCommand (false). */
    saved: boolean;
    /**
     * `join` operations are saved with this cluster's own material baked in — the attach script
     * (src/shell/attach_node.sh) with its join material, the upgrade step (src/shell/upgrade.sh) with its target
     * version —; they are saved where that material is known, not with the other operations.
     */
    join?: boolean;
}

/** Every node operation, by name; the script is src/shell/ops/<name>.sh. */
export const OPERATIONS = {
    "list-nodes": { on: "master", parameters: ["selector"], timeoutSeconds: 120, saved: true, description: "list Nodes (name, provider id, Ready, pool), compact" },
    "pod-owners": { on: "master", parameters: [], timeoutSeconds: 120, saved: true, description: "list running pods' node and owner kind, compact" },
    "drain": { on: "master", parameters: ["node", "timeout", "force", "skipWait", "mark"], timeoutSeconds: 660, saved: true, description: "mark (as a removal's, an upgrade's or a resize's), cordon and drain a Node through the eviction API" },
    "uncordon": { on: "master", parameters: ["node", "mark"], timeoutSeconds: 60, saved: true, description: "uncordon a Node an unfinished removal, upgrade or resize marked and cordoned" },
    "outdated-taint": { on: "master", parameters: ["pool", "taintMode", "outdated"], timeoutSeconds: 120, saved: true, description: "put the rollout's PreferNoSchedule taint on a pool's outdated Nodes, hold its current Nodes from autoscaler scale-down, or clear both from the pool" },
    "cluster-validate": { on: "master", parameters: [], timeoutSeconds: 60, saved: true, description: "rollout validation (read-only): each Node's Ready, kube-system and kube-flannel Deployments' available replicas and pods not Ready" },
    "delete-node": { on: "master", parameters: ["nodes"], timeoutSeconds: 120, saved: true, description: "delete Node objects (gone ones are fine)" },
    "etcd-member-remove": { on: "master", parameters: ["member", "peerIp", "etcdNode"], timeoutSeconds: 120, saved: true, description: "remove a master's etcd member (by name or peer address) through a healthy master's etcd" },
    "etcd-health": { on: "master", parameters: ["etcdNode"], timeoutSeconds: 60, saved: true, description: "list the etcd members and each one's health through a master's etcd (quorum checks)" },
    "etcd-backup-now": { on: "master", parameters: [], timeoutSeconds: 900, saved: true, description: "take this master's etcd backup now (only the etcd leader's master does); print the outcome" },
    "reset": { on: "node", parameters: [], timeoutSeconds: 300, saved: true, description: "kubeadm reset and the CNI state it leaves behind" },
    // token-create and join-secrets hand out credentials sealed to a key their caller chooses: one-off (RunCommand),
    // never saved, so only a caller who may run anything on the masters can run them (docs/security.md#cloud-assistant-rights).
    "token-create": { on: "master", parameters: ["tokenId", "ttl", "description", "recipient"], timeoutSeconds: 60, saved: false, description: "create a bootstrap token (secret made on the master, answered sealed; idempotent)" },
    "token-delete": { on: "master", parameters: ["tokenId"], timeoutSeconds: 60, saved: true, description: "delete a bootstrap token (gone is fine)" },
    "join-secrets": { on: "master", parameters: ["recipient"], timeoutSeconds: 120, saved: false, description: "a fresh certificate key and a 30-minute token for a control-plane join, sealed" },
    "channel-open": { on: "node", parameters: ["channel"], timeoutSeconds: 60, saved: true, description: "make a one-use key pair for a secret sent to this instance; print its public key" },
    "channel-receive": { on: "node", parameters: ["channel", "sealed"], timeoutSeconds: 60, saved: true, description: "open a secret sealed to the channel's key; keep it root-only on tmpfs for the join" },
    // The restore sends what opens one backup (sealed, on the channel) and replaces the cluster's etcd: one-off, never saved.
    "etcd-restore": { on: "master", parameters: ["step", "restoreId", "node", "peerIp", "channel", "discardCa"], timeoutSeconds: 1800, saved: false, description: "one step of an etcd restore onto this master (npm run restore)" },
    "init-status": { on: "master", parameters: [], timeoutSeconds: 30, saved: false, description: "kubeadm init status of master 0, and the CA certificate once done" },
    "stack-credential": { on: "master", parameters: ["credential", "recipient"], timeoutSeconds: 120, saved: false, description: "the stack's service-account token (cluster-admin), sealed" },
    "stack-credential-revoke": { on: "master", parameters: ["credential"], timeoutSeconds: 60, saved: false, description: "delete one stack credential (revokes its token)" },
    "doctor-nodes": { on: "master", parameters: [], timeoutSeconds: 60, saved: true, description: "doctor (read-only): Nodes and their conditions" },
    "doctor-autoscaler": { on: "master", parameters: [], timeoutSeconds: 60, saved: true, description: "doctor (read-only): Cluster Autoscaler deployment, status and log" },
    "doctor-join": { on: "master", parameters: [], timeoutSeconds: 60, saved: true, description: "doctor (read-only): bootstrap tokens, /readyz, etcd members" },
    "doctor-certs": { on: "master", parameters: [], timeoutSeconds: 60, saved: true, description: "doctor (read-only): certificate expiry and the renewal timer on a master" },
    "doctor-bootstrap-log": { on: "node", parameters: ["lines"], timeoutSeconds: 60, saved: true, description: "doctor (read-only): a node's bootstrap log and markers" },
    "upgrade-status": { on: "master", parameters: [], timeoutSeconds: 120, saved: true, description: "upgrades (read-only): each API server's version and /readyz, each Node's kubelet, the add-ons, deprecated APIs in use" },
    "static-pods": { on: "master", parameters: ["node"], timeoutSeconds: 60, saved: true, description: "upgrades (read-only): a master's control-plane static pods as its kubelet runs them and as their mirror pods show them" },
    "attach": { on: "node", parameters: ["labels", "taints", "channel"], timeoutSeconds: 1800, saved: true, join: true, description: "join an existing instance as a worker node" },
    "control-plane-join": { on: "node", parameters: ["channel"], timeoutSeconds: 1800, saved: true, join: true, description: "join a master to the control plane" },
    // Saved with the cluster's target version and package sources baked in (src/shell/upgrade.sh), like the joins.
    "upgrade": { on: "node", parameters: ["upgradeStep"], timeoutSeconds: 1800, saved: true, join: true, description: "one step of moving this master or node to the configured Kubernetes version (kubeadm upgrade, packages, kubelet)" },
} as const satisfies Record<string, Operation>;

export type OperationName = keyof typeof OPERATIONS;
/** The operations saved with a cluster's own material (the attach script with its join material; the upgrade step with its target version). */
export type JoinOperation = "attach" | "control-plane-join" | "upgrade";
/** The operations saved as commands by the NodeCommands component (every saved one but the joins). */
export type SavedOperation = Exclude<{ [K in OperationName]: (typeof OPERATIONS)[K]["saved"] extends true ? K : never }[OperationName], JoinOperation>;

/** The saved commands of a cluster: operation → `alicloud.ecs.Command` id. */
export type NodeCommandIds = Record<SavedOperation, string>;

/** The operations the NodeCommands component saves, in table order. */
export const SAVED_OPERATIONS = (Object.keys(OPERATIONS) as OperationName[])
    .filter((op) => OPERATIONS[op].saved && !(OPERATIONS[op] as Operation).join) as SavedOperation[];

/** Why `value` cannot be given as parameter `name`, or undefined when it can. */
export function parameterProblem(name: ParameterName, value: string): string | undefined {
    const p: OperationParameter = OPERATION_PARAMETERS[name];
    if (p.maxBytes !== undefined && new TextEncoder().encode(value).length > p.maxBytes) return `parameter ${name} must be at most ${p.maxBytes} bytes`;
    return p.pattern.test(value) ? undefined : `parameter ${name} must be ${p.what}`;
}

/**
 * The parameters of one invocation of `op`, every value checked: exactly the operation's parameters.
 * @param partial Leave out parameters without a value (a one-off operation filled in later). Default false.
 * @throws Error naming the operation and the parameter (never the value: it may be a secret)
 */
export function operationParameters(op: OperationName, values: Partial<Record<ParameterName, string>>, partial = false): Record<string, string> {
    const declared: readonly ParameterName[] = OPERATIONS[op].parameters;
    const out: Record<string, string> = {};
    for (const name of declared) {
        const value = values[name];
        if (value === undefined && partial) continue;
        if (value === undefined) throw new Error(`operation ${op}: parameter ${name} is missing`);
        // "\0template": left as `{{name}}` by the renderer, filled in at run time (checked then).
        const problem = value === "\u0000template" ? undefined : parameterProblem(name, value);
        if (problem) throw new Error(`operation ${op}: ${problem}`);
        out[name] = value;
    }
    const extra = Object.keys(values).filter((k) => !declared.includes(k as ParameterName));
    if (extra.length > 0) throw new Error(`operation ${op} takes no parameter ${extra.join(", ")}`);
    return out;
}

/**
 * Fills the `{{name}}` parameters a one-off operation was rendered with (src/shell/render.ts renderOperation
 * leaves those it was not given), each value checked first and single-quoted for the shell.
 * @throws Error naming the operation and the parameter, never the value
 */
export function fillOperation(script: string, op: OperationName, values: Partial<Record<ParameterName, string>>): string {
    const checked = operationParameters(op, values, true);
    let out = script;
    for (const [name, value] of Object.entries(checked)) out = out.split(`'{{${name}}}'`).join(`'${value.replace(/'/g, `'\\''`)}'`);
    return out;
}
