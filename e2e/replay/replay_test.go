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

// Package replay tests `kubectl vpa replay --prometheus-url` against a real
// Prometheus: a synthetic Deployment's history (kubectl-vpa/replay/replaytest)
// is backfilled as cAdvisor series and written as a trace CSV, and the
// plugin must report the same figures from both.
package replay

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openvpa/openvpa/e2e/framework"
	"github.com/openvpa/openvpa/kubectl-vpa/replay/replaytest"
)

func TestReplayFromPrometheusEqualsCSV(t *testing.T) {
	c := framework.Start(t)
	ns := c.NewNamespace(t) // a name no other test's series carry
	// The history's last step: every scrape is in the past.
	end := time.Now().Truncate(5 * time.Minute)
	h := replaytest.Synthetic(ns, end, 10)
	dir := t.TempDir()

	series := filepath.Join(dir, "series.om")
	writeFile(t, series, func(f *os.File) error { return h.WriteOpenMetrics(f, time.Minute) })
	prom := c.NewPrometheus(t, framework.PrometheusOptions{OpenMetrics: series})
	prom.Start(t)
	bin := c.BuildBinary(t, "./kubectl-vpa")

	promArgs := []string{"replay", "--prometheus-url", prom.URL, "-n", ns, "--history-length", "12d", "--history-resolution", "5m"}
	for _, tc := range []struct {
		name     string
		workload string
		args     []string
	}{
		{"deployment", "deployment/web", []string{"deployment/web"}},
		{"pod selector", "pods{app=web}", []string{"--pod-selector", "app=web", "--metric-for-pod-labels", `up{job="kubernetes-pods"}[12d]`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := h
			h.Workload = tc.workload
			trace := filepath.Join(t.TempDir(), "trace.csv")
			writeFile(t, trace, func(w *os.File) error { return h.WriteCSV(w) })

			want := run(t, bin, "replay", "--trace", trace)
			got := run(t, bin, append(append([]string{}, promArgs...), tc.args...)...)
			for _, k := range []string{"table", "summary.json", "days.csv"} {
				if got[k] != want[k] {
					t.Errorf("%s from Prometheus differs from the CSV's:\n--- Prometheus\n%s\n--- CSV\n%s", k, got[k], want[k])
				}
			}
			if !strings.Contains(want["summary.json"], `"workload_days"`) || strings.Count(want["days.csv"], "\n") < 2*8 {
				t.Errorf("the CSV replay scored too little to compare:\n%s", want["days.csv"])
			}
			t.Logf("replayed %s from %s:\n%s", tc.workload, prom.URL, got["table"])
		})
	}
}

func writeFile(t *testing.T, path string, write func(*os.File) error) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := write(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// run runs the plugin with args and returns what it reports: the table
// without its source's name and the times it took, summary.json and
// days.csv.
func run(t *testing.T, bin string, args ...string) map[string]string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	cmd := exec.Command(bin, append(args, "--out", out, "--quiet")...)
	stdout, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("kubectl-vpa %s: %v\n%s%s", strings.Join(args, " "), err, stdout, stderr)
	}
	var lines []string
	for i, l := range strings.Split(string(stdout), "\n") {
		if i == 0 || strings.HasPrefix(l, "wrote ") || strings.HasPrefix(l, "done in ") {
			continue
		}
		lines = append(lines, l)
	}
	r := map[string]string{"table": strings.Join(lines, "\n")}
	for _, f := range []string{"summary.json", "days.csv"} {
		b, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		r[f] = string(b)
	}
	return r
}
