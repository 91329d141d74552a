// Command vpa-admission-controller is OpenVPA's admission webhook: it applies
// VPA recommendations to new pods and validates VerticalPodAutoscalers.
package main

import (
	"fmt"
	"os"

	"github.com/openvpa/openvpa/admission-controller/app"
	"github.com/openvpa/openvpa/pkg/signals"
)

func main() {
	ctx := signals.Context()
	err := app.Main(ctx, os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "vpa-admission-controller:", err)
		os.Exit(1)
	}
}
