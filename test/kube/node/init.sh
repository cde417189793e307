#!/bin/bash
# PID 1 of a real node (test/kube/nodes.ts), run by `unshare --net --mount --uts --ipc --pid --fork --mount-proc`. Arguments: the node folder,
# the host name, the bin folder of the harness, and optionally a folder of another version's kubeadm and kubelet. It gives the node a copy-on-write view of the machine's system folders
# (/etc, /var, /opt, /usr, /root: what the node writes stays in `<node>/upper`) and private ones (/run; containerd's
# and the kubelet's state on the node folder's own file system, which overlayfs cannot stack on), installs the
# harness's binaries where the packages put them (a baked image), prints `ready`, and becomes the pause process that
# reaps orphans. When it dies, every process of the node dies with it (the kernel ends a PID namespace with its init).
set -euo pipefail
R=$1 BIN=$3
KUBE_BIN=${4:-$BIN} # kubeadm and kubelet (and kubectl when there) of another version: the packages a node was made with
hostname "$2"
for d in etc var opt usr root; do
  mkdir -p "$R/upper/$d" "$R/work/$d"
  mount -t overlay "ak-node-$d" -o "lowerdir=/$d,upperdir=$R/upper/$d,workdir=$R/work/$d" "/$d"
done
mount -t tmpfs -o mode=755 tmpfs /run
mkdir -p "$R/containerd" "$R/kubelet" "$R/logs" /var/lib/containerd /var/lib/kubelet /var/log/units
mount --bind "$R/containerd" /var/lib/containerd
mount --bind "$R/kubelet" /var/lib/kubelet
mount --bind "$R/logs" /var/log/units
# the packages' binaries, as a baked image has them (prepare_node.sh then installs nothing)
# (kubeadm, kubelet, kubectl from the Kubernetes packages; containerd, runc and the CNI plugins where their release
# archives' instructions put them, which containerd's own unit names)
for b in kubeadm kubelet kubectl; do
  if [ -x "$KUBE_BIN/$b" ]; then ln -sf "$KUBE_BIN/$b" "/usr/bin/$b"; else ln -sf "$BIN/$b" "/usr/bin/$b"; fi
done
for b in containerd ctr containerd-shim-runc-v2; do ln -sf "$BIN/$b" "/usr/local/bin/$b"; done
ln -sf "$BIN/runc" /usr/local/sbin/runc
mkdir -p /opt/cni/bin
for p in bridge host-local loopback portmap; do ln -sf "$BIN/cni/$p" "/opt/cni/bin/$p"; done
# their units, as the packages install them (kubelet.service, 10-kubeadm.conf, containerd.service beside this file)
mkdir -p /usr/lib/systemd/system/kubelet.service.d /usr/lib/systemd/system/containerd.service.d /etc/systemd/system
cp "$R/files/kubelet.service" "$R/files/containerd.service" /usr/lib/systemd/system/
cp "$R/files/10-kubeadm.conf" /usr/lib/systemd/system/kubelet.service.d/
cp "$R/files/baked-images.conf" /usr/lib/systemd/system/containerd.service.d/
# the node image's overlays for this machine, if the fixture gives any (docs/real-cluster.md)
if [ -d "$R/files/overlay" ]; then cp -a "$R/files/overlay/." /; fi
# the VPC here has no DNS server: a lookup fails at once instead of waiting for one
echo "nameserver 127.0.0.1" >/etc/resolv.conf.ak && mount --bind /etc/resolv.conf.ak /etc/resolv.conf
echo ready
exec "$BIN/images/pause"
