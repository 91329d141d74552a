// Command vpa-updater evicts or resizes in place the pods whose requests
// should follow their VerticalPodAutoscaler's recommendation.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/openvpa/openvpa/updater/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := app.NewCommand().Execute(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "vpa-updater:", err)
		stop()
		os.Exit(1)
	}
}
