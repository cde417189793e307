#!/usr/bin/env bash
# Builds the upstream binaries the real-cluster tests run (etcd, etcdctl, etcdutl, kube-apiserver,
# kube-controller-manager, kube-scheduler, kubeadm, kubectl, kwok) from source, at the versions
# pinned by test/kube/go/*/go.mod + go.sum, through the Go module proxy with the ordinary `go` client.
#
# Everything lives outside the clone, keyed by the Kubernetes version:
#   ${XDG_CACHE_HOME:-~/.cache}/alicloud-kubeadm/k8s-<version>/{bin,gomodcache,gocache}
# (KUBE_HARNESS_HOME overrides that folder.) Only what is missing or out of date is built: each
# binary has a stamp holding a hash of its module's go.mod, go.sum and the build flags, so a warm
# run only checks the stamps and prints the versions.
#
#   bash test/kube/build.sh            # or: npm run kube:build
#   bash test/kube/build.sh --print-bin-dir
#
# Opt-in: `--autoscaler` (or KUBE_BUILD_AUTOSCALER=1) also builds the Cluster Autoscaler (alicloud provider only)
# from the git commit pinned in test/kube/go/autoscaler/source, for test/realClusterAutoscaler.test.ts. Its
# source is not on the Go module proxy, so it needs git access to AUTOSCALER_GIT_URL (a local mirror works too:
# AUTOSCALER_GIT_URL=/path/to/autoscaler.git); about 7 more minutes cold (docs/real-cluster.md).
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
build_autoscaler="${KUBE_BUILD_AUTOSCALER:-0}"
[[ "${1:-}" == "--autoscaler" ]] && build_autoscaler=1

command -v go >/dev/null 2>&1 || { echo "kube:build: needs the Go toolchain (go 1.26) on PATH" >&2; exit 1; }
mkdir -p "$bin" "$home/gomodcache" "$home/gocache"

export GOMODCACHE="$home/gomodcache"
export GOCACHE="$home/gocache"
export GOTOOLCHAIN=local          # never download a toolchain; the go.mod files ask for go <= 1.26
export GOFLAGS="-mod=readonly -buildvcs=false"
export GOWORK=off
export CGO_ENABLED=0              # static, as upstream builds the server binaries
unset GOOS GOARCH GOARM GOAMD64 || true

# Version stamping as upstream does it (kubernetes hack/lib/version.sh): component-base and
# client-go version variables, so `kubeadm version` and `--version` say the pinned release.
# The build date is the release's module time, so rebuilding gives the same bytes.
k8s_minor="${k8s_version#v1.}"; k8s_minor="${k8s_minor%%.*}"
k8s_date="2026-07-22T18:07:38Z"
k8s_ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  k8s_ldflags+=" -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$k8s_minor"
  k8s_ldflags+=" -X $pkg.buildDate=$k8s_date"
done
kwok_version="$(required kwok sigs.k8s.io/kwok)"
kwok_ldflags="-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=$kwok_version"
etcd_ldflags="-s -w"

# family | module folder | ldflags | binary=package ...
families=(
  "kubernetes|$k8s_ldflags|kube-apiserver=k8s.io/kubernetes/cmd/kube-apiserver kube-controller-manager=k8s.io/kubernetes/cmd/kube-controller-manager kube-scheduler=k8s.io/kubernetes/cmd/kube-scheduler kubeadm=k8s.io/kubernetes/cmd/kubeadm kubectl=k8s.io/kubernetes/cmd/kubectl"
  "etcd|$etcd_ldflags|etcd=go.etcd.io/etcd/server/v3 etcdctl=go.etcd.io/etcd/etcdctl/v3 etcdutl=go.etcd.io/etcd/etcdutl/v3"
  "kwok|$kwok_ldflags|kwok=sigs.k8s.io/kwok/cmd/kwok"
)

stamp_of() { # module folder, ldflags -> hash of everything that decides the binary
  { cat "$gomods/$1/go.mod" "$gomods/$1/go.sum"; echo "$2"; go env GOVERSION; echo "$CGO_ENABLED -trimpath"; } | sha256sum | cut -d' ' -f1
}

