// World: a real control plane built from source (test/kube: etcd, kube-apiserver, controller-manager, scheduler,
// kubeadm, kubectl; KWOK for nodes); the OpenAPI emulator (testing/emulator); node scripts in the sandbox
// (testing/sandbox: stub kubeadm, systemctl, curl, package managers).
/**
 * The removal core (src/removal) against a real API server: the emulator's Cloud Assistant runs the saved
 * operation scripts it is given (drain, delete-node, list-nodes, pod-owners, outdated-taint, cluster-validate) in the sandbox with the real
 * kubectl, inside the fixture's network namespace (test/kube/operations.ts); `reset` runs on the node's own
 * sandbox with the stub kubeadm. Nodes are KWOK nodes named and identified like the project's
 * (`<region>.<instance-id>`, label `alicloud-kubeadm/pool`), for instances and scaling groups of the emulator.
 * Every assertion about Kubernetes reads the real API server (and its audit log).
 *
 * Needs `npm run kube:build` (skipped with one line without it; CI=true fails instead).
 */
import * as assert from "assert";
import { useEmulator } from "../testing/emulator/fixture";
import type { Emulator } from "../testing/emulator";
import { AUDITED, auditEvents, cidrWithin, useRealCluster } from "./kube/fixture";
import { answerWithRealCluster, type RealOperations } from "./kube/operations";
import type { Cluster } from "./kube/cluster";
import { fill, operation, saveNodeCommands } from "../testing/savedCommands";
import { callsOf } from "../testing/sandbox";
import { clearOutdatedTaint, decompress, holdScaleDown, listNodes, parseNodeLines, parseNodeListing, POOL_LABEL, taintOutdated, workloadPods } from "../src/cloud/operations";
import { LEGACY_POOL_LABEL, OUTDATED_TAINT, SCALE_DOWN_DISABLED, SCALE_DOWN_HELD } from "../src/rules";
import { readClusterHealth, removeNode, removeNodes, RemovalError, scaleInPool, CLEARED_USERDATA, validationProblems, type RemovalOptions } from "../src/removal";
import type { NodeCommandIds } from "../src/rules";
import { renderOperation } from "../src/shell/render";
import { readClusterStatus } from "../src/upgrade/status";

const REGION = "cn-hangzhou";
const POD_CIDR = "172.16.0.0/16";
/** Every Node this file makes carries it, so the clean-up after each test finds them. */
const MARK = "alicloud-kubeadm-test/removal";

interface Pod {
    metadata: { name: string; namespace: string; ownerReferences?: Array<{ kind: string }>; deletionTimestamp?: string };
    spec: { nodeName?: string };
    status: { phase: string };
}

