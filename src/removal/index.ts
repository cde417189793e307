/**
 * The removal core: one safe, resumable sequence for taking any node out of the cluster
 * (DESIGN.md §1). Every step is idempotent — a target already gone counts as done, with a warning —
 * and retried on transient errors; a step that fails stops that node's removal with an error naming
 * the instance, the step and the fix, so nothing later runs (no release of an undrained node).
 * Running the same `pulumi up` / `destroy` again resumes.
 *
 *   drain → clear userdata (existing nodes) → kubeadm reset on the node → delete Node
 *         → ESS RemoveInstances / DetachInstances (pool members) → delete a left-over pod route
 */
import { CommandError, runOnInstance } from "../cloud/cloudAssistant";
import { getNodes, kubectl, kubectlCommand, providerIdOf, shq, POOL_LABEL } from "../cloud/kubectl";
import { callApi, OpenApiError } from "../cloud/openapi";

/** How the node came into the cluster; decides which steps apply. */
export type NodeKind = "existing" | "scale-out" | "autoscaled" | "control-plane";

/** One node to remove. */
export interface RemovalTarget {
    instanceId: string;
    kind: NodeKind;
    /** ESS group of pool members (`scale-out`, `autoscaled`). */
    scalingGroupId?: string;
    /** For ESS members: `release` = RemoveInstances (instance released, desired capacity decreased),
     * `keep` = DetachInstances (instance stays). Default `release`. */
    essAction?: "release" | "keep";
}

/** Where and how to remove. */
export interface RemovalOptions {
    region: string;
    /** Master that runs kubectl (master 0). */
    masterInstanceId: string;
    /** Route table holding the pod routes; when set, a route left behind for the instance is deleted. */
    routeTableId?: string;
    /** `kubectl drain --timeout`, seconds. Default 600. */
    drainTimeoutSeconds?: number;
    /** Drain with `--force` (deletes pods without a controller). Default false. */
    force?: boolean;
    /** Nodes removed at once by {@link removeNodes}. Default 5. */
    concurrency?: number;
    /** First Cloud Assistant poll delay, ms. Default 1000 (tests lower it). */
    pollIntervalMs?: number;
    /** Progress for the Pulumi log (`draining i-…`). */
    log?: (message: string) => void;
    /** Warnings for the Pulumi log (a step skipped because its target is gone). */
    warn?: (message: string) => void;
}

/** The steps, in order. */
export const REMOVAL_STEPS = ["drain", "clear-userdata", "reset", "delete-node", "leave-scaling-group", "delete-route"] as const;
export type RemovalStep = (typeof REMOVAL_STEPS)[number];

/** What happened to one node. */
export interface RemovalReport {
    instanceId: string;
    /** Steps that acted. */
    done: RemovalStep[];
    /** Steps skipped because their target was already gone or does not apply, with the reason. */
    skipped: Array<{ step: RemovalStep; reason: string }>;
}

/** A step failed: removal of that node stopped there. */
export class RemovalError extends Error {
    constructor(
        public readonly instanceId: string,
        public readonly step: RemovalStep,
        public readonly cause: Error,
        fix: string,
    ) {
        super(`removing ${instanceId}: step "${step}" failed: ${cause.message}\n  fix: ${fix}\n  ` +
            "Later steps did not run for this node; run the same `pulumi up` / `pulumi destroy` again to resume.");
        this.name = "RemovalError";
    }
}

/** The no-op userdata left on a removed existing node, so a reboot or re-image cannot rejoin it. */
export const CLEARED_USERDATA = "#!/bin/sh\n# alicloud-kubeadm: this node was removed from its cluster; its join userdata was cleared.\n";

