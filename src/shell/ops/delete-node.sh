#!/bin/bash
# delete-node (on a master): delete the Node objects named; ones already gone are fine. Parameter: AK_NODES (names
# separated by spaces, each checked against the Node name pattern before this script runs).
read -r -a names <<<"$AK_NODES"
ak_kubectl delete node "${names[@]}" --ignore-not-found --wait=false
