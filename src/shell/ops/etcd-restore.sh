#!/bin/bash
# etcd-restore (one-off, on the master a backup is restored onto; `npm run restore`, src/recovery/restore.ts): one step
# of the restore per run, each recorded under ${AK_STATE_DIR}/restore/<AK_RESTORE_ID>/<step>.done, so a run that stopped
# half-way is continued by running the steps again. Prints `ak-restore key=value` lines; errors on stderr name the step
# and the fix.
#   status   what this master is (mode: `existing` control plane, or a `fresh` master 0 that refused kubeadm init), the
#            steps done, another unfinished restore, whether the API server answers /readyz,
#            and `discarded=1` once this restore began to discard the cluster the master ran (a new stack's own)
#   fetch    the backup, downloaded with the signed request and opened with the password of that one object, both
#            received sealed on channel AK_CHANNEL (channel-receive); its SHA-256 checked, unpacked root-only
#   stop     an existing control plane's static pod manifests moved aside, until etcd and the API server stopped; or,
#            restoring into a new stack (AK_DISCARD_CA: the SHA-256 of this master's CA file, read by status), the new
#            stack's own cluster discarded: `kubeadm reset -f`, and this master becomes a master 0 that refused init
#   restore  etcdutl snapshot restore (a new cluster id, member AK_NODE at https://AK_PEER_IP:2380 alone), the backup's
#            CA material and EncryptionConfiguration in place
#   start    the manifests put back (existing), or kubeadm init over the restored etcd and CA (fresh), until /readyz
#   leases   the API server identity Leases of every other host deleted (they belong to API servers that do not run now),
#            once, after the start (recorded: on a later run the re-joined masters' Leases are live)
# Parameters: AK_STEP, AK_RESTORE_ID, AK_NODE, AK_PEER_IP, AK_CHANNEL, AK_DISCARD_CA (empty but in a new stack's stop).
AK_RETRY_DELAY="${AK_RETRY_DELAY:-5}"
ak_die() { ak_fail "$*"; }
manifests="${AK_ROOT}/etc/kubernetes/manifests"
restore_dir="${AK_STATE_DIR}/restore/${AK_RESTORE_ID}"
aside="${AK_STATE_DIR}/restore/${AK_RESTORE_ID}/manifests"
init_config="${AK_STATE_DIR}/kubeadm-init.yaml"
ca_file="${AK_ROOT}/etc/kubernetes/pki/ca.crt"

say() { printf 'ak-restore %s\n' "$@"; }
done_step() { [ -f "${restore_dir}/$1.done" ]; }
mark_step() { date -u +%FT%TZ >"${restore_dir}/$1.done"; }
workdir() { (umask 077 && mkdir -p "$restore_dir"); }
step_fail() { ak_fail "step ${AK_STEP}: $*"; }

# The mode, decided once (before anything moved): an existing control plane (its etcd manifest), or a fresh master 0
# that refused kubeadm init (src/shell/master_guard.sh) with its kubeadm config rendered.
mode() {
  if [ -f "${restore_dir}/mode" ]; then cat "${restore_dir}/mode"; return; fi
  if [ -f "${restore_dir}/discarding" ]; then echo fresh
  elif [ -f "${manifests}/etcd.yaml" ]; then echo existing
  elif [ -f "${AK_STATE_DIR}/init.refused" ] && [ -f "$init_config" ]; then echo fresh
  else echo none; fi
}

api_ready() {
  [ -f "$AK_ADMIN_CONF" ] && [ "$(ak_kubectl get --raw /readyz --request-timeout=5s 2>/dev/null)" = ok ]
}

