/**
 * World: two real nodes (test/kube/nodes.ts: kubelet, containerd, runc, CNI bridge in namespaces of their own, on the VPC
 * bridge of a real-cluster fixture that is otherwise only its router and its package mirror's host), both made with the
 * previous minor's packages, kubeadm and kubelet **v1.35.8**. The first is made a master by its own `kubeadm init`; the
 * second joins it as a control-plane member with its own `kubeadm join --control-plane`, the certificates fetched with a
 * certificate key the first uploaded (`kubeadm init phase upload-certs --upload-certs` and a bootstrap token, the
 * commands the project's join-secrets operation runs). Each kubelet runs etcd (one stacked member each),
 * kube-apiserver, kube-controller-manager and kube-scheduler as static pods from OCI images of the binaries `npm run
 * kube:build` built, imported from archives (no registry). `kubeadm init` installed kube-proxy and CoreDNS (their objects;
 * CoreDNS and v1.35's kube-proxy have no image here, so those pods do not run). The cloud is the emulator: its Cloud
 * Assistant runs the saved upgrade command (src/shell/upgrade.sh as renderUpgradeCommand renders it) and the saved
 * operations (upgrade-status, drain, uncordon, etcd-health, etcd-backup-now) on the real master it is invoked on, as
 * root from its script file. The package source is a stand-in for the mirror: a local signed apt repository of .debs
 * wrapping the built v1.36.3 kubeadm, kubelet and kubectl (test/kube/aptRepo.ts).
 *
 * What it shows, from the cluster's state (the API servers, etcd) between the steps: the product's control-plane upgrade
 * (src/upgrade/controlPlane.ts `upgradeControlPlane`, as ControlPlaneVersion runs it) moves the two masters one at a
 * time — `kubeadm upgrade apply` on the first, `kubeadm upgrade node` on the second — and kubeadm's addon phase moves
 * kube-proxy and CoreDNS only with the last master's `upgrade node`, not with the first's `apply`. Skipped with one line
 * without the binaries and images or where the machine cannot run real nodes (fails under CI=true).
 */
import * as assert from "assert";
import * as path from "path";
import { useEmulator } from "../testing/emulator/fixture";
import { saveNodeCommands } from "../testing/savedCommands";
import { binDir, type Cluster } from "./kube/cluster";
import { missingControlPlaneArchives, realNodes, type RealNode } from "./kube/nodes";
import {
    answerOperationsOnRealMasters, answerUpgradeCommand, bootPreviousMinorNode, controlPlaneAt, controlPlanePods, FROM, ignoredPreflight,
    kubeadmInitMaster, kubectlJson, masterImages, saveUpgradeCommand, TO, upgradeNodeImage, useUpgradeWorld,
} from "./kube/upgradeCommand";
import type { ClusterAccess } from "../src/cloud/operations";
import { upgradeControlPlane } from "../src/upgrade/controlPlane";

const REGION = "cn-hangzhou";
const ROUTER_IP = "192.168.0.10"; // the fixture's: the VPC router and the package mirror's host
const M1 = { instanceId: "i-bp1upgrademaster11", ip: "192.168.0.41" };
const M2 = { instanceId: "i-bp1upgrademaster12", ip: "192.168.0.42" };
const nodeName = (m: { instanceId: string }) => `${REGION}.${m.instanceId}`;
/** CoreDNS as each minor's kubeadm names it (cmd/kubeadm/app/constants: CoreDNSVersion). */
const COREDNS = { [FROM]: "registry.k8s.io/coredns/coredns:v1.13.1", [TO]: "registry.k8s.io/coredns/coredns:v1.14.2" };
const kubeProxyImage = (v: string) => `registry.k8s.io/kube-proxy:v${v}`;

/** What the cluster was after one step of the upgrade command. */
interface Seen { instance: string; step: string; kubeProxy: string; coreDns: string; apiServers: Record<string, string> }

