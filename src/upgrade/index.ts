// Upgrades (docs/upgrades.md): the cluster's running version read from the cluster, the checks before a move, the
// control plane one master at a time, then the nodes in place. One file per concern.
export * from "./status";
export * from "./run";
export * from "./gate";
export * from "./preflight";
export * from "./controlPlane";
export * from "./nodes";
export * from "./instanceType";
