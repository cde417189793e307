#!/bin/bash
# alicloud-kubeadm node join: prepare the node, wait for the API endpoint, `kubeadm join` with a generated
# v1beta4 JoinConfiguration that pins the cluster CA (caCertHashes; CA verification is never skipped).
# The same script serves every pool and existing node; only the parameter header differs. With
# AK_CERTIFICATE_KEY set it joins a control-plane member (`controlPlane.certificateKey`) instead of a worker.
# Re-runnable: a joined node is left alone; leftovers of a failed join are cleaned before joining again.
set -euo pipefail

AK_API_WAIT_ATTEMPTS="${AK_API_WAIT_ATTEMPTS:-120}"
AK_JOIN_ATTEMPTS="${AK_JOIN_ATTEMPTS:-3}"

ak_start_log attach-node
# A saved join command carries no secret: the channel-receive operation left the token (and a control-plane
# member's certificate key) in a root-only tmpfs file, received sealed to this instance's one-use key
# (src/shell/channel.sh, docs/security.md); read once, then deleted.
if [ -n "${AK_CHANNEL:-}" ]; then
  f=${AK_ROOT}/run/alicloud-kubeadm/${AK_CHANNEL}
  read -r AK_BOOTSTRAP_TOKEN AK_CERTIFICATE_KEY received_enc <"$f" || ak_die "nothing received on channel ${AK_CHANNEL}"
  rm -f "$f"
  # A control-plane member of a cluster whose Secrets are encrypted also gets the masters' whole encryption
  # config, every key in order, gzip + Base64 (`-`: none).
  if [ -n "${received_enc:-}" ] && [ "$received_enc" != - ]; then AK_ENCRYPTION_CONFIG_GZ=$received_enc; fi
fi
ak_require AK_KUBERNETES_VERSION AK_K8S_REPO_URL AK_SANDBOX_IMAGE AK_API_ENDPOINT AK_POOL_NAME \
  AK_BOOTSTRAP_TOKEN AK_CA_CERT_HASHES
[[ $AK_BOOTSTRAP_TOKEN =~ ^[a-z0-9]{6}\.[a-z0-9]{16}$ ]] ||
  ak_die "AK_BOOTSTRAP_TOKEN is not a bootstrap token [a-z0-9]{6}.[a-z0-9]{16}"
[[ $AK_CA_CERT_HASHES =~ ^sha256:[0-9a-f]{64}(,sha256:[0-9a-f]{64})*$ ]] ||
  ak_die "AK_CA_CERT_HASHES must be sha256:<64 hex digits>[,...]"
if [ -n "${AK_CERTIFICATE_KEY:-}" ] && [[ ! $AK_CERTIFICATE_KEY =~ ^[0-9a-f]{64}$ ]]; then
  ak_die "AK_CERTIFICATE_KEY must be 64 hex digits"
fi
if [ -n "${AK_ENCRYPTION_KEY:-}" ] && [[ ! $AK_ENCRYPTION_KEY =~ ^[A-Za-z0-9+/]{43}=$ ]]; then
  ak_die "AK_ENCRYPTION_KEY must be 32 bytes in Base64 (master 0's ${AK_ENCRYPTION_CONFIG:-encryption config})"
fi

if [ -f "${AK_STATE_DIR}/join.done" ] && [ -f "${AK_ROOT}/etc/kubernetes/kubelet.conf" ]; then
  ak_log "node already joined (${AK_STATE_DIR#"$AK_ROOT"}/join.done): nothing to do"
  exit 0
fi
ak_failure_marker join.failed

# ak_wait_for_api: bounded wait until the API endpoint answers TLS.
ak_wait_for_api() {
  local attempt rc
  for ((attempt = 1; attempt <= AK_API_WAIT_ATTEMPTS; attempt++)); do
    rc=0
    curl --silent --output /dev/null --max-time 5 "https://${AK_API_ENDPOINT}/readyz" || rc=$?
    # 60 = the server answered with a certificate curl cannot verify yet: reachable.
    # kubeadm join verifies that certificate against caCertHashes.
    if [ "$rc" -eq 0 ] || [ "$rc" -eq 60 ]; then
      ak_log "API endpoint ${AK_API_ENDPOINT} is reachable"
      return 0
    fi
    ak_log "waiting for API endpoint ${AK_API_ENDPOINT} (attempt ${attempt}/${AK_API_WAIT_ATTEMPTS}, curl exit ${rc})"
    sleep "$AK_RETRY_DELAY"
  done
  ak_die "API endpoint ${AK_API_ENDPOINT} unreachable after ${AK_API_WAIT_ATTEMPTS} attempts;" \
    "check that master 0 finished kubeadm init and that TCP ${AK_API_ENDPOINT##*:} is open from this vSwitch"
}

