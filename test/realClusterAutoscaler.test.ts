/**
 * World: real nodes (test/kube/seed.ts) for the dev stack. The real Cluster Autoscaler 1.36.1 (alicloud provider) and
 * the real CCM v2.14.0, each with its rendered command line and its ServiceAccount's token, against a real control
 * plane; ESS, ECS and VPC in the emulator (reached through test/kube/cloudProxy.ts: the Location and metadata services
 * the providers' SDKs ask first); every instance ESS launches is a real node (kubelet, containerd, runc, flannel,
 * kube-proxy) that boots the pool's userdata as synth renders it and joins through the stack's admission service.
 *
 * The seed's loop, timed: pending pods → the autoscaler reads the group and builds its scale-from-zero template from
 * the scaling configuration's tags and instance type → ScaleWithAdjustment → ESS launches instances → their userdata
 * runs (admission, kubeadm join) → Ready Nodes, initialized and routed by the CCM → the pods run. Then back: the pods
 * go → the nodes are unneeded, tainted, drained → RemoveInstances → ESS releases the instances (their machines stop)
 * → the CCM deletes the Nodes and their routes. The phase table of docs/scale-up.md is printed with the times seen here.
 * Credentials are the project's default: REGION_ID only, the instance RAM role's STS token from the metadata service.
 */
import * as assert from "assert";
import * as fs from "fs";
import * as path from "path";
import { parse as parseYaml } from "yaml";
import { WORKLOAD_IMAGE } from "./kube/nodes";
import { AUTOSCALED_SPEC_LABEL, POOL_LABEL, POOL_PENDING_TAINT } from "../src/rules";
import { REAL_RUNS, useSeedCluster } from "./kube/seed";

/** Test timing only: the stack's own 10m would make the loop take 20 minutes. Everything else is the stack's. */
const FAST: Record<string, string> = { "--scale-down-unneeded-time": "15s", "--scale-down-delay-after-add": "15s" };

