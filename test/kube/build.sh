#!/usr/bin/env bash
# Builds the upstream binaries the real-cluster tests run, from source, at pinned versions, with the ordinary `go`
# client and the Go module proxy:
#
#   control plane  etcd (+ etcdctl, etcdutl), kube-apiserver, kube-controller-manager, kube-scheduler, kubeadm, kubectl, kwok
#   previous minor kube-apiserver, kube-controller-manager, kube-scheduler, kubeadm, kubelet of the previous minor, into
#                  bin/<its version>/: what the tests across two versions run (test/kube/go/kubernetes-previous)
#   node runtime   kubelet, kube-proxy, containerd (+ ctr, shim), runc (cgo, seccomp), CNI plugins, flannel,
#                  and the node images (pause, a workload, kube-proxy, flannel; etcd and the control plane of both
#                  versions, for a real-node master's static pods) as OCI archives
#   ccm            the Alibaba Cloud Controller Manager, from ../shared/vendor (vendored: -mod vendor)
#   autoscaler     the Cluster Autoscaler (alicloud provider), from ../shared/vendor (its go.mod + the proxy)
#
# Module families: test/kube/go/<family>/go.mod + go.sum pin the versions. The CCM and the autoscaler are not
# served by the proxy: their source tarballs sit in ../shared/vendor (AK_VENDOR_DIR overrides), checked against the
# sha256 in test/kube/go/vendored.txt before they are unpacked (docs/real-cluster.md).
#
# Everything lives outside the clone, keyed by the Kubernetes version:
#   ${XDG_CACHE_HOME:-~/.cache}/alicloud-kubeadm/k8s-<version>/{bin,src,gomodcache,gocache}
# (KUBE_HARNESS_HOME overrides that folder.) All Go builds share one module cache and one build cache. Only what
# is missing or out of date is built: each binary has a stamp holding a hash of what decides it (go.mod, go.sum or
# the tarball's sha256, the flags, the Go version), so a warm run only checks the stamps and prints the versions.
# Each family's build time is printed, and a table of them at the end.
#
#   bash test/kube/build.sh            # or: npm run kube:build
#   bash test/kube/build.sh --print-bin-dir
#
# Host needs: Go 1.26; for runc, a C compiler and the libseccomp headers (Debian `libseccomp-dev`); for the
# kube-proxy and flannel images, the host's iptables (Debian `iptables`), packed into the images as upstream's
# Debian-based kube-proxy image carries it. `.ci/run` installs them.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
gomods="$here/go"

required() { # module folder, module path -> the version its go.mod requires
  awk -v m="$2" '($1 == "require" && $2 == m) { print $3; exit } ($1 == m && $2 ~ /^v/) { print $2; exit }' "$gomods/$1/go.mod"
}
k8s_version="$(required kubernetes k8s.io/kubernetes)"
[[ -n "$k8s_version" ]] || { echo "kube:build: cannot read the k8s.io/kubernetes version from $gomods/kubernetes/go.mod" >&2; exit 1; }
if [[ -z "${KUBE_HARNESS_HOME:-}${XDG_CACHE_HOME:-}${HOME:-}" ]]; then
  echo "kube:build: set HOME, XDG_CACHE_HOME or KUBE_HARNESS_HOME: the binaries and Go caches live outside the clone" >&2
  exit 1
fi
home="${KUBE_HARNESS_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/alicloud-kubeadm/k8s-$k8s_version}"
bin="$home/bin"

if [[ "${1:-}" == "--print-bin-dir" ]]; then
  echo "$bin"
  exit 0
fi

command -v go >/dev/null 2>&1 || { echo "kube:build: needs the Go toolchain (go 1.26) on PATH" >&2; exit 1; }
mkdir -p "$bin" "$home/gomodcache" "$home/gocache" "$home/src"

export GOMODCACHE="$home/gomodcache"
export GOCACHE="$home/gocache"
export GOTOOLCHAIN=local          # never download a toolchain; the go.mod files ask for go <= 1.26
export GOFLAGS="-mod=readonly -buildvcs=false"
export GOWORK=off
unset GOOS GOARCH GOARM GOAMD64 || true

