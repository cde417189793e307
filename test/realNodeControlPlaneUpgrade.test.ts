/**
 * World: one real node (test/kube/nodes.ts: kubelet, containerd, runc, CNI bridge in namespaces of its own, on the VPC
 * bridge of a real-cluster fixture that is otherwise only its router and its package mirror's host) made with the
 * previous minor's packages, kubeadm and kubelet **v1.35.8**, and made a master by its own `kubeadm init`: its kubelet
 * runs etcd, kube-apiserver, kube-controller-manager and kube-scheduler v1.35.8 as static pods, from OCI images of the
 * binaries `npm run kube:build` built (packed as the pause image is, imported from archives: no registry). The cloud is
 * the emulator: its Cloud Assistant runs the saved upgrade command (src/shell/upgrade.sh as renderUpgradeCommand renders
 * it) on the node, as root from its script file. The package source is a stand-in for the mirror: a local signed apt
 * repository of .debs wrapping the built v1.36.3 kubeadm, kubelet and kubectl (test/kube/aptRepo.ts).
 *
 * What it shows, from the cluster's state (read with the master's admin.conf) and the master's files: the upgrade
 * command's steps `kubeadm`, `plan` and `apply`, as ControlPlaneVersion runs them on a single master
 * (src/upgrade/controlPlane.ts), move the control plane's static pods from v1.35.8 to v1.36.3 with the real
 * `kubeadm upgrade apply`, and with it (a single master is the last one) kubeadm-config, kube-proxy and CoreDNS; then the
 * `kubelet` step moves the master's kubelet. Skipped with one line without the binaries and images or where the machine
 * cannot run real nodes (fails under CI=true).
 */
import * as assert from "assert";
import { useEmulator } from "../testing/emulator/fixture";
import { binDir, previousKubernetes, type Cluster } from "./kube/cluster";
import { missingControlPlaneArchives, realNodes, type RealNode } from "./kube/nodes";
import { answerUpgradeCommand, FROM, saveUpgradeCommand, TO, upgradeNodeImage, useUpgradeWorld } from "./kube/upgradeCommand";
import { runUpgradeStep } from "../src/upgrade/run";
import { readInstanceVersions } from "../src/upgrade/status";

const REGION = "cn-hangzhou";
const MASTER_IP = "192.168.0.10"; // the fixture's: the VPC router and the package mirror's host
const NODE_IP = "192.168.0.31";
const NODE_ID = "i-bp1upgrademaster01";
const NODE = `${REGION}.${NODE_ID}`;
/** etcd of both versions: the tag kubeadm v1.36 names for v1.35 and v1.36 alike (v1.35's kubeadm would name 3.6.6-0). */
const ETCD_TAG = "3.6.8-0";
const COMPONENTS = ["kube-apiserver", "kube-controller-manager", "kube-scheduler"] as const;

