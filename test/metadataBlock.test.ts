// World: node scripts in the sandbox (testing/sandbox: stub kubeadm, systemctl, curl, package managers).
/**
 * Pods off the instance metadata service (docs/security.md#metadata-block): every rendered node script installs
 * the block as an enabled unit ordered before (and required by) the kubelet, and applies it before the kubelet
 * first starts; re-run as at a reboot it ends up ahead of flannel's and kube-proxy's rules, drops what pods send
 * to 100.100.100.200 and leaves the node's own (host-network) traffic alone. The rule set is the sandbox iptables
 * stub's state, walked in netfilter's order by testing/sandbox/iptables.ts.
 */
import * as assert from "node:assert/strict";
import {
    renderAttachCommand, renderAttachNode, renderControlPlaneJoinCommand, renderMasterInit, renderOperation, type AttachNodeParams, type MasterInitParams,
} from "../src/shell/render";
import { fill } from "../testing/savedCommands";
import { callsOf, makeSandbox, type RunResult, type Sandbox } from "../testing/sandbox";
import { readRuleSet, verdict, type Packet } from "../testing/sandbox/iptables";
import { assertOk } from "./tools";

const UNIT = "/etc/systemd/system/alicloud-kubeadm-metadata-block.service";
const BLOCK = "/usr/local/sbin/alicloud-kubeadm-metadata-block";
const POD_CIDR = "172.16.0.0/16";
const TOKEN = "k9x2ab.0123456789abcdef";
const HASH = `sha256:${"0a".repeat(32)}`;
const CERT_KEY = "c3".repeat(32);

const master: MasterInitParams = {
    region: "cn-shanghai", kubernetesVersion: "1.34.2", apiEndpoint: "192.168.0.10:6443",
    podCidr: POD_CIDR, serviceCidr: "10.96.0.0/12", nodeCidrMaskSize: 25,
};
const attach: AttachNodeParams = {
    region: "cn-shanghai", kubernetesVersion: "1.34.2", apiEndpoint: "192.168.0.10:6443", poolName: "elastic", token: TOKEN, caCertHash: HASH,
};
const { poolName: _p, ...joinParams } = attach;

/** The channel a saved join command reads its secrets from (what channel-receive leaves on the node). */
const CHANNEL = "0123456789abcdef0123456789abcdef";

/** The scripts that start a kubelet, the kubeadm subcommand that starts it, and the secrets received on CHANNEL first. */
const SCRIPTS: Array<[string, () => string, string, string?]> = [
    ["master 0 userdata (kubeadm init)", () => renderMasterInit(master), "init"],
    ["pool userdata (kubeadm join)", () => renderAttachNode(attach), "join"],
    ["saved attach command of existing nodes", () => fill(renderAttachCommand(attach), { labels: "", taints: "", channel: CHANNEL }), "join", TOKEN],
    ["saved control-plane join command", () => fill(renderControlPlaneJoinCommand(joinParams), { channel: CHANNEL }), "join", `${TOKEN} ${CERT_KEY}`],
];

const POD_TO_METADATA: Packet = { in: "cni0", out: "eth0", src: "172.16.3.7", dst: "100.100.100.200" };
/** A pod to a Service whose endpoint is the metadata address (kube-proxy DNATs it in nat PREROUTING, after raw). */
const POD_VIA_SERVICE: Packet = { in: "cni0", out: "eth0", src: "172.16.3.7", dst: "10.96.0.50" };
const POD_TO_SERVICE: Packet = { in: "cni0", out: "eth0", src: "172.16.3.7", dst: "10.96.0.60" };
const MANGLE_DROP = { verdict: "dropped", table: "mangle", chain: "AK-METADATA-BLOCK", rule: "-d 100.100.100.200/32 -j DROP", dnat: "100.100.100.200" };
const POD_TO_INTERNET: Packet = { in: "cni0", out: "eth0", src: "172.16.3.7", dst: "203.0.113.9" };
const HOST_TO_METADATA: Packet = { out: "eth0", src: "192.168.0.20", dst: "100.100.100.200" };

