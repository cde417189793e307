// World: node scripts in the sandbox (testing/sandbox: stub kubeadm, systemctl, curl, package managers).
// The node side of admission, end to end on loopback: the real shell client (src/shell/admission_client.sh with
// prepare_node.sh's helpers) against the real admission server (its own key and certificate, made by the
// production AdmissionCertificate code; the node trusts it only by the pin of that key), the metadata service
// stand-in signing with the openssl test chain. The token it
// gets is the one the modelled cluster issued; refusals come back with their reason and land in the node's log.
import * as assert from "assert";
import { spawn } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import type { RunningServer } from "../src/admission/server";
import { packUserdata, PARAMETER_MARKER, renderAttachNode } from "../src/shell/render";
import { admissionAttachOneLiner, renderAdmissionBootstrap } from "../src/shell/renderAdmission";
import { POOL_PENDING_TAINT } from "../src/rules";
import { startLoopbackService, startMetadata, type ClusterCa, type LoopbackService, type ServiceTls } from "../testing/admission/harness";
import type { ModelCloud, ModelCluster } from "../testing/admission/model";
import type { TestPki } from "../testing/admission/pki";
import { makeSandbox, type Sandbox } from "../testing/sandbox";

const SHELL = path.join(__dirname, "..", "src", "shell");

describe("admission client on the node (shell, loopback)", function () {
    this.timeout(60_000);
    let pki: TestPki, tls: ServiceTls, server: RunningServer, metadata: Awaited<ReturnType<typeof startMetadata>>;
    let cloud: ModelCloud, cluster: ModelCluster, root: string;

    let service: LoopbackService;
    before(async () => {
        process.env.AK_ADMISSION_LOG = "off";
        service = await startLoopbackService({ accountId: "1234567890123456", regionId: "cn-hangzhou" });
        ({ pki, tls, cloud, cluster, server } = service);
        metadata = await startMetadata(pki, new Map([["127.0.0.1", { instanceId: "i-node1", ip: "127.0.0.1", accountId: "1234567890123456", regionId: "cn-hangzhou" }]]));
    });
    after(async () => {
        await service?.close();
        await metadata?.close();
        delete process.env.AK_ADMISSION_LOG;
    });
    beforeEach(() => {
        root = fs.mkdtempSync(path.join(os.tmpdir(), "ak-admission-node-"));
        cloud.members.set("i-node1", { instanceId: "i-node1", privateIp: "127.0.0.1", source: "pool", pool: "general", state: "Pending" });
    });
    afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

    /** Runs the client in bash; asynchronously, since the server answers from this process's event loop. */
    async function node(pin = tls.pin): Promise<{ code: number; stderr: string; token?: string }> {
        const script = [
            `source ${JSON.stringify(path.join(SHELL, "prepare_node.sh"))}`,
            `source ${JSON.stringify(path.join(SHELL, "admission_client.sh"))}`,
            `AK_METADATA=${JSON.stringify(metadata.url)}`,
            `AK_ADMISSION_ENDPOINTS=127.0.0.1:${server.port}`,
            `AK_ADMISSION_PIN=${pin}`,
            "mkdir -p \"$AK_STATE_DIR\"",
            "ak_imds_token",
            "ak_admission_token",
            "printf '%s' \"$AK_BOOTSTRAP_TOKEN\" >\"$AK_ROOT/token\"",
        ].join("\n");
        const child = spawn("bash", ["-c", script], { env: { ...process.env, AK_ROOT: root, AK_RETRY_DELAY: "0", AK_ADMISSION_ATTEMPTS: "1" } });
        let stderr = "";
        child.stderr.on("data", (d: Buffer) => { stderr += d.toString(); });
        const status = await new Promise<number | null>((resolve) => child.on("close", resolve));
        const r = { status, stderr };
        const tokenFile = path.join(root, "token");
        return { code: r.status ?? -1, stderr: r.stderr, token: fs.existsSync(tokenFile) ? fs.readFileSync(tokenFile, "utf8") : undefined };
    }

    it("a member gets a single-use token issued for it, through TLS trusted by the pin of the service's key", async () => {
        const before = cluster.tokens.size;
        const r = await node();
        assert.strictEqual(r.code, 0, r.stderr);
        const issued = [...cluster.tokens.entries()].slice(before);
        assert.strictEqual(issued.length, 1);
        const [id, t] = issued[0];
        assert.strictEqual(r.token, `${id}.${t.secret}`);
        assert.strictEqual(t.providerId, "cn-hangzhou.i-node1");
        assert.ok(!fs.existsSync(path.join(root, "var/lib/alicloud-kubeadm/admission/response")), "the response with the token is not left on disk");
    });

    it("a refusal is printed with its reason and what to do, and marked for the node's log", async () => {
        cloud.members.delete("i-node1");
        const r = await node();
        assert.strictEqual(r.code, 1);
        assert.match(r.stderr, /refused this node \(HTTP 403\): instance i-node1 is not a member of this cluster; the instance is in no scaling group/);
        assert.match(fs.readFileSync(path.join(root, "var/lib/alicloud-kubeadm/admission.refused"), "utf8"), /reason=instance i-node1 is not a member/);
        assert.strictEqual(cluster.decisions.at(-1)?.reason, "not-a-member");
    });

    it("a service whose key does not match the pin is not trusted: nothing is sent to it", async () => {
        const decisions = cluster.decisions.length;
        const r = await node(`sha256:${"0".repeat(64)}`);
        assert.strictEqual(r.code, 1);
        assert.match(r.stderr, /is not the pinned one; not trusting it/);
        assert.strictEqual(cluster.decisions.length, decisions);
    });
});

