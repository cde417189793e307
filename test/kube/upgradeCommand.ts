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
import { machineOverlays, missingNodeBinaries, realNodesUnavailable, type RealNodes } from "./nodes";

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

/** Cloud Assistant for the upgrade command of `mirror`: it runs on the real node of the instance, as root, from its file. */
export function answerUpgradeCommand(emu: Emulator, mirror: string, nodes: RealNodes): void {
    emu.onCommand(new RegExp(`AK_K8S_REPO_URL='${mirror.replace(/[.]/g, "\\.")}`), async (x) => {
        const node = nodes.get(x.instanceId);
        if (!node || node.stopped) return { exitCode: 1, output: `${x.instanceId}: no running node\n` };
        const r = await node.run("bash", ["-c", 'f=$(mktemp /root/command-XXXX.sh) && cat > "$f" && exec bash "$f" 2>&1'], { input: x.script, allowFail: true, timeoutMs: 900_000 });
        return { exitCode: r.code, output: r.stdout + r.stderr };
    });
}
