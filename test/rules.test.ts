// World: the functions and files themselves: no cluster, no cloud.
/**
 * The rules module (src/rules) is the one source of the rules, limits and defaults that the stack config,
 * the components and the node scripts' renderer share. These tests pin the cases where copies used to
 * disagree: each input must get the same verdict from the config and from the component used directly.
 */
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { nodeImageList, validateClusterConfig } from "../src/config";
import { autoscalerObjects, autoscalerProblems, resolveClusterAutoscalerArgs, type ClusterAutoscalerArgs } from "../src/components/clusterAutoscaler";
import { networkArgProblems } from "../src/components/network";
import { nodePoolProblems, type NodePoolArgs } from "../src/components/nodePool";
import { renderAttachCommand, renderAttachNode, SAVED_COMMAND_LIMIT_BASE64, USERDATA_HARD_LIMIT_BYTES } from "../src/shell/render";
import {
    collect, DEFAULT_AUTOSCALER_SETTINGS, kubernetesSupportWarning, MAX_NODE_PARAMETER_BYTES, MAX_USERDATA_LABELS_TAINTS_BYTES, nodeFlagTexts,
    operationParameters, parseDuration, pauseVersionFor, type NodeCommandIds, type Taint,
} from "../src/rules";

const cluster = (autoscaler: Record<string, unknown>) => ({
    name: "drift", kubernetesVersion: "1.36.3", zones: ["cn-hangzhou-h"],
    nodePools: [{ name: "elastic", instanceType: "ecs.c7.xlarge", autoscale: { min: 0, max: 3 } }],
    autoscaler,
});
const component: ClusterAutoscalerArgs = {
    region: "cn-hangzhou", kubernetesVersion: "1.36.3", pools: [{ name: "elastic", min: 0, max: 3, scalingGroupId: "asg-1" }],
};
const args = (settings: Partial<typeof DEFAULT_AUTOSCALER_SETTINGS>) =>
    (autoscalerObjects(resolveClusterAutoscalerArgs({ ...component, settings }), ["asg-1"]).find((o) => o.kind === "Deployment") as unknown as {
        spec: { template: { spec: { containers: Array<{ args: string[] }> } } };
    }).spec.template.spec.containers[0].args;

