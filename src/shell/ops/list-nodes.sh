#!/bin/bash
# list-nodes (on a master): first `@now<TAB><seconds since the epoch>`, this master's clock read just before the listing
# (what health repair measures a Node's NotReady time against: the clock the API server's times come from, never the
# Pulumi machine's), then one tab-separated line per Node — name, provider id, Ready status, unschedulable,
# podCIDR, old pool label (set by the node), creation time, removal mark (annotation alicloud-kubeadm/removing),
# pool label (set by the admission service), InternalIP address(es), the Ready condition's lastTransitionTime, the
# upgrade's and the resize's drain marks (annotations alicloud-kubeadm/upgrading, alicloud-kubeadm/resizing) — gzip+Base64
# (`kubectl -o json` is ~5 KB a node; this is ~15 bytes).
# Every value goes through the template's `js` escaper (kubectl_template.sh ak_tvalue): a tab or a newline in a value (an
# annotation, a condition or an address a node writes on its own Node) cannot make up a column or a Node.
# Parameter AK_SELECTOR: a label selector, or empty for every Node.
selector=()
if [ -n "$AK_SELECTOR" ]; then selector=(-l "$AK_SELECTOR"); fi
tmpl="${AK_TO}range .items${AK_TC}$(ak_tnode)${AK_TO}end${AK_TC}"
{
  printf '@now\t%s\n' "$(date -u +%s)"
  ak_kubectl get nodes "${selector[@]}" -o "go-template=${tmpl}"
} | ak_compact
