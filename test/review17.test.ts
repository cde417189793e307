/**
 * Regressions found by an adversarial review of issues 16 and 17: each test showed one defect (it failed
 * before its fix): secrets echoed, a misleading zone example, prod's internal endpoint unexplained, components
 * used directly with Outputs, SSH secrets as Pulumi secrets, raw inputs, the provider's region, and doctor with an
 * unusable credential file.
 */
import * as assert from "node:assert/strict";
import { execFile } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import * as pulumi from "@pulumi/pulumi";
import * as YAML from "yaml";
import { parseClusterConfig, validateClusterConfig, type ClusterConfig } from "../src/config";
import { zoneProblem, type NodeCommandIds } from "../src/rules";
import { installMocks, type Recorder } from "../testing/mockRuntime";

const ROOT = path.join(__dirname, "..");
const CA_HASH = `sha256:${"cd".repeat(32)}`;
const TOKEN = "abcdef.0123456789abcdef";

describe("review of issues 16 and 17: regressions", () => {
    describe("validation (pure)", () => {
        const base = () => ({
            name: "sg", kubernetesVersion: "1.36.3", zones: ["ap-southeast-1a", "ap-southeast-1b"],
            nodePools: [{ name: "general", instanceType: "ecs.g7.xlarge", size: 2 }],
        });

        it("a secret of an SSH connection given as a number (an unquoted numeric password in YAML) is not echoed in the error", () => {
            for (const key of ["password", "privateKeyPassword", "privateKey"]) {
                const r = validateClusterConfig({
                    ...base(), existingNodes: [{ instanceId: "i-t4nexampleexample01", connection: { host: "10.0.0.5", [key]: 987654321987 } }],
                } as never, "ap-southeast-1");
                assert.ok(r.errors.some((e) => e.startsWith(`existingNodes.0.connection.${key}: `)), `${key} is refused: ${r.errors.join("; ")}`);
                for (const text of [...r.errors, ...r.warnings]) {
                    assert.ok(!text.includes("987654321987"), `the value of connection.${key} is echoed: ${text}`);
                }
            }
        });

        it("no zones in an international region: one problem at `zones`, and its example is a zone of the region", () => {
            const r = validateClusterConfig({ ...base(), zones: [] }, "ap-southeast-1");
            const zones = r.errors.filter((e) => e.startsWith("zones: "));
            assert.equal(zones.length, 1, `reported once: ${zones.join(" | ")}`);
            for (const example of zones[0].match(/\b[a-z]+-[a-z]+-\d[-a-z]*\b/g) ?? []) {
                assert.equal(zoneProblem(example, "ap-southeast-1"), undefined, `the example "${example}" in "${zones[0]}" is not a zone of ap-southeast-1`);
            }
        });

        it("prod (internal endpoint in the VPC this very `pulumi up` creates): validation warns that the run must reach the new VPC", () => {
            // pulumi up of prod from anywhere outside the new VPC creates masters, NLB, NAT and 9 pool nodes, then
            // ApiServerReady times out (900 s) on the internal endpoint: the half-way failure issue 17 asked to avoid.
            const stack = YAML.parse(fs.readFileSync(path.join(ROOT, "stacks", "Pulumi.prod.yaml"), "utf8")).config;
            const r = validateClusterConfig(stack["alicloud-kubeadm:cluster"], stack["alicloud:region"]);
            assert.deepEqual(r.errors, []);
            assert.ok(r.warnings.some((w) => /^controlPlane\.publicEndpoint: .*(internal|inside the VPC)/i.test(w)),
                `a warning at controlPlane.publicEndpoint about the internal endpoint; got: ${JSON.stringify(r.warnings)}`);
        });
    });

    describe("components used directly", () => {
        let recorder: Recorder;
        let m: {
            ExistingNode: typeof import("../src/components/existingNode").ExistingNode;
            NodePool: typeof import("../src/components/nodePool").NodePool;
        };
        before(async () => {
            recorder = installMocks({ stack: "review17" });
            m = { ...await import("../src/components/existingNode"), ...await import("../src/components/nodePool") };
        });
        beforeEach(() => recorder.resources.splice(0));

        const config = (): ClusterConfig => parseClusterConfig({
            name: "dev", kubernetesVersion: "1.36.3", zones: ["cn-hangzhou-h", "cn-hangzhou-i"],
            nodePools: [{ name: "general", instanceType: "ecs.g7.xlarge", size: 2 }],
            existingNodes: [{ instanceId: "i-bp1exampleexample01", mode: "manual", connection: { host: "192.168.16.20", password: "hunter2-secret" } }],
        }, "cn-hangzhou");
        const join = (c: ClusterConfig) => ({
            config: c, apiEndpoint: "192.168.0.10:6443", caCertHash: CA_HASH, masterInstanceId: "i-master0",
            commands: { "list-nodes": "c-list" } as unknown as NodeCommandIds,
        });
        const registered = async () => {
            await recorder.settle();
            return recorder.resources.map((r) => `${r.type} ${r.name}`);
        };

        /** Either it works, or an InputPropertiesError and nothing registered; never a TypeError after registering. */
        async function worksOrRefusesCleanly(create: () => unknown): Promise<void> {
            try {
                create();
            } catch (err) {
                assert.ok(pulumi.InputPropertiesError.isInstance(err) || pulumi.InputPropertyError.isInstance(err), `an input error, got ${String(err)}`);
                assert.deepEqual(await registered(), [], "nothing registered");
                return;
            }
            await registered();
        }

        it("ExistingNode checks `connection` with the config's rules (an empty host is refused, nothing registered)", async () => {
            const c = config();
            let error: unknown;
            try {
                new m.ExistingNode("e-empty-host", { ...join(c), node: { ...c.existingNodes[0], connection: undefined }, token: TOKEN, connection: { host: "" } });
            } catch (err) {
                error = err;
            }
            assert.ok(pulumi.InputPropertiesError.isInstance(error), `an InputPropertiesError, got ${String(error)}`);
            assert.ok(error.errors.some((e) => e.propertyPath === "connection.host"), error.message);
            assert.deepEqual(await registered(), []);
        });

        it("ExistingNode does not drop node.connection in silence: it runs over SSH or says to pass `connection`", async () => {
            const c = config(); // existingNodes[0] has an SSH connection, as parseClusterConfig returns it
            let error: unknown;
            try {
                new m.ExistingNode("e-node-conn", { ...join(c), node: c.existingNodes[0], token: TOKEN, attachCommandId: "c-attach" });
            } catch (err) {
                error = err;
            }
            if (error !== undefined) {
                assert.ok(pulumi.InputPropertiesError.isInstance(error) && /connection/.test(error.message), String(error));
                assert.deepEqual(await registered(), []);
            } else {
                assert.ok((await registered()).some((r) => r.startsWith("command:remote:Command ")),
                    "node.connection is set, yet the node would be attached over Cloud Assistant and no SSH command is registered");
            }
        });

        it("ExistingNode with an ExistingNodeInput (README's type for existing nodes: no labels/taints): no TypeError after registering", async () => {
            const c = config();
            await worksOrRefusesCleanly(() => new m.ExistingNode("e-raw", {
                ...join(c), node: { instanceId: "i-bp1exampleexample02", mode: "manual" } as never, token: TOKEN, attachCommandId: "c-attach",
            }));
        });

        it("Cluster given an Output where the config wants a string: an InputPropertiesError with the path, not a DataCloneError", async () => {
            // validateClusterConfig → checkableCopy → structuredClone(raw) throws on any Output/function in the config.
            const { Cluster } = await import("../src/components/cluster");
            let error: unknown;
            try {
                new Cluster("outputs", {
                    region: "cn-hangzhou",
                    config: { name: "outputs", kubernetesVersion: "1.36.3", zones: ["cn-hangzhou-h"], existingNodes: [{ instanceId: pulumi.output("i-bp1exampleexample04") as never }] },
                });
            } catch (err) {
                error = err;
            }
            assert.ok(pulumi.InputPropertiesError.isInstance(error), `an InputPropertiesError, got ${String(error)}`);
            assert.ok(error.errors.some((e) => e.propertyPath === "existingNodes.0.instanceId"), error.message);
            assert.deepEqual(await registered(), []);
        });

        it("Cluster takes an existing node's SSH key as a Pulumi secret (config.requireSecret), the way a program holds secrets", async () => {
            // configTypes.ts types connection.privateKey/password as plain strings and validation refuses anything else, so a
            // program that holds the key as a secret Output (requireSecret) cannot pass it; it would have to read the secret
            // config in plain text (config.require, which Pulumi warns about) for the Cluster to wrap it again.
            const { Cluster } = await import("../src/components/cluster");
            let error: unknown;
            try {
                new Cluster("sshsecret", {
                    region: "cn-hangzhou",
                    config: {
                        name: "sshsecret", kubernetesVersion: "1.36.3", zones: ["cn-hangzhou-h"],
                        existingNodes: [{ instanceId: "i-bp1exampleexample03", connection: { host: "192.168.16.20", privateKey: pulumi.secret("-----BEGIN OPENSSH PRIVATE KEY-----") as never } }],
                    },
                });
            } catch (err) {
                error = err;
            }
            assert.equal(error, undefined, `a secret privateKey is refused: ${String(error)}`);
            await recorder.settle();
            const ssh = recorder.resources.find((r) => r.type === "command:remote:Command");
            assert.ok(ssh && ssh.secretInputs.some((k) => k.startsWith("connection")), "the SSH command takes the connection, as a secret");
        });

        it("NodePool with a NodePoolInput (no labels/taints/systemDisk): no TypeError after registering", async () => {
            const c = config();
            await worksOrRefusesCleanly(() => new m.NodePool("p-raw", {
                ...join(c), pool: { name: "raw", instanceType: "ecs.g7.xlarge", size: 2 } as never,
                vswitchIds: ["vsw-1"], securityGroupIds: ["sg-1"], imageId: "img",
            }));
        });
    });

    describe("Cluster used directly with the default alicloud provider", () => {
        it("a Cluster region other than the provider's alicloud:region is refused before anything is registered", async () => {
            // The resources go to the provider's region (cn-hangzhou) while the zones, the dynamic providers' OpenAPI calls
            // and the scripts use args.region: `pulumi up` creates the VPC, then fails on the first vSwitch.
            const recorder = installMocks({ stack: "review17-region", config: { "alicloud:region": "cn-hangzhou" } });
            const { Cluster } = await import("../src/components/cluster");
            let error: unknown;
            try {
                new Cluster("elsewhere", { region: "ap-southeast-1", config: { name: "elsewhere", kubernetesVersion: "1.36.3", zones: ["ap-southeast-1a"] } });
            } catch (err) {
                error = err;
            }
            await recorder.settle();
            assert.ok(pulumi.InputPropertiesError.isInstance(error) && /region/.test(error.message),
                `refused (region vs alicloud:region), got ${String(error)}; registered ${recorder.resources.length} resources`);
            assert.deepEqual(recorder.resources.map((r) => r.name), []);
        });
    });

    describe("doctor", () => {
        it("a credential file that holds no credentials: one message, exit 2, no DNS lookup (no host \"undefined\")", async function () {
            this.timeout(120_000);
            const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "review17-doctor-"));
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
                assert.equal(r.code, 2, r.out);
                const looked = fs.existsSync(lookups) ? fs.readFileSync(lookups, "utf8").trim().split("\n") : [];
                assert.deepEqual(looked, [], `DNS lookups beyond the configured endpoint:\n${r.out}`);
                assert.ok((r.out.match(/credential/gi) ?? []).length <= 3, `the credential problem is said once, not per check:\n${r.out}`);
            } finally {
                fs.rmSync(tmp, { recursive: true, force: true });
            }
        });
    });
});
