package replay

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/openvpa/openvpa/recommender/estimator"
)

// devTrace locates the development trace: ../shared/data/bitbrains relative to
// the repository root (as CI mounts it), else /work/shared/data/bitbrains.
func devTrace(t *testing.T) string {
	t.Helper()
	const file = "bitbrains_rnd_vm1-50_2013-07.csv.gz"
	for _, dir := range []string{filepath.Join("..", "..", "..", "shared", "data", "bitbrains"), "/work/shared/data/bitbrains"} {
		p := filepath.Join(dir, file)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Fatalf("development trace %s not found in ../shared/data/bitbrains (from the repository root) nor /work/shared/data/bitbrains", file)
	return ""
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
	// No percentile setting of the sweep (docs/replay.md) reaches 95%
	// OOM-free; its best, 93.2% with --target-memory-percentile=0.99
	// --recommendation-margin-fraction=3, costs 0.88 slack. Peak must stay
	// at least 0.05 leaner than that.
	if peak.MemorySlackMean > 0.88-0.05 {
		t.Errorf("peak memory slack mean %.4f, want ≤ 0.83", peak.MemorySlackMean)
	}
}
