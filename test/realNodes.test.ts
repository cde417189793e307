/**
 * World: real nodes (test/kube/seed.ts). A real control plane; real kubelet, containerd, runc and CNI plugins on nodes
 * in their own namespaces, booting the userdata synth renders for the example stack with existing nodes
 * (examples/Pulumi.existing-nodes.yaml: dev's pools plus existing instances); the stack's own admission service,
 * flannel DaemonSet and kube-proxy; the real Cloud Controller Manager v2.14.0 against the emulator's ECS and VPC. The
 * cloud (ECS, ESS, VPC, the metadata service) is the emulator; the VPC router is a bridge that follows the emulator's
 * route table. Skipped with one line where the machine cannot run real nodes (fails under CI=true).
 */
import * as assert from "assert";
import * as crypto from "crypto";
import * as fs from "fs";
import { callApi } from "../src/cloud/openapi";
import { redactUserdata } from "../src/shell/render";
import { cidrRange, cidrWithin } from "./kube/fixture";
import { WORKLOAD_IMAGE } from "./kube/nodes";
import { POOL_LABEL, POOL_PENDING_TAINT } from "../src/rules";
import { ADMITTED_GROUP, PROVIDER_ID_ANNOTATION } from "../src/admission/approver";
import type { Cluster } from "./kube/cluster";
import { useSeedCluster, type Boot } from "./kube/seed";
import { answerWithRealCluster, type RealOperations } from "./kube/operations";
import type { RealNode } from "./kube/nodes";
import type { EmuInstance } from "../testing/emulator";
import { primaryEni } from "../testing/emulator/ecs";
import { saveNodeCommands } from "../testing/savedCommands";
import { CLEARED_USERDATA, removeNode, type RemovalOptions } from "../src/removal";

const STACK = "examples/Pulumi.existing-nodes.yaml";
const sha256 = (s: string | Buffer) => crypto.createHash("sha256").update(s).digest("hex");
/** The first host address of an IPv4 CIDR (the bridge's gateway for its pods). */
const firstHost = (cidr: string) => {
    const n = cidrRange(cidr).start + 1;
    return [24, 16, 8, 0].map((sh) => Math.floor(n / 2 ** sh) % 256).join(".");
};

type Csr = { spec: { username: string; groups?: string[]; signerName: string }; status?: { certificate?: string; conditions?: Array<{ type: string; reason?: string }> } };

/**
 * Of `items` (API objects), the kubelet client CSRs that gave Node `name` its credentials through an admission token:
 * made with a bootstrap token of the admitted group, approved, the certificate issued for `system:node:<name>`.
 */
function admittedCsrsOf(items: Array<{ kind?: string }>, name: string): Array<{ token: string; approved: string }> {
    return (items as Array<Csr & { kind?: string }>).filter((x) => (x.kind ?? "CertificateSigningRequest") === "CertificateSigningRequest" &&
        x.spec.signerName === "kubernetes.io/kube-apiserver-client-kubelet" && (x.spec.groups ?? []).includes(ADMITTED_GROUP) &&
        x.status?.certificate && new crypto.X509Certificate(Buffer.from(x.status.certificate, "base64")).subject.split("\n").includes(`CN=system:node:${name}`))
        .map((x) => ({ token: /^system:bootstrap:([a-z0-9]{6})$/.exec(x.spec.username)?.[1] ?? "", approved: x.status!.conditions!.find((k) => k.type === "Approved")?.reason ?? "" }));
}
const admittedCsrs = async (c: Cluster, name: string) => admittedCsrsOf(JSON.parse(await c.kubectl(["get", "csr", "-o", "json"])).items, name);

