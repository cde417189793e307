#!/bin/bash
# alicloud-kubeadm bake mode: run the node preparation steps (AK_PREPARE_STEPS, the same list a stock boot
# runs) on an image-build instance, record what was baked, then clean the machine for cloning. Rendered by
# src/shell/render.ts renderBakeNode and run by the NodeImage component's image build (an ECS Image Builder
# component). The header carries no cluster secret: no token, no CA pin, no endpoint.
set -euo pipefail

ak_start_log bake-node
ak_require AK_KUBERNETES_VERSION AK_K8S_REPO_URL AK_SANDBOX_IMAGE AK_IMAGE_REPOSITORY AK_BAKE

# ak_clean_for_cloning: nothing that identifies this build machine or a cluster stays on the image: the
# machine id (systemd makes a new one at first boot from the empty file), cloud-init's per-instance state
# (so userdata runs again on every instance made from the image), SSH host keys (regenerated at first boot),
# logs, shell history, and no kubeadm/kubelet state.
ak_clean_for_cloning() {
  local f
  if [ -e "${AK_ROOT}/etc/kubernetes/kubelet.conf" ] || [ -e "${AK_ROOT}/etc/kubernetes/pki" ]; then
    ak_die "this machine holds cluster state (/etc/kubernetes); bake a fresh instance"
  fi
  if command -v cloud-init >/dev/null; then cloud-init clean --logs; fi
  rm -rf "${AK_ROOT}/var/lib/cloud/instances" "${AK_ROOT}/var/lib/cloud/instance" "${AK_ROOT}/var/lib/cloud/data" \
    "${AK_ROOT}/var/lib/cloud/sem"
  rm -f "${AK_ROOT}/etc/ssh/"ssh_host_*
  : >"${AK_ROOT}/etc/machine-id"
  rm -f "${AK_ROOT}/var/lib/dbus/machine-id" "${AK_ROOT}/root/.bash_history"
  rm -rf "${AK_ROOT}/var/log/journal/"* "$AK_LOG_DIR"
  while IFS= read -r -d '' f; do : >"$f"; done < <(find "${AK_ROOT}/var/log" -type f -print0 2>/dev/null)
}

ak_prepare_node
mapfile -t summary < <(ak_baked_summary)
ak_mark baked "${summary[@]}" "steps=$(declare -f ak_prepare_node | sed -n 's/^ *for s in \([^;]*\);.*/\1/p')"
ak_log "baked Kubernetes v${AK_KUBERNETES_VERSION}, containerd, the CNI plugins and the node images; cleaning for cloning"
ak_clean_for_cloning
