#!/bin/bash
# etcd-backup-now (on a master): run this master's etcd backup now (the script its timer runs) and print the outcome
# (`status=ok` with the object's key, `status=skipped` on a master whose member does not lead, `status=failed` with the
# error), or `status=not-installed` on a master without the backup. src/recovery/backup.ts runs it on every master in
# turn before a control-plane change: the leader's master takes the backup.
bin="${AK_ROOT}/usr/local/sbin/alicloud-kubeadm-etcd-backup"
if [ ! -f "$bin" ]; then
  echo status=not-installed
  exit 0
fi
rc=0
bash "$bin" >/dev/null 2>&1 || rc=$?
cat "${AK_STATE_DIR}/backup.last" 2>/dev/null || echo status=failed
echo "exit_code=${rc}"
