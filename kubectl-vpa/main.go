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

// Command kubectl-vpa is a kubectl plugin (kubectl vpa explain, report,
// export, replay) that explains and audits VerticalPodAutoscalers, exports
// their recommendations as patches and replays usage traces. Install it by
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
