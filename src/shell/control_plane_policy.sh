#!/bin/bash
# alicloud-kubeadm control-plane policy, shared by master_init.sh (master 0) and control-plane joins (attach_node.sh
# with AK_CERTIFICATE_KEY): the API server's admission configuration (Pod Security by default) and, on master 0, no
# bootstrap token left over from kubeadm init. src/shell/render.ts puts this file after control_plane.sh, for masters
# only. See docs/security.md#pod-security and #no-default-token.

AK_ADMISSION_DIR="/etc/kubernetes/admission"

# ak_write_admission_config: the API server's --admission-control-config-file (the cluster's ClusterConfiguration
# names it, so master 0 writes it before kubeadm init and every member before kubeadm join): PodSecurity enforces
# `baseline` in every namespace but the system ones (AK_PSA_EXEMPT_NAMESPACES, comma-separated), and warns and audits
# `restricted`. A namespace label can still relax it; the ValidatingAdmissionPolicy the stack applies keeps such pods
# off the masters whatever the labels say.
ak_write_admission_config() {
  local ns list="" path="${AK_ROOT}${AK_ADMISSION_DIR}/admission.yaml"
  local -a exempt=()
  IFS=, read -r -a exempt <<<"${AK_PSA_EXEMPT_NAMESPACES:-}"
  for ns in "${exempt[@]}"; do list+=$'\n'"          - $(ak_yaml "$ns")"; done
  ak_write_file "$path" 600 <<EOF || true
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
  - name: PodSecurity
    configuration:
      apiVersion: pod-security.admission.config.k8s.io/v1
      kind: PodSecurityConfiguration
      defaults:
        enforce: baseline
        enforce-version: latest
        audit: restricted
        audit-version: latest
        warn: restricted
        warn-version: latest
      exemptions:
        usernames: []
        runtimeClasses: []
        namespaces:${list:- []}
EOF
  grep -qs 'kind: PodSecurityConfiguration' "$path" ||
    ak_die "could not write ${AK_ADMISSION_DIR}/admission.yaml: kube-apiserver must not start without it;" \
      "check that ${AK_ADMISSION_DIR} is a writable directory with free space, then run again"
}

# ak_delete_init_tokens: kubeadm init makes a bootstrap token (24 h, in the group kubeadm auto-approves: a kubelet
# certificate for any node name) when its InitConfiguration lists none. Nothing here joins with it: nodes join through
# admission, members with a token made for their join. Deleted before init is marked done; init fails otherwise.
ak_delete_init_tokens() {
  local kubeconfig="${AK_ROOT}/etc/kubernetes/admin.conf" ids id attempt left
  for ((attempt = 1; attempt <= 12; attempt++)); do
    # Only the public id of each token leaves kubeadm's output.
    if ids=$(kubeadm token list --kubeconfig "$kubeconfig" -o json 2>/dev/null |
      sed -n 's/^ *"token": *"\([a-z0-9]\{6\}\)\.[a-z0-9]\{16\}".*/\1/p'); then
      for id in $ids; do
        kubeadm token delete "$id" --kubeconfig "$kubeconfig" >/dev/null 2>&1 || true
      done
      left=$(kubeadm token list --kubeconfig "$kubeconfig" -o json 2>/dev/null | grep -c '"token"' || true)
      if [ "${left:-1}" = 0 ]; then
        ak_log "bootstrap tokens of kubeadm init deleted (${ids//$'\n'/ }); nodes join through admission"
        return 0
      fi
    fi
    ak_log "deleting the bootstrap tokens kubeadm init made (attempt ${attempt}/12)"
    sleep "$AK_RETRY_DELAY"
  done
  ak_die "could not delete the bootstrap token kubeadm init made (it lets its holder get a kubelet certificate for any node);" \
    "kubeadm init itself succeeded: on this master run 'kubeadm token delete <id>' for each token 'kubeadm token list' shows," \
    "then mv ${AK_STATE_DIR#"$AK_ROOT"}/init.failed ${AK_STATE_DIR#"$AK_ROOT"}/init.done"
}
