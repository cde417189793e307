#!/bin/bash
# alicloud-kubeadm node preparation: functions shared by master_init.sh and attach_node.sh.
# src/shell/render.ts builds the userdata as: a header of readonly AK_* parameters, this file, one role script.
# Every path is under ${AK_ROOT}: empty on a node, a temporary directory in the test sandbox.
set -euo pipefail

AK_ROOT="${AK_ROOT:-}"
AK_STATE_DIR="${AK_ROOT}/var/lib/alicloud-kubeadm"
AK_LOG_DIR="${AK_ROOT}/var/log/alicloud-kubeadm"
AK_METADATA="http://100.100.100.200/latest"
# shellcheck disable=SC2034 # used by the role scripts
AK_CRI_SOCKET="unix:///run/containerd/containerd.sock"
# Tunables for tests and slow networks (environment, not header).
AK_RETRY_DELAY="${AK_RETRY_DELAY:-5}"
AK_IMDS_TOKEN=""
exec 3>&2 # fd 3 keeps the original stderr once ak_start_log sends everything else to the log

# ak_start_log NAME: append all further output to ${AK_LOG_DIR}/NAME.log.
ak_start_log() {
  mkdir -p "$AK_LOG_DIR" "$AK_STATE_DIR"
  chmod 700 "$AK_STATE_DIR"
  AK_LOG="${AK_LOG_DIR}/$1.log"
  exec >>"$AK_LOG" 2>&1
}

# ak_log MESSAGE...: timestamped line to the log and to the original stderr.
ak_log() {
  local line TZ=UTC0
  printf -v line '%(%Y-%m-%dT%H:%M:%SZ)T %s' -1 "$*"
  printf '%s\n' "$line"
  printf '%s\n' "$line" >&3
}

ak_die() {
  ak_log "ERROR: $*"
  exit 1
}

# ak_require NAME...: fail fast, naming every required parameter that is unset or empty.
ak_require() {
  local name missing=""
  for name in "$@"; do
    [ -n "${!name:-}" ] || missing="${missing} ${name}"
  done
  [ -z "$missing" ] || ak_die "missing required parameter(s):${missing}; render the script with src/shell/render.ts (or export them)"
}

# ak_yaml VALUE: VALUE as a single-quoted YAML scalar.
ak_yaml() {
  printf "'%s'" "${1//\'/\'\'}"
}

# ak_node_registration: the nodeRegistration block every kubeadm config here shares: the node is named
# by its provider id, and the kubelet runs with --cloud-provider=external and --provider-id.
ak_node_registration() {
  cat <<EOF
nodeRegistration:
  name: $(ak_yaml "$AK_PROVIDER_ID")
  criSocket: $(ak_yaml "$AK_CRI_SOCKET")
  kubeletExtraArgs:
    - name: cloud-provider
      value: external
    - name: provider-id
      value: $(ak_yaml "$AK_PROVIDER_ID")
EOF
}

# ak_redact: copy stdin to stdout with bootstrap tokens and certificate keys blanked.
ak_redact() {
  sed -E 's/(--token|--certificate-key|--discovery-token-ca-cert-hash)([ =])[^ ]+/\1\2<redacted>/g'
}

# ak_mark NAME KEY=VALUE...: write the marker file ${AK_STATE_DIR}/NAME, one KEY=VALUE per line.
ak_mark() {
  local name=$1
  shift
  local TZ=UTC0
  printf '%s\n' "$@" >"${AK_STATE_DIR}/${name}"
  printf 'time=%(%Y-%m-%dT%H:%M:%SZ)T\n' -1 >>"${AK_STATE_DIR}/${name}"
}