/** Run on the node by the reset step: `kubeadm reset` plus what reset leaves behind (reference §2.6). */
export function resetScript(): string {
    return [
        "set -u",
        "if command -v kubeadm >/dev/null 2>&1; then kubeadm reset -f; else echo 'kubeadm not installed: nothing to reset'; fi",
        "rm -rf /etc/cni/net.d /var/lib/cni/flannel /run/flannel",
        "for link in cni0 flannel.1; do ip link show \"$link\" >/dev/null 2>&1 && ip link delete \"$link\"; done",
        "if command -v iptables >/dev/null 2>&1; then iptables -F && iptables -t nat -F && iptables -t mangle -F && iptables -X; fi",
        "if command -v ipvsadm >/dev/null 2>&1; then ipvsadm --clear; fi",
        "rm -f /var/lib/alicloud-kubeadm/join.done /var/lib/alicloud-kubeadm/init.done",
        "echo reset-complete",
    ].join("\n");
}

/** Cloud Assistant codes meaning the node cannot run the reset: skip it, the Kubernetes side still completes. */
const NODE_UNREACHABLE = ["InstanceNotRunning", "InvalidInstance.NotMatch", "InvalidInstance.NotFound", "InvalidInstanceId.NotFound",
    "InstanceNotExists", "InstanceReleased", "ClientNotRunning", "ClientNotResponse", "ClientNeedUpgrade"];
/** ESS says "busy" while an activity runs: wait and retry (ESS allows one activity at a time). */
const ESS_BUSY = ["ScalingActivityInProgress", "IncorrectScalingGroupStatus", "InvalidOperation.Conflict"];
const NOT_FOUND = /NotFound$|^InstanceNotExists$|^InstanceReleased$/;

/** A node to remove plus what the caller already knows (saves a lookup per node). */
export interface KnownTarget extends RemovalTarget {
    /** The Node's name when known; `null` when known to be absent. Default: looked up by provider id. */
    nodeName?: string | null;
    /** Whether that Node is Ready (a NotReady node's pods never finish terminating). Default: looked up. */
    nodeReady?: boolean;
}

/**
 * Removes a control-plane member's etcd member from master 0, for when `kubeadm reset` could not run on
 * the member itself (stopped, released, no agent): otherwise the dead member keeps counting toward quorum.
 * The etcd member name is the node name (kubeadm's nodeRegistration.name).
 */
export function etcdMemberRemoveScript(master0NodeName: string, memberName: string): string {
    const etcdctl = `kubectl --kubeconfig=/etc/kubernetes/admin.conf -n kube-system exec ${shq(`etcd-${master0NodeName}`)} -- etcdctl ` +
        "--endpoints=https://127.0.0.1:2379 --cacert=/etc/kubernetes/pki/etcd/ca.crt " +
        "--cert=/etc/kubernetes/pki/etcd/healthcheck-client.crt --key=/etc/kubernetes/pki/etcd/healthcheck-client.key";
    return [
        "#!/bin/bash",
        "set -euo pipefail",
        `id=$(${etcdctl} member list | awk -F', ' -v n=${shq(memberName)} '$3 == n {print $1}')`,
        'if [ -z "$id" ]; then echo member-absent; exit 0; fi',
        `${etcdctl} member remove "$id"`,
        "echo member-removed",
    ].join("\n");
}

/** Per-node bookkeeping shared by the steps. */
interface NodeRemoval {
    target: KnownTarget;
    report: RemovalReport;
    log: (message: string) => void;
    warn: (message: string) => void;
    skip: (step: RemovalStep, reason: string) => void;
    step: (name: RemovalStep, fix: string, run: () => Promise<void>) => Promise<void>;
}

function begin(target: KnownTarget, opts: RemovalOptions): NodeRemoval {
    const id = target.instanceId;
    const log = opts.log ?? (() => undefined);
    const warn = opts.warn ?? log;
    const report: RemovalReport = { instanceId: id, done: [], skipped: [] };
    return {
        target, report, log, warn,
        skip: (step, reason) => {
            report.skipped.push({ step, reason });
            warn(`${id}: ${step} skipped: ${reason}`);
        },
        step: async (name, fix, run) => {
            try {
                await run();
            } catch (err) {
                throw err instanceof RemovalError ? err : new RemovalError(id, name, err as Error, fix);
            }
        },
    };
}

