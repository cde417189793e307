#!/bin/bash
# alicloud-kubeadm etcd backup (docs/disaster-recovery.md#backups), run by a timer on every master. Only the master
# whose etcd member leads the cluster, and answers healthy, takes the backup: one at a time, from a healthy member.
#   1. `etcdctl snapshot save`, then `etcdutl snapshot status` must read it (revision and key count);
#   2. a bundle: the snapshot, the API server's EncryptionConfiguration and the cluster's CA keys (a restored etcd
#      is unreadable without the first and untrusted without the second);
#   3. sealed to the backup key (X25519, AK_BACKUP_RECIPIENT): only its private half, which never lives in the
#      cluster, opens it;
#   4. PUT to OSS with an OSS V4 signature from the instance role's STS credentials (metadata service), under the
#      hourly prefix, and once a day under the daily prefix too; `x-oss-forbid-overwrite` and unique names.
# etcdctl and etcdutl run inside the etcd static pod's container (crictl exec): etcd 3.6's image (Kubernetes 1.34 and
# later) ships both; the etcd 3.5 images Kubernetes built itself ship etcdctl only, whose `snapshot status` 3.5 still
# has, so etcdctl reads the snapshot there (docs/upstream.md#etcd-image-etcdutl).
# Parameters come from the header (src/shell/render.ts renderEtcdBackup). Every path is under ${AK_ROOT}.
set -euo pipefail

AK_ROOT="${AK_ROOT:-}"
AK_METADATA="${AK_METADATA:-http://100.100.100.200/latest}"
AK_STATE_DIR="${AK_ROOT}/var/lib/alicloud-kubeadm"
# Inside the etcd pod's data mount (the same path in the container and on the host): etcdctl writes the snapshot there.
ak_snapshot_dir=/var/lib/etcd/alicloud-kubeadm-backup

ak_log() { printf '%s %s\n' "$(date -u +%FT%TZ)" "$*"; }

# ak_status STATUS KEY=VALUE...: the outcome of this run, for doctor (${AK_STATE_DIR}/backup.last).
ak_status() {
  mkdir -p "$AK_STATE_DIR"
  { printf 'status=%s\ntime=%s\n' "$1" "$(date -u +%FT%TZ)"; shift; printf '%s\n' "$@"; } >"${AK_STATE_DIR}/backup.last"
}

ak_fail() {
  ak_log "ERROR: $*" >&2
  ak_status failed "error=$*"
  exit 1
}

# ak_etcd TOOL ARGS...: etcdctl or etcdutl in the running etcd container.
ak_etcd() {
  local tool=$1
  shift
  if [ "$tool" = etcdctl ]; then
    set -- --endpoints=https://127.0.0.1:2379 --cacert=/etc/kubernetes/pki/etcd/ca.crt \
      --cert=/etc/kubernetes/pki/etcd/healthcheck-client.crt --key=/etc/kubernetes/pki/etcd/healthcheck-client.key "$@"
  fi
  crictl exec "$AK_ETCD_CONTAINER" "$tool" "$@"
}

# ak_field NAME: the value of "NAME" : value in etcdctl's `-w fields` output on stdin.
ak_field() { sed -n "s/^\"$1\" : \"\{0,1\}\([^\"]*\)\"\{0,1\}$/\1/p" | head -n 1; }

# ak_json_string NAME: the string value of NAME in the JSON document on stdin.
ak_json_string() { tr -d '\n' | sed -n "s/.*\"$1\" *: *\"\([^\"]*\)\".*/\1/p"; }

# ak_hmac KEYSPEC: hex HMAC-SHA256 of stdin (KEYSPEC: key:<text> or hexkey:<hex>).
ak_hmac() { openssl dgst -sha256 -mac HMAC -macopt "$1" | sed 's/^.*= *//'; }

# ak_credentials: AccessKey, secret and STS token of the instance's RAM role, from the metadata service (never stored).
ak_credentials() {
  local token="" json
  local -a auth=()
  token=$(curl -fsS --max-time 5 -X PUT -H "X-aliyun-ecs-metadata-token-ttl-seconds: 300" "${AK_METADATA}/api/token" 2>/dev/null) || token=""
  [ -z "$token" ] || auth=(-H "X-aliyun-ecs-metadata-token: ${token}")
  json=$(curl -fsS --max-time 5 "${auth[@]}" "${AK_METADATA}/meta-data/ram/security-credentials/${AK_BACKUP_ROLE}") ||
    ak_fail "no STS credentials for role ${AK_BACKUP_ROLE} from the metadata service: is the role attached to this instance?"
  AK_AK=$(ak_json_string AccessKeyId <<<"$json")
  AK_SK=$(ak_json_string AccessKeySecret <<<"$json")
  AK_STS=$(ak_json_string SecurityToken <<<"$json")
  if [ -z "$AK_AK" ] || [ -z "$AK_SK" ] || [ -z "$AK_STS" ]; then ak_fail "the metadata service answered no credentials for role ${AK_BACKUP_ROLE}"; fi
}

