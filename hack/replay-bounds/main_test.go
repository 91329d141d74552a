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

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/openvpa/openvpa/kubectl-vpa/replay"
)

// TestRunHoldout runs the tool on a tuning and a holdout trace: the
// replay's report of each, and the reference rules' beside it.
func TestRunHoldout(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, spike float64) string {
		var trace strings.Builder
		trace.WriteString("timestamp,workload,container,cpu_cores,memory_bytes,cpu_request_cores,memory_request_bytes\n")
		for i := range 4 * 24 * 12 {
			mem := 3e8
			if i == 3*24*12 {
				mem = spike
			}
			trace.WriteString(strings.Join([]string{strconv.Itoa(1700000000 + 300*i), "web", "app", "0.2", strconv.FormatFloat(mem, 'g', -1, 64), "1", "1e9"}, ",") + "\n")
		}
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, []byte(trace.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return file
	}
	// The holdout has a spike on day 3 far above anything before it: an
	// OOM day there, none on the tuning trace.
	tune, holdout := write("tune.csv", 3e8), write("holdout.csv", 4e9)
	out := filepath.Join(dir, "out")
	var stdout, stderr bytes.Buffer
	args := []string{"--trace", tune, "--holdout", holdout, "--out", out, "--estimator", "adaptive", "--quiet"}
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	oomFree := func(file string) float64 {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var sum replay.ReportSummary
		if err := json.Unmarshal(data, &sum); err != nil {
			t.Fatal(err)
		}
		return sum.Estimator.OOMFreeFraction
	}
	if got := oomFree(filepath.Join(out, "summary.json")); got != 1 {
		t.Errorf("tuning trace OOM-free %v, want 1", got)
	}
	if got := oomFree(filepath.Join(out, "holdout", "summary.json")); !near(got, 2.0/3) {
		t.Errorf("holdout OOM-free %v, want 2/3", got)
	}
	for _, f := range []string{"days.csv", "frontier.svg", "bounds.csv"} {
		if _, err := os.Stat(filepath.Join(out, "holdout", f)); err != nil {
			t.Errorf("holdout report lacks %s: %v", f, err)
		}
	}
	// The holdout's day-3 spike is above every earlier day: one OOM day in
	// three for the recent-peak rule at margin 0, none on the tuning trace.
	for dir, want := range map[string]string{out: "recent-peak,1,0,0,3,0.0000,0.0000,1.0000,1,false", filepath.Join(out, "holdout"): "recent-peak,1,0,0,3,0.0000,0.0000,0.6667,1,false"} {
		data, err := os.ReadFile(filepath.Join(dir, "bounds.csv"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), want+"\n") {
			t.Errorf("%s/bounds.csv lacks %s:\n%s", dir, want, data)
		}
		svg, _ := os.ReadFile(filepath.Join(dir, "frontier.svg"))
		if !strings.Contains(string(svg), "ref: oracle") {
			t.Errorf("%s/frontier.svg has no reference rules", dir)
		}
	}
	if n := strings.Count(stdout.String(), "reference rules"); n != 2 {
		t.Errorf("stdout has %d bounds tables, want one per trace:\n%s", n, stdout.String())
	}
	if n := strings.Count(stdout.String(), "adaptive (scored)"); n != 2 {
		t.Errorf("stdout has %d tables, want one per trace:\n%s", n, stdout.String())
	}
	if !strings.Contains(stdout.String(), tune+":") || !strings.Contains(stdout.String(), holdout+":") {
		t.Errorf("stdout does not name both traces:\n%s", stdout.String())
	}
}

// Files of the development (tuning) trace and of the holdout trace, the
// testdata of kubectl-vpa/replay.
const (
	devTraceFile     = "bitbrains_rnd_vm1-50_2013-07.csv.gz"
	holdoutTraceFile = "bitbrains_rnd_vm51-100_2013-07.csv.gz"
)

// sharedTrace returns the path of file in kubectl-vpa/replay's
// testdata/bitbrains (README.md there cites the data set), failing when it
// is missing.
func sharedTrace(t *testing.T, file string) string {
	t.Helper()
	p := filepath.Join("..", "..", "kubectl-vpa", "replay", "testdata", "bitbrains", file)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("trace %s: %v", file, err)
	}
	return p
}

