#!/bin/bash
# etcd-member-remove (on a master): remove the etcd member of a master that is leaving, through the etcd static pod of
# AK_ETCD_NODE. `kubeadm reset` only warns when it cannot leave etcd, and a member that could not run it never tried:
# otherwise quorum keeps counting a dead member. Prints member-removed or member-absent.
# Which member, exactly: the one named AK_MEMBER (kubeadm names members after the Node; more than one of that name
# stops it). Without one of that name, the one whose peer URL is at AK_PEER_IP (that host exactly), when it never
# started (no name yet: a join that added it) or no name was given; one that started and is healthy is never removed
# that way (it runs: another master's, or one to name), and more than one stops it. Either parameter may be empty.
pki=/etc/kubernetes/pki/etcd
etcdctl() {
  ak_kubectl -n kube-system exec "etcd-${AK_ETCD_NODE}" -- etcdctl --endpoints=https://127.0.0.1:2379 \
    --cacert="${pki}/ca.crt" --cert="${pki}/healthcheck-client.crt" --key="${pki}/healthcheck-client.key" "$@"
}
# The whole list is read first, and awk reads all of it: a reader that stopped early would kill etcdctl with
# SIGPIPE, and pipefail would stop this script on a list it had matched. Its lines: id, status, name, peer URLs,
# client URLs, learner (the URLs joined by commas).
members=$(etcdctl member list)
ids() { awk -F'\t' '{printf "%s%s", (NR > 1 ? " " : ""), $1}'; }
named=$(awk -F', ' -v n="$AK_MEMBER" 'n != "" && $3 == n {print $1}' <<<"$members")
if [ -n "$named" ]; then
  [ "$(grep -c . <<<"$named")" -eq 1 ] || ak_fail "$(grep -c . <<<"$named") etcd members are named ${AK_MEMBER} (ids $(ids <<<"$named")):" \
    "a removal by name cannot tell them apart; remove the stale one by its id (etcdctl member remove <id>) on a healthy master"
  id=$named
else
  # id, name, client URLs of each member at AK_PEER_IP, unnamed or (no name given) any.
  peered=$(awk -F', ' -v ip="$AK_PEER_IP" -v n="$AK_MEMBER" 'ip != "" && ($3 == "" || n == "") {
      k = split($4, u, ","); for (j = 1; j <= k; j++) { h = u[j]; sub(/^[a-z]+:\/\//, "", h); sub(/:[0-9]+$/, "", h)
        if (h == ip) { print $1 "\t" $3 "\t" $5; break } } }' <<<"$members")
  if [ -z "$peered" ]; then
    echo member-absent
    exit 0
  fi
  [ "$(grep -c . <<<"$peered")" -eq 1 ] || ak_fail "$(grep -c . <<<"$peered") etcd members have a peer URL at ${AK_PEER_IP}" \
    "(ids $(ids <<<"$peered")): none is removed by that address; remove the stale one by its id (etcdctl member remove <id>) on a healthy master"
  IFS=$'\t' read -r id name clients <<<"$peered"
  if [ -n "$name" ]; then
    health=$(etcdctl endpoint health --cluster -w json --command-timeout=5s 2>/dev/null) || true
    IFS=, read -r -a urls <<<"$clients"
    # Removed only when etcd itself reports it unhealthy: no answer about it (a failed exec, a timeout) is no proof.
    down=""
    for u in "${urls[@]}"; do
      if grep -q -F "\"endpoint\":\"${u}\",\"health\":true" <<<"$health"; then
        ak_fail "the etcd member at ${AK_PEER_IP} (id ${id}, ${name}) is healthy and not named ${AK_MEMBER:-after the leaving master}: it is not removed." \
          "If it is the leaving master's, remove it by its id (etcdctl member remove ${id}) on a healthy master"
      fi
      if grep -q -F "\"endpoint\":\"${u}\",\"health\":false" <<<"$health"; then down=1; fi
    done
    [ -n "$down" ] || ak_fail "cannot tell whether the etcd member at ${AK_PEER_IP} (id ${id}, ${name}) runs: etcdctl endpoint health said nothing of ${clients}; it is not removed." \
      "If it is the leaving master's, remove it by its id (etcdctl member remove ${id}) on a healthy master"
  fi
fi
etcdctl member remove "$id"
echo member-removed
