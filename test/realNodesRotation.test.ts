/**
 * World: real nodes (test/kube/seed.ts) for the dev stack with its fixed pool `general` at size 3 and a rollout
 * (maxSurge 1, maxUnavailable 0): a real control plane, real kubelet, containerd, runc, flannel (alloc) and kube-proxy
 * (iptables, kubeadm's add-on) on nodes that boot the pools' userdata as synth renders it and join through the stack's
 * admission service; the real CCM v2.14.0 (routes, node initialization) against the emulator's ECS and VPC. The cloud
 * (ECS, ESS, VPC, Cloud Assistant, the metadata service) is the emulator; Cloud Assistant runs the saved node operations
 * (list-nodes, drain, delete-node, outdated-taint) with the real kubectl against the real API server
 * (test/kube/operations.ts). The rollout is PoolCapacity's own code (`setPoolCapacity`, what its provider's create and
 * update run in `pulumi up`), with the inputs synth gives the pool's PoolCapacity.
 *
 * A workload of 3 replicas behind a ClusterIP Service, with a PodDisruptionBudget of `minAvailable: 2`; a probe sends
 * requests to the Service's address all along, from the host network namespace of a node of the `elastic` pool (a real
 * node the rollout does not touch), so every request goes through that node's kube-proxy (iptables DNAT) and the VPC
 * routes the CCM wrote to a pod on a `general` node. No stand-in routes them.
 *
 * Stand-ins (docs/real-cluster.md): the scaling configuration's in-place update (the emulator has no
 * ModifyScalingConfiguration: its instance type, userdata and tags are set as Pulumi's update of the resource leaves
 * them), and the CCM's `--route-reconciliation-period` at its 1-minute floor (test timing). Skipped with one line where
 * the machine cannot run real nodes (fails under CI=true).
 */
import * as assert from "assert";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { parse as parseYaml, stringify } from "yaml";
import { callApi } from "../src/cloud/openapi";
import { setPoolCapacity, type PoolCapacityInputs } from "../src/providers/poolCapacity";
import { OUTDATED_TAINT, POOL_LABEL, SPEC_TAG, type NodeCommandIds } from "../src/rules";
import { saveNodeCommands } from "../testing/savedCommands";
import { answerWithRealCluster, type RealOperations } from "./kube/operations";
import { WORKLOAD_IMAGE, type RealNode } from "./kube/nodes";
import { useSeedCluster, type Seed } from "./kube/seed";
import type { RenderedStack } from "./kube/stacks";

const NS = "rotation";
const NEW_TYPE = "ecs.g7.2xlarge";

/** The dev stack with `general` at size 3 and a rollout; `instanceType` changes the pool's spec. A file in a folder of its own. */
function devVariant(dir: string, instanceType?: string): string {
    const doc = parseYaml(fs.readFileSync(path.join(__dirname, "..", "stacks", "Pulumi.dev.yaml"), "utf8"));
    const general = doc.config["alicloud-kubeadm:cluster"].nodePools.find((p: { name: string }) => p.name === "general");
    Object.assign(general, { size: 3, rollout: { maxSurge: 1, maxUnavailable: 0 } }, instanceType ? { instanceType } : {});
    fs.mkdirSync(dir, { recursive: true });
    const file = path.join(dir, "Pulumi.dev.yaml");
    fs.writeFileSync(file, stringify(doc));
    return file;
}

/** The general pool's scaling configuration and PoolCapacity as synth recorded them. */
function generalOf(stack: RenderedStack): { config: { instanceType: string; userData: string; tags: Record<string, string> }; capacity: Record<string, any> } {
    const cfg = stack.resources.find((r) => r.type === "alicloud:ess/scalingConfiguration:ScalingConfiguration" && /-pool-general-config$/.test(r.name));
    const capacity = stack.resources.find((r) => r.type === "pulumi-nodejs:dynamic:Resource" && r.rawInputs.poolName === "general" && "size" in r.rawInputs);
    assert.ok(cfg && capacity, "synth made the general pool's configuration and PoolCapacity");
    return {
        config: { instanceType: String(cfg.inputs.instanceType), userData: cfg.rawInputs.userData as string, tags: cfg.inputs.tags as Record<string, string> },
        capacity: capacity.rawInputs,
    };
}

/**
 * The probe: a program run inside a node (its namespaces, as root) that GETs `url` one request after another, each on
 * a new connection, 2 s at most, 50 ms apart, until `stop` exists; it keeps its counts in `out` (JSON, replaced whole).
 */
