// Command vpa-recommender computes resource recommendations for
// VerticalPodAutoscaler objects.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/klog/v2"

	"github.com/openvpa/openvpa/recommender/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := app.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	klog.Flush()
	os.Exit(app.Exit(err))
}
