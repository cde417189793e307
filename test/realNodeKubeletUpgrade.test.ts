/**
 * World: a real control plane v1.36.3 (test/kube/cluster.ts, on a VPC bridge) and one real worker node
 * (test/kube/nodes.ts: kubelet, containerd, runc, CNI bridge in namespaces of its own) made with the previous minor's
 * packages, kubeadm and kubelet **v1.35.8**, joined with its own kubeadm. The cloud is the emulator: its Cloud Assistant
 * runs the saved upgrade command (src/shell/upgrade.sh as renderUpgradeCommand renders it) on the node, as root from its
 * script file, and the saved drain and uncordon operations on the master with the real kubectl. The package source is a
 * stand-in for the mirror: a local apt repository (test/kube/aptRepo.ts) of .debs wrapping the built v1.36.3 kubeadm,
 * kubelet and kubectl, signed by a key made for the run and served over HTTP in the VPC; the node's apt-get, dpkg and
 * gpg are this machine's real ones. The node's systemd is the `systemctl` stand-in of test/kube/nodes.ts.
 *
 * What it shows, from the cluster's and the node's state: the product's node upgrade (src/upgrade/nodes.ts's steps: drain
 * with the upgrade's mark, `kubeadm`, `node`, `kubelet`, uncordon) moves the worker's kubelet in place from v1.35.8 to
 * v1.36.3 while its pods are evicted, and the pods come back on it. Skipped with one line without the binaries or where
 * the machine cannot run real nodes (fails under CI=true).
 */
import * as assert from "assert";
import { useEmulator } from "../testing/emulator/fixture";
import { operation, saveNodeCommands } from "../testing/savedCommands";
import { previousKubernetes, type Cluster } from "./kube/cluster";
import { realNodes, WORKLOAD_IMAGE, type RealNode } from "./kube/nodes";
import { answerUpgradeCommand, FROM, saveUpgradeCommand, TO, upgradeNodeImage, useUpgradeWorld } from "./kube/upgradeCommand";
import { answerWithRealCluster, type RealOperations } from "./kube/operations";
import type { NodeCommandIds } from "../src/rules";
import { drainNode, uncordonNode, type ClusterAccess } from "../src/cloud/operations";
import { runUpgradeStep } from "../src/upgrade/run";

