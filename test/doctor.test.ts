// World: the OpenAPI emulator (testing/emulator).
import * as assert from "assert";
import * as strict from "node:assert/strict";
import { execFile, spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import * as zlib from "zlib";
import { requireTool, SHELLCHECK_INSTALL } from "./tools";
import { useEmulator } from "../testing/emulator/fixture";
import { Emulator, EmuActivity, TEST_CREDENTIALS } from "../testing/emulator";
import {
    ClusterInfo, exitCodeOf, explainActivityError, Finding, parseAutoscalerStatus, parseCaTime, parseEtcdMembers, parseTokenList, redact, renderJson, renderTable, runDoctor,
} from "../src/doctor";
import { parseSections } from "../src/doctor/context";
import { decompress } from "../src/cloud/operations";
import { renderOperation } from "../src/shell/render";
import { operation, saveNodeCommands } from "../testing/savedCommands";
import { parseClusterInfo } from "../src/doctor/clusterInfo";
import { helpText, parseArgs } from "../scripts/doctor";
import { launchInstance } from "../testing/emulator/ess";
import { AUTOSCALED_SPEC_LABEL, SPEC_TAG } from "../src/rules";

const ROOT = path.join(__dirname, "..");

const REGION = "cn-hangzhou";
const SECRET = "0123456789abcdef";

/** What the fake cluster behind master 0 answers to doctor's read-only scripts. */
interface FakeNode {
    name: string; instanceId: string; ready?: "True" | "False" | "Unknown"; reason?: string; message?: string; podCidr: string; pool?: string; providerId?: string; networkUnavailable?: string;
    /** `status.nodeInfo.kubeletVersion`; default v1.34.2 (the staged cluster's version). */
    kubelet?: string;
}
interface Model {
    nodes: FakeNode[];
    tokens: { id: string; expires?: string; usages?: string[] }[];
    caStatus?: string;
    caLog: string;
    etcdIps: string[];
    readyz: string;
    bootstrapLogs: Record<string, string>;
    /** Per master: certificate name → notAfter (ISO), and whether the renewal timer is enabled. */
    certs: Record<string, { expiry: Record<string, string>; timer: boolean }>;
    /** The CSR auto-approval bindings (doctor-join.sh `auto_approved`); none by default. */
    autoApproved?: string;
    /** The admission service's NodeAdmitted Events (doctor-join.sh `admitted`); none by default. */
    admitted?: string;
    /** The kube-apiserver pods: node name → image. */
    apiServers: Record<string, string>;
    /** The Nodes labelled node-role.kubernetes.io/control-plane (doctor-nodes.sh `control-plane`); default master-0. */
    controlPlane?: string[];
}

/** A healthy cluster in the emulator: master 0, a fixed pool of 2, an autoscaled pool of 1, one existing node, routes, tokens. */
async function stage(emu: Emulator): Promise<{ info: ClusterInfo; model: Model; ids: { master: string; general: string[]; elastic: string[]; existing: string }; routeTableId: string }> {
    const commands = await saveNodeCommands(REGION);
    const master = emu.addInstance({ privateIp: "192.168.0.10" }).instanceId;
    const existing = emu.addInstance().instanceId;
    const general = emu.addScalingGroup({ desiredCapacity: 2, minSize: 2, maxSize: 2 });
    const elastic = emu.addScalingGroup({ desiredCapacity: 1, minSize: 0, maxSize: 10 });
    const ids = { master, existing, general: emu.scalingGroupInstances(general.scalingGroupId), elastic: emu.scalingGroupInstances(elastic.scalingGroupId) };
    const rt = emu.addRouteTable();
    const nodes: FakeNode[] = [
        { name: "master-0", instanceId: master, podCidr: "172.16.0.0/25" },
        { name: "general-0", instanceId: ids.general[0], podCidr: "172.16.0.128/25", pool: "general" },
        { name: "general-1", instanceId: ids.general[1], podCidr: "172.16.1.0/25", pool: "general" },
        { name: "elastic-0", instanceId: ids.elastic[0], podCidr: "172.16.1.128/25", pool: "elastic" },
        { name: "existing-0", instanceId: existing, podCidr: "172.16.2.0/25" },
    ];
    for (const n of nodes) emu.addRouteEntry(rt.routeTableId, { destinationCidrBlock: n.podCidr, nextHopId: n.instanceId });
    emu.addRouteEntry(rt.routeTableId, { destinationCidrBlock: "10.10.0.0/16", nextHopId: "vpn-outside-cluster", nextHopType: "VpnGateway" });
    const future = new Date(Date.now() + 30 * 86400_000).toISOString();
    const info: ClusterInfo = {
        name: "dev", region: REGION, kubernetesVersion: "1.34.2", masterInstanceIds: [master], apiEndpoint: "192.168.0.10:6443",
        routeTableId: rt.routeTableId, podCidr: "172.16.0.0/16",
        pools: [
            { name: "general", mode: "fixed", size: 2, min: 2, max: 2, scalingGroupId: general.scalingGroupId, tokenId: "abcdef" },
            { name: "elastic", mode: "autoscale", min: 0, max: 10, scalingGroupId: elastic.scalingGroupId, tokenId: "ghijkl" },
        ],
        existingNodes: [{ instanceId: existing, mode: "manual", tokenId: "mnopqr" }],
        commands,
    };
    const model: Model = {
        nodes,
        tokens: [{ id: "abcdef" }, { id: "ghijkl", expires: future }, { id: "mnopqr" }],
        caStatus: caStatusYaml(elastic.scalingGroupId, { scaleUp: "NoActivity" }),
        caLog: "I1202 10:00:00.000000       1 static_autoscaler.go:290] Starting main loop\nI1202 10:00:00.100000       1 filter_out_schedulable.go:66] Filtering out schedulables\n",
        etcdIps: ["192.168.0.10"],
        readyz: "[+]ping ok\n[+]etcd ok\nreadyz check passed\n",
        bootstrapLogs: {},
        apiServers: { "master-0": "registry.k8s.io/kube-apiserver:v1.34.2" },
        certs: { [master]: { expiry: { "pki/apiserver.crt": new Date(Date.now() + 300 * 86400_000).toISOString().slice(0, 19) + "Z",
            "pki/ca.crt": new Date(Date.now() + 3000 * 86400_000).toISOString().slice(0, 19) + "Z", "admin.conf": new Date(Date.now() + 300 * 86400_000).toISOString().slice(0, 19) + "Z" }, timer: true } },
    };
    registerFakeMaster(emu, model);
    return { info, model, ids, routeTableId: rt.routeTableId };
}

function caStatusYaml(groupId: string, g: { scaleUp: string; backoff?: { errorCode: string; errorMessage: string }; health?: string }): string {
    const now = new Date().toISOString().replace("T", " ").replace("Z", " +0000 UTC");
    return [
        `time: ${now}`, "autoscalerStatus: Running", "clusterWide:", "  health:", "    status: Healthy", "    nodeCounts:", "      registered: {total: 5, ready: 5, notStarted: 0}",
        "      longUnregistered: 0", "      unregistered: 0", "  scaleUp:", "    status: NoActivity", "  scaleDown:", "    status: NoCandidates", "nodeGroups:",
        `- name: ${groupId}`, "  health:", `    status: ${g.health ?? "Healthy"}`, "    nodeCounts:", "      registered: {total: 1, ready: 1, notStarted: 0}",
        "      longUnregistered: 0", "      unregistered: 0", "    cloudProviderTarget: 1", "    minSize: 0", "    maxSize: 10", "  scaleUp:", `    status: ${g.scaleUp}`,
        ...(g.backoff ? ["    backoffInfo:", `      errorCode: ${g.backoff.errorCode}`, `      errorMessage: "${g.backoff.errorMessage}"`] : []),
        "  scaleDown:", "    status: NoCandidates", "",
    ].join("\n");
}

const gz = (sections: Record<string, { out: string; rc?: number }>) =>
    zlib.gzipSync(Object.entries(sections).map(([k, v]) => `@@section ${k}\n${v.out}${v.out.endsWith("\n") || !v.out ? "" : "\n"}@@rc ${v.rc ?? 0}\n`).join("")).toString("base64");

/** Answers doctor's scripts from the model (read at call time, so tests can change it after staging). */
function registerFakeMaster(emu: Emulator, m: Model): void {
    emu.onCommand(operation("doctor-nodes"), () => ({
        output: gz({
            nodes: { out: m.nodes.map((n) => [n.name, n.providerId ?? `${REGION}.${n.instanceId}`, n.ready ?? "True", "", n.podCidr, n.pool ?? "", "2026-12-01T10:00:00Z"].join("\t")).join("\n") },
            conditions: { out: m.nodes.map((n) => [n.name, n.ready ?? "True", n.reason ?? "KubeletReady", n.message ?? "kubelet is posting ready status", n.networkUnavailable ?? "False", "RouteCreated"].join("\t")).join("\n") },
            kubelets: { out: m.nodes.map((n) => `${n.name}\t${n.kubelet ?? "v1.34.2"}`).join("\n") },
            apiservers: { out: Object.entries(m.apiServers).map(([node, image]) => `${node}\t${image}`).join("\n") },
            "control-plane": { out: (m.controlPlane ?? ["master-0"]).join("\n") },
        }),
    }));
    emu.onCommand(operation("doctor-autoscaler"), () => ({
        output: gz({ deploy: { out: "1 1" }, status: m.caStatus ? { out: m.caStatus } : { out: 'Error from server (NotFound): configmaps "cluster-autoscaler-status" not found', rc: 1 }, log: { out: m.caLog } }),
    }));
    emu.onCommand(operation("doctor-join"), () => ({
        output: gz({
            // Raw kubeadm output with secrets, as if the on-master filter were missing: doctor must still never print them.
            tokens: { out: m.tokens.map((t) => JSON.stringify({ kind: "BootstrapToken", apiVersion: "output.kubeadm.k8s.io/v1alpha3", creationTimestamp: null, token: `${t.id}.${SECRET}`,
                description: "alicloud-kubeadm", ...(t.expires ? { ttl: "720h0m0s", expires: t.expires } : {}), usages: t.usages ?? ["authentication", "signing"],
                groups: ["system:bootstrappers:kubeadm:default-node-token"] }, null, 4)).join("\n") },
            autoapprove: { out: m.autoApproved ?? "" },
            admitted: { out: m.admitted ?? "" },
            readyz: { out: m.readyz, rc: /check passed/.test(m.readyz) ? 0 : 1 },
            etcd: { out: m.etcdIps.map((ip, i) => `8e9e05c52164694${i}, started, master-${i}, https://${ip}:2380, https://${ip}:2379, false`).join("\n") },
        }),
    }));
    emu.onCommand(operation("doctor-certs"), (c) => {
        const m0 = m.certs[c.instanceId] ?? { expiry: {}, timer: false };
        return { output: gz({
            certs: { out: Object.entries(m0.expiry).map(([name, at]) => `${name} ${at}`).join("\n") },
            timer: m0.timer ? { out: "enabled" } : { out: "Failed to get unit file state for alicloud-kubeadm-cert-renew.timer: No such file or directory", rc: 1 },
        }) };
    });
    emu.onCommand(operation("doctor-bootstrap-log"), (c) => ({ output: m.bootstrapLogs[c.instanceId] ?? "==> no /var/log/alicloud-kubeadm/*.log (user data did not start?)\n" }));
}

const FORBIDDEN = /kubectl[^\n|]*\s(delete|drain|cordon|uncordon|apply|patch|edit|replace|scale|annotate|label|taint|create)\s|kubeadm\s+(reset|token\s+(create|delete)|join|init)|(^|[\s;&|])rm\s|systemctl\s+(stop|restart|start)|>\s*\/(etc|var)/;

/** The scripts doctor ran: the saved commands it invoked, as stored (doctor never sends a script of its own). */
function invokedScripts(emu: Emulator): string[] {
    const byId = new Map([...emu.commands.values()].map((cmd) => [cmd.commandId, cmd.content]));
    return emu.callsOf("InvokeCommand").map((c) => byId.get(c.params.CommandId) ?? "");
}

/** Doctor made no mutating call: only Describe* actions and InvokeCommand of the saved doctor operations, every one read-only. */
function assertReadOnly(emu: Emulator): void {
    const other = emu.calls.filter((c) => !/^Describe/.test(c.action) && !["InvokeCommand", "CreateCommand"].includes(c.action)).map((c) => c.action);
    assert.deepStrictEqual(other, [], "no mutating action besides InvokeCommand");
    assert.strictEqual(emu.callsOf("RunCommand").length, 0, "no one-off script");
    const scripts = invokedScripts(emu);
    assert.ok(scripts.length > 0);
    for (const s of scripts) {
        assert.match(s, /^#!\/bin\/bash\n# alicloud-kubeadm operation: doctor-/, "every command is a doctor operation");
        assert.doesNotMatch(s, FORBIDDEN, `read-only script:\n${s}`);
    }
}

/** Every doctor script is shellcheck-clean (its own test, so a machine without shellcheck skips only this). */
function assertShellcheckClean(emu: Emulator): void {
    for (const s of invokedScripts(emu)) {
        const sc = spawnSync("shellcheck", ["-s", "bash", "-"], { input: s, encoding: "utf8" });
        assert.strictEqual(sc.status, 0, `shellcheck:\n${sc.stdout}\n${s}`);
    }
}

/** The distinct requests of an action: a retry of the same request (a legitimate answer to a slow or reset call) counts once. */
function distinctCalls(emu: Emulator, action: string): number {
    return new Set(emu.callsOf(action).map((c) => JSON.stringify(c.params))).size;
}

const find = (fs_: Finding[], check: string, status: string, re: RegExp) => fs_.find((f) => f.check === check && f.status === status && re.test(`${f.subject} ${f.evidence}`));
const fast = { pollIntervalMs: 10, pollMaxIntervalMs: 30, joinGraceMinutes: 0 };

describe("doctor", () => {
    const ctx = useEmulator();

    it("a healthy staging reports no problem and no warning, and makes no mutating call", async () => {
        const { emu } = ctx;
        const { info } = await stage(emu);
        const findings = await runDoctor(info, fast);
        const bad = findings.filter((f) => f.status !== "ok");
        assert.deepStrictEqual(bad, [], renderTable("dev", findings));
        assert.strictEqual(exitCodeOf(findings), 0);
        for (const check of ["ess", "autoscaler", "nodes", "routes", "join", "versions", "certs"]) assert.ok(findings.some((f) => f.check === check), `${check} reported`);
        assert.ok(find(findings, "nodes", "ok", /5 Node\(s\), 5 Ready/));
        assert.ok(find(findings, "versions", "ok", /configured 1\.34\.2; API servers 1\.34\.2: master-0; kubelets 1\.34\.2: elastic-0, existing-0, general-0, general-1, master-0/), renderTable("dev", findings));
        assert.ok(find(findings, "routes", "ok", /5 route\(s\) inside 172\.16\.0\.0\/16/), "the VPN route outside the pod CIDR is ignored");
        assert.strictEqual(distinctCalls(emu, "InvokeCommand"), 4, "nodes (and versions), autoscaler, join material and certificates: one master command each");
        assertReadOnly(emu);
    });

    it("every script doctor sends is shellcheck-clean (master sections and a node's bootstrap log)", async function () {
        requireTool(this, "shellcheck", SHELLCHECK_INSTALL, "the shellcheck assertions");
        const { emu } = ctx;
        const { info } = await stage(emu);
        const lost = emu.addInstance().instanceId;
        await runDoctor({ ...info, existingNodes: [...info.existingNodes, { instanceId: lost, mode: "manual", tokenId: info.existingNodes[0]?.tokenId ?? "abcdef" }] }, fast);
        assert.ok(invokedScripts(emu).some((x) => operation("doctor-bootstrap-log").test(x)), "the node operation was invoked too");
        assertShellcheckClean(emu);
    });

    it("certificates: a warning under 30 days left, a problem once expired, a warning where the renewal timer is missing; on every master", async () => {
        const { emu } = ctx;
        const { info, model, ids } = await stage(emu);
        const second = emu.addInstance().instanceId;
        // One clock for every date and for doctor itself (its `now`), days apart: which certificate expires first
        // never hangs on when a line ran.
        const now = Date.now();
        const iso = (days: number) => new Date(now + days * 86400_000).toISOString().slice(0, 19) + "Z";
        model.certs[ids.master].expiry["pki/front-proxy-client.crt"] = iso(12);
        model.certs[second] = { expiry: { "pki/apiserver.crt": iso(-1), "pki/etcd/server.crt": iso(300) }, timer: false };
        const two = { ...info, masterInstanceIds: [ids.master, second] };
        let findings = await runDoctor(two, { ...fast, checks: ["certs"], now });
        const w = find(findings, "certs", "warning", new RegExp(`master ${ids.master} .*less than 30 days left: pki/front-proxy-client\\.crt`));
        assert.ok(w, renderTable("dev", findings));
        assert.match(w.evidence, /the renewal timer is enabled/);
        const p = find(findings, "certs", "problem", new RegExp(`master ${second} .*expired: pki/apiserver\\.crt`));
        assert.ok(p, renderTable("dev", findings));
        assert.match(p.evidence, /renewal timer is not installed/);
        assert.match(p.next, /kubeadm certs renew all/);
        assert.strictEqual(exitCodeOf(findings), 1);
        model.certs[second].expiry["pki/apiserver.crt"] = iso(200);
        findings = await runDoctor(two, { ...fast, checks: ["certs"], now });
        assert.ok(find(findings, "certs", "warning", new RegExp(`master ${second} .*first to expire is pki/apiserver\\.crt.*not installed`)), renderTable("dev", findings));
        assertReadOnly(emu);
    });

    it("lists a fixed pool's outdated nodes: the instances whose spec tag (put on by ESS at creation) is not the active configuration's", async () => {
        const { emu } = ctx;
        const { info, ids } = await stage(emu);
        const group = emu.state.scalingGroups.get(info.pools[0].scalingGroupId)!;
        const config = emu.state.scalingConfigurations.get(group.activeScalingConfigurationId)!;
        // The spec the two members were made from, then a new one (Pulumi's in-place update of the configuration's tags).
        config.tags = { ...config.tags, [SPEC_TAG]: "1111111111111111" };
        emu.instances.get(ids.general[0])!.tags[SPEC_TAG] = "1111111111111111";
        emu.instances.get(ids.general[1])!.tags[SPEC_TAG] = "1111111111111111";
        assert.ok(find(await runDoctor(info, { ...fast, checks: ["ess"] }), "ess", "ok", /pool general .*all 2 node\(s\) from the current spec 1111111111111111/));
        config.tags[SPEC_TAG] = "2222222222222222";
        const newer = launchInstance(emu.state, group).instanceId;
        const findings = await runDoctor(info, { ...fast, checks: ["ess"] });
        const f = find(findings, "ess", "warning", /pool general .*2 of 3 node\(s\) outdated/);
        assert.ok(f, renderTable("dev", findings));
        assert.match(f.evidence, new RegExp(`${ids.general[0]} \\(spec 1111111111111111\\), ${ids.general[1]} \\(spec 1111111111111111\\)`));
        assert.doesNotMatch(f.evidence, new RegExp(newer), "the instance ESS made from the new configuration carries its tag");
        assert.match(f.next, /rollout/);
        assert.ok(!find(findings, "ess", "warning", /pool elastic .*outdated/), "an autoscaled pool whose configuration carries no spec tag: nothing to compare");
        // An autoscaled pool's configuration carries its spec under AUTOSCALED_SPEC_LABEL (also a label of its nodes).
        const elastic = emu.state.scalingGroups.get(info.pools.find((p) => p.name === "elastic")!.scalingGroupId)!;
        const elasticConfig = emu.state.scalingConfigurations.get(elastic.activeScalingConfigurationId)!;
        elasticConfig.tags = { ...elasticConfig.tags, [AUTOSCALED_SPEC_LABEL]: "3333333333333333" };
        const fresh = launchInstance(emu.state, elastic).instanceId;
        elasticConfig.tags[AUTOSCALED_SPEC_LABEL] = "4444444444444444";
        const e = find(await runDoctor(info, { ...fast, checks: ["ess"] }), "ess", "warning", /pool elastic .*\d+ of \d+ node\(s\) outdated \(current spec 4444444444444444\)/);
        assert.ok(e);
        assert.match(e.evidence, new RegExp(`${fresh} \\(spec 3333333333333333\\)`));
    });

    it("lists the outdated existing nodes as the last pulumi up recorded them (spec vs the spec each joined with); none before either was recorded", async () => {
        const { emu } = ctx;
        const { info, ids } = await stage(emu);
        const spare = emu.addInstance().instanceId;
        const recorded = (joined: string) => ({ ...info, existingNodes: [
            { instanceId: ids.existing, mode: "manual", spec: "2222222222222222", joinedSpec: joined },
            { instanceId: spare, mode: "auto", spec: "5555555555555555", joinedSpec: "5555555555555555" },
        ] });
        const ok = find(await runDoctor(recorded("2222222222222222"), { ...fast, checks: ["ess"] }), "ess", "ok", /existing nodes.*all 2 joined with their current spec/);
        assert.ok(ok);
        const findings = await runDoctor(recorded("1111111111111111"), { ...fast, checks: ["ess"] });
        const f = find(findings, "ess", "warning", /existing nodes.*1 of 2 outdated/);
        assert.ok(f, renderTable("dev", findings));
        assert.match(f.evidence, new RegExp(`${ids.existing} \\(joined with 1111111111111111, spec now 2222222222222222\\)`));
        assert.doesNotMatch(f.evidence, new RegExp(spare));
        assert.match(f.next, /rollout: replace/);
        assert.ok(!(await runDoctor(info, { ...fast, checks: ["ess"] })).some((x) => /existing nodes/.test(`${x.subject} ${x.evidence}`)), "nothing recorded: nothing said");
    });

    it("an existing node a replacement took out (recorded removed) is reported out of the cluster, not as joined with a spec", async () => {
        const { emu } = ctx;
        const { info, ids } = await stage(emu);
        const spare = emu.addInstance().instanceId;
        const findings = await runDoctor({ ...info, existingNodes: [
            { instanceId: ids.existing, mode: "auto", spec: "2222222222222222", joinedSpec: "removed" },
            { instanceId: spare, mode: "manual", spec: "5555555555555555", joinedSpec: "5555555555555555" },
        ] }, { ...fast, checks: ["ess"] });
        const f = find(findings, "ess", "warning", new RegExp(`${ids.existing}.*out of the cluster`));
        assert.ok(f, renderTable("dev", findings));
        assert.match(f.next, /`pulumi up` attaches it again/);
        assert.ok(!findings.some((x) => /joined with removed/.test(x.evidence)), renderTable("dev", findings));
        assert.ok(find(findings, "ess", "ok", /existing nodes.*all 1 joined with their current spec/), renderTable("dev", findings));
    });

    it("an existing node without a Node is reported not in the cluster, with pulumi up --refresh to attach it again (running or stopped)", async () => {
        const { emu } = ctx;
        const { info, model, ids } = await stage(emu);
        model.nodes = model.nodes.filter((n) => n.instanceId !== ids.existing);
        const running = find(await runDoctor(info, { ...fast, checks: ["nodes"] }), "nodes", "problem", new RegExp(ids.existing));
        assert.ok(running);
        assert.match(running.next, /an existing node is not in the cluster: `pulumi up --refresh` attaches it again/);
        emu.state.instances.get(ids.existing)!.status = "Stopped";
        const stopped = find(await runDoctor(info, { ...fast, checks: ["nodes"] }), "nodes", "warning", new RegExp(ids.existing));
        assert.ok(stopped);
        assert.match(stopped.next, /not in the cluster.*`pulumi up --refresh` attaches it again/);
    });

    it("names a failed scaling activity with its error code explained", async () => {
        const { emu } = ctx;
        const { info } = await stage(emu);
        const groupId = info.pools[1].scalingGroupId;
        const failed: EmuActivity = { scalingActivityId: "asa-failed0001", scalingGroupId: groupId, description: "Add \"1\" ECS instance(s)", cause: "A user request",
            startedAt: Date.now() - 60_000, endsAt: Date.now() - 50_000, statusCode: "Failed", totalCapacity: 1, createdInstances: [], destroyedInstances: [],
            statusMessage: "Fail to create Instance", errorCode: "OperationDenied.NoStock", errorMessage: "The requested resource is sold out in the specified zone." };
        emu.state.activities.push(failed);
        const before = emu.calls.length;
        const findings = await runDoctor(info, { ...fast, checks: ["ess"] });
        const f = find(findings, "ess", "problem", /asa-failed0001/);
        assert.ok(f, renderTable("dev", findings));
        assert.match(f.subject, /pool elastic/);
        assert.match(f.evidence, /Failed.*OperationDenied\.NoStock: The requested resource is sold out.*no stock/);
        assert.match(f.next, /add zones/);
        assert.strictEqual(exitCodeOf(findings), 1);
        assert.ok(emu.calls.slice(before).every((c) => /^Describe/.test(c.action)));
    });

    it("an instance without a Node: quotes its failing bootstrap log fetched from that instance, without the token secret", async () => {
        const { emu } = ctx;
        const { info, model, ids } = await stage(emu);
        const lost = ids.general[1];
        model.nodes = model.nodes.filter((n) => n.instanceId !== lost);
        model.bootstrapLogs[lost] = [
            "==> /var/log/alicloud-kubeadm/attach-node.log",
            "2026-12-02T10:00:01Z waiting for API endpoint 192.168.0.10:6443 (attempt 1/60, curl exit 7)",
            `2026-12-02T10:05:00Z kubeadm join 192.168.0.10:6443 --token abcdef.${SECRET} --discovery-token-ca-cert-hash sha256:aa`,
            "2026-12-02T10:05:03Z [ERROR] error execution phase preflight: couldn't validate the identity of the API Server: x509: certificate signed by unknown authority",
            "==> marker /var/lib/alicloud-kubeadm/join.failed",
            "status=failed", "exit_code=1",
        ].join("\n");
        const findings = await runDoctor(info, fast);
        const f = find(findings, "nodes", "problem", new RegExp(lost));
        assert.ok(f, renderTable("dev", findings));
        assert.match(f.subject, /pool general/);
        assert.match(f.evidence, /no Node has provider id cn-hangzhou\./);
        assert.match(f.evidence, /x509: certificate signed by unknown authority/);
        assert.match(f.evidence, /status=failed/);
        assert.ok(f.details?.includes("kubeadm join"), "the whole tail is in details");
        const logCall = emu.callsOf("InvokeCommand").find((c) => c.params.CommandId === info.commands!["doctor-bootstrap-log"]);
        assert.ok(logCall);
        assert.strictEqual(logCall.params["InstanceId.1"], lost, "the log is read from that instance");
        assert.strictEqual(logCall.params["InstanceId.2"], undefined);
        const json = renderJson("dev", findings);
        assert.ok(!json.includes(SECRET) && !renderTable("dev", findings).includes(SECRET), "no token secret in any output");
        assert.match(json, /abcdef\.<redacted>/);
        assertReadOnly(emu);
    });

    it("a young instance without a Node is still joining (warning), a stopped one is named", async () => {
        const { emu } = ctx;
        const { info, model, ids } = await stage(emu);
        model.nodes = model.nodes.filter((n) => n.instanceId !== ids.general[0] && n.instanceId !== ids.existing);
        emu.stopInstance(ids.existing);
        const findings = await runDoctor(info, { ...fast, joinGraceMinutes: 15, checks: ["nodes"] });
        assert.ok(find(findings, "nodes", "warning", new RegExp(`${ids.general[0]}.*may still be joining`)), renderTable("dev", findings));
        assert.ok(find(findings, "nodes", "warning", new RegExp(`${ids.existing}.*Stopped`)));
        assert.strictEqual(emu.callsOf("InvokeCommand").length, 1, "no log fetch for instances still in their grace period");
    });

    it("names a stale route (instance gone), a conflicting route and a missing route with NetworkUnavailable", async () => {
        const { emu } = ctx;
        const { info, model, ids, routeTableId } = await stage(emu);
        const gone = emu.addInstance().instanceId;
        const stale = emu.addRouteEntry(routeTableId, { destinationCidrBlock: "172.16.9.0/25", nextHopId: gone });
        emu.releaseInstance(gone);
        const table = emu.routeTables.get(routeTableId)!;
        const elasticRoute = table.entries.find((e) => e.destinationCidrBlock === "172.16.1.128/25")!;
        elasticRoute.nextHopId = ids.general[0];
        table.entries = table.entries.filter((e) => e.destinationCidrBlock !== "172.16.2.0/25");
        model.nodes.find((n) => n.name === "existing-0")!.networkUnavailable = "True";
        const findings = await runDoctor(info, { ...fast, checks: ["routes"] });
        const s = find(findings, "routes", "problem", /route 172\.16\.9\.0\/25.*stale/);
        assert.ok(s, renderTable("dev", findings));
        assert.match(s.evidence, new RegExp(`${gone}, which no longer exists \\(${stale.routeEntryId}\\)`));
        assert.match(s.next, new RegExp(`DeleteRouteEntry --RouteEntryId ${stale.routeEntryId}`));
        const c = find(findings, "routes", "problem", /conflicting/);
        assert.ok(c);
        assert.match(c.evidence, new RegExp(`node elastic-0 owns 172\\.16\\.1\\.128/25 but the route points at Instance ${ids.general[0]}, not ${ids.elastic[0]}`));
        const m = find(findings, "routes", "problem", /node existing-0/);
        assert.ok(m);
        assert.match(m.evidence, /no route for its podCIDR 172\.16\.2\.0\/25.*NetworkUnavailable=True/);
        assert.ok(emu.calls.every((x) => /^Describe/.test(x.action) || ["InvokeCommand", "CreateCommand"].includes(x.action)));
        assert.strictEqual(emu.callsOf("DeleteRouteEntry").length, 0);
    });

    it("names an expired token and the pool that uses it, printing only the token id", async () => {
        const { emu } = ctx;
        const { info, model } = await stage(emu);
        model.tokens[1].expires = "2026-01-01T00:00:00Z";
        model.tokens = model.tokens.filter((t) => t.id !== "mnopqr");
        const findings = await runDoctor(info, { ...fast, checks: ["join"] });
        const f = find(findings, "join", "problem", /token ghijkl/);
        assert.ok(f, renderTable("dev", findings));
        assert.match(f.evidence, /used by pool elastic; expired at 2026-01-01T00:00:00Z: new nodes cannot join/);
        assert.match(f.next, /pulumi up --replace/);
        assert.ok(find(findings, "join", "warning", /token mnopqr.*existing node .*not on the cluster/), "a missing token of existing nodes is a warning");
        assert.ok(find(findings, "join", "ok", /token abcdef.*never expires/));
        assert.ok(!renderJson("dev", findings).includes(SECRET));
    });

    it("after the migration to admission (no pool names a token), a never-expiring project token left over is a warning with its delete command", async () => {
        const { emu } = ctx;
        const { info, model } = await stage(emu);
        const migrated = { ...info, pools: info.pools.map(({ tokenId: _t, ...p }) => p), existingNodes: info.existingNodes.map(({ tokenId: _t, ...e }) => e) };
        const findings = await runDoctor(migrated, { ...fast, checks: ["join"] });
        const longLived = model.tokens.filter((t) => !t.expires).map((t) => t.id);
        assert.ok(longLived.length > 0, "the staged cluster has never-expiring tokens");
        for (const id of longLived) {
            const f = find(findings, "join", "warning", new RegExp(`token ${id}`));
            assert.ok(f, renderTable("dev", findings));
            assert.match(f.evidence, /never expires and no pool or existing node uses it/);
            assert.strictEqual(f.next, `delete it on a master: \`kubeadm token delete ${id}\``);
        }
        const expiring = model.tokens.filter((t) => t.expires).map((t) => t.id);
        for (const id of expiring) assert.ok(!findings.some((f) => f.subject === `token ${id}`), "a token with an expiry is not flagged");
        assert.ok(!renderJson("dev", findings).includes(SECRET));
    });

    it("names every token in a group kubeadm auto-approves (a kubelet certificate for any node name), with who uses it", async () => {
        const { emu } = ctx;
        const { info, model } = await stage(emu);
        model.autoApproved = "kubeadm:node-autoapprove-bootstrap\tsystem:bootstrappers:kubeadm:default-node-token,\n";
        model.tokens.push({ id: "initok", expires: new Date(Date.now() + 86400_000).toISOString().slice(0, 19) + "Z" });
        const findings = await runDoctor(info, { ...fast, checks: ["join"] });
        for (const id of model.tokens.map((t) => t.id)) {
            const f = findings.find((x) => x.status === "warning" && x.subject === `token ${id}` && /which kubeadm auto-approves/.test(x.evidence));
            assert.ok(f, `${id}: ${renderTable("dev", findings)}`);
            assert.match(f.evidence, /in group system:bootstrappers:kubeadm:default-node-token, which kubeadm auto-approves \(ClusterRoleBinding kubeadm:node-autoapprove-bootstrap\)/);
        }
        const init = findings.find((x) => x.subject === "token initok" && /auto-approves/.test(x.evidence))!;
        assert.strictEqual(init.next, "delete it on a master unless something joins with it: `kubeadm token delete initok`");
        assert.match(findings.find((x) => x.subject === "token ghijkl" && /auto-approves/.test(x.evidence))!.evidence, /used by pool elastic/);
        // No auto-approval binding (or only admission's tokens in other groups): nothing to say.
        model.autoApproved = "";
        assert.ok(!(await runDoctor(info, { ...fast, checks: ["join"] })).some((x) => /auto-approves/.test(x.evidence)));
        assert.ok(!renderJson("dev", findings).includes(SECRET));
    });

    it("reports the digest the recent joins' identity signatures used: SHA-1 a warning (accepted by admission.allowSha1), SHA-256 alone ok", async () => {
        const { emu } = ctx;
        const { info, model } = await stage(emu);
        const event = (id: string, md: string) => `2026-12-03T10:00:00Z\tadmitted ${id} (pool general, Pending) as ${REGION}.${id}; identity signed with ${md}`;
        model.admitted = [event("i-1", "sha256"), event("i-2", "sha1")].join("\n");
        let f = (await runDoctor(info, { ...fast, checks: ["join"] })).find((x) => x.subject === "identity signature digest");
        assert.equal(f?.status, "warning");
        assert.match(f!.evidence, /used sha256 ×1, sha1 ×1: SHA-1 is accepted \(admission\.allowSha1\)/);
        model.admitted = event("i-1", "sha256");
        f = (await runDoctor(info, { ...fast, checks: ["join"] })).find((x) => x.subject === "identity signature digest");
        assert.equal(f?.status, "ok");
        assert.match(f!.evidence, /used sha256 ×1 \(no SHA-1/);
        model.admitted = "";
        assert.ok(!(await runDoctor(info, { ...fast, checks: ["join"] })).some((x) => x.subject === "identity signature digest"), "no recent join, nothing to say");
    });

    it("names a failing /readyz and an etcd member that is not a master", async () => {
        const { emu } = ctx;
        const { info, model } = await stage(emu);
        model.readyz = "[+]ping ok\n[-]etcd failed: reason withheld\nreadyz check failed\n";
        model.etcdIps = ["192.168.0.10", "192.168.0.99"];
        const findings = await runDoctor(info, { ...fast, checks: ["join"] });
        assert.ok(find(findings, "join", "problem", /control plane \/readyz.*\[-\]etcd failed/), renderTable("dev", findings));
        const f = find(findings, "join", "problem", /etcd member master-1/);
        assert.ok(f);
        assert.match(f.evidence, /peer https:\/\/192\.168\.0\.99:2380 is not one of the masters/);
        assert.match(f.next, /etcdctl member remove 8e9e05c521646941/);
    });

    it("names a NotReady node with the kubelet's reason", async () => {
        const { emu } = ctx;
        const { info, model } = await stage(emu);
        Object.assign(model.nodes[3], { ready: "False", reason: "KubeletNotReady", message: "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:cni plugin not initialized" });
        const findings = await runDoctor(info, { ...fast, checks: ["nodes"] });
        const f = find(findings, "nodes", "problem", /node elastic-0/);
        assert.ok(f, renderTable("dev", findings));
        assert.match(f.evidence, /NotReady \(Ready=False: KubeletNotReady: container runtime network not ready.*cni plugin not initialized\)/);
        assert.match(f.next, /journalctl -u kubelet/);
    });

    it("versions: skew outside the policy is a problem, an upgrade left half-way a warning, a config older than the API servers a problem", async () => {
        const { emu } = ctx;
        const { info, model } = await stage(emu);
        // Two API servers (one moved to 1.35.1, one still 1.34.2), the config at 1.35.1; kubelets newer, far older and older.
        model.apiServers = { "master-0": "registry.k8s.io/kube-apiserver:v1.35.1", "master-1": "registry.k8s.io/kube-apiserver:v1.34.2@sha256:" + "a".repeat(64) };
        model.controlPlane = ["master-0", "master-1"];
        model.nodes[1].kubelet = "v1.35.1";
        model.nodes[3].kubelet = "v1.30.4";
        model.nodes[4].kubelet = "v1.33.5";
        const findings = await runDoctor({ ...info, kubernetesVersion: "1.35.1" }, { ...fast, checks: ["versions"] });
        const table = renderTable("dev", findings);
        assert.ok(find(findings, "versions", "problem", /general-0: kubelet 1\.35\.1 is newer than the oldest API server \(1\.34\.2\)/), table);
        assert.ok(find(findings, "versions", "problem", /elastic-0: kubelet 1\.30\.4 is more than 3 minors older/), table);
        assert.ok(find(findings, "versions", "warning", /API servers run more than one version \(1\.35\.1: master-0; 1\.34\.2: master-1\)/), table);
        assert.ok(find(findings, "versions", "warning", /kubelets older than the API servers \(1\.34\.2\): 1\.33\.5: existing-0; 1\.30\.4: elastic-0/), table);
        assert.ok(find(findings, "versions", "warning", /the config asks for 1\.35\.1, the API servers run 1\.34\.2/), table);
        assert.ok(!findings.some((f) => f.status === "ok"), table);
        assert.strictEqual(exitCodeOf(findings), 1);

        model.apiServers = { "master-0": "registry.k8s.io/kube-apiserver:v1.34.2" };
        for (const n of model.nodes) n.kubelet = undefined;
        const older = await runDoctor({ ...info, kubernetesVersion: "1.33.9" }, { ...fast, checks: ["versions"] });
        assert.ok(find(older, "versions", "problem", /asks for 1\.33\.9, older than the API servers' 1\.34\.2: kubeadm does not downgrade/), renderTable("dev", older));
    });

    it("versions: only control-plane Nodes' API servers count; a worker's pod labelled kube-apiserver makes no skew", async () => {
        const { emu } = ctx;
        const { info, model } = await stage(emu);
        // Any kubelet may post a mirror pod labelled component=kube-apiserver bound to its own Node (general-0, not labelled
        // control-plane): as an API server it would make every kubelet "newer" or "too old" and the API servers "two versions".
        model.apiServers = { "master-0": "registry.k8s.io/kube-apiserver:v1.34.2", "general-0": "registry.k8s.io/kube-apiserver:v1.30.0" };
        const findings = await runDoctor(info, { ...fast, checks: ["versions"] });
        const table = renderTable("dev", findings);
        assert.deepStrictEqual(findings.filter((f) => f.check === "versions").map((f) => f.status), ["ok"], table);
        assert.ok(find(findings, "versions", "ok", /API servers 1\.34\.2: master-0;/), table);
    });

    it("versions: masters without the control-plane label: the finding says the label is missing, not that no API server runs", async () => {
        const { emu } = ctx;
        const { info, model } = await stage(emu);
        model.controlPlane = [];
        const findings = await runDoctor(info, { ...fast, checks: ["versions"] });
        const table = renderTable("dev", findings);
        assert.ok(find(findings, "versions", "problem", /kube-apiserver pods found on master-0, none of them a Node labelled node-role\.kubernetes\.io\/control-plane: the masters' control-plane label is missing/), table);
        assert.ok(!findings.some((f) => /no kube-apiserver pod found/.test(f.evidence)), table);
    });

    it("names Nodes without an instance and wrong or missing provider ids", async () => {
        const { emu } = ctx;
        const { info, model } = await stage(emu);
        model.nodes.push({ name: "ghost", instanceId: "i-emugone000000000001", podCidr: "172.16.3.0/25", ready: "Unknown" });
        model.nodes[1].providerId = `alicloud://${REGION}.${model.nodes[1].instanceId}`;
        model.nodes.push({ name: "noid", instanceId: "", providerId: "", podCidr: "" });
        const findings = await runDoctor(info, { ...fast, checks: ["nodes"] });
        assert.ok(find(findings, "nodes", "problem", /node ghost.*i-emugone000000000001, which no longer exists/), renderTable("dev", findings));
        assert.ok(find(findings, "nodes", "problem", /node general-0.*provider id is "alicloud:\/\/cn-hangzhou\./));
        assert.ok(find(findings, "nodes", "problem", /node noid.*has no provider id/));
    });

    it("names a Node named after one instance whose provider id claims another", async () => {
        const { emu } = ctx;
        const { info, model } = await stage(emu);
        const [victim, impostor] = [model.nodes[1].instanceId, model.nodes[3].instanceId];
        model.nodes.push({ name: `${REGION}.${impostor}`, instanceId: victim, podCidr: "172.16.9.0/25" });
        const findings = await runDoctor(info, { ...fast, checks: ["nodes"] });
        const f = find(findings, "nodes", "problem", new RegExp(`node ${REGION}\\.${impostor}.*named after instance ${impostor} but its provider id names ${victim}`));
        assert.ok(f, renderTable("dev", findings));
        assert.match(f.next, /kubectl delete node/);
    });

    it("names an autoscaler scale-up backoff and a missing status ConfigMap", async () => {
        const { emu } = ctx;
        const { info, model } = await stage(emu);
        model.caStatus = caStatusYaml(info.pools[1].scalingGroupId, { scaleUp: "Backoff", backoff: { errorCode: "cloudProviderError", errorMessage: "failed to increase node group size" } });
        model.caLog += "E1202 10:01:00.000000       1 static_autoscaler.go:444] AliCloud: unexpected ProviderID format\n";
        let findings = await runDoctor(info, { ...fast, checks: ["autoscaler"] });
        assert.ok(find(findings, "autoscaler", "problem", /pool elastic.*scale-up is backed off after a failure: cloudProviderError — failed to increase/), renderTable("dev", findings));
        assert.ok(find(findings, "autoscaler", "problem", /autoscaler log.*provider id is missing or malformed/));
        model.caStatus = undefined;
        findings = await runDoctor(info, { ...fast, checks: ["autoscaler"] });
        assert.ok(find(findings, "autoscaler", "problem", /configmap cluster-autoscaler-status.*never finished a loop/));
    });

    it("a 300-node pool: pages ESS members, instances and routes; the node listing fits Cloud Assistant's 24 KB", async () => {
        const { emu } = ctx;
        const { info, model, routeTableId } = await stage(emu);
        const big = emu.addScalingGroup({ desiredCapacity: 300, minSize: 0, maxSize: 400 });
        info.pools.push({ name: "big", mode: "autoscale", min: 0, max: 400, scalingGroupId: big.scalingGroupId, tokenId: "ghijkl" });
        emu.scalingGroupInstances(big.scalingGroupId).forEach((id, i) => {
            const podCidr = `172.16.${10 + Math.floor(i / 2)}.${(i % 2) * 128}/25`;
            model.nodes.push({ name: `big-${i}`, instanceId: id, podCidr, pool: "big" });
            emu.addRouteEntry(routeTableId, { destinationCidrBlock: podCidr, nextHopId: id });
        });
        let listingBytes = 0;
        emu.onCommand(operation("doctor-nodes"), () => {
            const output = gz({
                nodes: { out: model.nodes.map((n) => [n.name, `${REGION}.${n.instanceId}`, "True", "", n.podCidr, n.pool ?? "", "2026-12-01T10:00:00Z"].join("\t")).join("\n") },
                conditions: { out: model.nodes.map((n) => [n.name, "True", "KubeletReady", "kubelet is posting ready status", "False", "RouteCreated"].join("\t")).join("\n") },
            });
            listingBytes = output.length;
            return { output };
        });
        const started = Date.now();
        const findings = await runDoctor(info, { ...fast, checks: ["ess", "nodes", "routes"] });
        const ms = Date.now() - started;
        assert.deepStrictEqual(findings.filter((f) => f.status !== "ok"), [], renderTable("dev", findings));
        assert.ok(find(findings, "nodes", "ok", /305 Node\(s\), 305 Ready/));
        assert.ok(find(findings, "routes", "ok", /305 route\(s\)/));
        assert.ok(listingBytes < 24 * 1024, `node listing is ${listingBytes} bytes after gzip+Base64`);
        const n = (a: string) => distinctCalls(emu, a);
        assert.strictEqual(n("DescribeScalingInstances"), 1 + 1 + 6, "50 per page");
        assert.strictEqual(n("DescribeInstances"), 4, "100 per call: 305 instances");
        assert.strictEqual(n("DescribeRouteEntryList"), 4, "100 per page: 306 entries");
        assert.strictEqual(n("InvokeCommand"), 1, "one master command for nodes and routes");
        console.log(`      305 nodes: ${emu.calls.length} API calls, ${ms} ms against the emulator, node listing ${listingBytes} B`);
    });

    it("master 0 unreachable: the checks that need it could not look (exit 2), ESS still reports", async () => {
        const { emu } = ctx;
        const { info } = await stage(emu);
        emu.setAgentOffline(info.masterInstanceIds[0]);
        const findings = await runDoctor(info, fast);
        assert.deepStrictEqual(findings.filter((f) => f.couldNotLook).map((f) => f.check).sort(), ["autoscaler", "certs", "join", "nodes", "routes", "versions"]);
        assert.match(findings.find((f) => f.check === "nodes")!.evidence, /could not look: Cloud Assistant agent on .* is not running/);
        assert.ok(findings.some((f) => f.check === "ess" && f.status === "ok"));
        assert.strictEqual(exitCodeOf(findings), 2);
        assert.strictEqual(emu.callsOf("InvokeCommand").length, 1, "an unreachable master is tried once, not once per check");
    });
});

describe("doctor pieces", () => {
    it("explains known activity error codes, by code or by message", () => {
        assert.match(explainActivityError("InvalidSystemDiskCategory.ValueNotSupported", "")!.meaning, /invalid disk category/);
        assert.match(explainActivityError("", "The specified vSwitch has no available ip")!.meaning, /vSwitch out of IPs/);
        assert.match(explainActivityError("QuotaExceed.ElasticQuota", "")!.meaning, /quota/);
        assert.match(explainActivityError("InvalidAccountStatus.NotEnoughBalance", "")!.meaning, /insufficient balance/);
        assert.strictEqual(explainActivityError("Something.New", "odd"), undefined);
    });

    it("parses kubeadm's back-to-back JSON tokens, keeping only the ids", () => {
        const text = `{"token": "abcdef.${SECRET}", "description": "a } tricky { one", "expires": "2026-01-01T00:00:00Z", "usages": ["authentication","signing"], "groups": []}\n` +
            `{\n  "token": "ghijkl.${SECRET}",\n  "usages": ["signing"]\n}\n`;
        const tokens = parseTokenList(text);
        assert.deepStrictEqual(tokens.map((t) => [t.id, t.expires, t.usages.length]), [["abcdef", "2026-01-01T00:00:00Z", 2], ["ghijkl", "", 1]]);
        assert.ok(!JSON.stringify(tokens).includes(SECRET));
        assert.deepStrictEqual(parseEtcdMembers("8e9e05c52164694d, started, m0, https://192.168.0.10:2380, https://192.168.0.10:2379, false\n").map((m) => m.peerUrls), [["https://192.168.0.10:2380"]]);
    });

    it("reads the YAML status ConfigMap and the older text one", () => {
        assert.strictEqual(parseCaTime("2026-12-02 10:00:00.123456789 +0000 UTC"), Date.parse("2026-12-02T10:00:00.123Z"));
        assert.strictEqual(parseCaTime("2026-12-02 18:00:00 +0800 CST"), Date.parse("2026-12-02T10:00:00Z"));
        assert.strictEqual(parseAutoscalerStatus(caStatusYaml("asg-1", { scaleUp: "Backoff" }))?.nodeGroups?.[0].scaleUp?.status, "Backoff");
        assert.strictEqual(parseAutoscalerStatus("Cluster-autoscaler status at 2020-01-01:\nCluster-wide:\n  Health:      Unhealthy (ready=1)\n  ScaleUp:     NoActivity")?.clusterWide?.health?.status, "Unhealthy");
    });

    it("a doctor operation runs in bash: section framing, exit codes and on-machine token redaction", () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "doctor-"));
        try {
            // kubectl answers the readyz section, fails the etcd section's lookup of the control-plane Nodes; kubeadm prints a token.
            fs.writeFileSync(path.join(dir, "kubectl"), `#!/bin/sh\ncase "$*" in *readyz*) echo "readyz check passed" ;; *node-role.kubernetes.io/control-plane*) echo "boom" >&2; exit 3 ;; esac\n`, { mode: 0o755 });
            fs.writeFileSync(path.join(dir, "kubeadm"), `#!/bin/sh\necho '{"token": "abcdef.${SECRET}"}'\n`, { mode: 0o755 });
            const r = spawnSync("bash", ["-c", renderOperation("doctor-join")], { encoding: "utf8", env: { ...process.env, PATH: `${dir}:${process.env.PATH}`, AK_ROOT: dir } });
            assert.strictEqual(r.status, 0, r.stderr);
            const s = parseSections(decompress(r.stdout));
            assert.deepStrictEqual(s.readyz, { output: "readyz check passed", rc: 0 });
            assert.deepStrictEqual(s.etcd, { output: "boom", rc: 3 });
            assert.strictEqual(s.tokens.output, '{"token": "abcdef.<redacted>"}', "the secret never leaves the machine");
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
        assert.strictEqual(redact(`--certificate-key ${"a".repeat(64)} client-key-data: LS0tabc`), "--certificate-key <redacted> client-key-data: <redacted>");
        const same = "could not look: ESS DescribeScalingGroups failed: InvalidAccessKeyId.NotFound (HTTP 404): Specified access key is not found";
        const table = renderTable("dev", [
            { check: "ess", status: "problem", subject: "ESS", couldNotLook: true, evidence: same, next: "fix access" },
            { check: "routes", status: "problem", subject: "Routes", couldNotLook: true, evidence: same, next: "fix access" },
        ], { width: 200 });
        assert.strictEqual(table.split(same).length, 2, `the failure is said once:\n${table}`);
        assert.match(table, /^no look\s+routes\s+Routes\s+could not look: the same failure as ess above$/m);
        const hint = "ALIBABA_CLOUD_ACCESS_KEY_ID / ALIBABA_CLOUD_ACCESS_KEY_SECRET (plus ALIBABA_CLOUD_SECURITY_TOKEN for STS)";
        assert.strictEqual(redact(hint), hint, "a key's name in a sentence is not a value");
        assert.strictEqual(redact("ALIBABA_CLOUD_ACCESS_KEY_SECRET=s3cr3t SECURITY_TOKEN: 'tok'"), "ALIBABA_CLOUD_ACCESS_KEY_SECRET=<redacted> SECURITY_TOKEN: '<redacted>'");
    });

    it("validates clusterInfo, naming each bad field", () => {
        assert.throws(() => parseClusterInfo({ clusterInfo: { name: "x", region: "cn-hangzhou", pools: [{ name: "p", mode: "burst", tokenId: "abcdef.0123456789abcdef" }] } }),
            (e: Error) => /clusterInfo\.masterInstanceIds/.test(e.message) && /clusterInfo\.pools\.0\.mode/.test(e.message) && /clusterInfo\.pools\.0\.tokenId: must be the 6-character/.test(e.message));
    });

    it("renders colour only when asked, and the table carries evidence and next step", () => {
        const findings: Finding[] = [{ check: "routes", status: "problem", subject: "route 172.16.9.0/25", evidence: "stale", next: "delete it" }, { check: "ess", status: "ok", subject: "pool a", evidence: "fine", next: "" }];
        const plain = renderTable("dev", findings);
        assert.doesNotMatch(plain, /\x1b\[/);
        assert.match(plain, /problem\s+routes\s+route 172\.16\.9\.0\/25\s+stale\n\s+→ delete it/);
        assert.match(plain, /1 problem\(s\): 1 ok, 0 warning\(s\), 1 problem\(s\)/);
        assert.match(renderTable("dev", findings, { colour: true }), /\x1b\[31mproblem/);
    });
});

describe("doctor CLI", () => {
    const ctx = useEmulator();
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "doctor-cli-"));
    after(() => fs.rmSync(tmp, { recursive: true, force: true }));
    const script = path.join(__dirname, "..", "scripts", "doctor.ts");

    /** Runs the CLI asynchronously (the emulator answers from this process). */
    function cli(args: string[], env: Record<string, string | undefined>): Promise<{ code: number; stdout: string; stderr: string }> {
        const clean: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: tmp, ALIBABA_CLOUD_ECS_METADATA_DISABLED: "true", ALIBABA_CLOUD_CLI_PROFILE_DISABLED: "true", NO_COLOR: "1" };
        for (const [k, v] of Object.entries(env)) if (v !== undefined) clean[k] = v;
        return new Promise((resolve) => {
            execFile(process.execPath, [require.resolve("ts-node/dist/bin"), "--transpile-only", script, ...args], { env: clean, encoding: "utf8", timeout: 50_000 }, (err, stdout, stderr) => {
                resolve({ code: err ? (typeof err.code === "number" ? err.code : -1) : 0, stdout, stderr });
            });
        });
    }
    const creds = () => ({ ALICLOUD_KUBEADM_ENDPOINT: ctx.emu.endpoint, ALIBABA_CLOUD_ACCESS_KEY_ID: TEST_CREDENTIALS.accessKeyId, ALIBABA_CLOUD_ACCESS_KEY_SECRET: TEST_CREDENTIALS.accessKeySecret });

    it("--help lists every check and the exit codes", () => {
        const h = helpText();
        for (const name of ["ess", "autoscaler", "nodes", "routes", "join", "certs"]) assert.match(h, new RegExp(`^  ${name}\\s+\\S`, "m"));
        assert.match(h, /0 no problem, 1 at least one problem, 2 could not look/);
        // Pools and existing nodes join by cloud identity: the join check names tokens as left-overs, not as how nodes join.
        assert.match(h.replace(/\s+/g, " "), /pools and existing nodes join by cloud identity through the admission service \(no token\)/);
    });

    it("parses its arguments (node:util parseArgs) and names a bad one", () => {
        assert.deepEqual(parseArgs(["--outputs", "o.json", "--json", "--check", "ess,nodes", "--poll-interval-ms", "10"]),
            { json: true, help: false, stack: undefined, outputs: "o.json", checks: ["ess", "nodes"], pollIntervalMs: 10 });
        assert.equal(parseArgs(["-h"]).help, true);
        assert.throws(() => parseArgs(["--outputs"]), /--outputs.*argument missing.*see --help/);
        assert.throws(() => parseArgs(["--stack", "--json"]), /'--stack' argument is ambiguous[\s\S]*see --help/);
        assert.throws(() => parseArgs(["--stack="]), /--stack needs a value/);
        assert.throws(() => parseArgs(["--outputs", "o.json", "--colour"]), /Unknown option '--colour'.*see --help/);
        assert.throws(() => parseArgs(["--outputs", "o.json", "extra"]), /extra.*see --help/);
        assert.throws(() => parseArgs(["--stack", "dev", "--outputs", "o.json"]), /give exactly one of --stack <name> or --outputs <file>/);
        for (const bad of ["abc", "0", "-5", "1.5", ""]) {
            assert.throws(() => parseArgs(["--outputs", "o.json", `--poll-interval-ms=${bad}`]), /--poll-interval-ms must be a whole number of milliseconds above 0/, bad);
        }
        assert.throws(() => parseArgs(["--outputs", "o.json", "--check", "ess,disk"]), /unknown check\(s\) disk; known: ess, autoscaler/);
    });

    it("exits 0 healthy, 1 on a problem (with --json), 2 when the endpoint is unreachable or credentials are missing", async function () {
        this.timeout(120_000);
        const { emu } = ctx;
        const { info, model } = await stage(emu);
        const file = path.join(tmp, "outputs.json");
        fs.writeFileSync(file, JSON.stringify({ clusterInfo: info, kubeconfig: "[secret]" }));
        const args = ["--outputs", file, "--poll-interval-ms", "10"];

        const healthy = await cli(args, creds());
        assert.strictEqual(healthy.code, 0, healthy.stdout + healthy.stderr);
        assert.match(healthy.stdout, /no problem: \d+ ok, 0 warning\(s\), 0 problem\(s\)/);

        model.tokens[1].expires = "2026-01-01T00:00:00Z";
        const problem = await cli([...args, "--json"], creds());
        assert.strictEqual(problem.code, 1, problem.stderr);
        const out = JSON.parse(problem.stdout) as { exitCode: number; findings: Finding[] };
        assert.strictEqual(out.exitCode, 1);
        assert.ok(out.findings.some((f) => f.check === "join" && f.status === "problem" && /ghijkl/.test(f.subject)));

        const unreachable = await cli(["--outputs", file, "--check", "ess,routes"], { ...creds(), ALICLOUD_KUBEADM_ENDPOINT: "http://127.0.0.1:9" });
        assert.strictEqual(unreachable.code, 2, unreachable.stdout + unreachable.stderr);
        assert.match(unreachable.stdout, /no look\s+ess .*could not look: ESS DescribeScalingGroups failed: ECONNREFUSED/s);

        // No credential source at all (and the SDK's metadata-service fallback not switched off): one message
        // with the fix, exit 2, before any request, the endpoint's included.
        const calls = emu.calls.length;
        const noCreds = await cli(["--outputs", file], { ALICLOUD_KUBEADM_ENDPOINT: emu.endpoint, ALIBABA_CLOUD_ECS_METADATA_DISABLED: "", ALIBABA_CLOUD_CLI_PROFILE_DISABLED: "" });
        assert.strictEqual(noCreds.code, 2, noCreds.stdout + noCreds.stderr);
        assert.strictEqual(noCreds.stdout, "");
        assert.match(noCreds.stderr, /^doctor: no Alibaba Cloud credentials here, so nothing was looked at: set ALIBABA_CLOUD_ACCESS_KEY_ID and ALIBABA_CLOUD_ACCESS_KEY_SECRET \(and ALIBABA_CLOUD_SECURITY_TOKEN for STS\), .*ALIBABA_CLOUD_ECS_METADATA=<role name>; then run doctor again\.\n$/);
        assert.strictEqual(emu.calls.length, calls, "no request reached the endpoint");
        assertReadOnly(emu);
    });

    it("exits 2 with a clear message when the outputs cannot be read", async function () {
        this.timeout(60_000);
        const bad = await cli(["--outputs", path.join(tmp, "missing.json")], {});
        assert.strictEqual(bad.code, 2);
        assert.match(bad.stderr, /^doctor: cannot read .*missing\.json/);
        const none = await cli(["--stack", "dev"], { PATH: "/nonexistent" });
        assert.strictEqual(none.code, 2);
        assert.match(none.stderr, /Pulumi CLI is not installed here: run `pulumi stack output --json --stack dev > outputs\.json`/);
    });
});

describe("doctor with an unusable credential file", () => {
    it("a credential file that holds no credentials: one message, exit 2, no DNS lookup (no host \"undefined\")", async function () {
        this.timeout(120_000);
        const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "doctor-credentials-"));
        try {
            fs.mkdirSync(path.join(tmp, ".alibabacloud"));
            fs.writeFileSync(path.join(tmp, ".alibabacloud", "credentials"), ""); // e.g. left empty, or another profile's
            const lookups = path.join(tmp, "lookups.txt");
            const spy = path.join(tmp, "spy.js");
            fs.writeFileSync(spy, `const dns = require("dns"); const fs = require("fs"); const lookup = dns.lookup;
dns.lookup = function (host, ...rest) { fs.appendFileSync(${JSON.stringify(lookups)}, host + "\\n"); return lookup.call(this, host, ...rest); };`);
            fs.writeFileSync(path.join(tmp, "outputs.json"), JSON.stringify({
                clusterInfo: {
                    name: "dev", region: "cn-hangzhou", kubernetesVersion: "1.36.3", masterInstanceIds: ["i-master0"], apiEndpoint: "192.168.0.10:6443",
                    routeTableId: "vtb-1", podCidr: "172.16.0.0/16",
                    pools: [{ name: "general", mode: "fixed", size: 2, min: 0, max: 2, scalingGroupId: "asg-1", tokenId: "abcdef" }],
                    existingNodes: [],
                    commands: Object.fromEntries(["list-nodes", "pod-owners", "drain", "uncordon", "delete-node", "etcd-member-remove", "reset", "token-create",
                        "token-delete", "join-secrets", "doctor-nodes", "doctor-autoscaler", "doctor-join", "doctor-bootstrap-log"].map((k) => [k, `c-${k}`])),
                },
            }));
            const env: NodeJS.ProcessEnv = {
                PATH: process.env.PATH, HOME: tmp, NO_COLOR: "1", NODE_OPTIONS: `-r ${spy}`,
                ALICLOUD_KUBEADM_ENDPOINT: "http://127.0.0.1:9", // the configured endpoint: an address, so nothing to look up
            };
            const r = await new Promise<{ code: number; out: string }>((resolve) => {
                execFile(process.execPath, [require.resolve("ts-node/dist/bin"), "--transpile-only", path.join(ROOT, "scripts", "doctor.ts"), "--outputs", path.join(tmp, "outputs.json")],
                    { env, encoding: "utf8", timeout: 100_000 }, (err, stdout, stderr) => resolve({ code: err ? (typeof err.code === "number" ? err.code : -1) : 0, out: stdout + stderr }));
            });
            strict.equal(r.code, 2, r.out);
            const looked = fs.existsSync(lookups) ? fs.readFileSync(lookups, "utf8").trim().split("\n") : [];
            strict.deepEqual(looked, [], `DNS lookups beyond the configured endpoint:\n${r.out}`);
            strict.ok((r.out.match(/credential/gi) ?? []).length <= 3, `the credential problem is said once, not per check:\n${r.out}`);
        } finally {
            fs.rmSync(tmp, { recursive: true, force: true });
        }
    });
});
