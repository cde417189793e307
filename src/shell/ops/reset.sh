#!/bin/bash
# reset (on the node): `kubeadm reset` plus what it leaves behind — CNI configuration and state, the cni0 and
# flannel links, iptables and IPVS rules (the metadata block is applied again) — and the join markers, so the node
# neither runs nor rejoins.
if command -v kubeadm >/dev/null 2>&1; then
  kubeadm reset -f
else
  echo 'kubeadm not installed: nothing to reset'
fi
# The CNI config folder's contents, not the folder: containerd's CRI watches it and exits when it is removed
# (docs/upstream.md#containerd-cni-dir), which would fail a join that follows within its restart delay.
(shopt -s dotglob nullglob && rm -rf "${AK_ROOT}/etc/cni/net.d/"*)
rm -rf "${AK_ROOT}/var/lib/cni/flannel" "${AK_ROOT}/run/flannel"
for link in cni0 flannel.1; do
  if ip link show "$link" >/dev/null 2>&1; then ip link delete "$link"; fi
done
if command -v iptables >/dev/null 2>&1; then
  iptables -F && iptables -t nat -F && iptables -t mangle -F && iptables -X
  # The metadata block's mangle FORWARD rule went with the flush: back first, before anything else runs here.
  block="${AK_ROOT}/usr/local/sbin/alicloud-kubeadm-metadata-block"
  if [ -f "$block" ]; then bash "$block" || { echo "error: could not re-apply ${block#"$AK_ROOT"}" >&2; exit 1; }; fi
fi
if command -v ipvsadm >/dev/null 2>&1; then ipvsadm --clear; fi
rm -f "${AK_STATE_DIR}/join.done" "${AK_STATE_DIR}/init.done"
echo reset-complete
