#!/bin/bash
# doctor-join (on a master, read-only): bootstrap tokens (secrets blanked on this machine), the groups whose tokens
# kubeadm's CSR auto-approval covers, the API server's /readyz?verbose, the etcd member list, and the admission
# service's recent refusals (Events); gzip+Base64.
pki=/etc/kubernetes/pki/etcd
tokens() {
  kubeadm token list -o json --kubeconfig="$AK_ADMIN_CONF" | ak_redact
}
etcd_members() {
  local pod
  # A section runs in an `||` list, where set -e is off: every step says how it failed.
  pod=$(ak_kubectl -n kube-system get pods -l component=etcd -o 'jsonpath={.items[0].metadata.name}') || return
  ak_kubectl -n kube-system exec "$pod" -- etcdctl --endpoints=https://127.0.0.1:2379 --cacert="${pki}/ca.crt" \
    --cert="${pki}/healthcheck-client.crt" --key="${pki}/healthcheck-client.key" member list -w simple
}
# The ClusterRoleBindings of the kubelet client CSR auto-approval (kubeadm binds its default token group): `<binding>\t<group>,...`.
auto_approved() {
  ak_kubectl get clusterrolebindings -o 'jsonpath={range .items[?(@.roleRef.name=="system:certificates.k8s.io:certificatesigningrequests:nodeclient")]}{.metadata.name}{"\t"}{range .subjects[?(@.kind=="Group")]}{.name}{","}{end}{"\n"}{end}'
}
# The digest of the identity signatures the recent joins used (the admission service's NodeAdmitted Events).
admitted() {
  ak_kubectl -n kube-system get events --field-selector reason=NodeAdmitted \
    -o 'jsonpath={range .items[*]}{.lastTimestamp}{"\t"}{.message}{"\n"}{end}'
}
admission_refusals() {
  ak_kubectl -n kube-system get events --field-selector reason=AdmissionRefused \
    -o 'jsonpath={range .items[*]}{.lastTimestamp}{"\t"}{.action}{"\t"}{.message}{"\n"}{end}'
}
{
  ak_section tokens tokens
  ak_section autoapprove auto_approved
  ak_section readyz ak_kubectl get --raw='/readyz?verbose'
  ak_section etcd etcd_members
  ak_section admission admission_refusals
  ak_section admitted admitted
} | ak_compact