# Version stamping as upstream does it (kubernetes hack/lib/version.sh): component-base and
# client-go version variables, so `kubeadm version` and `--version` say the pinned release.
# The build date is the release's module time, so rebuilding gives the same bytes.
k8s_ldflags_of() { # version build-date -> the -ldflags of that release's binaries
  local minor="${1#v1.}" pkg out="-s -w"
  minor="${minor%%.*}"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    out+=" -X $pkg.gitVersion=$1 -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    out+=" -X $pkg.buildDate=$2"
  done
  echo "$out"
}
k8s_ldflags="$(k8s_ldflags_of "$k8s_version" 2026-07-22T18:07:38Z)"
# The previous minor (the upgrade tests' old version), stamped the same way.
prev_version="$(required kubernetes-previous k8s.io/kubernetes)"
[[ -n "$prev_version" ]] || { echo "kube:build: cannot read the k8s.io/kubernetes version from $gomods/kubernetes-previous/go.mod" >&2; exit 1; }
prev_ldflags="$(k8s_ldflags_of "$prev_version" 2026-08-20T15:16:14Z)"
kwok_version="$(required kwok sigs.k8s.io/kwok)"
containerd_version="$(required containerd github.com/containerd/containerd/v2)"
cni_version="$(required cni github.com/containernetworking/plugins)"
flannel_version="$(required flannel github.com/flannel-io/flannel)"
flannel_cni_version="$(required flannel-cni github.com/containernetworking/plugins)"
containerd_pkg=github.com/containerd/containerd/v2
cni_pkg=github.com/containernetworking/plugins

# Each family: name | group | module folder | cgo | build tags | ldflags | binary=package ...
# (a binary name with a / lands in that sub-folder of bin/; the group names the family in the time table)
families=(
  "kubernetes|control plane|kubernetes|0||$k8s_ldflags|kube-apiserver=k8s.io/kubernetes/cmd/kube-apiserver kube-controller-manager=k8s.io/kubernetes/cmd/kube-controller-manager kube-scheduler=k8s.io/kubernetes/cmd/kube-scheduler kubeadm=k8s.io/kubernetes/cmd/kubeadm kubectl=k8s.io/kubernetes/cmd/kubectl kubelet=k8s.io/kubernetes/cmd/kubelet kube-proxy=k8s.io/kubernetes/cmd/kube-proxy"
  # only what the tests across two versions run (a binary named <version>/x lands in bin/<version>/)
  "kubernetes-previous|previous minor|kubernetes-previous|0||$prev_ldflags|$prev_version/kube-apiserver=k8s.io/kubernetes/cmd/kube-apiserver $prev_version/kube-controller-manager=k8s.io/kubernetes/cmd/kube-controller-manager $prev_version/kube-scheduler=k8s.io/kubernetes/cmd/kube-scheduler $prev_version/kubeadm=k8s.io/kubernetes/cmd/kubeadm $prev_version/kubelet=k8s.io/kubernetes/cmd/kubelet"
  "etcd|control plane|etcd|0||-s -w|etcd=go.etcd.io/etcd/server/v3 etcdctl=go.etcd.io/etcd/etcdctl/v3 etcdutl=go.etcd.io/etcd/etcdutl/v3"
  "kwok|control plane|kwok|0||-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=$kwok_version|kwok=sigs.k8s.io/kwok/cmd/kwok"
  # containerd's Makefile: urfave_cli_no_docs always; no snapshotters the nodes do not use (they use overlayfs)
  "containerd|node runtime|containerd|0|urfave_cli_no_docs no_btrfs no_devmapper no_zfs|-s -w -X $containerd_pkg/version.Version=$containerd_version -X $containerd_pkg/version.Package=$containerd_pkg|containerd=$containerd_pkg/cmd/containerd ctr=$containerd_pkg/cmd/ctr containerd-shim-runc-v2=$containerd_pkg/cmd/containerd-shim-runc-v2"
  # runc's Makefile tags minus libpathrs (a Rust library no distribution here ships; runc then uses its Go path code)
  "runc|node runtime|runc|1|seccomp urfave_cli_no_docs|-s -w|runc=github.com/opencontainers/runc"
  "cni|node runtime|cni|0||-s -w -X $cni_pkg/pkg/utils/buildversion.BuildVersion=$cni_version|cni/bridge=$cni_pkg/plugins/main/bridge cni/host-local=$cni_pkg/plugins/ipam/host-local cni/loopback=$cni_pkg/plugins/main/loopback cni/portmap=$cni_pkg/plugins/meta/portmap"
  # flannel's Makefile: cgo on amd64 (its UDP backend needs it), linked statically (it runs in an image)
  "flannel|node runtime|flannel|1||-s -w -X github.com/flannel-io/flannel/pkg/version.Version=$flannel_version -extldflags -static|flanneld=github.com/flannel-io/flannel install-conf=github.com/flannel-io/flannel/cmd/install_conf"
  "flannel-cni|node runtime|flannel-cni|0||-s -w -X $cni_pkg/pkg/utils/buildversion.BuildVersion=$flannel_cni_version|flannel-cni=$cni_pkg/plugins/meta/flannel"
  "images|node runtime|images|0||-s -w|images/pause=alicloud-kubeadm/test/kube/go/images/pause images/workload=alicloud-kubeadm/test/kube/go/images/workload images/ocipack=alicloud-kubeadm/test/kube/go/images/ocipack"
)