/**
 * Removes one node: drain → clear userdata (existing nodes) → reset → delete Node → leave the ESS
 * group (pool members) → delete a left-over pod route. See the module comment for the guarantees.
 */
export async function removeNode(target: KnownTarget, opts: RemovalOptions): Promise<RemovalReport> {
    const r = begin(target, opts);
    await kubernetesSide(r, opts);
    if (target.scalingGroupId) {
        await leaveScalingGroup(target.scalingGroupId, target.essAction ?? "release", [r], opts);
    } else {
        r.report.skipped.push({ step: "leave-scaling-group", reason: "not an ESS member" });
    }
    await deletePodRoutes(r, opts);
    r.log(`${target.instanceId} removed (${r.report.done.join(", ") || "nothing left to do"})`);
    return r.report;
}

/** Steps (a)–(d): drain, clear userdata, reset, delete the Node. */
async function kubernetesSide(r: NodeRemoval, opts: RemovalOptions): Promise<void> {
    const { target, report, log, warn, skip, step } = r;
    const id = target.instanceId;
    const master = { region: opts.region, masterInstanceId: opts.masterInstanceId, pollIntervalMs: opts.pollIntervalMs };

    // Which Node is this instance? The provider id is the stable link (DESIGN.md §2).
    let nodeName = target.nodeName;
    let nodeReady = target.nodeReady;
    let master0NodeName: string | undefined;
    if (nodeName === undefined || target.kind === "control-plane") {
        await step("drain", "check that master 0 is Running with its Cloud Assistant agent online", async () => {
            const nodes = await getNodes(master);
            const node = nodes.find((n) => n.providerId === providerIdOf(opts.region, id));
            master0NodeName = nodes.find((n) => n.providerId === providerIdOf(opts.region, opts.masterInstanceId))?.name;
            if (nodeName === undefined) {
                nodeName = node?.name ?? null;
                nodeReady = node?.ready;
            }
        });
    }

    // (a) cordon + drain through the eviction API, so PodDisruptionBudgets hold.
    if (nodeName) {
        const name = nodeName;
        await step("drain", `a PodDisruptionBudget or a slow pod blocks eviction from ${name}: free it, raise drainTimeoutSeconds, or set force: true to delete pods without a controller`, async () => {
            log(`draining ${id} (node ${name})`);
            const timeout = opts.drainTimeoutSeconds ?? 600;
            // On a NotReady node the kubelet never confirms pod deletion: stop waiting for evicted pods
            // after a minute instead of running into the drain timeout on every attempt.
            const notReady = nodeReady === false ? ["--skip-wait-for-delete-timeout=60"] : [];
            try {
                await kubectl(master, ["drain", name, "--ignore-daemonsets", "--delete-emptydir-data", `--timeout=${timeout}s`, ...notReady, ...(opts.force ? ["--force"] : [])],
                    { timeoutSeconds: timeout + 60, name: "alicloud-kubeadm-drain" });
                report.done.push("drain");
            } catch (err) {
                if (!(err instanceof CommandError && /\(NotFound\)|nodes? "[^"]*" not found/.test(err.outputTail))) {
                    throw err;
                }
                nodeName = null; // deleted meanwhile (by an earlier run or by the CCM)
                skip("drain", `Node ${name} is already deleted`);
            }
        });
    }
    if (!nodeName && !report.skipped.some((s) => s.step === "drain")) {
        skip("drain", `no Node has provider id ${opts.region}.${id} (already deleted)`);
    }

    // (b) existing nodes: clear the join userdata so a reboot or re-image cannot rejoin the cluster.
    if (target.kind === "existing") {
        await step("clear-userdata", `allow ecs:ModifyInstanceAttribute for the caller, or clear the userdata of ${id} in the ECS console`, async () => {
            try {
                const res = await callApi("ecs", "DescribeUserData", { InstanceId: id }, { region: opts.region });
                const current = Buffer.from(String(res.UserData ?? ""), "base64").toString("utf8");
                if (current === "" || current === CLEARED_USERDATA) {
                    skip("clear-userdata", "userdata already cleared");
                    return;
                }
                log(`clearing the join userdata of ${id}`);
                await callApi("ecs", "ModifyInstanceAttribute", { InstanceId: id, UserData: Buffer.from(CLEARED_USERDATA).toString("base64") }, { region: opts.region });
                report.done.push("clear-userdata");
            } catch (err) {
                if (err instanceof OpenApiError && NOT_FOUND.test(err.code)) {
                    skip("clear-userdata", `instance ${id} no longer exists`);
                    return;
                }
                throw err;
            }
        });
    } else {
        report.skipped.push({ step: "clear-userdata", reason: `not an existing node (${target.kind})` });
    }

    // (c) kubeadm reset on the node (for masters this also removes the etcd member). A node already
    // deleted from Kubernetes was reset before (reset precedes delete-node), so a resumed run skips it.
    if (!nodeName) {
        skip("reset", "the Node is already deleted, so the reset step ran before (or the node never joined)");
    } else {
        const memberName = nodeName;
        await step("reset", `start ${id} and its Cloud Assistant agent, or run the reset by hand, then retry`, async () => {
            try {
                log(`resetting ${id}: kubeadm reset, CNI config, cni0, iptables`);
                await runOnInstance({ region: opts.region, instanceId: id, script: resetScript(), name: "alicloud-kubeadm-reset", timeoutSeconds: 300, pollIntervalMs: opts.pollIntervalMs });
                report.done.push("reset");
            } catch (err) {
                if (!(err instanceof CommandError && NODE_UNREACHABLE.includes(err.errorCode))) {
                    throw err;
                }
                if (target.kind !== "control-plane") {
                    skip("reset", `${id} cannot run commands (${err.errorCode}); the Kubernetes side still completes`);
                    return;
                }
                // A member that cannot reset itself would stay in etcd and keep counting toward quorum.
                if (!master0NodeName) {
                    throw new Error(`${id} cannot run kubeadm reset (${err.errorCode}) and master 0 has no Node to reach etcd through`);
                }
                log(`${id} cannot run kubeadm reset (${err.errorCode}); removing its etcd member through master 0`);
                const out = await runOnInstance({ region: opts.region, instanceId: opts.masterInstanceId, script: etcdMemberRemoveScript(master0NodeName, memberName),
                    name: "alicloud-kubeadm-etcd-member-remove", timeoutSeconds: 120, pollIntervalMs: opts.pollIntervalMs });
                report.done.push("reset");
                if (out.includes("member-absent")) {
                    warn(`${id}: reset skipped (${err.errorCode}); it was no longer an etcd member`);
                }
            }
        });
    }

    // (d) delete the Node object.
    if (nodeName) {
        const name = nodeName;
        await step("delete-node", `check master 0, then \`kubectl delete node ${name}\``, async () => {
            await kubectl(master, ["delete", "node", name, "--ignore-not-found", "--wait=false"], { name: "alicloud-kubeadm-delete-node" });
            report.done.push("delete-node");
        });
    } else {
        report.skipped.push({ step: "delete-node", reason: "no Node object" });
    }
}

