// The masters' RAM role, statement by statement (docs/security.md#ram): each action with the controller and call
// that needs it and the resource form its authorization table allows. Mutating actions name this cluster's
// resources (its route table, its autoscaled scaling groups); reads stay on `*` where the action has no
// resource-level authorization or lists. No Pulumi import: the tests and the docs read the same table.
import { parseVersion } from "./formats";

/** Who calls an action from the masters' role. */
export type RamConsumer = "ccm" | "autoscaler" | "admission";

/** What a statement's resources are scoped to. */
export type RamScope = "all" | "routeTable" | "scalingGroups" | "regionNetworkInterfaces";

/** One action of the masters' role. */
export interface RamAction {
    action: string;
    consumer: RamConsumer;
    /** The controller code path that calls it (docs/security.md#ram cites the source). */
    calledBy: string;
    scope: RamScope;
    /** Whether the resource form is confirmed by the action's own authorization table (else: family form, unconfirmed). */
    confirmed: boolean;
    /** Autoscaler minors that call it (inclusive bounds); undefined = every version. */
    autoscalerMinors?: [number, number];
}

/** Every action the CCM (node, route controllers) and the Cluster Autoscaler (alicloud provider) call. */
export const RAM_ACTIONS: readonly RamAction[] = [
    { action: "vpc:DescribeRouteTableList", consumer: "ccm", calledBy: "route controller: getRouteTables", scope: "all", confirmed: false },
    { action: "vpc:DescribeRouteEntryList", consumer: "ccm", calledBy: "route controller: ListRoutes", scope: "all", confirmed: false },
    { action: "vpc:CreateRouteEntries", consumer: "ccm", calledBy: "route controller: CreateRoutes (batch)", scope: "routeTable", confirmed: false },
    { action: "vpc:CreateRouteEntry", consumer: "ccm", calledBy: "route controller: CreateRoute (fallback)", scope: "routeTable", confirmed: false },
    { action: "vpc:DeleteRouteEntries", consumer: "ccm", calledBy: "route controller: DeleteRoutes (batch)", scope: "routeTable", confirmed: true },
    { action: "vpc:DeleteRouteEntry", consumer: "ccm", calledBy: "route controller: DeleteRoute (fallback)", scope: "routeTable", confirmed: false },
    { action: "ecs:DescribeInstances", consumer: "ccm", calledBy: "node controller: ListInstances; route controller: next hop", scope: "all", confirmed: false },
    { action: "ecs:DescribeNetworkInterfaces", consumer: "ccm", calledBy: "node controller: primary ENI of a new node", scope: "all", confirmed: false },
    { action: "ecs:ModifyNetworkInterfaceAttribute", consumer: "ccm", calledBy: "node controller: source/destination check off", scope: "regionNetworkInterfaces", confirmed: false },
    { action: "ess:DescribeScalingGroups", consumer: "autoscaler", calledBy: "getScalingGroupByID (start-up, refresh)", scope: "scalingGroups", confirmed: false },
    { action: "ess:DescribeScalingConfigurations", consumer: "autoscaler", calledBy: "getScalingGroupConfigurationByID (node template)", scope: "scalingGroups", confirmed: false },
    { action: "ess:DescribeScalingInstances", consumer: "autoscaler", calledBy: "getScalingInstancesByGroup", scope: "scalingGroups", confirmed: false },
    { action: "ess:DescribeScalingRules", consumer: "autoscaler", calledBy: "setCapcityInstanceSize (temporary rule)", scope: "scalingGroups", confirmed: false, autoscalerMinors: [0, 31] },
    { action: "ess:CreateScalingRule", consumer: "autoscaler", calledBy: "setCapcityInstanceSize (temporary rule)", scope: "scalingGroups", confirmed: false, autoscalerMinors: [0, 31] },
    { action: "ess:ModifyScalingRule", consumer: "autoscaler", calledBy: "setCapcityInstanceSize (temporary rule)", scope: "scalingGroups", confirmed: false, autoscalerMinors: [0, 31] },
    { action: "ess:ExecuteScalingRule", consumer: "autoscaler", calledBy: "setCapcityInstanceSize (temporary rule)", scope: "scalingGroups", confirmed: false, autoscalerMinors: [0, 31] },
    { action: "ess:DeleteScalingRule", consumer: "autoscaler", calledBy: "setCapcityInstanceSize (temporary rule)", scope: "scalingGroups", confirmed: false, autoscalerMinors: [0, 31] },
    { action: "ess:ScaleWithAdjustment", consumer: "autoscaler", calledBy: "setCapacityInstanceSize (TotalCapacity)", scope: "scalingGroups", confirmed: false, autoscalerMinors: [32, 999] },
    { action: "ess:ModifyScalingGroup", consumer: "autoscaler", calledBy: "autoScaling client interface (group size)", scope: "scalingGroups", confirmed: false },
    { action: "ess:RemoveInstances", consumer: "autoscaler", calledBy: "DeleteInstances (scale-down, one instance per call)", scope: "scalingGroups", confirmed: false },
    { action: "ecs:DescribeInstanceTypes", consumer: "autoscaler", calledBy: "instance type catalogue (node template)", scope: "all", confirmed: false },
    // The admission service (src/admission/cloud.ts), when on: is the instance a member of one of this cluster's pools
    // (every pool's group, fixed ones too), and what is its private IP.
    { action: "ess:DescribeScalingInstances", consumer: "admission", calledBy: "admission service: pool membership of a joining instance", scope: "scalingGroups", confirmed: false },
    { action: "ecs:DescribeInstances", consumer: "admission", calledBy: "admission service: the joining instance's private IP", scope: "all", confirmed: false },
];

