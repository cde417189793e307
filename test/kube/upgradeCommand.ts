/**
 * The upgrade command on real nodes (test/kube/nodes.ts), for the real upgrade tests: the node image they boot (this
 * machine's overlays, containerd's config, a CNI bridge for a node without a pod network add-on, the package mirror as
 * its only package source) and the saved upgrade command (src/shell/upgrade.sh as renderUpgradeCommand renders it for a
 * mirror, test/kube/aptRepo.ts), run by the emulator's Cloud Assistant on the real node it is invoked on, as root from its
 * script file, as the agent runs it.
 *
 *   const nodes = realNodes(c, { images: [...], overlay: upgradeNodeImage({ podSubnet: "10.244.7.0/24" }) });
 *   const id = await saveUpgradeCommand(REGION, "1.36.3", repo.mirror);
 *   answerUpgradeCommand(emu, repo.mirror, nodes);
 *   await runUpgradeStep(access, id, instanceId, "kubeadm");
 */
import * as path from "path";
import type { Emulator } from "../../testing/emulator";
import { createCommand } from "../../testing/savedCommands";
import { renderUpgradeCommand } from "../../src/shell/render";
import { OPERATIONS } from "../../src/rules";
import { aptRepo, aptRepoMissing, type AptRepo } from "./aptRepo";
import { binDir, isExecutable, KUBERNETES_VERSION, previousKubernetes, type Cluster } from "./cluster";
import { useRealCluster } from "./fixture";
import { machineOverlays, missingNodeBinaries, realNodesUnavailable, type ImageArchive, type RealNode, type RealNodes } from "./nodes";

/** The upgrade tests' two versions (`x.y.z`): the previous minor's (test/kube/go/kubernetes-previous) and this one's. */
export const FROM = previousKubernetes().version.replace(/^v/, "");
export const TO = KUBERNETES_VERSION.replace(/^v/, "");

/**
 * What this machine lacks for a real upgrade test, by name: the previous minor's kubeadm and kubelet, a node's binaries
 * and images, the mirror's tools, the host's conntrack and socat (the Kubernetes packages' install asks for them and finds
 * them installed in the node's copy of this machine's package database), a machine that can run real nodes; and `more`.
 */
export function upgradeWorldMissing(more: string[] = []): string[] {
    const prev = previousKubernetes();
    const unavailable = realNodesUnavailable();
    return [
        ...prev.missing, ...["kubeadm", "kubelet"].filter((b) => !isExecutable(path.join(prev.bin, b))).map((b) => `${prev.version}/${b}`),
        ...missingNodeBinaries(binDir()), ...aptRepoMissing(),
        ...["/usr/sbin/conntrack", "/usr/bin/socat"].filter((p) => !isExecutable(p)).map((p) => `${p} (Debian: conntrack, socat)`),
        ...(unavailable ? [`a machine that can run real nodes (${unavailable})`] : []), ...more,
    ];
}

/**
 * Mocha hooks of a real upgrade test's world: the fixture's cluster on a VPC (`192.168.0.0/24`, its master at
 * `masterIp`, which also serves the mirror), the mirror of {@link TO}'s kubeadm, kubelet and kubectl (test/kube/aptRepo.ts),
 * and, after the file, the nodes the test put in `nodes` stopped before the cluster. Skipped with one line (failed under
 * CI=true) when {@link upgradeWorldMissing} names anything.
 */
export function useUpgradeWorld(opts: { region: string; masterIp: string; alsoNeeds?: () => string[] }): { readonly c: Cluster; readonly repo: AptRepo; nodes?: RealNodes } {
    const world: { c?: Cluster; repo?: AptRepo; nodes?: RealNodes } = {};
    // registered before the cluster's own hooks: mocha runs `after` hooks in order, so the nodes stop before their cluster
    after(async function () {
        this.timeout(60_000);
        await world.nodes?.stopAll();
        await world.repo?.stop();
    });
    const rc = useRealCluster({ region: opts.region, vpc: { masterIp: opts.masterIp, cidrs: ["192.168.0.0/24"] } }, () => upgradeWorldMissing(opts.alsoNeeds?.()));
    before(async function () {
        this.timeout(120_000);
        world.c = rc.c;
        world.repo = await aptRepo(rc.c, {
            dir: rc.c.path("mirror"),
            packages: (["kubeadm", "kubelet", "kubectl"] as const).map((name) => ({ name, version: TO, binary: path.join(rc.c.bin, name) })),
        });
    });
    return {
        get c(): Cluster { if (!world.c) throw new Error("the upgrade world's cluster is not started"); return world.c; },
        get repo(): AptRepo { if (!world.repo) throw new Error("the upgrade world's mirror is not made"); return world.repo; },
        get nodes() { return world.nodes; },
        set nodes(n: RealNodes | undefined) { world.nodes = n; },
    };
}

/**
 * The node image: {@link machineOverlays} (with `ignorePreflight` added to its preflight exceptions), containerd's
 * config (the conf.d drop-ins, kubeadm's sandbox image), a CNI `bridge` with `host-local` addresses of `podSubnet`,
 * and no package source but the one the scripts add (Debian's emptied).
 */