/** ESS allows up to 20 instances in one RemoveInstances / DetachInstances call. */
const ESS_BATCH = 20;

/**
 * Step (e): pool members leave their ESS group, `release` (RemoveInstances: instance released,
 * desired capacity decreased) or `keep` (DetachInstances). One call per batch of up to 20: ESS runs
 * one scaling activity at a time per group, so one call per node would queue behind each other.
 */
async function leaveScalingGroup(group: string, essAction: "release" | "keep", nodes: NodeRemoval[], opts: RemovalOptions): Promise<void> {
    const action = essAction === "keep" ? "DetachInstances" : "RemoveInstances";
    const ids = nodes.map((n) => n.target.instanceId);
    const fix = `check scaling group ${group} (ESS console: scaling activities), then retry`;
    let present: string[];
    try {
        // PageSize: the API's default page is 10, smaller than a batch.
        const res = await callApi("ess", "DescribeScalingInstances", { ScalingGroupId: group, InstanceId: ids, PageSize: 50 }, { region: opts.region });
        const rows = ((res.ScalingInstances as { ScalingInstance?: ScalingGroupMember[] } | undefined)?.ScalingInstance ?? []);
        present = ids.filter((id) => rows.some((row) => row.InstanceId === id && row.LifecycleState !== "Removing"));
    } catch (err) {
        throw new RemovalError(ids.join(", "), "leave-scaling-group", err as Error, fix);
    }
    for (const n of nodes.filter((x) => !present.includes(x.target.instanceId))) {
        n.skip("leave-scaling-group", `${n.target.instanceId} is no longer in ${group}`);
    }
    if (present.length === 0) {
        return;
    }
    nodes[0].log(`${action === "RemoveInstances" ? "releasing" : "detaching"} ${present.join(", ")} from ${group}`);
    try {
        await callApi("ess", action, { ScalingGroupId: group, InstanceId: present, DecreaseDesiredCapacity: true },
            { region: opts.region, retry: { retryableCodes: ESS_BUSY, maxAttempts: 30, totalTimeoutMs: 600_000, maxDelayMs: 20_000 } });
    } catch (err) {
        // Left meanwhile (ESS was already removing them, or the group is gone): done.
        if (err instanceof OpenApiError && ["IncorrectInstanceStatus", "InvalidInstanceId.NotFound", "InvalidScalingGroupId.NotFound"].includes(err.code)) {
            for (const n of nodes.filter((x) => present.includes(x.target.instanceId))) {
                n.skip("leave-scaling-group", `${n.target.instanceId} already left ${group} (${err.code})`);
            }
            return;
        }
        throw new RemovalError(present.join(", "), "leave-scaling-group", err as Error, fix);
    }
    for (const n of nodes.filter((x) => present.includes(x.target.instanceId))) {
        n.report.done.push("leave-scaling-group");
    }
}

