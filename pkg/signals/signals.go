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

// Package signals gives a component's root context: cancelled on the first
// SIGINT or SIGTERM so the component shuts down gracefully (releasing its
// lease, writing its last state), with a second signal ending the process at
// once, as Kubernetes' own components do.
package signals

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// shutdownSignals are the signals that stop a component.
var shutdownSignals = []os.Signal{os.Interrupt, syscall.SIGTERM}

// Context returns a context that is cancelled on the first SIGINT or
// SIGTERM. A second one exits the process with status 1 without waiting for
// the graceful shutdown.
func Context() context.Context {
	return contextWith(make(chan os.Signal, 2), func() { os.Exit(1) })
}

func contextWith(c chan os.Signal, exit func()) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	signal.Notify(c, shutdownSignals...)
	go func() {
		<-c
		cancel()
		<-c
		exit()
	}()
	return ctx
}
