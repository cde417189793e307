#!/bin/bash
# outdated-taint (on a master): the rollout's taint alicloud-kubeadm/outdated=<pool>:PreferNoSchedule, so the pods a
# rollout's drains evict are scheduled onto a pool's new nodes rather than onto its other outdated ones.
# Parameters: AK_POOL, AK_TAINT_MODE (add: taint the Nodes in AK_OUTDATED that exist, overwriting; clear: remove the
# taint from every Node whose taint names AK_POOL), AK_OUTDATED (Node names separated by spaces, or empty).
# Prints `tainted <n>` or `cleared <n>`.
key=alicloud-kubeadm/outdated
if [ "$AK_TAINT_MODE" = add ]; then
  read -r -a wanted <<<"$AK_OUTDATED"
  # A Node deleted since the caller read it is not an error (kubectl taint would stop at the first missing name).
  mapfile -t existing < <(ak_kubectl get nodes -o 'jsonpath={range .items[*]}{.metadata.name}{"\n"}{end}')
  names=()
  for n in "${wanted[@]}"; do
    for e in "${existing[@]}"; do
      if [ "$n" = "$e" ]; then
        names+=("$n")
        break
      fi
    done
  done
  if [ "${#names[@]}" -gt 0 ]; then
    ak_kubectl taint nodes "${names[@]}" --overwrite "${key}=${AK_POOL}:PreferNoSchedule" >/dev/null
  fi
  echo "tainted ${#names[@]}"
  exit 0
fi
mapfile -t names < <(ak_kubectl get nodes -o "jsonpath={range .items[*]}{.metadata.name}{\"\\t\"}{.spec.taints[?(@.key==\"${key}\")].value}{\"\\n\"}{end}" |
  awk -F '\t' -v pool="$AK_POOL" '$2 == pool { print $1 }')
if [ "${#names[@]}" -gt 0 ]; then
  ak_kubectl taint nodes "${names[@]}" "${key}:PreferNoSchedule-" >/dev/null
fi
echo "cleared ${#names[@]}"