# ak_oss_put FILE KEY: PUT FILE as object KEY of the backup bucket, never over an existing object. OSS V4 signature
# (Authorization header; the STS token in x-oss-security-token; payload UNSIGNED-PAYLOAD): docs/upstream.md#oss-v4-signature.
ak_oss_put() {
  local file=$1 key=$2 now day scope canonical string sig k host
  [[ $key =~ ^[A-Za-z0-9._/-]+$ ]] || ak_fail "object key ${key} has characters this client does not encode"
  now=$(date -u +%Y%m%dT%H%M%SZ)
  day=${now%%T*}
  scope="${day}/${AK_BACKUP_REGION}/oss/aliyun_v4_request"
  canonical=$(printf 'PUT\n/%s/%s\n\ncontent-type:application/octet-stream\nx-oss-content-sha256:UNSIGNED-PAYLOAD\nx-oss-date:%s\nx-oss-forbid-overwrite:true\nx-oss-security-token:%s\n\n\nUNSIGNED-PAYLOAD' \
    "$AK_BACKUP_BUCKET" "$key" "$now" "$AK_STS")
  string=$(printf 'OSS4-HMAC-SHA256\n%s\n%s\n%s' "$now" "$scope" "$(printf '%s' "$canonical" | sha256sum | cut -c1-64)")
  k=$(printf '%s' "$day" | ak_hmac "key:aliyun_v4${AK_SK}")
  k=$(printf '%s' "$AK_BACKUP_REGION" | ak_hmac "hexkey:${k}")
  k=$(printf oss | ak_hmac "hexkey:${k}")
  k=$(printf aliyun_v4_request | ak_hmac "hexkey:${k}")
  sig=$(printf '%s' "$string" | ak_hmac "hexkey:${k}")
  host="${AK_BACKUP_ENDPOINT#*://}"
  curl -sS --fail-with-body --max-time 900 -X PUT -T "$file" \
    -H "Content-Type: application/octet-stream" -H "x-oss-date: ${now}" -H "x-oss-content-sha256: UNSIGNED-PAYLOAD" \
    -H "x-oss-forbid-overwrite: true" -H "x-oss-security-token: ${AK_STS}" \
    -H "Authorization: OSS4-HMAC-SHA256 Credential=${AK_AK}/${scope},Signature=${sig}" \
    "${AK_BACKUP_ENDPOINT%%://*}://${AK_BACKUP_BUCKET}.${host}/${key}"
}

# ak_seal_file IN OUT: seal IN to the backup key into OUT: one header line naming the key and the ephemeral X25519 key,
# then AES-256-CBC (key from the X25519 shared secret, PBKDF2) over the SHA-256 of IN followed by IN (the secret
# channel's construction, src/shell/channel.sh, on a file).
ak_seal_file() {
  local dir eph
  dir=$(mktemp -d "${AK_ROOT}${ak_snapshot_dir}/seal.XXXXXX")
  printf -- '-----BEGIN PUBLIC KEY-----\n%s\n-----END PUBLIC KEY-----\n' "$AK_BACKUP_RECIPIENT" >"${dir}/backup.pem"
  openssl genpkey -algorithm X25519 -out "${dir}/eph.key" 2>/dev/null
  openssl pkeyutl -derive -inkey "${dir}/eph.key" -peerkey "${dir}/backup.pem" -out "${dir}/shared"
  base64 -w0 <"${dir}/shared" >"${dir}/pass"
  { sha256sum <"$1" | cut -c1-64 | tr -d '\n'; cat "$1"; } |
    openssl enc -aes-256-cbc -pbkdf2 -iter 1000 -md sha256 -salt -pass "file:${dir}/pass" -out "${dir}/ct"
  eph=$(openssl pkey -in "${dir}/eph.key" -pubout -outform DER | base64 -w0)
  { printf 'alicloud-kubeadm-backup v1 key=%s ephemeral=%s\n' "$AK_BACKUP_KEY_ID" "$eph"; cat "${dir}/ct"; } >"$2"
  rm -rf "$dir"
}

mkdir -p "${AK_ROOT}/run" "$AK_STATE_DIR"
exec 9>"${AK_ROOT}/run/alicloud-kubeadm-etcd-backup.lock"
flock -n 9 || { ak_log "another backup runs on this master"; exit 0; }

