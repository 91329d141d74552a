// Command kubectl-vpa is a kubectl plugin (kubectl vpa explain, kubectl vpa
// report) that explains and audits VerticalPodAutoscalers. Install it by
// copying bin/kubectl-vpa onto PATH.
package main

import (
	"os"

	"github.com/openvpa/openvpa/kubectl-vpa/app"
	"github.com/openvpa/openvpa/pkg/signals"
)

func main() {
	err := app.Main(signals.Context(), os.Args[1:], os.Stdout, os.Stderr)
	os.Exit(app.Exit(err, os.Stderr))
}