/** Step (f): a pod route the CCM left behind (it deletes routes of deleted nodes only from its memory). */
async function deletePodRoutes(r: NodeRemoval, opts: RemovalOptions): Promise<void> {
    const { report, log, step } = r;
    const id = r.target.instanceId;
    if (opts.routeTableId) {
        const table = opts.routeTableId;
        await step("delete-route", `delete the route with next hop ${id} from ${table} in the VPC console`, async () => {
            const res = await callApi("vpc", "DescribeRouteEntryList", { RouteTableId: table, NextHopId: id, RouteEntryType: "Custom", MaxResult: 100 }, { region: opts.region });
            const entries = ((res.RouteEntrys as { RouteEntry?: Array<{ RouteEntryId?: string; DestinationCidrBlock?: string; NextHops?: unknown }> } | undefined)?.RouteEntry ?? []);
            if (entries.length === 0) {
                report.skipped.push({ step: "delete-route", reason: "no route points at the instance" });
                return;
            }
            for (const e of entries) {
                log(`deleting pod route ${e.DestinationCidrBlock} → ${id}`);
                try {
                    await callApi("vpc", "DeleteRouteEntry", { RouteTableId: table, RouteEntryId: e.RouteEntryId, DestinationCidrBlock: e.DestinationCidrBlock, NextHopId: id }, { region: opts.region });
                } catch (err) {
                    if (!(err instanceof OpenApiError && NOT_FOUND.test(err.code))) {
                        throw err;
                    }
                }
            }
            report.done.push("delete-route");
        });
    }
}

/** Runs `work` over `items`, `concurrency` at a time; collects the errors instead of stopping. */
async function eachLimited<T>(items: T[], concurrency: number, work: (item: T) => Promise<void>): Promise<Error[]> {
    const failures: Error[] = [];
    let next = 0;
    const worker = async () => {
        while (next < items.length) {
            const item = items[next++];
            try {
                await work(item);
            } catch (err) {
                failures.push(err as Error);
            }
        }
    };
    await Promise.all(Array.from({ length: Math.min(Math.max(1, concurrency), items.length) }, worker));
    return failures;
}

