// Command pause is a pod's sandbox process, as registry.k8s.io/pause is: it waits for a signal to stop and reaps
// the children it inherits as the pod's PID 1. With -v it prints its version and exits 0, as upstream's pause.c does
// (kubeadm's upgrade health check runs a Job of the pause image with `-v` and waits for it to complete).
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-v" {
		fmt.Println("pause (alicloud-kubeadm test image)")
		os.Exit(0)
	}
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range signals {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var status syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
}
