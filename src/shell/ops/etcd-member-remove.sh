#!/bin/bash
# etcd-member-remove (on a master): remove the etcd member named AK_MEMBER (a master's Node name: kubeadm names
# members after nodeRegistration.name) through the etcd static pod of AK_ETCD_NODE. For a member whose own
# `kubeadm reset` could not leave etcd: otherwise quorum keeps counting a dead member.
# Prints member-removed or member-absent.
pki=/etc/kubernetes/pki/etcd
etcdctl() {
  ak_kubectl -n kube-system exec "etcd-${AK_ETCD_NODE}" -- etcdctl --endpoints=https://127.0.0.1:2379 \
    --cacert="${pki}/ca.crt" --cert="${pki}/healthcheck-client.crt" --key="${pki}/healthcheck-client.key" "$@"
}
id=$(etcdctl member list | awk -F', ' -v n="$AK_MEMBER" '$3 == n {print $1}')
if [ -z "$id" ]; then
  echo member-absent
  exit 0
fi
etcdctl member remove "$id"
echo member-removed
