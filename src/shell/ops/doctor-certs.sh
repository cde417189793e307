#!/bin/bash
# doctor-certs (on a master, read-only): when each certificate kubeadm manages expires (the PKI files and the
# client certificates inside the control plane's kubeconfigs), one `<name> <notAfter, ISO 8601>` line each, and
# whether the renewal timer is enabled, the last renewal's and the last etcd backup's outcome; gzip+Base64.
certs() {
  local f name pem dir="${AK_ROOT}/etc/kubernetes"
  for f in "$dir"/pki/*.crt "$dir"/pki/etcd/*.crt "$dir"/*.conf; do
    [ -f "$f" ] || continue
    name=${f#"$dir"/}
    case "$f" in
      *.conf) pem=$(sed -n 's/^ *client-certificate-data: *//p' "$f" | head -n 1 | base64 -d 2>/dev/null) || continue ;;
      *) pem=$(cat "$f") ;;
    esac
    [ -n "$pem" ] || continue
    printf '%s %s\n' "$name" "$(date -u -d "$(openssl x509 -enddate -noout <<<"$pem" | cut -d= -f2)" +%Y-%m-%dT%H:%M:%SZ)"
  done
}
{
  ak_section certs certs
  ak_section timer systemctl is-enabled alicloud-kubeadm-cert-renew.timer
  ak_section renewal cat "${AK_STATE_DIR}/cert-renew.last"
  ak_section backup cat "${AK_STATE_DIR}/backup.last"
} | ak_compact
