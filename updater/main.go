// Command vpa-updater evicts or resizes in place the pods whose requests
// should follow their VerticalPodAutoscaler's recommendation.
package main

import (
	"fmt"
	"os"

	"github.com/openvpa/openvpa/pkg/signals"
	"github.com/openvpa/openvpa/updater/app"
)

func main() {
	ctx := signals.Context()
	if err := app.NewCommand().Execute(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "vpa-updater:", err)
		os.Exit(1)
	}
}
