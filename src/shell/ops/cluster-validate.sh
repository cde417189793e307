#!/bin/bash
# cluster-validate (on a master, read-only): what a rollout validates before it starts and between its batches
# (docs/rotation.md#validation), as tab-separated lines, gzip+Base64:
#   node <name> <Ready>                                  every Node and the status of its Ready condition
#   deployment <namespace>/<name> <replicas> <available> every Deployment of kube-system and kube-flannel
#   pod <namespace>/<name> <node> <phase>                their pods that are not Ready (finished and terminating ones left out)
#   control-plane <name>                                 the Nodes labelled node-role.kubernetes.io/control-plane (kubeadm's, on
#                                                        every master): one not Ready fails validation
nodes='{range .items[*]}{.metadata.name}{"\t"}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}'
deployments='{range .items[*]}{.metadata.namespace}/{.metadata.name}{"\t"}{.spec.replicas}{"\t"}{.status.availableReplicas}{"\n"}{end}'
pods='{range .items[*]}{.metadata.namespace}/{.metadata.name}{"\t"}{.spec.nodeName}{"\t"}{.status.phase}{"\t"}'
pods+='{.status.conditions[?(@.type=="Ready")].status}{"\t"}{.metadata.deletionTimestamp}{"\n"}{end}'
{
  ak_kubectl get nodes -o "jsonpath=${nodes}" | sed 's/^/node\t/'
  ak_kubectl get nodes -l node-role.kubernetes.io/control-plane -o 'jsonpath={range .items[*]}{.metadata.name}{"\n"}{end}' | sed 's/^/control-plane\t/'
  for ns in kube-system kube-flannel; do
    ak_kubectl get deployments -n "$ns" -o "jsonpath=${deployments}" | sed 's/^/deployment\t/'
    ak_kubectl get pods -n "$ns" -o "jsonpath=${pods}" |
      awk -F '\t' '$1 != "" && $3 != "Succeeded" && $3 != "Failed" && $4 != "True" && $5 == "" { print "pod\t" $1 "\t" $2 "\t" $3 }'
  done
} | ak_compact