start=$SECONDS
built=0
for family in "${families[@]}"; do
  IFS='|' read -r mod ldflags targets <<<"$family"
  stamp="$(stamp_of "$mod" "$ldflags")"
  missing=()
  for t in $targets; do
    name="${t%%=*}"
    if [[ ! -x "$bin/$name" || "$(cat "$bin/.$name.stamp" 2>/dev/null)" != "$stamp" ]]; then
      missing+=("$t")
    fi
  done
  [[ ${#missing[@]} -gt 0 ]] || continue
  out="$home/tmp-$mod"
  rm -rf "$out"; mkdir -p "$out"
  pkgs=()
  for t in "${missing[@]}"; do pkgs+=("${t#*=}"); done
  echo "kube:build: building ${missing[*]%%=*} ($mod module) ..."
  t0=$SECONDS
  # One `go build` per module so the packages the binaries share are compiled once.
  (cd "$gomods/$mod" && go build -trimpath -ldflags "$ldflags" -o "$out/" "${pkgs[@]}")
  for t in "${missing[@]}"; do
    name="${t%%=*}"; pkg="${t#*=}"
    # go build -o dir/ names each binary after the last element of its package path, or the one before a
    # major-version suffix (go.etcd.io/etcd/server/v3 -> server)
    src="$out/$(basename "$pkg")"
    [[ "$pkg" =~ /([^/]+)/v[0-9]+$ ]] && src="$out/${BASH_REMATCH[1]}"
    mv -f "$src" "$bin/$name"
    echo "$stamp" >"$bin/.$name.stamp"
  done
  rm -rf "$out"
  echo "kube:build: $mod module built in $((SECONDS - t0))s"
  built=1
done

# Opt-in: the Cluster Autoscaler, from its pinned git commit (test/kube/go/autoscaler/source), with its own
# go.mod + go.sum (readonly) and the dependencies through the proxy, into the same caches.
if [[ "$build_autoscaler" == 1 ]]; then
  ca_url_env="${AUTOSCALER_GIT_URL:-}"
  # shellcheck source=/dev/null
  . "$gomods/autoscaler/source"
  ca_url="${ca_url_env:-$AUTOSCALER_GIT_URL}"
  ca_version="${AUTOSCALER_TAG#cluster-autoscaler-}"
  ca_ldflags="-s -w -X k8s.io/autoscaler/cluster-autoscaler/version.ClusterAutoscalerVersion=$ca_version"
  ca_stamp="$(
    { cat "$gomods/autoscaler/source"; echo "$ca_ldflags"; go env GOVERSION; echo "$CGO_ENABLED -trimpath"; } | sha256sum | cut -d' ' -f1
  )"
  if [[ ! -x "$bin/cluster-autoscaler" || "$(cat "$bin/.cluster-autoscaler.stamp" 2>/dev/null)" != "$ca_stamp" ]]; then
    command -v git >/dev/null 2>&1 || { echo "kube:build: --autoscaler needs git" >&2; exit 1; }
    src="$home/src/autoscaler-$AUTOSCALER_COMMIT"
    if [[ "$(cat "$src/.commit" 2>/dev/null)" != "$AUTOSCALER_COMMIT" ]]; then
      echo "kube:build: fetching $AUTOSCALER_TAG from $ca_url ..."
      rm -rf "$src" "$src.git"
      git init --quiet --bare "$src.git"
      git --git-dir="$src.git" fetch --quiet --depth 1 "$ca_url" "refs/tags/$AUTOSCALER_TAG:refs/tags/$AUTOSCALER_TAG"
      got="$(git --git-dir="$src.git" rev-parse "refs/tags/$AUTOSCALER_TAG^{commit}")"
      [[ "$got" == "$AUTOSCALER_COMMIT" ]] || { echo "kube:build: $AUTOSCALER_TAG is $got at $ca_url, expected $AUTOSCALER_COMMIT" >&2; exit 1; }
      mkdir -p "$src"
      git --git-dir="$src.git" archive "$AUTOSCALER_COMMIT" cluster-autoscaler | tar -x -C "$src" --strip-components=1
      rm -rf "$src.git"
      echo "$AUTOSCALER_COMMIT" >"$src/.commit"
    fi
    echo "kube:build: building cluster-autoscaler $ca_version (tags $AUTOSCALER_BUILD_TAGS) ..."
    t0=$SECONDS
    (cd "$src" && go build -trimpath -tags "$AUTOSCALER_BUILD_TAGS" -ldflags "$ca_ldflags" -o "$bin/cluster-autoscaler.tmp" .)
    mv -f "$bin/cluster-autoscaler.tmp" "$bin/cluster-autoscaler"
    echo "$ca_stamp" >"$bin/.cluster-autoscaler.stamp"
    echo "kube:build: cluster-autoscaler built in $((SECONDS - t0))s"
    built=1
  fi
fi

# KWOK's `kwok` binary needs Stage objects; use the ones kwokctl uses by default (node/fast,
# node/heartbeat-with-lease, pod/fast), from the same pinned module source.
stages="$bin/kwok-stages"
stamp="$(stamp_of kwok "$kwok_ldflags")"
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

echo "kube:build: binaries in $bin ($( ((built)) && echo "built in $((SECONDS - start))s" || echo "all up to date"))"
v() { printf '%-24s %s\n' "$1" "$("$bin/$1" "${@:2}" 2>&1 | tr '\n' ' ' | sed 's/ *$//')"; }
v etcd --version
v etcdctl version
v etcdutl version
v kube-apiserver --version
v kube-controller-manager --version
v kube-scheduler --version
v kubeadm version -o short
v kubectl version --client
v kwok --version
if [[ -x "$bin/cluster-autoscaler" ]]; then
  # shellcheck source=/dev/null
  printf '%-24s %s\n' cluster-autoscaler "$(. "$gomods/autoscaler/source"; echo "$AUTOSCALER_TAG ($AUTOSCALER_COMMIT, tags $AUTOSCALER_BUILD_TAGS)")"
fi
