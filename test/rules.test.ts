/**
 * The rules module (src/rules) is the one source of the rules, limits and defaults that the stack config,
 * the components and the node scripts' renderer share. These tests pin the cases where copies used to
 * disagree: each input must get the same verdict from the config and from the component used directly.
 */
import * as assert from "node:assert/strict";
import { validateClusterConfig } from "../src/config";
import { autoscalerObjects, autoscalerProblems, resolveClusterAutoscalerArgs, type ClusterAutoscalerArgs } from "../src/components/clusterAutoscaler";
import { DEFAULT_AUTOSCALER_SETTINGS, parseDuration } from "../src/rules";

const cluster = (autoscaler: Record<string, unknown>) => ({
    name: "drift", kubernetesVersion: "1.34.2", zones: ["cn-hangzhou-h"],
    nodePools: [{ name: "elastic", instanceType: "ecs.c7.xlarge", autoscale: { min: 0, max: 3 } }],
    autoscaler,
});
const component: ClusterAutoscalerArgs = {
    region: "cn-hangzhou", kubernetesVersion: "1.34.2", pools: [{ name: "elastic", min: 0, max: 3, scalingGroupId: "asg-1" }],
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
