#!/bin/bash
# drain (on a master): mark the Node (annotation alicloud-kubeadm/<AK_MARK>: `removing` for a removal, `upgrading` for
# a version upgrade, `resizing` for a master's new instance type, so a later run can tell this cordon from anyone else's, and a removal's from an upgrade's, and undo it on a
# node that stays), cordon it and evict its pods through the eviction API, so PodDisruptionBudgets hold. kubectl's whole output goes to ${AK_LOG_DIR}/drain-<node>.log on this master; the last
# 8 KB of it are printed (Cloud Assistant keeps 24 KB of output), then `drain-status=<exit code>`.
# Parameters: AK_NODE, AK_TIMEOUT (seconds), AK_FORCE (true: also delete pods without a controller; delete: that, and
# delete pods instead of evicting them, so PodDisruptionBudgets do not hold), AK_SKIP_WAIT (seconds; on a NotReady node
# stop waiting for evicted pods after that long; 0: wait), AK_MARK (removing, upgrading or resizing: checked against that
# pattern before the script runs).
args=(drain "$AK_NODE" --ignore-daemonsets --delete-emptydir-data "--timeout=${AK_TIMEOUT}s")
if [ "$AK_SKIP_WAIT" != 0 ]; then args+=("--skip-wait-for-delete-timeout=${AK_SKIP_WAIT}"); fi
if [ "$AK_FORCE" = true ]; then args+=(--force); fi
if [ "$AK_FORCE" = delete ]; then args+=(--force --disable-eviction); fi
mkdir -p "$AK_LOG_DIR"
log="${AK_LOG_DIR}/drain-${AK_NODE}.log"
rc=0
{
  ak_kubectl annotate node "$AK_NODE" --overwrite "alicloud-kubeadm/${AK_MARK}=$(date -u +%Y-%m-%dT%H:%M:%SZ)" &&
    ak_kubectl "${args[@]}"
} >"$log" 2>&1 || rc=$?
tail -c 8192 "$log"
echo "drain-status=${rc}"
exit "$rc"