# ak_write_file PATH MODE: write stdin to PATH unless PATH already has that content.
# Returns 0 when the file changed, 1 when it was already up to date.
ak_write_file() {
  local path=$1 mode=$2 tmp
  tmp="${path}.ak-new"
  mkdir -p "${path%/*}"
  cat >"$tmp"
  chmod "$mode" "$tmp"
  if [ -f "$path" ] && cmp -s "$tmp" "$path"; then
    rm -f "$tmp"
    return 1
  fi
  mv -f "$tmp" "$path"
}

# ak_failure_marker NAME: from now on, a failing exit writes the marker ${AK_STATE_DIR}/NAME (status, exit code,
# log) unless the script wrote it itself, so whoever waits for the node sees the failure instead of timing out.
ak_failure_marker() {
  AK_FAILURE_MARKER=$1
  trap 'ak_on_exit $?' EXIT
}

ak_on_exit() {
  [ "$1" -eq 0 ] || [ -f "${AK_STATE_DIR}/${AK_FAILURE_MARKER}" ] ||
    ak_mark "$AK_FAILURE_MARKER" status=failed "exit_code=$1" "log=${AK_LOG#"$AK_ROOT"}"
}

# --- identity from the ECS metadata service -------------------------------------------------

# ak_imds_token: get an IMDSv2 session token when the service offers one (else plain GETs are used).
ak_imds_token() {
  AK_IMDS_TOKEN=$(curl -fsS --max-time 5 -X PUT -H "X-aliyun-ecs-metadata-token-ttl-seconds: 21600" \
    "${AK_METADATA}/api/token" 2>/dev/null) || AK_IMDS_TOKEN=""
}

# ak_metadata KEY: print meta-data/KEY, with a few retries.
ak_metadata() {
  local attempt
  local -a auth=()
  [ -z "$AK_IMDS_TOKEN" ] || auth=(-H "X-aliyun-ecs-metadata-token: ${AK_IMDS_TOKEN}")
  for attempt in 1 2 3 4 5; do
    curl -fsS --max-time 5 "${auth[@]}" "${AK_METADATA}/meta-data/$1" && return 0
    ak_log "metadata ${1}: attempt ${attempt}/5 failed" >&2
    sleep "$AK_RETRY_DELAY"
  done
  return 1
}

# ak_read_identity: sets AK_REGION_ID, AK_INSTANCE_ID and AK_PROVIDER_ID (= node name) "<region-id>.<instance-id>".
ak_read_identity() {
  ak_imds_token
  { AK_REGION_ID=$(ak_metadata region-id) && AK_INSTANCE_ID=$(ak_metadata instance-id); } ||
    ak_die "cannot read region-id and instance-id from ${AK_METADATA}; is the instance metadata service enabled?"
  [[ $AK_REGION_ID =~ ^[a-z0-9-]+$ && $AK_INSTANCE_ID =~ ^i-[a-z0-9]+$ ]] ||
    ak_die "unexpected metadata: region-id '${AK_REGION_ID}', instance-id '${AK_INSTANCE_ID}'"
  AK_PROVIDER_ID="${AK_REGION_ID}.${AK_INSTANCE_ID}"
  ak_log "node identity: provider id ${AK_PROVIDER_ID}"
}

# --- operating system -----------------------------------------------------------------------

# ak_detect_os: sets AK_PKG to apt (Ubuntu) or dnf (Alibaba Cloud Linux 3 and other EL8-likes).
ak_detect_os() {
  local os_release="${AK_ROOT}/etc/os-release" id version
  [ -r "$os_release" ] || ak_die "cannot read ${os_release}"
  # shellcheck source=/dev/null
  id=$(. "$os_release" && printf '%s' "${ID:-}")
  # shellcheck source=/dev/null
  version=$(. "$os_release" && printf '%s' "${VERSION_ID:-}")
  case "$id" in
    ubuntu | debian) AK_PKG=apt ;;
    alinux | anolis | rhel | centos | rocky | almalinux) AK_PKG=dnf ;;
    *) ak_die "unsupported OS '${id} ${version}': use Ubuntu 22.04/24.04 or Alibaba Cloud Linux 3" ;;
  esac
  ak_log "OS ${id} ${version}: using ${AK_PKG}"
}

