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
	"math"
	"sort"
)

// Summary aggregates the scores of one request series over every scored
// workload-day. The JSON keys are part of the replay's output format.
type Summary struct {
	WorkloadDays      int     `json:"workload_days"`
	CPUSlackMean      float64 `json:"cpu_slack_mean"`
	CPUSlackMedian    float64 `json:"cpu_slack_median"`
	MemorySlackMean   float64 `json:"memory_slack_mean"`
	MemorySlackMedian float64 `json:"memory_slack_median"`
	OOMFreeFraction   float64 `json:"oom_free_fraction"`
	// OOMFreeStdErr is the standard error of OOMFreeFraction when workloads
	// are the sampled unit: days of one workload are not independent, and a
	// new set of workloads is what a setting chosen on a trace meets next.
	// It is the ratio estimator's (W/(W−1) · Σ_w (f_w − p·n_w)²)^½ / Σ_w n_w
	// over the W workloads with n_w scored and f_w OOM-free days; 0 with
	// fewer than two workloads.
	OOMFreeStdErr     float64 `json:"oom_free_std_err"`
	CPUShortfallMean  float64 `json:"cpu_shortfall_mean"`
	ChangesPerDayMean float64 `json:"changes_per_day_mean"`
	ChangesPerDayP99  float64 `json:"changes_per_day_p99"`
	// OOMEventsPerDayMean is the mean number of memory samples above the
	// request per workload-day (each one an OOM kill with --oom-feedback).
	OOMEventsPerDayMean float64 `json:"oom_events_per_day_mean"`
	// UnrecordedOOMEventsPerDayMean is the part of OOMEventsPerDayMean the
	// model dropped (kills in a memory window whose peak reads 0).
	UnrecordedOOMEventsPerDayMean float64 `json:"unrecorded_oom_events_per_day_mean"`
	// OOMEpisodes counts the runs of consecutive OOM samples that began on a
	// scored day; RecoveryHoursMean and RecoveryHoursP90 are the times from
	// an episode's first OOM sample to the first sample within the request.
	OOMEpisodes       int     `json:"oom_episodes"`
	RecoveryHoursMean float64 `json:"recovery_hours_mean"`
	RecoveryHoursP90  float64 `json:"recovery_hours_p90"`
}

// Summarize aggregates the scores picked by score from days; days for which
// score returns nil are skipped.
func Summarize(days []DayScore, score func(*DayScore) *Score) Summary {
	var cpuSlack, memSlack, shortfall, changes, ooms, unrecorded, recoveries []float64
	type tally struct{ days, free float64 }
	var workloads []tally
	index := map[string]int{}
	for i := range days {
		s := score(&days[i])
		if s == nil {
			continue
		}
		wi, ok := index[days[i].Workload]
		if !ok {
			wi = len(workloads)
			index[days[i].Workload] = wi
			workloads = append(workloads, tally{})
		}
		workloads[wi].days++
		if s.OOMSamples == 0 {
			workloads[wi].free++
		}
		cpuSlack = append(cpuSlack, s.CPUSlack)
		memSlack = append(memSlack, s.MemorySlack)
		shortfall = append(shortfall, s.CPUShortfall)
		changes = append(changes, float64(s.Changes))
		ooms = append(ooms, float64(s.OOMSamples))
		unrecorded = append(unrecorded, float64(s.UnrecordedOOMs))
		for _, r := range s.Recoveries {
			recoveries = append(recoveries, r.Hours())
		}
	}
	n := len(memSlack)
	if n == 0 {
		return Summary{}
	}
	oomFree := 0.0
	for _, t := range workloads {
		oomFree += t.free
	}
	sum := Summary{
		WorkloadDays:      n,
		CPUSlackMean:      Mean(cpuSlack),
		CPUSlackMedian:    Median(cpuSlack),
		MemorySlackMean:   Mean(memSlack),
		MemorySlackMedian: Median(memSlack),
		OOMFreeFraction:   oomFree / float64(n),
		CPUShortfallMean:  Mean(shortfall),
		ChangesPerDayMean: Mean(changes),
		ChangesPerDayP99:  nearestRank(changes, 0.99),

		OOMEventsPerDayMean:           Mean(ooms),
		UnrecordedOOMEventsPerDayMean: Mean(unrecorded),
		OOMEpisodes:                   len(recoveries),
	}
	if w := float64(len(workloads)); w > 1 {
		p, ss := sum.OOMFreeFraction, 0.0
		for _, t := range workloads {
			d := t.free - p*t.days
			ss += d * d
		}
		sum.OOMFreeStdErr = math.Sqrt(w/(w-1)*ss) / float64(n)
	}
	if len(recoveries) > 0 {
		sum.RecoveryHoursMean = Mean(recoveries)
		sum.RecoveryHoursP90 = nearestRank(recoveries, 0.9)
	}
	return sum
}

// EstimatorSummary summarizes estimator i of r.
func (r *Result) EstimatorSummary(i int) Summary {
	return Summarize(r.Days, func(d *DayScore) *Score { return &d.Scores[i] })
}

// ProvisionedSummary summarizes the trace's own requests.
func (r *Result) ProvisionedSummary() Summary {
	return Summarize(r.Days, func(d *DayScore) *Score { return d.Provisioned })
}

// ScoredWorkloads returns the number of workloads with at least one scored
// day.
func (r *Result) ScoredWorkloads() int {
	seen := map[string]bool{}
	for _, d := range r.Days {
		seen[d.Workload] = true
	}
	return len(seen)
}

// Mean returns the mean of xs.
func Mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// Median returns the middle value, or the mean of the two middle values.
func Median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// nearestRank returns the q-quantile by the nearest-rank rule: the smallest
// value with at least q·n values at or below it.
func nearestRank(xs []float64, q float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	k := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(k, len(s)-1))]
}

// QuantileMax returns the nearest-rank q-quantile and the maximum of xs; xs
// is sorted in place.
func QuantileMax(xs []float64, q float64) (float64, float64) {
	sort.Float64s(xs)
	k := int(math.Ceil(q*float64(len(xs)))) - 1
	return xs[max(0, min(k, len(xs)-1))], xs[len(xs)-1]
}
