#!/bin/bash
# alicloud-kubeadm master 0 guard: rendered before master_init.sh only when the stack recorded the cluster's CA hash
# (src/shell/render.ts renderMasterInit recordedCaCertHash), so a new cluster's userdata does not carry it.
# ak_ca_hash_of PEM_FILE: `sha256:<hex>` of the certificate's public key (kubeadm's caCertHashes form).
ak_ca_hash_of() {
  local der
  der=$(openssl x509 -in "$1" -noout -pubkey 2>/dev/null | openssl pkey -pubin -outform DER 2>/dev/null | sha256sum | cut -c1-64) || return 1
  [[ $der =~ ^[0-9a-f]{64}$ ]] && [ "$der" != e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 ] || return 1
  printf 'sha256:%s' "$der"
}

# ak_answers_with_ca IP HASH: succeed when the API server at IP:6443 serves a cluster-info whose CA has HASH, and
# its own certificate verifies against that CA alone (kubeadm's token discovery without the token).
ak_answers_with_ca() {
  local dir rc=0 data
  dir=$(mktemp -d)
  mkdir -p "${dir}/none"
  {
    curl -sk --max-time 10 -o "${dir}/cluster-info" "https://$1:6443/api/v1/namespaces/kube-public/configmaps/cluster-info" &&
      data=$(grep -o 'certificate-authority-data: *[A-Za-z0-9+/=]*' "${dir}/cluster-info" | head -n 1 | sed 's/.*: *//') &&
      [ -n "$data" ] && printf '%s' "$data" | base64 -d >"${dir}/ca.crt" 2>/dev/null &&
      [ "$(ak_ca_hash_of "${dir}/ca.crt")" = "$2" ] &&
      curl -sf --max-time 10 --cacert "${dir}/ca.crt" --capath "${dir}/none" -o /dev/null "https://$1:6443/readyz"
  } || rc=$?
  rm -rf "$dir"
  return "$rc"
}

# Master 0 re-created while its cluster lives on (docs/disaster-recovery.md): the stack recorded the cluster's CA
# hash, so this master never runs `kubeadm init` (a new CA and an empty etcd behind the same endpoint would fork the
# cluster). It joins the masters that answer with that CA (the stack's control-plane join, on `pulumi up`), or stops,
# its node prepared and its kubeadm config written (master_init.sh) for the restore to use.
#
# ak_master_guard: join the cluster of AK_RECORDED_CA_HASH at one of AK_PEER_MASTER_IPS, or stop.
ak_master_guard() {
  local ip
  local -a peers=()
  IFS=, read -r -a peers <<<"${AK_PEER_MASTER_IPS:-}"
  for ip in "${peers[@]}"; do
    if ak_answers_with_ca "$ip" "$AK_RECORDED_CA_HASH"; then
      ak_mark init.join-pending status=join-pending "member=${ip}" "ca=${AK_RECORDED_CA_HASH}"
      ak_log "the cluster of CA ${AK_RECORDED_CA_HASH} answers at ${ip}: this master joins it as a new member" \
        "(the stack's control-plane join, on \`pulumi up\`); kubeadm init is not run"
      exit 0
    fi
    ak_log "the master at ${ip} does not answer with CA ${AK_RECORDED_CA_HASH}"
  done
  ak_mark init.refused status=refused "ca=${AK_RECORDED_CA_HASH}"
  ak_die "this cluster (CA ${AK_RECORDED_CA_HASH}) already existed, and no other master answers with its CA" \
    "(${AK_PEER_MASTER_IPS:-no other master}); kubeadm init would make a new, empty cluster. Restore it from a backup:" \
    "npm run restore -- --stack <stack> (docs/disaster-recovery.md#lost-whole-control-plane)"
}
