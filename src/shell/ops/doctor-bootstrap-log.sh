#!/bin/bash
# doctor-bootstrap-log (on a node, read-only): the last AK_LINES lines of every bootstrap log, the failure
# markers, and cloud-init's output when no bootstrap log exists (userdata never ran); token secrets blanked
# on this machine, at most 20 KB.
bootstrap_log() {
  local found=0 f m
  for f in "${AK_LOG_DIR}"/*.log; do
    [ -f "$f" ] || continue
    found=1
    echo "==> ${f#"$AK_ROOT"}"
    tail -n "$AK_LINES" "$f"
  done
  for m in "${AK_STATE_DIR}"/*.failed; do
    [ -f "$m" ] || continue
    echo "==> marker ${m#"$AK_ROOT"}"
    cat "$m"
  done
  if [ "$found" = 0 ]; then
    echo "==> no /var/log/alicloud-kubeadm/*.log (user data did not start?)"
    tail -n "$AK_LINES" "${AK_ROOT}/var/log/cloud-init-output.log" 2>&1 || true
  fi
}
bootstrap_log 2>&1 | ak_redact | tail -c 20000