ak_disable_swap() {
  local fstab="${AK_ROOT}/etc/fstab"
  swapoff -a
  if [ -f "$fstab" ] && grep -Eq '^[^#].*[[:space:]]swap[[:space:]]' "$fstab"; then
    sed -i -E 's/^([^#].*[[:space:]]swap[[:space:]].*)$/# \1 # disabled by alicloud-kubeadm/' "$fstab"
    ak_log "swap entries commented out in /etc/fstab"
  fi
}

ak_kernel_setup() {
  local sysctl_conf="${AK_ROOT}/etc/sysctl.d/99-alicloud-kubeadm.conf"
  printf 'overlay\nbr_netfilter\n' | ak_write_file "${AK_ROOT}/etc/modules-load.d/alicloud-kubeadm.conf" 644 || true
  modprobe overlay
  modprobe br_netfilter
  # The last six are what the kubelet's protectKernelDefaults (CIS) requires instead of setting them itself.
  printf '%s\n' 'net.bridge.bridge-nf-call-iptables = 1' 'net.bridge.bridge-nf-call-ip6tables = 1' \
    'net.ipv4.ip_forward = 1' 'vm.overcommit_memory = 1' 'vm.panic_on_oom = 0' 'kernel.panic = 10' 'kernel.panic_on_oops = 1' \
    'kernel.keys.root_maxkeys = 1000000' 'kernel.keys.root_maxbytes = 25000000' | ak_write_file "$sysctl_conf" 644 || true
  sysctl -q -p "$sysctl_conf"
}

# --- packages -------------------------------------------------------------------------------

# ak_kube_ready: kubeadm, kubelet and kubectl of AK_KUBERNETES_VERSION are installed (e.g. a pre-baked image).
ak_kube_ready() {
  command -v kubeadm >/dev/null && command -v kubelet >/dev/null && command -v kubectl >/dev/null &&
    [ "$(kubeadm version -o short 2>/dev/null)" = "v${AK_KUBERNETES_VERSION}" ] &&
    [ "$(kubelet --version 2>/dev/null)" = "Kubernetes v${AK_KUBERNETES_VERSION}" ]
}

# ak_cni_ready: the standard CNI plugins flannel's plugin delegates to are in /opt/cni/bin (flannel's manifest
# installs only its own; docs/upstream.md#flannel-cni-plugins).
ak_cni_ready() {
  local p
  for p in bridge host-local portmap loopback; do [ -x "${AK_ROOT}/opt/cni/bin/$p" ] || return 1; done
}

# ak_install_apt NEED_KUBE NEED_CONTAINERD NEED_CNI (1 = install). AK_KUBE_PACKAGES (environment): which of kubelet,
# kubeadm, kubectl NEED_KUBE installs; default all three (an upgrade installs kubeadm first, kubelet and kubectl later).
ak_install_apt() {
  local repo="${AK_K8S_REPO_URL%/}/deb/" keyring="/etc/apt/keyrings/alicloud-kubeadm-kubernetes.gpg" v=$AK_KUBERNETES_VERSION
  local kube=${AK_KUBE_PACKAGES:-kubelet kubeadm kubectl} p
  local -a pkgs=() apt=(apt-get -q -y -o DPkg::Lock::Timeout=600)
  export DEBIAN_FRONTEND=noninteractive NEEDRESTART_SUSPEND=1 # no prompts, no service restarts by needrestart
  if [ "$1$3" != 00 ]; then
    mkdir -p "${AK_ROOT}/etc/apt/keyrings"
    curl -fsSL --retry 5 "${repo}Release.key" | gpg --dearmor --yes -o "${AK_ROOT}${keyring}"
    printf 'deb [signed-by=%s] %s /\n' "$keyring" "$repo" |
      ak_write_file "${AK_ROOT}/etc/apt/sources.list.d/alicloud-kubeadm-kubernetes.list" 644 || true
  fi
  if [ "$1" = 1 ]; then
    for p in $kube; do pkgs+=("${p}=${v}-*"); done
    pkgs+=(conntrack socat)
  fi
  if [ "$2" = 1 ]; then pkgs+=(containerd); fi
  if [ "$3" = 1 ]; then pkgs+=(kubernetes-cni); fi
  "${apt[@]}" update
  "${apt[@]}" install --allow-change-held-packages --allow-downgrades "${pkgs[@]}"
  # shellcheck disable=SC2086 # a list of package names
  if [ "$1" = 1 ]; then apt-mark hold $kube; fi
}

