// World: Pulumi mocks (testing/mockRuntime.ts).
import * as assert from "assert";
import * as pulumi from "@pulumi/pulumi";
import { installMocks, valueOf, type Recorder } from "../testing/mockRuntime";

describe("Network component (mock graph)", () => {
    let recorder: Recorder;
    let mod: typeof import("../src/components/network");
    let clusterMod: typeof import("../src/components/cluster");

    before(async () => {
        recorder = installMocks({ stack: "network-test" });
        mod = await import("../src/components/network");
        clusterMod = await import("../src/components/cluster");
    });
    beforeEach(() => recorder.resources.splice(0));

    const args = {
        clusterName: "t",
        zones: ["cn-hangzhou-h", "cn-hangzhou-i", "cn-hangzhou-j"],
        vpcCidr: "192.168.0.0/16",
        podCidr: "172.16.0.0/16",
        apiAllowedCidrs: ["203.0.113.0/24", "198.51.100.7/32"],
    };

    it("creates the VPC, one vSwitch per zone, NAT with EIP and one SNAT per vSwitch, and three security groups", async () => {
        const net = new mod.Network("t", args);
        const [vswitchIds, routeTableId, eip] = await Promise.all([valueOf(net.vswitchIds), valueOf(net.routeTableId), valueOf(net.natEipAddress)]);
        await recorder.settle();

        const count = (type: string) => recorder.ofType(type).length;
        assert.strictEqual(count("alicloud-kubeadm:index:Network"), 1);
        assert.strictEqual(count("alicloud:vpc/network:Network"), 1);
        assert.strictEqual(count("alicloud:vpc/switch:Switch"), 3);
        assert.strictEqual(count("alicloud:vpc/natGateway:NatGateway"), 1);
        assert.strictEqual(count("alicloud:ecs/eipAddress:EipAddress"), 1);
        assert.strictEqual(count("alicloud:ecs/eipAssociation:EipAssociation"), 1);
        assert.strictEqual(count("alicloud:vpc/snatEntry:SnatEntry"), 3);
        assert.strictEqual(count("alicloud:ecs/securityGroup:SecurityGroup"), 3);

        for (const r of recorder.resources.filter((r) => r.custom)) {
            assert.strictEqual(r.parent, "t", `${r.type} ${r.name} is parented to the component`);
        }
        const vsw = recorder.ofType("alicloud:vpc/switch:Switch");
        assert.deepStrictEqual(vsw.map((v) => [v.inputs.zoneId, v.inputs.cidrBlock]), [
            ["cn-hangzhou-h", "192.168.0.0/20"], ["cn-hangzhou-i", "192.168.16.0/20"], ["cn-hangzhou-j", "192.168.32.0/20"],
        ]);
        assert.deepStrictEqual(Object.keys(vswitchIds), args.zones);

        const nat = recorder.ofType("alicloud:vpc/natGateway:NatGateway")[0];
        assert.strictEqual(nat.inputs.natType, "Enhanced");
        assert.strictEqual(recorder.ofType("alicloud:ecs/eipAssociation:EipAssociation")[0].inputs.instanceType, "Nat");
        const snat = recorder.ofType("alicloud:vpc/snatEntry:SnatEntry");
        assert.deepStrictEqual(snat.map((s) => s.inputs.sourceVswitchId).sort(), Object.values(vswitchIds).sort());
        for (const s of snat) {
            assert.strictEqual(s.inputs.snatIp, eip);
        }
        assert.match(routeTableId, /^vtb-/);
    });

    it("separates masters and nodes: no group admits every port from the VPC; etcd and the masters' kubelet only from masters; nodes' kubelet only from masters", async () => {
        new mod.Network("t", args);
        await recorder.settle();
        const sgs = recorder.ofType("alicloud:ecs/securityGroup:SecurityGroup");
        const rules = recorder.ofType("alicloud:ecs/securityGroupRule:SecurityGroupRule").map((r) => r.inputs);
        const id = (name: string) => sgs.find((s) => s.name === name)!.id;
        const [master, node, api] = [id("t-master-sg"), id("t-cluster-sg"), id("t-api-sg")];
        const from = (r: Record<string, unknown>) => r.cidrIp ?? (r.sourceSecurityGroupId === master ? "masters" : r.sourceSecurityGroupId === node ? "nodes" : `?${r.sourceSecurityGroupId}`);
        const summary = (sg: string | undefined) => rules.filter((r) => r.securityGroupId === sg)
            .map((r) => `${r.type} ${r.policy} ${r.priority} ${r.ipProtocol} ${r.portRange} ${from(r)}`).sort();
        assert.deepStrictEqual(summary(master), [
            "egress accept 1 all -1/-1 0.0.0.0/0",
            "ingress accept 1 icmp -1/-1 192.168.0.0/16",
            "ingress accept 1 tcp 10250/10250 masters",
            "ingress accept 1 tcp 10443/10443 192.168.0.0/20",
            "ingress accept 1 tcp 10443/10443 192.168.16.0/20",
            "ingress accept 1 tcp 10443/10443 192.168.32.0/20",
            "ingress accept 1 tcp 2379/2380 masters",
            "ingress accept 1 tcp 53/53 172.16.0.0/16",
            "ingress accept 1 tcp 53/53 nodes",
            "ingress accept 1 tcp 6443/6443 172.16.0.0/16",
            "ingress accept 1 tcp 6443/6443 192.168.0.0/16",
            "ingress accept 1 tcp 6443/6443 198.51.100.7/32",
            "ingress accept 1 tcp 6443/6443 203.0.113.0/24",
            "ingress accept 1 udp 53/53 172.16.0.0/16",
            "ingress accept 1 udp 53/53 nodes",
        ]);
        assert.deepStrictEqual(summary(node), [
            "egress accept 1 all -1/-1 0.0.0.0/0",
            "ingress accept 1 all -1/-1 masters",
            "ingress accept 1 icmp -1/-1 192.168.0.0/16",
            "ingress accept 3 all -1/-1 172.16.0.0/16",
            "ingress accept 3 all -1/-1 nodes",
            "ingress drop 2 tcp 10250/10250 172.16.0.0/16",
            "ingress drop 2 tcp 10250/10250 192.168.0.0/16",
        ]);
        assert.deepStrictEqual(summary(api), [
            "ingress accept 1 tcp 6443/6443 192.168.0.0/16",
            "ingress accept 1 tcp 6443/6443 198.51.100.7/32",
            "ingress accept 1 tcp 6443/6443 203.0.113.0/24",
        ]);
    });

    it("creates no NAT, EIP or SNAT with natGateway: false", async () => {
        const net = new mod.Network("t", { ...args, natGateway: false });
        assert.strictEqual(await valueOf(net.natEipAddress), undefined);
        await recorder.settle();
        for (const type of ["alicloud:vpc/natGateway:NatGateway", "alicloud:ecs/eipAddress:EipAddress", "alicloud:vpc/snatEntry:SnatEntry"]) {
            assert.strictEqual(recorder.ofType(type).length, 0, type);
        }
        assert.strictEqual(recorder.ofType("alicloud:vpc/switch:Switch").length, 3);
    });

    it("uses given vSwitch CIDRs and rejects bad ones before creating anything", async () => {
        new mod.Network("t", { ...args, zones: ["a"], vswitchCidrs: ["192.168.100.0/24"] });
        await recorder.settle();
        assert.strictEqual(recorder.ofType("alicloud:vpc/switch:Switch")[0].inputs.cidrBlock, "192.168.100.0/24");
        recorder.resources.splice(0);

        assert.throws(() => new mod.Network("bad", { ...args, zones: ["a"], vswitchCidrs: ["10.0.0.0/24"] }), (err: unknown) => {
            assert.ok(pulumi.InputPropertiesError.isInstance(err));
            assert.deepStrictEqual(err.errors.map((e) => e.propertyPath), ["vswitchCidrs.0"]);
            return true;
        });
        await recorder.settle();
        assert.deepStrictEqual(recorder.resources, []);
    });

    it("Cluster registers nothing at all when the config is invalid", async () => {
        assert.throws(() => new clusterMod.Cluster("bad", {
            region: "cn-hangzhou",
            config: { name: "bad", kubernetesVersion: "1.34.2", zones: ["cn-hangzhou-h"], network: { podCidr: "192.168.0.0/16" }, controlPlane: { count: 2 } },
        }), (err: unknown) => {
            assert.ok(pulumi.InputPropertiesError.isInstance(err));
            assert.deepStrictEqual(err.errors.map((e) => e.propertyPath).sort(), ["controlPlane.count", "network.podCidr"]);
            return true;
        });
        await recorder.settle();
        assert.deepStrictEqual(recorder.resources, []);
    });
});
