#!/bin/bash
# alicloud-kubeadm node operations: functions every operation script shares.
# src/shell/render.ts builds a command as: a header of readonly AK_* parameters (saved commands: `{{name}}`
# placeholders Cloud Assistant fills in), this file, the parameter checks, then one operation script.
# Every path is under ${AK_ROOT}: empty on a node, a temporary directory in the test sandbox.
set -euo pipefail

AK_ROOT="${AK_ROOT:-}"
AK_ADMIN_CONF="${AK_ROOT}/etc/kubernetes/admin.conf"
# shellcheck disable=SC2034 # not every operation uses every path
AK_STATE_DIR="${AK_ROOT}/var/lib/alicloud-kubeadm"
# shellcheck disable=SC2034
AK_LOG_DIR="${AK_ROOT}/var/log/alicloud-kubeadm"

# ak_fail MESSAGE...: print the message on stderr and stop.
# shellcheck disable=SC2317 # not every operation calls every function
ak_fail() {
  printf 'error: %s\n' "$*" >&2
  exit 1
}

# ak_param NAME PATTERN WHAT: stop unless the parameter variable NAME matches PATTERN (extended regex).
# The caller checked the value already; this is the second line of defence on the machine itself.
# shellcheck disable=SC2317 # not every operation calls every function
ak_param() {
  [[ ${!1} =~ $2 ]] || ak_fail "parameter ${1#AK_} must be $3"
}

# ak_kubectl ARGS...: kubectl with the admin kubeconfig of this master.
# shellcheck disable=SC2317 # not every operation calls every function
ak_kubectl() {
  kubectl --kubeconfig="$AK_ADMIN_CONF" "$@"
}

# ak_compact: stdin gzip-compressed and Base64-encoded (Cloud Assistant keeps 24 KB of output), framed on a line of its
# own as `@@@ <base64>`: Cloud Assistant keeps stdout and stderr in one output, so what a command prints on stderr
# (a kubectl warning) lands beside the payload; the reader (src/cloud/operations.ts decompress) takes only the frame.
# The frame holds no Base64 letter: a reader from before it (a provider's delete running its last deployment's code)
# decodes `@@@ <base64>` as the bare Base64 it expects.
# shellcheck disable=SC2317 # not every operation calls every function
ak_compact() {
  local payload
  payload=$(gzip -c | base64 -w0)
  printf '\n@@@ %s\n' "$payload"
}

# ak_redact: copy stdin to stdout with the secret half of bootstrap tokens blanked.
# shellcheck disable=SC2317 # not every operation calls every function
ak_redact() {
  sed -E 's/([a-z0-9]{6})\.[a-z0-9]{16}/\1.<redacted>/g'
}

# ak_section NAME COMMAND...: `@@section NAME`, the command's output (stderr folded in), `@@rc <exit code>`.
# Doctor's scripts print named sections this way; a failing section does not stop the others.
# shellcheck disable=SC2317 # not every operation calls every function
ak_section() {
  local name=$1 rc=0 out
  shift
  printf '@@section %s\n' "$name"
  # Captured, then printed with a final newline: `@@rc` stays on a line of its own when the command's last words (a
  # warning on stderr) end without one.
  out=$( ("$@") 2>&1) || rc=$?
  [ -z "$out" ] || printf '%s\n' "$out"
  printf '@@rc %s\n' "$rc"
}
