#!/bin/bash
# etcd-member-remove (on a master): remove the etcd member of a master that is leaving, matched by name AK_MEMBER
# (kubeadm names members after the Node) or by peer address AK_PEER_IP (either may be empty), through the etcd
# static pod of AK_ETCD_NODE. `kubeadm reset` only warns when it cannot leave etcd, and a member that could not run
# it never tried: otherwise quorum keeps counting a dead member. Prints member-removed or member-absent.
pki=/etc/kubernetes/pki/etcd
etcdctl() {
  ak_kubectl -n kube-system exec "etcd-${AK_ETCD_NODE}" -- etcdctl --endpoints=https://127.0.0.1:2379 \
    --cacert="${pki}/ca.crt" --cert="${pki}/healthcheck-client.crt" --key="${pki}/healthcheck-client.key" "$@"
}
# The whole list is read first, and awk reads all of it: a reader that stopped early would kill etcdctl with
# SIGPIPE, and pipefail would stop this script on a list it had matched.
members=$(etcdctl member list)
id=$(awk -F', ' -v n="$AK_MEMBER" -v peer="${AK_PEER_IP:+//${AK_PEER_IP}:}" \
  'id == "" && ((n != "" && $3 == n) || (peer != "" && index($4, peer) > 0)) {id = $1} END {print id}' <<<"$members")
if [ -z "$id" ]; then
  echo member-absent
  exit 0
fi
etcdctl member remove "$id"
echo member-removed
