#!/bin/bash
# uncordon (on a master): undo the cordon of a removal or an upgrade that did not finish, on a Node that stays in the
# cluster — only when this library marked it for that purpose (annotation alicloud-kubeadm/<AK_MARK>: removing,
# upgrading or resizing), never a cordon of somebody else's, nor an upgrade's cordon when undoing a removal's (or the reverse).
# Parameters AK_NODE, AK_MARK. Prints uncordoned or not-marked.
# A Node deleted meanwhile has nothing to undo (--ignore-not-found: no output, exit 0).
mark=$(ak_kubectl get node "$AK_NODE" --ignore-not-found -o "jsonpath={.metadata.annotations.alicloud-kubeadm/${AK_MARK}}")
if [ -z "$mark" ]; then
  echo not-marked
  exit 0
fi
ak_kubectl uncordon "$AK_NODE" >/dev/null
ak_kubectl annotate node "$AK_NODE" "alicloud-kubeadm/${AK_MARK}-" >/dev/null
echo uncordoned
