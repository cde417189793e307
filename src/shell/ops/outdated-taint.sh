#!/bin/bash
# outdated-taint (on a master): the rollout's marks on a pool's Nodes while it runs.
# - the taint alicloud-kubeadm/outdated=<pool>:PreferNoSchedule on the outdated Nodes, so the pods a rollout's drains
#   evict are scheduled onto a pool's new nodes rather than onto its other outdated ones;
# - (autoscaled pools) the annotation cluster-autoscaler.kubernetes.io/scale-down-disabled=true on the current Nodes, so
#   the Cluster Autoscaler does not scale the rollout's surge down, with alicloud-kubeadm/scale-down-held=<pool> saying
#   the annotation is the rollout's: a Node whose annotation somebody else set is left as it is, and keeps it.
# Parameters: AK_POOL, AK_TAINT_MODE (add: taint the Nodes in AK_OUTDATED that exist, overwriting; hold: annotate the
# Nodes in AK_OUTDATED that exist (here the current Nodes); clear: remove the taint from every Node whose taint names
# AK_POOL, and the annotation from every Node the pool's rollout held), AK_OUTDATED (Node names separated by spaces, or empty).
# Prints `tainted <n>`, `held <n>`, or `cleared <n>` and `released <n>`.
# The annotations are listed through the template's `js` escaper (kubectl_template.sh): a Node may write its own
# annotations, and a newline or a tab in one must not make up a line naming another Node (held free, or released).
key=alicloud-kubeadm/outdated
disabled=cluster-autoscaler.kubernetes.io/scale-down-disabled
held=alicloud-kubeadm/scale-down-held
o=$AK_TO c=$AK_TC tab=$AK_TTAB
marks="${o}range .items${c}$(ak_tvalue .metadata.name)${tab}$(ak_tkeyed .metadata.annotations "$disabled")${tab}$(ak_tkeyed .metadata.annotations "$held")${AK_TNL}${o}end${c}"
if [ "$AK_TAINT_MODE" = add ] || [ "$AK_TAINT_MODE" = hold ]; then
  read -r -a wanted <<<"$AK_OUTDATED"
  # A Node deleted since the caller read it is not an error (kubectl would stop at the first missing name). hold: a
  # Node whose scale-down-disabled annotation somebody else set (no rollout's mark) keeps it, and is never released.
  mapfile -t existing < <(ak_kubectl get nodes -o "go-template=${marks}" |
    awk -F '\t' -v mode="$AK_TAINT_MODE" 'mode == "add" || $2 == "" || $3 != "" { print $1 }')
  names=()
  for n in "${wanted[@]}"; do
    for e in "${existing[@]}"; do
      if [ "$n" = "$e" ]; then
        names+=("$n")
        break
      fi
    done
  done
  if [ "$AK_TAINT_MODE" = add ]; then
    if [ "${#names[@]}" -gt 0 ]; then
      ak_kubectl taint nodes "${names[@]}" --overwrite "${key}=${AK_POOL}:PreferNoSchedule" >/dev/null
    fi
    echo "tainted ${#names[@]}"
    exit 0
  fi
  if [ "${#names[@]}" -gt 0 ]; then
    ak_kubectl annotate nodes "${names[@]}" --overwrite "${disabled}=true" "${held}=${AK_POOL}" >/dev/null
  fi
  echo "held ${#names[@]}"
  exit 0
fi
mapfile -t names < <(ak_kubectl get nodes -o "jsonpath={range .items[*]}{.metadata.name}{\"\\t\"}{.spec.taints[?(@.key==\"${key}\")].value}{\"\\n\"}{end}" |
  awk -F '\t' -v pool="$AK_POOL" '$2 == pool { print $1 }')
if [ "${#names[@]}" -gt 0 ]; then
  ak_kubectl taint nodes "${names[@]}" "${key}:PreferNoSchedule-" >/dev/null
fi
echo "cleared ${#names[@]}"
mapfile -t names < <(ak_kubectl get nodes -o "go-template=${marks}" | awk -F '\t' -v pool="$AK_POOL" '$3 == pool { print $1 }')
if [ "${#names[@]}" -gt 0 ]; then
  ak_kubectl annotate nodes "${names[@]}" "${disabled}-" "${held}-" >/dev/null
fi
echo "released ${#names[@]}"