describe("real node masters: the second master's kubeadm upgrade node, after the first's apply, is what moves kube-proxy and CoreDNS", function () {
    this.timeout(1_500_000);
    const world = useUpgradeWorld({ region: REGION, masterIp: ROUTER_IP, alsoNeeds: () => missingControlPlaneArchives(binDir(), [FROM, TO]) });
    const ctx = useEmulator();
    let c: Cluster;
    let m1: RealNode;
    let m2: RealNode;

    /** A read of the cluster through whichever API server answers (one of them restarts during a step). */
    const read = async (args: string[]): Promise<any> => {
        let last: unknown;
        for (const m of [m1, m2]) {
            try {
                return await kubectlJson(m, args, `https://${m.ip}:6443`);
            } catch (err) {
                last = err;
            }
        }
        throw last;
    };
    const addonImage = async (kind: string, name: string): Promise<string> =>
        (await read(["get", kind, "-n", "kube-system", name])).spec.template.spec.containers[0].image;
    /** Each master's kube-apiserver mirror pod's image, by Node: what kubeadm's addon phase compares. */
    const apiServerImages = async (): Promise<Record<string, string>> => Object.fromEntries(
        (await read(["get", "pods", "-n", "kube-system", "-l", "component=kube-apiserver"])).items.map((p: any) => [p.spec.nodeName, p.spec.containers[0].image]));
    /**
     * The static pods a master's control-plane mirror pods mirror (by pod name, `<component>-<node>`): the hash of each
     * (annotation kubernetes.io/config.hash), which a kubelet that restarts the pod for a new manifest or as another
     * minor changes (docs/upstream.md#static-pod-hash). Not the container ids: a controller-manager that lost its lease
     * while etcd had no quorum restarts its container in the same pod.
     */
    const staticContainers = async (m: { instanceId: string }): Promise<Record<string, string>> => {
        const names = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"].map((x) => `${x}-${nodeName(m)}`);
        const pods = (await read(["get", "pods", "-n", "kube-system", ...names])).items as Array<{ metadata: { name: string; annotations?: Record<string, string> } }>;
        return Object.fromEntries(pods.map((p) => [p.metadata.name, p.metadata.annotations?.["kubernetes.io/config.hash"] ?? ""]));
    };
    const masterPodsAt = async (v: string) => {
        for (const m of [M1, M2]) if (JSON.stringify(await controlPlanePods(m1, nodeName(m)).catch(() => undefined)) !== JSON.stringify(controlPlaneAt(v))) return false;
        return true;
    };

    before(async function () {
        this.timeout(900_000);
        c = world.c;
        // one node image for both (the same pod range on each bridge: no pod traffic crosses the two here)
        const nodes = world.nodes = realNodes(c, { images: masterImages(), overlay: upgradeNodeImage({ podSubnet: "10.244.11.0/24", ignorePreflight: ["ImagePull"] }) });
        m1 = await bootPreviousMinorNode(c, nodes, M1);
        await kubeadmInitMaster(m1, nodeName(M1));
        // what join-secrets runs on a master: a fresh certificate key for the control-plane certificates, a bootstrap token
        const key = (await m1.sh("kubeadm init phase upload-certs --upload-certs 2>/dev/null | tail -n 1")).stdout.trim();
        assert.match(key, /^[0-9a-f]{64}$/);
        const join = (await m1.sh("kubeadm token create --ttl 30m --print-join-command")).stdout;
        const token = /--token (\S+)/.exec(join)?.[1];
        const hash = /--discovery-token-ca-cert-hash (sha256:[0-9a-f]{64})/.exec(join)?.[1];
        assert.ok(token && hash, join);

        m2 = await bootPreviousMinorNode(c, nodes, M2);
        // the JoinConfiguration attach_node.sh writes for a control-plane member (controlPlane.certificateKey), with the
        // node image's patches and preflight exceptions
        await m2.sh("cat > /etc/alicloud-kubeadm/join.yaml", { input: [
            "apiVersion: kubeadm.k8s.io/v1beta4", "kind: JoinConfiguration",
            "discovery:", "  bootstrapToken:", `    apiServerEndpoint: ${M1.ip}:6443`, `    token: ${token}`, `    caCertHashes: ["${hash}"]`,
            "nodeRegistration:", `  name: ${nodeName(M2)}`, "  criSocket: unix:///run/containerd/containerd.sock",
            "  kubeletExtraArgs:", `    - { name: node-ip, value: ${M2.ip} }`, `    - { name: provider-id, value: ${nodeName(M2)} }`, `  ignorePreflightErrors: [${ignoredPreflight(m2)}]`,
            "controlPlane:", `  certificateKey: ${key}`,
            "patches:", "  directory: /etc/alicloud-kubeadm/kubeadm-patches", "",
        ].join("\n") });
        const joined = await m2.sh("kubeadm join --config /etc/alicloud-kubeadm/join.yaml 2>&1", { timeoutMs: 480_000, allowFail: true });
        assert.strictEqual(joined.code, 0, `kubeadm join --control-plane v${FROM}:\n${joined.stdout.slice(-4000)}\n${m2.log("kubelet.service").slice(-3000)}`);
        await c.waitFor(`both control planes v${FROM} Ready as static pods`, () => masterPodsAt(FROM), 300_000);
    });

    it(`upgradeControlPlane to v${TO}: apply on the first, node on the second; kube-proxy and CoreDNS move with the second's node, not before`, async function () {
        const emu = ctx.emu;
        for (const m of [M1, M2]) emu.addInstance({ instanceId: m.instanceId, regionId: REGION, privateIp: m.ip });
        const access: ClusterAccess = { region: REGION, masterInstanceIds: [M1.instanceId, M2.instanceId], commands: await saveNodeCommands(REGION), pollIntervalMs: 50 };
        const upgradeCommandId = await saveUpgradeCommand(REGION, TO, world.repo.mirror);
        answerOperationsOnRealMasters(emu, world.nodes!);
        const seen: Seen[] = [];
        /** The first master's static pods' containers when the second master's first step starts. */
        let firstAtSecond: Record<string, string> | undefined;
        answerUpgradeCommand(emu, world.repo.mirror, world.nodes!, {
            before: async (instance, step) => {
                if (instance === M2.instanceId && step !== "status" && !firstAtSecond) firstAtSecond = await staticContainers(M1);
            },
            after: async (instance, step, exitCode) => {
                if (step === "status" || exitCode !== 0) return;
                seen.push({ instance, step, kubeProxy: await addonImage("daemonset", "kube-proxy"), coreDns: await addonImage("deployment", "coredns"), apiServers: await apiServerImages() });
            },
        });

        // before: two members at the previous minor, the add-ons as its kubeadm installed them
        assert.strictEqual(await addonImage("daemonset", "kube-proxy"), kubeProxyImage(FROM));
        assert.strictEqual(await addonImage("deployment", "coredns"), COREDNS[FROM]);

        const log: string[] = [];
        await upgradeControlPlane({ access, target: TO, upgradeCommandId, log: (m) => log.push(m), gate: { intervalMs: 2_000, timeoutMs: 300_000 } })
            .catch(async (err) => {
                console.log(log.join("\n"), JSON.stringify(seen, null, 1), ...[m1, m2].map((m) => (m.read(`/var/log/alicloud-kubeadm/upgrade-${TO}.log`) ?? "").slice(-5000)), (await m1.run("kubectl", ["--kubeconfig", "/etc/kubernetes/admin.conf", "get", "pods,nodes,jobs,events", "-A", "-o", "wide"], { allowFail: true })).stdout);
                throw err;
            });

        // The gate waited for each master's new kubelet to restart its static pods: the second master's pods now are the
        // ones it keeps; the first master's did not change after the second master's first step.
        const secondAtEnd = await staticContainers(M2);

        // one master at a time, each step decided by the product: apply on the first, node on the second
        assert.deepStrictEqual(seen.map((s) => `${s.instance} ${s.step}`), [
            ...["kubeadm", "plan", "apply", "kubelet"].map((s) => `${M1.instanceId} ${s}`),
            ...["kubeadm", "node", "kubelet"].map((s) => `${M2.instanceId} ${s}`),
        ]);
        const at = (instance: string, step: string) => seen.find((s) => s.instance === instance && s.step === step)!;
        // after the first master's apply: its API server moved, the second's not; kubeadm's addon phase skipped
        assert.deepStrictEqual(at(M1.instanceId, "apply").apiServers, {
            [nodeName(M1)]: `registry.k8s.io/kube-apiserver:v${TO}`, [nodeName(M2)]: `registry.k8s.io/kube-apiserver:v${FROM}`,
        });
        // every step before the last master's `upgrade node` left kube-proxy and CoreDNS where init put them
        const lastNode = seen.findIndex((s) => s.instance === M2.instanceId && s.step === "node");
        for (const s of seen.slice(0, lastNode)) {
            assert.deepStrictEqual([s.kubeProxy, s.coreDns], [kubeProxyImage(FROM), COREDNS[FROM]], `after ${s.instance} ${s.step}`);
        }
        // the last master's `upgrade node`: both API servers at the target, and the addon phase moved both add-ons
        assert.deepStrictEqual(seen[lastNode].apiServers, {
            [nodeName(M1)]: `registry.k8s.io/kube-apiserver:v${TO}`, [nodeName(M2)]: `registry.k8s.io/kube-apiserver:v${TO}`,
        });
        assert.deepStrictEqual([seen[lastNode].kubeProxy, seen[lastNode].coreDns], [kubeProxyImage(TO), COREDNS[TO]]);

        // the end: each API server serves the target, every static pod Ready at it, each master's kubelet at it. (Waited
        // for: the last master's new kubelet may restart its static pods after the gate passed — seen here as its API
        // server answering `Forbidden` before its authorizer was ready; docs/real-cluster.md#second-master-upgrade.)
        for (const m of [m1, m2]) {
            await c.waitFor(`${m.instanceId}'s own API server serving v${TO}`, async () =>
                (await kubectlJson(m, ["version"], `https://${m.ip}:6443`).catch(() => undefined))?.serverVersion?.gitVersion === `v${TO}`, 180_000);
        }
        await c.waitFor(`every static pod of both masters Ready at v${TO}`, () => masterPodsAt(TO), 180_000);
        assert.deepStrictEqual(await staticContainers(M1), firstAtSecond, "the first master's static pods restarted after the second master's first step");
        assert.deepStrictEqual(await staticContainers(M2), secondAtEnd, "the last master's static pods restarted after its gate passed");
        assert.strictEqual(Object.keys(secondAtEnd).length, 4);
        for (const m of [M1, M2]) {
            const n = await read(["get", "node", nodeName(m)]);
            assert.deepStrictEqual([n.status.nodeInfo.kubeletVersion, n.status.conditions.find((x: { type: string }) => x.type === "Ready")?.status, !!n.spec.unschedulable],
                [`v${TO}`, "True", false], nodeName(m));
        }
        // etcd: two voting members, both healthy (etcdctl against both, with the masters' health-check client certificate)
        const pki = "/etc/kubernetes/pki/etcd";
        const etcdctl = async (args: string[]) => JSON.parse((await m1.run(path.join(binDir(), "etcdctl"), [
            `--endpoints=https://${M1.ip}:2379,https://${M2.ip}:2379`, `--cacert=${pki}/ca.crt`, `--cert=${pki}/healthcheck-client.crt`, `--key=${pki}/healthcheck-client.key`,
            ...args, "-w", "json"])).stdout);
        const members = (await etcdctl(["member", "list"])).members as Array<{ name: string; isLearner?: boolean }>;
        assert.deepStrictEqual(members.map((x) => `${x.name}${x.isLearner ? " learner" : ""}`).sort(), [nodeName(M1), nodeName(M2)].sort());
        const health = await etcdctl(["endpoint", "health"]) as Array<{ endpoint: string; health: boolean }>;
        assert.deepStrictEqual(health.map((h) => `${h.endpoint} ${h.health}`).sort(), [`https://${M1.ip}:2379 true`, `https://${M2.ip}:2379 true`]);
    });
});
