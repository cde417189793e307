import * as assert from "assert";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { synthesize, type SynthResult } from "../scripts/synth";
import { USERDATA_BUDGET_BYTES } from "../src/shell/render";
import { isMutatingAction } from "../src/rules";
import { headerValue, unpackScript } from "./tools";

describe("ControlPlane (mock graph via the stack program)", () => {
    const out = fs.mkdtempSync(path.join(os.tmpdir(), "cp-"));
    after(() => fs.rmSync(out, { recursive: true, force: true }));
    let dev: SynthResult;
    let prod: SynthResult;
    before(async () => {
        dev = await synthesize("dev", out);
        prod = await synthesize("prod", out);
        assert.deepStrictEqual([dev.problems, prod.problems], [[], []]);
    });
    const ofType = (r: SynthResult, type: string) => r.resources.filter((x) => x.type === type);

    it("dev: one master at a fixed private IP with a public EIP, no load balancer", () => {
        const masters = ofType(dev, "alicloud:ecs/instance:Instance");
        assert.strictEqual(masters.length, 1);
        const m = masters[0];
        assert.strictEqual(m.parent, "dev-control-plane");
        assert.strictEqual(m.inputs.privateIp, "192.168.0.10");
        assert.strictEqual(m.inputs.availabilityZone, "cn-hangzhou-h");
        assert.strictEqual(m.inputs.instanceType, "ecs.g7.large");
        assert.strictEqual(m.inputs.deletionProtection, false);
        assert.strictEqual(ofType(dev, "alicloud:nlb/loadBalancer:LoadBalancer").length, 0);
        const assoc = ofType(dev, "alicloud:ecs/eipAssociation:EipAssociation").filter((a) => a.inputs.instanceType === "EcsInstance");
        assert.strictEqual(assoc.length, 1);
        assert.strictEqual(assoc[0].inputs.instanceId, m.id);

        const script = m.rawInputs.userData as string;
        assert.strictEqual(headerValue(script, "AK_API_ENDPOINT"), "192.168.0.10:6443");
        const eip = ofType(dev, "alicloud:ecs/eipAddress:EipAddress").find((e) => e.name === "dev-control-plane-api-eip")!;
        assert.ok(eip);
        assert.match(headerValue(script, "AK_CERT_SANS") ?? "", /^198\.51\.100\.\d+$/, "the public EIP is a certificate SAN");
        assert.match(script, /^ak_packed=/m, "delivered packed");
        assert.match(unpackScript(script), /kubeadm init --config/);
    });

    it("prod: three masters in three zones behind an internal NLB listening on TCP 6443", () => {
        const masters = ofType(prod, "alicloud:ecs/instance:Instance");
        assert.strictEqual(masters.length, 3);
        assert.deepStrictEqual(masters.map((m) => m.inputs.availabilityZone).sort(), ["cn-shanghai-e", "cn-shanghai-f", "cn-shanghai-g"]);
        assert.ok(masters.every((m) => m.inputs.deletionProtection === true));
        const [nlb] = ofType(prod, "alicloud:nlb/loadBalancer:LoadBalancer");
        assert.strictEqual(nlb.inputs.addressType, "Intranet");
        assert.strictEqual((nlb.inputs.zoneMappings as unknown[]).length, 3);
        const [listener] = ofType(prod, "alicloud:nlb/listener:Listener");
        assert.deepStrictEqual([listener.inputs.listenerProtocol, listener.inputs.listenerPort, listener.inputs.loadBalancerId], ["TCP", 6443, nlb.id]);
        const [group] = ofType(prod, "alicloud:nlb/serverGroup:ServerGroup");
        assert.strictEqual(listener.inputs.serverGroupId, group.id);
        assert.deepStrictEqual((group.inputs.healthCheck as Record<string, unknown>).healthCheckType, "TCP");
        assert.strictEqual((group.inputs.healthCheck as Record<string, unknown>).healthCheckConnectPort, 6443);
        const attachments = ofType(prod, "alicloud:nlb/serverGroupServerAttachment:ServerGroupServerAttachment");
        assert.deepStrictEqual(attachments.map((a) => a.inputs.serverId).sort(), masters.map((m) => m.id).sort());
        assert.ok(attachments.every((a) => a.inputs.port === 6443 && a.inputs.serverGroupId === group.id));
        assert.strictEqual(ofType(prod, "alicloud:ecs/eipAddress:EipAddress").filter((e) => e.parent === "prod-control-plane").length, 0, "no public address");

        // One master after the other: a run that replaces several replaces them in turn (docs/disaster-recovery.md#one-master-at-a-time).
        const byIndex = [0, 1, 2].map((i) => masters.find((m) => m.name === `prod-control-plane-master-${i}`)!);
        for (const i of [1, 2]) assert.ok(byIndex[i].dependencies.includes(byIndex[i - 1].urn), `master ${i} depends on master ${i - 1}`);
        assert.ok(!byIndex[0].dependencies.some((d) => byIndex.some((m) => m.urn === d)), "master 0 depends on no other master");
        const m0 = masters.find((m) => m.name === "prod-control-plane-master-0")!;
        assert.match(headerValue(m0.rawInputs.userData as string, "AK_API_ENDPOINT") ?? "", /^nlb-[0-9a-f]+\..*:6443$/);
    });

    it("prod: masters 1 and 2 have no init userdata and join through ControlPlaneMember with the saved, secret join command", () => {
        const masters = ofType(prod, "alicloud:ecs/instance:Instance");
        for (const m of masters.filter((x) => x.name !== "prod-control-plane-master-0")) {
            assert.strictEqual(m.rawInputs.userData, undefined, `${m.name} must not run kubeadm init`);
        }
        const joins = ofType(prod, "pulumi-nodejs:dynamic:Resource").filter((r) => /-join$/.test(r.name));
        // master 0's member joins a re-created master 0 through the others (docs/disaster-recovery.md#lost-disk-on-master-0)
        assert.deepStrictEqual(joins.map((j) => j.name).sort(), ["prod-master-0-join", "prod-master-1-join", "prod-master-2-join"]);
        const byName = Object.fromEntries(masters.map((m) => [m.name, m.id]));
        assert.strictEqual(joins.find((j) => j.name === "prod-master-1-join")!.inputs.memberInstanceId, byName["prod-control-plane-master-1"]);
        const [command] = ofType(prod, "alicloud:ecs/command:Command").filter((c) => c.inputs.name === "prod-control-plane-join");
        const master0 = joins.find((j) => j.name === "prod-master-0-join")!;
        assert.strictEqual(master0.inputs.memberInstanceId, byName["prod-control-plane-master-0"]);
        assert.deepStrictEqual(master0.inputs.masterInstanceIds, [byName["prod-control-plane-master-1"], byName["prod-control-plane-master-2"]], "master 0 re-joins through the others");
        for (const j of joins) {
            assert.strictEqual(j.inputs.masterInstanceId, byName[j === master0 ? "prod-control-plane-master-1" : "prod-control-plane-master-0"]);
            assert.strictEqual(j.inputs.joinCommandId, command.id, "each member invokes the one saved join command");
            assert.strictEqual(j.rawInputs.joinScript, undefined, "no script travels with the member");
        }
        assert.ok(command.secretInputs.includes("commandContent"), "the join command's content (CA pin) is secret");
        const script = Buffer.from(command.rawInputs.commandContent as string, "base64").toString();
        assert.ok(script.endsWith("\n# AK_CHANNEL={{channel}}\n"), "the token and certificate key arrive sealed on a channel of each invocation");
        assert.ok(!/^readonly AK_(BOOTSTRAP_TOKEN|CERTIFICATE_KEY)=/m.test(script), "neither is a parameter");
        assert.strictEqual(ofType(dev, "pulumi-nodejs:dynamic:Resource").filter((r) => /-join$/.test(r.name)).length, 0);
        assert.strictEqual(ofType(dev, "alicloud:ecs/command:Command").filter((c) => c.inputs.name === "dev-control-plane-join").length, 0, "one master: no join command");
    });

    it("the masters' RAM role carries exactly the actions the CCM, the deployed autoscaler and the admission service call (src/rules/ram.ts), nothing dropped comes back", () => {
        // docs/security.md#ram: CCM v2.14.0 node + route controllers; autoscaler 1.34 (ScaleWithAdjustment from 1.32)
        const expected: Record<string, string[]> = {
            "dev-ccm": ["vpc:DescribeRouteTableList", "vpc:DescribeRouteEntryList", "vpc:CreateRouteEntry", "vpc:DeleteRouteEntry",
                "vpc:CreateRouteEntries", "vpc:DeleteRouteEntries", "ecs:DescribeInstances", "ecs:DescribeNetworkInterfaces",
                "ecs:ModifyNetworkInterfaceAttribute"],
            "dev-autoscaler": ["ess:DescribeScalingGroups", "ess:DescribeScalingConfigurations", "ess:DescribeScalingInstances",
                "ess:ModifyScalingGroup", "ess:RemoveInstances", "ecs:DescribeInstanceTypes", "ess:ScaleWithAdjustment"],
            // The admission service: is the instance a member of a pool (or an existing node) now?
            "dev-admission": ["ess:DescribeScalingInstances", "ecs:DescribeInstances"],
            // etcd backups: PutObject under the cluster's two prefixes of its bucket (test/backupStack.test.ts)
            "dev-backup": ["oss:PutObject"],
        };
        const policies = ofType(dev, "alicloud:ram/policy:Policy");
        assert.deepStrictEqual(policies.map((p) => p.inputs.policyName).sort(), Object.keys(expected).sort());
        for (const p of policies) {
            const doc = JSON.parse(p.inputs.policyDocument as string);
            const actions = doc.Statement.flatMap((s: { Action: string[] }) => s.Action);
            assert.deepStrictEqual([...actions].sort(), [...expected[p.inputs.policyName as string]].sort(), p.name);
            assert.ok(!actions.some((a: string) => a.includes("*")), `${p.name}: no wildcard action (ess:Describe* read every scaling configuration's userdata)`);
        }
        const [role] = ofType(dev, "alicloud:ram/role:Role");
        assert.deepStrictEqual(JSON.parse(role.inputs.assumeRolePolicyDocument as string).Statement[0].Principal.Service, ["ecs.aliyuncs.com"]);
        assert.strictEqual(ofType(dev, "alicloud:ecs/ramRoleAttachment:RamRoleAttachment").length, 1);
        assert.strictEqual(ofType(prod, "alicloud:ecs/ramRoleAttachment:RamRoleAttachment").length, 3);
    });

    for (const stack of ["dev", "prod"] as const) {
        it(`${stack}: every mutating action in resources.json names this cluster's resources (its route table, its autoscaled scaling groups, ENIs of its region)`, () => {
            const r = stack === "dev" ? dev : prod;
            type Row = { type: string; name: string; inputs: Record<string, any> };
            const rows = JSON.parse(fs.readFileSync(path.join(r.outDir, "resources.json"), "utf8")) as Row[];
            const region = /^\s*alicloud:region:\s*(\S+)$/m.exec(fs.readFileSync(r.file, "utf8"))![1];
            // The cluster's own resources, from elsewhere in the synth: the route table the CCM is configured with,
            // the scaling groups the autoscaler is given.
            const inputs = (x: { inputs: unknown }) => x.inputs as any;
            const cloudConfig = inputs(r.resources.find((x) => x.type === "kubernetes:core/v1:ConfigMap" && inputs(x).metadata?.name === "cloud-config")!);
            const routeTable = JSON.parse(cloudConfig.data["cloud-config.conf"]).Global.routeTableIDs as string;
            const caArgs = inputs(r.resources.find((x) => x.type === "kubernetes:apps/v1:Deployment" && inputs(x).metadata?.name === "cluster-autoscaler")!)
                .spec.template.spec.containers[0].args as string[];
            const groups = caArgs.filter((a) => a.startsWith("--nodes=")).map((a) => a.split(":").pop()!);
            assert.ok(groups.length > 0 && routeTable.startsWith("vtb-"));
            const allowed = new Set([
                `acs:vpc:${region}:*:routetable/${routeTable}`,
                ...groups.map((g) => `acs:ess:${region}:*:scalinggroup/${g}`),
                `acs:ecs:${region}:*:networkinterface/*`, // ENI ids are not known in advance (docs/security.md#ram)
                // the cluster's etcd backup prefixes in its own bucket
                ...(() => {
                    const bucket = String(inputs(r.resources.find((x) => x.type === "alicloud:oss/bucket:Bucket")!).bucket);
                    return [`acs:oss:*:*:${bucket}/${stack}/hourly/*`, `acs:oss:*:*:${bucket}/${stack}/daily/*`];
                })(),
            ]);
            const mutating: string[] = [];
            for (const row of rows.filter((x) => x.type === "alicloud:ram/policy:Policy")) {
                for (const st of JSON.parse(row.inputs.policyDocument).Statement as Array<{ Action: string[]; Resource: string[] }>) {
                    for (const action of st.Action.filter(isMutatingAction)) {
                        mutating.push(action);
                        assert.ok(st.Resource.length > 0 && st.Resource.every((res) => allowed.has(res)), `${row.name}: ${action} on ${st.Resource.join(", ")}`);
                    }
                }
            }
            assert.deepStrictEqual(mutating.sort(), ["ecs:ModifyNetworkInterfaceAttribute", "ess:ModifyScalingGroup", "ess:RemoveInstances", "ess:ScaleWithAdjustment",
                "oss:PutObject", "vpc:CreateRouteEntries", "vpc:CreateRouteEntry", "vpc:DeleteRouteEntries", "vpc:DeleteRouteEntry"]);
        });
    }

    it("synth writes the rendered master userdata, within the 20 KiB budget", () => {
        const file = path.join(out, "dev", "userdata", "dev-control-plane-master-0.sh");
        const script = fs.readFileSync(file, "utf8");
        assert.ok(Buffer.byteLength(script) <= USERDATA_BUDGET_BYTES, `${Buffer.byteLength(script)} bytes`);
        assert.match(script, /^#!\/bin\/bash/);
    });
});
