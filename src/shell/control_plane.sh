#!/bin/bash
# alicloud-kubeadm control-plane hardening, shared by master_init.sh (master 0) and control-plane joins (attach_node.sh
# with AK_CERTIFICATE_KEY): the audit policy, secrets encryption at rest and the certificate renewal timer.
# src/shell/render.ts puts this file between prepare_node.sh and the role script, for masters only.
# See docs/security.md#cis for each setting.

AK_ENCRYPTION_CONFIG="/etc/kubernetes/pki/alicloud-kubeadm-encryption.yaml"
AK_AUDIT_DIR="/etc/kubernetes/audit"
AK_AUDIT_LOG_DIR="/var/log/kubernetes/audit"
AK_RENEW_BIN="/usr/local/sbin/alicloud-kubeadm-cert-renew"
AK_RENEW_UNIT="alicloud-kubeadm-cert-renew"

# ak_write_audit_policy: metadata for every request, request bodies for writes, never the content of Secrets,
# ConfigMaps or tokens; health checks, kube-proxy watches and lease renewals are not logged.
ak_write_audit_policy() {
  mkdir -p "${AK_ROOT}${AK_AUDIT_LOG_DIR}"
  chmod 700 "${AK_ROOT}${AK_AUDIT_LOG_DIR}"
  ak_write_file "${AK_ROOT}${AK_AUDIT_DIR}/policy.yaml" 600 <<'EOF' || true
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: None
    nonResourceURLs: ["/healthz*", "/readyz*", "/livez*", "/version", "/metrics"]
  - level: None
    users: ["system:kube-proxy"]
    verbs: ["watch"]
  - level: None
    verbs: ["get", "update"]
    resources: [{ group: "coordination.k8s.io", resources: ["leases"] }]
  - level: Metadata
    resources:
      - { group: "", resources: ["secrets", "configmaps", "serviceaccounts/token"] }
      - { group: "authentication.k8s.io", resources: ["tokenreviews"] }
      - { group: "certificates.k8s.io", resources: ["certificatesigningrequests"] }
  - level: Request
    verbs: ["create", "update", "patch", "delete", "deletecollection"]
  - level: Metadata
EOF
}

# ak_write_encryption_config KEY: a new cluster's EncryptionConfiguration: Secrets sealed with secretbox under
# KEY (32 random bytes, Base64); identity stays last so Secrets written before can still be read.
ak_write_encryption_config() {
  ak_install_encryption_config - <<EOF
apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: ["secrets"]
    providers:
      - secretbox:
          keys:
            - name: alicloud-kubeadm-1
              secret: $1
      - identity: {}
EOF
}

# ak_install_encryption_config -|GZ_B64: write stdin (-) or GZ_B64 (a member: the masters' whole file as join-secrets
# sends it) as the API server's EncryptionConfiguration (600); stop unless the file then holds exactly that.
ak_install_encryption_config() {
  local path="${AK_ROOT}${AK_ENCRYPTION_CONFIG}" want
  if [ "$1" = - ]; then want=$(cat); else want=$(printf '%s' "$1" | base64 -d 2>/dev/null | gzip -dc 2>/dev/null) || want=""; fi
  [[ $want == *EncryptionConfiguration* ]] || ak_die "the encryption config is not an EncryptionConfiguration (damaged on the way?)"
  (umask 077 && ak_write_file "$path" 600) <<<"$want" || true
  cmp -s "$path" <<<"$want" 2>/dev/null || ak_die "could not write ${AK_ENCRYPTION_CONFIG}: kube-apiserver must not start without it;" \
    "check that ${AK_ENCRYPTION_CONFIG%/*} is a writable directory with free space, then run again"
}

# ak_install_cert_renewal: a timer on this master that renews kubeadm's certificates once fewer than 90 days are
# left, then restarts the static pods one at a time; one that does not come back (its health endpoint) stops the
# renewal before the next restart, the error in the journal and in the state file cert-renew.last (doctor). Master N starts N hours after master 0 (its hostname ends in
# -master-N), so the masters never restart their control plane together.
ak_install_cert_renewal() {
  ak_write_file "${AK_ROOT}${AK_RENEW_BIN}" 755 <<'EOF' || true
#!/bin/bash
# alicloud-kubeadm certificate renewal
set -euo pipefail
pki=/etc/kubernetes/pki
manifests=/etc/kubernetes/manifests
log() { printf '%s %s\n' "$(date -u +%FT%TZ)" "$*"; }
state=/var/lib/alicloud-kubeadm/cert-renew.last
mark() { printf 'status=%s\ntime=%s\nerror=%s\n' "$1" "$(date -u +%FT%TZ)" "${2:-}" >"$state"; }
fail() {
  echo "ERROR: $*" >&2
  mark failed "$*"
  exit 1
}
healthy() {
  local p=6443/readyz
  case "$1" in kube-c*) p=10257/healthz ;; kube-s*) p=10259/healthz ;; esac
  curl -ksf --max-time 5 "https://127.0.0.1:$p" >/dev/null
}
index=$(hostname | sed -nE 's/.*-master-([0-9]+)$/\1/p')
sleep $((${index:-0} * 3600))
due=0
for crt in apiserver.crt apiserver-kubelet-client.crt apiserver-etcd-client.crt front-proxy-client.crt etcd/server.crt etcd/peer.crt; do
  [ ! -f "$pki/$crt" ] || openssl x509 -checkend $((90 * 86400)) -noout -in "$pki/$crt" >/dev/null || due=1
done
if [ "$due" = 0 ]; then
  log "certificates valid for more than 90 days: nothing to renew"
  mark ok
  exit 0
fi
log "renewing kubeadm certificates"
kubeadm certs renew all || fail "kubeadm certs renew all failed"
for component in etcd kube-apiserver kube-controller-manager kube-scheduler; do
  [ -f "$manifests/$component.yaml" ] || continue
  log "restarting $component"
  mv "$manifests/$component.yaml" "/etc/kubernetes/$component.yaml.ak-renew"
  sleep 20
  mv "/etc/kubernetes/$component.yaml.ak-renew" "$manifests/$component.yaml"
  for i in $(seq 60); do
    healthy "$component" && break
    [ "$i" -lt 60 ] || fail "$component did not come back; later ones not restarted"
    sleep 5
  done
done
mark ok
log "certificates renewed; expiry now: $(openssl x509 -enddate -noout -in "$pki/apiserver.crt")"
EOF
  ak_write_file "${AK_ROOT}/etc/systemd/system/${AK_RENEW_UNIT}.service" 644 <<EOF || true
[Unit]
Description=alicloud-kubeadm: renew kubeadm certificates before they expire
After=kubelet.service
[Service]
Type=oneshot
ExecStart=/bin/bash ${AK_RENEW_BIN}
EOF
  ak_write_file "${AK_ROOT}/etc/systemd/system/${AK_RENEW_UNIT}.timer" 644 <<EOF || true
[Unit]
Description=alicloud-kubeadm: weekly certificate expiry check
[Timer]
OnCalendar=Sun *-*-* 02:00:00 UTC
Persistent=true
[Install]
WantedBy=timers.target
EOF
  systemctl daemon-reload
  systemctl enable --now "${AK_RENEW_UNIT}.timer"
}
