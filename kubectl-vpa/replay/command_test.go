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
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

func TestRunCommand(t *testing.T) {
	dir := t.TempDir()
	var trace strings.Builder
	trace.WriteString("timestamp,workload,container,cpu_cores,memory_bytes,cpu_request_cores,memory_request_bytes\n")
	for i := range 4 * 24 * 12 {
		mem := 3e8
		if i%50 == 0 {
			mem = 6e8
		}
		trace.WriteString(strings.Join([]string{
			itoa(1700000000 + 300*i), "web", "app", "0.2", ftoa(mem), "1", "1e9",
		}, ",") + "\n")
	}
	file := filepath.Join(dir, "trace.csv")
	if err := os.WriteFile(file, []byte(trace.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	var stdout, stderr bytes.Buffer
	if err := Run(context.Background(), []string{"--trace", file, "--out", out, "--estimator", "peak"}, &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	for _, f := range []string{"summary.json", "days.csv", "worst.svg", "typical.svg", "frontier.svg"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("missing %s: %v", f, err)
		}
	}
	data, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum map[string]map[string]any
	if err := json.Unmarshal(data, &sum); err != nil {
		t.Fatal(err)
	}
	wantKeys := "changes_per_day_mean,changes_per_day_p99,cpu_shortfall_mean,cpu_slack_mean,cpu_slack_median,memory_slack_mean,memory_slack_median,oom_episodes,oom_events_per_day_mean,oom_free_fraction,oom_free_std_err,recovery_hours_mean,recovery_hours_p90,unrecorded_oom_events_per_day_mean,workload_days"
	for _, top := range []string{"estimator", "provisioned"} {
		var keys []string
		for k := range sum[top] {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if got := strings.Join(keys, ","); got != wantKeys {
			t.Errorf("summary.json %q keys %s, want %s", top, got, wantKeys)
		}
	}
	if len(sum) != 2 {
		t.Errorf("summary.json has %d top-level keys, want estimator and provisioned", len(sum))
	}
	if days := sum["estimator"]["workload_days"]; days != 3.0 {
		t.Errorf("workload_days %v, want 3 (days 1–3 of 4)", days)
	}
	if !strings.Contains(stdout.String(), "peak (scored)") || !strings.Contains(stdout.String(), "provisioned") {
		t.Errorf("stdout table:\n%s", stdout.String())
	}
	if !strings.Contains(stderr.String(), "replay: 1/1 workloads") {
		t.Errorf("no progress on stderr:\n%s", stderr.String())
	}
	csv, _ := os.ReadFile(filepath.Join(out, "days.csv"))
	if lines := strings.Count(string(csv), "\n"); lines != 4 {
		t.Errorf("days.csv has %d lines, want header + 3", lines)
	}
	if _, err := os.Stat(filepath.Join(out, "bounds.csv")); err == nil {
		t.Error("bounds.csv written without --bounds")
	}
	// A trace of one workload: the recommendation after it, by --estimator,
	// its containers fed as one pod's.
	data, err = os.ReadFile(filepath.Join(out, RecommendationFile))
	if err != nil {
		t.Fatal(err)
	}
	var rec RecommendationReport
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Workload != "web" || rec.Estimator != "peak" || rec.Pods != 0 || len(rec.Containers) != 1 || rec.Containers[0].ContainerName != "app" {
		t.Errorf("%s: %s", RecommendationFile, data)
	}
	if !strings.Contains(stdout.String(), RecommendationHeading+" (peak estimator; the trace's containers fed as one pod's)") {
		t.Errorf("stdout has no recommendation:\n%s", stdout.String())
	}
}

func TestRunCommandHoldout(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, spike float64) string {
		var trace strings.Builder
		trace.WriteString("timestamp,workload,container,cpu_cores,memory_bytes,cpu_request_cores,memory_request_bytes\n")
		for i := range 4 * 24 * 12 {
			mem := 3e8
			if i == 3*24*12 {
				mem = spike
			}
			trace.WriteString(strings.Join([]string{itoa(1700000000 + 300*i), "web", "app", "0.2", ftoa(mem), "1", "1e9"}, ",") + "\n")
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
	if err := Run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	oomFree := func(file string) float64 {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var sum ReportSummary
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
	for _, f := range []string{"days.csv", "frontier.svg"} {
		if _, err := os.Stat(filepath.Join(out, "holdout", f)); err != nil {
			t.Errorf("holdout report lacks %s: %v", f, err)
		}
	}
	if n := strings.Count(stdout.String(), "adaptive (scored)"); n != 2 {
		t.Errorf("stdout has %d tables, want one per trace:\n%s", n, stdout.String())
	}
	if !strings.Contains(stdout.String(), tune+":") || !strings.Contains(stdout.String(), holdout+":") {
		t.Errorf("stdout does not name both traces:\n%s", stdout.String())
	}
}

func TestRunCommandErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.csv")
	os.WriteFile(bad, []byte("timestamp,workload,container,cpu_cores,memory_bytes\n1,w,c,x,1\n"), 0o644)
	tests := map[string]struct {
		args    []string
		wantErr string
	}{
		"no trace":          {args: nil, wantErr: "--trace is required"},
		"unknown estimator": {args: []string{"--trace", bad, "--estimator", "magic"}, wantErr: `unknown estimator "magic"`},
		"bad flag value":    {args: []string{"--trace", bad, "--target-memory-percentile", "2"}, wantErr: "target-memory-percentile"},
		"malformed trace":   {args: []string{"--trace", bad, "--out", t.TempDir()}, wantErr: "bad.csv:2: cpu_cores"},
		"missing holdout":   {args: []string{"--trace", bad, "--holdout", filepath.Join(t.TempDir(), "none.csv")}, wantErr: "--holdout: stat"},
		"holdout is trace":  {args: []string{"--trace", bad, "--holdout", bad}, wantErr: "--holdout must be another trace"},
		// The reference rules are research: hack/replay-bounds scores them.
		"no reference rules": {args: []string{"--trace", bad, "--bounds"}, wantErr: "unknown flag: --bounds"},
		"negative quick-OOM threshold": {args: []string{"--trace", bad, "--evict-after-oom-threshold", "-1m"},
			wantErr: "--evict-after-oom-threshold must be >= 0"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := Run(context.Background(), tc.args, &stdout, &stderr)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("got %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
	var stdout, stderr bytes.Buffer
	if err := Run(context.Background(), []string{"--help"}, &stdout, &stderr); err != nil || !strings.Contains(stderr.String(), "--peak-memory-margin") {
		t.Errorf("--help: %v\n%s", err, stderr.String())
	}
}

func itoa(i int) string     { return strconv.Itoa(i) }
func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
