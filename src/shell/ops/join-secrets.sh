#!/bin/bash
# join-secrets (on a master): a fresh certificate key (`kubeadm init phase upload-certs`, valid 2 h) and a
# 30-minute bootstrap token for one control-plane join, sealed to AK_RECIPIENT (the provider's one-use key):
# prints only the sealed text of `<token> <certificate key>`.
export KUBECONFIG="$AK_ADMIN_CONF"
key=$(kubeadm init phase upload-certs --upload-certs 2>/dev/null | tail -n 1)
[[ $key =~ ^[0-9a-f]{64}$ ]] || ak_fail "kubeadm init phase upload-certs printed no certificate key"
token=$(kubeadm token create --ttl 30m --description 'alicloud-kubeadm control-plane join')
[[ $token =~ ^[a-z0-9]{6}\.[a-z0-9]{16}$ ]] || ak_fail "kubeadm token create printed no token"
printf '%s %s' "$token" "$key" | ak_seal "$AK_RECIPIENT"
