/*
Copyright The OpenVPA Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Command pause is the pod sandbox's process (image registry.k8s.io/pause on
// the real node): it holds the pod's namespaces open, does nothing else, and
// as PID 1 of a pod sharing its process namespace reaps the zombies orphaned
// into it. It exits 0 on SIGINT or SIGTERM.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	fmt.Fprintln(os.Stderr, "pause: waiting for SIGINT or SIGTERM")
	// Children may have exited before the handler was in place.
	reap()
	os.Exit(run(sigs, reap))
}

// run handles signals until one asks the process to stop, and returns its
// exit code.
func run(sigs <-chan os.Signal, reap func() []int) int {
	for sig := range sigs {
		switch sig {
		case syscall.SIGCHLD:
			reap()
		case syscall.SIGINT, syscall.SIGTERM:
			fmt.Fprintf(os.Stderr, "pause: got %v, exiting\n", sig)
			return 0
		}
	}
	return 0
}

// reap collects every child that has exited, without blocking, and returns
// their process IDs. SIGCHLD does not queue, so one signal may stand for many
// exits: it loops until none is left.
func reap() []int {
	var pids []int
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || pid <= 0 {
			return pids
		}
		pids = append(pids, pid)
	}
}
