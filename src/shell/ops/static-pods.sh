#!/bin/bash
# static-pods (on a master, read-only): the control-plane static pods of the master whose Node is AK_NODE, as its
# running kubelet runs them and as their mirror pods show them, for the upgrade's gate after a master's steps
# (src/upgrade/gate.ts waitForStaticPods). Tab-separated lines, gzip+Base64:
#   kubelet <pod name> <uid> <source>   each pod the running kubelet has, from its own /pods (through the API server's
#                                       node proxy; fails while the kubelet does not answer). A static pod's uid is the
#                                       hash the kubelet made of its manifest (docs/upstream.md#static-pod-hash).
#   mirror <pod name> <node> <config hash> <Ready>   the mirror pods etcd-, kube-apiserver-, kube-controller-manager-
#                                       and kube-scheduler-<node> in kube-system, by name (any kubelet may post a pod
#                                       labelled as one), with the node they are bound to and annotation
#                                       kubernetes.io/config.mirror: the hash of the static pod they mirror, as the
#                                       kubelet compares it (set when the pod is created, never changed after:
#                                       docs/upstream.md#static-pod-hash; config.hash is anyone's who may patch pods).
# Every value goes through the template's `js` escaper (kubectl_template.sh ak_tvalue): the kubelet writes its /pods
# answer and its mirror pods. The kubelet's list is a PodList that kubectl prints offline (`label --local`: the label
# is set on the printed copy only, nothing is sent) so it goes through the same template. `--overwrite`: whoever binds a
# pod to this master writes its labels, and one already labelled alicloud-kubeadm/read=<other> would fail kubectl.
o=$AK_TO c=$AK_TC tab=$AK_TTAB nl=$AK_TNL
# `label --local` prints each pod of the list on its own: the template is one pod's line.
kubelet="$(ak_tvalue .metadata.name)${tab}$(ak_tvalue .metadata.uid)${tab}$(ak_tkeyed .metadata.annotations kubernetes.io/config.source)${nl}"
mirror="${o}range .items${c}$(ak_tvalue .metadata.name)${tab}$(ak_tvalue .spec.nodeName)${tab}"
mirror+="$(ak_tkeyed .metadata.annotations kubernetes.io/config.mirror)${tab}$(ak_tready .status)${nl}${o}end${c}"
node=${AK_NODE,,} # the kubelet names a static pod <name>-<node name in lower case>
pods=$(ak_kubectl get --raw "/api/v1/nodes/${AK_NODE}/proxy/pods") || ak_fail "the kubelet of ${AK_NODE} does not answer (yet)"
{
  printf '%s' "$pods" | ak_kubectl label --local --overwrite -f - alicloud-kubeadm/read=1 -o "go-template=${kubelet}" | sed 's/^/kubelet\t/'
  ak_kubectl get pods -n kube-system --ignore-not-found -o "go-template=${mirror}" \
    "etcd-${node}" "kube-apiserver-${node}" "kube-controller-manager-${node}" "kube-scheduler-${node}" | sed 's/^/mirror\t/'
} | ak_compact