/** What flannel (--ip-masq, v0.28) and kube-proxy (iptables mode) put in place once they run, plus a rule that accepts everything in raw PREROUTING. */
const OTHERS_RULES = [
    "iptables -t filter -N FLANNEL-FWD",
    `iptables -t filter -A FLANNEL-FWD -s ${POD_CIDR} -m comment --comment flanneld-forward -j ACCEPT`,
    `iptables -t filter -A FLANNEL-FWD -d ${POD_CIDR} -m comment --comment flanneld-forward -j ACCEPT`,
    "iptables -t filter -I FORWARD 1 -m comment --comment flanneld-forward -j FLANNEL-FWD",
    "iptables -t nat -N FLANNEL-POSTRTG",
    `iptables -t nat -A FLANNEL-POSTRTG -s ${POD_CIDR} ! -d 224.0.0.0/4 -m comment --comment flanneld-masq -j MASQUERADE --random-fully`,
    "iptables -t nat -I POSTROUTING 1 -m comment --comment flanneld-masq -j FLANNEL-POSTRTG",
    "iptables -t nat -N KUBE-SERVICES",
    "iptables -t nat -I PREROUTING 1 -m comment --comment kubernetes-service-portals -j KUBE-SERVICES",
    "iptables -t filter -N KUBE-FORWARD",
    "iptables -t filter -A KUBE-FORWARD -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT",
    "iptables -t filter -I FORWARD 1 -j KUBE-FORWARD",
    "iptables -t mangle -I PREROUTING 1 -j ACCEPT",
    "iptables -t raw -I PREROUTING 1 -j ACCEPT",
    // kube-proxy (iptables mode) for two Services: one whose endpoint someone set to the metadata address, one ordinary.
    "iptables -t nat -N KUBE-SVC-METADATA",
    "iptables -t nat -N KUBE-SEP-METADATA",
    "iptables -t nat -A KUBE-SERVICES -d 10.96.0.50/32 -p tcp -m tcp --dport 80 -j KUBE-SVC-METADATA",
    "iptables -t nat -A KUBE-SVC-METADATA -j KUBE-SEP-METADATA",
    "iptables -t nat -A KUBE-SEP-METADATA -p tcp -m tcp -j DNAT --to-destination 100.100.100.200:80",
    "iptables -t nat -N KUBE-SVC-WEB",
    "iptables -t nat -N KUBE-SEP-WEB",
    "iptables -t nat -A KUBE-SERVICES -d 10.96.0.60/32 -p tcp -m tcp --dport 80 -j KUBE-SVC-WEB",
    "iptables -t nat -A KUBE-SVC-WEB -j KUBE-SEP-WEB",
    "iptables -t nat -A KUBE-SEP-WEB -p tcp -m tcp -j DNAT --to-destination 172.16.9.4:8080",
    // and a mangle rule that accepts everything in FORWARD
    "iptables -t mangle -I FORWARD 1 -j ACCEPT",
];

