// World: this machine's real netfilter in network namespaces the test makes; the block script from a sandbox run.
/**
 * The metadata block on a real kernel's netfilter (iptables, nf_tables backend), in network namespaces this test
 * creates: a node (its pod bridge `cni0` and uplink `eth0`, ip_forward on), a pod behind it, and a stand-in for the
 * metadata service listening on 100.100.100.200:80 in a third namespace — the address exists only there, nothing on
 * the host points at it. kube-proxy is not built here: its iptables-mode rules for a Service whose endpoint is the
 * metadata address (KUBE-SERVICES → KUBE-SVC → KUBE-SEP DNAT, in nat PREROUTING) and flannel's masquerade are put in
 * place with the same real iptables commands. The block is the script every node installs (ak_block_pod_metadata,
 * taken from a sandbox run of the pool userdata), run as is. Asserts from what connects.
 * Skipped with one line without iptables or `ip netns`; under CI=true that is a failure (.ci/run installs iptables).
 */
import * as assert from "node:assert/strict";
import { execFileSync, spawn, spawnSync, type ChildProcess } from "child_process";
import * as crypto from "crypto";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { renderAttachNode } from "../src/shell/render";
import { makeSandbox } from "../testing/sandbox";

const BLOCK = "/usr/local/sbin/alicloud-kubeadm-metadata-block";
const METADATA = "100.100.100.200";
const SERVICE = "10.96.0.50"; // endpoint: the metadata address
const WEB_SERVICE = "10.96.0.60"; // endpoint: an ordinary server
const WEB = "192.168.0.1:8080";

/** Why this machine cannot run the test, or undefined. */
function unavailable(): string | undefined {
    if (spawnSync("iptables", ["--version"]).status !== 0) return "iptables is not installed (apt-get install iptables)";
    const probe = `akprobe${process.pid}`;
    if (spawnSync("ip", ["netns", "add", probe]).status !== 0) return "`ip netns add` is not permitted here";
    spawnSync("ip", ["netns", "del", probe]);
    return undefined;
}

