#!/bin/bash
# token-create (on a master): the bootstrap token with id AK_TOKEN_ID, AK_TTL and AK_DESCRIPTION. Its secret half is
# made here (never sent to the instance) and answered sealed to AK_RECIPIENT (the provider's one-use key).
# Idempotent: a token with this id and description already there (a retried create whose answer was lost) is read
# back from its Secret bootstrap-token-<id>; another token with the same id is an error. Prints `created` or `exists`, then the sealed token; kubeadm's errors with the
# token blanked.
export KUBECONFIG="$AK_ADMIN_CONF"
existing=$(ak_kubectl -n kube-system get secret "bootstrap-token-${AK_TOKEN_ID}" --ignore-not-found -o 'jsonpath={.data.token-secret} {.data.description}')
if [ -n "${existing// /}" ]; then
  # Only a token this create made (same description) is answered: never another token that has the same id.
  [ "$(printf '%s' "${existing#* }" | base64 -d)" = "$AK_DESCRIPTION" ] ||
    ak_fail "a bootstrap token with id ${AK_TOKEN_ID} already exists with another description; run pulumi up again (a new id is drawn)"
  echo exists
  printf '%s.%s' "$AK_TOKEN_ID" "$(printf '%s' "${existing%% *}" | base64 -d)" | ak_seal "$AK_RECIPIENT"
  exit 0
fi
# 16 of [a-z0-9] as kubeadm makes them, from openssl's CSPRNG (about 49 such characters in 64 random bytes).
secret=$(openssl rand -base64 64 | LC_ALL=C tr -dc 'a-z0-9' | cut -c1-16)
[[ $secret =~ ^[a-z0-9]{16}$ ]] || ak_fail "openssl rand gave too few characters; run token-create again"
if out=$(kubeadm token create "${AK_TOKEN_ID}.${secret}" --ttl "$AK_TTL" --description "$AK_DESCRIPTION" 2>&1); then
  echo created
  printf '%s.%s' "$AK_TOKEN_ID" "$secret" | ak_seal "$AK_RECIPIENT"
  exit 0
fi
printf '%s\n' "$out" | ak_redact >&2
exit 1
