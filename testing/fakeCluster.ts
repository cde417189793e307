// A fake Kubernetes cluster behind the emulator's Cloud Assistant: any master answers the saved node
// operations (list-nodes, pod-owners, drain, uncordon, delete-node, etcd-member-remove, etcd-health, cluster-validate) from an in-memory
// node table, and nodes answer `reset`. The operations are saved in the emulator from the program's own
// NodeCommands specs, and handlers read their parameters, as the real scripts would. Every command is
// recorded as "<instance>: <verb>" for ordered assertions. Used where a test must inject a failure or a
// timing the real control plane cannot produce (test/kube/ is the real one).
//
// What it keeps, so tests assert invariants from state rather than from logs:
// - Nodes with their pods (owner kinds), cordon (`unschedulable`), removal mark (`removing`) and taints; a drain
//   cordons and marks first, then moves every non-DaemonSet pod to another schedulable worker, as evictions
//   and their controllers would: a worker without a PreferNoSchedule taint first (kube-scheduler's TaintToleration
//   score; the real scheduler weighs it against other scores, here it always wins), then the one with fewest pods.
// - `credentials`: the instances holding kubelet credentials (a joined node until `kubeadm reset`).
// - `etcd`: member name → peer IP; `kubeadm reset` on a member takes it out unless `resetLeavesEtcd`, and stops its etcd
//   either way.
// - `violations`: every scaling-group member that left ESS while it had a Node that was not drained (I1),
//   recorded by the emulator's member-left hook at the moment ESS takes it out; and every instance stopped
//   (StopInstance accepted) while its Node still had workload pods (they were never evicted: no PDB held).
// - A machine that does not run cannot confirm pod deletions: a drain of its Node leaves the evicted pods
//   Terminating and times out, unless it skips the wait (`skipWait` > 0), as kubectl drain does.
// - Versions (upgrades): each instance's kubeadm, kubelet and kube-apiserver manifest, kubeadm-config's version, the
//   add-ons (CoreDNS, kube-proxy). The saved upgrade command's steps act as kubeadm does (docs/upstream.md#kubeadm-upgrade):
//   `apply` needs the target kubeadm and sets this master's static pods and kubeadm-config; `node` moves this master's
//   static pods to kubeadm-config's version; the addon phase (both) moves CoreDNS and kube-proxy only once every master's
//   API server runs the version. `upgradeViolations` records, at every mutating step on a master, another master caught
//   half-way (cordoned, API server and kubelet apart, or its static pods not yet restarted by its kubelet), and add-ons
//   moved while a master's API server was older.
// - Static pods (the static-pods operation): each master's kubelet runs its control-plane pods under a hash of the
//   manifest as that kubelet reads it (docs/upstream.md#static-pod-hash): the manifests' version and the kubelet's minor
//   (a patch release hashes alike). `apply`/`node` rewrite the manifests and wait, as kubeadm does, for the mirror pods to
//   change; a kubelet step to another minor leaves the old pods running and restarts them `staticPodRestartPolls`
//   listings (upgrade-status, static-pods) later, as a real master was seen doing after the health gate had passed.
import * as zlib from "zlib";
import type { Emulator } from "./emulator";
import type { ClusterAccess } from "../src/cloud/operations";
import type { NodeCommandIds } from "../src/rules";
import { operation, saveNodeCommands } from "./savedCommands";
import { compareVersions, CONTROL_PLANE_POOL, minorOf } from "../src/rules";

