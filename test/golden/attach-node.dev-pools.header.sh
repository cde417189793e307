# dev-pool-general-config
#!/bin/bash
# shellcheck disable=SC2034 # the header is read by the packed part
readonly AK_KUBERNETES_VERSION='1.36.3'
readonly AK_K8S_REPO_URL='https://mirrors.cloud.aliyuncs.com/kubernetes-new/core/stable/v1.36/'
readonly AK_CONTAINERD_RPM_REPO_URL='https://mirrors.cloud.aliyuncs.com/docker-ce/linux/centos'
readonly AK_SANDBOX_IMAGE='registry.cn-hangzhou.aliyuncs.com/google_containers/pause:3.10.2'
readonly AK_API_ENDPOINT='192.168.0.10:6443'
readonly AK_POOL_NAME='general'
readonly AK_NODE_LABELS=''
readonly AK_NODE_TAINTS=''
readonly AK_BOOTSTRAP_TOKEN='<redacted>'
readonly AK_CA_CERT_HASHES='<redacted>'

# dev-pool-elastic-config
#!/bin/bash
# shellcheck disable=SC2034 # the header is read by the packed part
readonly AK_KUBERNETES_VERSION='1.36.3'
readonly AK_K8S_REPO_URL='https://mirrors.cloud.aliyuncs.com/kubernetes-new/core/stable/v1.36/'
readonly AK_CONTAINERD_RPM_REPO_URL='https://mirrors.cloud.aliyuncs.com/docker-ce/linux/centos'
readonly AK_SANDBOX_IMAGE='registry.cn-hangzhou.aliyuncs.com/google_containers/pause:3.10.2'
readonly AK_API_ENDPOINT='192.168.0.10:6443'
readonly AK_POOL_NAME='elastic'
readonly AK_NODE_LABELS='workload_type=cpu,alicloud-kubeadm/autoscaled=true,alicloud-kubeadm/spec=ccb4dfc46306608f'
readonly AK_NODE_TAINTS=''
readonly AK_BOOTSTRAP_TOKEN='<redacted>'
readonly AK_CA_CERT_HASHES='<redacted>'
