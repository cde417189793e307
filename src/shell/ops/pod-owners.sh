#!/bin/bash
# pod-owners (on a master): `<node>\t<owner kind>` for every pod that has not finished, gzip+Base64.
# Victim choice counts the pods that are not DaemonSets.
jsonpath='{range .items[*]}{.spec.nodeName}{"\t"}{.metadata.ownerReferences[0].kind}{"\n"}{end}'
ak_kubectl get pods -A --field-selector=status.phase!=Succeeded,status.phase!=Failed -o "jsonpath=${jsonpath}" | ak_compact
