// Command vpa-recommender computes resource recommendations for
// VerticalPodAutoscaler objects.
package main

import (
	"os"

	"k8s.io/klog/v2"

	"github.com/openvpa/openvpa/pkg/signals"
	"github.com/openvpa/openvpa/recommender/app"
)

func main() {
	ctx := signals.Context()
	err := app.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	klog.Flush()
	os.Exit(app.Exit(err))
}