# ak_join_config: the JoinConfiguration (contains the bootstrap token; written with mode 600).
ak_join_config() {
  local labels="${AK_NODE_LABELS:-}" taints="${AK_NODE_TAINTS:-}" hash
  # Joining through admission, the service sets the pool label (kubelets may not set it) and removes the taint the
  # node registers with until then; otherwise (token joins, control-plane members) the node labels itself.
  if [ -n "${AK_ADMISSION_ENDPOINTS:-}" ]; then
    taints="${AK_POOL_PENDING_TAINT}${taints:+,${taints}}"
  else
    labels="alicloud-kubeadm/pool=${AK_POOL_NAME}${labels:+,${labels}}"
  fi
  local -a hashes=()
  IFS=, read -r -a hashes <<<"$AK_CA_CERT_HASHES"
  cat <<EOF
apiVersion: kubeadm.k8s.io/v1beta4
kind: JoinConfiguration
discovery:
  bootstrapToken:
    apiServerEndpoint: $(ak_yaml "$AK_API_ENDPOINT")
    token: $(ak_yaml "$AK_BOOTSTRAP_TOKEN")
    caCertHashes:
EOF
  for hash in "${hashes[@]}"; do
    printf '      - %s\n' "$(ak_yaml "$hash")"
  done
  ak_node_registration
  if [ -n "$labels" ]; then
    printf '    - name: node-labels\n      value: %s\n' "$(ak_yaml "$labels")"
  fi
  if [ -n "$taints" ]; then
    printf '    - name: register-with-taints\n      value: %s\n' "$(ak_yaml "$taints")"
  fi
  if [ -n "${AK_CERTIFICATE_KEY:-}" ]; then
    printf 'controlPlane:\n  certificateKey: %s\n' "$(ak_yaml "$AK_CERTIFICATE_KEY")"
  fi
  ak_overlay_patches
}

# ak_has_leftovers: files or links that an earlier (failed or reset-less) join left behind.
ak_has_leftovers() {
  local path
  for path in etc/kubernetes/kubelet.conf etc/kubernetes/bootstrap-kubelet.conf etc/kubernetes/pki/ca.crt \
    var/lib/kubelet/config.yaml var/lib/alicloud-kubeadm/join.failed; do
    [ ! -e "${AK_ROOT}/${path}" ] || return 0
  done
  ip link show cni0 >/dev/null 2>&1
}

ak_preclean() {
  ak_log "cleaning leftovers of an earlier join"
  kubeadm reset -f --cri-socket "$AK_CRI_SOCKET" 2>&1 | ak_redact
  if ip link show cni0 >/dev/null 2>&1; then ip link delete cni0; fi
  # the folder's contents only: containerd exits when the folder it watches goes (docs/upstream.md#containerd-cni-dir)
  (shopt -s dotglob nullglob && rm -rf "${AK_ROOT}/etc/cni/net.d/"*)
  # flannel's lease file too: until flannel writes the new one, its CNI plugin would give pods the old podCIDR
  rm -rf "${AK_ROOT}/var/lib/cni" "${AK_ROOT}/run/flannel"
  mkdir -p "${AK_ROOT}/etc/cni/net.d"
  rm -f "${AK_STATE_DIR}/join.failed" "${AK_STATE_DIR}/join.done"
}

ak_prepare_node
ak_read_identity
ak_wait_for_api
config="${AK_STATE_DIR}/kubeadm-join.yaml"
(umask 077 && ak_join_config >"$config")
rc=1
for ((attempt = 1; attempt <= AK_JOIN_ATTEMPTS; attempt++)); do
  if ak_has_leftovers; then ak_preclean; fi
  # Joining through admission: a fresh single-use token (and JoinConfiguration) per attempt. render.ts keeps
  # this line only in scripts that include src/shell/admission_client.sh.
  [ -z "${AK_ADMISSION_ENDPOINTS:-}" ] || ak_admission_token
  if [ -n "${AK_CERTIFICATE_KEY:-}" ]; then
    # A control-plane member: the files its API server reads (the cluster's ClusterConfiguration names them),
    # written on every attempt because kubeadm reset empties the PKI directory.
    ak_write_audit_policy
    ak_write_admission_config
    # Either fails the join when the file cannot be written as given.
    if [ -n "${AK_ENCRYPTION_CONFIG_GZ:-}" ]; then ak_install_encryption_config "$AK_ENCRYPTION_CONFIG_GZ"
    elif [ -n "${AK_ENCRYPTION_KEY:-}" ]; then ak_write_encryption_config "$AK_ENCRYPTION_KEY"; fi
  fi
  ak_log "kubeadm join ${AK_API_ENDPOINT} as ${AK_PROVIDER_ID}, pool ${AK_POOL_NAME} (attempt ${attempt}/${AK_JOIN_ATTEMPTS})"
  rc=0
  kubeadm join --config "$config" 2>&1 | ak_redact || rc=$?
  if [ "$rc" -eq 0 ]; then break; fi
  ak_mark join.failed status=failed "exit_code=${rc}" "log=${AK_LOG#"$AK_ROOT"}"
  if [ "$attempt" -lt "$AK_JOIN_ATTEMPTS" ]; then sleep "$AK_RETRY_DELAY"; fi
done
# The token stays only in the userdata (pools) or nowhere (saved join commands).
rm -f "$config"
if [ "$rc" -ne 0 ]; then
  ak_die "kubeadm join failed ${AK_JOIN_ATTEMPTS} times (last exit code ${rc}); see ${AK_LOG#"$AK_ROOT"}." \
    "Running this script again cleans up and retries"
fi
if [ -n "${AK_CERTIFICATE_KEY:-}" ]; then ak_install_cert_renewal; fi
ak_mark join.done status=ok "node=${AK_PROVIDER_ID}" "pool=${AK_POOL_NAME}"
ak_log "joined the cluster as ${AK_PROVIDER_ID}"