/** Actions granted before this table (docs/security.md#ram) that no deployed controller calls. */
export const RAM_DROPPED_ACTIONS: readonly string[] = ["ess:Describe*", "ess:DetachInstances"];

/** Whether an action changes something (everything but Describe/List/Get). */
export function isMutatingAction(action: string): boolean {
    return !/^[a-z]+:(Describe|List|Get|Query)/.test(action);
}

/** The resources a scope names, for the cluster's region, route table and scaling groups. */
export function ramResources(scope: RamScope, at: { region: string; routeTableId?: string; scalingGroupIds?: string[] }): string[] {
    switch (scope) {
        case "all": return ["*"];
        case "routeTable": return [`acs:vpc:${at.region}:*:routetable/${at.routeTableId}`];
        case "scalingGroups": return (at.scalingGroupIds ?? []).map((id) => `acs:ess:${at.region}:*:scalinggroup/${id}`);
        case "regionNetworkInterfaces": return [`acs:ecs:${at.region}:*:networkinterface/*`];
    }
}

/** A RAM policy statement. */
export interface RamStatement { Effect: "Allow"; Action: string[]; Resource: string[] }

/**
 * The policy document of one consumer: one statement per scope (actions of the same scope share it).
 * @param autoscalerVersion The deployed autoscaler version (`1.36.1`): picks the ESS resize path.
 */
export function ramPolicy(consumer: RamConsumer, at: { region: string; routeTableId?: string; scalingGroupIds?: string[]; autoscalerVersion?: string }):
    { Version: "1"; Statement: RamStatement[] } {
    const minor = at.autoscalerVersion ? parseVersion(at.autoscalerVersion)?.[1] ?? 0 : 0;
    const actions = RAM_ACTIONS.filter((a) => a.consumer === consumer
        && (a.autoscalerMinors === undefined || (minor >= a.autoscalerMinors[0] && minor <= a.autoscalerMinors[1])));
    const scopes = [...new Set(actions.map((a) => a.scope))];
    return {
        Version: "1",
        Statement: scopes.map((scope) => ({
            Effect: "Allow" as const,
            Action: actions.filter((a) => a.scope === scope).map((a) => a.action),
            Resource: ramResources(scope, at),
        })),
    };
}