describe("the admission client's backoff between rounds", () => {
    it("doubles from AK_RETRY_DELAY up to AK_ADMISSION_BACKOFF_MAX, each sleep a random part of it (half to all): a burst does not retry in step", () => {
        const { spawnSync } = require("child_process") as typeof import("child_process");
        // The sleeps ak_backoff asks for, recorded instead of slept (bash's own RANDOM gives the jitter).
        const sleeps = (seed: number) => spawnSync("bash", ["-c", [
            `source ${JSON.stringify(path.join(SHELL, "admission_client.sh"))}`,
            "sleep() { printf '%s\\n' \"$1\"; }",
            `RANDOM=${seed}; AK_RETRY_DELAY=2; AK_ADMISSION_BACKOFF_MAX=30`,
            "for r in 1 2 3 4 5 6 7; do ak_backoff \"$r\"; done",
        ].join("\n")], { encoding: "utf8" }).stdout.trim().split("\n").map(Number);
        const full = [2, 4, 8, 16, 30, 30, 30];
        const a = sleeps(1), b = sleeps(2);
        for (const s of [a, b]) {
            assert.strictEqual(s.length, full.length);
            s.forEach((secs, i) => assert.ok(secs >= full[i] / 2 && secs <= full[i], `round ${i + 1}: ${secs} s not within ${full[i] / 2}–${full[i]} s`));
        }
        assert.notDeepStrictEqual(a, b, "two nodes draw different delays");
        const none = spawnSync("bash", ["-c", `source ${JSON.stringify(path.join(SHELL, "admission_client.sh"))}; sleep() { echo slept; }; AK_RETRY_DELAY=0; ak_backoff 3`], { encoding: "utf8" });
        assert.strictEqual(none.stdout, "", "no delay asked, none slept");
    });
});