AK_ETCD_CONTAINER=$(crictl ps --name '^etcd$' --state Running -q 2>/dev/null | head -n 1)
[ -n "$AK_ETCD_CONTAINER" ] || ak_fail "no running etcd container on this master"
status=$(ak_etcd etcdctl endpoint status -w fields) || ak_fail "this master's etcd does not answer endpoint status"
member=$(ak_field MemberID <<<"$status")
leader=$(ak_field Leader <<<"$status")
if [ -z "$leader" ] || [ "$leader" = 0 ]; then ak_fail "etcd has no leader: no backup (check etcd on the masters)"; fi
if [ "$member" != "$leader" ]; then
  ak_log "this master's etcd member ($member) does not lead; the leader's master ($leader) takes the backup"
  ak_status skipped "leader=${leader}"
  exit 0
fi
ak_etcd etcdctl endpoint health >/dev/null 2>&1 || ak_fail "this master's etcd member leads but is not healthy"

mkdir -p "${AK_ROOT}${ak_snapshot_dir}"
work=$(mktemp -d "${AK_ROOT}${ak_snapshot_dir}/run.XXXXXX")
trap 'rm -rf "$work"' EXIT
inside="${ak_snapshot_dir}/${work##*/}"
ak_etcd etcdctl snapshot save "${inside}/snapshot.db" >/dev/null || ak_fail "etcdctl snapshot save failed"
snapshot_tool=etcdutl
ak_etcd etcdutl version >/dev/null 2>&1 || snapshot_tool=etcdctl
snap=$(ak_etcd "$snapshot_tool" snapshot status "${inside}/snapshot.db" -w fields) || ak_fail "${snapshot_tool} snapshot status cannot read the snapshot"
revision=$(ak_field Revision <<<"$snap")
keys=$(ak_field Keys <<<"$snap")
[[ $revision =~ ^[0-9]+$ && $keys =~ ^[1-9][0-9]*$ ]] || ak_fail "${snapshot_tool} snapshot status: revision '${revision}', ${keys:-no} keys"

mkdir -p "${work}/bundle/pki/etcd"
mv "${work}/snapshot.db" "${work}/bundle/snapshot.db"
manifest="${AK_ROOT}/etc/kubernetes/manifests/kube-apiserver.yaml"
conf=$(sed -n 's/^ *- *--encryption-provider-config=//p' "$manifest" 2>/dev/null | head -n 1 || true)
if [ -n "$conf" ]; then
  cp "${AK_ROOT}${conf}" "${work}/bundle/encryption-config.yaml" || ak_fail "cannot read the API server's encryption config ${conf}"
fi
for f in ca.crt ca.key sa.key sa.pub front-proxy-ca.crt front-proxy-ca.key etcd/ca.crt etcd/ca.key; do
  [ ! -f "${AK_ROOT}/etc/kubernetes/pki/${f}" ] || cp "${AK_ROOT}/etc/kubernetes/pki/${f}" "${work}/bundle/pki/${f}"
done
created=$(date -u +%Y-%m-%dT%H%M%SZ)
printf 'cluster=%s\nmember=%s\nrevision=%s\nkeys=%s\ncreated=%s\nencryption_config=%s\n' \
  "$AK_CLUSTER_NAME" "$member" "$revision" "$keys" "$created" "${conf:-none}" >"${work}/bundle/backup.txt"
tar -C "${work}/bundle" -czf "${work}/bundle.tgz" .
ak_seal_file "${work}/bundle.tgz" "${work}/backup.enc"
bytes=$(wc -c <"${work}/backup.enc")

ak_credentials
name="${created}-${member}-$(openssl rand -hex 4).etcd.enc"
ak_oss_put "${work}/backup.enc" "${AK_BACKUP_HOURLY_PREFIX}${name}" >/dev/null || ak_fail "upload of ${AK_BACKUP_HOURLY_PREFIX}${name} failed"
daily=""
if [ "$(cat "${AK_STATE_DIR}/backup.daily" 2>/dev/null || true)" != "${created%%T*}" ]; then
  ak_oss_put "${work}/backup.enc" "${AK_BACKUP_DAILY_PREFIX}${name}" >/dev/null || ak_fail "upload of ${AK_BACKUP_DAILY_PREFIX}${name} failed"
  printf '%s\n' "${created%%T*}" >"${AK_STATE_DIR}/backup.daily"
  daily="${AK_BACKUP_DAILY_PREFIX}${name}"
fi
ak_status ok "key=${AK_BACKUP_HOURLY_PREFIX}${name}" "daily=${daily}" "bytes=${bytes}" "revision=${revision}" "keys=${keys}" "backup_key=${AK_BACKUP_KEY_ID}"
ak_log "backup ${AK_BACKUP_HOURLY_PREFIX}${name}: revision ${revision}, ${keys} keys, ${bytes} bytes sealed to key ${AK_BACKUP_KEY_ID}${daily:+ (daily copy ${daily})}"
