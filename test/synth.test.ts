// World: Pulumi mocks (testing/mockRuntime.ts).
import * as assert from "assert";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import fc from "fast-check";
import * as YAML from "yaml";
import { overview, synthesize } from "../scripts/synth";

describe("offline synth", () => {
    const out = fs.mkdtempSync(path.join(os.tmpdir(), "synth-"));
    after(() => fs.rmSync(out, { recursive: true, force: true }));

    const read = (stack: string) => JSON.parse(fs.readFileSync(path.join(out, stack, "resources.json"), "utf8")) as Array<{ type: string; name: string; parent: string | null; inputs: Record<string, unknown> }>;

    for (const [stack, zones] of [["dev", 2], ["prod", 3]] as const) {
        it(`${stack}: writes resources.json with the VPC, one vSwitch per zone, NAT and the security groups`, async () => {
            const result = await synthesize(stack, out);
            assert.deepStrictEqual(result.problems, []);
            const rows = read(stack);
            const n = (type: string) => rows.filter((r) => r.type === type).length;
            assert.strictEqual(n("alicloud:vpc/network:Network"), 1);
            assert.strictEqual(n("alicloud:vpc/switch:Switch"), zones);
            assert.strictEqual(n("alicloud:vpc/natGateway:NatGateway"), 1);
            assert.strictEqual(n("alicloud:vpc/snatEntry:SnatEntry"), zones);
            assert.strictEqual(n("alicloud:ecs/securityGroup:SecurityGroup"), 3);
            // (the stack program's read of its own recorded outputs is not a managed resource: no parent, no URN)
            assert.ok(rows.every((r) => r.type === "alicloud-kubeadm:index:Cluster" || r.type === "pulumi:pulumi:StackReference" || r.parent), "every resource but the root has a parent");
            assert.ok(fs.statSync(path.join(out, stack, "userdata")).isDirectory());
            assert.ok(fs.statSync(path.join(out, stack, "manifests")).isDirectory());
        });
    }

    it("prints an overview after the counts: masters, pools, existing nodes and mode, dynamic resources by role, files, secret names, every warning", async () => {
        const result = await synthesize(path.join(__dirname, "..", "examples", "Pulumi.existing-nodes.yaml"), out);
        assert.deepStrictEqual(result.problems, []);
        const text = overview(result).join("\n");
        assert.match(text, /^masters: 1 × ecs\.g7\.large, .*API endpoint public, port 6443 open to 0\.0\.0\.0\/0$/m);
        assert.match(text, /^  general: size 2, ecs\.g7\.xlarge, zones cn-hangzhou-h, cn-hangzhou-i$/m);
        assert.match(text, /^  elastic: autoscale 0–10, ecs\.c7\.xlarge, zones cn-hangzhou-h, cn-hangzhou-i$/m);
        assert.match(text, /^  i-bp1exampleexample01: manual over Cloud Assistant/m);
        assert.match(text, /^  i-bp1exampleexample02: manual over SSH to root@192\.168\.16\.20:22$/m);
        const dynamic = result.resources.filter((r) => r.type === "pulumi-nodejs:dynamic:Resource").map((r) => r.name);
        for (const name of dynamic) assert.ok(text.includes(name), `${name} listed under its role`);
        assert.doesNotMatch(text, /^  other:/m, "every dynamic resource has a known role");
        assert.doesNotMatch(text, /BootstrapToken/, "nodes join through admission: no bootstrap token");
        const written = (function walk(d: string): string[] {
            return fs.readdirSync(d, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(path.join(d, e.name)) : [path.relative(result.outDir, path.join(d, e.name))]));
        })(result.outDir).sort();
        assert.deepStrictEqual(result.files, written);
        assert.match(text, new RegExp(`^files written to .*: ${written.length}$`, "m"));
        assert.match(text, /^  resource outputs: .*example-join-info \(caCertHash, kubeconfig\)/m);
        assert.match(text, /^  stack outputs: kubeconfig, backupKeys$/m);
        assert.ok(!/abcdef\.0123456789abcdef|placeholder: the real admin kubeconfig|0{64}/.test(text), "names only, no secret value");
        // The default add-on images flannel, its CNI plugin, the CCM and the autoscaler are pulled by tag (no digest to cite).
        const unpinned = ["images.flannel", "images.flannelCniPlugin", "images.cloudControllerManager", "images.clusterAutoscalerRepository"];
        assert.deepStrictEqual(result.warnings.map((w) => w.split(":")[0]), [...unpinned, "network.apiAllowedCidrs.0"]);
        assert.match(text, /^warnings: 5\n  images\.flannel: ghcr\.io\/flannel-io\/flannel:v0\.28\.9 is pulled by tag/m);
        assert.match(text, /^  network\.apiAllowedCidrs\.0: 0\.0\.0\.0\/0 lets every address/m);
    });

    it("is deterministic: two runs give byte-identical output", async () => {
        await synthesize("dev", out);
        const first = fs.readFileSync(path.join(out, "dev", "resources.json"), "utf8");
        await synthesize("dev", out);
        assert.strictEqual(fs.readFileSync(path.join(out, "dev", "resources.json"), "utf8"), first);
    });

    it("bad config: returns every problem with its property path, registers nothing, writes nothing", async () => {
        const file = path.join(out, "Pulumi.broken.yaml");
        fs.writeFileSync(file, [
            "config:",
            "  alicloud:region: cn-hangzhou",
            "  alicloud-kubeadm:cluster:",
            "    name: broken",
            '    kubernetesVersion: "1.36.3"',
            "    zones: [cn-hangzhou-h]",
            "    network: { podCidr: 192.168.1.0/24, serviceCidr: nonsense }",
            "    nodePools: [{ name: a, instanceType: ecs.g7.large, autoscale: { min: 3, max: 1 } }]",
        ].join("\n"));
        const result = await synthesize(file, out);
        assert.deepStrictEqual(result.problems.map((p) => p.split(": ")[0]).sort(),
            ["network.nodeCidrMaskSize", "network.podCidr", "network.serviceCidr", "nodePools.0.autoscale.max"]);
        assert.deepStrictEqual(result.resources, []);
        assert.ok(!fs.existsSync(path.join(out, "broken")));
    });

    /** Writes a stack file into the temp folder. */
    const stackFile = (name: string, lines: string[]) => {
        const file = path.join(out, `Pulumi.${name}.yaml`);
        fs.writeFileSync(file, lines.join("\n") + "\n");
        return file;
    };

    it("a Singapore stack with two zones synthesizes, with upstream package and image sources only", async () => {
        const file = stackFile("sg", [
            "config:",
            "  alicloud:region: ap-southeast-1",
            "  alicloud-kubeadm:cluster:",
            "    name: sg",
            '    kubernetesVersion: "1.36.3"',
            "    zones: [ap-southeast-1a, ap-southeast-1b]",
            "    controlPlane: { count: 3 }",
            "    nodePools:",
            "      - { name: general, instanceType: ecs.g7.xlarge, size: 2 }",
            "      - { name: elastic, instanceType: ecs.c7.xlarge, autoscale: { min: 0, max: 5 } }",
        ]);
        const result = await synthesize(file, out);
        assert.deepStrictEqual(result.problems, []);
        const switches = result.resources.filter((r) => r.type === "alicloud:vpc/switch:Switch").map((r) => r.inputs.zoneId).sort();
        assert.deepStrictEqual(switches, ["ap-southeast-1a", "ap-southeast-1b"]);
        const scripts = result.resources.flatMap((r) => [r.rawInputs.userData, r.rawInputs.commandContent && Buffer.from(String(r.rawInputs.commandContent), "base64").toString()])
            .filter((x): x is string => typeof x === "string");
        assert.ok(scripts.length >= 4, "masters, pools and saved commands");
        const all = scripts.join("\n");
        assert.ok(!/mirrors\.cloud\.aliyuncs\.com|google_containers/.test(all), "no China-only default mirror in any node script");
        assert.match(all, /^readonly AK_IMAGE_REPOSITORY='registry\.k8s\.io'$/m);
        assert.match(all, /^readonly AK_K8S_REPO_URL='https:\/\/pkgs\.k8s\.io\/core:\/stable:\/v1\.36\/'$/m);
        assert.match(all, /^readonly AK_SANDBOX_IMAGE='registry\.k8s\.io\/pause:3\.10\.2'$/m);
        assert.match(all, /^readonly AK_CONTAINERD_RPM_REPO_URL='https:\/\/download\.docker\.com\/linux\/centos'$/m);
    });

    it("a YAML syntax error names the file and the line", async () => {
        const file = stackFile("yamlerr", ["config:", "  alicloud:region: cn-hangzhou", "  alicloud-kubeadm:cluster:", "    name: x", "    zones: [cn-hangzhou-h", "    nodePools: []"]);
        const result = await synthesize(file, out);
        assert.deepStrictEqual(result.resources, []);
        assert.strictEqual(result.problems.length, 1);
        assert.match(result.problems[0], /^YAML syntax error at line 6, column \d+: /);
        const { spawnSync } = await import("child_process");
        const res = spawnSync(process.execPath, [require.resolve("ts-node/dist/bin"), "--transpile-only", path.join(__dirname, "..", "scripts", "synth.ts"), file, "--out", out], { encoding: "utf8" });
        assert.strictEqual(res.status, 1);
        assert.match(res.stderr, new RegExp(`${file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}: YAML syntax error at line 6`));
    });

    it("applies YAML merge keys (<<) as Pulumi's config reader does", async () => {
        const file = stackFile("merge", [
            "config:",
            "  alicloud:region: cn-hangzhou",
            "  alicloud-kubeadm:cluster:",
            "    name: merge",
            '    kubernetesVersion: "1.36.3"',
            "    zones: [cn-hangzhou-h, cn-hangzhou-i]",
            "    nodePools:",
            "      - &pool { name: general, instanceType: ecs.g7.xlarge, size: 1, labels: { team: a } }",
            "      - <<: *pool",
            "        name: second",
        ]);
        const result = await synthesize(file, out);
        assert.deepStrictEqual(result.problems, []);
        assert.strictEqual(result.resources.filter((r) => r.type === "alicloud-kubeadm:index:NodePool").length, 2);
    });

    it("every problem at once, nothing registered: ignored keys, a zone as the region, an unquoted version, a reserved label on an existing node", async () => {
        const file = stackFile("many", [
            "config:",
            "  alicloud:region: cn-hangzhou-h",
            "  alicloud-kubeadm:cluster.controlPlane.count: 3",
            "  alicloud-kubeadm:cluster:",
            "    name: many",
            "    kubernetesVersion: 1.30",
            "    zones: [cn-hangzhou-h, cn-hangzhou-i]",
            "    existingNodes: [{ instanceId: i-bp1exampleexample01, labels: { alicloud-kubeadm/pool: x } }]",
            "    nodePools: [{ name: batch, instanceType: ecs.c7.xlarge, autoscale: { min: 0, max: 3 }, taints: [dedicated=batch:NoSchedule] }]",
            "  nodePools: []",
        ]);
        const result = await synthesize(file, out);
        assert.deepStrictEqual(result.resources, []);
        assert.deepStrictEqual(result.problems.map((p) => p.split(": ")[0]).sort(), [
            "alicloud-kubeadm:cluster.controlPlane.count", "alicloud-kubeadm:nodePools", "alicloud:region",
            "existingNodes.0.labels.alicloud-kubeadm/pool", "kubernetesVersion", "nodePools.0.autoscale.min",
        ]);
        assert.ok(!fs.existsSync(path.join(out, "many")));
    });

    it("a cluster value stored as a JSON string that does not parse: reported once, without the value", async () => {
        const file = stackFile("json", ["config:", "  alicloud:region: cn-hangzhou", `  alicloud-kubeadm:cluster: '{"name": "json", "zones": [cn-hangzhou-h]}'`]);
        const result = await synthesize(file, out);
        assert.deepStrictEqual(result.resources, []);
        assert.deepStrictEqual(result.problems.map((p) => p.split(": ")[0]), ["alicloud-kubeadm:cluster"]);
        assert.match(result.problems[0], /does not parse at line 1, column 28/);
        assert.doesNotMatch(result.problems[0], /cn-hangzhou-h/);
    });

    it("for any mix of valid and invalid edits: either every problem with its path and nothing registered, or a full graph (property)", async () => {
        // Each edit is one field's value, valid or not; a run applies a few of them to the dev stack.
        const edits: Array<[string, (c: Record<string, any>, doc: Record<string, any>) => void]> = [
            ["region unknown", (_c, doc) => { doc["alicloud:region"] = "xx-newland-1"; }],
            ["region a zone", (_c, doc) => { doc["alicloud:region"] = "cn-hangzhou-h"; }],
            ["region malformed", (_c, doc) => { doc["alicloud:region"] = "a-1"; }],
            ["name digit", (c) => { c.name = "9dev"; }],
            ["name long", (c) => { c.name = "n".repeat(41); }],
            ["version number", (c) => { c.kubernetesVersion = 1.3; }],
            ["version old", (c) => { c.kubernetesVersion = "1.34.2"; }],
            ["zone other region", (c) => { c.zones = ["cn-hangzhou-h", "cn-beijing-a"]; }],
            ["labels reserved on existing node", (c) => { c.existingNodes = [{ instanceId: "i-bp1exampleexample01", labels: { "alicloud-kubeadm/x": "y" } }]; }],
            ["labels many", (c) => { c.nodePools[0].labels = Object.fromEntries(Array.from({ length: 19 }, (_, i) => [`l${i}`, "v"])); }],
            ["taint node-role", (c) => { c.nodePools[0].taints = ["node-role.kubernetes.io/infra:NoSchedule"]; }],
            ["taint on zero pool", (c) => { c.nodePools[1].taints = ["x:NoSchedule"]; }],
            ["taint duplicate", (c) => { c.nodePools[0].taints = ["a:NoSchedule", "a=b:NoSchedule"]; }],
            ["tags url", (c) => { c.tags = { a: "https://x" }; }],
            ["tags ok", (c) => { c.tags = { team: "core", "cost-center": "" }; }],
            ["pod cidr reserved", (c) => { c.network.podCidr = "100.100.0.0/16"; }],
            ["service cidr huge", (c) => { c.network.serviceCidr = "10.0.0.0/8"; }],
            ["mask far", (c) => { c.network.podCidr = "172.16.0.0/12"; c.network.nodeCidrMaskSize = 30; }],
            ["quota small", (c) => { c.network.routeEntryQuota = 3; }],
            ["instance type bad", (c) => { c.nodePools[0].instanceType = "g7"; }],
            ["image untagged", (c) => { c.images = { flannel: "ghcr.io/flannel-io/flannel" }; }],
            ["image regex bad", (c) => { c.image = { nameRegex: "(" }; }],
            ["expander bad", (c) => { c.autoscaler.expander = "random,priority"; }],
            ["duration plus", (c) => { c.autoscaler.scaleDownUnneededTime = "+15m"; }],
            ["ignored key", (_c, doc) => { doc["alicloud-kubeadm:cluster.controlPlane.count"] = 3; }],
            ["three masters", (c) => { c.controlPlane.count = 3; }],
            ["singapore", (c, doc) => { doc["alicloud:region"] = "ap-southeast-1"; c.zones = ["ap-southeast-1a", "ap-southeast-1b"]; }],
        ];
        const devDoc = YAML.parse(fs.readFileSync(path.join(__dirname, "..", "stacks", "Pulumi.dev.yaml"), "utf8"));
        let run = 0;
        await fc.assert(fc.asyncProperty(fc.uniqueArray(fc.integer({ min: 0, max: edits.length - 1 }), { minLength: 1, maxLength: 4 }), async (picked) => {
            const doc = structuredClone(devDoc);
            for (const i of picked) edits[i][1](doc.config["alicloud-kubeadm:cluster"], doc.config);
            const file = path.join(out, `Pulumi.prop${run++}.yaml`);
            fs.writeFileSync(file, YAML.stringify(doc));
            const result = await synthesize(file, out);
            const what = picked.map((i) => edits[i][0]).join(", ");
            if (result.problems.length > 0) {
                assert.deepStrictEqual(result.resources, [], `${what}: resources registered although validation failed`);
                for (const p of result.problems) {
                    assert.match(p, /^(alicloud:region|alicloud-kubeadm:[A-Za-z.]+|[A-Za-z]+(\.[A-Za-z0-9/_.-]+)*): \S/, `${what}: a problem without its property path: ${p}`);
                }
            } else {
                assert.ok(result.resources.some((r) => r.type === "alicloud:ecs/instance:Instance"), `${what}: a full graph`);
            }
        }), { numRuns: 15, seed: 16 });
    });

    it("the CLI exits 1 and prints <file>: <path>: <reason> on bad config", async () => {
        const { spawnSync } = await import("child_process");
        const file = path.join(out, "Pulumi.cli.yaml");
        fs.writeFileSync(file, "config:\n  alicloud-kubeadm:cluster: { name: cli, kubernetesVersion: '1.36.3', zones: [a], controlPlane: { count: 4 } }\n");
        const res = spawnSync(process.execPath, [require.resolve("ts-node/dist/bin"), "--transpile-only", path.join(__dirname, "..", "scripts", "synth.ts"), file, "--out", out], { encoding: "utf8" });
        assert.strictEqual(res.status, 1, res.stderr);
        assert.match(res.stderr, new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}: controlPlane\\.count: must be 1, 3 or 5`, "m"));
        assert.match(res.stderr, /: alicloud:region: is not set/);
        assert.doesNotMatch(res.stderr, /\n\s+at /, "no stack trace");
    });
});
