#!/bin/bash
# list-nodes (on a master): one tab-separated line per Node — name, provider id, Ready status, unschedulable,
# podCIDR, old pool label (set by the node), creation time, removal mark (annotation alicloud-kubeadm/removing),
# pool label (set by the admission service), InternalIP address(es), the Ready condition's lastTransitionTime, the
# upgrade's and the resize's drain marks (annotations alicloud-kubeadm/upgrading, alicloud-kubeadm/resizing) — gzip+Base64
# (`kubectl -o json` is ~5 KB a node; this is ~15 bytes).
# Parameter AK_SELECTOR: a label selector, or empty for every Node.
selector=()
if [ -n "$AK_SELECTOR" ]; then selector=(-l "$AK_SELECTOR"); fi
jsonpath='{range .items[*]}{.metadata.name}{"\t"}{.spec.providerID}{"\t"}{.status.conditions[?(@.type=="Ready")].status}{"\t"}'
jsonpath+='{.spec.unschedulable}{"\t"}{.spec.podCIDR}{"\t"}{.metadata.labels.alicloud-kubeadm/pool}{"\t"}{.metadata.creationTimestamp}{"\t"}'
jsonpath+='{.metadata.annotations.alicloud-kubeadm/removing}{"\t"}{.metadata.labels.node-restriction\.kubernetes\.io/alicloud-kubeadm-pool}{"\t"}'
jsonpath+='{.status.addresses[?(@.type=="InternalIP")].address}{"\t"}{.status.conditions[?(@.type=="Ready")].lastTransitionTime}{"\t"}'
jsonpath+='{.metadata.annotations.alicloud-kubeadm/upgrading}{"\t"}{.metadata.annotations.alicloud-kubeadm/resizing}{"\n"}{end}'
ak_kubectl get nodes "${selector[@]}" -o "jsonpath=${jsonpath}" | ak_compact
