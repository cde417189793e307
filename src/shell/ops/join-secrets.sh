#!/bin/bash
# join-secrets (on a master): a fresh certificate key (`kubeadm init phase upload-certs`, valid 2 h) and a
# 30-minute bootstrap token for one control-plane join, sealed to AK_RECIPIENT (the provider's one-use key):
# prints only the sealed text of `<token> <certificate key> <encryption key>`, the last being master 0's
# secrets-encryption key read from this master's encryption config, or `-` when Secrets are not encrypted.
export KUBECONFIG="$AK_ADMIN_CONF"
key=$(kubeadm init phase upload-certs --upload-certs 2>/dev/null | tail -n 1)
[[ $key =~ ^[0-9a-f]{64}$ ]] || ak_fail "kubeadm init phase upload-certs printed no certificate key"
token=$(kubeadm token create --ttl 30m --description 'alicloud-kubeadm control-plane join')
[[ $token =~ ^[a-z0-9]{6}\.[a-z0-9]{16}$ ]] || ak_fail "kubeadm token create printed no token"
enc=$(sed -n 's/^ *secret: *//p' "${AK_ROOT}/etc/kubernetes/pki/alicloud-kubeadm-encryption.yaml" 2>/dev/null || true)
enc=${enc%%$'\n'*}
# An API server that encrypts Secrets with a key this script cannot read must not let a member join without it.
if [ -z "$enc" ] && grep -qs -- '--encryption-provider-config' "${AK_ROOT}/etc/kubernetes/manifests/kube-apiserver.yaml"; then
  ak_fail "the API server encrypts Secrets but its encryption config (/etc/kubernetes/pki/alicloud-kubeadm-encryption.yaml) cannot be read here"
fi
printf '%s %s %s' "$token" "$key" "${enc:--}" | ak_seal "$AK_RECIPIENT"