# The vendored sources (../shared/vendor): name | group | tarball | sha256 | folder in it | -mod | build tags | ldflags | binary=package
vendored=()
# shellcheck source=/dev/null # (test/kube/go/vendored.txt: it sets vendored)
. "$gomods/vendored.txt"
vendor_dir="${AK_VENDOR_DIR:-$here/../../../shared/vendor}"

declare -A took=()
note_time() { took[$1]=$(( ${took[$1]:-0} + $2 )); }

stamp_of() { # text that decides the binary -> its hash
  { printf '%s\n' "$@"; go env GOVERSION; } | sha256sum | cut -d' ' -f1
}
seccomp_version() { pkg-config --modversion libseccomp 2>/dev/null || dpkg-query -W -f '${Version}' libseccomp-dev 2>/dev/null || echo none; }

stale() { # name stamp -> 0 when the binary must be (re)built
  [[ ! -x "$bin/$1" || "$(cat "$bin/.${1//\//_}.stamp" 2>/dev/null)" != "$2" ]]
}

# build NAME GROUP DIR CGO TAGS LDFLAGS STAMP TARGET... : one `go build` for the stale targets of one module, so the
# packages the binaries share are compiled once.
build() {
  local name=$1 group=$2 dir=$3 cgo=$4 tags=$5 ldflags=$6 stamp=$7
  shift 7
  local t out pkgs=() missing=() t0=$SECONDS
  for t in "$@"; do stale "${t%%=*}" "$stamp" && missing+=("$t"); done
  [[ ${#missing[@]} -gt 0 ]] || return 0
  if [[ "$cgo" == 1 ]] && ! command -v cc >/dev/null 2>&1 && ! command -v gcc >/dev/null 2>&1; then
    echo "kube:build: $name needs a C compiler (cgo)" >&2; exit 1
  fi
  out="$home/tmp-$name"
  rm -rf "$out"; mkdir -p "$out"
  for t in "${missing[@]}"; do pkgs+=("${t#*=}"); done
  echo "kube:build: building ${missing[*]%%=*} ($name) ..."
  local -a extra=()
  [[ -z "${GOFLAGS_EXTRA:-}" ]] || extra=("$GOFLAGS_EXTRA")
  (cd "$dir" && CGO_ENABLED=$cgo go build "${extra[@]}" -trimpath ${tags:+-tags "$tags"} -ldflags "$ldflags" -o "$out/" "${pkgs[@]}")
  for t in "${missing[@]}"; do
    local bname="${t%%=*}" pkg="${t#*=}" src
    # go build -o dir/ names each binary after the last element of its package path, or the one before a
    # major-version suffix (go.etcd.io/etcd/server/v3 -> server)
    src="$out/$(basename "$pkg")"
    [[ "$pkg" =~ /([^/]+)/v[0-9]+$ ]] && src="$out/${BASH_REMATCH[1]}"
    [[ "$pkg" == . || "$pkg" == ./* ]] && src="$out/$(basename "$(cd "$dir/$pkg" && pwd)")"
    mkdir -p "$(dirname "$bin/$bname")"
    mv -f "$src" "$bin/$bname"
    echo "$stamp" >"$bin/.${bname//\//_}.stamp"
  done
  rm -rf "$out"
  echo "kube:build: $name built in $((SECONDS - t0))s"
  note_time "$group" $((SECONDS - t0))
  built=1
}

start=$SECONDS
built=0
for family in "${families[@]}"; do
  IFS='|' read -r name group mod cgo tags ldflags targets <<<"$family"
  host_lib=""; [[ "$cgo" == 1 ]] && host_lib="libseccomp $(seccomp_version)"
  # everything in the module folder decides its binaries: go.mod, go.sum, and our own sources where there are some
  stamp="$(stamp_of "$(find "$gomods/$mod" -type f | LC_ALL=C sort | xargs cat)" "$cgo|$tags|$ldflags -trimpath" "$host_lib")"
  # shellcheck disable=SC2086 # targets are words
  build "$name" "$group" "$gomods/$mod" "$cgo" "$tags" "$ldflags" "$stamp" $targets
done

# The vendored sources: checked, unpacked once per sha256 into src/, built like the others.
vendor_missing=()
for v in "${vendored[@]}"; do
  IFS='|' read -r name group tarball sum folder modflag tags ldflags targets <<<"$v"
  stamp="$(stamp_of "$sum" "0|$tags|$ldflags|$modflag -trimpath")"
  need=0
  for t in $targets; do stale "${t%%=*}" "$stamp" && need=1; done
  [[ $need == 1 ]] || continue
  file="$vendor_dir/$tarball"
  if [[ ! -f "$file" ]]; then
    vendor_missing+=("$name ($tarball)")
    continue
  fi
  src="$home/src/$name-${sum:0:12}"
  if [[ "$(cat "$src/.sha256" 2>/dev/null)" != "$sum" ]]; then
    got="$(sha256sum "$file" | cut -d' ' -f1)"
    [[ "$got" == "$sum" ]] || { echo "kube:build: $file has sha256 $got, expected $sum (test/kube/go/vendored.txt)" >&2; exit 1; }
    t0=$SECONDS
    rm -rf "$src"; mkdir -p "$src"
    tar -xzf "$file" -C "$src"
    chmod -R u+w "$src"
    echo "$sum" >"$src/.sha256"
    note_time "$group" $((SECONDS - t0))
  fi
  # shellcheck disable=SC2086 # targets are words
  GOFLAGS_EXTRA="-mod=$modflag" build "$name" "$group" "$src/$folder" 0 "$tags" "$ldflags" "$stamp" $targets
done
if [[ ${#vendor_missing[@]} -gt 0 ]]; then
  echo "kube:build: skipped ${vendor_missing[*]}: no such file in $vendor_dir (the vendored sources beside the clone; AK_VENDOR_DIR overrides)"
fi

# KWOK's `kwok` binary needs Stage objects; use the ones kwokctl uses by default (node/fast,
# node/heartbeat-with-lease, pod/fast), from the same pinned module source.
stages="$bin/kwok-stages"
stamp="$(stamp_of "$(cat "$gomods/kwok/go.mod" "$gomods/kwok/go.sum")" "stages")"
if [[ "$(cat "$stages/.stamp" 2>/dev/null)" != "$stamp" ]]; then
  src="$(cd "$gomods/kwok" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)"
  rm -rf "$stages"; mkdir -p "$stages"
  for f in node/fast/node-initialize node/heartbeat-with-lease/node-heartbeat-with-lease \
    pod/fast/pod-ready pod/fast/pod-complete pod/fast/pod-delete; do
    cp "$src/kustomize/stage/$f.yaml" "$stages/"
  done
  chmod 644 "$stages"/*.yaml
  echo "$stamp" >"$stages/.stamp"
fi

# --- node images: OCI archives in bin/images/, imported by the real nodes with `ctr images import` ---------------
# merged_usr ROOTFS: the /usr-merged layout Debian 12 has (/bin, /sbin, /lib, /lib64 link into /usr), so the paths
# compiled into its programs (the loader, iptables' extension folder) resolve in the image as on the host.
merged_usr() {
  local d
  for d in bin sbin lib lib64; do mkdir -p "$1/usr/$d"; ln -sfn "usr/$d" "$1/$d"; done
}
# host_binary ROOTFS PATH...: copies host programs and the shared libraries they load (ldd) into ROOTFS, each at its
# real path (symbolic links resolved).
host_binary() {
  local root=$1 p lib real
  shift
  for p in "$@"; do
    real=$(readlink -f "$p")
    mkdir -p "$root$(dirname "$real")"
    cp -L "$p" "$root$real"
    for lib in $(ldd "$p" 2>/dev/null | grep -oE '/[^ ]+\.so[^ ]*' | sort -u); do
      real=$(readlink -f "$lib")
      mkdir -p "$root$(dirname "$real")"
      cp -L "$lib" "$root$real"
      # the path the program asks for (e.g. the loader's /lib64/ld-linux-x86-64.so.2), leading to the file
      if [[ "$lib" != "$real" && ! -e "$root$lib" ]]; then mkdir -p "$root$(dirname "$lib")"; ln -sf "$real" "$root$lib"; fi
    done
  done
}
# iptables as Debian's `iptables` package installs it (nft backend, the distribution's default): the multi-call
# binary, its commands as links, its extension modules (loaded at run time from the folder it was built with), the
# libraries.
iptables_tree() {
  local root=$1 multi=/usr/sbin/xtables-nft-multi cmd ext lib
  merged_usr "$root"
  host_binary "$root" "$multi"
  for cmd in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do
    ln -sf xtables-nft-multi "$root/usr/sbin/$cmd"
  done
  ext=$(readlink -f "$(dirname "$(ldd "$multi" | grep -oE '/[^ ]+/libxtables\.so[^ ]*' | head -1)")/xtables")
  mkdir -p "$root$ext"
  cp -L "$ext"/*.so "$root$ext/"
  for lib in "$root$ext"/*.so; do host_binary "$root" "${lib#"$root"}"; done
}
# image NAME REF ENTRYPOINT STAMP-TEXT SETUP-FUNCTION
image() {
  local name=$1 ref=$2 entry=$3 text=$4 setup=$5 root stamp t0=$SECONDS
  stamp="$(stamp_of "$text" "$ref" "$entry" "$(declare -f "$setup" merged_usr host_binary iptables_tree)" "$(cat "$bin/.images_ocipack.stamp")")"
  [[ "$(cat "$bin/images/.$name.stamp" 2>/dev/null)" != "$stamp" ]] || return 0
  root="$home/tmp-image-$name"
  rm -rf "$root"; mkdir -p "$root" "$bin/images"
  "$setup" "$root"
  "$bin/images/ocipack" -name "$ref" -entrypoint "$entry" -out "$bin/images/$name.tar" "$root"
  rm -rf "$root"
  echo "$stamp" >"$bin/images/.$name.stamp"
  echo "kube:build: image $ref packed in $((SECONDS - t0))s"
  note_time "node runtime" $((SECONDS - t0))
}
pause_root() { cp "$bin/images/pause" "$1/pause"; }
workload_root() { cp "$bin/images/workload" "$1/workload"; }
kube_proxy_root() { mkdir -p "$1/usr/local/bin"; cp "$bin/kube-proxy" "$1/usr/local/bin/"; iptables_tree "$1"; mkdir -p "$1/run" "$1/tmp" "$1/var/lib/kube-proxy"; }
flannel_root() { mkdir -p "$1/opt/bin" "$1/run" "$1/tmp"; cp "$bin/flanneld" "$bin/install-conf" "$1/opt/bin/"; iptables_tree "$1"; }
flannel_cni_root() { cp "$bin/flannel-cni" "$1/flannel"; merged_usr "$1"; host_binary "$1" /usr/bin/cp; }
stamp_text() { local b; for b in "$@"; do cat "$bin/.${b//\//_}.stamp"; done; }
host_iptables="$(dpkg-query -W -f '${Version}' iptables 2>/dev/null || true)"

# The names are the ones kubeadm and the project's manifests use; test/kube/nodes.ts tags others where a stack names
# its own registry.
pause_version="$(awk -F'"' '/PauseVersion = /{print $2; exit}' "$(cd "$gomods/kubernetes" && go list -m -f '{{.Dir}}' k8s.io/kubernetes)/cmd/kubeadm/app/constants/constants.go")"
image pause "registry.k8s.io/pause:$pause_version" /pause "$(stamp_text images/pause)" pause_root
image workload "alicloud-kubeadm.test/workload:1" /workload "$(stamp_text images/workload)" workload_root
image_missing=()
if [[ -x /usr/sbin/xtables-nft-multi && -n "$host_iptables" ]]; then
  image kube-proxy "registry.k8s.io/kube-proxy:$k8s_version" /usr/local/bin/kube-proxy "$(stamp_text kube-proxy) iptables $host_iptables" kube_proxy_root
  image flannel "ghcr.io/flannel-io/flannel:$flannel_version" /opt/bin/flanneld "$(stamp_text flanneld install-conf) iptables $host_iptables" flannel_root
else
  image_missing+=(kube-proxy flannel)
fi
image flannel-cni-plugin "ghcr.io/flannel-io/flannel-cni-plugin:v1.9.1-flannel3" /flannel "$(stamp_text flannel-cni)" flannel_cni_root
# The control plane as kubeadm runs it on a master (static pods), for both versions: upstream's images carry the binary
# at /usr/local/bin/<name>. etcd under the tag kubeadm of this version names (for this minor and the previous one).
etcd_tag="$(awk -F'"' '/DefaultEtcdVersion = /{print $2; exit}' "$(cd "$gomods/kubernetes" && go list -m -f '{{.Dir}}' k8s.io/kubernetes)/cmd/kubeadm/app/constants/constants.go")"
etcd_root() { mkdir -p "$1/usr/local/bin"; cp "$bin/etcd" "$bin/etcdctl" "$1/usr/local/bin/"; }
image etcd "registry.k8s.io/etcd:$etcd_tag" /usr/local/bin/etcd "$(stamp_text etcd etcdctl)" etcd_root
control_plane_binary=""
control_plane_root() { mkdir -p "$1/usr/local/bin"; cp "$bin/$control_plane_binary" "$1/usr/local/bin/"; }
for cp_version in "$k8s_version" "$prev_version"; do
  for cp_name in kube-apiserver kube-controller-manager kube-scheduler; do
    control_plane_binary=$cp_name
    [[ "$cp_version" == "$k8s_version" ]] || control_plane_binary="$cp_version/$cp_name"
    image "$cp_name-$cp_version" "registry.k8s.io/$cp_name:$cp_version" "/usr/local/bin/$cp_name" "$(stamp_text "$control_plane_binary")" control_plane_root
  done
done
if [[ ${#image_missing[@]} -gt 0 ]]; then
  echo "kube:build: skipped the ${image_missing[*]} images: they carry the host's iptables (Debian: apt-get install iptables)"
fi

echo "kube:build: binaries in $bin ($( ((built)) && echo "built in $((SECONDS - start))s" || echo "all up to date"))"
if ((built)); then
  for g in "control plane" "previous minor" "node runtime" ccm autoscaler; do
    [[ -z "${took[$g]:-}" ]] || printf 'kube:build: %-14s %4ss\n' "$g" "${took[$g]}"
  done
fi
v() { [[ -x "$bin/$1" ]] && printf '%-24s %s\n' "$1" "$("$bin/$1" "${@:2}" 2>&1 | head -3 | tr '\n' ' ' | sed 's/ *$//')"; return 0; }
v etcd --version
v etcdctl version
v etcdutl version
v kube-apiserver --version
v kube-controller-manager --version
v kube-scheduler --version
v kubeadm version -o short
v kubectl version --client
v "$prev_version/kube-apiserver" --version
v "$prev_version/kube-controller-manager" --version
v "$prev_version/kube-scheduler" --version
v "$prev_version/kubeadm" version -o short
v "$prev_version/kubelet" --version
v kwok --version
v kubelet --version
v kube-proxy --version
v containerd --version
v runc --version
v cni/bridge --version
v flanneld --version
# the vendored builds: the version their ldflags stamp in (the CCM prints none; the autoscaler has no --version)
for v in "${vendored[@]}"; do
  IFS='|' read -r name group tarball sum folder modflag tags ldflags targets <<<"$v"
  ver="$(grep -oE 'Version=[^ ]+' <<<"$ldflags" | head -n 1)"
  for t in $targets; do
    [[ ! -x "$bin/${t%%=*}" ]] || printf '%-24s %s\n' "${t%%=*}" "${ver#Version=} (${tarball}, test/kube/go/vendored.txt)"
  done
done
find "$bin/images" -maxdepth 1 -name '*.tar' -printf 'image archive            images/%f\n' 2>/dev/null | sort || true