/**
 * Removes several nodes: the Kubernetes side of each, `opts.concurrency` at a time (default 5); then
 * the ESS members of each group leave in batches; then the left-over routes. A node whose step failed
 * goes no further; every other node is finished, and one error lists each failure at the end.
 */
export async function removeNodes(targets: KnownTarget[], opts: RemovalOptions): Promise<RemovalReport[]> {
    const concurrency = opts.concurrency ?? 5;
    const removals = targets.map((t) => begin(t, opts));
    const failed = new Set<NodeRemoval>();
    const failures = await eachLimited(removals, concurrency, async (r) => {
        try {
            await kubernetesSide(r, opts);
        } catch (err) {
            failed.add(r);
            throw err;
        }
    });

    const groups = new Map<string, NodeRemoval[]>();
    for (const r of removals.filter((x) => !failed.has(x))) {
        if (!r.target.scalingGroupId) {
            r.report.skipped.push({ step: "leave-scaling-group", reason: "not an ESS member" });
            continue;
        }
        const key = `${r.target.scalingGroupId}\t${r.target.essAction ?? "release"}`;
        groups.set(key, [...(groups.get(key) ?? []), r]);
    }
    const batches: NodeRemoval[][] = [];
    for (const members of groups.values()) {
        for (let k = 0; k < members.length; k += ESS_BATCH) {
            batches.push(members.slice(k, k + ESS_BATCH));
        }
    }
    // Different groups in parallel; batches of one group one after another (ESS: one activity at a time).
    const byGroup = new Map<string, NodeRemoval[][]>();
    for (const b of batches) {
        byGroup.set(b[0].target.scalingGroupId!, [...(byGroup.get(b[0].target.scalingGroupId!) ?? []), b]);
    }
    failures.push(...await eachLimited([...byGroup.values()], byGroup.size, async (groupBatches) => {
        for (const batch of groupBatches) {
            try {
                await leaveScalingGroup(batch[0].target.scalingGroupId!, batch[0].target.essAction ?? "release", batch, opts);
            } catch (err) {
                batch.forEach((r) => failed.add(r));
                throw err;
            }
        }
    }));

    failures.push(...await eachLimited(removals.filter((x) => !failed.has(x)), concurrency, async (r) => {
        try {
            await deletePodRoutes(r, opts);
        } catch (err) {
            failed.add(r);
            throw err;
        }
        r.log(`${r.target.instanceId} removed (${r.report.done.join(", ") || "nothing left to do"})`);
    }));
    if (failures.length > 0) {
        throw new Error(`${failed.size} of ${targets.length} node removal(s) failed:\n${failures.map((f) => f.message).join("\n")}`);
    }
    return removals.map((r) => r.report);
}

/** A pool member as victim selection sees it. */
export interface PoolMember {
    instanceId: string;
    /** Node name, or null when the instance has no Node. */
    nodeName: string | null;
    ready: boolean;
    /** Pods on the node not owned by a DaemonSet. */
    workloadPods: number;
    /** Instance creation time, ISO 8601. */
    createdAt: string;
}

/**
 * Picks `count` members to remove: NotReady (or Node-less) first, then fewest workload pods, then newest.
 * Deterministic for equal keys (instance id).
 */
export function chooseVictims(members: PoolMember[], count: number): PoolMember[] {
    const sorted = [...members].sort((a, b) =>
        Number(a.ready && a.nodeName !== null) - Number(b.ready && b.nodeName !== null) ||
        a.workloadPods - b.workloadPods ||
        b.createdAt.localeCompare(a.createdAt) ||
        a.instanceId.localeCompare(b.instanceId));
    return sorted.slice(0, Math.max(0, count));
}

/** The pool to scale in. */
export interface ScaleInPool {
    scalingGroupId: string;
    /** Pool name (its nodes carry `alicloud-kubeadm/pool=<name>`). */
    poolName: string;
    /** Members to keep. */
    targetSize: number;
    /** Never go below this many members. */
    minSize: number;
    /** Release (default) or keep the removed instances. */
    essAction?: "release" | "keep";
}

