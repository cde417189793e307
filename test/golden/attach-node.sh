#!/bin/bash
# alicloud-kubeadm userdata (attach_node.sh), rendered by src/shell/render.ts. Parameters:
readonly AK_KUBERNETES_VERSION='1.34.2'
readonly AK_K8S_REPO_URL='https://mirrors.cloud.aliyuncs.com/kubernetes-new/core/stable/v1.34/'
readonly AK_CONTAINERD_RPM_REPO_URL='https://mirrors.cloud.aliyuncs.com/docker-ce/linux/centos'
readonly AK_SANDBOX_IMAGE='registry.cn-hangzhou.aliyuncs.com/google_containers/pause:3.10.1'
readonly AK_API_ENDPOINT='192.168.0.10:6443'
readonly AK_POOL_NAME='general'
readonly AK_NODE_LABELS='workload_type=cpu'
readonly AK_NODE_TAINTS=''
readonly AK_BOOTSTRAP_TOKEN='<redacted>'
readonly AK_CA_CERT_HASHES='<redacted>'

# ---- src/shell/prepare_node.sh ----
set -euo pipefail

AK_ROOT="${AK_ROOT:-}"
AK_STATE_DIR="${AK_ROOT}/var/lib/alicloud-kubeadm"
AK_LOG_DIR="${AK_ROOT}/var/log/alicloud-kubeadm"
AK_METADATA="http://100.100.100.200/latest"
# shellcheck disable=SC2034 # used by the role scripts
AK_CRI_SOCKET="unix:///run/containerd/containerd.sock"
AK_RETRY_DELAY="${AK_RETRY_DELAY:-5}"
AK_IMDS_TOKEN=""
exec 3>&2 # fd 3 keeps the original stderr once ak_start_log sends everything else to the log

ak_start_log() {
  mkdir -p "$AK_LOG_DIR" "$AK_STATE_DIR"
  chmod 700 "$AK_STATE_DIR"
  AK_LOG="${AK_LOG_DIR}/$1.log"
  exec >>"$AK_LOG" 2>&1
}

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

ak_require() {
  local name missing=""
  for name in "$@"; do
    [ -n "${!name:-}" ] || missing="${missing} ${name}"
  done
  [ -z "$missing" ] || ak_die "missing required parameter(s):${missing}; render the script with src/shell/render.ts (or export them)"
}

ak_yaml() {
  printf "'%s'" "${1//\'/\'\'}"
}

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

ak_redact() {
  sed -E 's/(--token|--certificate-key|--discovery-token-ca-cert-hash)([ =])[^ ]+/\1\2<redacted>/g'
}

ak_mark() {
  local name=$1
  shift
  local TZ=UTC0
  printf '%s\n' "$@" >"${AK_STATE_DIR}/${name}"
  printf 'time=%(%Y-%m-%dT%H:%M:%SZ)T\n' -1 >>"${AK_STATE_DIR}/${name}"
}

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

ak_failure_marker() {
  AK_FAILURE_MARKER=$1
  trap 'ak_on_exit $?' EXIT
}

ak_on_exit() {
  [ "$1" -eq 0 ] || [ -f "${AK_STATE_DIR}/${AK_FAILURE_MARKER}" ] ||
    ak_mark "$AK_FAILURE_MARKER" status=failed "exit_code=$1" "log=${AK_LOG#"$AK_ROOT"}"
}

ak_imds_token() {
  AK_IMDS_TOKEN=$(curl -fsS --max-time 5 -X PUT -H "X-aliyun-ecs-metadata-token-ttl-seconds: 21600" \
    "${AK_METADATA}/api/token" 2>/dev/null) || AK_IMDS_TOKEN=""
}

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

