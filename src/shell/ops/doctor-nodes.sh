#!/bin/bash
# doctor-nodes (on a master, read-only): section `nodes` as list-nodes prints them (uncompressed), section
# `conditions` with each Node's Ready and NetworkUnavailable status, reason and message, section `kubelets` with each
# Node's kubelet version, section `apiservers` with each kube-apiserver pod's node and version (its image tag, as
# `kubeadm upgrade plan` reads it), section `control-plane` with the Nodes labelled node-role.kubernetes.io/control-plane
# (only their API servers count: any kubelet may post a mirror pod labelled component=kube-apiserver bound to itself, none
# may give its own Node that label); gzip+Base64. Every value goes through the template's `js` escaper
# (kubectl_template.sh): a kubelet writes its Node's status and annotations and its mirror pods, and a tab or a
# newline in them cannot make up a column or a line (src/doctor/context.ts reads them back as data).
o=$AK_TO c=$AK_TC tab=$AK_TTAB nl=$AK_TNL
conditions="${o}range .items${c}$(ak_tvalue .metadata.name)${tab}$(ak_tready .status)${tab}$(ak_tready .reason)${tab}$(ak_tready .message)${tab}"
conditions+="$(ak_tcondition NetworkUnavailable .status)${tab}$(ak_tcondition NetworkUnavailable .reason)${nl}${o}end${c}"
{
  ak_section nodes ak_kubectl get nodes -o "go-template=${o}range .items${c}$(ak_tnode)${o}end${c}"
  ak_section conditions ak_kubectl get nodes -o "go-template=${conditions}"
  ak_section kubelets ak_kubectl get nodes -o "go-template=${o}range .items${c}$(ak_tvalue .metadata.name)${tab}$(ak_tvalue .status.nodeInfo.kubeletVersion)${nl}${o}end${c}"
  ak_section apiservers ak_kubectl get pods -n kube-system -l component=kube-apiserver \
    -o "go-template=${o}range .items${c}$(ak_tvalue .spec.nodeName)${tab}$(ak_tvalue '(index .spec.containers 0).image')${nl}${o}end${c}"
  ak_section control-plane ak_kubectl get nodes -l node-role.kubernetes.io/control-plane -o "go-template=${o}range .items${c}$(ak_tvalue .metadata.name)${nl}${o}end${c}"
} | ak_compact
