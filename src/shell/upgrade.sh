#!/bin/bash
# alicloud-kubeadm upgrade step: one step of moving this master or node to AK_KUBERNETES_VERSION, chosen by the
# parameter AK_UPGRADE_STEP. The program (src/upgrade/) runs the steps in order, one master at a time, and decides each from
# what it reads; every step can run again and then does what is left (a package already at the version stays,
# `kubeadm upgrade apply/node` of the version it runs re-applies it). A person can run the same steps by hand:
#   status         kubeadm=, kubelet=, apiserver= (this master's static pod manifest; none on a worker) versions
#   kubeadm        install kubeadm of the target version (prepare_node.sh's package path and the target minor's repository)
#   plan           kubeadm upgrade plan v<target>: stops on its errors (preflight, skew, etcd, component health)
#   apply          kubeadm upgrade apply v<target> (the first master; with a single master it also moves CoreDNS and kube-proxy)
#   node           kubeadm upgrade node (every other master, in turn: the last one moves CoreDNS and kube-proxy; on a worker
#                  its kubelet configuration)
#   control-plane  kubeadm upgrade node phase control-plane: rewrite this master's static pod manifests from kubeadm-config
#                  (how a ClusterConfiguration change reaches an existing master, docs/upgrades.md#cluster-configuration)
#   kubelet        install kubelet and kubectl of the target version and restart the kubelet (after the drain)
# The last line is `upgrade-step=<step> result=ok`; on failure, the tail of the step's log and `result=failed`.
set -euo pipefail

ak_require AK_KUBERNETES_VERSION AK_K8S_REPO_URL AK_UPGRADE_STEP
mkdir -p "$AK_LOG_DIR"
AK_UPGRADE_LOG="${AK_LOG_DIR}/upgrade-${AK_KUBERNETES_VERSION}.log"
target="v${AK_KUBERNETES_VERSION}"

# ak_manifest_version: the image tag of this master's kube-apiserver static pod, or `none`.
ak_manifest_version() {
  local f="${AK_ROOT}/etc/kubernetes/manifests/kube-apiserver.yaml" image
  [ -f "$f" ] || { echo none; return 0; }
  image=$(sed -nE 's/^[[:space:]]*image:[[:space:]]*"?([^"[:space:]]+)"?.*$/\1/p' "$f" | head -n 1)
  image=${image##*:}
  echo "${image#v}"
}

# ak_upgrade_packages PACKAGE...: those Kubernetes packages at the target version, through prepare_node.sh's install path.
ak_upgrade_packages() {
  ak_detect_os
  AK_KUBE_PACKAGES="$*" "ak_install_${AK_PKG}" 1 0 0
}

# ak_upgrade_overlays: the node image's overlays (docs/architecture.md#node-image-overlays) as `kubeadm upgrade` flags,
# as the join and init configs carry them: ak_ignored (--ignore-preflight-errors=<the checks the image fails knowingly>)
# and ak_patches (--patches <its kubeadm patches directory>). Without them `upgrade node` rewrites the kubelet's
# configuration without the image's kubeletconfiguration patch, and its preflight fails what the join was told to pass.
ak_upgrade_overlays() {
  local f="${AK_ROOT}/etc/alicloud-kubeadm/ignore-preflight-errors" d="${AK_ROOT}/etc/alicloud-kubeadm/kubeadm-patches" c list=""
  local -a checks=()
  [ ! -s "$f" ] || IFS=$', \t\n' read -d '' -ra checks <"$f" || true
  for c in "${checks[@]}"; do
    [[ $c =~ ^[A-Za-z0-9._-]+$ ]] || ak_die "${f#"$AK_ROOT"}: expected comma-separated kubeadm check names"
    list+="${list:+,}$c"
  done
  ak_ignored=() ak_patches=()
  [ -z "$list" ] || ak_ignored=("--ignore-preflight-errors=${list}")
  [ -z "$(ls -A "$d" 2>/dev/null)" ] || ak_patches=(--patches "$d")
}

# ak_step_run COMMAND...: run it with its output in the upgrade log; on failure print the log's tail and stop.
ak_step_run() {
  local rc=0
  ak_log "${AK_UPGRADE_STEP}: $*"
  "$@" >>"$AK_UPGRADE_LOG" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ]; then
    tail -c 6144 "$AK_UPGRADE_LOG"
    echo "upgrade-step=${AK_UPGRADE_STEP} result=failed exit=${rc}"
    exit "$rc"
  fi
}

ak_upgrade_overlays
case "$AK_UPGRADE_STEP" in
  status)
    printf 'kubeadm=%s\nkubelet=%s\napiserver=%s\n' "$(kubeadm version -o short 2>/dev/null | sed 's/^v//' || echo none)" \
      "$(kubelet --version 2>/dev/null | sed 's/^Kubernetes v//' || echo none)" "$(ak_manifest_version)"
    ;;
  kubeadm)
    ak_step_run ak_upgrade_packages kubeadm
    [ "$(kubeadm version -o short)" = "$target" ] || ak_die "kubeadm is $(kubeadm version -o short) after the install, not ${target}: check the package mirror ${AK_K8S_REPO_URL}"
    ;;
  plan)
    ak_step_run kubeadm upgrade plan "${ak_ignored[@]}" "$target"
    ;;
  apply)
    ak_step_run kubeadm upgrade apply --yes "${ak_ignored[@]}" "${ak_patches[@]}" "$target"
    ;;
  node)
    ak_step_run kubeadm upgrade node "${ak_ignored[@]}" "${ak_patches[@]}"
    ;;
  control-plane)
    ak_step_run kubeadm upgrade node phase control-plane "${ak_patches[@]}"
    ;;
  kubelet)
    ak_step_run ak_upgrade_packages kubelet kubectl
    ak_step_run systemctl daemon-reload
    ak_step_run systemctl restart kubelet
    [ "$(kubelet --version)" = "Kubernetes ${target}" ] || ak_die "kubelet is $(kubelet --version) after the install, not ${target}"
    ;;
esac
echo "upgrade-step=${AK_UPGRADE_STEP} result=ok"