const REGION = "cn-hangzhou";
const MASTER_IP = "192.168.0.10";
const NODE_IP = "192.168.0.21";
const NODE_ID = "i-bp1upgradeworker01";
const NODE = `${REGION}.${NODE_ID}`;
describe("real node: a worker's kubelet upgraded in place from the previous minor through the upgrade command, its pods drained and back", function () {
    this.timeout(600_000);
    const world = useUpgradeWorld({ region: REGION, masterIp: MASTER_IP });
    const ctx = useEmulator();
    let c: Cluster;
    let node: RealNode;
    let ops: RealOperations;
    let access: ClusterAccess;
    let upgradeCommandId: string;

    before(async function () {
        this.timeout(300_000);
        c = world.c;
        const prev = previousKubernetes();
        // the node image, and a CNI bridge for the pods (no pod network add-on here: one node)
        const image = upgradeNodeImage({ podSubnet: "10.244.7.0/24" });
        world.nodes = realNodes(c, { images: [{ archive: "pause" }, { archive: "workload" }], overlay: image });
        node = await world.nodes.boot({ instanceId: NODE_ID, ip: NODE_IP, hostname: NODE_ID, kubeBin: prev.bin });
        // what the project's prepare step leaves (docs/real-cluster.md): containerd up with the baked images, forwarding on
        await node.sh("echo 1 > /proc/sys/net/ipv4/ip_forward && systemctl enable --now containerd && systemctl enable kubelet");
        await c.waitFor("the node's baked images imported", async () => node.read("/var/lib/containerd/.ak-baked-images") !== undefined, 60_000);
        const token = (await c.run("kubeadm", ["token", "create", "--kubeconfig", c.kubeconfig])).stdout.trim();
        const ignore = (image["/etc/alicloud-kubeadm/ignore-preflight-errors"] ?? "").trim();
        await node.sh("mkdir -p /etc/alicloud-kubeadm && cat > /etc/alicloud-kubeadm/join.yaml", { input: [
            "apiVersion: kubeadm.k8s.io/v1beta4", "kind: JoinConfiguration",
            "discovery:", "  bootstrapToken:", `    apiServerEndpoint: ${c.vpc!.apiEndpoint}`, `    token: ${token}`, `    caCertHashes: ["${c.caCertHash}"]`,
            "nodeRegistration:", `  name: ${NODE}`, "  criSocket: unix:///run/containerd/containerd.sock",
            "  kubeletExtraArgs:", `    - { name: provider-id, value: ${NODE} }`, `    - { name: node-ip, value: ${NODE_IP} }`,
            "    - { name: node-labels, value: alicloud-kubeadm.test/upgrade=worker }",
            ...(ignore ? [`  ignorePreflightErrors: [${ignore}]`] : []),
            "patches:", "  directory: /etc/alicloud-kubeadm/kubeadm-patches", "",
        ].join("\n") });
        // the node's own kubeadm (v1.35.8) joins it, as the node was made before the control plane moved
        await node.sh("kubeadm join --config /etc/alicloud-kubeadm/join.yaml", { timeoutMs: 180_000 });
        await c.waitFor(`${NODE} Ready`, async () => {
            const n = JSON.parse(await c.kubectl(["get", "node", NODE, "-o", "json", "--ignore-not-found"]) || "null");
            return n?.status.conditions.find((x: { type: string }) => x.type === "Ready")?.status === "True";
        }, 120_000);
    });

    // the emulator is per test (useEmulator)
    beforeEach(async function () {
        const emu = ctx.emu;
        const master = emu.addInstance({ instanceId: "i-master0", regionId: REGION }).instanceId;
        emu.addInstance({ instanceId: NODE_ID, regionId: REGION, privateIp: NODE_IP });
        const commands: NodeCommandIds = await saveNodeCommands(REGION);
        upgradeCommandId = await saveUpgradeCommand(REGION, TO, world.repo.mirror);
        answerUpgradeCommand(emu, world.repo.mirror, world.nodes!);
        ops = answerWithRealCluster(emu, c, { master, realNodes: world.nodes! });
        // the upgrade's uncordon, on the master like the drain
        emu.onCommand(operation("uncordon"), (x) => ops.runOnMaster(x.script));
        access = { region: REGION, masterInstanceIds: [master], commands, pollIntervalMs: 20 };
    });
    afterEach(() => ops?.cleanup());

    const nodeObject = async () => JSON.parse(await c.kubectl(["get", "node", NODE, "-o", "json"]));
    const webPods = async (): Promise<Array<{ uid: string; node: string; phase: string }>> =>
        (JSON.parse(await c.kubectl(["get", "pods", "-n", "default", "-l", "app=web", "-o", "json"])).items as any[])
            .filter((p) => !p.metadata.deletionTimestamp)
            .map((p) => ({ uid: p.metadata.uid, node: p.spec.nodeName ?? "", phase: p.status.phase }));
    const installed = async (pkg: string) => (await node.sh(`dpkg-query -W -f '\${Version} \${Status}' ${pkg} 2>/dev/null || true`)).stdout.trim();

    it(`drain → kubeadm → kubeadm upgrade node → kubelet → uncordon: the Node reports kubelet v${TO}, the packages come from the mirror, the pods are back`, async function () {
        // before: the node runs the previous minor, with two pods of a Deployment
        assert.strictEqual((await nodeObject()).status.nodeInfo.kubeletVersion, `v${FROM}`);
        await c.apply({
            apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "web", namespace: "default" },
            spec: { replicas: 2, selector: { matchLabels: { app: "web" } }, template: { metadata: { labels: { app: "web" } }, spec: {
                nodeSelector: { "alicloud-kubeadm.test/upgrade": "worker" }, terminationGracePeriodSeconds: 1,
                containers: [{ name: "web", image: WORKLOAD_IMAGE, imagePullPolicy: "Never" }] } } },
        });
        const before = await c.waitFor("two web pods Running on the node", async () => {
            const pods = await webPods();
            return pods.length === 2 && pods.every((p) => p.phase === "Running" && p.node === NODE) ? pods : undefined;
        }, 120_000);

        // drain with the upgrade's mark: the pods are evicted; with no other node, their replacements wait
        await drainNode(access, NODE, { timeoutSeconds: 120, force: false, skipWaitSeconds: 0, mark: "upgrading" });
        const drained = await nodeObject();
        assert.strictEqual(drained.spec.unschedulable, true);
        assert.ok(drained.metadata.annotations?.["alicloud-kubeadm/upgrading"] !== undefined, "the drain's upgrade mark");
        const during = await webPods();
        assert.ok(during.every((p) => !before.some((b) => b.uid === p.uid)), "the pods were evicted");
        assert.ok(during.every((p) => p.node === ""), `no pod placed on the cordoned node: ${JSON.stringify(during)}`);

        // the upgrade command's steps, as the node upgrade runs them
        assert.match(await runUpgradeStep(access, upgradeCommandId, NODE_ID, "kubeadm"), /upgrade-step=kubeadm result=ok/);
        assert.strictEqual((await node.run("kubeadm", ["version", "-o", "short"])).stdout.trim(), `v${TO}`);
        assert.strictEqual(await installed("kubeadm"), `${TO}-1.1 hold ok installed`);
        assert.strictEqual((await nodeObject()).status.nodeInfo.kubeletVersion, `v${FROM}`, "the kubelet moves only in its own step");

        assert.match(await runUpgradeStep(access, upgradeCommandId, NODE_ID, "node"), /upgrade-step=node result=ok/);
        // `kubeadm upgrade node` rewrote the kubelet's configuration from the cluster's, with the node image's patch kept
        // (without it this machine's kubelet would not start: cgroupfs, its cgroup root, cgroup v1 allowed)
        assert.match(node.read("/var/lib/kubelet/config.yaml") ?? "", new RegExp(`^cgroupRoot: ${node.cgroupRoot}$`, "m"));
        assert.match(await runUpgradeStep(access, upgradeCommandId, NODE_ID, "kubelet"), /upgrade-step=kubelet result=ok/);
        assert.strictEqual(await installed("kubelet"), `${TO}-1.1 hold ok installed`);
        assert.strictEqual(await installed("kubectl"), `${TO}-1.1 hold ok installed`);
        const moved = await c.waitFor(`${NODE} Ready with kubelet v${TO}`, async () => {
            const n = await nodeObject();
            return n.status.nodeInfo.kubeletVersion === `v${TO}` && n.status.conditions.find((x: { type: string }) => x.type === "Ready")?.status === "True" ? n : undefined;
        }, 120_000);
        assert.strictEqual(moved.spec.unschedulable, true, "still cordoned until the uncordon step");

        assert.strictEqual(await uncordonNode(access, NODE, "upgrading"), "uncordoned");
        const after = await nodeObject();
        assert.ok(!after.spec.unschedulable);
        assert.strictEqual(after.metadata.annotations?.["alicloud-kubeadm/upgrading"], undefined);
        const back = await c.waitFor("the web pods back on the node, Running", async () => {
            const pods = await webPods();
            return pods.length === 2 && pods.every((p) => p.phase === "Running" && p.node === NODE) ? pods : undefined;
        }, 180_000).catch(async (err) => {
            // what kept them away, for whoever reads the failure
            console.log(await c.kubectl(["describe", "pods", "-n", "default", "-l", "app=web"], { allowFail: true }), node.log("kubelet.service").slice(-4000));
            throw err;
        });
        assert.ok(back.every((p) => !before.some((b) => b.uid === p.uid)), "new pods, not the evicted ones");
        // the kubelet that runs them is the package's binary, not the one the node was made with
        assert.match((await node.sh("kubelet --version")).stdout, new RegExp(`Kubernetes v${TO.replace(/\./g, "\\.")}`));
    });
});
