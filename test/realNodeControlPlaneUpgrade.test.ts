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
import { binDir, type Cluster } from "./kube/cluster";
import { missingControlPlaneArchives, realNodes, type RealNode } from "./kube/nodes";
import {
    answerUpgradeCommand, bootPreviousMinorNode, CONTROL_PLANE_COMPONENTS as COMPONENTS, controlPlaneAt, controlPlanePods, ETCD_TAG, FROM,
    kubeadmInitMaster, masterImages, saveUpgradeCommand, TO, upgradeNodeImage, useUpgradeWorld,
} from "./kube/upgradeCommand";
import { runUpgradeStep } from "../src/upgrade/run";
import { readInstanceVersions } from "../src/upgrade/status";

const REGION = "cn-hangzhou";
const MASTER_IP = "192.168.0.10"; // the fixture's: the VPC router and the package mirror's host
const NODE_IP = "192.168.0.31";
const NODE_ID = "i-bp1upgrademaster01";
const NODE = `${REGION}.${NODE_ID}`;

describe("real node master: kubeadm upgrade plan and apply through the upgrade command move its static-pod control plane from the previous minor", function () {
    this.timeout(900_000);
    const world = useUpgradeWorld({ region: REGION, masterIp: MASTER_IP, alsoNeeds: () => missingControlPlaneArchives(binDir(), [FROM, TO]) });
    const ctx = useEmulator();
    let c: Cluster;
    let node: RealNode;

    /** kubectl on the master with its admin.conf; resolves with stdout. */
    const kubectl = async (args: string[]) => (await node.run("kubectl", ["--kubeconfig", "/etc/kubernetes/admin.conf", ...args])).stdout;
    const json = async (args: string[]) => JSON.parse(await kubectl([...args, "-o", "json"]));
    const podsAt = async (v: string) => JSON.stringify(await controlPlanePods(node, NODE).catch(() => undefined)) === JSON.stringify(controlPlaneAt(v));

    before(async function () {
        this.timeout(600_000);
        c = world.c;
        const nodes = world.nodes = realNodes(c, { images: masterImages(), overlay: upgradeNodeImage({ podSubnet: "10.244.9.0/24", ignorePreflight: ["ImagePull"] }) });
        node = await bootPreviousMinorNode(c, nodes, { instanceId: NODE_ID, ip: NODE_IP });
        await kubeadmInitMaster(node, NODE);
        await c.waitFor(`the control plane v${FROM} Ready as static pods`, () => podsAt(FROM), 240_000);
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
        await c.waitFor(`the control plane v${TO} Ready as static pods`, () => podsAt(TO), 180_000);
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
        await c.waitFor(`the control plane v${TO} Ready under the new kubelet`, () => podsAt(TO), 180_000);
        assert.deepStrictEqual(await readInstanceVersions(access, id, NODE_ID), { kubeadm: TO, kubelet: TO, apiserver: TO });
    });
});