// TestBoundsOnBothTraces pins the reference rules docs/dev/replay-research.md reports:
// the leanest setting of each with at least 95% OOM-free days.
func TestBoundsOnBothTraces(t *testing.T) {
	tests := map[string]struct {
		file string
		want []string
	}{
		"development": {file: devTraceFile, want: []string{
			"oracle each day's peak: 1303 days, slack 0.545 (median 0.560), 100.0% OOM-free",
			"oracle 2 parts, each part's peak: 1303 days, slack 0.472 (median 0.473), 100.0% OOM-free",
			"oracle 4 parts, each part's peak: 1303 days, slack 0.362 (median 0.351), 100.0% OOM-free",
			"recent-peak 4d, margin 0.3: 1303 days, slack 0.701 (median 0.744), 95.2% OOM-free",
			"recent-peak 7d, margin 0.2, kills answered: 1303 days, slack 0.722 (median 0.748), 95.1% OOM-free",
			"part-peak 2 parts, 7d, margin 0.5: 1303 days, slack 0.747 (median 0.758), 95.2% OOM-free",
			"part-peak 4 parts, 14d, margin 0.7: 1303 days, slack 0.771 (median 0.774), 95.1% OOM-free",
			"hindsight-margin 1d, penalty 5: 1303 days, slack 0.665 (median 0.786), 95.0% OOM-free",
			"hindsight-margin 4d, penalty 0.75, kills answered: 1303 days, slack 0.688 (median 0.727), 95.4% OOM-free",
			"forward-margin 14d, penalty 0.75: 1303 days, slack 0.729 (median 0.745), 95.2% OOM-free",
			"forward-margin 14d, penalty 0.75, kills answered: 1303 days, slack 0.734 (median 0.749), 95.2% OOM-free",
		}},
		"holdout": {file: holdoutTraceFile, want: []string{
			"oracle each day's peak: 1338 days, slack 0.538 (median 0.560), 100.0% OOM-free",
			"oracle 2 parts, each part's peak: 1338 days, slack 0.406 (median 0.438), 100.0% OOM-free",
			"oracle 4 parts, each part's peak: 1338 days, slack 0.238 (median 0.296), 100.0% OOM-free",
			"recent-peak 3d, margin 1: 1338 days, slack 0.683 (median 0.847), 95.6% OOM-free",
			"recent-peak 14d, margin 0.2, kills answered: 1338 days, slack 0.743 (median 0.790), 95.1% OOM-free",
			// With 4 parts no setting reaches 95% (the safest, 28 days and
			// margin 1, is at 91.3%).
			"part-peak 2 parts, 14d, margin 1: 1338 days, slack 0.798 (median 0.854), 95.4% OOM-free",
			"hindsight-margin 2d, penalty 1.5: 1338 days, slack 0.480 (median 0.806), 95.1% OOM-free",
			"hindsight-margin 7d, penalty 1, kills answered: 1338 days, slack 0.714 (median 0.783), 95.1% OOM-free",
			"forward-margin 28d, penalty 1: 1338 days, slack 0.724 (median 0.822), 95.1% OOM-free",
			"forward-margin 28d, penalty 1, kills answered: 1338 days, slack 0.767 (median 0.826), 95.2% OOM-free",
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tr, err := replay.OpenTrace(sharedTrace(t, tc.file), replay.FormatBitbrains)
			if err != nil {
				t.Fatal(err)
			}
			leanest := LeanestBound(Bounds(tr), BoundsGoal)
			if len(leanest) != len(tc.want) {
				t.Fatalf("%d rules reach %v OOM-free days, want %d: %+v", len(leanest), BoundsGoal, len(tc.want), leanest)
			}
			for i, p := range leanest {
				got := fmt.Sprintf("%s %s: %d days, slack %.3f (median %.3f), %.1f%% OOM-free", p.Rule, p.Setting(), p.WorkloadDays,
					p.MemorySlackMean, p.MemorySlackMedian, 100*p.OOMFreeFraction)
				if got != tc.want[i] {
					t.Errorf("got  %s\nwant %s", got, tc.want[i])
				}
			}
		})
	}
}