describe("rules: one verdict for the config and the components", () => {
    it("Go durations: 1.5h, 90s, 500ms and 1h30m pass both the config and the ClusterAutoscaler, and are rendered as given", () => {
        for (const d of ["1.5h", "90s", "500ms", "1h30m", "0"]) {
            const result = validateClusterConfig(cluster({ scaleDownUnneededTime: d }), "cn-hangzhou");
            assert.deepEqual(result.errors, [], d);
            assert.equal(result.config!.autoscaler.scaleDownUnneededTime, d);
            assert.deepEqual(autoscalerProblems({ ...component, settings: { scaleDownUnneededTime: d } }), [], d);
            assert.ok(args({ scaleDownUnneededTime: d }).includes(`--scale-down-unneeded-time=${d}`), d);
        }
        assert.equal(parseDuration("1.5h"), 5400);
        assert.equal(parseDuration("1h30m"), 5400);
    });

    it("non-durations are refused by both, with the same reason", () => {
        for (const d of ["ten minutes", "10", "-5m", "1.5", "h", ""]) {
            const fromConfig = validateClusterConfig(cluster({ scaleDownUnneededTime: d }), "cn-hangzhou").errors
                .find((e) => e.startsWith("autoscaler.scaleDownUnneededTime: "));
            const fromComponent = autoscalerProblems({ ...component, settings: { scaleDownUnneededTime: d } })
                .find((p) => p.path === "settings.scaleDownUnneededTime");
            assert.ok(fromConfig && fromComponent, d);
            assert.equal(fromConfig.slice("autoscaler.scaleDownUnneededTime: ".length), fromComponent.reason);
        }
    });

    it("one expander default everywhere: the config's and the component's are the documented least-waste", () => {
        const config = validateClusterConfig(cluster({}), "cn-hangzhou").config!;
        assert.equal(config.autoscaler.expander, "least-waste");
        assert.equal(DEFAULT_AUTOSCALER_SETTINGS.expander, "least-waste");
        assert.ok(args({}).includes("--expander=least-waste"));
        // The docs say so too: no clause about the component's default may call it `random`.
        for (const file of ["README.md", "docs/upstream.md", "docs/architecture.md"]) {
            const text = fs.readFileSync(path.join(__dirname, "..", file), "utf8").replace(/\s+/g, " ");
            for (const clause of text.split(/;\s|\.\s+(?=[A-Z`])|\s\|\s/)) {
                assert.ok(!(/component/.test(clause) && /default/.test(clause) && /`random`/.test(clause)), `${file}: "${clause}"`);
            }
        }
    });

    it("expander chains: a repeat and anything after random are refused by both, with the same reason", () => {
        for (const expander of ["least-waste,least-waste", "random,priority", "priority,random,least-waste"]) {
            const fromConfig = validateClusterConfig(cluster({ expander }), "cn-hangzhou").errors.filter((e) => e.startsWith("autoscaler.expander: ")).map((e) => e.slice("autoscaler.expander: ".length));
            const fromComponent = autoscalerProblems({ ...component, settings: { expander } }).filter((p) => p.path === "settings.expander").map((p) => p.reason);
            assert.ok(fromConfig.length > 0, expander);
            assert.deepEqual(fromConfig, fromComponent, expander);
        }
        for (const expander of ["priority,least-waste,random", "least-nodes", "most-pods,random"]) {
            assert.deepEqual(autoscalerProblems({ ...component, settings: { expander } }), [], expander);
            assert.deepEqual(validateClusterConfig(cluster({ expander }), "cn-hangzhou").errors, [], expander);
        }
    });

    it("a tainted pool scaling from zero: the config and the NodePool component refuse it with the same reason", () => {
        const raw = cluster({});
        raw.nodePools[0] = { ...raw.nodePools[0], taints: ["dedicated=batch:NoSchedule"] } as typeof raw.nodePools[0];
        const fromConfig = validateClusterConfig(raw, "cn-hangzhou").errors.find((e) => e.startsWith("nodePools.0.autoscale.min: "));
        assert.ok(fromConfig);
        const config = validateClusterConfig(cluster({}), "cn-hangzhou").config!;
        const { problems, report } = collect();
        const args = {
            config, pool: { ...config.nodePools[0], taints: [{ key: "dedicated", value: "batch", effect: "NoSchedule" }] },
            vswitchIds: ["vsw-h"], securityGroupIds: ["sg"], imageId: "img", apiEndpoint: "192.168.0.10:6443",
            caCertHash: `sha256:${"0".repeat(64)}`, masterInstanceId: "i-master0", commands: {} as NodeCommandIds,
        } as unknown as NodePoolArgs;
        nodePoolProblems(args, report);
        assert.deepEqual(problems.map((p) => `${p.path}: ${p.reason}`), [`pool.autoscale.min: ${fromConfig.slice("nodePools.0.autoscale.min: ".length)}`]);
        // min 1 is the documented fix, for both.
        const fixed = collect();
        nodePoolProblems({ ...args, pool: { ...args.pool, autoscale: { min: 1, max: 3 } } }, fixed.report);
        assert.deepEqual(fixed.problems, []);
    });

    it("taints in node-role.kubernetes.io/ pass the config, the NodePool component and the renderer", () => {
        const taints = ["node-role.kubernetes.io/gpu:NoSchedule"];
        const raw = cluster({});
        raw.nodePools[0] = { ...raw.nodePools[0], autoscale: { min: 1, max: 3 }, taints } as typeof raw.nodePools[0];
        assert.deepEqual(validateClusterConfig(raw, "cn-hangzhou").errors, []);
        const script = renderAttachNode({
            region: "cn-hangzhou", kubernetesVersion: "1.36.3", apiEndpoint: "192.168.0.10:6443", poolName: "elastic", taints,
            token: "abcdef.0123456789abcdef", caCertHash: `sha256:${"0".repeat(64)}`,
        });
        assert.match(script, /^readonly AK_NODE_TAINTS='node-role\.kubernetes\.io\/gpu:NoSchedule'$/m);
    });

    it("reserved ranges and kubeadm's network sizes: the config and the Network component agree", () => {
        for (const [field, value] of [["podCidr", "100.96.0.0/16"], ["vpcCidr", "100.64.0.0/16"], ["vpcCidr", "169.254.0.0/16"], ["podCidr", "172.16.0.0/29"]] as const) {
            const network = { vpcCidr: "192.168.0.0/16", podCidr: "172.16.0.0/16", [field]: value };
            const fromConfig = validateClusterConfig({ ...cluster({}), network: { ...network, nodeCidrMaskSize: 30 } }, "cn-hangzhou").errors
                .filter((e) => e.startsWith(`network.${field}: `)).map((e) => e.slice(`network.${field}: `.length));
            const fromComponent = networkArgProblems({ clusterName: "drift", zones: ["cn-hangzhou-h"], ...network })
                .filter((p) => p.path === field).map((p) => p.reason);
            assert.ok(fromConfig.length > 0, `${field} ${value}`);
            assert.deepEqual(fromConfig, fromComponent, `${field} ${value}`);
        }
    });

    it("the label/taint bounds the config checks guarantee the cloud's limits: 32 KB userdata, 24 KB per Cloud Assistant invocation", () => {
        const join = { region: "cn-hangzhou", kubernetesVersion: "1.36.3", apiEndpoint: `${"n".repeat(60)}.cn-hangzhou.nlb.aliyuncsslb.com:6443`,
            poolName: "p".repeat(40), token: "abcdef.0123456789abcdef", caCertHash: `sha256:${"a".repeat(64)}` };
        // Valid labels and taints, as many bytes as the userdata bound allows.
        const labels: Record<string, string> = {};
        const taints: Taint[] = [];
        for (let i = 0; ; i++) {
            const next = { ...labels, [`example.com/l${i}`]: "v".repeat(60) };
            const nextTaints = [...taints, { key: `example.com/t${i}`, value: "v".repeat(60), effect: "NoSchedule" as const }];
            const t = nodeFlagTexts(next, nextTaints);
            if (t.labels.length + t.taints.length > MAX_USERDATA_LABELS_TAINTS_BYTES) break;
            Object.assign(labels, next);
            taints.push(nextTaints[nextTaints.length - 1]);
        }
        // A baked pool's userdata also carries node_images.sh and the image list (image.bake).
        const baked = { ...join, nodeImages: nodeImageList({ region: join.region, kubernetesVersion: join.kubernetesVersion, images: {} }) };
        const bare = Buffer.byteLength(renderAttachNode(baked));
        assert.ok(bare > Buffer.byteLength(renderAttachNode(join)), "the baked pool's script is the larger one");
        assert.ok(bare + MAX_USERDATA_LABELS_TAINTS_BYTES + 256 <= USERDATA_HARD_LIMIT_BYTES, `attach userdata without labels is ${bare} bytes: the budget no longer fits`);
        assert.ok(Buffer.byteLength(renderAttachNode({ ...baked, labels, taints })) <= USERDATA_HARD_LIMIT_BYTES);
        // Over Cloud Assistant: the largest saved command plus the largest parameters still fit one invocation.
        const half = "x".repeat(MAX_NODE_PARAMETER_BYTES / 2);
        const params = JSON.stringify({ labels: half, taints: half, channel: "0".repeat(32) });
        assert.ok(SAVED_COMMAND_LIMIT_BASE64 + 4 * Math.ceil(Buffer.byteLength(params) / 3) <= 24 * 1024);
        assert.ok(4 * Math.ceil(Buffer.byteLength(renderAttachCommand(join)) / 3) <= SAVED_COMMAND_LIMIT_BASE64);
        // and the operation's own parameter patterns take that much.
        assert.doesNotThrow(() => operationParameters("attach", { labels: "a=b,".repeat(MAX_NODE_PARAMETER_BYTES / 4).slice(0, MAX_NODE_PARAMETER_BYTES), taints: "", channel: "0".repeat(32) }));
    });

    it("the pause image follows kubeadm's PauseVersion per minor; the support warning reads the table, not the clock", () => {
        assert.deepEqual([31, 33, 34, 35, 36, 37].map(pauseVersionFor), ["3.10", "3.10", "3.10.1", "3.10.1", "3.10.2", "3.10.2"]);
        assert.equal(kubernetesSupportWarning("1.36.3"), undefined);
        assert.match(kubernetesSupportWarning("1.34.2")!, /reached its upstream end of life on 2026-10-27/);
        assert.equal(kubernetesSupportWarning("1.30.0"), undefined, "below the supported range: kubernetesVersionProblem reports it");
    });
});

describe("one error-code table", () => {
    it("classifies every code a caller branches on; DeliveryTimeout is 'agent unreachable' for every caller", async () => {
        const { classify, cannotRunCommands } = await import("../src/cloud/errors");
        const table: Record<string, string> = {
            ClientNotRunning: "agent-unreachable", ClientNotResponse: "agent-unreachable", ClientIsUpgrading: "agent-unreachable",
            ClientNeedUpgrade: "agent-unreachable", DeliveryTimeout: "agent-unreachable", "InvalidInstance.NotMatch": "agent-unreachable",
            InstanceNotRunning: "instance-not-running",
            "InvalidInstance.NotFound": "not-found", "InvalidInstanceId.NotFound": "not-found", InstanceNotExists: "not-found", InstanceReleased: "not-found",
            "InvalidScalingGroupId.NotFound": "not-found", "InvalidRouteEntry.NotFound": "not-found", "InvalidCmdId.NotFound": "not-found",
            "Throttling.User": "retry-later", ServiceUnavailable: "retry-later", SystemBusy: "retry-later",
            ScalingActivityInProgress: "conflict", IncorrectScalingGroupStatus: "conflict", TaskConflict: "conflict", OperationConflict: "conflict",
            IncorrectRouteEntryStatus: "conflict",
            ExecutionTimeout: "timeout", ClientWaitTimeout: "timeout",
            IncorrectInstanceStatus: "fatal", ExitCodeNonzero: "fatal", "Forbidden.RAM": "fatal",
        };
        assert.deepEqual(Object.fromEntries(Object.keys(table).map((c) => [c, classify(c)])), table);
        assert.ok(cannotRunCommands("DeliveryTimeout") && cannotRunCommands("InstanceNotRunning") && !cannotRunCommands("ExitCodeNonzero"));
    });
});