# ak_install_dnf NEED_KUBE NEED_CONTAINERD NEED_CNI (1 = install); AK_KUBE_PACKAGES as for ak_install_apt.
ak_install_dnf() {
  local repo="${AK_K8S_REPO_URL%/}/rpm/" v=$AK_KUBERNETES_VERSION
  local kube=${AK_KUBE_PACKAGES:-kubelet kubeadm kubectl} p
  local -a pkgs=() opts=()
  if [ "$1$3" != 00 ]; then
    opts+=(--disableexcludes=alicloud-kubeadm-kubernetes)
    printf '%s\n' '[alicloud-kubeadm-kubernetes]' 'name=Kubernetes' "baseurl=${repo}" 'enabled=1' 'gpgcheck=1' \
      "gpgkey=${repo}repodata/repomd.xml.key" 'exclude=kubelet kubeadm kubectl cri-tools kubernetes-cni' |
      ak_write_file "${AK_ROOT}/etc/yum.repos.d/alicloud-kubeadm-kubernetes.repo" 644 || true
  fi
  if [ "$1" = 1 ]; then
    for p in $kube; do pkgs+=("${p}-${v}"); done
    pkgs+=(conntrack-tools socat)
  fi
  if [ "$3" = 1 ]; then pkgs+=(kubernetes-cni); fi
  if [ "$2" = 1 ]; then
    ak_require AK_CONTAINERD_RPM_REPO_URL
    # $basearch is expanded by dnf, not by the shell.
    # shellcheck disable=SC2016
    printf '%s\n' '[alicloud-kubeadm-containerd]' 'name=containerd' "baseurl=${AK_CONTAINERD_RPM_REPO_URL%/}/8/"'$basearch/stable' \
      'enabled=1' 'gpgcheck=1' "gpgkey=${AK_CONTAINERD_RPM_REPO_URL%/}/gpg" |
      ak_write_file "${AK_ROOT}/etc/yum.repos.d/alicloud-kubeadm-containerd.repo" 644 || true
    pkgs+=(containerd.io)
  fi
  dnf install -y -q "${opts[@]}" "${pkgs[@]}"
}

# ak_install_packages: Kubernetes of AK_KUBERNETES_VERSION, containerd and the CNI plugins, each only when missing
# (a pre-baked image may carry some of them: its CNI plugins are checked too, not assumed).
ak_install_packages() {
  local need_kube=1 need_containerd=1 need_cni=1
  if ak_kube_ready; then need_kube=0; fi
  if command -v containerd >/dev/null; then need_containerd=0; fi
  if ak_cni_ready; then need_cni=0; fi
  if [ "$need_kube$need_containerd$need_cni" = 000 ]; then
    ak_log "pre-baked image: containerd, CNI plugins, Kubernetes v${AK_KUBERNETES_VERSION}"
    return 0
  fi
  ak_log "installing Kubernetes v${AK_KUBERNETES_VERSION}: ${need_kube}, containerd: ${need_containerd}, CNI plugins: ${need_cni}"
  "ak_install_${AK_PKG}" "$need_kube" "$need_containerd" "$need_cni"
  { ak_kube_ready && ak_cni_ready; } ||
    ak_die "kubeadm/kubelet v${AK_KUBERNETES_VERSION} or CNI plugins still missing; check the package mirror ${AK_K8S_REPO_URL}"
}