describe("the whole attach script through admission, packed as a pool's userdata (sandbox, loopback service)", function () {
    this.timeout(120_000);
    let pki: TestPki, ca: ClusterCa, tls: ServiceTls, server: RunningServer, metadata: Awaited<ReturnType<typeof startMetadata>>;
    let cloud: ModelCloud, cluster: ModelCluster;
    const sandboxes: Sandbox[] = [];
    const ACCOUNT = "1234567890123456";

    let service: LoopbackService;
    before(async () => {
        process.env.AK_ADMISSION_LOG = "off";
        service = await startLoopbackService({ accountId: ACCOUNT, regionId: "cn-hangzhou" });
        ({ pki, ca, tls, cloud, cluster, server } = service);
        // The sandbox's node is 127.0.0.1 to the service: the metadata stand-in signs i-bp1pool0002's document for it.
        metadata = await startMetadata(pki, new Map([["127.0.0.1", { instanceId: "i-bp1pool0002", ip: "127.0.0.1", accountId: ACCOUNT, regionId: "cn-hangzhou" }]]));
    });
    after(async () => {
        for (const sb of sandboxes) sb.cleanup();
        await service?.close();
        await metadata?.close();
        delete process.env.AK_ADMISSION_LOG;
    });

    /** The pool's userdata exactly as NodePool delivers it (packUserdata), with the service on loopback. */
    function userdata(): string {
        return packUserdata(renderAttachNode({
            region: "cn-hangzhou", kubernetesVersion: "1.36.3", apiEndpoint: "192.0.2.1:6443", poolName: "general",
            labels: { workload_type: "cpu" }, taints: [], caCertHash: ca.caHash, admission: { endpoints: [`127.0.0.1:${server.port}`], pin: tls.pin },
        }), "nodePools[general]");
    }

    /** A sandbox whose curl reaches the real service and the metadata stand-in; everything else stays stubbed. */
    function node(): Sandbox {
        const sb = makeSandbox({
            os: "ubuntu", instanceId: "i-bp1pool0002",
            stubs: {
                curl: [
                    "case \" $* \" in",
                    "  *\" https://127.0.0.1:\"*) exec /usr/bin/curl \"$@\" ;;",
                    "  *\" http://100.100.100.200/latest/dynamic/\"*)",
                    "    args=(); for a in \"$@\"; do args+=(\"${a/http:\\/\\/100.100.100.200\\/latest/$AK_TEST_METADATA}\"); done",
                    "    exec /usr/bin/curl \"${args[@]}\" ;;",
                    "esac",
                    "exec \"$AK_STUB_SRC/curl\" \"$@\"",
                ].join("\n"),
            },
        });
        sandboxes.push(sb);
        return sb;
    }

    it("a pool member boots: admitted, joins with the token issued for it, and leaves no token behind", async () => {
        cloud.members.set("i-bp1pool0002", { instanceId: "i-bp1pool0002", privateIp: "127.0.0.1", source: "pool", pool: "general", state: "Pending" });
        const script = userdata();
        const header = script.slice(0, script.indexOf("\nak_packed="));
        assert.ok(!/TOKEN/.test(header), "no token variable among the delivered parameters");
        const before = cluster.tokens.size;
        const sb = node();
        const r = await sb.run(script, { AK_TEST_METADATA: metadata.url, AK_RETRY_DELAY: "0" });
        assert.strictEqual(r.code, 0, `${r.stderr}\n${sb.read("/var/log/alicloud-kubeadm/attach-node.log") ?? ""}`);
        const issued = [...cluster.tokens.entries()].slice(before);
        assert.strictEqual(issued.length, 1, "one token, for this instance");
        const [id, t] = issued[0];
        assert.strictEqual(t.providerId, "cn-hangzhou.i-bp1pool0002");
        const joins = r.calls.filter((c) => c.cmd === "kubeadm" && c.args[0] === "join");
        assert.strictEqual(joins.length, 1);
        assert.match(joins[0].config ?? "", new RegExp(`^ {4}token: '${id}\\.${t.secret}'$`, "m"), "kubeadm join used the admitted token");
        assert.match(joins[0].config ?? "", new RegExp(`caCertHashes:\\n {6}- '${ca.caHash}'$`, "m"));
        assert.match(joins[0].config ?? "", /^ {2}name: 'cn-hangzhou\.i-bp1pool0002'$/m);
        // The pool label is the service's to set: the node registers with its own labels and the taint that keeps
        // pods off it until the service labelled it.
        assert.match(joins[0].config ?? "", /- name: node-labels\n {6}value: 'workload_type=cpu'$/m);
        assert.match(joins[0].config ?? "", new RegExp(`- name: register-with-taints\n {6}value: '${POOL_PENDING_TAINT.replace(/\./g, "\\.")}:NoSchedule'$`, "m"));
        assert.doesNotMatch(joins[0].config ?? "", /pool=/);
        assert.ok(sb.read("/var/lib/alicloud-kubeadm/join.done"), "joined");
        assert.strictEqual(sb.read("/var/lib/alicloud-kubeadm/kubeadm-join.yaml"), undefined, "the JoinConfiguration with the token is removed");
        for (const text of [r.stdout, r.stderr, sb.read("/var/log/alicloud-kubeadm/attach-node.log") ?? ""]) {
            assert.ok(!text.includes(t.secret), "the token's secret is in no output or log");
        }
    });

    it("an instance in no pool is refused: no join, the node's log says why and what to do", async () => {
        cloud.members.delete("i-bp1pool0002");
        const before = cluster.tokens.size;
        const sb = node();
        const r = await sb.run(userdata(), { AK_TEST_METADATA: metadata.url, AK_RETRY_DELAY: "0", AK_ADMISSION_ATTEMPTS: "2" });
        assert.notStrictEqual(r.code, 0);
        assert.strictEqual(cluster.tokens.size, before, "nothing issued");
        assert.strictEqual(r.calls.filter((c) => c.cmd === "kubeadm" && c.args[0] === "join").length, 0, "no join without an admitted token");
        assert.strictEqual(sb.read("/var/lib/alicloud-kubeadm/join.done"), undefined);
        assert.match(sb.read("/var/lib/alicloud-kubeadm/admission.refused") ?? "", /reason=instance i-bp1pool0002 is not a member of this cluster/);
        assert.match(r.stderr, /no admission service admitted this node after 2 rounds/);
    });
});

