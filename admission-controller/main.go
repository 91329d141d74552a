// Command vpa-admission-controller is OpenVPA's admission webhook: it applies
// VPA recommendations to new pods and validates VerticalPodAutoscalers.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/openvpa/openvpa/admission-controller/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := app.Main(ctx, os.Args[1:])
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "vpa-admission-controller:", err)
		os.Exit(1)
	}
}