describe("removal core against a real API server (KWOK nodes, real kubectl in the saved operations)", function () {
    this.timeout(120_000);
    const rc = useRealCluster({ podCidr: POD_CIDR, nodeCidrMaskSize: 25, ...AUDITED });
    const ctx = useEmulator();
    let c: Cluster;
    let emu: Emulator;
    let ops: RealOperations;
    let master: string;
    let commands: NodeCommandIds;
    let opts: RemovalOptions;
    let warnings: string[];
    let table: string;
    let ns: string;
    let testNo = 0;

    beforeEach(async function () {
        c = rc.c;
        emu = ctx.emu;
        testNo++;
        // A fresh emulator counts its ids from 1 again; instance ids name the Nodes, and a Node name from an
        // earlier test could still own pods that wait for the pod GC. Start each test's ids elsewhere.
        for (let i = 0; i < testNo * 1000; i++) emu.state.nextSeq();
        ns = `removal-${testNo}`;
        await c.kubectl(["create", "namespace", ns]);
        // Master 0 is the harness's control-plane Node (provider id <region>.i-master0).
        master = emu.addInstance({ instanceId: "i-master0", instanceName: "master-0", regionId: REGION }).instanceId;
        commands = await saveNodeCommands(REGION);
        ops = answerWithRealCluster(emu, c, { master });
        table = emu.addRouteTable().routeTableId;
        warnings = [];
        opts = {
            region: REGION, masterInstanceIds: [master], commands, routeTableId: table, podCidr: POD_CIDR, pollIntervalMs: 10, drainTimeoutSeconds: 30,
            warn: (m) => warnings.push(m), log: () => undefined,
        };
    });

    afterEach(async function () {
        this.timeout(60_000);
        ops?.cleanup();
        if (!c) return;
        await c.kubectl(["delete", "namespace", ns, "--wait=false"]);
        await c.kubectl(["delete", "nodes", "-l", MARK, "--wait=true"]);
    });

    const nodeName = (instanceId: string) => `${REGION}.${instanceId}`;
    const getNode = async (name: string) => {
        const r = await c.run("kubectl", ["get", "node", name, "-o", "json"], { allowFail: true });
        return r.code === 0 ? JSON.parse(r.stdout) : undefined;
    };
    const pods = async (): Promise<Pod[]> => JSON.parse(await c.kubectl(["get", "pods", "-n", ns, "-o", "json"])).items;
    const livePodsOn = async (name: string) => (await pods()).filter((p) => p.spec.nodeName === name && !p.metadata.deletionTimestamp);

    /** Joins instances as the project's nodes would: named and identified by provider id, with the pool label; a pod route each. */
    async function join(ids: string[], pool: string, extra: { ready?: boolean } = {}): Promise<void> {
        await Promise.all(ids.map(async (id) => {
            const name = nodeName(id);
            const labels = { [POOL_LABEL]: pool, [MARK]: "", [`${MARK}-ns`]: ns };
            if (extra.ready === false) {
                // Not a KWOK node: nobody posts its status, so it never becomes Ready (a node whose kubelet is gone).
                await c.apply({ apiVersion: "v1", kind: "Node", metadata: { name, labels }, spec: { providerID: name } });
            } else {
                await c.addNode({ name, providerID: name, labels });
            }
            const cidr: string = await c.waitFor(`podCIDR of ${name}`, async () => (await getNode(name))?.spec.podCIDR);
            assert.ok(cidrWithin(cidr, POD_CIDR), `${cidr} in ${POD_CIDR}`);
            routesMade.set(emu.addRouteEntry(table, { destinationCidrBlock: cidr, nextHopId: id }).routeEntryId, cidr);
        }));
    }

    /** An existing ECS instance joined as a node (join userdata, a Node, a pod route). */
    async function existingNode(extra: { ready?: boolean } = {}): Promise<string> {
        const id = emu.addInstance({ regionId: REGION, userData: Buffer.from("#!/bin/bash\nkubeadm join ...").toString("base64") }).instanceId;
        await join([id], "general", extra);
        return id;
    }

    /** A bare pod held by a PodDisruptionBudget that never allows a disruption (drains of its node fail). */
    async function blocked(instanceId: string, name = "held"): Promise<void> {
        await c.createPod({ name, namespace: ns, nodeName: nodeName(instanceId), labels: { held: name } });
        await c.apply({ apiVersion: "policy/v1", kind: "PodDisruptionBudget", metadata: { name, namespace: ns }, spec: { maxUnavailable: 0, selector: { matchLabels: { held: name } } } });
    }

    /** A Deployment pinned to the test's nodes (one pod per node at most), Running before it returns. */
    async function deployment(name: string, replicas: number, pool: string): Promise<void> {
        const labels = { app: name };
        await c.apply({
            apiVersion: "apps/v1", kind: "Deployment", metadata: { name, namespace: ns },
            spec: {
                replicas, selector: { matchLabels: labels },
                template: {
                    metadata: { labels },
                    spec: {
                        nodeSelector: { [POOL_LABEL]: pool, [`${MARK}-ns`]: ns },
                        topologySpreadConstraints: [{ maxSkew: 1, topologyKey: "kubernetes.io/hostname", whenUnsatisfiable: "DoNotSchedule", labelSelector: { matchLabels: labels } }],
                        containers: [{ name, image: "registry.invalid/app:1" }],
                    },
                },
            },
        });
        await c.waitFor(`deployment ${name}: ${replicas} ready`, async () =>
            JSON.parse(await c.kubectl(["get", "deployment", name, "-n", ns, "-o", "json"])).status.readyReplicas === replicas, 60_000);
    }

    /** A DaemonSet on the test's nodes (what flannel or a log agent is), Running on each before it returns. */
    async function daemonSet(name: string, nodes: number): Promise<void> {
        const labels = { app: name };
        await c.apply({
            apiVersion: "apps/v1", kind: "DaemonSet", metadata: { name, namespace: ns },
            spec: {
                selector: { matchLabels: labels },
                template: { metadata: { labels }, spec: { nodeSelector: { [`${MARK}-ns`]: ns }, containers: [{ name, image: "registry.invalid/agent:1" }] } },
            },
        });
        await c.waitFor(`daemonset ${name} on ${nodes} nodes`, async () =>
            JSON.parse(await c.kubectl(["get", "daemonset", name, "-n", ns, "-o", "json"])).status.numberReady === nodes, 60_000);
    }

    /** The destination of a route entry the test made (entries leave the table once deleted). */
    const routeOf = (id: string) => routesMade.get(id) ?? id;
    const routesMade = new Map<string, string>();

    /** Mutating calls in order; InvokeCommand shown with its target (master or instance) and operation; route deletions by destination. */
    function timeline(): string[] {
        const opOf = Object.fromEntries(Object.entries(commands).map(([op, id]) => [id, op]));
        return emu.mutatingCalls().filter((x) => x.code === "" && x.action !== "CreateCommand").map((x) => {
            if (x.action === "DeleteRouteEntries") return `DeleteRouteEntries ${routeOf(x.params["RouteEntries.1.RouteEntryId"])}`;
            if (x.action !== "InvokeCommand") return `${x.action} ${x.params["InstanceId.1"] ?? x.params.InstanceId ?? x.params.DestinationCidrBlock ?? ""}`.trim();
            const who = x.params["InstanceId.1"] === master ? "master" : x.params["InstanceId.1"];
            return `InvokeCommand ${who} ${opOf[x.params.CommandId] ?? "other"}`;
        });
    }

    it("list-nodes, run by the real kubectl, parses into exactly what the API server holds (the template's column order, escaped values)", async function () {
        const group = emu.addScalingGroup({ desiredCapacity: 2, regionId: REGION }).scalingGroupId;
        const [a, b] = emu.scalingGroupInstances(group);
        const lone = emu.addInstance({ regionId: REGION }).instanceId;
        await join([a, b], "general");
        await join([lone], "batch", { ready: false });
        await c.kubectl(["cordon", nodeName(b)]);
        // a removal's mark, as drain.sh sets it: the annotation key with '/' and '-' is read by the jsonpath
        await c.kubectl(["annotate", "node", nodeName(b), "alicloud-kubeadm/removing=2026-12-02T10:00:00Z"]);
        // an upgrade's and a resize's drain marks, as drain.sh sets them
        await c.kubectl(["annotate", "node", nodeName(a), "alicloud-kubeadm/upgrading=2026-12-02T11:00:00Z"]);
        await c.kubectl(["annotate", "node", nodeName(lone), "alicloud-kubeadm/resizing=2026-12-02T12:00:00Z"]);
        // a Node without provider id and pool label (a hand-made one) parses with empty fields
        await c.apply({ apiVersion: "v1", kind: "Node", metadata: { name: `bare-${testNo}`, labels: { [MARK]: "" } } });
        // a node joined before the admission service set the pool label: only its own, old one
        await c.kubectl(["label", "node", nodeName(lone), `${POOL_LABEL}-`, `${LEGACY_POOL_LABEL}=batch`]);

        const access = { region: REGION, masterInstanceIds: [master], commands, pollIntervalMs: 10 };
        const listed = await listNodes(access);
        const real = JSON.parse(await c.kubectl(["get", "nodes", "-o", "json"])).items as Array<{
            metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string>; creationTimestamp: string };
            spec: { providerID?: string; podCIDR?: string; unschedulable?: boolean };
            status: { conditions?: Array<{ type: string; status: string; lastTransitionTime?: string }>; addresses?: Array<{ type: string; address: string }> };
        }>;
        assert.deepStrictEqual(listed.map((n) => n.name).sort(), real.map((n) => n.metadata.name).sort(), "every Node, once");
        for (const n of real) {
            const l = listed.find((x) => x.name === n.metadata.name)!;
            assert.deepStrictEqual(l, {
                name: n.metadata.name,
                providerId: n.spec.providerID ?? "",
                ready: (n.status.conditions ?? []).some((x) => x.type === "Ready" && x.status === "True"),
                unschedulable: n.spec.unschedulable === true,
                podCidr: n.spec.podCIDR ?? "",
                pool: n.metadata.labels?.[POOL_LABEL] ?? n.metadata.labels?.[LEGACY_POOL_LABEL] ?? "",
                createdAt: n.metadata.creationTimestamp,
                removing: n.metadata.annotations?.["alicloud-kubeadm/removing"] ?? "",
                internalIp: (n.status.addresses ?? []).find((x) => x.type === "InternalIP")?.address ?? "",
                readySince: (n.status.conditions ?? []).find((x) => x.type === "Ready")?.lastTransitionTime ?? "",
                heldBy: n.metadata.annotations?.["alicloud-kubeadm/upgrading"] ? `upgrading since ${n.metadata.annotations["alicloud-kubeadm/upgrading"]}`
                    : n.metadata.annotations?.["alicloud-kubeadm/resizing"] ? `resizing since ${n.metadata.annotations["alicloud-kubeadm/resizing"]}` : "",
            }, `list-nodes line of ${n.metadata.name}`);
        }
        const byName = new Map(listed.map((n) => [n.name, n]));
        assert.strictEqual(byName.get(nodeName(a))?.pool, "general", "the pool label key with '.', '/' and '-' is read by the jsonpath");
        assert.strictEqual(byName.get(nodeName(lone))?.pool, "batch", "the old label where the new one is absent");
        assert.strictEqual(byName.get(nodeName(a))?.providerId, nodeName(a));
        assert.strictEqual(byName.get(nodeName(b))?.unschedulable, true);
        assert.strictEqual(byName.get(nodeName(b))?.removing, "2026-12-02T10:00:00Z");
        assert.strictEqual(byName.get(nodeName(lone))?.ready, false);
        // since when a Node is (not) Ready: its Ready condition's lastTransitionTime, as the API server holds it (health repair)
        assert.ok(!Number.isNaN(Date.parse(byName.get(nodeName(a))?.readySince ?? "")), `a Ready Node's condition has a time: ${byName.get(nodeName(a))?.readySince}`);
        assert.strictEqual(byName.get(`bare-${testNo}`)?.readySince, "", "a Node with no status yet: no Ready condition, unknown");
        assert.strictEqual(byName.get(`bare-${testNo}`)?.providerId, "");

        // the selector parameter reaches kubectl: only the pool's Nodes
        assert.deepStrictEqual((await listNodes(access, `${POOL_LABEL}=general`)).map((n) => n.name).sort(), [nodeName(a), nodeName(b)].sort());
        assert.strictEqual(byName.get(nodeName(a))?.heldBy, "upgrading since 2026-12-02T11:00:00Z");
        assert.strictEqual(byName.get(nodeName(lone))?.heldBy, "resizing since 2026-12-02T12:00:00Z");
        // and the columns never shift: thirteen per line, whatever is empty
        const raw = await ops.runOnMaster(fill(renderOperation("list-nodes"), { selector: "" }));
        assert.strictEqual(raw.exitCode, 0, raw.output);
        const text = decompress(raw.output);
        const [clockLine, ...nodeLines] = text.split("\n").filter(Boolean);
        assert.match(clockLine, /^@now\t[0-9]+$/, "the master's clock first");
        for (const line of nodeLines) assert.strictEqual(line.split("\t").length, 13, JSON.stringify(line));
        assert.strictEqual(parseNodeListing(text).masterNow, Number(clockLine.split("\t")[1]) * 1000, "the master's clock, ms");
        assert.deepStrictEqual(parseNodeLines(text).map((n) => n.name).sort(), listed.map((n) => n.name).sort());
        // A node may annotate its own Node: a value with a newline, tabs and quotes that spells the head of a list-nodes
        // line (a second Node claiming instance b, Ready, uncordoned; the Node's own columns after the annotation end it)
        // is one value of the Node that holds it, read back exactly, never a Node.
        const forged = ["", `forged-${testNo}`, nodeName(b), "True", "", "", "general", "2026-12-02T10:00:00Z", "\\u0009 '\"<=>&"].join("\t")
            .replace(/^\t/, "x\n");
        await c.kubectl(["annotate", "node", `bare-${testNo}`, `alicloud-kubeadm/removing=${forged}`]);
        const after = await listNodes(access);
        assert.deepStrictEqual(after.map((n) => n.name).sort(), real.map((n) => n.metadata.name).sort(), "no Node made up by a value");
        assert.strictEqual(after.find((n) => n.name === `bare-${testNo}`)?.removing, forged, "the annotation, exactly");
        assert.deepStrictEqual(after.filter((n) => n.providerId === nodeName(b)).map((n) => n.name), [nodeName(b)], "instance b has its own Node only");
        await c.kubectl(["annotate", "node", `bare-${testNo}`, "alicloud-kubeadm/removing-"]);
    });

    it("outdated-taint, run by the real kubectl: add taints the named Nodes that exist PreferNoSchedule; clear removes it only where it names the pool", async function () {
        const [a, b, other] = ["i-taint-a", "i-taint-b", "i-taint-other"].map((id) => emu.addInstance({ instanceId: `${id}-${testNo}`, regionId: REGION }).instanceId);
        await join([a, b], "general");
        await join([other], "other");
        const access = { region: REGION, masterInstanceIds: [master], commands, pollIntervalMs: 10 };
        const taints = async (id: string) => ((await getNode(nodeName(id)))?.spec.taints ?? []).filter((t: { key: string }) => t.key === OUTDATED_TAINT)
            .map((t: { value: string; effect: string }) => `${t.value}:${t.effect}`);
        assert.strictEqual(await taintOutdated(access, "general", [nodeName(a), nodeName(b), `${REGION}.i-gone`]), 2, "a Node that is gone is skipped");
        assert.strictEqual(await taintOutdated(access, "other", [nodeName(other)]), 1);
        assert.strictEqual(await taintOutdated(access, "general", [nodeName(a)]), 1, "again: overwritten, not doubled");
        assert.deepStrictEqual([await taints(a), await taints(b), await taints(other)], [["general:PreferNoSchedule"], ["general:PreferNoSchedule"], ["other:PreferNoSchedule"]]);
        assert.deepStrictEqual(await clearOutdatedTaint(access, "general"), { cleared: 2, released: 0 });
        assert.deepStrictEqual([await taints(a), await taints(b), await taints(other)], [[], [], ["other:PreferNoSchedule"]], "another pool's taint stays");
        assert.deepStrictEqual(await clearOutdatedTaint(access, "general"), { cleared: 0, released: 0 }, "nothing left to clear is fine");
    });

    it("outdated-taint hold, run by the real kubectl: annotates the named Nodes scale-down-disabled with the rollout's mark; clear releases only those, never an annotation somebody else set", async function () {
        const [a, b, user] = ["i-hold-a", "i-hold-b", "i-hold-user"].map((id) => emu.addInstance({ instanceId: `${id}-${testNo}`, regionId: REGION }).instanceId);
        await join([a, b, user], "general");
        await c.kubectl(["annotate", "node", nodeName(user), `${SCALE_DOWN_DISABLED}=true`]);
        const access = { region: REGION, masterInstanceIds: [master], commands, pollIntervalMs: 10 };
        const marks = async (id: string) => {
            const annotations = (await getNode(nodeName(id)))?.metadata.annotations ?? {};
            return [annotations[SCALE_DOWN_DISABLED] ?? "", annotations[SCALE_DOWN_HELD] ?? ""];
        };
        assert.strictEqual(await holdScaleDown(access, "general", [nodeName(a), nodeName(user), `${REGION}.i-gone`]), 1, "a Node gone and one the user annotated are skipped");
        assert.strictEqual(await holdScaleDown(access, "general", [nodeName(a), nodeName(b)]), 2, "again: overwritten");
        assert.deepStrictEqual([await marks(a), await marks(b), await marks(user)], [["true", "general"], ["true", "general"], ["true", ""]]);
        assert.deepStrictEqual(await clearOutdatedTaint(access, "general"), { cleared: 0, released: 2 });
        assert.deepStrictEqual([await marks(a), await marks(b), await marks(user)], [["", ""], ["", ""], ["true", ""]], "the user's annotation stays");
    });

    it("outdated-taint, run by the real kubectl: a Node's own annotations (which its kubelet may write) cannot make up a listing line: no hold or release reaches a Node the user annotated", async function () {
        const [user, forger] = ["i-forge-user", "i-forge-node"].map((id) => emu.addInstance({ instanceId: `${id}-${testNo}`, regionId: REGION }).instanceId);
        await join([user, forger], "general");
        await c.kubectl(["annotate", "node", nodeName(user), `${SCALE_DOWN_DISABLED}=true`]); // the user's own
        // The forger's values spell a line of the listings: the user's Node with no annotation (hold would take it as free),
        // and the user's Node held by the pool's rollout (clear would release it).
        await c.kubectl(["annotate", "node", nodeName(forger), `${SCALE_DOWN_DISABLED}=x\n${nodeName(user)}\t\t`, `${SCALE_DOWN_HELD}=x\n${nodeName(user)}\tgeneral`]);
        const access = { region: REGION, masterInstanceIds: [master], commands, pollIntervalMs: 10 };
        const marks = async (id: string) => {
            const annotations = (await getNode(nodeName(id)))?.metadata.annotations ?? {};
            return [annotations[SCALE_DOWN_DISABLED] ?? "", annotations[SCALE_DOWN_HELD] ?? ""];
        };
        assert.strictEqual(await holdScaleDown(access, "general", [nodeName(user)]), 0, "the user's annotation is the user's");
        assert.deepStrictEqual(await marks(user), ["true", ""]);
        assert.deepStrictEqual((await clearOutdatedTaint(access, "general")).released, 0, "no Node is held by the pool's rollout");
        assert.deepStrictEqual(await marks(user), ["true", ""], "the user's annotation stays");
        await c.kubectl(["annotate", "node", nodeName(forger), `${SCALE_DOWN_DISABLED}-`, `${SCALE_DOWN_HELD}-`]);
    });

    it("cluster-validate, run by the real kubectl: a kube-system Deployment whose pod cannot be scheduled is named with its Pending pod, one whose pod runs on a Ready Node is not; a master's Node not Ready is named, and no Node's status forges it Ready", async function () {
        const [a] = [emu.addInstance({ instanceId: `i-validate-${testNo}`, regionId: REGION }).instanceId];
        await join([a], "general");
        const runs = `validate-runs-${testNo}`;
        const stuck = `validate-stuck-${testNo}`;
        const make = (name: string, nodeSelector: Record<string, string>) => c.apply({
            apiVersion: "apps/v1", kind: "Deployment", metadata: { name, namespace: "kube-system" },
            spec: {
                replicas: 1, selector: { matchLabels: { app: name } },
                template: { metadata: { labels: { app: name } }, spec: { nodeSelector, containers: [{ name, image: "registry.invalid/app:1" }] } },
            },
        });
        try {
            await make(runs, { [`${MARK}-ns`]: ns });
            await make(stuck, { "alicloud-kubeadm-test/nowhere": "true" });
            await c.waitFor(`deployment ${runs} available`, async () =>
                JSON.parse(await c.kubectl(["get", "deployment", runs, "-n", "kube-system", "-o", "json"])).status.availableReplicas === 1, 60_000);
            const access = { region: REGION, masterInstanceIds: [master], commands, pollIntervalMs: 10 };
            const health = await c.waitFor("the stuck Deployment's pod", async () => {
                const h = await readClusterHealth(access);
                return h.unreadyPods.some((p) => p.name.startsWith(`kube-system/${stuck}-`)) ? h : undefined;
            });
            assert.strictEqual(health.nodes.get(nodeName(a)), true, "the KWOK Node, Ready");
            assert.deepStrictEqual(health.deployments.filter((d) => [runs, stuck].some((n) => d.name === `kube-system/${n}`)).sort((x, y) => x.name.localeCompare(y.name)),
                [{ name: `kube-system/${runs}`, replicas: 1, available: 1 }, { name: `kube-system/${stuck}`, replicas: 1, available: 0 }]);
            const problems = validationProblems([], health).filter((p) => p.includes(runs) || p.includes(stuck));
            assert.strictEqual(problems.length, 2, problems.join("\n"));
            assert.strictEqual(problems[0], `Deployment kube-system/${stuck}: 0 of 1 replica(s) available`);
            assert.match(problems[1], new RegExp(`^pod kube-system/${stuck}-\\S+ not scheduled not Ready \\(Pending\\)$`));
            // A master's Node (kubeadm's control-plane role label, value "") that is not Ready fails validation; a Ready one does not.
            const masterDown = emu.addInstance({ instanceId: `i-validate-cp-${testNo}`, regionId: REGION }).instanceId;
            await join([masterDown], "control-plane", { ready: false });
            await c.kubectl(["label", "node", nodeName(masterDown), nodeName(a), "node-role.kubernetes.io/control-plane="]);
            const withMasters = await readClusterHealth(access);
            assert.deepStrictEqual(withMasters.controlPlane.filter((n) => [nodeName(a), nodeName(masterDown)].includes(n)).sort(), [nodeName(a), nodeName(masterDown)].sort());
            assert.ok(validationProblems([], withMasters).includes(`control-plane Node(s) not Ready: ${nodeName(masterDown)}`), validationProblems([], withMasters).join("\n"));
            // A node writes its own Node's status: a Ready status that spells a line saying the master is Ready is that
            // Node's value, never a line (the Node is listed after the master, so a line of it would win).
            const forger = `zz-forger-${testNo}`;
            await c.apply({ apiVersion: "v1", kind: "Node", metadata: { name: forger, labels: { [MARK]: "" } } });
            const forged = `Unknown\n${nodeName(masterDown)}\tTrue`; // the script prefixes each line with "node<TAB>"
            await c.kubectl(["patch", "node", forger, "--subresource=status", "--type=merge", "-p", JSON.stringify({
                status: { conditions: [{ type: "Ready", status: forged, reason: "Forged", lastHeartbeatTime: new Date().toISOString(), lastTransitionTime: new Date().toISOString() }] },
            })]);
            const after = await readClusterHealth(access);
            assert.strictEqual(after.nodes.get(nodeName(masterDown)), false, "the master is still not Ready");
            // The CCM's route controller's condition, as it patches it: True until it created the Node's route.
            assert.ok(!after.networkUnavailable.has(nodeName(a)), "no NetworkUnavailable condition: not listed");
            await c.kubectl(["patch", "node", nodeName(masterDown), "--subresource=status", "--type=merge", "-p", JSON.stringify({
                status: { conditions: [{ type: "NetworkUnavailable", status: "True", reason: "NoRouteCreated", lastHeartbeatTime: new Date().toISOString(), lastTransitionTime: new Date().toISOString() }] },
            })]);
            assert.ok((await readClusterHealth(access)).networkUnavailable.has(nodeName(masterDown)), "NetworkUnavailable True: listed");
            assert.ok(validationProblems([], after).includes(`control-plane Node(s) not Ready: ${nodeName(masterDown)}`), validationProblems([], after).join("\n"));
        } finally {
            await c.kubectl(["delete", "deployment", "-n", "kube-system", runs, stuck, "--wait=false"]);
        }
    });

    it("upgrade-status, run by the real kubectl: each Node's kubelet version, Ready status and marks as the API server holds them; a kubelet version that spells a line is that Node's value, never a Node; a worker's pod labelled kube-apiserver is no API server", async function () {
        const [a] = [emu.addInstance({ instanceId: `i-status-${testNo}`, regionId: REGION }).instanceId];
        await join([a], "general");
        await c.kubectl(["annotate", "node", nodeName(a), "alicloud-kubeadm/upgrading=2026-12-02T11:00:00Z"]);
        // A kubelet writes its own Node's status: a version that spells the head of another line (Node a, a newer
        // kubelet, Ready, uncordoned) — the script prefixes each Node's line with "node<TAB>".
        const forger = `zz-status-forger-${testNo}`;
        await c.apply({ apiVersion: "v1", kind: "Node", metadata: { name: forger, labels: { [MARK]: "" } } });
        const forged = `1.36.3\nnode\t${nodeName(a)}\t${nodeName(a)}\t9.99.0\tTrue\tfalse\t\tz`;
        await c.kubectl(["patch", "node", forger, "--subresource=status", "--type=merge", "-p", JSON.stringify({ status: { nodeInfo: { kubeletVersion: forged } } })]);
        const access = { region: REGION, masterInstanceIds: [master], commands, pollIntervalMs: 10 };
        const status = await readClusterStatus(access);
        const real = JSON.parse(await c.kubectl(["get", "nodes", "-o", "json"])).items as Array<{ metadata: { name: string }; status: { nodeInfo?: { kubeletVersion?: string } } }>;
        assert.deepStrictEqual(status.nodes.map((n) => n.name).sort(), real.map((n) => n.metadata.name).sort(), "every Node, once");
        const ofA = status.nodes.filter((n) => n.name === nodeName(a));
        assert.strictEqual(ofA.length, 1);
        assert.deepStrictEqual([ofA[0].providerId, ofA[0].mark, ofA[0].unschedulable], [nodeName(a), "2026-12-02T11:00:00Z", false]);
        assert.strictEqual(ofA[0].kubelet, (real.find((n) => n.metadata.name === nodeName(a))!.status.nodeInfo?.kubeletVersion ?? "").replace(/^v/, ""));
        assert.strictEqual(status.nodes.find((n) => n.name === forger)?.kubelet, forged, "the forger's own value, exactly");
        // Any kubelet may post a mirror pod labelled as an API server, bound to its own Node: not one of the API servers.
        const fake = `kube-apiserver-${testNo}`;
        await c.apply({ apiVersion: "v1", kind: "Pod", metadata: { name: fake, namespace: "kube-system", labels: { component: "kube-apiserver", [MARK]: "" } },
            spec: { nodeName: nodeName(a), containers: [{ name: "kube-apiserver", image: "registry.k8s.io/kube-apiserver:v9.99.0" }] } });
        try {
            const withPod = await readClusterStatus(access);
            assert.deepStrictEqual(withPod.apiServers.filter((x) => x.node === nodeName(a)), [], "a worker's pod is no API server");
        } finally {
            await c.kubectl(["delete", "pod", "-n", "kube-system", fake, "--wait=false"]);
        }
    });

    it("scale-out node: drain (cordon, evictions) → RemoveInstances → Node deleted (a released node is not reset) → route deleted; the Deployment's pod comes back elsewhere", async function () {
        const group = emu.addScalingGroup({ desiredCapacity: 3, regionId: REGION }).scalingGroupId;
        const ids = emu.scalingGroupInstances(group);
        await join(ids, "general");
        await deployment("web", 3, "general");
        await daemonSet("agent", 3);
        const victim = ids[0];
        const name = nodeName(victim);
        const onVictim = await livePodsOn(name);
        const webPod = onVictim.find((p) => p.metadata.ownerReferences?.[0].kind === "ReplicaSet")!;
        const agentPod = onVictim.find((p) => p.metadata.ownerReferences?.[0].kind === "DaemonSet")!;
        assert.ok(webPod && agentPod, `a web and an agent pod on ${name}: ${onVictim.map((p) => p.metadata.name)}`);
        const cidr = (await getNode(name)).spec.podCIDR;

        const report = await removeNode({ instanceId: victim, kind: "scale-out", scalingGroupId: group }, opts);
        assert.deepStrictEqual(report.done, ["drain", "leave-scaling-group", "delete-node", "delete-route"]);
        assert.deepStrictEqual(timeline(), [
            "InvokeCommand master list-nodes",
            "InvokeCommand master drain",
            "InvokeCommand master list-nodes",
            `RemoveInstances ${victim}`,
            "InvokeCommand master delete-node",
            `DeleteRouteEntries ${cidr}`,
        ]);

        // Kubernetes, as the API server saw it: cordoned, the ReplicaSet's pod evicted (not deleted), the DaemonSet's
        // pod left alone by the drain, then the Node deleted.
        const audit = auditEvents(c).filter((e) => e.objectRef?.name === name || e.objectRef?.name === webPod.metadata.name || e.objectRef?.name === agentPod.metadata.name);
        const cordon = audit.find((e) => e.objectRef?.resource === "nodes" && e.verb === "patch" && JSON.stringify(e.requestObject).includes('"unschedulable":true'));
        assert.ok(cordon, "the drain cordoned the node (a patch setting spec.unschedulable)");
        const evictions = audit.filter((e) => e.objectRef?.subresource === "eviction" && e.verb === "create");
        assert.deepStrictEqual(evictions.map((e) => [e.objectRef?.name, e.responseStatus?.code]), [[webPod.metadata.name, 201]], "one eviction: the web pod, accepted");
        const deletion = audit.find((e) => e.objectRef?.resource === "nodes" && e.verb === "delete");
        assert.ok(deletion && audit.indexOf(cordon!) < audit.indexOf(deletion), "cordon before the Node deletion");
        assert.strictEqual(await getNode(name), undefined, "the Node is gone");

        await c.waitFor("web back to 3 ready replicas, none on the removed node", async () => {
            const d = JSON.parse(await c.kubectl(["get", "deployment", "web", "-n", ns, "-o", "json"]));
            const web = (await pods()).filter((p) => p.metadata.name.startsWith("web-") && !p.metadata.deletionTimestamp);
            return d.status.readyReplicas === 3 && web.length === 3 && web.every((p) => p.spec.nodeName !== name && p.status.phase === "Running");
        }, 60_000);
        assert.ok(!(await pods()).some((p) => p.metadata.name === webPod.metadata.name), "the evicted pod itself is gone (a new one replaced it)");

        // nothing ran on the node (it is released, not reset); ESS released it; its route is gone
        assert.deepStrictEqual(callsOf(ops.node(victim).allCalls(), "kubeadm", "reset").map((x) => x.args), []);
        assert.ok(!emu.scalingGroupInstances(group).includes(victim) && !emu.instances.has(victim), "released from the group");
        assert.strictEqual(emu.scalingGroups.get(group)!.desiredCapacity, 2);
        assert.ok(!emu.routeTables.get(table)!.entries.some((e) => e.nextHopId === victim));
    });

    it("a PodDisruptionBudget that never allows a disruption: the drain step fails with the PDB advice, the node stays cordoned with its pod, and ESS keeps the instance; freed, a re-run completes", async function () {
        const group = emu.addScalingGroup({ desiredCapacity: 2, regionId: REGION }).scalingGroupId;
        const ids = emu.scalingGroupInstances(group);
        await join(ids, "general");
        await deployment("db", 2, "general");
        await c.apply({ apiVersion: "policy/v1", kind: "PodDisruptionBudget", metadata: { name: "db", namespace: ns }, spec: { maxUnavailable: 0, selector: { matchLabels: { app: "db" } } } });
        const victim = ids[1];
        const name = nodeName(victim);
        const held = (await livePodsOn(name)).map((p) => p.metadata.name);
        assert.strictEqual(held.length, 1);

        await assert.rejects(removeNode({ instanceId: victim, kind: "scale-out", scalingGroupId: group }, { ...opts, drainTimeoutSeconds: 5 }), (err: unknown) => {
            assert.ok(err instanceof RemovalError, String(err));
            assert.strictEqual(err.step, "drain");
            assert.match(err.message, /violate the pod's disruption budget|disruption budget/);
            assert.match(err.message, /fix: a PodDisruptionBudget or a slow pod blocks eviction from .* raise drainTimeoutSeconds, or set force: true/);
            return true;
        });
        assert.deepStrictEqual(timeline(), ["InvokeCommand master list-nodes", "InvokeCommand master drain", "InvokeCommand master list-nodes"],
            "only a look (is the Node still there?) after the failed drain");
        assert.strictEqual((await getNode(name))?.spec.unschedulable, true, "cordoned, still there");
        assert.ok((await getNode(name))?.metadata.annotations?.["alicloud-kubeadm/removing"], "marked by the drain, so a later run can tell its cordon from anyone else's");
        assert.deepStrictEqual((await livePodsOn(name)).map((p) => p.metadata.name), held, "the protected pod stayed");
        assert.ok(emu.instances.has(victim) && emu.scalingGroupInstances(group).includes(victim), "the undrained instance is not released");
        assert.strictEqual(emu.scalingGroups.get(group)!.desiredCapacity, 2);
        const refused = auditEvents(c).filter((e) => e.objectRef?.subresource === "eviction" && e.objectRef?.name === held[0]);
        assert.ok(refused.length > 0 && refused.every((e) => e.responseStatus?.code === 429), "evictions refused with 429 by the PDB");

        // freed: the same removal runs again and completes (resumable); the pod comes back on the other node
        await c.kubectl(["delete", "pdb", "db", "-n", ns]);
        const report = await removeNode({ instanceId: victim, kind: "scale-out", scalingGroupId: group }, opts);
        assert.deepStrictEqual(report.done, ["drain", "leave-scaling-group", "delete-node", "delete-route"]);
        assert.strictEqual(await getNode(name), undefined);
        await c.waitFor("db pods Running on the remaining node", async () => {
            const db = (await pods()).filter((p) => p.metadata.name.startsWith("db-") && !p.metadata.deletionTimestamp);
            // one per node at most (topology spread): one Running on the other node, the second Pending
            return db.length === 2 && db.some((p) => p.spec.nodeName === nodeName(ids[0]) && p.status.phase === "Running")
                && db.every((p) => p.spec.nodeName !== name);
        }, 60_000);
    });

    it("disableEviction (a rollout's onDrainTimeout: force): the real kubectl deletes the pod a PodDisruptionBudget holds instead of evicting it, and the removal completes", async function () {
        const group = emu.addScalingGroup({ desiredCapacity: 2, regionId: REGION }).scalingGroupId;
        const ids = emu.scalingGroupInstances(group);
        await join(ids, "general");
        await deployment("held", 2, "general");
        await c.apply({ apiVersion: "policy/v1", kind: "PodDisruptionBudget", metadata: { name: "held", namespace: ns }, spec: { maxUnavailable: 0, selector: { matchLabels: { app: "held" } } } });
        const victim = ids[1];
        const name = nodeName(victim);
        const held = (await livePodsOn(name)).map((p) => p.metadata.name);
        assert.strictEqual(held.length, 1);
        const report = await removeNode({ instanceId: victim, kind: "scale-out", scalingGroupId: group }, { ...opts, drainTimeoutSeconds: 20, disableEviction: true });
        assert.deepStrictEqual(report.done, ["drain", "leave-scaling-group", "delete-node", "delete-route"]);
        assert.strictEqual(await getNode(name), undefined);
        assert.ok((await pods()).every((p) => p.metadata.name !== held[0] || p.metadata.deletionTimestamp), "the held pod was deleted");
        const evictions = auditEvents(c).filter((e) => e.objectRef?.subresource === "eviction" && e.objectRef?.name === held[0]);
        assert.deepStrictEqual(evictions, [], "not evicted: the budget was never asked");
        assert.ok(!emu.scalingGroupInstances(group).includes(victim));
    });

    it("a bare pod (no controller) stops the drain until force: true, which evicts it for good; an existing node keeps its instance and loses its userdata", async function () {
        const id = emu.addInstance({ regionId: REGION, userData: Buffer.from("#!/bin/bash\nkubeadm join ...").toString("base64") }).instanceId;
        const name = nodeName(id);
        await join([id], "general");
        await c.createPod({ name: "lonely", namespace: ns, nodeName: name });

        await assert.rejects(removeNode({ instanceId: id, kind: "existing" }, opts), (err: unknown) =>
            err instanceof RemovalError && err.step === "drain" && /declare no controller/.test(err.message) && /--force/.test(err.message));
        assert.ok((await livePodsOn(name)).some((p) => p.metadata.name === "lonely"), "the bare pod stays without force");

        const report = await removeNode({ instanceId: id, kind: "existing" }, { ...opts, force: true });
        assert.deepStrictEqual(report.done, ["drain", "clear-userdata", "reset", "delete-node", "delete-route"]);
        assert.ok(!(await pods()).some((p) => p.metadata.name === "lonely"), "evicted, and nothing brings it back");
        assert.ok(auditEvents(c).some((e) => e.objectRef?.subresource === "eviction" && e.objectRef?.name === "lonely" && e.responseStatus?.code === 201));
        assert.strictEqual(await getNode(name), undefined);
        assert.ok(emu.instances.has(id), "an existing instance is never released");
        assert.match(Buffer.from(emu.instances.get(id)!.userData, "base64").toString("utf8"), /this node was removed from its cluster/);
    });

    it("a Node deleted meanwhile: the real kubectl's NotFound makes the drain a skip; a second run finds no Node by provider id and changes nothing", async function () {
        const group = emu.addScalingGroup({ desiredCapacity: 1, regionId: REGION }).scalingGroupId;
        const [id] = emu.scalingGroupInstances(group);
        const name = nodeName(id);
        await join([id], "general");
        await c.kubectl(["delete", "node", name]);

        // the caller still holds the name (from Pulumi state): drain runs and the API server answers NotFound
        const report = await removeNode({ instanceId: id, kind: "scale-out", scalingGroupId: group, nodeName: name }, opts);
        assert.match(warnings.join("\n"), new RegExp(`drain skipped: Node ${name.replace(/\./g, "\\.")} no longer exists`));
        assert.deepStrictEqual(report.done, ["leave-scaling-group", "delete-route"]);
        assert.ok(!ops.log.some((l) => l.endsWith(": reset") || l.endsWith(": delete-node")), "a deleted Node is not reset or deleted again");

        // looked up by provider id: no Node has it, nothing else happens
        warnings = [];
        const before = emu.calls.length;
        const again = await removeNode({ instanceId: id, kind: "scale-out", scalingGroupId: group }, opts);
        assert.deepStrictEqual(again.done, []);
        assert.match(warnings.join("\n"), /drain skipped: no Node has provider id cn-hangzhou\.i-/);
        const invoked = emu.calls.slice(before).filter((x) => x.action === "InvokeCommand").map((x) => x.params.CommandId);
        assert.deepStrictEqual(invoked, [commands["list-nodes"]]);
        // deleting a Node that is not there is fine (delete-node's --ignore-not-found), run for real
        const del = await ops.runOnMaster(fill(renderOperation("delete-node"), { nodes: name }));
        assert.strictEqual(del.exitCode, 0, del.output);
    });

    it("scale-in 4 → 2 with the real listings: the NotReady node first, then the node with fewest workload pods (DaemonSet pods do not count)", async function () {
        const group = emu.addScalingGroup({ desiredCapacity: 4, maxSize: 10, regionId: REGION }).scalingGroupId;
        const ids = emu.scalingGroupInstances(group);
        // creation order: newest last, so newest-first never decides here
        ids.forEach((id, i) => { emu.state.scalingInstances.get(id)!.creationTime = `2026-01-01T00:00:0${i}Z`; });
        const [busy, idle, notReady, twoPods] = ids;
        await join([busy, idle, twoPods], "general");
        await join([notReady], "general", { ready: false });
        await daemonSet("agent", 3);
        // busy: 3 workload pods, idle: 0 (only the agent), twoPods: 2
        for (const [node, n] of [[busy, 3], [twoPods, 2]] as const) {
            for (let k = 0; k < n; k++) await c.createPod({ name: `w-${node.slice(-4)}-${k}`, namespace: ns, nodeName: nodeName(node) });
        }
        // pod-owners through the real kubectl: the counts the victim choice reads
        const counts = await workloadPods({ region: REGION, masterInstanceIds: [master], commands, pollIntervalMs: 10 });
        assert.strictEqual(counts.get(nodeName(busy)), 3);
        assert.strictEqual(counts.get(nodeName(twoPods)), 2);
        assert.strictEqual(counts.get(nodeName(idle)), undefined, "only DaemonSet pods: no workload");

        const reports = await scaleInPool({ scalingGroupId: group, poolName: "general", targetSize: 2, minSize: 0 }, opts);
        assert.deepStrictEqual(reports.map((r) => r.instanceId).sort(), [idle, notReady].sort());
        assert.deepStrictEqual(emu.scalingGroupInstances(group).sort(), [busy, twoPods].sort());
        for (const id of [idle, notReady]) assert.strictEqual(await getNode(nodeName(id)), undefined, `${id}'s Node deleted`);
        for (const id of [busy, twoPods]) assert.ok(await getNode(nodeName(id)), `${id}'s Node kept`);
        // the NotReady node's drain does not wait for pods its kubelet would never confirm
        const drains = emu.callsOf("InvokeCommand").filter((x) => x.params.CommandId === commands.drain).map((x) => JSON.parse(x.params.Parameters) as Record<string, string>);
        assert.deepStrictEqual(drains.map((d) => [d.node, d.skipWait]).sort(), [[nodeName(idle), "0"], [nodeName(notReady), "60"]].sort());
    });

    it("pod-owners, run by the real kubectl: an owner kind that spells a pod line of another node is that pod's kind, never a line", async function () {
        const [a, b] = [emu.addInstance({ instanceId: `i-owner-a-${testNo}`, regionId: REGION }).instanceId, emu.addInstance({ instanceId: `i-owner-b-${testNo}`, regionId: REGION }).instanceId];
        await join([a, b], "general");
        // Whoever creates a pod writes its ownerReferences: a kind "DaemonSet", then a line counting a workload pod on b
        // (the script prints `<node>\t<kind>` per pod). Read raw, a's pod hides as a DaemonSet's and b looks busy.
        const forged = `DaemonSet\n${nodeName(b)}\tReplicaSet`;
        await c.apply({ apiVersion: "v1", kind: "Pod", metadata: { name: "forged-owner", namespace: ns, ownerReferences: [{ apiVersion: "example.com/v1", kind: forged, name: "x", uid: "00000000-0000-0000-0000-000000000001" }] },
            spec: { nodeName: nodeName(a), containers: [{ name: "c", image: "registry.k8s.io/pause:3.10" }] } });
        const counts = await workloadPods({ region: REGION, masterInstanceIds: [master], commands, pollIntervalMs: 10 });
        assert.strictEqual(counts.get(nodeName(a)), 1, "a's pod counts as a workload pod (its kind is the whole forged value)");
        assert.strictEqual(counts.get(nodeName(b)), undefined, "no pod line for b");
    });

    it("existing node: drain → clear userdata → reset → delete Node → delete route, in that order, and the instance stays", async function () {
        const id = await existingNode();
        const cidr = (await getNode(nodeName(id))).spec.podCIDR;
        const report = await removeNode({ instanceId: id, kind: "existing" }, opts);
        assert.deepStrictEqual(timeline(), [
            "InvokeCommand master list-nodes",
            "InvokeCommand master drain",
            `ModifyInstanceAttribute ${id}`,
            `InvokeCommand ${id} reset`,
            "InvokeCommand master delete-node",
            "InvokeCommand master list-nodes", // the machine keeps running: its Node must not be back
            `DeleteRouteEntries ${cidr}`,
        ]);
        assert.deepStrictEqual(report.done, ["drain", "clear-userdata", "reset", "delete-node", "delete-route"]);
        assert.strictEqual(Buffer.from(emu.instances.get(id)!.userData, "base64").toString("utf8"), CLEARED_USERDATA);
        assert.strictEqual(await getNode(nodeName(id)), undefined);
        assert.ok(emu.instances.has(id), "an existing instance is never released");
    });

    it("scale-out node kept (DetachInstances), through throttling and a 5xx: the instance stays, out of the group", async function () {
        const group = emu.addScalingGroup({ desiredCapacity: 2, regionId: REGION }).scalingGroupId;
        const [id] = emu.scalingGroupInstances(group);
        await join([id], "general");
        emu.throttle("DetachInstances", 2);
        emu.fail5xx("DeleteRouteEntries", 1);
        const report = await removeNode({ instanceId: id, kind: "scale-out", scalingGroupId: group, essAction: "keep" }, opts);
        assert.deepStrictEqual(report.done, ["drain", "reset", "delete-node", "leave-scaling-group", "delete-route"]);
        assert.strictEqual(emu.callsOf("DetachInstances").length, 3, "two throttled attempts, then success");
        assert.ok(emu.instances.has(id) && !emu.scalingGroupInstances(group).includes(id));
        assert.strictEqual(emu.scalingGroups.get(group)!.desiredCapacity, 1);
        assert.strictEqual(await getNode(nodeName(id)), undefined);
    });

    it("control-plane member: looked up by provider id, drained, reset, its etcd membership checked through another Ready master, Node deleted; no userdata or ESS calls", async function () {
        const id = emu.addInstance({ regionId: REGION }).instanceId;
        await join([master, id], "control-plane");
        // The harness runs etcd as a process, not as a static pod to exec into: the etcd check is answered here
        // (the member is gone, as after a reset that left etcd); test/removal.test.ts covers a member left behind.
        const via: string[] = [];
        emu.onCommand(operation("etcd-member-remove"), (x) => { via.push(x.parameters.etcdnode); return { output: "member-absent\n" }; });
        const report = await removeNode({ instanceId: id, kind: "control-plane" }, { ...opts, masterInstanceIds: [master, id], routeTableId: undefined });
        assert.deepStrictEqual(timeline(), [
            "InvokeCommand master list-nodes",
            "InvokeCommand master drain",
            `InvokeCommand ${id} reset`,
            "InvokeCommand master list-nodes",
            "InvokeCommand master etcd-member-remove",
            "InvokeCommand master delete-node",
            "InvokeCommand master list-nodes", // the machine keeps running: its Node must not be back
        ]);
        assert.deepStrictEqual(via, [`${REGION}.i-master0`], "through the Ready master's etcd, never the leaving one's");
        assert.deepStrictEqual(report.done, ["drain", "reset", "delete-node"]);
        assert.strictEqual(await getNode(nodeName(id)), undefined);
    });

    it("the node's side is gone: a released pool node with its agent offline is not reset, a released existing instance skips reset and userdata; Kubernetes, ESS and routes still complete", async function () {
        const group = emu.addScalingGroup({ desiredCapacity: 1, regionId: REGION }).scalingGroupId;
        const [offline] = emu.scalingGroupInstances(group);
        await join([offline], "general");
        const released = await existingNode();
        emu.setAgentOffline(offline);
        emu.releaseInstance(released);
        const [a, b] = await removeNodes([{ instanceId: offline, kind: "scale-out", scalingGroupId: group }, { instanceId: released, kind: "existing" }], opts);
        assert.deepStrictEqual(a.done, ["drain", "leave-scaling-group", "delete-node", "delete-route"], "its Node is deleted once the instance (and its kubelet) is gone");
        assert.deepStrictEqual(a.skipped.find((x) => x.step === "reset")?.reason, "the instance is released with its group membership", "nothing is run on a node that is released");
        assert.deepStrictEqual(b.done, ["drain", "delete-node", "delete-route"]);
        assert.deepStrictEqual(b.skipped.map((x) => x.step).sort(), ["clear-userdata", "leave-etcd", "leave-scaling-group", "reset"]);
        for (const id of [offline, released]) assert.strictEqual(await getNode(nodeName(id)), undefined, `${id}'s Node deleted`);
        assert.ok(!emu.routeTables.get(table)!.entries.some((e) => e.nextHopId === offline || e.nextHopId === released), "both routes deleted");
    });

    it("an ESS refusal stops before the route step and names the group (the Kubernetes side is done); master unreachable stops at the first step and touches nothing", async function () {
        const group = emu.addScalingGroup({ desiredCapacity: 1, minSize: 1, regionId: REGION }).scalingGroupId;
        const [id] = emu.scalingGroupInstances(group);
        await join([id], "general");
        await assert.rejects(removeNode({ instanceId: id, kind: "scale-out", scalingGroupId: group }, opts),
            (err: unknown) => err instanceof RemovalError && err.step === "leave-scaling-group" && /IncorrectCapacity\.MinSize/.test(err.message) && err.message.includes(group));
        assert.strictEqual(emu.callsOf("DeleteRouteEntries").length, 0);
        const kept = await getNode(nodeName(id));
        assert.ok(kept?.spec.unschedulable && kept.metadata.annotations?.["alicloud-kubeadm/removing"], "drained, cordoned and marked; kept whole (not reset, Node kept) when ESS refused");

        const other = await existingNode();
        emu.setAgentOffline(master);
        const before = emu.mutatingCalls().length;
        await assert.rejects(removeNode({ instanceId: other, kind: "existing" }, opts), /step "find-node" failed: Cloud Assistant agent on .* is not running/);
        assert.deepStrictEqual(emu.mutatingCalls().slice(before).filter((x) => x.action !== "InvokeCommand"), []);
        assert.ok(await getNode(nodeName(other)), "the Node is untouched");
    });

    it("removeNodes: every node is attempted, failures are reported together; ESS members leave in batches of at most 20 and a node whose drain failed is in none", async function () {
        const group = emu.addScalingGroup({ desiredCapacity: 22, maxSize: 25, regionId: REGION }).scalingGroupId;
        const ids = emu.scalingGroupInstances(group);
        await join(ids, "general");
        await blocked(ids[3]);
        await assert.rejects(
            removeNodes(ids.map((instanceId) => ({ instanceId, kind: "scale-out" as const, scalingGroupId: group })), { ...opts, drainTimeoutSeconds: 5, concurrency: 6 }),
            new RegExp(`1 of 22 node removal\\(s\\) failed:\\nremoving ${ids[3]}: step "drain" failed`));
        const batches = emu.callsOf("RemoveInstances").filter((x) => x.code === "").map((x) => Object.keys(x.params).filter((k) => k.startsWith("InstanceId.")).map((k) => x.params[k]));
        assert.ok(batches.every((b) => b.length <= 20), `batches of ${batches.map((b) => b.length)}`);
        assert.deepStrictEqual(batches.flat().sort(), ids.filter((id) => id !== ids[3]).sort(), "every drained member once, the undrained one in none");
        assert.deepStrictEqual(emu.scalingGroupInstances(group), [ids[3]], "only the undrained node stays");
        const left = (await Promise.all(ids.map(async (id) => (await getNode(nodeName(id))) ? id : undefined))).filter(Boolean);
        assert.deepStrictEqual(left, [ids[3]], "every other Node deleted");
    });

    it("a NotReady node looked up by provider id is drained without waiting for its pods; scale-in never goes below the pool minimum", async function () {
        const lost = await existingNode({ ready: false });
        await removeNode({ instanceId: lost, kind: "existing" }, opts);
        const ready = await existingNode();
        await removeNode({ instanceId: ready, kind: "existing" }, opts);
        const drains = emu.callsOf("InvokeCommand").filter((x) => x.params.CommandId === commands.drain).map((x) => JSON.parse(x.params.Parameters) as Record<string, string>);
        assert.deepStrictEqual(drains.map((d) => [d.node, d.skipWait]), [[nodeName(lost), "60"], [nodeName(ready), "0"]]);

        const group = emu.addScalingGroup({ desiredCapacity: 3, regionId: REGION }).scalingGroupId;
        await join(emu.scalingGroupInstances(group), "general");
        assert.strictEqual((await scaleInPool({ scalingGroupId: group, poolName: "general", targetSize: 1, minSize: 2 }, opts)).length, 1);
        assert.strictEqual(emu.scalingGroupInstances(group).length, 2);
        assert.deepStrictEqual(await scaleInPool({ scalingGroupId: group, poolName: "general", targetSize: 2, minSize: 0 }, opts), []);
    });
});
