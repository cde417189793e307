#!/bin/bash
# list-nodes (on a master): first `@now<TAB><seconds since the epoch>`, this master's clock read just before the listing
# (what health repair measures a Node's NotReady time against: the clock the API server's times come from, never the
# Pulumi machine's), then one tab-separated line per Node — name, provider id, Ready status, unschedulable,
# podCIDR, old pool label (set by the node), creation time, removal mark (annotation alicloud-kubeadm/removing),
# pool label (set by the admission service), InternalIP address(es), the Ready condition's lastTransitionTime, the
# upgrade's and the resize's drain marks (annotations alicloud-kubeadm/upgrading, alicloud-kubeadm/resizing) — gzip+Base64
# (`kubectl -o json` is ~5 KB a node; this is ~15 bytes).
# Every value goes through the template's `js` escaper: a tab, a newline or any other control character in a value
# (an annotation, a condition or an address a node writes on its own Node) is printed as \u00XX, so only the template
# separates columns and lines, and no value can make up a column or a Node (src/cloud/operations.ts decodes them;
# docs/upstream.md#kubectl-go-template).
# Common values (names, provider ids, times, IPs, CIDRs, True/False) print unchanged.
# Parameter AK_SELECTOR: a label selector, or empty for every Node.
selector=()
if [ -n "$AK_SELECTOR" ]; then selector=(-l "$AK_SELECTOR"); fi
# The template's actions are written with ${o} and ${c} for the double braces: Cloud Assistant would take a double brace
# in a saved command's text for one of its parameters.
o='{''{' c='}''}'
# value EXPR: EXPR escaped; nothing when it is missing (`js` of a missing field would print "<nil>").
value() { printf '%swith %s%s%sjs .%s%send%s' "$o" "$1" "$c" "$o" "$c" "$o" "$c"; }
# keyed MAP KEY: the value under KEY of MAP (labels, annotations: keys with '/' and '.'), escaped; nothing when missing.
keyed() { printf '%swith %s%s%s' "$o" "$1" "$c" "$(value "index . \"$2\"")"; printf '%send%s' "$o" "$c"; }
# ready EXPR: EXPR of the Ready condition.
ready() { printf '%srange .status.conditions%s%sif eq .type "Ready"%s%s%send%s%send%s' "$o" "$c" "$o" "$c" "$(value "$1")" "$o" "$c" "$o" "$c"; }
tab="${o}\"\\t\"${c}"
tmpl="${o}range .items${c}$(value .metadata.name)${tab}$(value .spec.providerID)${tab}$(ready .status)${tab}"
tmpl+="$(value .spec.unschedulable)${tab}$(value .spec.podCIDR)${tab}$(keyed .metadata.labels alicloud-kubeadm/pool)${tab}"
tmpl+="$(value .metadata.creationTimestamp)${tab}$(keyed .metadata.annotations alicloud-kubeadm/removing)${tab}"
tmpl+="$(keyed .metadata.labels node-restriction.kubernetes.io/alicloud-kubeadm-pool)${tab}"
tmpl+="${o}range .status.addresses${c}${o}if eq .type \"InternalIP\"${c}$(value .address) ${o}end${c}${o}end${c}${tab}"
tmpl+="$(ready .lastTransitionTime)${tab}$(keyed .metadata.annotations alicloud-kubeadm/upgrading)${tab}"
tmpl+="$(keyed .metadata.annotations alicloud-kubeadm/resizing)${o}\"\\n\"${c}${o}end${c}"
{
  printf '@now\t%s\n' "$(date -u +%s)"
  ak_kubectl get nodes "${selector[@]}" -o "go-template=${tmpl}"
} | ak_compact