case "$AK_STEP" in
  status)
    say "mode=$(mode)"
    steps=""
    for s in fetch stop restore start; do if done_step "$s"; then steps="${steps:+${steps},}${s}"; fi; done
    say "done=${steps}"
    for d in "${AK_STATE_DIR}"/restore/*/; do
      d=${d%/}
      id=${d##*/}
      if [ "$id" != "$AK_RESTORE_ID" ] && [ -f "${d}/object" ] && [ ! -f "${d}/start.done" ]; then
        say "other=${id}:$(cat "${d}/object")"
        # It moved the control plane's manifests aside: giving it up puts them back first.
        if compgen -G "${d}/manifests/*.yaml" >/dev/null; then say "other-aside=${id}"; fi
      fi
    done
    # Through the cluster endpoint (the load balancer), or this master's own API server at its address (a SAN of its
    # certificate, as upgrade-status reads each master): a broken load balancer alone does not make a running cluster
    # look down.
    if api_ready || { [ -n "$AK_PEER_IP" ] && [ -f "$AK_ADMIN_CONF" ] &&
      [ "$(ak_kubectl --server "https://${AK_PEER_IP}:6443" get --raw /readyz --request-timeout=5s 2>/dev/null)" = ok ]; }; then
      say "api=ready"
    else
      say "api=down"
    fi
    if [ -f "$ca_file" ]; then say "ca=$(sha256sum <"$ca_file" | cut -c1-64)"; fi
    since=$(openssl x509 -noout -startdate -in "$ca_file" 2>/dev/null | sed -n 's/^notBefore=//p' || true)
    if [ -n "$since" ]; then say "ca-since=$(date -u -d "$since" +%FT%TZ 2>/dev/null || true)"; fi
    # Recorded twice: in this restore's record, and in init.refused (until kubeadm init), so a discard whose record was
    # removed by hand (the restore given up after the reset) is still known to the next restore.
    if [ -f "${restore_dir}/discarding" ] || grep -q '^discarded=' "${AK_STATE_DIR}/init.refused" 2>/dev/null; then say "discarded=1"; fi
    ;;
  fetch)
    done_step fetch && { say "fetch=done"; exit 0; }
    received="$(ak_channel_dir)/${AK_CHANNEL}"
    [ -f "$received" ] || step_fail "nothing was received on channel ${AK_CHANNEL} (it is read once): run the restore again"
    workdir
    tmp=$(ak_channel_tmp)
    trap 'rm -rf "$tmp"' EXIT
    # What npm run restore sent: the object's URL, its key, the password of that one object, then the headers of a GET
    # of it signed with the operator's credentials (valid 15 minutes; the STS token among them, never in the URL).
    { read -r url && read -r key && read -r pass && cat >"${tmp}/headers"; } <"$received" || true
    rm -f "$received"
    if [ -z "${url:-}" ] || [ -z "${pass:-}" ] || [ ! -s "${tmp}/headers" ]; then step_fail "the channel held no signed download: run the restore again"; fi
    printf '%s' "$pass" >"${tmp}/pass"
    printf '%s\n' "$key" >"${restore_dir}/object"
    curl -fsS --max-time 1800 -H "@${tmp}/headers" -o "${restore_dir}/backup.etcd.enc" "$url" ||
      step_fail "the download of ${key} failed (its signature is valid 15 minutes after it was made: run the restore again)"
    rm -rf "${restore_dir}/bundle"
    ak_open_backup_pass "${restore_dir}/backup.etcd.enc" "${tmp}/pass" "${restore_dir}/bundle"
    rm -f "${restore_dir}/backup.etcd.enc"
    mark_step fetch
    say "fetch=done" "revision=$(sed -n 's/^revision=//p' "${restore_dir}/bundle/backup.txt")"
    ;;
  stop)
    done_step stop && { say "stop=done"; exit 0; }
    m=$(mode)
    # A new stack's master 0 runs the cluster its own kubeadm init made: discarded only if its CA is exactly the one the
    # restore read (AK_DISCARD_CA, which the restore checked is not the backup's), and it holds no Node but this master's
    # (some may have joined since the restore listed them). Recorded first (discarding), so a reset that stopped is
    # redone, even after it removed the CA.
    if [ -f "${restore_dir}/discarding" ] || { [ -n "$AK_DISCARD_CA" ] && [ "$m" = existing ]; }; then
      done_step fetch || step_fail "fetch comes first"
      [ -f "${restore_dir}/discarding" ] || [ "$(sha256sum <"$ca_file" | cut -c1-64)" = "$AK_DISCARD_CA" ] ||
        step_fail "this master's CA changed since the restore read it: run the restore again"
      [ -f "$init_config" ] || step_fail "no ${init_config#"$AK_ROOT"}: re-create this master, then run the restore again"
      # Listed even when /readyz fails (one failing check does not stop a listing); unlisted only when the API server
      # does not answer at all, and then the operator's --discard says the stack holds nothing else.
      nodes=""
      if [ ! -f "${restore_dir}/discarding" ] && ! nodes=$(ak_kubectl get nodes -o name --request-timeout=10s); then
        ! api_ready || step_fail "cannot list the Nodes of the cluster this master runs (nothing discarded): run the restore again"
        nodes=""
      fi
      if [ -n "$nodes" ]; then
        n=$(printf '%s\n' "$nodes" | grep -v -x -F "node/${AK_NODE}" | grep -c . || true)
        [ "$n" -eq 0 ] || step_fail "the cluster this master runs has ${n} Nodes besides this master's now (nothing discarded): scale the stack's pools to 0" \
          "(and remove its existing nodes) with \`pulumi up\`, then run the restore again"
      fi
      : >"${restore_dir}/discarding"
      kubeadm reset -f >&2 || step_fail "kubeadm reset failed (its output is above): fix the cause, then run the restore again"
      rm -f "${AK_STATE_DIR}/init.done"
      printf 'status=refused\ndiscarded=%s\n' "$AK_RESTORE_ID" >"${AK_STATE_DIR}/init.refused"
      echo fresh >"${restore_dir}/mode"
      mark_step stop
      say stop=done discarded=1
      exit 0
    fi
    [ "$m" != none ] || step_fail "this master runs no control plane and did not refuse kubeadm init: it is not one to restore onto" \
      "(its userdata may still run: /var/log/alicloud-kubeadm/master-init.log; or restore onto master 0 after \`pulumi up\` re-created it)"
    workdir
    printf '%s\n' "$m" >"${restore_dir}/mode"
    if [ "$m" = existing ]; then
      mkdir -p "$aside"
      for c in etcd kube-apiserver kube-controller-manager kube-scheduler; do
        [ ! -f "${manifests}/${c}.yaml" ] || mv "${manifests}/${c}.yaml" "${aside}/${c}.yaml"
      done
      for ((i = 0; i < 90; i++)); do
        [ -n "$(crictl ps --state Running --name '^(etcd|kube-apiserver)$' -q 2>/dev/null)" ] || break
        sleep 2
      done
      [ -z "$(crictl ps --state Running --name '^(etcd|kube-apiserver)$' -q 2>/dev/null)" ] ||
        step_fail "etcd or the API server still runs 3 minutes after their manifests moved to ${aside#"$AK_ROOT"}: check the kubelet (journalctl -u kubelet)"
    fi
    mark_step stop
    say "stop=done"
    ;;
  restore)
    done_step restore && { say "restore=done"; exit 0; }
    if ! done_step fetch || ! done_step stop; then step_fail "fetch and stop come first"; fi
    # A kubeadm init that failed once it wrote the static pods leaves the kubelet running etcd over its data directory: that
    # is not replaced under it (the init's error asks for the reset first).
    if [ "$(mode)" = fresh ] && compgen -G "${manifests}/*.yaml" >/dev/null; then
      step_fail "kubeadm init left static pods in ${manifests#"$AK_ROOT"} (its etcd may run over the data directory):" \
        "run 'kubeadm reset -f' on this master first, then run the restore again"
    fi
    if [ "$(mode)" = existing ]; then
      grep -q -- "--name=${AK_NODE}\$" "${aside}/etcd.yaml" ||
        step_fail "this master's etcd member is not named ${AK_NODE} (${aside#"$AK_ROOT"}/etcd.yaml): restore onto the master whose Node that is"
      # Its certificates were signed by its own CA: a master of another cluster (a new stack's own) cannot take this one's.
      if [ -f "${AK_ROOT}/etc/kubernetes/pki/ca.crt" ] && [ -f "${restore_dir}/bundle/pki/ca.crt" ] &&
        ! cmp -s "${AK_ROOT}/etc/kubernetes/pki/ca.crt" "${restore_dir}/bundle/pki/ca.crt"; then
        step_fail "this master runs a cluster with another CA than the backup's: if it is a new stack's for the old cluster's data," \
          "restore with --from-stack <old stack> (docs/disaster-recovery.md#restore-to-a-new-stack)"
      fi
      AK_ETCD_IMAGE=$(sed -n 's/^ *image: *//p' "${aside}/etcd.yaml" | head -n 1)
    else
      AK_ETCD_IMAGE=$(kubeadm config images list --config "$init_config" 2>/dev/null | grep '/etcd:' | head -n 1 || true)
    fi
    [ -n "$AK_ETCD_IMAGE" ] || step_fail "cannot tell which etcd image this master runs (its etcd manifest, or kubeadm config images list)"
    AK_NODE_NAME=$AK_NODE
    AK_PEER_URL="https://${AK_PEER_IP}:2380"
    ak_restore_bundle "${restore_dir}/bundle"
    mark_step restore
    say "restore=done" "image=${AK_ETCD_IMAGE}"
    ;;
  start)
    done_step start && { say "start=done"; exit 0; }
    done_step restore || step_fail "restore comes first"
    if [ "$(mode)" = existing ]; then
      for f in "$aside"/*.yaml; do [ ! -f "$f" ] || mv "$f" "${manifests}/"; done
    elif [ ! -f "${manifests}/kube-apiserver.yaml" ]; then
      # kubeadm init over anything but the restored etcd and CA would make a new cluster (a new CA, an empty etcd) behind
      # the cluster's endpoint: a `kubeadm reset` since the restore step (which empties the PKI and etcd's data) sends the
      # restore back to its restore step.
      if [ ! -d "${AK_ROOT}/var/lib/etcd/member" ] || { [ -f "${restore_dir}/bundle/pki/ca.crt" ] && ! cmp -s "$ca_file" "${restore_dir}/bundle/pki/ca.crt"; }; then
        rm -f "${restore_dir}/restore.done"
        step_fail "the restored etcd data or CA is no longer in place (a kubeadm reset since the restore step?): run the restore again: it restores them again before kubeadm init"
      fi
      # A discard recorded by another restore (given up) is this one's now: kubeadm init removes init.refused.
      if grep -q '^discarded=' "${AK_STATE_DIR}/init.refused" 2>/dev/null; then : >"${restore_dir}/discarding"; fi
      rm -f "${AK_STATE_DIR}/init.refused" "${AK_STATE_DIR}/init.failed" "${AK_STATE_DIR}/init.done"
      rc=0
      kubeadm init --config "$init_config" --ignore-preflight-errors=DirAvailable--var-lib-etcd --skip-token-print \
        --skip-certificate-key-print 2>&1 | ak_redact >&2 || rc=$?
      # The reset this asks for empties the PKI and etcd's data: the next run restores them again first.
      [ "$rc" -eq 0 ] || { rm -f "${restore_dir}/restore.done"; step_fail "kubeadm init over the restored etcd failed (exit ${rc}; its output is above):" \
        "fix the cause, run 'kubeadm reset -f' on this master, then run the restore again (it restores etcd and the CA again)"; }
      ak_delete_init_tokens
      printf 'status=ok\nrestored=%s\ntime=%s\n' "$(cat "${restore_dir}/object")" "$(date -u +%FT%TZ)" >"${AK_STATE_DIR}/init.done"
    fi
    for ((i = 0; i < 150; i++)); do api_ready && break; sleep 2; done
    api_ready || step_fail "the API server does not answer /readyz 5 minutes after the start: read crictl logs of kube-apiserver and etcd on this master"
    rm -rf "${restore_dir}/bundle"
    mark_step start
    say "start=done"
    ;;
  leases)
    # Once, right after the start: on a later run the other masters may have re-joined, and their Leases are live.
    done_step leases && { say "leases=done"; exit 0; }
    done_step start || step_fail "start comes first"
    me=$(hostname)
    jsonpath='{range .items[*]}{.metadata.name}{"\t"}{.metadata.labels.kubernetes\.io/hostname}{"\n"}{end}'
    ak_kubectl -n kube-system get lease -l apiserver.kubernetes.io/identity=kube-apiserver -o "jsonpath=${jsonpath}" |
      while IFS=$'\t' read -r name host; do
        if [ -n "$name" ] && [ "$host" != "$me" ]; then
          ak_kubectl -n kube-system delete lease "$name" --ignore-not-found >/dev/null
          say "lease-deleted=${name}:${host}"
        fi
      done
    mark_step leases
    say "leases=done"
    ;;
  *) ak_fail "unknown step ${AK_STEP}" ;;
esac