describe("metadata block: pods cannot reach 100.100.100.200", () => {
    const sandboxes: Sandbox[] = [];
    after(() => sandboxes.forEach((sb) => sb.cleanup()));
    const sandbox = (): Sandbox => {
        const sb = makeSandbox({ os: "ubuntu", prebaked: true, region: "cn-shanghai", instanceId: "i-uf6stub00000000042" });
        sandboxes.push(sb);
        return sb;
    };

    for (const [what, render, sub, received] of SCRIPTS) {
        it(`${what}: installs an enabled unit ordered before and required by the kubelet, and applies the block before the kubelet starts`, async () => {
            const sb = sandbox();
            if (received) sb.write(`/run/alicloud-kubeadm/${CHANNEL}`, `${received}\n`);
            const r = await sb.run(render());
            assertOk(r, sb);
            const unit = sb.read(UNIT) ?? "";
            assert.match(unit, /^Before=.*\bkubelet\.service\b/m);
            assert.match(unit, /^RequiredBy=kubelet\.service$/m);
            assert.match(unit, /^WantedBy=multi-user\.target$/m);
            assert.match(unit, new RegExp(`^ExecStart=/bin/bash ${BLOCK}$`, "m"));
            assert.match(unit, /^Type=oneshot$/m);
            const seq = (pred: (c: RunResult["calls"][number]) => boolean): number => {
                const c = r.calls.find(pred);
                assert.ok(c, "expected call missing");
                return c.seq;
            };
            const enabled = seq((c) => c.cmd === "systemctl" && c.args.join(" ") === "enable alicloud-kubeadm-metadata-block.service");
            const applied = seq((c) => c.cmd === "iptables" && c.args.includes("PREROUTING") && c.args.includes("-I"));
            const appliedAfterDnat = seq((c) => c.cmd === "iptables" && c.args.includes("mangle") && c.args.includes("FORWARD") && c.args.includes("-I"));
            const kubeletEnabled = seq((c) => c.cmd === "systemctl" && c.args.join(" ") === "enable kubelet");
            const kubeadm = callsOf(r.calls, "kubeadm", sub)[0]?.seq;
            assert.ok(kubeadm, `kubeadm ${sub} ran`);
            assert.ok(enabled < kubeletEnabled && applied < kubeletEnabled && appliedAfterDnat < kubeletEnabled && kubeletEnabled < kubeadm,
                "unit enabled and both rules applied before the kubelet is enabled and before kubeadm starts it");
            const rules = readRuleSet(sb.env.AK_STUB_STATE);
            assert.deepEqual(verdict(rules, POD_TO_METADATA), { verdict: "dropped", table: "raw", chain: "AK-METADATA-BLOCK",
                rule: "! -i lo -d 100.100.100.200/32 -j DROP" });
            assert.deepEqual(verdict(rules, HOST_TO_METADATA), { verdict: "passed" }, "the node itself keeps the metadata service");
            assert.deepEqual(rules.mangle.FORWARD, [["-j", "AK-METADATA-BLOCK"]]);
            assert.deepEqual(rules.mangle["AK-METADATA-BLOCK"], [["-d", "100.100.100.200/32", "-j", "DROP"]]);
        });
    }

    it("re-run as at a reboot, after flannel and kube-proxy have set up their rules: ahead of all of them, once; pods dropped, host and other pod traffic untouched", async () => {
        const sb = sandbox();
        assertOk(await sb.run(renderAttachNode(attach)), sb);
        // Flannel, kube-proxy and some other raw rule arrive after the first run (as on a running node).
        const others = await sb.run(OTHERS_RULES.join("\n"));
        assert.equal(others.code, 0, others.stderr);
        // Without the block's jumps (as after an iptables flush or a boot before the unit runs), pods would pass:
        const withoutBlock = readRuleSet(sb.env.AK_STUB_STATE);
        withoutBlock.raw.PREROUTING = withoutBlock.raw.PREROUTING.filter((r) => !r.includes("AK-METADATA-BLOCK"));
        withoutBlock.mangle.FORWARD = withoutBlock.mangle.FORWARD.filter((r) => !r.includes("AK-METADATA-BLOCK"));
        assert.equal(verdict(withoutBlock, POD_TO_METADATA).verdict, "passed", "the model lets a pod through when the block is missing");

        const unit = sb.read(UNIT) ?? "";
        const execStart = /^ExecStart=\/bin\/bash (\S+)$/m.exec(unit)?.[1];
        assert.equal(execStart, BLOCK);
        for (let boot = 1; boot <= 2; boot++) {
            const r = await sb.run(sb.read(execStart) ?? "exit 99");
            assert.equal(r.code, 0, r.stderr);
            const rules = readRuleSet(sb.env.AK_STUB_STATE);
            assert.deepEqual(rules.raw.PREROUTING[0], ["-j", "AK-METADATA-BLOCK"], `boot ${boot}: the block is the first rule of raw PREROUTING`);
            assert.equal(rules.raw.PREROUTING.filter((x) => x.includes("AK-METADATA-BLOCK")).length, 1, `boot ${boot}: exactly one jump`);
            assert.deepEqual(rules.raw["AK-METADATA-BLOCK"], [["!", "-i", "lo", "-d", "100.100.100.200/32", "-j", "DROP"]]);
            assert.equal(verdict(rules, POD_TO_METADATA).verdict, "dropped");
            assert.equal(verdict(rules, { ...POD_TO_METADATA, in: "veth1234" }).verdict, "dropped", "whatever interface a pod's packet enters on");
            assert.deepEqual(verdict(rules, POD_TO_INTERNET), { verdict: "passed" }, "other pod traffic is untouched");
            assert.deepEqual(verdict(rules, HOST_TO_METADATA), { verdict: "passed" }, "host-network processes keep the metadata service");
            assert.deepEqual(rules.mangle.FORWARD[0], ["-j", "AK-METADATA-BLOCK"], `boot ${boot}: the block is the first rule of mangle FORWARD`);
            assert.equal(rules.mangle.FORWARD.filter((x) => x.includes("AK-METADATA-BLOCK")).length, 1, `boot ${boot}: exactly one jump`);
            assert.deepEqual(verdict(rules, POD_VIA_SERVICE), MANGLE_DROP, "a Service whose endpoint is the metadata address: dropped after DNAT");
            // With the raw rule alone (this project before the mangle rule), that Service reached the metadata service:
            const rawOnly = { ...rules, mangle: { ...rules.mangle, FORWARD: rules.mangle.FORWARD.filter((r) => !r.includes("AK-METADATA-BLOCK")) } };
            assert.equal(verdict(rawOnly, POD_TO_METADATA).verdict, "dropped");
            assert.deepEqual(verdict(rawOnly, POD_VIA_SERVICE), { verdict: "passed", dnat: "100.100.100.200" }, "the raw rule alone misses the Service path");
            assert.deepEqual(verdict(rules, POD_TO_SERVICE), { verdict: "passed", dnat: "172.16.9.4" }, "other Services are untouched");
        }
    });

    it("the reset operation flushes mangle and puts the block back at once; a re-join applies it again before the kubelet", async () => {
        const sb = sandbox();
        assertOk(await sb.run(renderAttachNode(attach)), sb);
        const others = await sb.run(OTHERS_RULES.join("\n"));
        assert.equal(others.code, 0, others.stderr);
        const reset = await sb.run(renderOperation("reset"));
        assert.equal(reset.code, 0, reset.stderr);
        const flushed = reset.calls.findIndex((c) => c.cmd === "iptables" && c.args.join(" ") === "-t mangle -F");
        const reapplied = reset.calls.findIndex((c) => c.cmd === "iptables" && c.args.join(" ").includes("-t mangle -I FORWARD 1 -j AK-METADATA-BLOCK"));
        assert.ok(flushed >= 0 && reapplied > flushed, "flushed, then applied again");
        let rules = readRuleSet(sb.env.AK_STUB_STATE);
        assert.deepEqual(rules.mangle.FORWARD, [["-j", "AK-METADATA-BLOCK"]]);
        assert.deepEqual(rules.raw.PREROUTING[0], ["-j", "AK-METADATA-BLOCK"]);
        // kube-proxy's rules come back with the next join; the block is ahead of them again.
        assert.equal((await sb.run(OTHERS_RULES.filter((r) => /-t nat/.test(r)).join("\n"))).code, 0);
        rules = readRuleSet(sb.env.AK_STUB_STATE);
        assert.deepEqual(verdict(rules, POD_VIA_SERVICE).verdict, "dropped");
        const rejoin = await sb.run(renderAttachNode(attach));
        assertOk(rejoin, sb);
        const kubeletEnabled = rejoin.calls.find((c) => c.cmd === "systemctl" && c.args.join(" ") === "enable kubelet")!.seq;
        assert.ok(rejoin.calls.some((c) => c.cmd === "iptables" && c.args.join(" ").includes("-t mangle -I FORWARD 1 -j AK-METADATA-BLOCK") && c.seq < kubeletEnabled));
        rules = readRuleSet(sb.env.AK_STUB_STATE);
        assert.deepEqual(rules.mangle.FORWARD[0], ["-j", "AK-METADATA-BLOCK"]);
        assert.deepEqual(verdict(rules, POD_VIA_SERVICE), MANGLE_DROP);
    });

    it("a node where the block cannot be installed stops before the kubelet starts", async () => {
        const sb = makeSandbox({ os: "ubuntu", prebaked: true, stubs: { iptables: 'echo "iptables: raw table missing" >&2; exit 3' } });
        sandboxes.push(sb);
        const r = await sb.run(renderAttachNode(attach));
        assert.notEqual(r.code, 0);
        assert.equal(callsOf(r.calls, "kubeadm", "join").length, 0, "no join (and so no kubelet) without the block");
        assert.ok(!r.calls.some((c) => c.cmd === "systemctl" && c.args.join(" ") === "enable kubelet"));
        assert.match(sb.read("/var/log/alicloud-kubeadm/attach-node.log") ?? "", /cannot install the metadata block/);
    });
});