describe("real node master: kubeadm upgrade plan and apply through the upgrade command move its static-pod control plane from the previous minor", function () {
    this.timeout(900_000);
    const world = useUpgradeWorld({ region: REGION, masterIp: MASTER_IP, alsoNeeds: () => missingControlPlaneArchives(binDir(), [FROM, TO]) });
    const ctx = useEmulator();
    let c: Cluster;
    let node: RealNode;

    /** kubectl on the master with its admin.conf; resolves with stdout. */
    const kubectl = async (args: string[]) => (await node.run("kubectl", ["--kubeconfig", "/etc/kubernetes/admin.conf", ...args])).stdout;
    const json = async (args: string[]) => JSON.parse(await kubectl([...args, "-o", "json"]));
    /** Each control-plane component's mirror pod on the master: the image tag and whether it is Ready. */
    const controlPlanePods = async () => Object.fromEntries(await Promise.all(COMPONENTS.map(async (name) => {
        const pod = await json(["get", "pod", "-n", "kube-system", `${name}-${NODE}`]);
        const ready = pod.status.conditions?.find((x: { type: string }) => x.type === "Ready")?.status === "True";
        return [name, `${pod.spec.containers[0].image} ${ready ? "Ready" : "not ready"}`];
    })));
    const expected = (v: string) => Object.fromEntries(COMPONENTS.map((name) => [name, `registry.k8s.io/${name}:v${v} Ready`]));

    before(async function () {
        this.timeout(600_000);
        c = world.c;
        // the node image: the control plane's images of both versions baked in (a node pulls them; here nothing is pulled).
        // ImagePull: kubeadm's preflight pulls every image it names, and CoreDNS, v1.35's kube-proxy and pause 3.10.1 are
        // none of the archives (their pods are not what this test runs)
        const nodes = world.nodes = realNodes(c, {
            images: [{ archive: "pause" }, { archive: "etcd" }, { archive: "kube-proxy" },
                ...[FROM, TO].flatMap((v) => COMPONENTS.map((name) => ({ archive: `${name}-v${v}` as const })))],
            overlay: upgradeNodeImage({ podSubnet: "10.244.9.0/24", ignorePreflight: ["ImagePull"] }),
        });
        node = await nodes.boot({ instanceId: NODE_ID, ip: NODE_IP, hostname: NODE_ID, kubeBin: previousKubernetes().bin });
        await node.sh("echo 1 > /proc/sys/net/ipv4/ip_forward && systemctl enable --now containerd && systemctl enable kubelet");
        await c.waitFor("the node's baked images imported", async () => node.read("/var/lib/containerd/.ak-baked-images") !== undefined, 120_000);
        const ignore = node.read("/etc/alicloud-kubeadm/ignore-preflight-errors")!.trim();
        await node.sh("cat > /etc/alicloud-kubeadm/init.yaml", { input: [
            "apiVersion: kubeadm.k8s.io/v1beta4", "kind: InitConfiguration",
            "localAPIEndpoint:", `  advertiseAddress: ${NODE_IP}`, "  bindPort: 6443",
            "nodeRegistration:", `  name: ${NODE}`, "  criSocket: unix:///run/containerd/containerd.sock",
            "  kubeletExtraArgs:", `    - { name: node-ip, value: ${NODE_IP} }`, `  ignorePreflightErrors: [${ignore}]`,
            "patches:", "  directory: /etc/alicloud-kubeadm/kubeadm-patches",
            "---",
            "apiVersion: kubeadm.k8s.io/v1beta4", "kind: ClusterConfiguration", `kubernetesVersion: v${FROM}`,
            `controlPlaneEndpoint: ${NODE_IP}:6443`, "networking:", "  podSubnet: 10.244.0.0/16", "  serviceSubnet: 10.96.0.0/12",
            "etcd:", "  local:", `    imageTag: ${ETCD_TAG}`, "",
        ].join("\n") });
        // the master's own kubeadm (v1.35.8) makes the cluster; its kubelet starts the static pods
        const init = await node.sh("kubeadm init --config /etc/alicloud-kubeadm/init.yaml 2>&1", { timeoutMs: 480_000, allowFail: true });
        assert.strictEqual(init.code, 0, `kubeadm init v${FROM}:\n${init.stdout.slice(-4000)}\n${node.log("kubelet.service").slice(-3000)}`);
        await c.waitFor(`the control plane v${FROM} Ready as static pods`, async () => {
            try {
                return JSON.stringify(await controlPlanePods()) === JSON.stringify(expected(FROM));
            } catch {
                return false; // the mirror pods are not there yet
            }
        }, 240_000);
    });

    it(`kubeadm → plan → apply → kubelet: every static pod, kubeadm-config, kube-proxy and CoreDNS at v${TO}; the master's kubelet too`, async function () {
        const emu = ctx.emu;
        emu.addInstance({ instanceId: NODE_ID, regionId: REGION, privateIp: NODE_IP });
        const access = { region: REGION, pollIntervalMs: 50 };
        const id = await saveUpgradeCommand(REGION, TO, world.repo.mirror);
        answerUpgradeCommand(emu, world.repo.mirror, world.nodes!);

        // before: what the upgrade reads of this master (the status step), and the cluster's own versions
        assert.deepStrictEqual(await readInstanceVersions(access, id, NODE_ID), { kubeadm: FROM, kubelet: FROM, apiserver: FROM });
        assert.strictEqual((await json(["version"])).serverVersion.gitVersion, `v${FROM}`);

        await runUpgradeStep(access, id, NODE_ID, "kubeadm");
        assert.deepStrictEqual(await readInstanceVersions(access, id, NODE_ID), { kubeadm: TO, kubelet: FROM, apiserver: FROM });

        const manifests = () => Object.fromEntries(COMPONENTS.map((name) => [name, node.read(`/etc/kubernetes/manifests/${name}.yaml`) ?? ""]));
        const before = manifests();
        const plan = await runUpgradeStep(access, id, NODE_ID, "plan").catch(async (err) => {
            // what kubeadm's health check saw, for whoever reads the failure
            console.log(await kubectl(["get", "pods,jobs,events", "-A", "-o", "wide"]).catch((e) => String(e)), node.log("kubelet.service").slice(-3000));
            throw err;
        });
        assert.match(plan, /upgrade-step=plan result=ok/);
        assert.deepStrictEqual(manifests(), before, "plan changes no static pod");

        await runUpgradeStep(access, id, NODE_ID, "apply");
        // the static pods kubeadm rewrote, restarted by the kubelet from the new images, and the API server serving the target
        for (const name of COMPONENTS) assert.match(manifests()[name], new RegExp(`image: registry\\.k8s\\.io/${name}:v${TO.replace(/\./g, "\\.")}\n`));
        await c.waitFor(`the control plane v${TO} Ready as static pods`, async () =>
            JSON.stringify(await controlPlanePods().catch(() => undefined)) === JSON.stringify(expected(TO)), 180_000);
        assert.strictEqual((await json(["version"])).serverVersion.gitVersion, `v${TO}`);
        assert.match(node.read("/etc/kubernetes/manifests/etcd.yaml") ?? "", new RegExp(`image: registry\\.k8s\\.io/etcd:${ETCD_TAG.replace(/\./g, "\\.")}`));
        const clusterConfig = (await json(["get", "configmap", "-n", "kube-system", "kubeadm-config"])).data.ClusterConfiguration as string;
        assert.match(clusterConfig, new RegExp(`^kubernetesVersion: v${TO.replace(/\./g, "\\.")}$`, "m"));
        // a single master is the last one: apply moved the add-ons
        const image = async (kind: string, name: string) => (await json(["get", kind, "-n", "kube-system", name])).spec.template.spec.containers[0].image;
        assert.strictEqual(await image("daemonset", "kube-proxy"), `registry.k8s.io/kube-proxy:v${TO}`);
        assert.match(await image("deployment", "coredns"), /coredns:v1\.14\.2$/);
        assert.deepStrictEqual(await readInstanceVersions(access, id, NODE_ID), { kubeadm: TO, kubelet: FROM, apiserver: TO });

        // the master's kubelet: the package, restarted; its Node reports it and the static pods come back under it
        await runUpgradeStep(access, id, NODE_ID, "kubelet");
        await c.waitFor(`${NODE} Ready with kubelet v${TO}`, async () => {
            const n = await json(["get", "node", NODE]).catch(() => undefined);
            return n?.status.nodeInfo.kubeletVersion === `v${TO}` && n.status.conditions.find((x: { type: string }) => x.type === "Ready")?.status === "True";
        }, 180_000);
        await c.waitFor(`the control plane v${TO} Ready under the new kubelet`, async () =>
            JSON.stringify(await controlPlanePods().catch(() => undefined)) === JSON.stringify(expected(TO)), 180_000);
        assert.deepStrictEqual(await readInstanceVersions(access, id, NODE_ID), { kubeadm: TO, kubelet: TO, apiserver: TO });
    });
});
