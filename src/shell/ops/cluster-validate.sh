#!/bin/bash
# cluster-validate (on a master, read-only): what a rollout validates before it starts and between its batches
# (docs/rotation.md#validation), as tab-separated lines, gzip+Base64:
#   node <name> <Ready> <NetworkUnavailable>             every Node, the status of its Ready condition and of its
#                                                        NetworkUnavailable one (True until the CCM created its route)
#   deployment <namespace>/<name> <replicas> <available> every Deployment of kube-system and kube-flannel
#   pod <namespace>/<name> <node> <phase>                their pods that are not Ready (finished and terminating ones left out)
#   control-plane <name>                                 the Nodes labelled node-role.kubernetes.io/control-plane (kubeadm's, on
#                                                        every master): one not Ready fails validation
# Node and pod values a node writes (its Ready condition, its pods' phase and conditions) are escaped (kubectl_template.sh ak_tvalue):
# no value can make up a line (a forged `node <master> True`) or a column.
o=$AK_TO c=$AK_TC tab=$AK_TTAB
nodes="${o}range .items${c}$(ak_tvalue .metadata.name)${tab}$(ak_tready .status)${tab}$(ak_tcondition NetworkUnavailable .status)${AK_TNL}${o}end${c}"
deployments='{range .items[*]}{.metadata.namespace}/{.metadata.name}{"\t"}{.spec.replicas}{"\t"}{.status.availableReplicas}{"\n"}{end}'
pods="${o}range .items${c}$(ak_tvalue .metadata.namespace)/$(ak_tvalue .metadata.name)${tab}$(ak_tvalue .spec.nodeName)${tab}"
pods+="$(ak_tvalue .status.phase)${tab}$(ak_tready .status)${tab}$(ak_tvalue .metadata.deletionTimestamp)${AK_TNL}${o}end${c}"
{
  ak_kubectl get nodes -o "go-template=${nodes}" | sed 's/^/node\t/'
  ak_kubectl get nodes -l node-role.kubernetes.io/control-plane -o 'jsonpath={range .items[*]}{.metadata.name}{"\n"}{end}' | sed 's/^/control-plane\t/'
  for ns in kube-system kube-flannel; do
    ak_kubectl get deployments -n "$ns" -o "jsonpath=${deployments}" | sed 's/^/deployment\t/'
    ak_kubectl get pods -n "$ns" -o "go-template=${pods}" |
      awk -F '\t' '$1 != "" && $3 != "Succeeded" && $3 != "Failed" && $4 != "True" && $5 == "" { print "pod\t" $1 "\t" $2 "\t" $3 }'
  done
} | ak_compact
