#!/bin/bash
# init-status (on master 0): `status=done` and the CA certificate (Base64) once kubeadm init has finished,
# `status=failed` with the failure marker and the tail of the init log, or `status=waiting`.
if [ -f "${AK_STATE_DIR}/init.done" ]; then
  echo status=done
  base64 -w0 "${AK_ROOT}/etc/kubernetes/pki/ca.crt"
  echo
elif [ -f "${AK_STATE_DIR}/init.failed" ]; then
  echo status=failed
  cat "${AK_STATE_DIR}/init.failed"
  echo '--- last lines of the init log:'
  tail -c 3000 "${AK_LOG_DIR}/master-init.log" 2>/dev/null || echo '(no log at /var/log/alicloud-kubeadm/master-init.log)'
else
  echo status=waiting
fi
