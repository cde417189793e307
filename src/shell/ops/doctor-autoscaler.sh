#!/bin/bash
# doctor-autoscaler (on a master, read-only): the Cluster Autoscaler's Deployment (replicas, ready), its
# status ConfigMap, and the last 200 lines of its log (token secrets blanked, at most 12 KB); gzip+Base64.
autoscaler_log() {
  ak_kubectl -n kube-system logs deployment/cluster-autoscaler --tail=200 | ak_redact | tail -c 12000
}
{
  ak_section deploy ak_kubectl -n kube-system get deployment cluster-autoscaler -o 'jsonpath={.spec.replicas} {.status.readyReplicas}'
  ak_section status ak_kubectl -n kube-system get configmap cluster-autoscaler-status -o 'jsonpath={.data.status}'
  ak_section log autoscaler_log
} | ak_compact
