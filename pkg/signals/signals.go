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
