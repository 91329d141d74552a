package replay

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
)

// The reference rules of Bounds. None is an estimator: they read the trace's
// own daily memory peaks, without the model, the updater or OOM feedback,
// and the hindsight and oracle rules also read the future.
const (
	// BoundRecentPeak requests the highest daily peak of the last H days
	// times (1 + m), one margin m for every container: the rule that
	// memory estimators sizing from past peaks approximate.
	BoundRecentPeak = "recent-peak"
	// BoundHindsightMargin is the same rule with each container's own
	// margin, chosen knowing all of its days: the most that adapting the
	// margin per workload could gain.
	BoundHindsightMargin = "hindsight-margin"
	// BoundOracle requests each day's own peak.
	BoundOracle = "oracle"
)

// BoundPoint is the score of one setting of one reference rule over the
// scored workload-days of a trace.
type BoundPoint struct {
	Rule string
	// Horizon is the number of past days whose peaks the request covers (0
	// for the oracle).
	Horizon int
	// Margin is the recent-peak rule's margin; Penalty is the cost of one
	// day with an OOM, in units of one day's slack, that the hindsight rule
	// trades against slack when it picks each container's margin.
	Margin, Penalty float64
	// WorkloadDays is the number of scored days the rule had an earlier
	// day to go on for.
	WorkloadDays      int
	MemorySlackMean   float64
	MemorySlackMedian float64
	OOMFreeFraction   float64
}

// Setting names the point's setting, as in bounds.csv.
func (p BoundPoint) Setting() string {
	switch p.Rule {
	case BoundRecentPeak:
		return fmt.Sprintf("%dd, margin %g", p.Horizon, p.Margin)
	case BoundHindsightMargin:
		return fmt.Sprintf("%dd, penalty %g", p.Horizon, p.Penalty)
	}
	return "each day's peak"
}

// BoundHorizons, BoundMargins and BoundPenalties are the settings Bounds
// scores; hindsight margins are picked from 0 to 3 in steps of 0.01.
var (
	BoundHorizons  = []int{1, 2, 3, 4, 7, 14, 28}
	BoundMargins   = []float64{0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.7, 1}
	BoundPenalties = []float64{0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10}
)

// dayPeak is what the reference rules know of one day of one container.
type dayPeak struct {
	day       int
	peak, p95 float64
	scored    bool
}

// boundOutcome is how a request of level·(1 + margin) fares on one scored
// day.
type boundOutcome struct {
	level     float64
	peak, p95 float64
}

func (o boundOutcome) score(margin float64) (float64, bool) {
	r := o.level * (1 + margin)
	return slack(r, o.p95), o.peak > r
}

// Bounds scores the reference rules on trace: the oracle, the recent-peak
// rule for every horizon and margin, and the hindsight-margin rule for every
// horizon and penalty. Days are scored as in Replay (the same days, the
// day's memory p95 against the request); a scored day with no earlier day
// of its container is left out, and the request is constant over the day.
func Bounds(trace *Trace) []BoundPoint {
	var containers [][]dayPeak
	for _, w := range trace.Workloads {
		t0 := w.Start()
		for _, c := range w.Containers {
			var days []dayPeak
			for _, cd := range containerDays(c, t0) {
				mem := make([]float64, len(cd.samples))
				for i, s := range cd.samples {
					mem[i] = s.Memory
				}
				p95, peak := quantileMax(mem, 0.95)
				days = append(days, dayPeak{day: cd.day, peak: peak, p95: p95, scored: cd.scored})
			}
			containers = append(containers, days)
		}
	}

	// The oracle's request is the day's own peak: the days the other rules
	// score (those with an earlier day) at margin 0 over that peak.
	var own [][]boundOutcome
	for _, days := range containers {
		var os []boundOutcome
		for i, d := range days {
			if d.scored && i > 0 {
				os = append(os, boundOutcome{level: d.peak, peak: d.peak, p95: d.p95})
			}
		}
		own = append(own, os)
	}
	out := []BoundPoint{scoreBound(BoundPoint{Rule: BoundOracle}, own, func(int) float64 { return 0 })}

	hindsightMargins := make([]float64, 301)
	for i := range hindsightMargins {
		hindsightMargins[i] = float64(i) / 100
	}
	for _, h := range BoundHorizons {
		outcomes := make([][]boundOutcome, len(containers))
		for ci, days := range containers {
			outcomes[ci] = recentPeakOutcomes(days, h)
		}
		for _, m := range BoundMargins {
			out = append(out, scoreBound(BoundPoint{Rule: BoundRecentPeak, Horizon: h, Margin: m}, outcomes, func(int) float64 { return m }))
		}
		// Each container's cost and OOM days at every margin. The cost counts
		// a day's slack as at least 0: the mean slack is unbounded below, and
		// a margin that leaves a day far under its usage must not look cheap
		// for that.
		costs := make([][]float64, len(containers))
		ooms := make([][]int, len(containers))
		for ci, os := range outcomes {
			costs[ci] = make([]float64, len(hindsightMargins))
			ooms[ci] = make([]int, len(hindsightMargins))
			for mi, m := range hindsightMargins {
				for _, o := range os {
					s, oom := o.score(m)
					costs[ci][mi] += max(s, 0)
					if oom {
						ooms[ci][mi]++
					}
				}
			}
		}
		for _, penalty := range BoundPenalties {
			best := make([]float64, len(containers))
			for ci := range outcomes {
				b := 0
				for mi := range hindsightMargins {
					if costs[ci][mi]+penalty*float64(ooms[ci][mi]) < costs[ci][b]+penalty*float64(ooms[ci][b]) {
						b = mi
					}
				}
				best[ci] = hindsightMargins[b]
			}
			out = append(out, scoreBound(BoundPoint{Rule: BoundHindsightMargin, Horizon: h, Penalty: penalty}, outcomes,
				func(ci int) float64 { return best[ci] }))
		}
	}
	return out
}

