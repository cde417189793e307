// Joining through admission: the rendered userdata of every pool and auto-mode existing node, and the saved
// attach command of manual ones, carry no bootstrap token variable or value at all (mock graph), and no
// BootstrapToken is created for them. Their script asks the admission endpoints instead.
import * as assert from "assert";
import * as fs from "fs";
import * as path from "path";
import * as pulumi from "@pulumi/pulumi";
import * as YAML from "yaml";
import { installMocks, type Recorder } from "../testing/mockRuntime";
import { parseClusterConfig } from "../src/config";
import type { NodeCommandIds } from "../src/rules";
import { unpackScript } from "./tools";

const TOKEN_VALUE = /[a-z0-9]{6}\.[a-z0-9]{16}/;

describe("joining through admission: no token in userdata (mock graph)", () => {
    const CA_HASH = `sha256:${"ab".repeat(32)}`;
    const PIN = `sha256:${"ef".repeat(32)}`;
    const ENDPOINTS = ["192.168.0.10:10443", "192.168.16.10:10443"];
    let recorder: Recorder;

    before(async () => {
        recorder = installMocks({ stack: "admission-join-test" });
        const { NodePool } = await import("../src/components/nodePool");
        const { ExistingNode, createAttachCommand } = await import("../src/components/existingNode");
        const doc = YAML.parse(fs.readFileSync(path.join(__dirname, "..", "stacks", "Pulumi.dev.yaml"), "utf8"));
        const config = parseClusterConfig(doc.config["alicloud-kubeadm:cluster"], doc.config["alicloud:region"]);
        const common = {
            config, apiEndpoint: "192.168.0.10:6443", caCertHash: pulumi.secret(CA_HASH), masterInstanceId: "i-master0",
            commands: { "list-nodes": "c-list" } as unknown as NodeCommandIds, routeTableId: "vtb-dev", admissionEndpoints: pulumi.output(ENDPOINTS),
            admissionPin: PIN,
            registeredWithAdmission: true, // as the Cluster registers its own pools and nodes
        };
        for (const pool of config.nodePools) {
            new NodePool(`adm-pool-${pool.name}`, {
                ...common, pool, vswitchIds: ["vsw-h"], securityGroupIds: ["sg-nodes"], imageId: "ubuntu_24_04_x64_20G_alibase_20260101.vhd",
                tags: { "alicloud-kubeadm/cluster": "dev" },
            });
        }
        const node = { instanceId: "i-bp1autoauto", mode: "auto" as const, replaceSystemDisk: true, removeWithoutReset: false, labels: {}, taints: [] };
        new ExistingNode("adm-node-auto", { ...common, node, imageId: "ubuntu_24_04_x64_20G_alibase_20260101.vhd" });
        createAttachCommand("adm-attach", { config, apiEndpoint: common.apiEndpoint, caCertHash: common.caCertHash, admissionEndpoints: common.admissionEndpoints, admissionPin: PIN }, {});
        await recorder.settle();
    });

    it("creates no bootstrap token for pools or existing nodes", () => {
        const tokens = recorder.ofType("pulumi-nodejs:dynamic:Resource").filter((r) => /token/i.test(r.name));
        assert.deepStrictEqual(tokens.map((t) => t.name), []);
    });

    it("every pool's userdata and the auto node's script have no token variable or value, and ask the admission endpoints", () => {
        const configs = recorder.ofType("alicloud:ess/scalingConfiguration:ScalingConfiguration");
        assert.strictEqual(configs.length, 2);
        const membership = recorder.ofType("pulumi-nodejs:dynamic:Resource").find((r) => r.name === "adm-node-auto-membership")!;
        const delivered = [...configs.map((c) => c.rawInputs.userData as string), membership.rawInputs.userData as string];
        for (const packed of delivered) {
            assert.ok(packed.startsWith("#!/bin/bash"));
            const header = packed.slice(0, packed.indexOf("\nak_packed="));
            const script = unpackScript(packed);
            assert.ok(header.includes("readonly AK_CA_CERT_HASHES="), "the header is where parameters are");
            assert.ok(!header.includes("TOKEN"), "no token variable among the parameters");
            assert.ok(!/^readonly AK_BOOTSTRAP_TOKEN/m.test(script));
            assert.ok(!TOKEN_VALUE.test(script.replace(/\[a-z0-9\]\{6\}\\\.\[a-z0-9\]\{16\}/g, "")), "no token value");
            assert.match(script, new RegExp(`^readonly AK_ADMISSION_ENDPOINTS='${ENDPOINTS.join(",")}'$`, "m"));
            assert.match(script, new RegExp(`^readonly AK_ADMISSION_PIN='${PIN}'$`, "m"));
            assert.match(script, /^ak_admission_token\(\) \{$/m, "the admission client is in the script");
        }
    });

    it("the saved attach command of manual nodes is a bootstrap with endpoints and the pin of the service's key only", () => {
        const cmd = recorder.ofType("alicloud:ecs/command:Command").find((r) => r.name === "adm-attach")!;
        const script = Buffer.from(cmd.rawInputs.commandContent as string, "base64").toString("utf8");
        assert.ok(!TOKEN_VALUE.test(script) && !script.includes("AK_BOOTSTRAP_TOKEN"));
        assert.ok(script.includes(PIN) && ENDPOINTS.every((e) => script.includes(e)));
        assert.ok(script.endsWith("# AK_NODE_LABELS={{labels}}\n# AK_NODE_TAINTS={{taints}}\n# AK_CHANNEL={{channel}}\n"), "its parameters are its last lines, after the final exit");
        assert.strictEqual(script.match(/\{\{/g)?.length, 3, "and nowhere else (its own code does not spell a placeholder)");
    });
});

describe("Cluster with admission on (whole stack under mocks)", function () {
    this.timeout(120_000);
    const os = require("os") as typeof import("os");
    const out = fs.mkdtempSync(path.join(os.tmpdir(), "admission-cluster-"));
    after(() => fs.rmSync(out, { recursive: true, force: true }));

    it("runs the service on the masters, and no pool or existing node has a token", async () => {
        const { synthesize } = await import("../scripts/synth");
        const { execFileSync } = await import("child_process");
        const pem = execFileSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "/dev/null",
            "-subj", "/CN=test-identity", "-days", "2"], { stdio: ["ignore", "pipe", "ignore"] }).toString();
        const doc = YAML.parse(fs.readFileSync(path.join(__dirname, "..", "examples", "Pulumi.existing-nodes.yaml"), "utf8"));
        doc.config["alicloud-kubeadm:cluster"].admission = { identityCertificate: pem };
        const file = path.join(out, "Pulumi.admission.yaml");
        fs.writeFileSync(file, YAML.stringify(doc));
        const result = await synthesize(file, out);
        assert.deepStrictEqual(result.problems, []);
        const tokens = result.resources.filter((r) => r.type === "pulumi-nodejs:dynamic:Resource" && /-token$/.test(r.name));
        assert.deepStrictEqual(tokens.map((t) => t.name), [], "no BootstrapToken for pools or existing nodes");
        const ds = result.resources.find((r) => r.type === "kubernetes:apps/v1:DaemonSet" && r.name.includes("alicloud-kubeadm-admission"))!;
        const spec = ds.rawInputs.spec as { template: { spec: { hostNetwork: boolean; nodeSelector: Record<string, string>; containers: Array<{ image: string; ports: Array<{ hostPort: number }> }> } } };
        assert.strictEqual(spec.template.spec.hostNetwork, true);
        assert.deepStrictEqual(Object.keys(spec.template.spec.nodeSelector), ["node-role.kubernetes.io/control-plane"]);
        assert.strictEqual(spec.template.spec.containers[0].ports[0].hostPort, 10443);
        assert.match(spec.template.spec.containers[0].image, /^docker\.io\/library\/node:\d+\.\d+\.\d+-alpine/);
        const cm = result.resources.find((r) => r.type === "kubernetes:core/v1:ConfigMap" && /configmap-kube-system-alicloud-kubeadm-admission$/.test(r.name))!;
        const data = cm.rawInputs.data as Record<string, string>;
        for (const m of ["pacer", "der", "pkcs7", "challenge", "nodes", "admit", "approver", "cloud", "kube", "server"]) assert.ok(data[`${m}.js`]?.includes("use strict"), `${m}.js bundled`);
        const cfg = JSON.parse(data["config.json"]) as { accountId: string; existingNodes: Record<string, string>; tlsKeyFile: string };
        assert.strictEqual(cfg.accountId, "1234567890123456");
        assert.ok(Object.keys(cfg.existingNodes).length > 0);
        // Every pool is registered (a ConfigMap the service reads while it runs), with its group.
        const registrations = result.resources.filter((r) => r.type === "kubernetes:core/v1:ConfigMap" && /alicloud-kubeadm-admission-pool-/.test(r.name));
        assert.deepStrictEqual(registrations.map((r) => (r.rawInputs.data as Record<string, string>).pool).sort(),
            doc.config["alicloud-kubeadm:cluster"].nodePools.map((p: { name: string }) => p.name).sort());
        assert.ok(registrations.every((r) => /^asg-/.test((r.rawInputs.data as Record<string, string>).scalingGroupId)));
        assert.ok(data["identity-signer.pem"].includes("BEGIN CERTIFICATE") && data["attach.sh"].includes("AK_ADMISSION_ENDPOINTS"));
        // Its own key and certificate, from a Secret; nothing of the masters' PKI (no apiserver.key) and no host path at all.
        const pod = spec.template.spec as unknown as { volumes: Array<Record<string, unknown>>; securityContext: { runAsUser: number; runAsNonRoot: boolean } };
        assert.deepStrictEqual(pod.volumes.map((v) => Object.keys(v).filter((k) => k !== "name")[0]).sort(), ["configMap", "secret"]);
        assert.ok(!JSON.stringify(ds.rawInputs).includes("apiserver") && !JSON.stringify(ds.rawInputs).includes("/etc/kubernetes"), "no apiserver.key, nothing of /etc/kubernetes");
        assert.deepStrictEqual([pod.securityContext.runAsUser, pod.securityContext.runAsNonRoot], [65534, true]);
        assert.match(cfg.tlsKeyFile, /^\/etc\/alicloud-kubeadm-admission\/tls\//);
        const tls = result.resources.find((r) => r.type === "kubernetes:core/v1:Secret" && /alicloud-kubeadm-admission-tls$/.test(r.name))!;
        assert.ok(tls.secretInputs.some((p) => p.startsWith("stringData")), "the service's key is a secret input");
        const cert = result.resources.find((r) => r.type === "pulumi-nodejs:dynamic:Resource" && /-admission-tls$/.test(r.name))!;
        assert.ok(cert && cert.secretOutputs.includes("keyPem"), "AdmissionCertificate keeps its key secret");
        const masters = result.resources.filter((r) => r.type === "alicloud:ecs/instance:Instance").length;
        for (const sc of result.resources.filter((r) => r.type === "alicloud:ess/scalingConfiguration:ScalingConfiguration")) {
            const script = sc.rawInputs.userData as string;
            const endpoints = /^readonly AK_ADMISSION_ENDPOINTS='([^']*)'$/m.exec(script)?.[1].split(",") ?? [];
            assert.strictEqual(endpoints.length, masters, "one endpoint per master");
            assert.ok(endpoints.every((e) => /^192\.168\.\d+\.\d+:10443$/.test(e)));
            assert.ok(!/abcdef\.0123456789abcdef/.test(script) && !/^readonly AK_BOOTSTRAP_TOKEN/m.test(script));
            assert.match(script, /^readonly AK_ADMISSION_PIN='sha256:1{64}'$/m, "the pin of the AdmissionCertificate (the mocks' placeholder)");
        }
        // The masters' role may read every pool's membership (fixed pools too) and instances' private IPs.
        const policy = result.resources.find((r) => r.type === "alicloud:ram/policy:Policy" && /-admission-policy$/.test(r.name))!;
        assert.ok(policy, "an admission policy on the masters' role");
        const statements = JSON.parse(policy.rawInputs.policyDocument as string).Statement as Array<{ Action: string[]; Resource: string[] }>;
        const members = statements.find((x) => x.Action.includes("ess:DescribeScalingInstances"))!;
        assert.strictEqual(members.Resource.length, doc.config["alicloud-kubeadm:cluster"].nodePools.length, "one resource per pool group");
        assert.ok(members.Resource.every((r) => /^acs:ess:cn-hangzhou:\*:scalinggroup\//.test(r)), members.Resource.join(", "));
        assert.ok(statements.some((x) => x.Action.includes("ecs:DescribeInstances")));
        assert.ok(result.resources.some((r) => r.type === "alicloud:ram/rolePolicyAttachment:RolePolicyAttachment" && /-admission-policy$/.test(r.name)));
    });
});

describe("a manual existing node through admission (emulator)", () => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { useEmulator } = require("../testing/emulator/fixture") as typeof import("../testing/emulator/fixture");
    const ctx = useEmulator();

    it("nothing is sealed or sent: one InvokeCommand of the bootstrap with labels and taints, then Ready polling", async () => {
        const zlib = await import("zlib");
        const { createCommand, saveNodeCommands } = await import("../testing/savedCommands");
        const { joinExistingNode } = await import("../src/providers/nodeMembership");
        const { renderAdmissionBootstrap } = await import("../src/shell/renderAdmission");
        const { OPERATIONS } = await import("../src/rules");
        const { emu } = ctx;
        const region = "cn-hangzhou";
        const commands = await saveNodeCommands(region);
        const script = renderAdmissionBootstrap(["192.168.0.10:10443"], `sha256:${"cd".repeat(32)}`);
        const attachCommandId = await createCommand(region, { commandName: "test-attach", script, parameters: true, timeoutSeconds: OPERATIONS.attach.timeoutSeconds, description: OPERATIONS.attach.description });
        const master = emu.addInstance().instanceId;
        const node = emu.addInstance().instanceId;
        let joined = false;
        emu.onCommand(/attach\.sh/, () => { joined = true; return { output: "joined\n" }; });
        emu.onCommand(/get nodes/, () => ({ output: zlib.gzipSync(joined ? `node-${node}\t${region}.${node}\tTrue\t\t172.16.1.0/25\texisting\t2026-12-01T10:00:00Z` : "").toString("base64") }));
        const outs = await joinExistingNode({
            region, instanceId: node, mode: "manual", attachCommandId, admission: true, labels: "role=x", taints: "", commands, masterInstanceId: master,
            pollSeconds: 0.02, readyTimeoutSeconds: 5, pollIntervalMs: 10,
        });
        assert.strictEqual(outs.providerId, `${region}.${node}`);
        const onNode = emu.callsOf("InvokeCommand").filter((r) => r.params["InstanceId.1"] === node);
        assert.deepStrictEqual(onNode.map((r) => r.params.CommandId), [attachCommandId], "no channel-open or channel-receive: nothing secret to send");
        assert.deepStrictEqual(Object.keys(JSON.parse(onNode[0].params.Parameters)).sort(), ["channel", "labels", "taints"]);
    });
});