describe("the seed's loop with real nodes: pending pods → the real Cluster Autoscaler → ESS → nodes that boot the pool's userdata → Running pods, and back", function () {
    this.timeout(900_000);
    const seed = useSeedCluster("dev");
    let autoscaler: { stop(): Promise<void> } | undefined;
    let ccm: { stop(): Promise<void> } | undefined;

    after(async function () {
        this.timeout(60_000);
        await autoscaler?.stop();
        await ccm?.stop();
    });
    afterEach(function () {
        if (this.currentTest?.state === "failed") console.log(`--- cluster-autoscaler log (tail) ---\n${seed.s.c.logTail("cluster-autoscaler", 60)}`);
    });

    it("scales the elastic pool up for pending pods and back down, every step real but the cloud; never forbidden by its RBAC", async function () {
        const s = seed.s;
        const c = s.c;
        const emu = s.emu;
        const pool = s.pools.elastic;
        const group = pool.scalingGroupId;
        const t0 = Date.now();
        const at: Record<string, number> = {};
        const mark = (phase: string) => { at[phase] ??= Date.now(); };

        ccm = await s.startCcm();
        // the project's objects for the pool, as the stack renders them; the Deployment's container runs here
        const objects = s.objects("dev-autoscaler.yaml");
        await c.apply(objects.filter((o) => o.kind !== "Deployment"));
        const deployment = objects.find((o) => o.kind === "Deployment")!;
        const container = deployment.spec.template.spec.containers[0];
        assert.ok((container.args as string[]).includes(`--nodes=0:10:${group}`), "the rendered node group is the emulator's");
        assert.deepStrictEqual((container.env as Array<{ name: string }>).map((e) => e.name), ["REGION_ID"], "the project's default credentials: the instance RAM role");
        const args = (container.args as string[]).map((a) => {
            const [flag] = a.split("=");
            return FAST[flag] ? `${flag}=${FAST[flag]}` : a;
        });
        const kubeconfig = await s.serviceAccountKubeconfig("kube-system", deployment.spec.template.spec.serviceAccountName);
        REAL_RUNS.autoscaler++;
        autoscaler = c.start("cluster-autoscaler", path.join(c.bin, "cluster-autoscaler"),
            // test timing: scan every 2 s (default 10 s); a node found unremovable (its pods still there) is looked at again after
            // 15 s (default 5 min), so the scale-down starts soon after the pods go
            [...args, `--kubeconfig=${kubeconfig}`, "--scan-interval=2s", "--unremovable-node-recheck-timeout=15s"],
            { env: { ...Object.fromEntries((container.env as Array<{ name: string; value: string }>).map((e) => [e.name, e.value])), ...s.proxy.env } });

        // the node group as configured: in the status ConfigMap (YAML since 1.30)
        const status = async () => {
            const r = await c.run("kubectl", ["get", "configmap", "cluster-autoscaler-status", "-n", "kube-system", "-o", "jsonpath={.data.status}"], { allowFail: true });
            return r.code === 0 && r.stdout ? parseYaml(r.stdout) : undefined;
        };
        const first = await c.waitFor("the autoscaler's status ConfigMap with the node group", async () => {
            const st = await status();
            return st?.nodeGroups?.some((g: { name: string }) => g.name === group) ? st : undefined;
        }, 120_000);
        const ng = first.nodeGroups.find((g: { name: string }) => g.name === group);
        assert.strictEqual(ng.health.minSize, 0);
        assert.strictEqual(ng.health.maxSize, 10);
        assert.ok(JSON.parse(await c.kubectl(["get", "lease", "cluster-autoscaler", "-n", "kube-system", "-o", "json"])).spec.holderIdentity, "it holds its lease");

        // two pods that only the pool's template fits (its label), one per node (anti-affinity)
        await c.kubectl(["create", "namespace", "burst"]);
        const started = Date.now();
        await c.apply({
            apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "burst", namespace: "burst" },
            spec: {
                replicas: 2, selector: { matchLabels: { app: "burst" } },
                template: {
                    metadata: { labels: { app: "burst" } },
                    spec: {
                        nodeSelector: { workload_type: "cpu" },
                        affinity: { podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ labelSelector: { matchLabels: { app: "burst" } }, topologyKey: "kubernetes.io/hostname" }] } },
                        containers: [{ name: "burst", image: WORKLOAD_IMAGE, imagePullPolicy: "Never", resources: { requests: { cpu: "500m", memory: "256Mi" } } }],
                    },
                },
            },
        });
        // watch the phases as they happen
        const routes = () => s.emu.routeTables.get(s.routeTableId)!.entries;
        const pods = async () => JSON.parse(await c.kubectl(["get", "pods", "-n", "burst", "-o", "json"])).items as any[];
        const poolNodes = async () => (JSON.parse(await c.kubectl(["get", "nodes", "-l", `${POOL_LABEL}=elastic`, "-o", "json"])).items as any[]);
        await c.waitFor("both pods Running on new nodes", async () => {
            const ps = await pods();
            if (ps.some((p) => (p.status.conditions ?? []).some((x: any) => x.type === "PodScheduled" && x.reason === "Unschedulable"))) mark("1 pods unschedulable");
            if (emu.callsOf("ScaleWithAdjustment").some((x) => x.code === "")) mark("2 ScaleWithAdjustment");
            const members = emu.scalingGroupInstances(group);
            if (members.length === 2) mark("3 ESS launched 2 instances");
            const boots = members.map((id) => s.boots.get(id)).filter((b) => b);
            if (boots.length === 2) mark("4 machines booted, userdata started");
            if (boots.length === 2 && boots.every((b) => /admitted by the admission service/.test(b!.node.read("/var/log/alicloud-kubeadm/attach-node.log") ?? ""))) mark("5 admitted (preparation + admission)");
            if (boots.length === 2 && boots.every((b) => b!.doneAt)) mark("6 kubeadm join done");
            const ns = await poolNodes();
            if (ns.length === 2) mark("7a Nodes registered (and labelled by the admission service)");
            if (ns.length === 2 && ns.every((n) => !(n.spec.taints ?? []).some((t: any) => t.key === POOL_PENDING_TAINT))) mark("7d admission lifted the pending taint");
            if (ns.length === 2 && ns.every((n) => !(n.spec.taints ?? []).some((t: any) => t.key === "node.cloudprovider.kubernetes.io/uninitialized"))) mark("7b CCM initialized them");
            if (ns.length === 2 && ns.every((n) => routes().some((e) => e.destinationCidrBlock === n.spec.podCIDR && e.status === "Available"))) mark("7c CCM routed their podCIDRs");
            if (ns.length === 2 && ns.every((n) => (n.status.conditions ?? []).some((x: any) => x.type === "Ready" && x.status === "True"))) mark("9 Nodes Ready (flannel, CNI)");
            // the CCM's race (docs/upstream.md#ccm-network-unavailable-race) can hold a node here until its route reconcile
            if (ns.length === 2 && ns.every((n) => (n.status.conditions ?? []).some((x: any) => x.type === "NetworkUnavailable" && x.status === "False"))) mark("9b NetworkUnavailable False on both");
            if (ps.length === 2 && ps.every((p) => p.spec.nodeName)) mark("10a pods scheduled");
            const running = ps.length === 2 && ps.every((p) => p.status.phase === "Running");
            if (running) mark("10b pods Running");
            return running;
        }, 600_000);
        const ups = emu.callsOf("ScaleWithAdjustment").filter((x) => x.code === "");
        assert.ok(ups.length >= 1);
        for (const up of ups) {
            assert.strictEqual(up.params.ScalingGroupId, group);
            assert.strictEqual(up.params.AdjustmentType, "TotalCapacity");
            assert.ok(up.securityToken, "signed with the STS token of the instance RAM role (from the metadata service)");
        }
        assert.strictEqual(ups[ups.length - 1].params.AdjustmentValue, "2");
        assert.ok(emu.calls.some((x) => x.action === "DescribeScalingConfigurations" && x.code === ""), "read the scaling configuration");
        assert.ok(emu.calls.some((x) => x.action === "DescribeInstanceTypes" && x.code === ""), "read the instance type's size");
        const instances = emu.scalingGroupInstances(group);
        for (const id of instances) {
            const b = s.boots.get(id)!;
            assert.strictEqual((await b.done).code, 0, `${id}'s userdata`);
            assert.strictEqual(Buffer.from(b.instance.userData, "base64").toString("utf8"), pool.userdata, "the pool's userdata as synth rendered it");
        }
        const names = instances.map((id) => `${s.region}.${id}`);
        const cidrs = new Map<string, string>();
        for (const n of await poolNodes()) {
            assert.ok(names.includes(n.metadata.name));
            assert.strictEqual(n.metadata.labels.workload_type, "cpu", "the pool's label, from its userdata");
            // The template the autoscaler built holds every configuration tag as a label: the Node carries each, the
            // pool's spec hash (AUTOSCALED_SPEC_LABEL, registered by the kubelet) among them.
            const template = emu.state.scalingConfigurations.get(emu.state.scalingGroups.get(group)!.activeScalingConfigurationId)!.tags ?? {};
            assert.match(template[AUTOSCALED_SPEC_LABEL] ?? "", /^[0-9a-f]{16}$/);
            for (const [key, value] of Object.entries(template)) assert.strictEqual(n.metadata.labels[key], value, `${n.metadata.name}: template label ${key}`);
            cidrs.set(n.metadata.name, n.spec.podCIDR);
        }
        for (const p of await pods()) assert.ok(names.includes(p.spec.nodeName), `${p.metadata.name} on a new node`);

        // back down: the pods go, the nodes are unneeded, tainted and drained, ESS removes them, the CCM deletes Node and route
        const down = Date.now();
        await c.kubectl(["scale", "deployment", "burst", "-n", "burst", "--replicas=0"]);
        await c.waitFor("ESS removed both instances, their Nodes and routes are gone", async () => {
            const ns = await poolNodes();
            if (ns.some((n) => (n.spec.taints ?? []).some((t: any) => t.key === "ToBeDeletedByClusterAutoscaler"))) mark("11 a node tainted ToBeDeletedByClusterAutoscaler");
            if (emu.callsOf("RemoveInstances").some((x) => x.code === "")) mark("12 RemoveInstances (the first)");
            if (emu.scalingGroupInstances(group).length === 0) mark("13 ESS released both instances");
            if (instances.every((id) => s.nodes.get(id)?.stopped)) mark("13b both machines stopped");
            if (ns.length === 0) mark("14 CCM deleted both Nodes");
            const routed = routes().some((e) => instances.includes(e.nextHopId));
            if (!routed) mark("15 CCM deleted both routes");
            return ns.length === 0 && !routed && emu.scalingGroupInstances(group).length === 0;
        }, 600_000);
        const removed = emu.callsOf("RemoveInstances").filter((x) => x.code === "");
        assert.deepStrictEqual(removed.flatMap((x) => Object.entries(x.params).filter(([k]) => k.startsWith("InstanceId.")).map(([, v]) => v)).sort(), [...instances].sort());
        assert.ok(emu.callsOf("DeleteRouteEntries").concat(emu.callsOf("DeleteRouteEntry")).some((x) => x.code === ""), "the CCM deleted the routes");

        // client-go's refusals read `<resource> is forbidden: User "system:serviceaccount:…" cannot <verb> …`; an informer
        // that cannot list or watch logs `failed to list` / `Failed to watch`
        const refused = fs.readFileSync(c.path("logs/cluster-autoscaler.log"), "utf8").split("\n").filter((l) => / is forbidden: User |failed to list|Failed to watch/.test(l));
        assert.deepStrictEqual(refused.slice(0, 10), [], "no call refused by the rendered RBAC");
        assert.ok(s.proxy.requests.some((r) => r.startsWith("GET 100.100.100.200/latest/meta-data/ram/security-credentials/")), "the RAM role from the metadata service");
        assert.ok(s.proxy.requests.some((r) => /CONNECT location\.aliyuncs\.com:443/.test(r)), "endpoints from the Location service");

        // the phase table (docs/scale-up.md): seconds from the pods' creation (scale-up) and from their removal (scale-down)
        const rows = Object.entries(at).sort((a, b) => a[1] - b[1]);
        console.log(`    phase (docs/scale-up.md)                          s after pods created | scale-down: s after pods removed`);
        for (const [phase, t] of rows) {
            const up = t < down;
            console.log(`    ${phase.padEnd(50)} ${up ? ((t - started) / 1000).toFixed(1).padStart(6) : "".padStart(6)} | ${up ? "" : ((t - down) / 1000).toFixed(1).padStart(6)}`);
        }
        console.log(`    (the whole test ${((Date.now() - t0) / 1000).toFixed(0)} s; ESS and the machines' boot are the emulator's and this machine's, not Alibaba's)`);
        void cidrs;
    });
});