// scoreBound fills p's scores from the outcomes of every container, the
// request of container ci being its level times (1 + margin(ci)).
func scoreBound(p BoundPoint, outcomes [][]boundOutcome, margin func(ci int) float64) BoundPoint {
	var slacks []float64
	ooms := 0
	for ci, os := range outcomes {
		for _, o := range os {
			s, oom := o.score(margin(ci))
			slacks = append(slacks, s)
			if oom {
				ooms++
			}
		}
	}
	p.WorkloadDays = len(slacks)
	if len(slacks) > 0 {
		p.MemorySlackMean = mean(slacks)
		p.MemorySlackMedian = median(slacks)
		p.OOMFreeFraction = 1 - float64(ooms)/float64(len(slacks))
	}
	return p
}

// recentPeakOutcomes returns, for every scored day of one container that has
// an earlier day, the highest peak of the horizon days before it (of the
// latest earlier day when none is that recent) and the day's own peak and
// p95.
func recentPeakOutcomes(days []dayPeak, horizon int) []boundOutcome {
	var out []boundOutcome
	for i, d := range days {
		if !d.scored || i == 0 {
			continue
		}
		level := days[i-1].peak
		for j := i - 2; j >= 0 && days[j].day >= d.day-horizon; j-- {
			level = max(level, days[j].peak)
		}
		out = append(out, boundOutcome{level: level, peak: d.peak, p95: d.p95})
	}
	return out
}

// LeanestBound returns, for every rule, the point of lowest mean memory slack
// among those with at least minOOMFree OOM-free days, in rule order (oracle,
// recent-peak, hindsight-margin); rules with no such point are left out.
func LeanestBound(points []BoundPoint, minOOMFree float64) []BoundPoint {
	best := map[string]BoundPoint{}
	for _, p := range points {
		if p.OOMFreeFraction < minOOMFree {
			continue
		}
		if b, ok := best[p.Rule]; !ok || p.MemorySlackMean < b.MemorySlackMean {
			best[p.Rule] = p
		}
	}
	var out []BoundPoint
	for _, r := range []string{BoundOracle, BoundRecentPeak, BoundHindsightMargin} {
		if b, ok := best[r]; ok {
			out = append(out, b)
		}
	}
	return out
}

// BoundFront returns the Pareto front of one rule's points (see
// ParetoFront), by increasing OOM-free fraction.
func BoundFront(points []BoundPoint, rule string) []BoundPoint {
	var s []BoundPoint
	for _, p := range points {
		if p.Rule == rule {
			s = append(s, p)
		}
	}
	return paretoFront(s, func(p BoundPoint) (float64, float64) { return p.OOMFreeFraction, p.MemorySlackMean })
}

// WriteBoundsCSV writes one row per point.
func WriteBoundsCSV(w io.Writer, points []BoundPoint) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"rule", "horizon_days", "margin", "penalty", "workload_days", "memory_slack_mean", "memory_slack_median", "oom_free_fraction"}); err != nil {
		return err
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	for _, p := range points {
		if err := cw.Write([]string{p.Rule, strconv.Itoa(p.Horizon), g(p.Margin), g(p.Penalty), strconv.Itoa(p.WorkloadDays),
			f(p.MemorySlackMean), f(p.MemorySlackMedian), f(p.OOMFreeFraction)}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
