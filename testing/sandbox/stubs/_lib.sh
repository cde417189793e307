# shellcheck shell=bash
# Shared by the sandbox stubs: guard, call recording, counters, timed sleeps.
# Environment (set by testing/sandbox/index.ts): AK_ROOT, AK_STUB_STATE, AK_STUB_SRC, AK_STUB_INSTALLED.
set -euo pipefail
if [ -z "${AK_ROOT:-}" ] || [ "$AK_ROOT" = / ] || [ -z "${AK_STUB_STATE:-}" ]; then
  echo "sandbox stub ${0##*/}: AK_ROOT and AK_STUB_STATE must point into a sandbox" >&2
  exit 97
fi
STUB_NAME=${0##*/}

# Record this call (sequence number, name, argv) separated by \x1f, terminated by \x1e, under a lock because
# stubs run concurrently in pipelines (curl | gpg). No forks: stubs stay fast.
stub_lock_tries=0
until mkdir "$AK_STUB_STATE/lock" 2>/dev/null; do
  stub_lock_tries=$((stub_lock_tries + 1))
  [ "$stub_lock_tries" -lt 200000 ] || { echo "stub ${STUB_NAME}: lock $AK_STUB_STATE/lock is stale" >&2; exit 98; }
done
STUB_SEQ=0
[ ! -f "$AK_STUB_STATE/seq" ] || read -r STUB_SEQ <"$AK_STUB_STATE/seq" || true
STUB_SEQ=$((STUB_SEQ + 1))
echo "$STUB_SEQ" >"$AK_STUB_STATE/seq"
stub_record="${STUB_SEQ}"$'\037'"${STUB_NAME}"
for stub_arg in "$@"; do stub_record+=$'\037'"${stub_arg}"; done
printf '%s\036' "$stub_record" >>"$AK_STUB_STATE/calls.log"
rmdir "$AK_STUB_STATE/lock"

# stub_capture FILE: keep a copy of FILE as the "config" of this call.
stub_capture() {
  mkdir -p "$AK_STUB_STATE/captured"
  cp "$1" "$AK_STUB_STATE/captured/$STUB_SEQ"
}

# stub_count KEY: increment a counter that survives between runs; the new value is in STUB_COUNT.
stub_count() {
  local file="$AK_STUB_STATE/count.$1"
  STUB_COUNT=0
  [ ! -f "$file" ] || read -r STUB_COUNT <"$file" || true
  STUB_COUNT=$((STUB_COUNT + 1))
  echo "$STUB_COUNT" >"$file"
}

# stub_sleep CATEGORY MILLISECONDS: sleep and record the time spent under CATEGORY (for the benchmark).
stub_sleep() {
  local ms=${2:-0}
  [ "$ms" -gt 0 ] || return 0
  sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
  printf '%s %s\n' "$1" "$ms" >>"$AK_STUB_STATE/timing.log"
}

# stub_install NAME: make an installed binary appear on PATH (copied from the stub sources).
stub_install() {
  mkdir -p "$AK_STUB_INSTALLED"
  cp "$AK_STUB_SRC/$1" "$AK_STUB_INSTALLED/$1"
  chmod +x "$AK_STUB_INSTALLED/$1"
}

# stub_install_cni: put the standard CNI plugins (the kubernetes-cni package) into ${AK_ROOT}/opt/cni/bin.
stub_install_cni() {
  local plugin
  mkdir -p "$AK_ROOT/opt/cni/bin"
  for plugin in bridge host-local portmap loopback; do
    printf '#!/bin/sh\nexit 0\n' >"$AK_ROOT/opt/cni/bin/$plugin"
    chmod +x "$AK_ROOT/opt/cni/bin/$plugin"
  done
}
