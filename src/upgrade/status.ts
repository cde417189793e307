/**
 * What an upgrade decides from, read from the cluster (never from what the program last asked for): each API server's
 * version and readiness, each Node's kubelet and state, the add-ons kubeadm moves, kubeadm's ClusterConfiguration
 * version, the deprecated APIs clients still request (the upgrade-status operation, src/shell/ops/upgrade-status.sh);
 * each instance's own kubeadm, kubelet and static-pod versions (the upgrade command's `status` step); etcd's health.
 */
import { decompress, invokeOnMaster, nameAllowsInstance, unescapeListed, type ClusterAccess } from "../cloud/operations";
import { runUpgradeStep } from "./run";
import { readEtcdMembers, type EtcdMember } from "../recovery/quorum";
import { oldestVersion, providerIdOf } from "../rules";

/** One API server: the master's Node, the version its pod runs (image tag), whether its own /readyz answered ok. */
export interface ApiServerStatus { node: string; version: string; ready: boolean }

/** One Node as an upgrade sees it. */
export interface NodeStatus {
    name: string;
    /** `spec.providerID` (`<region>.<instance-id>`), "" when unset. */
    providerId: string;
    /** `status.nodeInfo.kubeletVersion` without the `v`. */
    kubelet: string;
    ready: boolean;
    unschedulable: boolean;
    /** A version upgrade's drain mark (annotation `alicloud-kubeadm/upgrading`), "" when none (a removal's mark is not an upgrade's). */
    mark: string;
    /** A master resize's drain mark (annotation `alicloud-kubeadm/resizing`), "" when none. */
    resizeMark: string;
    controlPlane: boolean;
}

/** The cluster's state for an upgrade. */
export interface ClusterStatus {
    apiServers: ApiServerStatus[];
    nodes: NodeStatus[];
    /** CoreDNS and kube-proxy image tags (without `v`), by name. */
    addons: Record<string, string>;
    /** kubeadm-config's ClusterConfiguration `kubernetesVersion` (without `v`), "" when not found. */
    clusterConfig: string;
    /** The `apiserver_requested_deprecated_apis` series, as the API server printed them. */
    deprecatedMetrics: string;
}

const bare = (v: string | undefined) => (v ?? "").trim().replace(/^v/, "");

const ESCAPED_KINDS = new Set(["apiserver", "node", "control-plane"]);

/** Parses the upgrade-status operation's lines. */
export function parseClusterStatus(text: string): ClusterStatus {
    const s: ClusterStatus = { apiServers: [], nodes: [], addons: {}, clusterConfig: "", deprecatedMetrics: "" };
    const controlPlane = new Set<string>();
    const deprecated: string[] = [];
    for (const line of text.split("\n")) {
        const [kind, ...raw] = line.split("\t");
        // The apiserver, node and control-plane values come escaped (a kubelet writes them): read back as data.
        const f = ESCAPED_KINDS.has(kind) ? raw.map(unescapeListed) : raw;
        if (kind === "apiserver" && f[0]) s.apiServers.push({ node: f[0], version: bare(f[1]), ready: f[2] === "true" });
        else if (kind === "node" && f[0]) {
            s.nodes.push({ name: f[0], providerId: f[1] ?? "", kubelet: bare(f[2]), ready: f[3] === "True", unschedulable: f[4] === "true", mark: f[5] ?? "", resizeMark: f[6] ?? "", controlPlane: false });
        } else if (kind === "control-plane" && f[0]) controlPlane.add(f[0]);
        else if (kind === "addon" && f[0]) s.addons[f[0]] = bare(f[1]);
        else if (kind === "cluster-config") s.clusterConfig = bare(f[0]);
        else if (kind === "deprecated") deprecated.push(f.join("\t"));
    }
    for (const n of s.nodes) n.controlPlane = controlPlane.has(n.name);
    // Only a control-plane Node's API server counts: any kubelet may post a mirror pod labelled component=kube-apiserver
    // bound to itself, but none may give its own Node the node-role label (NodeRestriction).
    s.apiServers = s.apiServers.filter((a) => controlPlane.has(a.node));
    s.deprecatedMetrics = deprecated.join("\n");
    return s;
}

/** Reads the cluster's state on a master. */
export async function readClusterStatus(access: ClusterAccess): Promise<ClusterStatus> {
    return parseClusterStatus(decompress(await invokeOnMaster(access, "upgrade-status")));
}

/** The version the control plane runs: the oldest API server's (undefined when none answered). */
export function runningVersionOf(s: ClusterStatus): string | undefined {
    return oldestVersion(s.apiServers.map((a) => a.version).filter((v) => v !== ""));
}

/** Node name → kubelet version, every Node. */
export function kubeletVersionsOf(s: ClusterStatus): Record<string, string> {
    return Object.fromEntries(s.nodes.map((n) => [n.name, n.kubelet]));
}

/** Node name → API server version, every API server. */
export function apiServerVersionsOf(s: ClusterStatus): Record<string, string> {
    return Object.fromEntries(s.apiServers.map((a) => [a.node, a.version]));
}

