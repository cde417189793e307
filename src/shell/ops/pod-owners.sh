#!/bin/bash
# pod-owners (on a master): `<node>\t<owner kind>` for every pod that has not finished, gzip+Base64.
# Victim choice counts the pods that are not DaemonSets. Both values go through the template's `js` escaper
# (kubectl_template.sh ak_tvalue): whoever creates a pod writes its ownerReferences, and a tab or a newline in a kind
# cannot make up a column or a pod line of another node (src/cloud/operations.ts workloadPods reads them back as data).
o=$AK_TO c=$AK_TC tab=$AK_TTAB nl=$AK_TNL
owners="${o}range .items${c}$(ak_tvalue .spec.nodeName)${tab}${o}with .metadata.ownerReferences${c}$(ak_tvalue '(index . 0).kind')${o}end${c}${nl}${o}end${c}"
ak_kubectl get pods -A --field-selector=status.phase!=Succeeded,status.phase!=Failed -o "go-template=${owners}" | ak_compact
