#!/bin/bash
# stack-credential (on master 0): the stack's own credential, instead of a copy of admin.conf. The ServiceAccount
# kube-system/alicloud-kubeadm-stack, bound to cluster-admin, and its token Secret AK_CREDENTIAL (a long-lived
# service-account token: valid until that Secret is deleted, which revokes it at once). Prints only the token,
# sealed to AK_RECIPIENT (the provider's one-use key). Re-runnable: an existing Secret is read back.
ak_kubectl apply -f - >/dev/null <<EOF_MANIFEST
apiVersion: v1
kind: ServiceAccount
metadata:
  name: alicloud-kubeadm-stack
  namespace: kube-system
  labels:
    app.kubernetes.io/managed-by: alicloud-kubeadm
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: alicloud-kubeadm-stack
  labels:
    app.kubernetes.io/managed-by: alicloud-kubeadm
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: cluster-admin
subjects:
  - kind: ServiceAccount
    name: alicloud-kubeadm-stack
    namespace: kube-system
---
apiVersion: v1
kind: Secret
metadata:
  name: ${AK_CREDENTIAL}
  namespace: kube-system
  labels:
    app.kubernetes.io/managed-by: alicloud-kubeadm
  annotations:
    kubernetes.io/service-account.name: alicloud-kubeadm-stack
type: kubernetes.io/service-account-token
EOF_MANIFEST
token=""
for ((i = 0; i < 60; i++)); do
  token=$(ak_kubectl -n kube-system get secret "$AK_CREDENTIAL" -o 'jsonpath={.data.token}')
  [ -z "$token" ] || break
  sleep 1
done
[ -n "$token" ] || ak_fail "the token controller did not fill Secret kube-system/${AK_CREDENTIAL} within 60 s (is kube-controller-manager running?)"
printf '%s' "$token" | base64 -d | ak_seal "$AK_RECIPIENT"
