#!/bin/bash
# token-create (on a master): create the bootstrap token AK_BOOTSTRAP_TOKEN with AK_TTL and AK_DESCRIPTION.
# Idempotent: the same token already there (a retried create whose answer was lost) counts as created.
# Prints only `created` or `exists`; kubeadm's errors are printed with the token blanked.
export KUBECONFIG="$AK_ADMIN_CONF"
if kubeadm token list -o jsonpath='{.token}{"\n"}' 2>/dev/null | grep -qxF "$AK_BOOTSTRAP_TOKEN"; then
  echo exists
  exit 0
fi
if out=$(kubeadm token create "$AK_BOOTSTRAP_TOKEN" --ttl "$AK_TTL" --description "$AK_DESCRIPTION" 2>&1); then
  echo created
  exit 0
fi
printf '%s\n' "$out" | ak_redact >&2
exit 1