describe("the manual path: the one-line attachCommand and the saved attach command's bootstrap (loopback service)", function () {
    this.timeout(60_000);
    let tls: ServiceTls, server: RunningServer, dir: string, service: LoopbackService;

    before(async () => {
        process.env.AK_ADMISSION_LOG = "off";
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "ak-admission-manual-"));
        // A served "attach script" that only records what it was given: the bootstrap's substitutions and that it ran whole.
        // Its parameters are data lines after its last command, as the project's saved scripts carry them (src/shell/parameters.sh).
        const attachScript = [
            "#!/bin/bash",
            `printf '%s|%s|done\\n' "$(sed -n 's/^# AK_NODE_LABELS=//p' "$0")" "$(sed -n 's/^# AK_NODE_TAINTS=//p' "$0")" > ${JSON.stringify(path.join(dir, "ran"))}`,
            "exit",
            PARAMETER_MARKER,
            "# AK_NODE_LABELS={{labels}}",
            "# AK_NODE_TAINTS={{taints}}",
            "",
        ].join("\n");
        service = await startLoopbackService({ accountId: "1234567890123456", regionId: "cn-hangzhou", attachScript });
        ({ tls, server } = service);
    });
    after(async () => {
        await service?.close();
        fs.rmSync(dir, { recursive: true, force: true });
        delete process.env.AK_ADMISSION_LOG;
    });

    const run = (args: string[]): Promise<number | null> => new Promise((resolve) => spawn("bash", args, { stdio: "ignore" }).on("close", resolve));
    // 127.0.0.1:9 is closed: "master 0" is down, the next endpoint answers.
    const endpoints = () => ["127.0.0.1:9", `127.0.0.1:${server.port}`];
    // The saved attach command's parameters, substituted as Cloud Assistant does (raw text into the content).
    const filled = (script: string) => script.replace("{{labels}}", "workload=cpu").replace("{{taints}}", "spot:NoSchedule").replace("{{channel}}", "0".repeat(32));

    it("the one-liner, with the first master down, fetches the script from the next one and runs it (labels and taints emptied)", async () => {
        fs.rmSync(path.join(dir, "ran"), { force: true });
        assert.strictEqual(await run(["-c", admissionAttachOneLiner(endpoints(), tls.pin)]), 0);
        assert.strictEqual(fs.readFileSync(path.join(dir, "ran"), "utf8"), "||done\n");
    });

    it("the saved bootstrap fills in its labels and taints parameters and runs the served script", async () => {
        fs.rmSync(path.join(dir, "ran"), { force: true });
        const script = filled(renderAdmissionBootstrap(endpoints(), tls.pin));
        fs.writeFileSync(path.join(dir, "bootstrap.sh"), script);
        assert.strictEqual(await run([path.join(dir, "bootstrap.sh")]), 0);
        assert.strictEqual(fs.readFileSync(path.join(dir, "ran"), "utf8"), "workload=cpu|spot:NoSchedule|done\n");
    });

    it("with a wrong pin neither runs anything", async () => {
        fs.rmSync(path.join(dir, "ran"), { force: true });
        const wrong = `sha256:${"0".repeat(64)}`;
        assert.notStrictEqual(await run(["-c", admissionAttachOneLiner(endpoints(), wrong)]), 0);
        fs.writeFileSync(path.join(dir, "bootstrap.sh"), filled(renderAdmissionBootstrap(endpoints(), wrong)));
        assert.notStrictEqual(await run([path.join(dir, "bootstrap.sh")]), 0);
        assert.ok(!fs.existsSync(path.join(dir, "ran")));
    });
});
