#!/bin/bash
# alicloud-kubeadm etcd restore (docs/disaster-recovery.md#lost-whole-control-plane), on the master restored onto.
# Its functions: open a sealed backup, either with the backup key's private half (which never lives in the cluster) or
# with the password of that one object (what `npm run restore` sends, sealed, so the key itself never reaches a master),
# and restore its bundle onto this master: `etcdutl snapshot restore` (a new cluster id, this master its only member),
# the CA material and the EncryptionConfiguration of the backup in place. The control plane must be stopped. The steps
# around them (download, stop, start) are the etcd-restore operation's (src/shell/ops/etcd-restore.sh).
# Parameters: AK_NODE_NAME (this master's etcd member name = its Node name), AK_PEER_URL (https://<ip>:2380),
# AK_ETCD_IMAGE (the etcd image of kubeadm's version). Every path is under ${AK_ROOT}.
set -euo pipefail

AK_ROOT="${AK_ROOT:-}"

ak_log() { printf '%s %s\n' "$(date -u +%FT%TZ)" "$*" >&2; }
ak_fail() {
  ak_log "ERROR: $*"
  exit 1
}

# ak_backup_pass OBJECT KEYFILE PASSFILE: write to PASSFILE the password that opens OBJECT: the Base64 of the X25519
# secret its ephemeral key shares with the backup key KEYFILE (PEM). It opens this one object and no other backup.
ak_backup_pass() {
  local object=$1 key=$2 pass=$3 tmp header
  tmp=$(mktemp -d)
  header=$(head -n 1 "$object")
  [[ $header =~ ^alicloud-kubeadm-backup\ v1\ key=([0-9a-f]+)\ ephemeral=(MCowBQYDK2VuAyEA[A-Za-z0-9+/]{43}=)$ ]] ||
    ak_fail "not an alicloud-kubeadm backup (v1): its first line is not the backup header"
  printf -- '-----BEGIN PUBLIC KEY-----\n%s\n-----END PUBLIC KEY-----\n' "${BASH_REMATCH[2]}" >"${tmp}/eph.pem"
  openssl pkeyutl -derive -inkey "$key" -peerkey "${tmp}/eph.pem" -out "${tmp}/shared" 2>/dev/null ||
    ak_fail "the key does not open backup key ${BASH_REMATCH[1]}'s backups (another key, or not an X25519 private key)"
  (umask 077 && base64 -w0 <"${tmp}/shared" >"$pass")
  rm -rf "$tmp"
}