const PROBE = `
const http = require("http"), fs = require("fs");
const [url, out, stop] = process.argv.slice(2);
const st = { sent: 0, ok: 0, failed: 0, streak: 0, failures: [], answers: {} };
const save = () => { fs.writeFileSync(out + ".tmp", JSON.stringify(st)); fs.renameSync(out + ".tmp", out); };
const once = () => new Promise((done) => {
    let settled = false;
    const end = (err, pod) => {
        if (settled) return;
        settled = true;
        if (err) { st.failed++; st.streak = 0; if (st.failures.length < 50) st.failures.push(new Date().toISOString() + " " + err); }
        else { st.ok++; st.streak++; st.answers[pod] = (st.answers[pod] || 0) + 1; }
        done();
    };
    const req = http.get(url, { agent: false, timeout: 2000 }, (res) => {
        let body = "";
        res.on("data", (d) => (body += d));
        res.on("end", () => res.statusCode === 200 ? end(undefined, body.split(" ")[0]) : end("HTTP " + res.statusCode));
        res.on("error", (e) => end(e.message));
    });
    req.on("timeout", () => req.destroy(new Error("no answer within 2 s")));
    req.on("error", (e) => end(e.message));
});
(async () => {
    let saved = 0;
    while (!fs.existsSync(stop)) {
        st.sent++;
        await once();
        if (Date.now() - saved > 250) { save(); saved = Date.now(); }
        await new Promise((r) => setTimeout(r, 50));
    }
    save();
})();
`;

interface ProbeState { sent: number; ok: number; failed: number; streak: number; failures: string[]; answers: Record<string, number> }

/** A `kubectl get -w` of the test's own, one line per object seen (its jsonpath), from the cluster's network. */
function watch(s: Seed, name: string, what: string[], jsonpath: string): { lines(): string[][]; stop(): Promise<void> } {
    const p = s.c.start(name, "kubectl", ["--kubeconfig", s.c.kubeconfig, "get", ...what, "-n", NS, "--watch", "-o", `jsonpath=${jsonpath}|end{"\\n"}`]);
    return {
        lines: () => fs.readFileSync(s.c.path(`logs/${name}.log`), "utf8").split("\n").filter((l) => l.endsWith("|end")).map((l) => l.split("|")),
        stop: () => p.stop(),
    };
}

