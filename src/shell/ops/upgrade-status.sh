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
pods='{range .items[*]}{.spec.nodeName}{"\t"}{.spec.containers[0].image}{"\t"}{.status.podIP}{"\n"}{end}'
nodes='{range .items[*]}{.metadata.name}{"\t"}{.spec.providerID}{"\t"}{.status.nodeInfo.kubeletVersion}{"\t"}'
nodes+='{.status.conditions[?(@.type=="Ready")].status}{"\t"}{.spec.unschedulable}{"\t"}{.metadata.annotations.alicloud-kubeadm/upgrading}{"\t"}'
nodes+='{.metadata.annotations.alicloud-kubeadm/resizing}{"\n"}{end}'
{
  ak_kubectl get pods -n kube-system -l component=kube-apiserver -o "jsonpath=${pods}" |
    while IFS=$'\t' read -r node image ip; do
      [ -n "$node" ] || continue
      version=${image##*:}
      ready=false
      # Each API server's own /readyz (hostNetwork: the pod IP is the master's), with the admin credentials.
      if [ -n "$ip" ] && ak_kubectl --server "https://${ip}:6443" get --raw /readyz >/dev/null 2>&1; then ready=true; fi
      printf 'apiserver\t%s\t%s\t%s\n' "$node" "${version#v}" "$ready"
    done
  ak_kubectl get nodes -o "jsonpath=${nodes}" | sed 's/^/node\t/'
  ak_kubectl get nodes -l node-role.kubernetes.io/control-plane -o 'jsonpath={range .items[*]}{.metadata.name}{"\n"}{end}' | sed 's/^/control-plane\t/'
  for addon in deployment/coredns daemonset/kube-proxy; do
    image=$(ak_kubectl get -n kube-system "$addon" --ignore-not-found -o 'jsonpath={.spec.template.spec.containers[0].image}')
    if [ -n "$image" ]; then printf 'addon\t%s\t%s\n' "${addon#*/}" "${image##*:}"; fi
  done
  ak_kubectl get -n kube-system configmap kubeadm-config -o 'jsonpath={.data.ClusterConfiguration}' |
    sed -nE 's/^kubernetesVersion:[[:space:]]*"?v?([^"[:space:]]+)"?.*$/cluster-config\t\1/p'
  ak_kubectl get --raw /metrics 2>/dev/null | grep '^apiserver_requested_deprecated_apis{' | sed 's/^/deprecated\t/' || true
} | ak_compact
