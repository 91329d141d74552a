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

package replay

import (
	"context"
	"io"
)

// Analyzer analyses a trace beside its replay. The replay command runs
// none; a tool that builds on it adds its own through
// CommandOptions.Analyses (hack/replay-bounds scores reference rules this
// way), so what only research needs stays out of the plugin.
type Analyzer func(ctx context.Context, trace *Trace) (Analysis, error)

// Analysis is what an Analyzer found on one trace, reported with the
// replay's own report.
type Analysis interface {
	// WriteFiles writes the analysis' files to the report directory dir
	// and returns their names.
	WriteFiles(dir string) ([]string, error)
	// FrontierLines are drawn on frontier.svg after the replay's own.
	FrontierLines() []Line
	// Print writes the analysis' summary after the replay's table.
	Print(w io.Writer)
}
