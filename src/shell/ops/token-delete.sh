#!/bin/bash
# token-delete (on a master): delete the bootstrap token with id AK_TOKEN_ID; one already gone is fine.
# Prints `deleted` or `already gone`.
export KUBECONFIG="$AK_ADMIN_CONF"
if out=$(kubeadm token delete "$AK_TOKEN_ID" 2>&1); then
  echo deleted
  exit 0
fi
case "$out" in
  *"not found"* | *NotFound*)
    echo "already gone"
    exit 0
    ;;
esac
printf '%s\n' "$out" >&2
exit 1
