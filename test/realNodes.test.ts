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
import { callApi } from "../src/cloud/openapi";
import { redactUserdata } from "../src/shell/render";
import { cidrRange, cidrWithin } from "./kube/fixture";
import { WORKLOAD_IMAGE } from "./kube/nodes";
import { useSeedCluster, type Boot } from "./kube/seed";

const STACK = "examples/Pulumi.existing-nodes.yaml";
const sha256 = (s: string | Buffer) => crypto.createHash("sha256").update(s).digest("hex");
/** The first host address of an IPv4 CIDR (the bridge's gateway for its pods). */
const firstHost = (cidr: string) => {
    const n = cidrRange(cidr).start + 1;
    return [24, 16, 8, 0].map((sh) => Math.floor(n / 2 ** sh) % 256).join(".");
};

describe("real nodes: the pool's userdata as synth renders it joins through admission; the real CCM routes the pods", function () {
    this.timeout(600_000);
    const seed = useSeedCluster(STACK);
    let ccm: { stop(): Promise<void> } | undefined;
    let general: Boot[] = [];

    before(async function () {
        this.timeout(300_000);
        // the CCM as its DaemonSet runs it; a shorter route reconcile period is test timing only (the stack says 3m)
        ccm = await seed.s.startCcm();
    });
    after(async () => { await ccm?.stop(); });

    const nodeName = (id: string) => `${seed.s.region}.${id}`;

    it("ESS launches the general pool: each instance boots the userdata synth rendered, byte for byte, is admitted and joins; its Node is Ready, named and identified by provider id, initialized by the CCM, and routed", async function () {
        const s = seed.s;
        const pool = s.pools.general;
        await callApi("ess", "ModifyScalingGroup", { ScalingGroupId: pool.scalingGroupId, DesiredCapacity: 2 }, { region: s.region });
        await s.c.waitFor("ESS launched two instances and their nodes booted", async () => s.emu.scalingGroupInstances(pool.scalingGroupId).length === 2 &&
            s.emu.scalingGroupInstances(pool.scalingGroupId).every((id) => s.boots.has(id)), 120_000);
        general = s.emu.scalingGroupInstances(pool.scalingGroupId).map((id) => s.boots.get(id)!);
        for (const b of general) {
            const r = await b.done;
            assert.strictEqual(r.code, 0, `userdata of ${b.instance.instanceId} failed:\n${b.node.read("/var/log/alicloud-kubeadm/attach-node.log")?.slice(-3000)}`);
            // what the instance booted is what synth rendered (and wrote, redacted, to out/<stack>/userdata)
            const booted = Buffer.from(b.instance.userData, "base64");
            assert.strictEqual(sha256(booted), sha256(pool.userdata));
            assert.strictEqual(redactUserdata(booted.toString("utf8")), s.stack.userdata[`${pool.configName}.sh`]);
            const log = b.node.read("/var/log/alicloud-kubeadm/attach-node.log") ?? "";
            assert.match(log, /admitted by the admission service at /);
            assert.ok(b.node.read("/var/lib/alicloud-kubeadm/join.done")?.includes(`node=${nodeName(b.instance.instanceId)}`));
            // the project's JoinConfiguration, as kubeadm gave it to the kubelet
            const flags = b.node.read("/var/lib/kubelet/kubeadm-flags.env") ?? "";
            assert.match(flags, new RegExp(`--provider-id=${nodeName(b.instance.instanceId).replace(/\./g, "\\.")}`));
            assert.match(flags, /--cloud-provider=external/);
            assert.match(flags, /--node-labels=alicloud-kubeadm\/pool=general/);
        }
        for (const b of general) {
            const name = nodeName(b.instance.instanceId);
            const node = await s.ready(name);
            assert.strictEqual(node.spec.providerID, name);
            assert.strictEqual(node.metadata.labels["alicloud-kubeadm/pool"], "general");
            // the CCM: addresses and labels from ECS, the uninitialized taint gone, a route for the podCIDR
            const init = await s.c.waitFor(`the CCM initialized ${name}`, async () => {
                const n = await s.node(name);
                return !(n.spec.taints ?? []).some((t: { key: string }) => t.key === "node.cloudprovider.kubernetes.io/uninitialized") ? n : undefined;
            }, 120_000);
            assert.deepStrictEqual(init.status.addresses.filter((a: { type: string }) => a.type === "InternalIP").map((a: { address: string }) => a.address), [b.instance.privateIp]);
            assert.strictEqual(init.metadata.labels["node.kubernetes.io/instance-type"], pool.instanceType);
            assert.ok(cidrWithin(init.spec.podCIDR, "172.16.0.0/16"));
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
});
