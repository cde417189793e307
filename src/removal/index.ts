/**
 * The removal core: one safe, resumable sequence for taking any node out of the cluster (README "How
 * nodes leave"; docs/architecture.md). Every step is idempotent — a target already gone counts as done,
 * with a warning — and retried on transient errors; a step that fails stops that node's removal with an
 * error naming the instance, the step and the fix, so nothing later runs (no release of an undrained
 * node). Running the same `pulumi up` / `destroy` again resumes.
 *
 *   types.ts         what is removed, the options, the report and RemovalError
 *   steps.ts         one node's Kubernetes side: find Node → drain → clear userdata → reset → leave etcd → delete Node
 *   scalingGroup.ts  pool members leaving their ESS group: re-read, unprotect, one call per batch, wait for the activity
 *   routes.ts        the pod routes left behind
 *   batch.ts         several nodes: Kubernetes side a few at a time, each group's batches as nodes are ready, then routes
 *   victims.ts       which pool members go first
 *   scaleIn.ts       shrinking a pool to a size
 *   rotation.ts      one round of a pool's rollout: the surge (one node for a canary; within an autoscaled pool's bounds), which outdated members may leave
 *   rolloutGates.ts  a rollout's validation of the cluster before, between and after batches, and its soak
 *   health.ts        health repair of a fixed pool: which members stayed NotReady too long, the circuit breaker
 */
export * from "./types";
export { CLEARED_USERDATA } from "./steps";
export { removeNode, removeNodes, ESS_BATCH } from "./batch";
export { chooseVictims, type PoolMember } from "./victims";
export { readPoolMembers, removeMembers, scaleInPool, type ScaleInPool } from "./scaleIn";
export { inCanary, planRotationRound, rolloutPreview, surgeTarget, type PoolLimits, type RolloutBounds, type RotationRound } from "./rotation";
export { parseClusterHealth, readClusterHealth, soak, validateRollout, validationProblems, type ClusterHealth, type GateContext } from "./rolloutGates";
export { planHealthRepair, readyWorkers, repairPool, type HealthPlan, type PoolView, type RepairPool, type UnhealthyMember } from "./health";