ak_read_identity() {
  ak_imds_token
  { AK_REGION_ID=$(ak_metadata region-id) && AK_INSTANCE_ID=$(ak_metadata instance-id); } ||
    ak_die "cannot read region-id and instance-id from ${AK_METADATA}; is the instance metadata service enabled?"
  [[ $AK_REGION_ID =~ ^[a-z0-9-]+$ && $AK_INSTANCE_ID =~ ^i-[a-z0-9]+$ ]] ||
    ak_die "unexpected metadata: region-id '${AK_REGION_ID}', instance-id '${AK_INSTANCE_ID}'"
  AK_PROVIDER_ID="${AK_REGION_ID}.${AK_INSTANCE_ID}"
  ak_log "node identity: provider id ${AK_PROVIDER_ID}"
}

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
  printf '%s\n' 'net.bridge.bridge-nf-call-iptables = 1' 'net.bridge.bridge-nf-call-ip6tables = 1' \
    'net.ipv4.ip_forward = 1' 'vm.overcommit_memory = 1' 'vm.panic_on_oom = 0' 'kernel.panic = 10' 'kernel.panic_on_oops = 1' \
    'kernel.keys.root_maxkeys = 1000000' 'kernel.keys.root_maxbytes = 25000000' | ak_write_file "$sysctl_conf" 644 || true
  sysctl -q -p "$sysctl_conf"
}

ak_kube_ready() {
  command -v kubeadm >/dev/null && command -v kubelet >/dev/null && command -v kubectl >/dev/null &&
    [ "$(kubeadm version -o short 2>/dev/null)" = "v${AK_KUBERNETES_VERSION}" ] &&
    [ "$(kubelet --version 2>/dev/null)" = "Kubernetes v${AK_KUBERNETES_VERSION}" ]
}

ak_cni_ready() {
  local p
  for p in bridge host-local portmap loopback; do [ -x "${AK_ROOT}/opt/cni/bin/$p" ] || return 1; done
}

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
    # shellcheck disable=SC2016
    printf '%s\n' '[alicloud-kubeadm-containerd]' 'name=containerd' "baseurl=${AK_CONTAINERD_RPM_REPO_URL%/}/8/"'$basearch/stable' \
      'enabled=1' 'gpgcheck=1' "gpgkey=${AK_CONTAINERD_RPM_REPO_URL%/}/gpg" |
      ak_write_file "${AK_ROOT}/etc/yum.repos.d/alicloud-kubeadm-containerd.repo" 644 || true
    pkgs+=(containerd.io)
  fi
  dnf install -y -q "${opts[@]}" "${pkgs[@]}"
}

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

AK_RUNC_OPTS='^([[:space:]]*)\[plugins\.[^]]+\.runtimes\.runc\.options\]'