/** One member of an ESS scaling group (DescribeScalingInstances, ESS 2014-08-28). */
export interface ScalingGroupMember {
    InstanceId: string;
    CreationTime?: string;
    LifecycleState?: string;
}

/** Every member of a scaling group (all pages). */
export async function scalingGroupMembers(region: string, scalingGroupId: string): Promise<ScalingGroupMember[]> {
    const members: ScalingGroupMember[] = [];
    for (let page = 1; ; page++) {
        const res = await callApi("ess", "DescribeScalingInstances", { ScalingGroupId: scalingGroupId, PageSize: 50, PageNumber: page }, { region });
        const rows = ((res.ScalingInstances as { ScalingInstance?: ScalingGroupMember[] } | undefined)?.ScalingInstance ?? []);
        members.push(...rows);
        if (rows.length < 50 || members.length >= Number(res.TotalCount ?? 0)) {
            return members;
        }
    }
}

/** Prints `<node>\t<owner kind>` per pod, gzip+Base64 (fits Cloud Assistant's 24 KB output). */
export const POD_OWNERS_JSONPATH = '{range .items[*]}{.spec.nodeName}{"\\t"}{.metadata.ownerReferences[0].kind}{"\\n"}{end}';

/**
 * Scales an ESS pool in to `targetSize` (never below `minSize`) through the removal core: chooses
 * victims (NotReady first, then fewest workload pods, then newest) and removes them concurrently.
 */
export async function scaleInPool(pool: ScaleInPool, opts: RemovalOptions): Promise<RemovalReport[]> {
    const log = opts.log ?? (() => undefined);
    const master = { region: opts.region, masterInstanceId: opts.masterInstanceId, pollIntervalMs: opts.pollIntervalMs };

    // Members ESS is already removing are leaving anyway: neither counted nor chosen.
    const instances = (await scalingGroupMembers(opts.region, pool.scalingGroupId)).filter((m) => m.LifecycleState !== "Removing");
    const keep = Math.max(pool.targetSize, pool.minSize, 0);
    const count = instances.length - keep;
    if (count <= 0) {
        log(`pool ${pool.poolName}: ${instances.length} member(s), target ${keep}: nothing to remove`);
        return [];
    }

    const nodes = await getNodes(master, `${POOL_LABEL}=${pool.poolName}`);
    const script = `#!/bin/bash\nset -o pipefail\n${kubectlCommand(["get", "pods", "-A", "--field-selector=status.phase!=Succeeded,status.phase!=Failed", "-o", `jsonpath=${POD_OWNERS_JSONPATH}`])} | gzip -c | base64 -w0`;
    const out = await runOnInstance({ region: opts.region, instanceId: opts.masterInstanceId, script, name: "alicloud-kubeadm-pod-owners", timeoutSeconds: 120, pollIntervalMs: opts.pollIntervalMs });
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const zlib = require("zlib") as typeof import("zlib");
    const workload = new Map<string, number>();
    for (const line of zlib.gunzipSync(Buffer.from(out.trim(), "base64")).toString("utf8").split("\n")) {
        const [node, kind] = line.split("\t");
        if (node && kind !== "DaemonSet") {
            workload.set(node, (workload.get(node) ?? 0) + 1);
        }
    }
    const members: PoolMember[] = instances.map((i) => {
        const node = nodes.find((n) => n.providerId === providerIdOf(opts.region, i.InstanceId));
        return { instanceId: i.InstanceId, nodeName: node?.name ?? null, ready: node?.ready ?? false, workloadPods: node ? workload.get(node.name) ?? 0 : 0, createdAt: i.CreationTime ?? "" };
    });
    const victims = chooseVictims(members, count);
    log(`pool ${pool.poolName}: removing ${victims.length} of ${instances.length} node(s): ${victims.map((v) => v.instanceId).join(", ")}`);
    return removeNodes(victims.map((v) => ({
        instanceId: v.instanceId, kind: "scale-out", scalingGroupId: pool.scalingGroupId, essAction: pool.essAction, nodeName: v.nodeName,
    })), opts);
}
