#!/bin/bash
# alicloud-kubeadm secret channel, node side (src/cloud/channel.ts is the other side; docs/security.md).
# A secret never crosses Cloud Assistant in clear: it is sealed to an X25519 key made for that one call.
# Needs openssl >= 1.1.1 (X25519, enc -pbkdf2), sha256sum and base64. Rendered into every node operation;
# every path is under ${AK_ROOT}.

# ak_channel_fail MESSAGE: print the message on stderr and stop.
# shellcheck disable=SC2317 # not every script calls every function
ak_channel_fail() {
  printf 'error: %s\n' "$*" >&2
  exit 1
}

# ak_channel_tmp: a fresh root-only directory on tmpfs when there is one (key material never reaches a disk).
# shellcheck disable=SC2317 # not every script calls every function
ak_channel_tmp() {
  local base="${AK_ROOT}/dev/shm"
  [ -d "$base" ] && [ -w "$base" ] || base="${TMPDIR:-/tmp}"
  (umask 077 && mktemp -d "${base}/ak-channel.XXXXXXXX")
}

# ak_channel_pem FILE B64: write an X25519 public key (SPKI DER, Base64) as PEM.
# shellcheck disable=SC2317
ak_channel_pem() {
  printf -- '-----BEGIN PUBLIC KEY-----\n%s\n-----END PUBLIC KEY-----\n' "$2" >"$1"
}

# ak_seal PUBLIC_KEY: seal stdin to PUBLIC_KEY (X25519, SPKI DER Base64); print `<ephemeral key>.<ciphertext>`.
# shellcheck disable=SC2317
ak_seal() {
  [[ $1 =~ ^MCowBQYDK2VuAyEA[A-Za-z0-9+/]{43}=$ ]] || ak_channel_fail "the recipient is not an X25519 public key"
  local dir rc=0 eph
  dir=$(ak_channel_tmp)
  # set -e is off inside an `||` list: every step is chained with &&.
  {
    cat >"${dir}/msg" &&
      ak_channel_pem "${dir}/peer.pem" "$1" &&
      openssl genpkey -algorithm X25519 -out "${dir}/eph.key" 2>/dev/null &&
      openssl pkeyutl -derive -inkey "${dir}/eph.key" -peerkey "${dir}/peer.pem" -out "${dir}/shared" &&
      base64 -w0 <"${dir}/shared" >"${dir}/pass" &&
      sha256sum <"${dir}/msg" | cut -c1-64 | tr -d '\n' >"${dir}/framed" &&
      cat "${dir}/msg" >>"${dir}/framed" &&
      openssl enc -aes-256-cbc -pbkdf2 -iter 1000 -md sha256 -salt -pass "file:${dir}/pass" -in "${dir}/framed" -out "${dir}/ct" &&
      eph=$(openssl pkey -in "${dir}/eph.key" -pubout -outform DER | base64 -w0) &&
      printf '%s.%s\n' "$eph" "$(base64 -w0 <"${dir}/ct")"
  } || rc=$?
  rm -rf "$dir"
  [ "$rc" -eq 0 ] || ak_channel_fail "sealing failed (openssl >= 1.1.1 with X25519 is needed)"
}

# ak_channel_dir: where the instance keeps the private keys of open channels (ID.key) and the secrets received
# for the join script (ID), root only, on tmpfs.
# shellcheck disable=SC2317
ak_channel_dir() {
  local dir="${AK_ROOT}/run/alicloud-kubeadm"
  (umask 077 && mkdir -p "$dir")
  printf '%s' "$dir"
}

# ak_channel_open ID: make the one-use key pair of channel ID (32 hex digits); print its public key.
# shellcheck disable=SC2317
ak_channel_open() {
  [[ $1 =~ ^[0-9a-f]{32}$ ]] || ak_channel_fail "the channel id must be 32 hex digits"
  local dir
  dir=$(ak_channel_dir)
  (umask 077 && openssl genpkey -algorithm X25519 -out "${dir}/$1.key" 2>/dev/null) || ak_channel_fail "openssl >= 1.1.1 with X25519 is needed"
  openssl pkey -in "${dir}/$1.key" -pubout -outform DER | base64 -w0
  echo
}

# ak_unseal ID SEALED: open SEALED with channel ID's private key (deleted, whatever the outcome); print the secret.
# (channel-receive keeps it in ${AK_ROOT}/run/alicloud-kubeadm/ID for the join script.)
# shellcheck disable=SC2317
ak_unseal() {
  [[ $1 =~ ^[0-9a-f]{32}$ ]] || ak_channel_fail "the channel id must be 32 hex digits"
  [[ $2 =~ ^(MCowBQYDK2VuAyEA[A-Za-z0-9+/]{43}=)\.([A-Za-z0-9+/]+={0,2})$ ]] || ak_channel_fail "the sealed secret is malformed"
  local eph=${BASH_REMATCH[1]} body=${BASH_REMATCH[2]} key tmp rc=0 want got
  key="$(ak_channel_dir)/$1.key"
  [ -f "$key" ] || ak_channel_fail "channel $1 is not open on this instance (opened elsewhere, used already, or lost in a reboot)"
  tmp=$(ak_channel_tmp)
  {
    ak_channel_pem "${tmp}/peer.pem" "$eph" &&
      printf '%s' "$body" | base64 -d >"${tmp}/ct" &&
      openssl pkeyutl -derive -inkey "$key" -peerkey "${tmp}/peer.pem" -out "${tmp}/shared" &&
      base64 -w0 <"${tmp}/shared" >"${tmp}/pass" &&
      openssl enc -d -aes-256-cbc -pbkdf2 -iter 1000 -md sha256 -pass "file:${tmp}/pass" -in "${tmp}/ct" -out "${tmp}/framed" &&
      want=$(head -c 64 "${tmp}/framed") &&
      tail -c +65 "${tmp}/framed" >"${tmp}/msg" &&
      got=$(sha256sum <"${tmp}/msg" | cut -c1-64) &&
      [ "$want" = "$got" ] &&
      cat "${tmp}/msg"
  } 2>/dev/null || rc=$?
  rm -rf "$tmp" "$key"
  [ "$rc" -eq 0 ] || ak_channel_fail "the sealed secret does not open with channel $1's key (altered, or sealed to another key)"
}
