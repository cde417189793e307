#!/bin/bash
# doctor-nodes (on a master, read-only): section `nodes` as list-nodes prints them (uncompressed), section
# `conditions` with each Node's Ready and NetworkUnavailable status, reason and message, section `kubelets` with each
# Node's kubelet version, section `apiservers` with each kube-apiserver pod's node and version (its image tag, as
# `kubeadm upgrade plan` reads it); gzip+Base64.
nodes='{range .items[*]}{.metadata.name}{"\t"}{.spec.providerID}{"\t"}{.status.conditions[?(@.type=="Ready")].status}{"\t"}'
nodes+='{.spec.unschedulable}{"\t"}{.spec.podCIDR}{"\t"}{.metadata.labels.alicloud-kubeadm/pool}{"\t"}{.metadata.creationTimestamp}{"\t"}'
nodes+='{.metadata.annotations.alicloud-kubeadm/removing}{"\t"}{.metadata.labels.node-restriction\.kubernetes\.io/alicloud-kubeadm-pool}{"\n"}{end}'
conditions='{range .items[*]}{.metadata.name}{"\t"}{.status.conditions[?(@.type=="Ready")].status}{"\t"}'
conditions+='{.status.conditions[?(@.type=="Ready")].reason}{"\t"}{.status.conditions[?(@.type=="Ready")].message}{"\t"}'
conditions+='{.status.conditions[?(@.type=="NetworkUnavailable")].status}{"\t"}{.status.conditions[?(@.type=="NetworkUnavailable")].reason}{"\n"}{end}'
{
  ak_section nodes ak_kubectl get nodes -o "jsonpath=${nodes}"
  ak_section conditions ak_kubectl get nodes -o "jsonpath=${conditions}"
  ak_section kubelets ak_kubectl get nodes -o 'jsonpath={range .items[*]}{.metadata.name}{"\t"}{.status.nodeInfo.kubeletVersion}{"\n"}{end}'
  ak_section apiservers ak_kubectl get pods -n kube-system -l component=kube-apiserver \
    -o 'jsonpath={range .items[*]}{.spec.nodeName}{"\t"}{.spec.containers[0].image}{"\n"}{end}'
} | ak_compact
