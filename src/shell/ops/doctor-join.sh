#!/bin/bash
# doctor-join (on a master, read-only): bootstrap tokens (secrets blanked on this machine), the groups whose tokens
# kubeadm's CSR auto-approval covers, the API server's /readyz?verbose, the etcd member list, and the admission
# service's recent refusals (Events); gzip+Base64.
pki=/etc/kubernetes/pki/etcd
tokens() {
  kubeadm token list -o json --kubeconfig="$AK_ADMIN_CONF" | ak_redact
}
etcd_members() {
  local node nodes pod=""
  # The etcd pod of a control-plane Node, by its name (etcd-<node>) and bound to that Node: any kubelet may post a
  # mirror pod labelled component=etcd bound to itself, and an exec into it would answer what that node likes.
  # A section runs in an `||` list, where set -e is off: every step says how it failed.
  nodes=$(ak_kubectl get nodes -l node-role.kubernetes.io/control-plane -o 'jsonpath={.items[*].metadata.name}') || return
  for node in $nodes; do
    if [ "$(ak_kubectl -n kube-system get pod "etcd-${node}" --ignore-not-found -o 'jsonpath={.spec.nodeName}')" = "$node" ]; then
      pod="etcd-${node}"
      break
    fi
  done
  [ -n "$pod" ] || { echo "no etcd pod of a control-plane Node found"; return 1; }
  ak_kubectl -n kube-system exec "$pod" -- etcdctl --endpoints=https://127.0.0.1:2379 --cacert="${pki}/ca.crt" \
    --cert="${pki}/healthcheck-client.crt" --key="${pki}/healthcheck-client.key" member list -w simple
}
# The ClusterRoleBindings of the kubelet client CSR auto-approval (kubeadm binds its default token group): `<binding>\t<group>,...`.
auto_approved() {
  ak_kubectl get clusterrolebindings -o 'jsonpath={range .items[?(@.roleRef.name=="system:certificates.k8s.io:certificatesigningrequests:nodeclient")]}{.metadata.name}{"\t"}{range .subjects[?(@.kind=="Group")]}{.name}{","}{end}{"\n"}{end}'
}
# The admission service's Events, every value through the template's `js` escaper (kubectl_template.sh): a kubelet may
# create Events, and a newline in a message must not make up a line, or a section of this output.
o=$AK_TO c=$AK_TC tab=$AK_TTAB nl=$AK_TNL
# The digest of the identity signatures the recent joins used (the admission service's NodeAdmitted Events).
admitted() {
  ak_kubectl -n kube-system get events --field-selector reason=NodeAdmitted \
    -o "go-template=${o}range .items${c}$(ak_tvalue .lastTimestamp)${tab}$(ak_tvalue .message)${nl}${o}end${c}"
}
admission_refusals() {
  ak_kubectl -n kube-system get events --field-selector reason=AdmissionRefused \
    -o "go-template=${o}range .items${c}$(ak_tvalue .lastTimestamp)${tab}$(ak_tvalue .action)${tab}$(ak_tvalue .message)${nl}${o}end${c}"
}
{
  ak_section tokens tokens
  ak_section autoapprove auto_approved
  ak_section readyz ak_kubectl get --raw='/readyz?verbose'
  ak_section etcd etcd_members
  ak_section admission admission_refusals
  ak_section admitted admitted
} | ak_compact