describe("metadata block on real netfilter: pods reach 100.100.100.200 neither directly nor through a Service; the node does", function () {
    this.timeout(120_000);
    const id = crypto.randomBytes(3).toString("hex");
    const ns = { node: `ak-${id}-node`, pod: `ak-${id}-pod`, meta: `ak-${id}-meta` };
    const servers: ChildProcess[] = [];
    let blockScript = "";
    let dir = "";

    const ip = (...args: string[]) => execFileSync("ip", args, { stdio: ["ignore", "pipe", "pipe"] }).toString();
    const inNs = (n: string, cmd: string, args: string[], input?: string) =>
        spawnSync("ip", ["netns", "exec", n, cmd, ...args], { encoding: "utf8", input, timeout: 20_000 });
    const iptables = (...args: string[]) => {
        const r = inNs(ns.node, "iptables", args);
        assert.equal(r.status, 0, `iptables ${args.join(" ")}: ${r.stderr}`);
    };
    /** Whether an HTTP GET from namespace `from` to `target` gets the server's answer (a dropped SYN times out). */
    const reaches = (from: string, target: string): boolean => {
        const r = inNs(from, "curl", ["-sS", "--connect-timeout", "2", "--max-time", "4", `http://${target}/`]);
        return r.status === 0 && /stand-in/.test(r.stdout);
    };

    before(async function () {
        const why = unavailable();
        if (why) {
            if (process.env.CI === "true") throw new Error(`CI=true: ${why}`);
            console.log(`    skipped: ${why}`);
            this.skip();
        }
        // The block script exactly as a node gets it.
        const sb = makeSandbox({ os: "ubuntu", prebaked: true });
        try {
            const r = await sb.run(renderAttachNode({ region: "cn-hangzhou", kubernetesVersion: "1.36.3", apiEndpoint: "192.168.0.10:6443", poolName: "general",
                token: "k9x2ab.0123456789abcdef", caCertHash: `sha256:${"0a".repeat(32)}` }));
            assert.equal(r.code, 0, r.stderr);
            blockScript = sb.read(BLOCK) ?? "";
        } finally {
            sb.cleanup();
        }
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "ak-netfilter-"));
        fs.writeFileSync(path.join(dir, "block.sh"), blockScript, { mode: 0o700 });

        for (const n of Object.values(ns)) ip("netns", "add", n);
        // pod <-> node (cni0), node (eth0) <-> metadata stand-in
        ip("link", "add", `akp${id}`, "type", "veth", "peer", "name", `akc${id}`);
        ip("link", "set", `akp${id}`, "netns", ns.pod);
        ip("link", "set", `akc${id}`, "netns", ns.node);
        ip("-n", ns.node, "link", "set", `akc${id}`, "name", "cni0");
        ip("link", "add", `akm${id}`, "type", "veth", "peer", "name", `ake${id}`);
        ip("link", "set", `akm${id}`, "netns", ns.meta);
        ip("link", "set", `ake${id}`, "netns", ns.node);
        ip("-n", ns.node, "link", "set", `ake${id}`, "name", "eth0");
        ip("-n", ns.meta, "link", "set", `akm${id}`, "name", "eth0");
        for (const n of Object.values(ns)) ip("-n", n, "link", "set", "lo", "up");
        ip("-n", ns.pod, "addr", "add", "172.16.3.7/24", "dev", `akp${id}`);
        ip("-n", ns.pod, "link", "set", `akp${id}`, "up");
        ip("-n", ns.pod, "route", "add", "default", "via", "172.16.3.1");
        ip("-n", ns.node, "addr", "add", "172.16.3.1/24", "dev", "cni0");
        ip("-n", ns.node, "addr", "add", "192.168.0.20/24", "dev", "eth0");
        for (const l of ["cni0", "eth0"]) ip("-n", ns.node, "link", "set", l, "up");
        ip("-n", ns.node, "route", "add", `${METADATA}/32`, "via", "192.168.0.1");
        assert.equal(inNs(ns.node, "sh", ["-c", "echo 1 >/proc/sys/net/ipv4/ip_forward"]).status, 0);
        ip("-n", ns.meta, "addr", "add", "192.168.0.1/24", "dev", "eth0");
        ip("-n", ns.meta, "addr", "add", `${METADATA}/32`, "dev", "eth0");
        ip("-n", ns.meta, "link", "set", "eth0", "up");
        ip("-n", ns.meta, "route", "add", "172.16.0.0/16", "via", "192.168.0.20");
        // The metadata stand-in and an ordinary web server, both in the third namespace.
        for (const [host, port] of [[METADATA, 80], ["192.168.0.1", 8080]] as const) {
            servers.push(spawn("ip", ["netns", "exec", ns.meta, process.execPath, "-e",
                `require("http").createServer((q, s) => s.end("stand-in ${host}")).listen(${port}, "${host}")`], { stdio: "ignore" }));
        }
        // flannel (--ip-masq) and kube-proxy (iptables mode) as they set up a node.
        iptables("-t", "nat", "-N", "FLANNEL-POSTRTG");
        iptables("-t", "nat", "-A", "FLANNEL-POSTRTG", "-s", "172.16.0.0/16", "!", "-d", "224.0.0.0/4", "-m", "comment", "--comment", "flanneld masq", "-j", "MASQUERADE", "--random-fully");
        iptables("-t", "nat", "-I", "POSTROUTING", "1", "-j", "FLANNEL-POSTRTG");
        iptables("-t", "nat", "-N", "KUBE-SERVICES");
        iptables("-t", "nat", "-I", "PREROUTING", "1", "-m", "comment", "--comment", "kubernetes service portals", "-j", "KUBE-SERVICES");
        for (const [name, vip, endpoint] of [["METADATA", SERVICE, `${METADATA}:80`], ["WEB", WEB_SERVICE, WEB]]) {
            iptables("-t", "nat", "-N", `KUBE-SVC-${name}`);
            iptables("-t", "nat", "-N", `KUBE-SEP-${name}`);
            iptables("-t", "nat", "-A", "KUBE-SERVICES", "-d", `${vip}/32`, "-p", "tcp", "-m", "tcp", "--dport", "80", "-j", `KUBE-SVC-${name}`);
            iptables("-t", "nat", "-A", `KUBE-SVC-${name}`, "-j", `KUBE-SEP-${name}`);
            iptables("-t", "nat", "-A", `KUBE-SEP-${name}`, "-p", "tcp", "-m", "tcp", "-j", "DNAT", "--to-destination", endpoint);
        }
        const start = Date.now();
        while (!reaches(ns.node, METADATA) || !reaches(ns.node, WEB)) {
            if (Date.now() - start > 15_000) throw new Error("the stand-in servers did not come up");
            await new Promise((r) => setTimeout(r, 200));
        }
    });

    after(() => {
        for (const s of servers) s.kill("SIGKILL");
        for (const n of Object.values(ns)) spawnSync("ip", ["netns", "del", n]);
        if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });

    it("without the block a pod reaches the metadata service directly and through the Service (the setup is live)", () => {
        assert.ok(reaches(ns.pod, METADATA), "directly");
        assert.ok(reaches(ns.pod, SERVICE), "through the Service");
    });

    it("with the raw PREROUTING rule alone (the block before this change), the Service path still reaches it", () => {
        const r = inNs(ns.node, "bash", [path.join(dir, "block.sh")]);
        assert.equal(r.status, 0, r.stderr);
        iptables("-t", "mangle", "-D", "FORWARD", "-j", "AK-METADATA-BLOCK");
        assert.ok(!reaches(ns.pod, METADATA), "the direct path is blocked");
        assert.ok(reaches(ns.pod, SERVICE), "the Service path is not: raw sees the Service's address, kube-proxy's DNAT comes later");
    });

    it("the block as nodes install it: both paths blocked; the node itself, other Services and other destinations untouched; a second run changes nothing", () => {
        for (let run = 1; run <= 2; run++) {
            const r = inNs(ns.node, "bash", [path.join(dir, "block.sh")]);
            assert.equal(r.status, 0, r.stderr);
            assert.ok(!reaches(ns.pod, METADATA), `run ${run}: a pod, directly`);
            assert.ok(!reaches(ns.pod, SERVICE), `run ${run}: a pod, through a Service whose endpoint is the metadata address`);
            assert.ok(reaches(ns.node, METADATA), `run ${run}: the node's own processes (and host-network pods) keep it`);
            assert.ok(reaches(ns.pod, WEB_SERVICE), `run ${run}: another Service`);
            assert.ok(reaches(ns.pod, WEB), `run ${run}: another destination`);
            const mangle = inNs(ns.node, "iptables", ["-t", "mangle", "-S", "FORWARD"]).stdout.trim().split("\n");
            assert.deepEqual(mangle.filter((l) => l.includes("AK-METADATA-BLOCK")), ["-A FORWARD -j AK-METADATA-BLOCK"], `run ${run}: one jump`);
            assert.equal(mangle[1], "-A FORWARD -j AK-METADATA-BLOCK", `run ${run}: the first rule`);
        }
    });
});