describe("real nodes: the pool's userdata as synth renders it joins through admission; the real CCM routes the pods", function () {
    this.timeout(600_000);
    const seed = useSeedCluster(STACK);
    let ccm: { stop(): Promise<void> } | undefined;
    let general: Boot[] = [];

    before(async function () {
        this.timeout(300_000);
        // the CCM as its DaemonSet runs it; its route reconcile at the 1-minute floor is test timing only (the stack says 3m):
        // a node caught by the CCM's race (docs/upstream.md#ccm-network-unavailable-race) is schedulable a minute later, not three
        ccm = await seed.s.startCcm(["--route-reconciliation-period=1m"]);
    });
    after(async () => { await ccm?.stop(); });

    const nodeName = (id: string) => `${seed.s.region}.${id}`;
    /** Waits until an admission token's Secret is gone: the approver deletes it with its first CSR (single use). */
    const tokenGone = (token: string) => seed.s.c.waitFor(`admission token ${token} deleted after its use`, async () =>
        /NotFound/.test((await seed.s.c.run("kubectl", ["get", "secret", `bootstrap-token-${token}`, "-n", "kube-system"], { allowFail: true })).stderr) || undefined, 30_000);

    it("ESS launches the general pool: each instance boots the userdata synth rendered, byte for byte, is admitted and joins; its Node is Ready, named and identified by provider id, initialized by the CCM, and routed", async function () {
        const s = seed.s;
        const pool = s.pools.general;
        const started = Date.now();
        await callApi("ess", "ModifyScalingGroup", { ScalingGroupId: pool.scalingGroupId, DesiredCapacity: 2 }, { region: s.region });
        // the phases of a join, each marked when both nodes are past it, seen from the cloud's and the cluster's state
        const at = new Map<string, number>();
        const mark = (phase: string, reached: boolean) => { if (reached && !at.has(phase)) at.set(phase, Date.now()); };
        const hasTaint = (n: any, key: string) => (n?.spec.taints ?? []).some((t: { key: string }) => t.key === key);
        const condition = (n: any, type: string) => (n?.status.conditions ?? []).find((x: { type: string }) => x.type === type)?.status;
        const onNode = (b: Boot, file: string) => fs.existsSync(`/proc/${b.node.pid}/root${file}`);
        await s.c.waitFor("the pool's two nodes Ready, initialized and routed", async () => {
            const ids = s.emu.scalingGroupInstances(pool.scalingGroupId);
            const boots = ids.map((id) => s.boots.get(id)).filter((b): b is Boot => b !== undefined);
            const all = (p: (b: Boot) => boolean) => boots.length === 2 && boots.every(p);
            mark("ESS launched both instances (the emulator: at once)", ids.length === 2);
            mark("machines booted, userdata started (cloud-init)", boots.length === 2);
            if (boots.length < 2) return false;
            const items = JSON.parse(await s.c.kubectl(["get", "nodes,csr,leases.coordination.k8s.io", "-A", "-o", "json"])).items as any[];
            const node = (b: Boot) => items.find((o) => o.kind === "Node" && o.metadata.name === nodeName(b.instance.instanceId));
            mark("node prepared: packages in place (baked image), containerd configured and up", all((b) => onNode(b, "/run/containerd/containerd.sock")));
            mark("baked images imported into containerd (this machine: no registry)", all((b) => onNode(b, "/var/lib/containerd/.ak-baked-images")));
            mark("admitted: a single-use bootstrap token issued for the node", all((b) => items.some((o) => o.kind === "Lease" && o.metadata.annotations?.[PROVIDER_ID_ANNOTATION] === nodeName(b.instance.instanceId))));
            mark("kubeadm join: kubelet configured and started", all((b) => onNode(b, "/var/lib/kubelet/config.yaml")));
            mark("TLS bootstrap: client CSR approved by the admission service, signed", all((b) => admittedCsrsOf(items, nodeName(b.instance.instanceId)).length > 0));
            mark("Node registered", all((b) => node(b) !== undefined));
            mark("kubeadm join done, userdata ended", all((b) => b.doneAt !== undefined));
            mark("pool label set and pending taint lifted by the admission service", all((b) => node(b)?.metadata.labels[POOL_LABEL] === "general" && !hasTaint(node(b), POOL_PENDING_TAINT)));
            mark("CCM: initialized (uninitialized taint gone)", all((b) => node(b) && !hasTaint(node(b), "node.cloudprovider.kubernetes.io/uninitialized")));
            const routed = all((b) => s.emu.routeTables.get(s.routeTableId)!.entries.some((e) => e.destinationCidrBlock === node(b)?.spec.podCIDR && e.nextHopId === b.instance.instanceId && e.status === "Available"));
            mark("CCM: podCIDR routed in the VPC route table", routed);
            const leased = all((b) => onNode(b, "/run/flannel/subnet.env") && onNode(b, "/etc/cni/net.d/10-flannel.conflist"));
            mark("flannel: lease written (subnet.env), CNI config installed", leased);
            const ready = all((b) => condition(node(b), "Ready") === "True");
            mark("Node Ready", ready);
            mark("NetworkUnavailable False", all((b) => condition(node(b), "NetworkUnavailable") === "False"));
            return ready && routed && leased;
        }, 240_000);
        console.log("    phase of a pool node's join (both nodes past it)                      s after ModifyScalingGroup");
        for (const [phase, t] of [...at].sort((a, b) => a[1] - b[1])) console.log(`    ${phase.padEnd(72)} ${((t - started) / 1000).toFixed(1).padStart(5)}`);
        general = s.emu.scalingGroupInstances(pool.scalingGroupId).map((id) => s.boots.get(id)!);
        for (const b of general) {
            const r = await b.done;
            assert.strictEqual(r.code, 0, `userdata of ${b.instance.instanceId} failed:\n${b.node.read("/var/log/alicloud-kubeadm/attach-node.log")?.slice(-3000)}`);
            // what the instance booted is what synth rendered (and wrote, redacted, to out/<stack>/userdata)
            const booted = Buffer.from(b.instance.userData, "base64");
            assert.strictEqual(sha256(booted), sha256(pool.userdata));
            assert.strictEqual(redactUserdata(booted.toString("utf8")), s.stack.userdata[`${pool.configName}.sh`]);
            // admitted: its kubelet's client certificate came from a bootstrap token the admission service issued for this
            // node alone, the CSR approved by the service's approver; the token is gone (single use)
            const csrs = await admittedCsrs(s.c, nodeName(b.instance.instanceId));
            assert.strictEqual(csrs.length, 1, `one admitted CSR for ${b.instance.instanceId}: ${JSON.stringify(csrs)}`);
            assert.strictEqual(csrs[0].approved, "AlicloudKubeadmAdmission");
            await tokenGone(csrs[0].token);
            assert.ok(b.node.read("/var/lib/alicloud-kubeadm/join.done")?.includes(`node=${nodeName(b.instance.instanceId)}`));
            // the project's JoinConfiguration, as kubeadm gave it to the kubelet
            const flags = b.node.read("/var/lib/kubelet/kubeadm-flags.env") ?? "";
            assert.match(flags, new RegExp(`--provider-id=${nodeName(b.instance.instanceId).replace(/\./g, "\\.")}`));
            assert.match(flags, /--cloud-provider=external/);
            // through admission the kubelet sets no pool label: it registers with the pending taint, the service labels the Node
            assert.match(flags, /--register-with-taints=startup-taint\.cluster-autoscaler\.kubernetes\.io\/alicloud-kubeadm-pool:NoSchedule/);
            assert.doesNotMatch(flags, /--node-labels=.*alicloud-kubeadm-pool/);
        }
        for (const b of general) {
            const name = nodeName(b.instance.instanceId);
            const node = await s.ready(name);
            assert.strictEqual(node.spec.providerID, name);
            const labelled = await s.c.waitFor(`the admission service labelled ${name} and lifted its pending taint`, async () => {
                const n = await s.node(name);
                return n.metadata.labels[POOL_LABEL] === "general" && !(n.spec.taints ?? []).some((t: { key: string }) => t.key === POOL_PENDING_TAINT) ? n : undefined;
            }, 60_000);
            assert.ok(labelled);
            // the CCM: addresses and labels from ECS, the uninitialized taint gone, a route for the podCIDR
            const init = await s.c.waitFor(`the CCM initialized ${name}`, async () => {
                const n = await s.node(name);
                return !(n.spec.taints ?? []).some((t: { key: string }) => t.key === "node.cloudprovider.kubernetes.io/uninitialized") ? n : undefined;
            }, 120_000);
            assert.deepStrictEqual(init.status.addresses.filter((a: { type: string }) => a.type === "InternalIP").map((a: { address: string }) => a.address), [b.instance.privateIp]);
            assert.strictEqual(init.metadata.labels["node.kubernetes.io/instance-type"], pool.instanceType);
            assert.ok(cidrWithin(init.spec.podCIDR, "172.16.0.0/16"));
            // and turns off its ENI's source/destination check, without which the VPC would drop what the node forwards
            await s.c.waitFor(`${name}'s ENI forwards for its pods`, async () => s.emu.state.sourceDestCheckOff.has(primaryEni(b.instance)), 60_000);
            await s.c.waitFor(`a route for ${name}'s podCIDR`, async () =>
                s.emu.routeTables.get(s.routeTableId)!.entries.some((e) => e.destinationCidrBlock === init.spec.podCIDR && e.nextHopId === b.instance.instanceId && e.status === "Available"), 120_000);
        }
    });

    it("pods on two nodes talk over the VPC routes the CCM wrote: flannel (alloc) gives each pod an address of its node's podCIDR; without the route, no traffic", async function () {
        const s = seed.s;
        assert.strictEqual(general.length, 2, "the pool's nodes from the test before");
        const pods: Array<{ name: string; ip: string; cidr: string; instance: string }> = [];
        for (const b of general) {
            const node = nodeName(b.instance.instanceId);
            const name = `web-${b.instance.instanceId.slice(-4)}`;
            await s.c.apply({ apiVersion: "v1", kind: "Pod", metadata: { name, namespace: "default", labels: { app: "web" } },
                spec: { nodeName: node, containers: [{ name: "web", image: WORKLOAD_IMAGE, imagePullPolicy: "Never" }] } });
            const pod = await s.c.waitFor(`pod ${name} Running`, async () => {
                const p = JSON.parse(await s.c.kubectl(["get", "pod", name, "-o", "json"]));
                return p.status?.phase === "Running" && p.status.podIP ? p : undefined;
            }, 120_000);
            const cidr = (await s.node(node)).spec.podCIDR;
            assert.ok(cidrWithin(`${pod.status.podIP}/32`, cidr), `${pod.status.podIP} in ${node}'s ${cidr}`);
            // flannel's alloc backend: the node's lease is its podCIDR; the CNI config is the one flannel installed
            const env = b.node.read("/run/flannel/subnet.env") ?? "";
            assert.match(env, new RegExp(`^FLANNEL_SUBNET=${firstHost(cidr).replace(/\./g, "\\.")}/${cidr.split("/")[1]}$`, "m"));
            assert.match(b.node.read("/etc/cni/net.d/10-flannel.conflist") ?? "", /"type": "flannel"/);
            pods.push({ name, ip: pod.status.podIP, cidr, instance: b.instance.instanceId });
        }
        const [a, b] = pods;
        // from the VPC router, pod a fetches pod b: the request crosses from one node to the other over b's route
        const fetch = (allowFail = false) => s.c.run("curl", ["-sS", "--max-time", "5", `http://${a.ip}:8080/fetch?url=http://${b.ip}:8080/`], { allowFail });
        const answer = (await fetch()).stdout.trim();
        assert.strictEqual(answer, `${b.name} ${b.ip}`);
        // the route of b's podCIDR out of the emulator's table: the VPC router drops it, traffic stops; back in, it flows
        const entry = s.emu.routeTables.get(s.routeTableId)!.entries.find((e) => e.destinationCidrBlock === b.cidr)!;
        await callApi("vpc", "DeleteRouteEntry", { RouteTableId: s.routeTableId, RouteEntryId: entry.routeEntryId }, { region: s.region });
        await s.c.waitFor("no route to b's pods", async () => (await fetch(true)).code !== 0 || undefined, 30_000);
        await callApi("vpc", "CreateRouteEntry", { RouteTableId: s.routeTableId, DestinationCidrBlock: b.cidr, NextHopId: b.instance, NextHopType: "Instance" }, { region: s.region });
        await s.c.waitFor("traffic back", async () => (await fetch(true)).stdout.trim() === `${b.name} ${b.ip}` || undefined, 30_000);
    });

    describe("an existing instance: attached by the one-line command, removed (drain with a PDB, userdata cleared, kubeadm reset, Node deleted), attached again", function () {
        let ops: RealOperations;
        let opts: RemovalOptions;
        let existing: { instance: EmuInstance; node: RealNode };
        const EXISTING = "i-bp1exampleexample01"; // examples/Pulumi.existing-nodes.yaml, mode manual

        before(async function () {
            this.timeout(120_000);
            const s = seed.s;
            existing = await s.existingInstance({ instanceId: EXISTING, privateIp: "192.168.16.21", userData: Buffer.from("#!/bin/sh\n").toString("base64") });
            ops = answerWithRealCluster(s.emu, s.c, { master: s.masterInstanceId, realNodes: s.nodes });
            opts = {
                region: s.region, masterInstanceIds: [s.masterInstanceId], commands: await saveNodeCommands(s.region), routeTableId: s.routeTableId,
                podCidr: "172.16.0.0/16", pollIntervalMs: 200, drainTimeoutSeconds: 20, warn: () => undefined, log: () => undefined,
            };
        });
        after(() => ops?.cleanup());

        /** The stack's one-line manual attach (its `attachCommand` output), run as root on the instance. */
        const attach = async () => {
            const r = await existing.node.sh(String(seed.s.stack.outputs.attachCommand), { allowFail: true, timeoutMs: 300_000 });
            assert.strictEqual(r.code, 0, `the one-line attach failed:\n${r.stdout.slice(-2000)}${r.stderr.slice(-2000)}\n${existing.node.read("/var/log/alicloud-kubeadm/attach-node.log")?.slice(-3000)}`);
        };
        /** A workload pod on the existing node; resolves with its IP once Running. */
        const podOn = async (name: string) => {
            await seed.s.c.apply({ apiVersion: "v1", kind: "Pod", metadata: { name, namespace: "default" },
                spec: { nodeName: nodeName(EXISTING), containers: [{ name: "web", image: WORKLOAD_IMAGE, imagePullPolicy: "Never" }] } });
            return (await seed.s.c.waitFor(`pod ${name} Running`, async () => {
                const p = JSON.parse(await seed.s.c.kubectl(["get", "pod", name, "-o", "json"]));
                return p.status?.phase === "Running" && p.status.podIP ? p : undefined;
            }, 120_000)).status.podIP as string;
        };

        it("the one-line command fetches the attach script from the admission service (its key checked against the pin) and joins the instance as pool `existing`", async function () {
            const s = seed.s;
            await attach();
            const node = await s.ready(nodeName(EXISTING));
            assert.strictEqual(node.spec.providerID, nodeName(EXISTING));
            const csrs = await admittedCsrs(s.c, nodeName(EXISTING));
            assert.strictEqual(csrs.length, 1, `one admitted CSR: ${JSON.stringify(csrs)}`);
            assert.strictEqual(csrs[0].approved, "AlicloudKubeadmAdmission");
            await tokenGone(csrs[0].token);
            await s.c.waitFor("the pool label `existing` from the admission service", async () => (await s.node(nodeName(EXISTING))).metadata.labels[POOL_LABEL] === "existing", 60_000);
        });

        it("removal drains it with real evictions (a PDB holds it first), clears its userdata, runs kubeadm reset on it through the saved command, deletes its Node and route; attached again, its pods get addresses of the new podCIDR", async function () {
            const s = seed.s;
            const name = nodeName(EXISTING);
            // schedulable: Ready, initialized by the CCM, routed (no NoSchedule taint left). The CCM's node controller may set
            // NetworkUnavailable back to True after its route controller cleared it (docs/upstream.md#ccm-network-unavailable-race):
            // then the CCM's route reconcile (1 minute here) clears it
            const waited = Date.now();
            const before = await s.c.waitFor(`${name} schedulable`, async () => {
                const n = await s.ready(name);
                return !(n.spec.taints ?? []).some((t: { effect: string }) => t.effect === "NoSchedule") && n.spec.podCIDR ? n : undefined;
            }, 120_000).catch(async (e) => { throw new Error(`${e.message}: ${JSON.stringify({ taints: (await s.node(name))?.spec.taints, conditions: (await s.node(name))?.status.conditions })}`); });
            console.log(`    ${name} schedulable after ${((Date.now() - waited) / 1000).toFixed(1)} s (Ready, initialized, routed, no NoSchedule taint)`);
            const oldCidr: string = before.spec.podCIDR;
            // a Deployment's one pod on the node, held by a PDB that allows no disruption
            await s.c.apply([
                { apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "held", namespace: "default" }, spec: { replicas: 1, selector: { matchLabels: { app: "held" } },
                    template: { metadata: { labels: { app: "held" } }, spec: { nodeSelector: { [POOL_LABEL]: "existing" }, containers: [{ name: "web", image: WORKLOAD_IMAGE, imagePullPolicy: "Never" }] } } } },
                { apiVersion: "policy/v1", kind: "PodDisruptionBudget", metadata: { name: "held", namespace: "default" }, spec: { minAvailable: 1, selector: { matchLabels: { app: "held" } } } },
            ]);
            const heldPod = async () => JSON.parse(await s.c.kubectl(["get", "pods", "-l", "app=held", "-o", "json"])).items as Array<{ metadata: { name: string; deletionTimestamp?: string }; spec: { nodeName: string }; status: { phase: string } }>;
            await s.c.waitFor("the held pod Running on the existing node", async () => (await heldPod()).some((p) => p.status.phase === "Running" && p.spec.nodeName === name), 120_000)
                .catch(async (e) => { throw new Error(`${e.message}\n${JSON.stringify(await heldPod(), null, 1).slice(0, 3000)}`); });
            await assert.rejects(removeNode({ instanceId: EXISTING, kind: "existing" }, opts), /disruption budget|PodDisruptionBudget/i);
            assert.ok((await s.node(name))?.spec.unschedulable, "cordoned, still there");
            assert.ok((await heldPod()).some((p) => p.spec.nodeName === name && !p.metadata.deletionTimestamp), "the PDB kept the pod");
            assert.ok(existing.node.read("/etc/kubernetes/kubelet.conf"), "not reset while the drain is refused");
            await s.c.kubectl(["delete", "pdb", "held"]);
            // the replacement needs a node: the existing one is cordoned, the general pool's are not labelled `existing`
            await s.c.kubectl(["patch", "deployment", "held", "--type=json", "-p", JSON.stringify([{ op: "remove", path: "/spec/template/spec/nodeSelector" }])]);
            const report = await removeNode({ instanceId: EXISTING, kind: "existing" }, opts);
            void report;
            assert.strictEqual(await s.node(name), undefined, "the Node is deleted");
            assert.ok(!(await heldPod()).some((p) => p.spec.nodeName === name && !p.metadata.deletionTimestamp), "evicted from the node");
            assert.strictEqual(Buffer.from(s.emu.instances.get(EXISTING)!.userData, "base64").toString("utf8"), CLEARED_USERDATA, "its userdata is cleared");
            assert.strictEqual(existing.node.read("/etc/kubernetes/kubelet.conf"), undefined, "kubeadm reset ran on the node");
            assert.strictEqual(existing.node.read("/var/lib/alicloud-kubeadm/join.done"), undefined);
            await s.c.waitFor("its route gone", async () => !s.emu.routeTables.get(s.routeTableId)!.entries.some((e) => e.nextHopId === EXISTING), 60_000);
            // the saved `reset` command, invoked through Cloud Assistant on the instance itself, and finished with success
            const resets = [...s.emu.state.invocations.values()].filter((inv) => inv.commandId === opts.commands.reset)
                .flatMap((inv) => inv.records).filter((r) => r.instanceId === EXISTING);
            assert.strictEqual(resets.length, 1, "one reset invocation on the instance");
            assert.strictEqual(resets[0].reply?.exitCode, 0);

            // attached again: a new podCIDR, and the node's pods get addresses from it
            await attach();
            const again = await s.ready(name);
            const newCidr = await s.c.waitFor("a podCIDR", async () => (await s.node(name))?.spec.podCIDR, 60_000);
            assert.notStrictEqual(newCidr, oldCidr, "the controller-manager allocated another podCIDR");
            void again;
            const ip = await podOn("after-reattach");
            assert.ok(cidrWithin(`${ip}/32`, newCidr), `${ip} in the new ${newCidr}`);
            await s.c.kubectl(["delete", "pod", "after-reattach", "--wait=false"]);
        });

        it("a re-join over a plain `kubeadm reset` (which leaves cni0 and the CNI state): without ak_preclean the node's pods get no network; the attach script's ak_preclean cleans it and they get the new podCIDR", async function () {
            const s = seed.s;
            const name = nodeName(EXISTING);
            const cidrOf = () => s.c.waitFor("a podCIDR", async () => (await s.node(name))?.spec.podCIDR as string | undefined, 60_000);
            /** What an operator does by hand: the Node deleted, `kubeadm reset -f` on the machine, nothing else. */
            const plainReset = async () => {
                await s.c.kubectl(["delete", "node", name, "--wait=true"]);
                await existing.node.sh("kubeadm reset -f");
                assert.ok((await existing.node.sh("ip link show cni0", { allowFail: true })).code === 0, "kubeadm reset leaves cni0");
            };
            await podOn("before-reset");
            await plainReset();
            // the served attach script with ak_preclean made a no-op: what a re-join without it would do
            const served = s.objects(Object.keys(s.stack.manifests).find((f) => f.endsWith("-admission.yaml"))!).find((o) => o.kind === "ConfigMap" && o.data?.["attach.sh"] !== undefined)!.data["attach.sh"] as string;
            const without = served.replace(/^ak_preclean\(\) \{\n[\s\S]*?^\}\n/m, "ak_preclean() { ak_log 'test: ak_preclean disabled'; }\n")
                .replace("{{labels}}", "").replace("{{taints}}", "");
            assert.notStrictEqual(without, served, "ak_preclean replaced");
            const file = `${existing.node.dir}/attach-without-preclean.sh`;
            fs.writeFileSync(file, without);
            const r = await existing.node.run("bash", [file], { allowFail: true, timeoutMs: 300_000 });
            assert.strictEqual(r.code, 0, "it joins all the same");
            await s.ready(name);
            const stale = await cidrOf();
            // flannel's lease is the new podCIDR (its subnet.env rewritten): the pod's bridge config asks for the new gateway
            await s.c.waitFor("flannel's lease of the new podCIDR", async () =>
                (existing.node.read("/run/flannel/subnet.env") ?? "").includes(`FLANNEL_SUBNET=${firstHost(stale)}/`), 120_000);
            await s.c.apply({ apiVersion: "v1", kind: "Pod", metadata: { name: "stale", namespace: "default" },
                spec: { nodeName: name, containers: [{ name: "web", image: WORKLOAD_IMAGE, imagePullPolicy: "Never" }] } });
            // the bridge plugin refuses the leftover cni0 (still on the old podCIDR's gateway): no sandbox, no address
            const refused = await s.c.waitFor("the stale pod's sandbox refused", async () => {
                const events = JSON.parse(await s.c.kubectl(["get", "events", "--field-selector", "involvedObject.name=stale", "-o", "json"])).items as Array<{ reason: string; message: string }>;
                return events.find((e) => e.reason === "FailedCreatePodSandBox" && /cni0/.test(e.message));
            }, 120_000);
            assert.match(refused.message, /already has an IP address different from/);
            const pod = JSON.parse(await s.c.kubectl(["get", "pod", "stale", "-o", "json"]));
            assert.ok(!pod.status.podIP, `no address (podCIDR ${stale})`);
            await s.c.kubectl(["delete", "pod", "stale", "--force", "--grace-period=0"]);

            // the same again with the attach script as it is: ak_preclean removes cni0 and the CNI state first
            await plainReset();
            await attach();
            // ak_preclean took the leftover bridge away (no pod of the pod network has run on the node since)
            assert.notStrictEqual((await existing.node.sh("ip link show cni0", { allowFail: true })).code, 0, "cni0 removed before the join");
            await s.ready(name);
            const fresh = await cidrOf();
            const ip = await podOn("fresh");
            assert.ok(cidrWithin(`${ip}/32`, fresh), `${ip} in ${fresh}`);
        });
    });
});
