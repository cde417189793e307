// The test images of the real nodes (test/kube/build.sh): a pause process at the name kubeadm expects, a small
// workload, and the packer that writes OCI image archives for `ctr images import` (no registry). Standard library only.
module alicloud-kubeadm/test/kube/go/images

go 1.26.0