# The runc options table header, in containerd's config version 2 (1.x: plugins."io.containerd.grpc.v1.cri".containerd.…)
# and version 3 (2.x: plugins.'io.containerd.cri.v1.runtime'.containerd.…) layouts; group 1 is its indentation.
AK_RUNC_OPTS='^([[:space:]]*)\[plugins\.[^]]+\.runtimes\.runc\.options\]'

# ak_configure_containerd: systemd cgroups and the sandbox (pause) image from the configured registry.
# A full CRI config already on the image (pre-baked, maybe with registry mirrors) is patched in place;
# otherwise (none, or a packaged stub such as `disabled_plugins = ["cri"]`) containerd's defaults are used.
# Every runtime's SystemdCgroup is set to true (the kubelet's cgroup driver is systemd, and each runtime handler
# must agree with it); the key that must be there is runc's, so presence is checked in runc's options table
# only: a SystemdCgroup of another runtime (nvidia, kata, ...) says nothing about runc's.
# containerd 2.0.0–2.0.6 and 2.1.0–2.1.4 print no SystemdCgroup key (docs/upstream.md#broken-containerd-systemdcgroup):
# it is then added under the runc options table, which both layouts have.
ak_configure_containerd() {
  local conf="${AK_ROOT}/etc/containerd/config.toml" desired runc
  local -a base=(containerd config default)
  if [ -f "$conf" ] && grep -Eq "SystemdCgroup|$AK_RUNC_OPTS" "$conf"; then base=(cat "$conf"); fi
  # containerd 1.x writes sandbox_image = "...", 2.x writes sandbox = '...'.
  desired=$("${base[@]}" | sed -E \
    -e 's/^([[:space:]]*SystemdCgroup[[:space:]]*=[[:space:]]*).*$/\1true/' \
    -e "s#^([[:space:]]*sandbox_image[[:space:]]*=[[:space:]]*).*\$#\\1\"${AK_SANDBOX_IMAGE}\"#" \
    -e "s#^([[:space:]]*sandbox[[:space:]]*=[[:space:]]*).*\$#\\1'${AK_SANDBOX_IMAGE}'#")
  # runc's options table: its header up to the next table header.
  runc=$(sed -nE "/$AK_RUNC_OPTS/,/^[[:space:]]*\[/p" <<<"$desired")
  [ -n "$runc" ] || ak_die "no runc options table in containerd's config"
  if ! grep -Eq '^[[:space:]]*SystemdCgroup' <<<"$runc"; then
    # No key to flip in runc's table: add it right below the runc options header, one step deeper.
    desired=$(sed -E "/$AK_RUNC_OPTS/{p;s/$AK_RUNC_OPTS.*/\\1  SystemdCgroup = true/;}" <<<"$desired")
    ak_log "added SystemdCgroup to containerd's config"
  fi
  if printf '%s\n' "$desired" | ak_write_file "$conf" 644; then
    ak_log "containerd configured: SystemdCgroup, sandbox image ${AK_SANDBOX_IMAGE}"
    systemctl enable containerd
    systemctl restart containerd
  else
    systemctl enable --now containerd
  fi
}

# --- pods off the instance metadata service --------------------------------------------------

AK_IMDS_UNIT="alicloud-kubeadm-metadata-block.service"
AK_IMDS_BLOCK="/usr/local/sbin/alicloud-kubeadm-metadata-block"

