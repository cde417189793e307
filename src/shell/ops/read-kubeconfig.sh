#!/bin/bash
# read-kubeconfig (on master 0): the admin kubeconfig kubeadm init wrote.
cat "$AK_ADMIN_CONF"
