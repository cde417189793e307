#!/bin/bash
# upgrade-status (on a master, read-only): what an upgrade decides from and what doctor shows, as tab-separated lines,
# gzip+Base64:
#   apiserver <node> <version> <ready>   each kube-apiserver pod (the version is its image tag, as `kubeadm upgrade plan`
#                                        reads it) and whether that API server's own /readyz answers ok
#   node <name> <provider id> <kubelet version> <Ready> <unschedulable> <upgrade mark> <resize mark>
#                                        (annotations alicloud-kubeadm/upgrading and alicloud-kubeadm/resizing)
#   control-plane <name>                 the Nodes labelled node-role.kubernetes.io/control-plane
#   addon <name> <version>               CoreDNS and kube-proxy (their image tags: kubeadm's addon phase moves them)
#   cluster-config <version>             kubernetesVersion of kubeadm's ClusterConfiguration (`upgrade apply` sets it)
#   deprecated <series>                  the API server's apiserver_requested_deprecated_apis series
# The values of the apiserver, node and control-plane lines go through the template's `js` escaper
# (kubectl_template.sh ak_tvalue): a kubelet writes its own Node's status and annotations and its mirror pods, and a tab
# or a newline in them cannot make up a column or a line (src/upgrade/status.ts reads them back as data).
o=$AK_TO c=$AK_TC tab=$AK_TTAB nl=$AK_TNL
pods="${o}range .items${c}$(ak_tvalue .spec.nodeName)${tab}$(ak_tvalue '(index .spec.containers 0).image')${tab}$(ak_tvalue .status.podIP)${nl}${o}end${c}"
nodes="${o}range .items${c}$(ak_tvalue .metadata.name)${tab}$(ak_tvalue .spec.providerID)${tab}$(ak_tvalue .status.nodeInfo.kubeletVersion)${tab}"
nodes+="$(ak_tready .status)${tab}$(ak_tvalue .spec.unschedulable)${tab}$(ak_tkeyed .metadata.annotations alicloud-kubeadm/upgrading)${tab}"
nodes+="$(ak_tkeyed .metadata.annotations alicloud-kubeadm/resizing)${nl}${o}end${c}"
# Only a control-plane Node's API server is probed (any kubelet may post a mirror pod labelled component=kube-apiserver
# bound to itself; src/upgrade/status.ts counts only those too), each for at most 5 s.
masters=$(ak_kubectl get nodes -l node-role.kubernetes.io/control-plane -o "go-template=${o}range .items${c}$(ak_tvalue .metadata.name)${nl}${o}end${c}")
{
  ak_kubectl get pods -n kube-system -l component=kube-apiserver -o "go-template=${pods}" |
    while IFS=$'\t' read -r node image ip; do
      [ -n "$node" ] || continue
      grep -qxF -- "$node" <<<"$masters" || continue
      version=${image##*:}
      ready=false
      # Each API server's own /readyz (hostNetwork: the pod IP is the master's), with the admin credentials.
      if [ -n "$ip" ] && ak_kubectl --server "https://${ip}:6443" --request-timeout=5s get --raw /readyz >/dev/null 2>&1; then ready=true; fi
      printf 'apiserver\t%s\t%s\t%s\n' "$node" "${version#v}" "$ready"
    done
  ak_kubectl get nodes -o "go-template=${nodes}" | sed 's/^/node\t/'
  printf '%s\n' "$masters" | sed -n 's/^./control-plane\t&/p'
  for addon in deployment/coredns daemonset/kube-proxy; do
    image=$(ak_kubectl get -n kube-system "$addon" --ignore-not-found -o 'jsonpath={.spec.template.spec.containers[0].image}')
    if [ -n "$image" ]; then printf 'addon\t%s\t%s\n' "${addon#*/}" "${image##*:}"; fi
  done
  ak_kubectl get -n kube-system configmap kubeadm-config -o 'jsonpath={.data.ClusterConfiguration}' |
    sed -nE 's/^kubernetesVersion:[[:space:]]*"?v?([^"[:space:]]+)"?.*$/cluster-config\t\1/p'
  ak_kubectl get --raw /metrics 2>/dev/null | grep '^apiserver_requested_deprecated_apis{' | sed 's/^/deprecated\t/' || true
} | ak_compact
