#!/bin/bash
# etcd-health (on a master): the etcd members and the health of each, through the etcd static pod of AK_ETCD_NODE, for
# the quorum checks before each step of a member replacement (src/recovery/quorum.ts). Prints two sections: the member
# list and `endpoint health --cluster`, both as etcdctl's JSON (an unhealthy member makes the second exit non-zero:
# its answer is still printed).
pki=/etc/kubernetes/pki/etcd
etcdctl() {
  ak_kubectl -n kube-system exec "etcd-${AK_ETCD_NODE}" -- etcdctl --endpoints=https://127.0.0.1:2379 \
    --cacert="${pki}/ca.crt" --cert="${pki}/healthcheck-client.crt" --key="${pki}/healthcheck-client.key" "$@"
}
# serializable: the local member answers even when quorum is lost (which is what the check must be able to say)
members=$(etcdctl member list -w json --consistency=s)
health=$(etcdctl endpoint health --cluster -w json --command-timeout=5s 2>/dev/null) || true
printf '@@members\n%s\n@@health\n%s\n' "$members" "${health:-[]}"
