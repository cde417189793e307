#!/bin/bash
# drain (on a master): cordon the Node and evict its pods through the eviction API, so PodDisruptionBudgets hold.
# Parameters: AK_NODE, AK_TIMEOUT (seconds), AK_FORCE (true: also delete pods without a controller),
# AK_SKIP_WAIT (seconds; on a NotReady node stop waiting for evicted pods after that long; 0: wait).
args=(drain "$AK_NODE" --ignore-daemonsets --delete-emptydir-data "--timeout=${AK_TIMEOUT}s")
if [ "$AK_SKIP_WAIT" != 0 ]; then args+=("--skip-wait-for-delete-timeout=${AK_SKIP_WAIT}"); fi
if [ "$AK_FORCE" = true ]; then args+=(--force); fi
ak_kubectl "${args[@]}"
