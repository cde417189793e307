#!/bin/bash
# join-secrets (on a master): a fresh certificate key (`kubeadm init phase upload-certs`, valid 2 h) and a
# 30-minute bootstrap token for one control-plane join, sealed to AK_RECIPIENT (the provider's one-use key):
# prints only the sealed text of `<token> <certificate key> <encryption config>`, the last being this master's
# whole EncryptionConfiguration (every provider and key, in order: a member joining in the middle of a key rotation
# still reads what the old keys sealed), gzip + Base64 on one line, or `-` when Secrets are not encrypted.
export KUBECONFIG="$AK_ADMIN_CONF"
# The file the API server reads (its flag), else the one this project writes (the PKI directory is the same path
# inside the API server's pod and on the host).
manifest="${AK_ROOT}/etc/kubernetes/manifests/kube-apiserver.yaml"
conf=$(sed -n 's/^ *- *--encryption-provider-config=//p' "$manifest" 2>/dev/null | head -n 1 || true)
conf=${conf:-/etc/kubernetes/pki/alicloud-kubeadm-encryption.yaml}
enc=-
if [ -r "${AK_ROOT}${conf}" ]; then
  grep -qs EncryptionConfiguration "${AK_ROOT}${conf}" || ak_fail "${conf} is not an EncryptionConfiguration; fix it on this master before joining another"
  enc=$(gzip -9cn <"${AK_ROOT}${conf}" | base64 -w0) || ak_fail "could not compress ${conf} (gzip, base64)"
  # The sealed answer must fit the channel-receive parameter (MAX_ENCRYPTION_CONFIG_GZ_B64 in src/rules/formats.ts).
  [ "${#enc}" -le 2800 ] || ak_fail "${conf} is ${#enc} characters gzip + Base64, over the 2800 a control-plane join" \
    "can carry sealed; remove keys no Secret is sealed with any more (finish the rotation) and run again"
elif grep -qs -- '--encryption-provider-config' "$manifest"; then
  # An API server that encrypts Secrets with keys this script cannot read must not let a member join without them.
  ak_fail "the API server encrypts Secrets but its encryption config (${conf}) cannot be read here"
fi
# The token and certificate key only once the config is known to travel (no token left behind by a refusal).
key=$(kubeadm init phase upload-certs --upload-certs 2>/dev/null | tail -n 1)
[[ $key =~ ^[0-9a-f]{64}$ ]] || ak_fail "kubeadm init phase upload-certs printed no certificate key"
token=$(kubeadm token create --ttl 30m --description 'alicloud-kubeadm control-plane join')
[[ $token =~ ^[a-z0-9]{6}\.[a-z0-9]{16}$ ]] || ak_fail "kubeadm token create printed no token"
printf '%s %s %s' "$token" "$key" "$enc" | ak_seal "$AK_RECIPIENT"