/**
 * The Node of an instance, if it has one: the Node named `<region>.<instance-id>` (as the project names them), else
 * the one with that provider id whose name names no other instance. Its kubelet's credential fixes a Node's name, while
 * any kubelet registers the provider id it likes: a Node named after another instance that claims this one's provider
 * id is not this one's (docs/security.md#node-names).
 */
export function nodeOfInstance(s: ClusterStatus, region: string, instanceId: string): NodeStatus | undefined {
    const id = providerIdOf(region, instanceId);
    const mayBe = s.nodes.filter((n) => nameAllowsInstance(n.name, instanceId));
    return mayBe.find((n) => n.name === id) ?? mayBe.find((n) => n.providerId === id);
}

/** The instance id of a Node (from its provider id), or undefined for a Node of no ECS instance or one named after another instance. */
export function instanceOfNode(n: NodeStatus): string | undefined {
    const id = /^[a-z0-9-]+\.(i-[A-Za-z0-9]+)$/.exec(n.providerId)?.[1];
    // A Node named after another instance is that one's, whatever provider id its kubelet registered ({@link nodeOfInstance}).
    return id !== undefined && nameAllowsInstance(n.name, id) ? id : undefined;
}

/** The etcd members and their health, through the first Ready master (none when no master Node is Ready). */
export async function readEtcd(access: ClusterAccess, s: ClusterStatus): Promise<EtcdMember[]> {
    const via = s.nodes.filter((n) => n.controlPlane && n.ready);
    for (const n of via) {
        try {
            return await readEtcdMembers(access, n.name);
        } catch {
            // that master's etcd did not answer: try the next
        }
    }
    return [];
}

/** One instance's own versions (the upgrade command's `status` step): kubeadm, kubelet, its kube-apiserver manifest ("none" on a worker). */
export interface InstanceVersions { kubeadm: string; kubelet: string; apiserver: string }

/** Reads one instance's versions. */
export async function readInstanceVersions(access: Pick<ClusterAccess, "region" | "pollIntervalMs">, upgradeCommandId: string, instanceId: string): Promise<InstanceVersions> {
    const out = await runUpgradeStep(access, upgradeCommandId, instanceId, "status");
    const field = (k: string) => bare(new RegExp(`^${k}=(.*)$`, "m").exec(out)?.[1]);
    return { kubeadm: field("kubeadm"), kubelet: field("kubelet"), apiserver: field("apiserver") };
}

/** The control-plane components kubeadm runs as static pods on a master (stacked etcd among them). */
export const STATIC_POD_COMPONENTS = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"] as const;

/** One master's control-plane static pods (the static-pods operation, src/shell/ops/static-pods.sh). */
export interface StaticPods {
    /** Pod name → the hash (uid) the running kubelet made of the manifest, for the pods it runs from a file. */
    kubelet: Map<string, string>;
    /** Pod name → its mirror pod: the node it is bound to, the static pod's hash it mirrors (kubernetes.io/config.mirror), Ready. */
    mirrors: Map<string, { node: string; hash: string; ready: boolean }>;
}

/** Parses the static-pods operation's lines (every value escaped: read back as data). */
export function parseStaticPods(text: string): StaticPods {
    const out: StaticPods = { kubelet: new Map(), mirrors: new Map() };
    for (const line of text.split("\n")) {
        const [kind, ...raw] = line.split("\t");
        const f = raw.map(unescapeListed);
        if (kind === "kubelet" && f[0] && f[2] === "file") out.kubelet.set(f[0], f[1] ?? "");
        else if (kind === "mirror" && f[0]) out.mirrors.set(f[0], { node: f[1] ?? "", hash: f[2] ?? "", ready: f[3] === "True" });
    }
    return out;
}

/** Reads the control-plane static pods of the master whose Node is `node`. @throws while its kubelet does not answer */
export async function readStaticPods(access: ClusterAccess, node: string): Promise<StaticPods> {
    return parseStaticPods(decompress(await invokeOnMaster(access, "static-pods", { node })));
}

/**
 * What keeps the static pods of `node` from being the ones its running kubelet runs, Ready: each control-plane pod the
 * kubelet runs from a manifest (kube-apiserver at least) must have its mirror pod `<component>-<node>` bound to `node`,
 * mirroring the hash the kubelet made of the manifest, and Ready. A kubelet that made another hash than the one the mirror
 * pod shows (a new manifest, or a kubelet of another minor: the hash covers the pod as that kubelet reads it) has the old
 * containers to stop and new ones to start; one that made the same hash keeps the containers it found. Empty when all holds.
 */
export function staticPodFindings(p: StaticPods, node: string): string[] {
    const name = (c: string) => `${c}-${node.toLowerCase()}`;
    const out: string[] = [];
    if (!p.kubelet.has(name("kube-apiserver"))) out.push(`the kubelet of ${node} does not run ${name("kube-apiserver")} (yet)`);
    for (const c of STATIC_POD_COMPONENTS) {
        const hash = p.kubelet.get(name(c));
        if (hash === undefined) continue;
        const m = p.mirrors.get(name(c));
        if (!m || m.node !== node) out.push(`no mirror pod ${name(c)} on ${node} yet`);
        else if (m.hash !== hash) out.push(`${name(c)} not restarted by the kubelet yet`);
        else if (!m.ready) out.push(`${name(c)} not Ready`);
    }
    return out;
}

