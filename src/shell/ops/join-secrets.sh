#!/bin/bash
# join-secrets (on master 0): a fresh certificate key (`kubeadm init phase upload-certs`, valid 2 h) and a
# 30-minute bootstrap token for one control-plane join. Prints `<token> <certificate key>`.
export KUBECONFIG="$AK_ADMIN_CONF"
key=$(kubeadm init phase upload-certs --upload-certs 2>/dev/null | tail -n 1)
token=$(kubeadm token create --ttl 30m --description 'alicloud-kubeadm control-plane join')
printf '%s %s\n' "$token" "$key"