export function upgradeNodeImage(opts: { podSubnet: string; ignorePreflight?: string[] }): Record<string, string> {
    const overlays = machineOverlays();
    const ignore = [...(overlays["/etc/alicloud-kubeadm/ignore-preflight-errors"] ?? "").split(/[\s,]+/), ...(opts.ignorePreflight ?? [])].filter(Boolean);
    return {
        ...overlays,
        ...(ignore.length ? { "/etc/alicloud-kubeadm/ignore-preflight-errors": `${ignore.join(",")}\n` } : {}),
        "/etc/containerd/config.toml": "version = 3\nimports = ['/etc/containerd/conf.d/*.toml']\n" +
            "[plugins.'io.containerd.cri.v1.images'.pinned_images]\n  sandbox = 'registry.k8s.io/pause:3.10.2'\n",
        "/etc/cni/net.d/10-bridge.conflist": JSON.stringify({
            cniVersion: "1.0.0", name: "ak-upgrade", plugins: [
                { type: "bridge", bridge: "cni0", isGateway: true, ipMasq: true, ipam: { type: "host-local", ranges: [[{ subnet: opts.podSubnet }]] } },
                { type: "portmap", capabilities: { portMappings: true } }],
        }),
        "/etc/apt/sources.list.d/debian.sources": "",
    };
}

/** The saved upgrade command to `version` with packages from `mirror`, created in the emulator; returns its id. */
export function saveUpgradeCommand(region: string, version: string, mirror: string): Promise<string> {
    return createCommand(region, {
        commandName: "test-upgrade", script: renderUpgradeCommand({ region, kubernetesVersion: version, packageMirror: mirror }),
        parameters: true, timeoutSeconds: OPERATIONS.upgrade.timeoutSeconds, description: OPERATIONS.upgrade.description,
    });
}

/** Hooks around each upgrade step a real node runs: `before` and `after` it (awaited), with the instance and the step. */
export interface UpgradeStepHooks {
    before?(instanceId: string, step: string): Promise<void>;
    after?(instanceId: string, step: string, exitCode: number): Promise<void>;
}

/** Runs a Cloud Assistant script on the real node of its instance, as root, from its file, as the agent runs it. */
async function runOnRealNode(nodes: RealNodes, instanceId: string, script: string): Promise<{ exitCode: number; output: string }> {
    const node = nodes.get(instanceId);
    if (!node || node.stopped) return { exitCode: 1, output: `${instanceId}: no running node\n` };
    const r = await node.run("bash", ["-c", 'f=$(mktemp /root/command-XXXX.sh) && cat > "$f" && exec bash "$f" 2>&1'], { input: script, allowFail: true, timeoutMs: 900_000 });
    return { exitCode: r.code, output: r.stdout + r.stderr };
}

/**
 * Cloud Assistant for the upgrade command of `mirror`: it runs on the real node of the instance, as root, from its file;
 * `hooks` see each step before and after it runs (what the cluster was between two steps).
 */
export function answerUpgradeCommand(emu: Emulator, mirror: string, nodes: RealNodes, hooks: UpgradeStepHooks = {}): void {
    emu.onCommand(new RegExp(`AK_K8S_REPO_URL='${mirror.replace(/[.]/g, "\\.")}`), async (x) => {
        const step = /AK_UPGRADE_STEP='?([a-z-]+)/.exec(x.script)?.[1] ?? "?";
        await hooks.before?.(x.instanceId, step);
        const r = await runOnRealNode(nodes, x.instanceId, x.script);
        await hooks.after?.(x.instanceId, step, r.exitCode);
        return r;
    });
}

/**
 * Cloud Assistant for the saved node operations (src/shell/ops/) invoked on a real node that is a master: the operation
 * runs there, as root, with the master's own admin.conf and kubectl (drain, uncordon, upgrade-status, etcd-health, …).
 */
