import * as assert from "assert";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { synthesize } from "../scripts/synth";

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
            assert.strictEqual(n("alicloud:ecs/securityGroup:SecurityGroup"), 2);
            assert.ok(rows.every((r) => r.type === "alicloud-kubeadm:index:Cluster" || r.parent), "every resource but the root has a parent");
            assert.ok(fs.statSync(path.join(out, stack, "userdata")).isDirectory());
            assert.ok(fs.statSync(path.join(out, stack, "manifests")).isDirectory());
        });
    }

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
            '    kubernetesVersion: "1.34.2"',
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

    it("the CLI exits 1 and prints <file>: <path>: <reason> on bad config", async () => {
        const { spawnSync } = await import("child_process");
        const file = path.join(out, "Pulumi.cli.yaml");
        fs.writeFileSync(file, "config:\n  alicloud-kubeadm:cluster: { name: cli, kubernetesVersion: '1.34.2', zones: [a], controlPlane: { count: 4 } }\n");
        const res = spawnSync(process.execPath, [require.resolve("ts-node/dist/bin"), "--transpile-only", path.join(__dirname, "..", "scripts", "synth.ts"), file, "--out", out], { encoding: "utf8" });
        assert.strictEqual(res.status, 1, res.stderr);
        assert.match(res.stderr, new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}: controlPlane\\.count: must be 1, 3 or 5`, "m"));
        assert.match(res.stderr, /: alicloud:region: is not set/);
        assert.doesNotMatch(res.stderr, /\n\s+at /, "no stack trace");
    });
});