export interface FakeNode {
    name: string;
    instanceId: string;
    ready: boolean;
    /**
     * The Ready condition's `lastTransitionTime` (ISO 8601), as the API server would hold it: set when `ready` changes
     * at a listing (a joining node), else as given. Default: `createdAt`.
     */
    readySince?: string;
    /** The pool label the admission service sets (`node-restriction.kubernetes.io/alicloud-kubeadm-pool`), "" when none. */
    pool: string;
    /** The pool label a node set itself before (`alicloud-kubeadm/pool`), "" or absent when none. */
    legacyPool?: string;
    podCidr: string;
    /** Owner kinds of the pods on the node (e.g. ["ReplicaSet", "DaemonSet"]). */
    pods: string[];
    createdAt: string;
    /** Cordoned. */
    unschedulable: boolean;
    /** The removal mark (annotation alicloud-kubeadm/removing), "" when none. */
    removing: string;
    /** A version upgrade's mark (annotation alicloud-kubeadm/upgrading), "" or absent when none. */
    upgrading?: string;
    /** A master resize's mark (annotation alicloud-kubeadm/resizing), "" or absent when none. */
    resizing?: string;
    /**
     * The Cluster Autoscaler's `cluster-autoscaler.kubernetes.io/scale-down-disabled` annotation and the rollout's mark
     * beside it (`alicloud-kubeadm/scale-down-held`, the pool): absent or "" when none.
     */
    scaleDownDisabled?: string;
    scaleDownHeld?: string;
    /**
     * A master's Node (never receives evicted pods). Given to {@link FakeCluster.addNode} for an instance other than
     * master 0's first one, the Node also gets `legacyPool` `control-plane`, as a control-plane join labels it.
     */
    controlPlane: boolean;
    /** The kubelet version the Node reports (`status.nodeInfo.kubeletVersion`, without `v`). Default the cluster's version. */
    kubelet?: string;
    /** `spec.providerID` when it is not `<region>.<instance-id>` (a kubelet set up by hand: "", `alicloud://…`, another region). */
    providerId?: string;
    /** Its InternalIP when not its instance's private IP (default: the instance's, read at each listing). */
    internalIp?: string;
    /** Its `NetworkUnavailable` condition is True (the CCM has not created its pod route); default false. */
    networkUnavailable?: boolean;
    /** Its taints (`spec.taints`); default none. */
    taints: Array<{ key: string; value: string; effect: "NoSchedule" | "PreferNoSchedule" | "NoExecute" }>;
}

/** One instance's Kubernetes binaries and (masters) its kube-apiserver manifest. */
export interface FakeVersions { kubeadm: string; kubelet: string; apiserver: string }

export interface FakeCluster {
    /** Master 0. */
    master: string;
    /** Every master, master 0 first. */
    masters: string[];
    region: string;
    nodes: Map<string, FakeNode>;
    /** The saved operations' command ids. */
    commands: NodeCommandIds;
    /** Where the providers and the removal core reach the cluster. */
    access: ClusterAccess;
    /** `<instanceId>: <verb>` per command, in order: get-nodes, get-pods, drain <node>, delete-node <node>, reset. */
    log: string[];
    /** Make the next drains fail (e.g. a PDB) until reset to 0. */
    failDrains: number;
    /** Bytes of output every drain prints (Cloud Assistant keeps 24 KB). Default small. */
    drainOutputBytes: number;
    /** Called at the start of every drain (a test's late registration, say). */
    onDrain?: (node: string) => void;
    /** Instances holding kubelet credentials. */
    credentials: Set<string>;
    /** etcd members: name → peer IP. */
    etcd: Map<string, string>;
    /** `kubeadm reset` cannot leave etcd (it warns and exits 0, as kubeadm does). */
    resetLeavesEtcd: boolean;
    /** A deleted Node comes back while its instance still holds credentials and runs (a kubelet nobody reset). */
    kubeletReregisters: boolean;
    /** Members that left ESS with a Node that was not drained. */
    violations: string[];
    /** The version the cluster was built with (every instance's binaries, kubeadm-config, the add-ons). */
    version: string;
    /** Per instance: kubeadm, kubelet and (masters) kube-apiserver manifest versions. */
    versions: Map<string, FakeVersions>;
    /** kubeadm-config's ClusterConfiguration kubernetesVersion. */
    clusterConfig: string;
    /** CoreDNS and kube-proxy, as the version kubeadm's addon phase last applied. */
    addons: { version: string };
    /** The `apiserver_requested_deprecated_apis` series the API server answers. */
    deprecatedMetrics: string;
    /** etcd backups taken (etcd-backup-now), in order, as `<instance>: backup`. */
    backups: string[];
    /** The masters have the backup installed (etcd-backup-now takes one); default false: it answers not-installed. */
    backupInstalled: boolean;
    /** Order invariants of upgrades broken (see the header). */
    upgradeViolations: string[];
    /**
     * How many listings (upgrade-status, static-pods) after a master's kubelet moved to another minor its kubelet restarts
     * that master's static pods (see the header); read at each listing. Default 3.
     */
    staticPodRestartPolls: number;
    /** The masters whose kubelet restarted their static pods under a new hash, one entry per restart, in order. */
    staticPodRestarts: string[];
    /** The masters half-way now (cordoned, API server and kubelet apart, or static pods waiting for their restart by its kubelet). */
    mastersHalfway(): string[];
    /**
     * What `cluster-validate` answers besides the Nodes: the Deployments of kube-system and kube-flannel (default CoreDNS,
     * 2 of 2 available) and their pods that are not Ready (default none). Tests break them to fail a rollout's validation.
     */
    system: { deployments: Array<{ name: string; replicas: number; available: number }>; unreadyPods: Array<{ name: string; node: string; phase: string }> };
    addNode(instanceId: string, init?: Partial<FakeNode>): FakeNode;
    /**
     * The masters' clock, ms since the epoch (what list-nodes prints as `@now`, and what a Node's creation and Ready
     * times are stamped with). Default the emulator's time; a test sets another to skew the cluster from the caller.
     */
    masterNow: () => number;
    /** Adds master `index` ≥ 1 (an instance, its Ready control-plane Node, its etcd member). */
    addMaster(): string;
    /**
     * Every instance ESS launches from now on joins as a Node of `pool` (cloud-init runs its userdata), NotReady
     * until `readyAfterListings` node listings later, or `readyAfterMs` after ESS created its instance (benchmarks: a
     * boot's duration) (default 0: Ready at once).
     */
    autoJoin(pool: string, opts?: { readyAfterListings?: number; readyAfterMs?: number; pods?: string[] }): void;
}