ak_configure_containerd() {
  local conf="${AK_ROOT}/etc/containerd/config.toml" desired runc
  local -a base=(containerd config default)
  if [ -f "$conf" ] && grep -Eq "SystemdCgroup|$AK_RUNC_OPTS" "$conf"; then base=(cat "$conf"); fi
  desired=$("${base[@]}" | sed -E \
    -e 's/^([[:space:]]*SystemdCgroup[[:space:]]*=[[:space:]]*).*$/\1true/' \
    -e "s#^([[:space:]]*sandbox_image[[:space:]]*=[[:space:]]*).*\$#\\1\"${AK_SANDBOX_IMAGE}\"#" \
    -e "s#^([[:space:]]*sandbox[[:space:]]*=[[:space:]]*).*\$#\\1'${AK_SANDBOX_IMAGE}'#")
  runc=$(sed -nE "/$AK_RUNC_OPTS/,/^[[:space:]]*\[/p" <<<"$desired")
  [ -n "$runc" ] || ak_die "no runc options table in containerd's config"
  if ! grep -Eq '^[[:space:]]*SystemdCgroup' <<<"$runc"; then
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

AK_IMDS_UNIT="alicloud-kubeadm-metadata-block.service"
AK_IMDS_BLOCK="/usr/local/sbin/alicloud-kubeadm-metadata-block"

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

ak_prepare_node() {
  local s
  for s in ak_detect_os ak_disable_swap ak_kernel_setup ak_install_packages ak_configure_containerd ak_block_pod_metadata ak_enable_kubelet ak_pull_images; do "$s"; done
}

ak_enable_kubelet() {
  systemctl enable kubelet
}

ak_pull_images() {
  :
}

# ---- src/shell/attach_node.sh ----
set -euo pipefail

AK_API_WAIT_ATTEMPTS="${AK_API_WAIT_ATTEMPTS:-120}"
AK_JOIN_ATTEMPTS="${AK_JOIN_ATTEMPTS:-3}"

ak_start_log attach-node
if [ -n "${AK_CHANNEL:-}" ]; then
  f=${AK_ROOT}/run/alicloud-kubeadm/${AK_CHANNEL}
  read -r AK_BOOTSTRAP_TOKEN AK_CERTIFICATE_KEY received_enc <"$f" || ak_die "nothing received on channel ${AK_CHANNEL}"
  rm -f "$f"
  if [ -n "${received_enc:-}" ] && [ "$received_enc" != - ]; then AK_ENCRYPTION_CONFIG_GZ=$received_enc; fi
fi
ak_require AK_KUBERNETES_VERSION AK_K8S_REPO_URL AK_SANDBOX_IMAGE AK_API_ENDPOINT AK_POOL_NAME \
  AK_BOOTSTRAP_TOKEN AK_CA_CERT_HASHES
[[ $AK_BOOTSTRAP_TOKEN =~ ^[a-z0-9]{6}\.[a-z0-9]{16}$ ]] ||
  ak_die "AK_BOOTSTRAP_TOKEN is not a bootstrap token [a-z0-9]{6}.[a-z0-9]{16}"
[[ $AK_CA_CERT_HASHES =~ ^sha256:[0-9a-f]{64}(,sha256:[0-9a-f]{64})*$ ]] ||
  ak_die "AK_CA_CERT_HASHES must be sha256:<64 hex digits>[,...]"
if [ -n "${AK_CERTIFICATE_KEY:-}" ] && [[ ! $AK_CERTIFICATE_KEY =~ ^[0-9a-f]{64}$ ]]; then
  ak_die "AK_CERTIFICATE_KEY must be 64 hex digits"
fi
if [ -n "${AK_ENCRYPTION_KEY:-}" ] && [[ ! $AK_ENCRYPTION_KEY =~ ^[A-Za-z0-9+/]{43}=$ ]]; then
  ak_die "AK_ENCRYPTION_KEY must be 32 bytes in Base64 (master 0's ${AK_ENCRYPTION_CONFIG:-encryption config})"
fi

if [ -f "${AK_STATE_DIR}/join.done" ] && [ -f "${AK_ROOT}/etc/kubernetes/kubelet.conf" ]; then
  ak_log "node already joined (${AK_STATE_DIR#"$AK_ROOT"}/join.done): nothing to do"
  exit 0
fi
ak_failure_marker join.failed

ak_wait_for_api() {
  local attempt rc
  for ((attempt = 1; attempt <= AK_API_WAIT_ATTEMPTS; attempt++)); do
    rc=0
    curl --silent --output /dev/null --max-time 5 "https://${AK_API_ENDPOINT}/readyz" || rc=$?
    if [ "$rc" -eq 0 ] || [ "$rc" -eq 60 ]; then
      ak_log "API endpoint ${AK_API_ENDPOINT} is reachable"
      return 0
    fi
    ak_log "waiting for API endpoint ${AK_API_ENDPOINT} (attempt ${attempt}/${AK_API_WAIT_ATTEMPTS}, curl exit ${rc})"
    sleep "$AK_RETRY_DELAY"
  done
  ak_die "API endpoint ${AK_API_ENDPOINT} unreachable after ${AK_API_WAIT_ATTEMPTS} attempts;" \
    "check that master 0 finished kubeadm init and that TCP ${AK_API_ENDPOINT##*:} is open from this vSwitch"
}

ak_join_config() {
  local labels="${AK_NODE_LABELS:-}" taints="${AK_NODE_TAINTS:-}" hash
  if [ -n "${AK_ADMISSION_ENDPOINTS:-}" ]; then
    taints="${AK_POOL_PENDING_TAINT}${taints:+,${taints}}"
  else
    labels="alicloud-kubeadm/pool=${AK_POOL_NAME}${labels:+,${labels}}"
  fi
  local -a hashes=()
  IFS=, read -r -a hashes <<<"$AK_CA_CERT_HASHES"
  cat <<EOF
apiVersion: kubeadm.k8s.io/v1beta4
kind: JoinConfiguration
discovery:
  bootstrapToken:
    apiServerEndpoint: $(ak_yaml "$AK_API_ENDPOINT")
    token: $(ak_yaml "$AK_BOOTSTRAP_TOKEN")
    caCertHashes:
EOF
  for hash in "${hashes[@]}"; do
    printf '      - %s\n' "$(ak_yaml "$hash")"
  done
  ak_node_registration
  if [ -n "$labels" ]; then
    printf '    - name: node-labels\n      value: %s\n' "$(ak_yaml "$labels")"
  fi
  if [ -n "$taints" ]; then
    printf '    - name: register-with-taints\n      value: %s\n' "$(ak_yaml "$taints")"
  fi
  if [ -n "${AK_CERTIFICATE_KEY:-}" ]; then
    printf 'controlPlane:\n  certificateKey: %s\n' "$(ak_yaml "$AK_CERTIFICATE_KEY")"
  fi
}

ak_has_leftovers() {
  local path
  for path in etc/kubernetes/kubelet.conf etc/kubernetes/bootstrap-kubelet.conf etc/kubernetes/pki/ca.crt \
    var/lib/kubelet/config.yaml var/lib/alicloud-kubeadm/join.failed; do
    [ ! -e "${AK_ROOT}/${path}" ] || return 0
  done
  ip link show cni0 >/dev/null 2>&1
}

ak_preclean() {
  ak_log "cleaning leftovers of an earlier join: kubeadm reset, cni0, /etc/cni/net.d"
  kubeadm reset -f --cri-socket "$AK_CRI_SOCKET" 2>&1 | ak_redact
  if ip link show cni0 >/dev/null 2>&1; then ip link delete cni0; fi
  rm -rf "${AK_ROOT}/etc/cni/net.d" "${AK_ROOT}/var/lib/cni"
  mkdir -p "${AK_ROOT}/etc/cni/net.d"
  rm -f "${AK_STATE_DIR}/join.failed" "${AK_STATE_DIR}/join.done"
}

ak_prepare_node
ak_read_identity
ak_wait_for_api
config="${AK_STATE_DIR}/kubeadm-join.yaml"
(umask 077 && ak_join_config >"$config")
rc=1
for ((attempt = 1; attempt <= AK_JOIN_ATTEMPTS; attempt++)); do
  if ak_has_leftovers; then ak_preclean; fi
  if [ -n "${AK_CERTIFICATE_KEY:-}" ]; then
    ak_write_audit_policy
    ak_write_admission_config
    if [ -n "${AK_ENCRYPTION_CONFIG_GZ:-}" ]; then ak_install_encryption_config "$AK_ENCRYPTION_CONFIG_GZ"
    elif [ -n "${AK_ENCRYPTION_KEY:-}" ]; then ak_write_encryption_config "$AK_ENCRYPTION_KEY"; fi
  fi
  ak_log "kubeadm join ${AK_API_ENDPOINT} as ${AK_PROVIDER_ID}, pool ${AK_POOL_NAME} (attempt ${attempt}/${AK_JOIN_ATTEMPTS})"
  rc=0
  kubeadm join --config "$config" 2>&1 | ak_redact || rc=$?
  if [ "$rc" -eq 0 ]; then break; fi
  ak_mark join.failed status=failed "exit_code=${rc}" "log=${AK_LOG#"$AK_ROOT"}"
  if [ "$attempt" -lt "$AK_JOIN_ATTEMPTS" ]; then sleep "$AK_RETRY_DELAY"; fi
done
rm -f "$config"
if [ "$rc" -ne 0 ]; then
  ak_die "kubeadm join failed ${AK_JOIN_ATTEMPTS} times (last exit code ${rc}); see ${AK_LOG#"$AK_ROOT"}." \
    "Running this script again cleans up and retries"
fi
if [ -n "${AK_CERTIFICATE_KEY:-}" ]; then ak_install_cert_renewal; fi
ak_mark join.done status=ok "node=${AK_PROVIDER_ID}" "pool=${AK_POOL_NAME}"
ak_log "joined the cluster as ${AK_PROVIDER_ID}"
