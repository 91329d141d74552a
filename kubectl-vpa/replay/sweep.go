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
	"encoding/csv"
	"io"
	"strconv"
	"time"

	"github.com/openvpa/openvpa/recommender/estimator"
)

// SweepPoint is one setting of a swept estimator and its summary.
type SweepPoint struct {
	Estimator string
	// Knobs names the swept flags and their values, in flag order.
	Knobs   [][2]string
	Summary Summary
}

// SweepSettings returns the grid of every estimator's knobs:
//   - percentile: --target-memory-percentile 0.5…0.99 × --recommendation-margin-fraction 0…0.5
//     (the memory upper-bound percentile is raised to the target percentile
//     when below it, so that a fresh target is inside its own bounds);
//   - peak: --peak-memory-margin 0…0.5 × --peak-memory-horizon 3d, 7d, 14d;
//   - adaptive: --adaptive-memory-overrun-cost 64…4096 × --adaptive-memory-young-margin 0.5…4
//     × --adaptive-memory-record-factor 0, 1, 2.
//
// Every other knob keeps its default.
func SweepSettings() ([]estimator.Estimator, []SweepPoint) {
	var ests []estimator.Estimator
	var points []SweepPoint
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	for _, pct := range []float64{0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99} {
		for _, m := range []float64{0, 0.1, 0.2, 0.3, 0.4, 0.5} {
			c := estimator.DefaultConfig()
			c.TargetMemoryPercentile = pct
			c.UpperBoundMemoryPercentile = max(pct, c.UpperBoundMemoryPercentile)
			c.MarginFraction = m
			ests = append(ests, estimator.NewPercentile(c))
			points = append(points, SweepPoint{Estimator: estimator.PercentileName,
				Knobs: [][2]string{{"target-memory-percentile", f(pct)}, {"recommendation-margin-fraction", f(m)}}})
		}
	}
	for _, days := range []int{3, 7, 14} {
		for _, m := range []float64{0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5} {
			pc := estimator.DefaultPeakConfig()
			pc.MemoryHorizon = time.Duration(days) * 24 * time.Hour
			pc.MemoryMargin = m
			ests = append(ests, estimator.NewPeak(estimator.DefaultConfig(), pc))
			points = append(points, SweepPoint{Estimator: estimator.PeakName,
				Knobs: [][2]string{{"peak-memory-horizon", pc.MemoryHorizon.String()}, {"peak-memory-margin", f(m)}}})
		}
	}
	for _, record := range []float64{0, 1, 2} {
		for _, cost := range []float64{64, 256, 1024, 4096} {
			for _, young := range []float64{0.5, 1, 2, 3, 4} {
				ac := estimator.DefaultAdaptiveConfig()
				ac.MemoryOverrunCost = cost
				ac.MemoryYoungMargin = young
				ac.MemoryRecordFactor = record
				ests = append(ests, estimator.NewAdaptive(estimator.DefaultConfig(), ac))
				points = append(points, SweepPoint{Estimator: estimator.AdaptiveName,
					Knobs: [][2]string{{"adaptive-memory-overrun-cost", f(cost)}, {"adaptive-memory-young-margin", f(young)},
						{"adaptive-memory-record-factor", f(record)}}})
			}
		}
	}
	return ests, points
}

// RunSweep replays every setting of SweepSettings side by side, with the
// model, rule and OOM feedback of base.
func RunSweep(ctx context.Context, trace *Trace, base Options) ([]SweepPoint, error) {
	ests, points := SweepSettings()
	base.Estimators = ests
	res, err := Replay(ctx, trace, base)
	if err != nil {
		return nil, err
	}
	for i := range points {
		points[i].Summary = res.EstimatorSummary(i)
	}
	return points, nil
}

// WriteSweepCSV writes one row per swept setting.
func WriteSweepCSV(w io.Writer, points []SweepPoint) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"estimator", "knobs", "workload_days", "memory_slack_mean", "memory_slack_median", "oom_free_fraction",
		"oom_free_std_err", "cpu_slack_mean", "cpu_shortfall_mean", "changes_per_day_mean", "changes_per_day_p99", "oom_events_per_day_mean", "unrecorded_oom_events_per_day_mean", "recovery_hours_mean"}); err != nil {
		return err
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }
	for _, p := range points {
		knobs := ""
		for i, k := range p.Knobs {
			if i > 0 {
				knobs += " "
			}
			knobs += "--" + k[0] + "=" + k[1]
		}
		s := p.Summary
		if err := cw.Write([]string{p.Estimator, knobs, strconv.Itoa(s.WorkloadDays), f(s.MemorySlackMean), f(s.MemorySlackMedian),
			f(s.OOMFreeFraction), f(s.OOMFreeStdErr), f(s.CPUSlackMean), f(s.CPUShortfallMean), f(s.ChangesPerDayMean), f(s.ChangesPerDayP99),
			f(s.OOMEventsPerDayMean), f(s.UnrecordedOOMEventsPerDayMean), f(s.RecoveryHoursMean)}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
