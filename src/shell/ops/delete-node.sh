#!/bin/bash
# delete-node (on a master): delete the Node object; one already gone is fine. Parameter: AK_NODE.
ak_kubectl delete node "$AK_NODE" --ignore-not-found --wait=false
