#!/bin/bash
# uncordon (on a master): undo the cordon of a removal that did not finish, on a Node that stays in the cluster — only
# when this library marked it (annotation alicloud-kubeadm/removing), never a cordon of somebody else's.
# Parameter AK_NODE. Prints uncordoned or not-marked.
# A Node deleted meanwhile has nothing to undo (--ignore-not-found: no output, exit 0).
mark=$(ak_kubectl get node "$AK_NODE" --ignore-not-found -o 'jsonpath={.metadata.annotations.alicloud-kubeadm/removing}')
if [ -z "$mark" ]; then
  echo not-marked
  exit 0
fi
ak_kubectl uncordon "$AK_NODE" >/dev/null
ak_kubectl annotate node "$AK_NODE" alicloud-kubeadm/removing- >/dev/null
echo uncordoned
