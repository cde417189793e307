#!/bin/bash
# alicloud-kubeadm master 0: prepare the node, then `kubeadm init` with a generated v1beta4 config.
# Runs once: the marker ${AK_STATE_DIR}/init.done (or init.failed with the exit code) ends every later run.
# With AK_RECORDED_CA_HASH (the stack recorded a cluster already) it never runs `kubeadm init`: see below.
# The admin kubeconfig stays at /etc/kubernetes/admin.conf, the CA at /etc/kubernetes/pki/ca.crt.
set -euo pipefail

ak_start_log master-init
ak_require AK_KUBERNETES_VERSION AK_K8S_REPO_URL AK_SANDBOX_IMAGE AK_IMAGE_REPOSITORY \
  AK_API_ENDPOINT AK_POD_CIDR AK_SERVICE_CIDR AK_NODE_CIDR_MASK_SIZE

if [ -f "${AK_STATE_DIR}/init.done" ]; then
  ak_log "kubeadm init already completed (${AK_STATE_DIR#"$AK_ROOT"}/init.done): nothing to do"
  exit 0
fi
if [ -f "${AK_STATE_DIR}/init.failed" ]; then
  ak_die "an earlier kubeadm init failed ($(tr '\n' ' ' <"${AK_STATE_DIR}/init.failed")); not retrying." \
    "Read ${AK_LOG#"$AK_ROOT"}, run 'kubeadm reset -f', delete ${AK_STATE_DIR#"$AK_ROOT"}/init.failed and run this script again"
fi
ak_failure_marker init.failed

# ak_init_config: the InitConfiguration + ClusterConfiguration for this master.
ak_init_config() {
  local san
  local -a sans=()
  IFS=, read -r -a sans <<<"${AK_CERT_SANS:-}"
  cat <<EOF
apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
EOF
  ak_node_registration
  cat <<EOF
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: $(ak_yaml "v${AK_KUBERNETES_VERSION}")
controlPlaneEndpoint: $(ak_yaml "$AK_API_ENDPOINT")
imageRepository: $(ak_yaml "$AK_IMAGE_REPOSITORY")
networking:
  podSubnet: $(ak_yaml "$AK_POD_CIDR")
  serviceSubnet: $(ak_yaml "$AK_SERVICE_CIDR")
apiServer:
  certSANs:
EOF
  # The endpoint host is always a SAN; AK_CERT_SANS adds the others (comma-separated).
  for san in "${AK_API_ENDPOINT%:*}" "${sans[@]}"; do
    printf '    - %s\n' "$(ak_yaml "$san")"
  done
  cat <<EOF
  extraArgs:
    - name: profiling
      value: 'false'
    - name: audit-policy-file
      value: '${AK_AUDIT_DIR}/policy.yaml'
    - name: audit-log-path
      value: '${AK_AUDIT_LOG_DIR}/audit.log'
    - name: audit-log-maxage
      value: '30'
    - name: audit-log-maxbackup
      value: '10'
    - name: audit-log-maxsize
      value: '100'
    - name: admission-control-config-file
      value: '${AK_ADMISSION_DIR}/admission.yaml'
EOF
  if [ "${AK_ENCRYPT_SECRETS:-0}" = 1 ]; then
    printf '    - name: encryption-provider-config\n      value: %s\n' "$(ak_yaml "$AK_ENCRYPTION_CONFIG")"
  fi
  cat <<EOF
  extraVolumes:
    - name: audit-policy
      hostPath: '${AK_AUDIT_DIR}'
      mountPath: '${AK_AUDIT_DIR}'
      readOnly: true
      pathType: DirectoryOrCreate
    - name: audit-log
      hostPath: '${AK_AUDIT_LOG_DIR}'
      mountPath: '${AK_AUDIT_LOG_DIR}'
      pathType: DirectoryOrCreate
    - name: admission-config
      hostPath: '${AK_ADMISSION_DIR}'
      mountPath: '${AK_ADMISSION_DIR}'
      readOnly: true
      pathType: DirectoryOrCreate
controllerManager:
  extraArgs:
    - name: allocate-node-cidrs
      value: 'true'
    - name: node-cidr-mask-size
      value: $(ak_yaml "$AK_NODE_CIDR_MASK_SIZE")
    - name: configure-cloud-routes
      value: 'false'
    - name: profiling
      value: 'false'
scheduler:
  extraArgs:
    - name: profiling
      value: 'false'
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
protectKernelDefaults: true
EOF
}

ak_prepare_node
ak_read_identity
ak_write_audit_policy
ak_write_admission_config
config="${AK_STATE_DIR}/kubeadm-init.yaml"
ak_init_config >"$config"
# Master 0 re-created while its cluster lives on: never `kubeadm init` (src/shell/master_guard.sh, only rendered when
# the stack recorded the cluster's CA hash). The node is prepared and its kubeadm config written first: a restore
# (`npm run restore`, src/shell/ops/etcd-restore.sh) runs kubeadm init with them over the restored etcd.
[ -z "${AK_RECORDED_CA_HASH:-}" ] || ak_master_guard
# Secrets encryption at rest: the key is made here, once (a re-run keeps it); members get the whole file through
# join-secrets, see docs/security.md#encryption-at-rest.
if [ "${AK_ENCRYPT_SECRETS:-0}" = 1 ] && [ ! -f "${AK_ROOT}${AK_ENCRYPTION_CONFIG}" ]; then
  ak_write_encryption_config "$(head -c 32 /dev/urandom | base64)"
fi
ak_log "kubeadm init: endpoint ${AK_API_ENDPOINT}, Kubernetes v${AK_KUBERNETES_VERSION}, config ${config#"$AK_ROOT"}"
rc=0
kubeadm init --config "$config" --skip-token-print --skip-certificate-key-print 2>&1 | ak_redact || rc=$?
if [ "$rc" -ne 0 ]; then
  ak_mark init.failed status=failed "exit_code=${rc}" "log=${AK_LOG#"$AK_ROOT"}"
  ak_die "kubeadm init failed with exit code ${rc}; see the output above in ${AK_LOG#"$AK_ROOT"}"
fi
ak_install_cert_renewal
ak_delete_init_tokens
ak_mark init.done status=ok "node=${AK_PROVIDER_ID}"
ak_log "kubeadm init succeeded: node ${AK_PROVIDER_ID}"