/**
 * A value as kubectl's go-template `js` escaper prints it (Go's text/template JSEscape): `\\`, `\'`, `\"`, and `\u00XX`
 * for control characters and `<`, `>`, `&`, `=` (non-printable runes above ASCII as `\uXXXX`; none in these tests).
 */
export function jsEscape(value: string): string {
    const named: Record<string, string> = { "\\": "\\\\", "'": "\\'", "\"": "\\\"" };
    return value.replace(/[\\'"<>&=\u0000-\u001f]/g, (ch) => named[ch] ?? `\\u${ch.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}`);
}

/**
 * @param opts.commandDelayMs how long drain and reset take (benchmarks). Default 0.
 * @param opts.masters how many masters (master 0 plus Ready control-plane members with etcd members). Default 1.
 * @param opts.version the Kubernetes version every instance runs. Default 1.36.3.
 */
export async function fakeCluster(emu: Emulator, region = "cn-hangzhou", opts: { commandDelayMs?: number; masters?: number; version?: string } = {}): Promise<FakeCluster> {
    const delayMs = opts.commandDelayMs ?? 0;
    const master = emu.addInstance({ instanceName: "master-0", regionId: region }).instanceId;
    const commands = await saveNodeCommands(region);
    const masters = [master];
    /** Instances `kubeadm reset` ran on: their etcd no longer runs (until a join registers their Node again). */
    const resetMasters = new Set<string>();
    const c: FakeCluster = {
        master, masters, region, commands,
        access: { region, masterInstanceIds: masters, commands, pollIntervalMs: 10 },
        nodes: new Map(),
        log: [],
        failDrains: 0,
        drainOutputBytes: 0,
        credentials: new Set(),
        etcd: new Map([["master-0", emu.instances.get(master)!.privateIp]]),
        resetLeavesEtcd: false,
        kubeletReregisters: false,
        violations: [],
        version: opts.version ?? "1.36.3",
        versions: new Map(),
        clusterConfig: opts.version ?? "1.36.3",
        addons: { version: opts.version ?? "1.36.3" },
        deprecatedMetrics: "",
        backups: [],
        backupInstalled: false,
        upgradeViolations: [],
        staticPodRestartPolls: 3,
        staticPodRestarts: [],
        mastersHalfway: () => masters.filter((m) => halfway(m)),
        system: { deployments: [{ name: "kube-system/coredns", replicas: 2, available: 2 }], unreadyPods: [] },
        addNode(instanceId, init = {}) {
            // A control-plane member joined by attach_node.sh labels itself alicloud-kubeadm/pool=control-plane (its
            // JoinConfiguration's node-labels); master 0, made by kubeadm init (master_init.sh), carries no pool label.
            const joinedMaster = init.controlPlane === true && instanceId !== master;
            const node: FakeNode = {
                name: `node-${instanceId}`, instanceId, ready: true, pool: "", podCidr: `172.16.${c.nodes.size}.0/25`, pods: [], createdAt: new Date(c.masterNow()).toISOString(),
                unschedulable: false, removing: "", controlPlane: false, taints: [], ...(joinedMaster ? { legacyPool: CONTROL_PLANE_POOL } : {}), ...init,
            };
            c.nodes.set(node.name, node);
            c.credentials.add(instanceId);
            resetMasters.delete(instanceId);
            if (!c.versions.has(instanceId)) c.versions.set(instanceId, { kubeadm: c.version, kubelet: node.kubelet ?? c.version, apiserver: masters.includes(instanceId) ? c.version : "none" });
            return node;
        },
        autoJoin: () => undefined,
        masterNow: () => emu.state.now(),
        addMaster() {
            const name = `master-${masters.length}`;
            const inst = emu.addInstance({ instanceName: name, regionId: region });
            masters.push(inst.instanceId);
            c.addNode(inst.instanceId, { name, controlPlane: true });
            c.etcd.set(name, inst.privateIp);
            return inst.instanceId;
        },
    };
    let listings = 0;
    const readyAt = new Map<string, number>();
    const readyAtTime = new Map<string, number>();
    c.autoJoin = (pool, o = {}) => {
        emu.state.onUserDataRun = (inst) => {
            const readyNow = (o.readyAfterListings ?? 0) === 0 && (o.readyAfterMs ?? 0) === 0;
            c.addNode(inst.instanceId, { pool, ready: readyNow, pods: [...(o.pods ?? [])] });
            if (readyNow) return;
            readyAt.set(inst.instanceId, listings + (o.readyAfterListings ?? 0));
            readyAtTime.set(inst.instanceId, Date.now() + (o.readyAfterMs ?? 0));
        };
    };
    for (let k = 1; k < (opts.masters ?? 1); k++) c.addMaster();
    const gz = (text: string) => zlib.gzipSync(text).toString("base64");
    const nodeOfInstance = (id: string) => [...c.nodes.values()].find((n) => n.instanceId === id);
    const running = (id: string) => emu.instances.get(id)?.status === "Running";

    /** The drain's and uncordon's `mark` parameter: which annotation (drain.sh: alicloud-kubeadm/<mark>). */
    const markOf = (mark: string | undefined): "removing" | "upgrading" | "resizing" => (mark === "upgrading" || mark === "resizing" ? mark : "removing");
    /**
     * Evicted pods land on a schedulable, Ready worker: one without a PreferNoSchedule taint first, then the one with
     * the fewest pods; with none, they stay Pending (dropped here).
     */
    const reschedule = (from: FakeNode, kinds: string[]) => {
        const preferNot = (n: FakeNode) => (n.taints.some((t) => t.effect === "PreferNoSchedule") ? 1 : 0);
        for (const kind of kinds) {
            const to = [...c.nodes.values()].filter((n) => n !== from && !n.controlPlane && !n.unschedulable && n.ready)
                .sort((a, b) => preferNot(a) - preferNot(b) || a.pods.length - b.pods.length)[0];
            to?.pods.push(kind);
        }
    };

    emu.state.onMemberLeft = (instanceId, group) => {
        const node = nodeOfInstance(instanceId);
        if (node && (!node.unschedulable || node.pods.some((k) => k !== "DaemonSet"))) {
            c.violations.push(`${instanceId} left ${group} with Node ${node.name} ${node.unschedulable ? "still running workload pods" : "not drained"}`);
        }
    };

    emu.state.onStopInstance = (inst) => {
        const node = nodeOfInstance(inst.instanceId);
        const workload = node?.pods.filter((k) => k !== "DaemonSet") ?? [];
        if (node && workload.length > 0) c.violations.push(`${inst.instanceId} stopped with ${workload.length} workload pod(s) on Node ${node.name} (never evicted)`);
        if (masters.includes(inst.instanceId)) {
            c.log.push(`${inst.instanceId}: stop`);
            // A master stopped while another one is not running or half-way: two masters out at once.
            const out = masters.filter((m) => m !== inst.instanceId && (!running(m) || halfway(m)));
            if (out.length > 0) c.upgradeViolations.push(`stop of master ${inst.instanceId} while master(s) ${out.join(", ")} were down or half-way`);
        }
    };

    emu.onCommand(operation("list-nodes"), (ctx) => {
        c.log.push(`${ctx.instanceId}: get-nodes`);
        listings++;
        for (const n of c.nodes.values()) {
            // A joining node gets Ready once; from then on its readiness is what the test sets.
            if ((readyAt.get(n.instanceId) ?? Infinity) <= listings && (readyAtTime.get(n.instanceId) ?? Infinity) <= Date.now()) {
                readyAt.delete(n.instanceId);
                readyAtTime.delete(n.instanceId);
                if (!n.ready) n.readySince = new Date(c.masterNow()).toISOString();
                n.ready = true;
            }
        }
        // list-nodes.sh's lines: the master's clock (the emulator's time), then a line per Node, each value escaped as
        // the template's `js` does; a label selector on either pool label.
        const selector = /^(alicloud-kubeadm\/pool|node-restriction\.kubernetes\.io\/alicloud-kubeadm-pool)=(\S+)$/.exec(ctx.parameters.selector ?? "");
        const lines = [...c.nodes.values()].filter((n) => !selector || (selector[1] === "alicloud-kubeadm/pool" ? n.legacyPool : n.pool) === selector[2])
            .map((n) => [n.name, n.providerId ?? `${region}.${n.instanceId}`, n.ready ? "True" : "False", n.unschedulable ? "true" : "", n.podCidr, n.legacyPool ?? "", n.createdAt, n.removing,
                n.pool, n.internalIp ?? emu.instances.get(n.instanceId)?.privateIp ?? "", n.readySince ?? "", n.upgrading ?? "", n.resizing ?? ""].map(jsEscape).join("\t"));
        return { output: gz([`@now\t${Math.floor(c.masterNow() / 1000)}`, ...lines].join("\n")) };
    });
    // cluster-validate.sh's lines: every Node's Ready, the masters' Nodes, the Deployments, the pods not Ready.
    emu.onCommand(operation("cluster-validate"), (ctx) => {
        c.log.push(`${ctx.instanceId}: cluster-validate`);
        const lines = [
            ...[...c.nodes.values()].map((n) => `node\t${n.name}\t${n.ready ? "True" : "False"}\t${n.networkUnavailable ? "True" : "False"}`),
            ...[...c.nodes.values()].filter((n) => n.controlPlane).map((n) => `control-plane\t${n.name}`),
            ...c.system.deployments.map((d) => `deployment\t${d.name}\t${d.replicas}\t${d.available === 0 ? "" : d.available}`),
            ...c.system.unreadyPods.map((p) => `pod\t${p.name}\t${p.node}\t${p.phase}`),
        ];
        return { output: gz(lines.join("\n")) };
    });
    emu.onCommand(operation("pod-owners"), (ctx) => {
        c.log.push(`${ctx.instanceId}: get-pods`);
        return { output: gz([...c.nodes.values()].flatMap((n) => n.pods.map((kind) => `${n.name}\t${kind}`)).join("\n")) };
    });
    emu.onCommand(operation("drain"), (ctx) => {
        const name = ctx.parameters.node;
        c.log.push(`${ctx.instanceId}: drain ${name}`);
        c.onDrain?.(name);
        const node = c.nodes.get(name);
        if (!node) {
            return { exitCode: 1, output: `Error from server (NotFound): nodes "${name}" not found\ndrain-status=1\n` };
        }
        // The drain's mark parameter: whose cordon this is (drain.sh annotates alicloud-kubeadm/<mark>).
        node[markOf(ctx.parameters.mark)] = new Date(c.masterNow()).toISOString();
        node.unschedulable = true;
        // `force=delete` (kubectl drain --disable-eviction) deletes the pods: no PodDisruptionBudget holds them.
        if (c.failDrains > 0 && ctx.parameters.force !== "delete") {
            c.failDrains--;
            return { exitCode: 1, output: `evicting pod default/web-1\nerror when evicting pods/"web-1" -n "default" (will retry after 5s): Cannot evict pod as it would violate the pod's disruption budget.\nerror: unable to drain node "${name}" due to error: global timeout reached: 10s\ndrain-status=1\n` };
        }
        const evicted = node.pods.filter((k) => k !== "DaemonSet");
        if (evicted.length > 0 && !running(node.instanceId) && Number(ctx.parameters.skipwait ?? "0") === 0) {
            // Evicted, but no kubelet confirms the deletions: the pods stay Terminating until the drain's timeout.
            return { exitCode: 1, output: `evicting pod default/web-0\nerror: unable to drain node "${name}" due to error: global timeout reached: ${ctx.parameters.timeout}s\ndrain-status=1\n` };
        }
        node.pods = node.pods.filter((k) => k === "DaemonSet");
        reschedule(node, evicted);
        const filler = c.drainOutputBytes > 0 ? `${"evicting pod default/web-0\n".repeat(Math.ceil(c.drainOutputBytes / 26))}` : "";
        return { output: `${filler}node/${name} cordoned\nnode/${name} drained\ndrain-status=0\n`, delayMs };
    });
    emu.onCommand(operation("uncordon"), (ctx) => {
        const node = c.nodes.get(ctx.parameters.node);
        c.log.push(`${ctx.instanceId}: uncordon ${ctx.parameters.node}`);
        const mark = markOf(ctx.parameters.mark);
        if (!node || !node[mark]) return { output: "not-marked\n" };
        node.unschedulable = false;
        node[mark] = "";
        return { output: "uncordoned\n" };
    });
    // outdated-taint.sh: add (overwrite) the rollout's taint on the Nodes named that exist; hold: annotate the Nodes named
    // scale-down-disabled with the rollout's mark, unless somebody else's annotation is there; clear: remove the taint
    // from the pool's, and the annotation from the Nodes the pool's rollout held.
    emu.onCommand(operation("outdated-taint"), (ctx) => {
        const { pool, taintmode: mode, outdated } = ctx.parameters;
        c.log.push(`${ctx.instanceId}: outdated-taint ${mode} ${pool} ${outdated ?? ""}`.trimEnd());
        const key = "alicloud-kubeadm/outdated";
        if (mode === "hold") {
            const names = (outdated ?? "").split(" ").filter((n) => c.nodes.has(n))
                .filter((n) => !c.nodes.get(n)!.scaleDownDisabled || !!c.nodes.get(n)!.scaleDownHeld);
            for (const name of names) Object.assign(c.nodes.get(name)!, { scaleDownDisabled: "true", scaleDownHeld: pool });
            return { output: `held ${names.length}\n` };
        }
        if (mode === "add") {
            const names = (outdated ?? "").split(" ").filter((n) => c.nodes.has(n));
            for (const name of names) {
                const node = c.nodes.get(name)!;
                node.taints = [...node.taints.filter((t) => !(t.key === key && t.effect === "PreferNoSchedule")), { key, value: pool, effect: "PreferNoSchedule" }];
            }
            return { output: `tainted ${names.length}\n` };
        }
        const tainted = [...c.nodes.values()].filter((n) => n.taints.some((t) => t.key === key && t.value === pool));
        for (const node of tainted) node.taints = node.taints.filter((t) => !(t.key === key && t.effect === "PreferNoSchedule"));
        const held = [...c.nodes.values()].filter((n) => n.scaleDownHeld === pool);
        for (const node of held) Object.assign(node, { scaleDownDisabled: "", scaleDownHeld: "" });
        return { output: `cleared ${tainted.length}\nreleased ${held.length}\n` };
    });
    emu.onCommand(operation("delete-node"), (ctx) => {
        const names = (ctx.parameters.nodes ?? ctx.parameters.node).split(" ");
        for (const name of names) {
            c.log.push(`${ctx.instanceId}: delete-node ${name}`);
            const node = c.nodes.get(name);
            c.nodes.delete(name);
            if (node && c.kubeletReregisters && c.credentials.has(node.instanceId) && running(node.instanceId)) {
                c.nodes.set(name, { ...node, unschedulable: false, removing: "", upgrading: "", resizing: "", pods: [], createdAt: new Date(c.masterNow()).toISOString() });
            }
        }
        return { output: names.map((name) => `node "${name}" deleted\n`).join("") };
    });
    emu.onCommand(operation("etcd-member-remove"), (ctx) => {
        const { member, peerip: peerIp, etcdnode: via } = ctx.parameters;
        c.log.push(`${ctx.instanceId}: etcd-member-remove ${member || peerIp} via ${via}`);
        const viaNode = c.nodes.get(via);
        if (!viaNode?.ready || !running(viaNode.instanceId)) {
            return { exitCode: 1, output: `error: unable to upgrade connection: container not found ("etcd")\n` };
        }
        // As src/shell/ops/etcd-member-remove.sh decides: the member of that name; without one, by its peer address
        // only when no name was given (every member here has started, so has a name), and never one etcd reports healthy.
        const name = member && c.etcd.has(member) ? member : !member && peerIp ? [...c.etcd.entries()].find(([, ip]) => ip === peerIp)?.[0] : undefined;
        if (!name) return { output: "member-absent\n" };
        if (name !== member && etcdHealth().find((m) => m.name === name)?.health) {
            return { exitCode: 1, output: `error: the etcd member at ${peerIp} (${name}) is healthy and not named after the leaving master: it is not removed.\n` };
        }
        c.etcd.delete(name);
        return { output: "member-removed\n" };
    });
    /** Each member with its health as etcd reports it: healthy while its machine runs and was not reset, none without a quorum of them. */
    const etcdHealth = () => {
        const members = [...c.etcd.entries()].map(([name, ip]) => ({
            name, ip, up: [...emu.instances.values()].some((inst) => inst.privateIp === ip && running(inst.instanceId) && !resetMasters.has(inst.instanceId)),
        }));
        const quorum = members.filter((m) => m.up).length >= Math.floor(members.length / 2) + 1;
        return members.map((m) => ({ ...m, health: quorum && m.up }));
    };
    // etcd-health: the members (etcdctl's JSON), each healthy while its machine runs; none without a quorum of them.
    emu.onCommand(operation("etcd-health"), (ctx) => {
        const via = c.nodes.get(ctx.parameters.etcdnode);
        if (!via?.ready || !running(via.instanceId)) return { exitCode: 1, output: `error: unable to upgrade connection: container not found ("etcd")\n` };
        const members = etcdHealth();
        const listed = members.map(({ name, ip }, i) => ({ ID: 1000 + i, name, peerURLs: [`https://${ip}:2380`], clientURLs: [`https://${ip}:2379`] }));
        const health = members.map(({ ip, health }) => ({ endpoint: `https://${ip}:2379`, health }));
        return { output: `@@members\n${JSON.stringify({ members: listed })}\n@@health\n${JSON.stringify(health)}\n` };
    });
    // --- upgrades -------------------------------------------------------------------------------------------
    const versionsOf = (id: string): FakeVersions => {
        if (!c.versions.has(id)) c.versions.set(id, { kubeadm: c.version, kubelet: c.version, apiserver: masters.includes(id) ? c.version : "none" });
        return c.versions.get(id)!;
    };
    /** The hash a master's running kubelet makes of its static pod manifests: their version and the kubelet's minor. */
    const kubeletHash = (id: string) => `${versionsOf(id).apiserver}@1.${minorOf(versionsOf(id).kubelet)}`;
    /** The hash each master's mirror pods show (the pods running); absent: what its kubelet makes. */
    const mirrors = new Map<string, string>();
    const mirrorOf = (id: string) => mirrors.get(id) ?? kubeletHash(id);
    /** Masters whose kubelet is to restart their static pods: the listings since its kubelet step. */
    const restarts = new Map<string, number>();
    /** One listing: the kubelets whose time has come ({@link FakeCluster.staticPodRestartPolls}, read now) restart their static pods. */
    const listed = () => {
        for (const [id, seen] of restarts) {
            if (seen + 1 < c.staticPodRestartPolls) restarts.set(id, seen + 1);
            else {
                restarts.delete(id);
                mirrors.set(id, kubeletHash(id));
                c.staticPodRestarts.push(id);
                c.log.push(`${id}: static pods restarted`);
            }
        }
    };
    /** A master half-way: cordoned, its API server and kubelet apart, or its static pods not yet restarted by its kubelet. */
    const halfway = (id: string) => {
        const v = versionsOf(id);
        const node = nodeOfInstance(id);
        return (node?.unschedulable ?? false) || v.apiserver !== v.kubelet || mirrorOf(id) !== kubeletHash(id);
    };
    const checkOneAtATime = (id: string, step: string) => {
        if (!masters.includes(id)) return;
        const others = masters.filter((m) => m !== id && halfway(m));
        if (others.length > 0) c.upgradeViolations.push(`${step} on master ${id} while master(s) ${others.join(", ")} were half-way`);
    };
    /** kubeadm's addon phase: CoreDNS and kube-proxy move once every control-plane instance runs the version. */
    const addonPhase = (version: string) => {
        if (masters.every((m) => versionsOf(m).apiserver === version) && c.addons.version !== version) {
            c.log.push(`addons ${version}`);
            c.addons.version = version;
        }
    };
    // static-pods.sh's lines for the master of Node `node`: its kubelet's pods (from its /pods) and their mirror pods.
    emu.onCommand(operation("static-pods"), (ctx) => {
        listed();
        const node = c.nodes.get(ctx.parameters.node);
        if (!node || !masters.includes(node.instanceId) || !running(node.instanceId)) {
            return { exitCode: 1, output: `Error from server: error trying to reach service: dial tcp 192.168.0.9:10250: connect: connection refused\nerror: the kubelet of ${ctx.parameters.node} does not answer (yet)\n` };
        }
        const pods = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"].map((comp) => `${comp}-${node.name}`);
        const lines = [
            ...pods.map((p) => ["kubelet", p, kubeletHash(node.instanceId), "file"].join("\t")),
            ...pods.map((p) => ["mirror", p, node.name, mirrorOf(node.instanceId), "True"].join("\t")),
        ];
        return { output: gz(lines.join("\n")) };
    });
    emu.onCommand(operation("upgrade-status"), (ctx) => {
        listed();
        c.log.push(`${ctx.instanceId}: upgrade-status`);
        const lines: string[] = [];
        for (const m of masters) {
            const node = nodeOfInstance(m);
            if (node && running(m)) lines.push(["apiserver", node.name, versionsOf(m).apiserver, node.ready ? "true" : "false"].join("\t"));
        }
        for (const n of c.nodes.values()) {
            // A stopped machine's kubelet stops posting: its Node goes NotReady.
            const ready = n.ready && (running(n.instanceId) || !emu.instances.has(n.instanceId));
            lines.push(["node", n.name, `${region}.${n.instanceId}`, `v${n.kubelet ?? c.version}`, ready ? "True" : "False", n.unschedulable ? "true" : "", n.upgrading ?? "", n.resizing ?? ""].join("\t"));
            if (n.controlPlane) lines.push(`control-plane\t${n.name}`);
        }
        lines.push(`addon\tcoredns\tv1.12.1`, `addon\tkube-proxy\tv${c.addons.version}`, `cluster-config\t${c.clusterConfig}`);
        for (const d of c.deprecatedMetrics.split("\n").filter((l) => l !== "")) lines.push(`deprecated\t${d}`);
        return { output: gz(lines.join("\n")) };
    });
    emu.onCommand(operation("etcd-backup-now"), (ctx) => {
        if (!c.backupInstalled) return { output: "status=not-installed\n" };
        // The etcd leader's master takes it: master 0 here.
        if (ctx.instanceId !== master) return { output: "status=skipped\nleader=master-0\n" };
        c.backups.push(`${ctx.instanceId}: backup`);
        c.log.push(`${ctx.instanceId}: backup`);
        return { output: `status=ok\nkey=etcd/test/${c.backups.length}.snap\nbytes=1024\nrevision=7\n` };
    });
    emu.onCommand(/^# AK_UPGRADE_STEP=/m, (ctx) => {
        const target = /^readonly AK_KUBERNETES_VERSION='([^']+)'$/m.exec(ctx.script)?.[1] ?? "";
        const step = ctx.parameters.upgradestep;
        const id = ctx.instanceId;
        const v = versionsOf(id);
        const node = nodeOfInstance(id);
        if (step !== "status") {
            c.log.push(`${id}: upgrade ${step}`);
            checkOneAtATime(id, step);
        }
        const fail = (text: string) => ({ exitCode: 1, output: `${text}\nupgrade-step=${step} result=failed exit=1\n` });
        switch (step) {
            case "status":
                return { output: `kubeadm=${v.kubeadm}\nkubelet=${v.kubelet}\napiserver=${v.apiserver}\n` };
            case "kubeadm":
                v.kubeadm = target;
                break;
            case "plan":
                if (v.kubeadm !== target) return fail(`[upgrade/versions] FATAL: the --version argument is invalid due to these errors: Specified version to upgrade to "v${target}" is higher than the kubeadm version "v${v.kubeadm}"`);
                break;
            case "apply": {
                if (v.kubeadm !== target) return fail(`[upgrade/versions] FATAL: Specified version to upgrade to "v${target}" is higher than the kubeadm version "v${v.kubeadm}"`);
                v.apiserver = target;
                mirrors.set(id, kubeletHash(id)); // kubeadm waits for the mirror pods' hash to change
                c.clusterConfig = target;
                addonPhase(target);
                break;
            }
            case "node":
                if (masters.includes(id)) {
                    if (v.kubeadm !== c.clusterConfig) return fail(`[upgrade] FATAL: kubeadm v${v.kubeadm} cannot upgrade to the cluster's v${c.clusterConfig}`);
                    v.apiserver = c.clusterConfig;
                    mirrors.set(id, kubeletHash(id)); // kubeadm waits for the mirror pods' hash to change
                    addonPhase(c.clusterConfig);
                }
                break;
            case "kubelet": {
                // The new kubelet finds the pods the old one started; it restarts them later if it hashes them differently.
                if (masters.includes(id)) mirrors.set(id, mirrorOf(id));
                v.kubelet = target;
                if (node) node.kubelet = target;
                if (masters.includes(id) && mirrorOf(id) !== kubeletHash(id)) restarts.set(id, 0);
                break;
            }
            case "control-plane":
                break;
            default:
                return fail(`unknown step ${step}`);
        }
        const older = masters.filter((m) => compareVersions(versionsOf(m).apiserver, c.addons.version) < 0);
        if (older.length > 0) c.upgradeViolations.push(`add-ons at ${c.addons.version} while the API server of ${older.join(", ")} is older`);
        return { output: `upgrade-step=${step} result=ok\n`, delayMs };
    });
    emu.onCommand(operation("reset"), (ctx) => {
        c.log.push(`${ctx.instanceId}: reset`);
        c.credentials.delete(ctx.instanceId);
        const ip = emu.instances.get(ctx.instanceId)?.privateIp;
        const member = [...c.etcd.entries()].find(([, peer]) => peer === ip)?.[0];
        if (member && !c.resetLeavesEtcd) c.etcd.delete(member);
        resetMasters.add(ctx.instanceId); // its etcd static pod is gone with the reset, member or not
        return { output: `${member && c.resetLeavesEtcd ? "[reset] failed to remove etcd member: context deadline exceeded\n" : ""}reset-complete\n`, delayMs };
    });
    return c;
}