describe("metadata block: the CCM and the autoscaler keep their cloud credentials", () => {
    it("both run in the host network of the masters (where the masters' RAM role is served), so the block does not apply to them", async () => {
        const { autoscalerObjects, resolveClusterAutoscalerArgs } = await import("../src/components/clusterAutoscaler");
        const { ccmObjects, resolvePodNetworkArgs } = await import("../src/components/podNetwork");
        const ca = autoscalerObjects(resolveClusterAutoscalerArgs({ region: "cn-shanghai", kubernetesVersion: "1.34.2", pools: [{ name: "p", min: 0, max: 3, scalingGroupId: "asg-1" }] }), ["asg-1"])
            .find((o) => o.kind === "Deployment") as any;
        const ccm = ccmObjects(resolvePodNetworkArgs({ podCidr: POD_CIDR, routeTableId: "vtb-1", region: "cn-shanghai", kubernetesVersion: "1.34.2" }), "vtb-1")
            .find((o) => o.kind === "DaemonSet") as any;
        for (const [name, spec] of [["autoscaler", ca.spec.template.spec], ["ccm", ccm.spec.template.spec]] as const) {
            assert.equal(spec.hostNetwork, true, `${name}: host network`);
            assert.deepEqual(Object.keys(spec.nodeSelector), ["node-role.kubernetes.io/control-plane"], `${name}: on the masters, which carry the RAM role`);
            assert.ok(!JSON.stringify(spec).includes("ACCESS_KEY"), `${name}: the RAM role, no AccessKey`);
        }
        const caArgs: string[] = ca.spec.template.spec.containers[0].args;
        assert.ok(caArgs.includes("--address=127.0.0.1:8085"), "the autoscaler's metrics stay on the master's loopback");
    });
});