describe("a fixed pool of 3 real nodes rotated onto a new spec by PoolCapacity, under a workload with a PodDisruptionBudget: the Service answers every request", function () {
    this.timeout(900_000);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ak-rotation-stack-"));
    const seed = useSeedCluster(devVariant(dir));
    let ccm: { stop(): Promise<void> } | undefined;
    let ops: RealOperations | undefined;
    let commands: NodeCommandIds;
    const t0 = Date.now();
    let probeNode: RealNode;
    let probe: Promise<unknown> | undefined;
    let probeOut = "";
    let probeStop = "";
    let original: string[] = [];
    let pods0: string[] = [];

    before(async function () {
        this.timeout(120_000);
        // the CCM's route reconcile at its 1-minute floor (the stack says 3m): a new node caught by the CCM's own race
        // (docs/upstream.md#ccm-network-unavailable-race) takes pods a minute later, not three. Test timing only.
        ccm = await seed.s.startCcm(["--route-reconciliation-period=1m"]);
        ops = answerWithRealCluster(seed.s.emu, seed.s.c, { master: seed.s.masterInstanceId, realNodes: seed.s.nodes });
        commands = await saveNodeCommands(seed.s.region);
    });
    after(async function () {
        this.timeout(60_000);
        if (probeStop && fs.existsSync(path.dirname(probeStop))) fs.writeFileSync(probeStop, "");
        await probe;
        ops?.cleanup();
        await ccm?.stop();
        fs.rmSync(dir, { recursive: true, force: true });
        console.log(`    (the whole file ${((Date.now() - t0) / 1000).toFixed(0)} s)`);
    });

    const nodeName = (id: string) => `${seed.s.region}.${id}`;
    /** What `pulumi up` gives the pool's PoolCapacity, as synth recorded it; the saved commands of this emulator; test polling. */
    const capacityInputs = (stack: RenderedStack): PoolCapacityInputs => {
        const synth = generalOf(stack).capacity;
        return {
            region: synth.region, scalingGroupId: synth.scalingGroupId, poolName: synth.poolName, mode: synth.mode, size: synth.size, minSize: synth.minSize,
            routeTableId: synth.routeTableId, podCidr: synth.podCidr, specHash: synth.specHash, rollout: synth.rollout,
            masterInstanceId: seed.s.masterInstanceId, commands,
            pollSeconds: 1, pollIntervalMs: 500, readyTimeoutSeconds: 300,
        };
    };
    const members = () => seed.s.emu.scalingGroupInstances(seed.s.pools.general.scalingGroupId);
    const poolNodes = async (pool: string) => JSON.parse(await seed.s.c.kubectl(["get", "nodes", "-l", `${POOL_LABEL}=${pool}`, "-o", "json"])).items as any[];
    const webPods = async () => (JSON.parse(await seed.s.c.kubectl(["get", "pods", "-n", NS, "-l", "app=web", "-o", "json"])).items as any[])
        .filter((p) => !p.metadata.deletionTimestamp && (p.status.conditions ?? []).some((x: any) => x.type === "Ready" && x.status === "True"));
    const probeState = (): ProbeState => JSON.parse(fs.readFileSync(probeOut, "utf8"));

    it("pulumi up makes the pool of 3 from the stack's spec; 3 replicas behind a Service answer a probe on the elastic pool's node, through its kube-proxy", async function () {
        const s = seed.s;
        const c = s.c;
        const started = Date.now();
        // the probe's node: one instance of the autoscaled pool, as the autoscaler would ask for it (none runs here)
        await callApi("ess", "ModifyScalingGroup", { ScalingGroupId: s.pools.elastic.scalingGroupId, DesiredCapacity: 1 }, { region: s.region });
        const inputs = capacityInputs(s.stack);
        assert.deepStrictEqual([inputs.size, inputs.rollout?.maxSurge, inputs.rollout?.maxUnavailable], [3, 1, 0], "the stack's pool: size 3, maxSurge 1");
        await setPoolCapacity(inputs);
        original = members();
        assert.strictEqual(original.length, 3);
        for (const id of original) assert.strictEqual(s.emu.instances.get(id)!.tags[SPEC_TAG], inputs.specHash, "made from the stack's spec");

        await c.kubectl(["create", "namespace", NS]);
        await c.apply([
            { apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "web", namespace: NS }, spec: {
                replicas: 3, selector: { matchLabels: { app: "web" } },
                template: { metadata: { labels: { app: "web" } }, spec: {
                    nodeSelector: { [POOL_LABEL]: "general" },
                    affinity: { podAntiAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 100, podAffinityTerm: { labelSelector: { matchLabels: { app: "web" } }, topologyKey: "kubernetes.io/hostname" } }] } },
                    // What a workload that must stay up does: its endpoint leaves the Service (every node's kube-proxy) before it stops
                    terminationGracePeriodSeconds: 30,
                    containers: [{ name: "web", image: WORKLOAD_IMAGE, imagePullPolicy: "Never", ports: [{ containerPort: 8080 }],
                        readinessProbe: { httpGet: { path: "/", port: 8080 }, periodSeconds: 1, timeoutSeconds: 2 },
                        lifecycle: { preStop: { sleep: { seconds: 10 } } } }],
                } },
            } },
            { apiVersion: "policy/v1", kind: "PodDisruptionBudget", metadata: { name: "web", namespace: NS }, spec: { minAvailable: 2, selector: { matchLabels: { app: "web" } } } },
            { apiVersion: "v1", kind: "Service", metadata: { name: "web", namespace: NS }, spec: { type: "ClusterIP", selector: { app: "web" }, ports: [{ port: 80, targetPort: 8080 }] } },
        ]);
        const ready = await c.waitFor("3 web pods Ready", async () => { const p = await webPods(); return p.length === 3 ? p : undefined; }, 240_000);
        pods0 = ready.map((p) => p.metadata.name).sort();
        for (const p of ready) assert.ok(original.map(nodeName).includes(p.spec.nodeName), `${p.metadata.name} on a node of the pool`);

        const [elastic] = s.emu.scalingGroupInstances(s.pools.elastic.scalingGroupId);
        assert.ok(elastic, "ESS launched the elastic pool's instance");
        await s.ready(nodeName(elastic));
        probeNode = s.nodes.get(elastic)!;
        const ip = (await c.kubectl(["get", "service", "web", "-n", NS, "-o", "jsonpath={.spec.clusterIP}"])).trim();
        fs.writeFileSync(path.join(probeNode.dir, "probe.js"), PROBE);
        probeOut = path.join(probeNode.dir, "probe.json");
        probeStop = path.join(probeNode.dir, "probe.stop");
        probe = probeNode.run(process.execPath, [path.join(probeNode.dir, "probe.js"), `http://${ip}:80/`, probeOut, probeStop], { timeoutMs: 1_200_000, allowFail: true });
        // kube-proxy on the probe's node has the Service: every pod answers, 30 requests in a row succeed
        await c.waitFor("the probe reaches the 3 pods through the Service", async () => {
            const st = fs.existsSync(probeOut) ? probeState() : undefined;
            return st && pods0.every((p) => st.answers[p]) && st.streak >= 30;
        }, 180_000).catch((e) => { throw new Error(`${e.message}\n${fs.existsSync(probeOut) ? JSON.stringify(probeState()) : "no probe output"}\n${probeNode.log("kubelet.service").slice(-2000)}`); });
        console.log(`    pool of 3 and the probe's node up, workload reachable: ${((Date.now() - started) / 1000).toFixed(0)} s`);
    });

    it("a changed spec: PoolCapacity's rollout (surge 1, drain with the PDB, remove) replaces all 3 nodes; the PDB is never violated and the probe counts 0 failed requests", async function () {
        const s = seed.s;
        const c = s.c;
        assert.ok(probe && original.length === 3, "the pool and the probe from the test before");
        // the stack with the pool's instance type changed, synthesized for this cluster: a new spec hash
        const next = await s.synthesize(devVariant(path.join(dir, "next"), NEW_TYPE));
        const before = generalOf(s.stack).config;
        const after = generalOf(next).config;
        assert.notStrictEqual(after.tags[SPEC_TAG], before.tags[SPEC_TAG], "a new instance type is a new spec");
        // Pulumi's in-place update of the scaling configuration (ModifyScalingConfiguration; not emulated): what new instances are made from
        const group = s.emu.state.scalingGroups.get(s.pools.general.scalingGroupId)!;
        Object.assign(s.emu.state.scalingConfigurations.get(group.activeScalingConfigurationId)!, {
            instanceType: after.instanceType, tags: after.tags, userData: Buffer.from(after.userData, "utf8").toString("base64"),
        });
        const inputs = capacityInputs(next);
        assert.strictEqual(inputs.specHash, after.tags[SPEC_TAG]);
        for (const id of members()) assert.notStrictEqual(s.emu.instances.get(id)!.tags[SPEC_TAG], inputs.specHash, `${id} is outdated`);

        // watched from the API server all along: the PDB's status and every web pod (Ready, being deleted)
        const pdbWatch = watch(s, "watch-pdb", ["pdb", "web"], "{.status.currentHealthy}|{.status.desiredHealthy}");
        const podWatch = watch(s, "watch-pods", ["pods", "-l", "app=web"], '{.metadata.name}|{.metadata.deletionTimestamp}|{.status.conditions[?(@.type=="Ready")].status}|{.spec.nodeName}');
        await c.waitFor("the watches' first lines", async () => pdbWatch.lines().length > 0 && podWatch.lines().length >= 3, 30_000);
        const atStart = probeState();
        const started = Date.now();
        const progress: string[] = [];
        await setPoolCapacity(inputs, (m) => progress.push(`${((Date.now() - started) / 1000).toFixed(1).padStart(6)} s  ${m}`));
        const rolled = Date.now();
        // the replicas evicted last are Ready again and answer the probe
        const final = await c.waitFor("3 web pods Ready on the new nodes, each answering the probe", async () => {
            const p = await webPods();
            const st = probeState();
            return p.length === 3 && p.every((x) => st.answers[x.metadata.name]) ? p : undefined;
        }, 180_000);
        const atEnd = probeState();
        await pdbWatch.stop();
        await podWatch.stop();
        console.log(`    rollout (setPoolCapacity) ${((rolled - started) / 1000).toFixed(0)} s:\n${progress.map((l) => `      ${l}`).join("\n")}`);

        // the pool: 3 members, all made from the new spec, each a Ready Node of the pool with the new instance type (the CCM, from ECS)
        const now = members();
        assert.strictEqual(now.length, 3);
        assert.deepStrictEqual(now.filter((id) => original.includes(id)), [], "every outdated member left");
        for (const id of now) {
            const inst = s.emu.instances.get(id)!;
            assert.strictEqual(inst.tags[SPEC_TAG], inputs.specHash, `${id} carries the new spec`);
            assert.strictEqual(inst.instanceType, NEW_TYPE);
            assert.strictEqual(s.emu.state.scalingInstances.get(id)!.lifecycleState, "Protected");
        }
        const nodes = await poolNodes("general");
        assert.deepStrictEqual(nodes.map((n) => n.metadata.name).sort(), now.map(nodeName).sort(), "the pool's Nodes are the new members'");
        for (const n of nodes) {
            assert.ok(n.status.conditions.some((x: any) => x.type === "Ready" && x.status === "True"), `${n.metadata.name} Ready`);
            assert.strictEqual(n.metadata.labels["node.kubernetes.io/instance-type"], NEW_TYPE);
            assert.ok(!(n.spec.taints ?? []).some((t: { key: string }) => t.key === OUTDATED_TAINT), "no Node keeps the rollout's taint");
        }
        // the old instances: released by ESS (machines off), their Nodes and routes gone
        for (const id of original) {
            assert.strictEqual(s.emu.instances.get(id), undefined, `${id} released`);
            assert.ok(s.nodes.get(id)?.stopped, `${id}'s machine is off`);
            assert.strictEqual(await s.node(nodeName(id)), undefined, `${id}'s Node deleted`);
            assert.ok(!s.emu.routeTables.get(s.routeTableId)!.entries.some((e) => e.nextHopId === id), `${id}'s route deleted`);
        }
        // the workload moved: new pods, on the new nodes
        assert.deepStrictEqual(final.map((p) => p.metadata.name).filter((n) => pods0.includes(n)), [], "every replica was evicted and replaced");
        for (const p of final) assert.ok(now.map(nodeName).includes(p.spec.nodeName), `${p.metadata.name} on a new node`);

        // the PodDisruptionBudget, as the disruption controller saw it, and the pods themselves: never fewer than 2 available
        const pdb = pdbWatch.lines().map(([healthy, desired]) => ({ healthy: Number(healthy), desired: Number(desired) }));
        // the watch lists the 3 pods first, then every change to any of them
        const available = new Map<string, boolean>();
        let fewest = Infinity;
        for (const [name, deleting, ready] of podWatch.lines()) {
            available.set(name, ready === "True" && deleting === "");
            if (pods0.every((p) => available.has(p))) fewest = Math.min(fewest, [...available.values()].filter(Boolean).length);
        }
        const evictions = pdb.filter((x, i) => i > 0 && x.healthy < pdb[i - 1].healthy).length;
        console.log(`    PDB status seen ${pdb.length} time(s), currentHealthy ${Math.min(...pdb.map((x) => x.healthy))}–${Math.max(...pdb.map((x) => x.healthy))} ` +
            `(desired ${pdb[0].desired}), ${evictions} drop(s); ${podWatch.lines().length} pod event(s), fewest available ${fewest}`);
        assert.ok(evictions >= 1, "the watch saw the evictions");
        assert.ok(pdb.every((x) => x.healthy >= 2 && x.desired === 2), `currentHealthy never below minAvailable 2: ${JSON.stringify(pdb)}`);
        assert.ok(fewest >= 2, `never fewer than 2 pods Ready and not being deleted (fewest ${fewest})`);

        // the probe, through kube-proxy on the elastic node, from the rollout's start until the last new pod answered (before it:
        // the probe's start, while kube-proxy on its node had not programmed the Service yet, is not counted)
        const sent = atEnd.sent - atStart.sent;
        const failed = atEnd.failed - atStart.failed;
        console.log(`    probe (elastic node's host network → its kube-proxy → ClusterIP ${NS}/web): ${sent} request(s) from the rollout's start until ` +
            `the new pods answered, ${failed} failed (before the rollout: ${atStart.sent} sent, ${atStart.failed} failed while kube-proxy took the Service); ` +
            `answers by pod ${JSON.stringify(atEnd.answers)}`);
        assert.deepStrictEqual(atEnd.failures.slice(atStart.failures.length), [], "no request failed");
        assert.strictEqual(failed, 0);
        assert.ok(sent > 0 && pods0.every((p) => atEnd.answers[p] > (atStart.answers[p] ?? 0)) && final.every((p) => atEnd.answers[p.metadata.name]),
            "answered during the rollout by the old pods and by the new ones");

        // control: the same probe counts failures when the Service has no pod to send them to
        await c.kubectl(["scale", "deployment", "web", "-n", NS, "--replicas=0"]);
        const failing = await c.waitFor("the probe counts failures without pods", async () => { const st = probeState(); return st.failed > 0 ? st : undefined; }, 90_000);
        console.log(`    control: with the workload scaled to 0 the probe counted ${failing.failed} failure(s) (${failing.failures[0]})`);
    });
});
