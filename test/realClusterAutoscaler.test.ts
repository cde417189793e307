/**
 * The whole loop with the real Cluster Autoscaler 1.36.1 (alicloud provider, built by the opt-in
 * `npm run kube:build -- --autoscaler`): the project's ClusterAutoscaler objects and flags for the dev stack's
 * autoscaled pool, the binary inside the cluster's network namespace with its ServiceAccount's token, ESS and ECS
 * answered by the emulator (reached through test/kube/cloudProxy.ts: the Location and metadata services the
 * provider's SDK asks first), KWOK nodes joining as the pool's userdata would make them join.
 *
 * Pending pods → the autoscaler reads the group, builds its scale-from-zero template from the scaling
 * configuration's tags and instance type, calls ScaleWithAdjustment → ESS launches instances → they join → the pods
 * run; the pods go → the nodes are unneeded → the autoscaler taints them and calls RemoveInstances. Credentials are the
 * project's default: REGION_ID only, so the provider takes the instance RAM role's STS token from the metadata service.
 *
 * Skipped with one line without the binary (also under CI=true, unless KUBE_BUILD_AUTOSCALER=1 asked CI to build it).
 */
import * as assert from "assert";
import * as fs from "fs";
import * as path from "path";
import { parse as parseYaml } from "yaml";
import { useEmulator } from "../testing/emulator/fixture";
import { INSTANCE_TYPES } from "../testing/emulator/ecs";
import { KUBERNETES_VERSION, type Cluster } from "./kube/cluster";
import { startCloudProxy, type CloudProxy } from "./kube/cloudProxy";
import { useRealCluster } from "./kube/fixture";
import { autoscalerObjects, resolveClusterAutoscalerArgs } from "../src/components/clusterAutoscaler";
import type { KubeObject } from "../src/components/kube";
import { poolNodeLabels, scalingConfigurationTags } from "../src/rules";

const REPO = path.resolve(__dirname, "..");
const VERSION = KUBERNETES_VERSION.replace(/^v/, "");
const dev = parseYaml(fs.readFileSync(path.join(REPO, "stacks", "Pulumi.dev.yaml"), "utf8")).config;
const REGION: string = dev["alicloud:region"];
const CLUSTER = dev["alicloud-kubeadm:cluster"];
const POOL = (CLUSTER.nodePools as Array<{ name: string; instanceType: string; autoscale?: { min: number; max: number }; labels?: Record<string, string> }>)
    .find((p) => p.autoscale)!;
/** Test timing only: the dev stack's own 10m would make the loop take 20 minutes. Everything else is the stack's. */
const FAST = { scaleDownUnneededTime: "15s", scaleDownDelayAfterAdd: "15s" };

