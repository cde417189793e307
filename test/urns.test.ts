// World: Pulumi mocks (testing/mockRuntime.ts).
/**
 * Existing stacks keep their resources across upgrades of this library: for the dev and prod stacks as
 * released before the layout change (test/fixtures/urns/Pulumi.<stack>.yaml, with the URNs that release
 * registered), every URN is still registered by today's code — or a resource declares it as an alias.
 * A URN that disappears would make `pulumi up` delete that resource and create a new one (for masters,
 * scaling groups and node memberships: drain and re-join nodes).
 */
import * as assert from "node:assert/strict";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import * as YAML from "yaml";
import { synthesize } from "../scripts/synth";
import { isDocumentationCidr } from "../src/rules";

const FIXTURES = path.join(__dirname, "fixtures", "urns");

/**
 * The released stack file with the documented migrations applied (README "Autoscaled pools with taints",
 * and `network.apiAllowedCidrs` in "Configuration"):
 * an autoscaled pool with a NoSchedule/NoExecute taint and `min: 0` is refused now, so such a pool gets
 * `min: 1`, as the prod stack's `batch` pool did. The fixture itself stays as released; the migration
 * changes no URN (a pool's bounds are inputs, not names).
 */
function migrated(stack: string, dir: string): string {
    const doc = YAML.parse(fs.readFileSync(path.join(FIXTURES, `Pulumi.${stack}.yaml`), "utf8"));
    const pools = (doc.config["alicloud-kubeadm:cluster"].nodePools ?? []) as Array<{ autoscale?: { min: number }; taints?: Array<string | { effect: string }> }>;
    // Released stacks allowed the API port to a documentation range only (RFC 5737), which validation now
    // refuses (a public endpoint no real address may reach); a CIDR is an input, not a name.
    const network = doc.config["alicloud-kubeadm:cluster"].network ?? {};
    if ((network.apiAllowedCidrs ?? []).length > 0 && (network.apiAllowedCidrs as string[]).every(isDocumentationCidr)) {
        network.apiAllowedCidrs = ["47.96.0.0/16"];
    }
    for (const pool of pools) {
        const blocking = (pool.taints ?? []).some((t) => /NoSchedule$|NoExecute$/.test(typeof t === "string" ? t : t.effect) && !/PreferNoSchedule$/.test(typeof t === "string" ? t : t.effect));
        if (pool.autoscale?.min === 0 && blocking) {
            pool.autoscale.min = 1;
        }
    }
    fs.mkdirSync(dir, { recursive: true });
    const file = path.join(dir, `Pulumi.${stack}.yaml`);
    fs.writeFileSync(file, YAML.stringify(doc));
    return file;
}

/**
 * Resources a release deletes on purpose, each with its reason (never a master, scaling group or membership).
 * `cluster-from-vpc` opened every port of masters and nodes to the whole VPC; the security-group split
 * (docs/security.md#security-groups) replaces it with the matrix's rules.
 */
const DELIBERATELY_DELETED = ["$alicloud:ecs/securityGroupRule:SecurityGroupRule::dev-network-cluster-from-vpc",
    "$alicloud:ecs/securityGroupRule:SecurityGroupRule::prod-network-cluster-from-vpc",
    // Admission by cloud identity (docs/admission.md#migration): the pools' and existing nodes' long-lived bootstrap
    // tokens are deleted (kubeadm token delete, by the BootstrapToken's delete) at the end of the `up` that switched
    // the userdata to admission, once nothing refers to them.
    "$pulumi-nodejs:dynamic:Resource::dev-existing-token", "$pulumi-nodejs:dynamic:Resource::dev-pool-general-token",
    "$pulumi-nodejs:dynamic:Resource::dev-pool-elastic-token", "$pulumi-nodejs:dynamic:Resource::prod-pool-general-token",
    "$pulumi-nodejs:dynamic:Resource::prod-pool-elastic-token", "$pulumi-nodejs:dynamic:Resource::prod-pool-batch-token"];

describe("URNs of existing stacks", () => {
    const out = fs.mkdtempSync(path.join(os.tmpdir(), "urns-"));
    after(() => fs.rmSync(out, { recursive: true, force: true }));

    for (const stack of ["dev", "prod"]) {
        it(`${stack}: every URN of the released program is still registered or aliased`, async () => {
            const before = JSON.parse(fs.readFileSync(path.join(FIXTURES, `${stack}.urns.json`), "utf8")) as string[];
            const result = await synthesize(migrated(stack, path.join(out, "stacks")), out);
            assert.deepEqual(result.problems, []);
            const now = new Set(result.resources.flatMap((r) => [r.urn, ...r.aliases]));
            // (the stack program's read of its own recorded outputs, a StackReference, is not a managed resource)
            assert.ok(result.resources.every((r) => r.type === "pulumi:pulumi:StackReference" || r.urn.startsWith(`urn:pulumi:${stack}::`)), "every resource has a URN");
            const missing = before.filter((urn) => !now.has(urn) && !DELIBERATELY_DELETED.some((suffix) => urn.endsWith(suffix)));
            assert.deepEqual(missing, [], `URNs that would be deleted and re-created:\n${missing.join("\n")}`);
        });
    }
});
