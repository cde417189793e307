#!/bin/bash
# alicloud-kubeadm node images: appended after prepare_node.sh by src/shell/render.ts when the node lists its
# images (AK_NODE_IMAGES: baked clusters, and the bake mode itself). Replaces prepare_node.sh's empty
# ak_pull_images step, and on a baked image checks the image against this node's parameters first.
# Kept short: it counts against the 20 KiB userdata budget (pools only; master 0's userdata has no room for it).
set -euo pipefail

# ak_baked_summary: what decides a baked image's content, KEY=VALUE per line (the marker; compared at boot).
ak_baked_summary() {
  printf '%s\n' "kubernetes_version=${AK_KUBERNETES_VERSION}" "sandbox_image=${AK_SANDBOX_IMAGE}" "node_images=${AK_NODE_IMAGES}"
}

# ak_pull_images: on a baked image (marker ${AK_STATE_DIR}/baked) first log whether it matched this node: a stale
# one is not trusted, the steps before installed what differs. Then pull, in parallel, each image containerd lacks:
# AK_NODE_IMAGES (comma-separated, from src/rules/images.ts nodeImages) and, when baking, kubeadm's list of the
# control-plane images, so masters boot from the same image. A failed pull stops the bake; on a boot it is a
# warning (the kubelet pulls what it needs itself, later).
ak_pull_images() {
  local m="${AK_STATE_DIR}/baked" i failed=0
  local -a all=() missing=()
  if [ "${AK_BAKE:-0}" != 1 ] && [ -f "$m" ]; then
    if [ "$(grep -E '^(kubernetes_version|sandbox_image|node_images)=' "$m" || true)" = "$(ak_baked_summary)" ]; then
      ak_log "baked image matches"
    else
      ak_log "WARNING: stale baked image ($(tr '\n' ' ' <"$m")): installed and pulling what differs"
    fi
  fi
  IFS=, read -r -a all <<<"$AK_NODE_IMAGES"
  if [ "${AK_BAKE:-0}" = 1 ]; then
    mapfile -t -O "${#all[@]}" all < <(kubeadm config images list --kubernetes-version "v${AK_KUBERNETES_VERSION}" --image-repository "$AK_IMAGE_REPOSITORY")
  fi
  for i in "${all[@]}"; do
    case " ${missing[*]} " in *" $i "*) continue ;; esac
    crictl --runtime-endpoint "$AK_CRI_SOCKET" inspecti -q "$i" >/dev/null 2>&1 || missing+=("$i")
  done
  ak_log "node images: ${#all[@]}, pulling ${#missing[@]} in parallel"
  for i in "${missing[@]}"; do crictl --runtime-endpoint "$AK_CRI_SOCKET" pull "$i" & done
  for i in "${missing[@]}"; do wait -n || failed=$((failed + 1)); done
  [ "$failed" -eq 0 ] && return 0
  [ "${AK_BAKE:-0}" != 1 ] || ak_die "${failed} image pull(s) failed"
  ak_log "WARNING: ${failed} image pull(s) failed; the kubelet pulls them later"
}
