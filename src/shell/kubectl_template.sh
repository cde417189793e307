#!/bin/bash
# alicloud-kubeadm kubectl go-template pieces, for the operations that print values a node writes (list-nodes,
# pod-owners, cluster-validate, outdated-taint, upgrade-status, static-pods, doctor-nodes; src/shell/render.ts OPERATION_LIBRARIES adds this file after ops/lib.sh).
# They print a value through the template's `js` escaper (docs/upstream.md#kubectl-go-template):
# a tab, a newline or any other control character in a value (what a node writes on its own Node or its pods' status)
# is printed as \u00XX, so only the template separates columns and lines (src/cloud/operations.ts unescapeListed reads
# them back as data). Common values (names, provider ids, times, IPs, CIDRs, True/False, phases) print unchanged.
# The double braces are written as ${AK_TO} and ${AK_TC}: Cloud Assistant would take them in a saved command's text for
# one of its parameters.
AK_TO='{''{' AK_TC='}''}'
# shellcheck disable=SC2034
AK_TTAB="${AK_TO}\"\\t\"${AK_TC}" AK_TNL="${AK_TO}\"\\n\"${AK_TC}"
# ak_tvalue EXPR: EXPR escaped; nothing when it is missing (`js` of a missing field would print "<nil>").
# shellcheck disable=SC2317 # not every operation calls every function
ak_tvalue() { printf '%swith %s%s%sjs .%s%send%s' "$AK_TO" "$1" "$AK_TC" "$AK_TO" "$AK_TC" "$AK_TO" "$AK_TC"; }
# ak_tkeyed MAP KEY: the value under KEY of MAP (labels, annotations: keys with '/' and '.'), escaped; nothing when missing.
# shellcheck disable=SC2317
ak_tkeyed() { printf '%swith %s%s%s%send%s' "$AK_TO" "$1" "$AK_TC" "$(ak_tvalue "index . \"$2\"")" "$AK_TO" "$AK_TC"; }
# ak_tcondition TYPE EXPR: EXPR of the condition TYPE (its status, its lastTransitionTime), escaped.
# shellcheck disable=SC2317
ak_tcondition() { printf '%srange .status.conditions%s%sif eq .type "%s"%s%s%send%s%send%s' "$AK_TO" "$AK_TC" "$AK_TO" "$1" "$AK_TC" "$(ak_tvalue "$2")" "$AK_TO" "$AK_TC" "$AK_TO" "$AK_TC"; }
# ak_tready EXPR: EXPR of the Ready condition, escaped.
# shellcheck disable=SC2317
ak_tready() { ak_tcondition Ready "$1"; }
# ak_tnode: one Node's list-nodes line (its columns: src/shell/ops/list-nodes.sh), for `range .items`.
# shellcheck disable=SC2317
ak_tnode() {
  local o=$AK_TO c=$AK_TC tab=$AK_TTAB
  printf '%s' "$(ak_tvalue .metadata.name)${tab}$(ak_tvalue .spec.providerID)${tab}$(ak_tready .status)${tab}" \
    "$(ak_tvalue .spec.unschedulable)${tab}$(ak_tvalue .spec.podCIDR)${tab}$(ak_tkeyed .metadata.labels alicloud-kubeadm/pool)${tab}" \
    "$(ak_tvalue .metadata.creationTimestamp)${tab}$(ak_tkeyed .metadata.annotations alicloud-kubeadm/removing)${tab}" \
    "$(ak_tkeyed .metadata.labels node-restriction.kubernetes.io/alicloud-kubeadm-pool)${tab}" \
    "${o}range .status.addresses${c}${o}if eq .type \"InternalIP\"${c}$(ak_tvalue .address) ${o}end${c}${o}end${c}${tab}" \
    "$(ak_tready .lastTransitionTime)${tab}$(ak_tkeyed .metadata.annotations alicloud-kubeadm/upgrading)${tab}" \
    "$(ak_tkeyed .metadata.annotations alicloud-kubeadm/resizing)${AK_TNL}"
}
