// The rules, limits, patterns and defaults that the stack config, the components and the node scripts'
// renderer share. No Pulumi import anywhere under src/rules: validating a config loads nothing else.
export * from "./problems";
export * from "./formats";
export * from "./cidr";
export * from "./labels";
export * from "./alibaba";
export * from "./regions";
export * from "./autoscaler";
export * from "./images";
export * from "./network";
export * from "./operations";
export * from "./versions";
export * from "./securityGroups";
export * from "./ram";
export * from "./apiAccess";
export * from "./bake";
export * from "./backup";
export * from "./identity";
export * from "./ssh";
export * from "./architecture";
export * from "./egress";
export * from "./admission";
export * from "./podSecurity";
export * from "./upgrade";
export * from "./spec";
export * from "./rollout";
export * from "./healthRepair";
