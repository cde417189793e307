// World: Pulumi mocks (testing/mockRuntime.ts).
/**
 * The security-group matrix documented in docs/security.md#security-groups is the one src/rules/securityGroups.ts
 * builds, and the one the offline synth registers for the dev and prod stacks, rule for rule.
 */
import * as assert from "node:assert/strict";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { securityGroupMatrix, type SecurityGroupLayout, type SecurityGroupRuleSpec } from "../src/rules";
import { synthesize, type SynthResult } from "../scripts/synth";

const DOC = path.join(__dirname, "..", "docs", "security.md");

/** The documented rows, expanded for a layout (`each vSwitch` / `each apiAllowedCidrs` give one rule each, `<i>` numbered). */
function documentedRules(l: SecurityGroupLayout): string[] {
    const text = fs.readFileSync(DOC, "utf8");
    const table = /<!-- security-group-matrix[^>]*-->\n([\s\S]*?)<!-- end security-group-matrix -->/.exec(text)?.[1];
    assert.ok(table, "docs/security.md has the marked matrix table");
    const groups: Record<string, string> = { masters: "master", nodes: "node", api: "api" };
    const rows = table.split("\n").filter((l) => l.startsWith("| ") && !l.startsWith("| group") && !l.startsWith("|---"))
        .map((line) => line.split("|").slice(1, -1).map((c) => c.trim()));
    const out: string[] = [];
    for (const [group, rule, direction, protocol, ports, from, policy, priority] of rows) {
        const name = rule.replace(/\\/g, "");
        const sources: Array<[string, string]> = from === "each vSwitch" ? l.vswitchCidrs.map((c, i) => [name.replace("<i>", String(i)), c])
            : from === "each apiAllowedCidrs" ? l.apiAllowedCidrs.map((c, i) => [name.replace("<i>", String(i)), c])
            : [[name, from === "VPC CIDR" ? l.vpcCidr : from === "pod CIDR" ? l.podCidr : from === "masters" ? "@master" : from === "nodes" ? "@node" : from]];
        for (const [n, src] of sources) out.push([groups[group], n, direction, protocol, ports, src, policy, priority].join(" "));
    }
    return out.sort();
}

const key = (r: SecurityGroupRuleSpec) =>
    [r.group, r.name, r.direction, r.protocol, r.ports, "cidr" in r.source ? r.source.cidr : `@${r.source.group}`, r.policy, r.priority].join(" ");

describe("security groups: documented matrix = rules module = synth", () => {
    const out = fs.mkdtempSync(path.join(os.tmpdir(), "sg-"));
    after(() => fs.rmSync(out, { recursive: true, force: true }));

    it("the documented table is exactly securityGroupMatrix, for a layout with 3 vSwitches and 2 allowed CIDRs", () => {
        const layout = { vpcCidr: "192.168.0.0/16", podCidr: "172.16.0.0/16", vswitchCidrs: ["192.168.0.0/20", "192.168.16.0/20", "192.168.32.0/20"], apiAllowedCidrs: ["203.0.113.0/24", "198.51.100.7/32"] };
        assert.deepEqual(securityGroupMatrix(layout).map(key).sort(), documentedRules(layout));
    });

    for (const stack of ["dev", "prod"]) {
        it(`${stack}: the synthesized rules are the documented matrix for the stack's layout`, async () => {
            const r: SynthResult = await synthesize(stack, out);
            assert.deepEqual(r.problems, []);
            const rows = JSON.parse(fs.readFileSync(path.join(r.outDir, "resources.json"), "utf8")) as Array<{ type: string; name: string; id?: string; inputs: Record<string, any> }>;
            const sgs = r.resources.filter((x) => x.type === "alicloud:ecs/securityGroup:SecurityGroup");
            const groupOf = (id: string) => {
                const sg = sgs.find((g) => g.id === id);
                return sg ? { [`${stack}-network-master-sg`]: "master", [`${stack}-network-cluster-sg`]: "node", [`${stack}-network-api-sg`]: "api" }[sg.name] : undefined;
            };
            const vpc = rows.find((x) => x.type === "alicloud:vpc/network:Network")!.inputs.cidrBlock as string;
            const vswitchCidrs = rows.filter((x) => x.type === "alicloud:vpc/switch:Switch").map((x) => x.inputs.cidrBlock as string);
            const cfg = fs.readFileSync(r.file, "utf8");
            const podCidr = /podCidr:\s*(\S+)/.exec(cfg)![1];
            const allowed = /apiAllowedCidrs:\s*\[([^\]]*)\]/.exec(cfg)?.[1].split(",").map((x) => x.trim().replace(/^["']|["']$/g, "")).filter(Boolean) ?? [];
            const synthesized = r.resources.filter((x) => x.type === "alicloud:ecs/securityGroupRule:SecurityGroupRule" && !x.name.endsWith("-api-from-nat")).map((x) => {
                const i = x.inputs as Record<string, any>;
                const src = i.cidrIp ?? `@${groupOf(i.sourceSecurityGroupId)}`;
                return [groupOf(i.securityGroupId), x.name.replace(`${stack}-network-`, ""), i.type, i.ipProtocol, i.portRange, src, i.policy, i.priority].join(" ");
            }).sort();
            assert.deepEqual(synthesized, documentedRules({ vpcCidr: vpc, podCidr, vswitchCidrs, apiAllowedCidrs: allowed }));
            const masters = r.resources.filter((x) => x.type === "alicloud:ecs/instance:Instance");
            for (const m of masters) assert.deepEqual((m.inputs.securityGroups as string[]).map(groupOf), ["master"], `${m.name}: masters only in the masters' group`);
            for (const c of r.resources.filter((x) => x.type === "alicloud:ess/scalingConfiguration:ScalingConfiguration")) {
                assert.deepEqual((c.inputs.securityGroupIds as string[]).map(groupOf), ["node"], `${c.name}: pool nodes only in the nodes' group`);
            }
        });
    }
});
