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

// Command replay-bounds is `kubectl vpa replay` with the reference rules
// of docs/dev/replay-research.md ("Reference rules") scored beside it: rules that read
// the trace's own daily memory peaks, some of them the future, to bound
// what an estimator could gain. They are research, not a feature, so no
// release binary links them. It takes every flag of `kubectl vpa replay`
// and adds bounds.csv to the report, the rules' fronts to frontier.svg and
// their leanest settings to the summary:
//
//	go run ./hack/replay-bounds --trace usage.csv.gz --out report/
package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/openvpa/openvpa/kubectl-vpa/replay"
	"github.com/openvpa/openvpa/pkg/signals"
)

const usage = "Usage: go run ./hack/replay-bounds --trace FILE [--estimator NAME] [--out DIR] [flags]\n\n" +
	"kubectl vpa replay, and the reference rules scored on each trace beside it: bounds.csv, their\n" +
	"fronts on frontier.svg and the leanest setting of each (docs/dev/replay-research.md).\n"

func main() {
	if err := run(signals.Context(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

// run replays with args as `kubectl vpa replay` does, the reference rules
// added.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o := replay.NewCommandOptions()
	o.Analyses = append(o.Analyses, analyzeBounds)
	return replay.RunCommand(ctx, o, usage, args, stdout, stderr)
}

// writeFile creates path and writes it with write.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}