export function answerOperationsOnRealMasters(emu: Emulator, nodes: RealNodes): void {
    emu.onCommand(/^# alicloud-kubeadm operation: /m, (x) => runOnRealNode(nodes, x.instanceId, x.script));
}

/** The static pods of a real-node master besides etcd. */
export const CONTROL_PLANE_COMPONENTS = ["kube-apiserver", "kube-controller-manager", "kube-scheduler"] as const;
/** etcd of both versions: the tag kubeadm v1.36 names for v1.35 and v1.36 alike (v1.35's kubeadm would name 3.6.6-0). */
export const ETCD_TAG = "3.6.8-0";

/**
 * A master's node image: the images of its static pods at both versions, etcd's, the pause image and kube-proxy baked in
 * (a node pulls them; here nothing is pulled). With {@link upgradeNodeImage}'s `ignorePreflight: ["ImagePull"]`: kubeadm's
 * preflight pulls every image it names, and CoreDNS, v1.35's kube-proxy and pause 3.10.1 are none of the archives.
 */
export function masterImages(): Array<{ archive: ImageArchive }> {
    return [{ archive: "pause" }, { archive: "etcd" }, { archive: "kube-proxy" },
        ...[FROM, TO].flatMap((v) => CONTROL_PLANE_COMPONENTS.map((name) => ({ archive: `${name}-v${v}` as const })))];
}

/**
 * Boots a real node made with {@link FROM}'s kubeadm and kubelet, as the project's prepare step leaves a node
 * (docs/real-cluster.md): containerd up with the baked images imported, forwarding on, the kubelet enabled.
 */
export async function bootPreviousMinorNode(c: Cluster, nodes: RealNodes, spec: { instanceId: string; ip: string }): Promise<RealNode> {
    const node = await nodes.boot({ ...spec, hostname: spec.instanceId, kubeBin: previousKubernetes().bin });
    await node.sh("echo 1 > /proc/sys/net/ipv4/ip_forward && systemctl enable --now containerd && systemctl enable kubelet");
    await c.waitFor(`${spec.instanceId}: the baked images imported`, async () => node.read("/var/lib/containerd/.ak-baked-images") !== undefined, 120_000);
    return node;
}

/** The node image's preflight exceptions, as its `ignorePreflightErrors` list. */
export function ignoredPreflight(node: RealNode): string {
    return node.read("/etc/alicloud-kubeadm/ignore-preflight-errors")!.trim();
}

/**
 * Makes `node` a master at {@link FROM} with its own `kubeadm init`: InitConfiguration with the node image's patches and
 * preflight exceptions, the Node named by its provider id and the kubelet given it (as the product's, without the CCM), `controlPlaneEndpoint` its own address (no load balancer here), etcd at {@link ETCD_TAG}, and
 * kube-proxy leaving the machine's shared conntrack sysctls alone (as test/kube/cluster.ts's). Fails with kubeadm's output
 * and the kubelet's log.
 */
export async function kubeadmInitMaster(node: RealNode, name: string): Promise<void> {
    await node.sh("mkdir -p /etc/alicloud-kubeadm && cat > /etc/alicloud-kubeadm/init.yaml", { input: [
        "apiVersion: kubeadm.k8s.io/v1beta4", "kind: InitConfiguration",
        "localAPIEndpoint:", `  advertiseAddress: ${node.ip}`, "  bindPort: 6443",
        "nodeRegistration:", `  name: ${name}`, "  criSocket: unix:///run/containerd/containerd.sock",
        "  kubeletExtraArgs:", `    - { name: node-ip, value: ${node.ip} }`, `    - { name: provider-id, value: ${name} }`, `  ignorePreflightErrors: [${ignoredPreflight(node)}]`,
        "patches:", "  directory: /etc/alicloud-kubeadm/kubeadm-patches",
        "---",
        "apiVersion: kubeadm.k8s.io/v1beta4", "kind: ClusterConfiguration", `kubernetesVersion: v${FROM}`,
        `controlPlaneEndpoint: ${node.ip}:6443`, "networking:", "  podSubnet: 10.244.0.0/16", "  serviceSubnet: 10.96.0.0/12",
        "etcd:", "  local:", `    imageTag: ${ETCD_TAG}`,
        "---",
        "apiVersion: kubeproxy.config.k8s.io/v1alpha1", "kind: KubeProxyConfiguration",
        "conntrack: { maxPerCore: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s }", "",
    ].join("\n") });
    // the master's own kubeadm (v1.35.8) makes the cluster; its kubelet starts the static pods
    const init = await node.sh("kubeadm init --config /etc/alicloud-kubeadm/init.yaml 2>&1", { timeoutMs: 480_000, allowFail: true });
    if (init.code !== 0) throw new Error(`kubeadm init v${FROM} on ${node.instanceId}:\n${init.stdout.slice(-4000)}\n${node.log("kubelet.service").slice(-3000)}`);
}

/** kubectl on a master with its admin.conf (`server`: another API server, `https://<ip>:6443`); resolves with parsed JSON. */
export async function kubectlJson(node: RealNode, args: string[], server?: string): Promise<any> {
    const r = await node.run("kubectl", ["--kubeconfig", "/etc/kubernetes/admin.conf", ...(server ? ["--server", server] : []), ...args, "-o", "json"]);
    return JSON.parse(r.stdout);
}

/** Each static control-plane component's mirror pod of Node `nodeName`: its image and whether it is Ready. */
export async function controlPlanePods(node: RealNode, nodeName: string): Promise<Record<string, string>> {
    return Object.fromEntries(await Promise.all(CONTROL_PLANE_COMPONENTS.map(async (name) => {
        const pod = await kubectlJson(node, ["get", "pod", "-n", "kube-system", `${name}-${nodeName}`]);
        const ready = pod.status.conditions?.find((x: { type: string }) => x.type === "Ready")?.status === "True";
        return [name, `${pod.spec.containers[0].image} ${ready ? "Ready" : "not ready"}`];
    })));
}

/** What {@link controlPlanePods} reads when every component runs version `v`, Ready. */
export function controlPlaneAt(v: string): Record<string, string> {
    return Object.fromEntries(CONTROL_PLANE_COMPONENTS.map((name) => [name, `registry.k8s.io/${name}:v${v} Ready`]));
}
