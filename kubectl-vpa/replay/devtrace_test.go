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
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/openvpa/openvpa/recommender/estimator"
)

// Files of the development (tuning) trace and of the holdout trace.
const (
	devTraceFile     = "bitbrains_rnd_vm1-50_2013-07.csv.gz"
	holdoutTraceFile = "bitbrains_rnd_vm51-100_2013-07.csv.gz"
)

// devTrace returns the path of the development trace.
func devTrace(t *testing.T) string { return sharedTrace(t, devTraceFile) }

// sharedTrace returns the path of file in testdata/bitbrains (README.md
// there cites the data set), failing when it is missing.
func sharedTrace(t *testing.T, file string) string {
	t.Helper()
	p := filepath.Join("testdata", "bitbrains", file)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("trace %s: %v", file, err)
	}
	return p
}

// TestDevelopmentTrace replays the development trace (Bitbrains Rnd, VMs
// 1–50, July 2013) and checks the upstream figures of the percentile
// estimator, the provisioned baseline, and the peak estimator's targets.
func TestDevelopmentTrace(t *testing.T) {
	tr, err := OpenTrace(devTrace(t), FormatBitbrains)
	if err != nil {
		t.Fatal(err)
	}
	ests := []estimator.Estimator{}
	for _, n := range estimator.Names() {
		e, err := estimator.New(n, estimator.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		ests = append(ests, e)
	}
	res, err := Replay(context.Background(), tr, Options{Estimators: ests})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.ScoredWorkloads(); got != 48 {
		t.Errorf("scored workloads %d, want 48", got)
	}
	pct := res.EstimatorSummary(0)
	t.Logf("percentile: %+v", pct)
	if pct.WorkloadDays != 1303 {
		t.Errorf("percentile workload-days %d, want 1303", pct.WorkloadDays)
	}
	if math.Abs(pct.MemorySlackMean-0.63) > 0.01 {
		t.Errorf("percentile memory slack mean %.4f, want 0.63 ± 0.01", pct.MemorySlackMean)
	}
	if math.Abs(pct.OOMFreeFraction-0.80) > 0.005 {
		t.Errorf("percentile OOM-free %.4f, want 0.800 ± 0.005", pct.OOMFreeFraction)
	}
	if pct.ChangesPerDayP99 != 3 {
		t.Errorf("percentile changes/day p99 %v, want 3", pct.ChangesPerDayP99)
	}
	prov := res.ProvisionedSummary()
	if math.Abs(prov.MemorySlackMean-0.88) > 0.005 {
		t.Errorf("provisioned memory slack mean %.4f, want 0.88", prov.MemorySlackMean)
	}

	peak := res.EstimatorSummary(1)
	t.Logf("peak: %+v", peak)
	if peak.OOMFreeFraction < 0.95 {
		t.Errorf("peak OOM-free %.4f, want ≥ 0.95", peak.OOMFreeFraction)
	}
	if peak.ChangesPerDayP99 > 7 {
		t.Errorf("peak changes/day p99 %v, want ≤ 7", peak.ChangesPerDayP99)
	}
	// No percentile setting of the sweep (docs/dev/replay-research.md) reaches 95%
	// OOM-free; its best, 93.2% with --target-memory-percentile=0.99
	// --recommendation-margin-fraction=3, costs 0.88 slack. Peak must stay
	// at least 0.05 leaner than that.
	if peak.MemorySlackMean > 0.88-0.05 {
		t.Errorf("peak memory slack mean %.4f, want ≤ 0.83", peak.MemorySlackMean)
	}
}

// replayDefaults replays the trace at file with OOM feedback and every
// estimator at its defaults, and returns the summaries by estimator name.
func replayDefaults(t *testing.T, file string, zeroMissing bool) map[string]Summary {
	t.Helper()
	tr, err := OpenTrace(sharedTrace(t, file), FormatBitbrains)
	if err != nil {
		t.Fatal(err)
	}
	var ests []estimator.Estimator
	for _, n := range estimator.Names() {
		e, err := estimator.New(n, estimator.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		ests = append(ests, e)
	}
	res, err := Replay(context.Background(), tr, Options{Estimators: ests, OOMFeedback: true, ZeroMemoryAsMissing: zeroMissing})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]Summary{}
	for i, n := range res.Estimators {
		out[n] = res.EstimatorSummary(i)
		t.Logf("%s: %+v", n, out[n])
	}
	return out
}

// TestAdaptiveDefaultsOnBothTraces pins the figures docs/dev/replay-research.md reports
// for the adaptive estimator's defaults with OOM feedback: on the
// development trace, where the defaults were chosen, and on the holdout
// trace, which played no part in choosing them; each also with 0-byte memory
// readings left out of the model. On the holdout it also checks the goals
// the defaults meet there: at least 95% OOM-free days, at most 3 changes a
// day at p99, and a CPU shortfall no worse than upstream's defaults (the
// percentile estimator's).
func TestAdaptiveDefaultsOnBothTraces(t *testing.T) {
	type want struct {
		slack, oomFree, p99, cpuShortfall float64
	}
	tests := map[string]struct {
		file        string
		zeroMissing bool
		adaptive    want
	}{
		"development":                   {file: devTraceFile, adaptive: want{slack: 0.7607, oomFree: 0.9777, p99: 2, cpuShortfall: 0.0151}},
		"holdout":                       {file: holdoutTraceFile, adaptive: want{slack: 0.7637, oomFree: 0.9581, p99: 3, cpuShortfall: 0.0431}},
		"development, zeros as missing": {file: devTraceFile, zeroMissing: true, adaptive: want{slack: 0.7606, oomFree: 0.9785, p99: 2, cpuShortfall: 0.0150}},
		"holdout, zeros as missing":     {file: holdoutTraceFile, zeroMissing: true, adaptive: want{slack: 0.7639, oomFree: 0.9581, p99: 3, cpuShortfall: 0.0433}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			sums := replayDefaults(t, tc.file, tc.zeroMissing)
			a, upstream := sums[estimator.AdaptiveName], sums[estimator.PercentileName]
			if math.Abs(a.MemorySlackMean-tc.adaptive.slack) > 0.001 || math.Abs(a.OOMFreeFraction-tc.adaptive.oomFree) > 0.001 || a.ChangesPerDayP99 != tc.adaptive.p99 {
				t.Errorf("adaptive: slack %.4f, OOM-free %.4f, changes/day p99 %v; want %.3f, %.3f, %v",
					a.MemorySlackMean, a.OOMFreeFraction, a.ChangesPerDayP99, tc.adaptive.slack, tc.adaptive.oomFree, tc.adaptive.p99)
			}
			if math.Abs(a.CPUShortfallMean-tc.adaptive.cpuShortfall) > 0.0005 {
				t.Errorf("adaptive CPU shortfall %.4f, want %.4f", a.CPUShortfallMean, tc.adaptive.cpuShortfall)
			}
			if a.OOMFreeFraction < 0.95 || a.ChangesPerDayP99 > 3 || a.CPUShortfallMean > upstream.CPUShortfallMean {
				t.Errorf("adaptive misses a goal: OOM-free %.4f (want ≥ 0.95), changes/day p99 %v (≤ 3), CPU shortfall %.4f (≤ upstream's %.4f)",
					a.OOMFreeFraction, a.ChangesPerDayP99, a.CPUShortfallMean, upstream.CPUShortfallMean)
			}
		})
	}
}