describe(`Cluster Autoscaler (alicloud) against a real API server, ESS in the emulator: the whole loop for the dev stack's pool ${POOL.name}`, function () {
    this.timeout(300_000);
    const rc = useRealCluster({ region: REGION, podCidr: CLUSTER.network.podCidr, nodeCidrMaskSize: CLUSTER.network.nodeCidrMaskSize },
        { binaries: [{ name: "cluster-autoscaler", build: "npm run kube:build -- --autoscaler", optIn: "KUBE_BUILD_AUTOSCALER" }] });
    const ctx = useEmulator();
    let c: Cluster;
    let proxy: CloudProxy | undefined;
    let autoscaler: { stop(): Promise<void> } | undefined;

    afterEach(async function () {
        this.timeout(60_000);
        await autoscaler?.stop();
        await proxy?.stop();
        if (this.currentTest?.state === "failed" && c) console.log(`--- cluster-autoscaler log (tail) ---\n${c.logTail("cluster-autoscaler", 60)}`);
    });

    it("reads its node group as configured, scales the pool up from zero for pending pods (ESS ScaleWithAdjustment, nodes join), and back down (taint, RemoveInstances); never forbidden by its RBAC", async function () {
        c = rc.c;
        const emu = ctx.emu;
        const labels = poolNodeLabels({ name: POOL.name, labels: POOL.labels ?? {}, autoscale: POOL.autoscale });
        const tags = scalingConfigurationTags({ name: POOL.name, labels: POOL.labels ?? {}, autoscale: POOL.autoscale }, {}, () => undefined);
        const group = emu.addScalingGroup({
            regionId: REGION, minSize: POOL.autoscale!.min, maxSize: POOL.autoscale!.max, desiredCapacity: 0, instanceType: POOL.instanceType, configurationTags: tags,
        }).scalingGroupId;

        // ESS launches an instance → its userdata joins it: a KWOK node named and identified by provider id, with the pool's labels
        const size = INSTANCE_TYPES[POOL.instanceType];
        const joins: Array<Promise<void>> = [];
        emu.state.onUserDataRun = (inst) => {
            const name = `${REGION}.${inst.instanceId}`;
            joins.push(c.addNode({ name, providerID: name, labels: { ...labels, "node.kubernetes.io/instance-type": POOL.instanceType },
                allocatable: { cpu: String(size.cpu), memory: `${size.memoryGiB}Gi`, pods: "110" } }));
        };

        // the project's objects for this pool; everything but the Deployment is applied, the Deployment's container runs here
        const resolved = resolveClusterAutoscalerArgs({
            region: REGION, kubernetesVersion: VERSION, pools: [{ name: POOL.name, min: POOL.autoscale!.min, max: POOL.autoscale!.max, scalingGroupId: group }],
            settings: { ...CLUSTER.autoscaler, ...FAST },
        });
        const objects = autoscalerObjects(resolved, [group]);
        await c.apply(objects.filter((o) => o.kind !== "Deployment"));
        const container = (objects.find((o) => o.kind === "Deployment") as KubeObject & { spec: { template: { spec: { containers: Array<{ args: string[]; env: Array<{ name: string; value: string }>; image: string }> } } } })
            .spec.template.spec.containers[0];
        assert.ok(container.image.endsWith(`:v${resolved.version}`), `${container.image} is the version built here`);
        assert.deepStrictEqual(container.env.map((e) => e.name), ["REGION_ID"], "the project's default credentials: the instance RAM role");

        // its ServiceAccount's own token, so every call is judged by the rendered RBAC
        const token = (await c.kubectl(["create", "token", "cluster-autoscaler", "-n", "kube-system", "--duration=1h"])).trim();
        const kubeconfig = c.writeFile("cluster-autoscaler.conf", JSON.stringify({
            apiVersion: "v1", kind: "Config", clusters: [{ name: "c", cluster: { server: c.server, "certificate-authority": c.caFile } }],
            users: [{ name: "sa", user: { token } }], contexts: [{ name: "c", context: { cluster: "c", user: "sa" } }], "current-context": "c",
        }));
        proxy = await startCloudProxy(c, emu, { region: REGION, roleName: "alicloud-kubeadm-dev-control-plane" });
        autoscaler = c.start("cluster-autoscaler", path.join(c.bin, "cluster-autoscaler"),
            [...container.args, `--kubeconfig=${kubeconfig}`, "--scan-interval=2s"], // scan interval: test timing (default 10s)
            { env: { ...Object.fromEntries(container.env.map((e) => [e.name, e.value])), ...proxy.env } });

        // the node group as configured: in the status ConfigMap (YAML since 1.30)
        const status = async () => {
            const r = await c.run("kubectl", ["get", "configmap", "cluster-autoscaler-status", "-n", "kube-system", "-o", "jsonpath={.data.status}"], { allowFail: true });
            return r.code === 0 && r.stdout ? parseYaml(r.stdout) : undefined;
        };
        const first = await c.waitFor("the autoscaler's status ConfigMap with the node group", async () => {
            const s = await status();
            return s?.nodeGroups?.some((g: { name: string }) => g.name === group) ? s : undefined;
        }, 90_000);
        const ng = first.nodeGroups.find((g: { name: string }) => g.name === group);
        assert.strictEqual(ng.health.minSize, POOL.autoscale!.min);
        assert.strictEqual(ng.health.maxSize, POOL.autoscale!.max);
        const lease = JSON.parse(await c.kubectl(["get", "lease", "cluster-autoscaler", "-n", "kube-system", "-o", "json"]));
        assert.ok(lease.spec.holderIdentity, "it holds its leader-election lease");

        // pending pods that only the pool's template fits: one per instance (3 of its vCPUs each)
        await c.kubectl(["create", "namespace", "burst"]);
        const cpu = Math.max(1, size.cpu - 1);
        await c.apply({
            apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "burst", namespace: "burst" },
            spec: {
                replicas: 2, selector: { matchLabels: { app: "burst" } },
                template: {
                    metadata: { labels: { app: "burst" } },
                    spec: { nodeSelector: POOL.labels ?? {}, containers: [{ name: "burst", image: "registry.invalid/burst:1", resources: { requests: { cpu: String(cpu), memory: "1Gi" } } }] },
                },
            },
        });
        await c.waitFor("ESS scaled the group to 2 and both instances joined", async () => emu.scalingGroupInstances(group).length === 2 && joins.length === 2, 120_000);
        await Promise.all(joins);
        await c.waitFor("both pods Running on the new nodes", async () =>
            JSON.parse(await c.kubectl(["get", "deployment", "burst", "-n", "burst", "-o", "json"])).status.readyReplicas === 2, 90_000);
        const ups = emu.callsOf("ScaleWithAdjustment").filter((x) => x.code === "");
        assert.ok(ups.length >= 1);
        for (const up of ups) {
            assert.strictEqual(up.params.ScalingGroupId, group);
            assert.strictEqual(up.params.AdjustmentType, "TotalCapacity");
            assert.ok(up.securityToken, "signed with the STS token of the instance RAM role (from the metadata service)");
        }
        assert.strictEqual(ups[ups.length - 1].params.AdjustmentValue, "2");
        // the template came from the scaling configuration and the instance type
        assert.ok(emu.calls.some((x) => x.action === "DescribeScalingConfigurations" && x.code === ""), "read the scaling configuration");
        assert.ok(emu.calls.some((x) => x.action === "DescribeInstanceTypes" && x.code === ""), "read the instance type's size");
        const nodes = emu.scalingGroupInstances(group).map((id) => `${REGION}.${id}`);

        // the pods go: the nodes become unneeded, are tainted, and leave through RemoveInstances
        await c.kubectl(["scale", "deployment", "burst", "-n", "burst", "--replicas=0"]);
        await c.waitFor("the autoscaler removed both instances from the group", async () => emu.scalingGroupInstances(group).length === 0, 150_000);
        const removed = emu.callsOf("RemoveInstances").filter((x) => x.code === "");
        assert.deepStrictEqual(removed.flatMap((x) => Object.entries(x.params).filter(([k]) => k.startsWith("InstanceId.")).map(([, v]) => `${REGION}.${v}`)).sort(), [...nodes].sort());
        for (const n of nodes) {
            const node = JSON.parse(await c.kubectl(["get", "node", n, "-o", "json"]));
            assert.ok((node.spec.taints ?? []).some((t: { key: string }) => t.key === "ToBeDeletedByClusterAutoscaler"), `${n} tainted before removal`);
        }
        // the CCM would now delete the Nodes of the released instances; no CCM here
        await c.kubectl(["delete", "node", ...nodes]);

        const log = fs.readFileSync(c.path("logs/cluster-autoscaler.log"), "utf8");
        // client-go's refusals read `<resource> is forbidden: User "system:serviceaccount:…" cannot <verb> …`; an informer
        // that cannot list or watch logs `failed to list` / `Failed to watch`
        const refused = log.split("\n").filter((l) => / is forbidden: User |failed to list|Failed to watch/.test(l));
        assert.deepStrictEqual(refused.slice(0, 10), [], "no call refused by the rendered RBAC");
        const asked = [...new Set(proxy.requests.map((r) => r.replace(/\?.*$/, "").replace(/(security-credentials\/).+/, "$1<role>")))];
        console.log(`    the provider asked: ${asked.join(", ")}`);
        assert.ok(proxy.requests.some((r) => r.startsWith("GET 100.100.100.200/latest/meta-data/ram/security-credentials/")), "the RAM role from the metadata service");
        assert.ok(proxy.requests.some((r) => /CONNECT location\.aliyuncs\.com:443/.test(r)), "endpoints from the Location service");
    });
});