# ak_block_pod_metadata: pods must not reach 100.100.100.200 (pool userdata carries a join token, the masters'
# RAM role hands out STS credentials). Every packet to it that enters the node (from cni0, i.e. a pod, or from
# anywhere else) is dropped in the raw table's PREROUTING, which runs before any chain of flannel (nat, filter)
# or kube-proxy; and every forwarded packet to it at the top of mangle FORWARD, after kube-proxy's DNAT (nat
# PREROUTING) and before filter: a pod connecting to a Service whose endpoint is 100.100.100.200 passes raw with
# the Service's address. The node's own processes (host network: kubelet, CCM, autoscaler, these scripts) send
# through OUTPUT and keep access. An enabled unit ordered before (and required by) the kubelet re-applies it at
# every boot; it is applied now too, before the kubelet first starts, and again by the reset operation (which
# flushes mangle). See docs/security.md#metadata-block.
ak_block_pod_metadata() {
  ak_write_file "${AK_ROOT}${AK_IMDS_BLOCK}" 755 <<'EOF' || true
#!/bin/bash
# alicloud-kubeadm: drop every packet to the instance metadata service that enters this node (pods), before any
# other rule (raw PREROUTING) and after DNAT (mangle FORWARD: a Service whose endpoint is the metadata address).
set -eu
# block TABLE HOOK MATCH...: chain AK-METADATA-BLOCK of TABLE drops MATCH; its jump is the first rule of HOOK, once.
block() {
  local table=$1 hook=$2
  shift 2
  iptables -w 5 -t "$table" -N AK-METADATA-BLOCK 2>/dev/null || true
  iptables -w 5 -t "$table" -F AK-METADATA-BLOCK
  iptables -w 5 -t "$table" -A AK-METADATA-BLOCK "$@" -j DROP
  while iptables -w 5 -t "$table" -D "$hook" -j AK-METADATA-BLOCK 2>/dev/null; do :; done
  iptables -w 5 -t "$table" -I "$hook" 1 -j AK-METADATA-BLOCK
}
block raw PREROUTING ! -i lo -d 100.100.100.200/32
block mangle FORWARD -d 100.100.100.200/32
EOF
  ak_write_file "${AK_ROOT}/etc/systemd/system/${AK_IMDS_UNIT}" 644 <<EOF || true
[Unit]
Description=alicloud-kubeadm: block pod access to the instance metadata service
DefaultDependencies=no
After=local-fs.target
Before=kubelet.service network-pre.target shutdown.target
Wants=network-pre.target
Conflicts=shutdown.target
[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/bash ${AK_IMDS_BLOCK}
[Install]
WantedBy=multi-user.target
RequiredBy=kubelet.service
EOF
  systemctl daemon-reload
  systemctl enable "$AK_IMDS_UNIT"
  bash "${AK_ROOT}${AK_IMDS_BLOCK}" ||
    ak_die "cannot install the metadata block (iptables raw table); the kubelet must not start without it"
  ak_log "pods blocked from the metadata service (${AK_IMDS_UNIT}, before the kubelet)"
}

# --- the preparation steps: ONE list for a stock boot and the bake mode ----------------------

# ak_prepare_node: everything a node needs before kubeadm init/join: THE list of preparation steps, in order.
# A stock boot (master_init.sh, attach_node.sh) and the bake mode (bake_node.sh, the NodeImage component) run
# this same list, so what a baked image carries and what a stock image installs at boot cannot diverge. Each
# step is idempotent and checks before it acts: on a matching baked image every step finds its work done.
# (Each role script has checked AK_KUBERNETES_VERSION, AK_K8S_REPO_URL and AK_SANDBOX_IMAGE with ak_require.)
ak_prepare_node() {
  local s
  for s in ak_detect_os ak_disable_swap ak_kernel_setup ak_install_packages ak_configure_containerd ak_block_pod_metadata ak_enable_kubelet ak_pull_images; do "$s"; done
}

ak_enable_kubelet() {
  systemctl enable kubelet
}

# ak_pull_images: nothing to pre-pull unless the node lists its images (AK_NODE_IMAGES, baked clusters): render.ts
# then renders node_images.sh's ak_pull_images in place of this one (the userdata budget keeps it out otherwise).
ak_pull_images() {
  :
}