# ak_open_backup_pass OBJECT PASSFILE DIR: open a sealed backup (src/shell/etcd_backup.sh ak_seal_file) with its password
# and unpack its bundle into DIR; stop unless the SHA-256 inside matches.
ak_open_backup_pass() {
  local object=$1 pass=$2 out=$3 tmp header want got
  tmp=$(mktemp -d)
  header=$(head -n 1 "$object")
  [[ $header =~ ^alicloud-kubeadm-backup\ v1\ key=([0-9a-f]+)\ ephemeral= ]] ||
    ak_fail "not an alicloud-kubeadm backup (v1): its first line is not the backup header"
  tail -c +$((${#header} + 2)) "$object" |
    openssl enc -d -aes-256-cbc -pbkdf2 -iter 1000 -md sha256 -pass "file:${pass}" -out "${tmp}/framed" 2>/dev/null ||
    ak_fail "the backup does not open with this password (sealed to key ${BASH_REMATCH[1]}, or damaged)"
  want=$(head -c 64 "${tmp}/framed")
  tail -c +65 "${tmp}/framed" >"${tmp}/bundle.tgz"
  got=$(sha256sum <"${tmp}/bundle.tgz" | cut -c1-64)
  [ "$want" = "$got" ] || ak_fail "the backup is damaged (its SHA-256 does not match)"
  (umask 077 && mkdir -p "$out")
  tar -C "$out" -xzf "${tmp}/bundle.tgz"
  rm -rf "$tmp"
  [ -f "${out}/snapshot.db" ] || ak_fail "the backup holds no snapshot.db"
}

# ak_open_backup OBJECT KEYFILE DIR: open a sealed backup with the private key KEYFILE (X25519, PEM) and unpack its
# bundle into DIR.
ak_open_backup() {
  local pass
  pass=$(mktemp)
  ak_backup_pass "$1" "$2" "$pass"
  ak_open_backup_pass "$1" "$pass" "$3"
  rm -f "$pass"
}

# ak_etcdutl ARGS...: etcdutl from the etcd image (the host has none); /var/lib is shared with it. etcd 3.6's image
# (Kubernetes 1.34 and later) ships etcdutl; the etcd 3.5 images Kubernetes built itself ship etcdctl only, whose
# `snapshot restore` 3.5 still has with the same flags: then etcdctl runs it (docs/upstream.md#etcd-image-etcdutl).
ak_etcdutl() {
  local tool=etcdutl
  ctr -n k8s.io image pull "$AK_ETCD_IMAGE" >/dev/null 2>&1 || crictl pull "$AK_ETCD_IMAGE" >/dev/null
  ak_etcd_image etcdutl version >/dev/null 2>&1 || tool=etcdctl
  ak_etcd_image "$tool" "$@"
}

# ak_etcd_image TOOL ARGS...: TOOL of the etcd image in a throwaway container, /var/lib shared with it.
ak_etcd_image() {
  ctr -n k8s.io run --rm --mount "type=bind,src=${AK_ROOT}/var/lib,dst=/var/lib,options=rbind:rw" \
    "$AK_ETCD_IMAGE" "ak-etcd-$$-${RANDOM}" "$@"
}

# ak_restore_bundle DIR: etcd from DIR/snapshot.db into /var/lib/etcd (the old data kept aside), then the CA keys and the
# encryption config of the bundle into /etc/kubernetes/pki. The control plane must be stopped.
ak_restore_bundle() {
  local dir=$1 stamp conf
  stamp=$(date -u +%Y%m%dT%H%M%SZ)
  mkdir -p "${AK_ROOT}/var/lib/alicloud-kubeadm-restore"
  cp "${dir}/snapshot.db" "${AK_ROOT}/var/lib/alicloud-kubeadm-restore/snapshot.db"
  rm -rf "${AK_ROOT}/var/lib/alicloud-kubeadm-restore/etcd"
  ak_etcdutl snapshot restore /var/lib/alicloud-kubeadm-restore/snapshot.db --data-dir /var/lib/alicloud-kubeadm-restore/etcd \
    --name "$AK_NODE_NAME" --initial-cluster "${AK_NODE_NAME}=${AK_PEER_URL}" --initial-advertise-peer-urls "$AK_PEER_URL" \
    --initial-cluster-token "alicloud-kubeadm-restore-${stamp}" >&2 || ak_fail "etcdutl snapshot restore failed"
  if [ -e "${AK_ROOT}/var/lib/etcd" ]; then mv "${AK_ROOT}/var/lib/etcd" "${AK_ROOT}/var/lib/etcd.before-restore-${stamp}"; fi
  mv "${AK_ROOT}/var/lib/alicloud-kubeadm-restore/etcd" "${AK_ROOT}/var/lib/etcd"
  chmod 700 "${AK_ROOT}/var/lib/etcd"
  rm -f "${AK_ROOT}/var/lib/alicloud-kubeadm-restore/snapshot.db"
  mkdir -p "${AK_ROOT}/etc/kubernetes/pki/etcd"
  if [ -d "${dir}/pki" ]; then
    (cd "${dir}/pki" && find . -type f) | while read -r f; do
      install -m 600 "${dir}/pki/${f#./}" "${AK_ROOT}/etc/kubernetes/pki/${f#./}"
    done
  fi
  if [ -f "${dir}/encryption-config.yaml" ]; then
    conf=$(sed -n 's/^encryption_config=//p' "${dir}/backup.txt")
    # A path the backup names: a file under /etc/kubernetes only (never one that climbs out with ..), else the default.
    [[ $conf =~ ^/etc/kubernetes/[A-Za-z0-9._/-]+$ && $conf != *..* ]] || conf=/etc/kubernetes/pki/alicloud-kubeadm-encryption.yaml
    install -m 600 "${dir}/encryption-config.yaml" "${AK_ROOT}${conf}"
  fi
  ak_log "etcd restored from revision $(sed -n 's/^revision=//p' "${dir}/backup.txt") of $(sed -n 's/^created=//p' "${dir}/backup.txt"): a new cluster id, member ${AK_NODE_NAME} alone"
}
