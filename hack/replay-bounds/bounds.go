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
	"fmt"
	"time"

	"github.com/openvpa/openvpa/kubectl-vpa/replay"
)

// The reference rules of Bounds. None is an estimator: they read the trace's
// own daily memory peaks, without the model, the updater or OOM feedback,
// and the hindsight and oracle rules also read the future.
const (
	// BoundRecentPeak requests the highest daily peak of the last H days
	// times (1 + m), one margin m for every container: the rule that
	// memory estimators sizing from past peaks approximate.
	BoundRecentPeak = "recent-peak"
	// BoundPartPeak is the recent-peak rule with one request for each part
	// of the day: the day cut into Parts equal parts from its start, each
	// part's request the highest peak of that part over the last H days
	// times (1 + m). It bounds what requests that follow the time of day
	// could gain.
	BoundPartPeak = "part-peak"
	// BoundHindsightMargin is the same rule with each container's own
	// margin, chosen knowing all of its days: the most that adapting the
	// margin per workload could gain.
	BoundHindsightMargin = "hindsight-margin"
	// BoundForwardMargin is the hindsight-margin rule run forward: each
	// day, each container's margin is the one that would have cost it least
	// over its earlier days (the largest when margins cost the same, as on
	// its first day). It is what choosing the margin per workload from its
	// own past gains, with no model in the way.
	BoundForwardMargin = "forward-margin"
	// BoundOracle requests each day's own peak (or each part's, with
	// Parts).
	BoundOracle = "oracle"
)

// BoundPoint is the score of one setting of one reference rule over the
// scored workload-days of a trace.
type BoundPoint struct {
	Rule string
	// Horizon is the number of past days whose peaks the request covers (0
	// for the oracle).
	Horizon int
	// Parts is the number of parts of the day with a request of their own:
	// 1 but for part-peak and the oracle of parts.
	Parts int
	// Answered is the recent-peak or hindsight-margin rule with every kill
	// answered: from the first sample above the request on, the request
	// rises to the highest sample so far, for the rest of the day, as a
	// recommender that raises the request after a kill would (knowing the
	// usage that killed, which a live one does not). The day still counts
	// as an OOM day.
	Answered bool
	// Margin is the recent-peak rule's margin; Penalty is the cost of one
	// day with an OOM, in units of one day's slack, that the hindsight and
	// forward rules trade against slack when they pick a container's margin.
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
	answered := ""
	if p.Answered {
		answered = ", kills answered"
	}
	switch p.Rule {
	case BoundRecentPeak:
		return fmt.Sprintf("%dd, margin %g%s", p.Horizon, p.Margin, answered)
	case BoundPartPeak:
		return fmt.Sprintf("%d parts, %dd, margin %g", p.Parts, p.Horizon, p.Margin)
	case BoundHindsightMargin, BoundForwardMargin:
		return fmt.Sprintf("%dd, penalty %g%s", p.Horizon, p.Penalty, answered)
	}
	if p.Parts > 1 {
		return fmt.Sprintf("%d parts, each part's peak", p.Parts)
	}
	return "each day's peak"
}

// BoundHorizons, BoundMargins, BoundPenalties and BoundParts are the
// settings Bounds scores; hindsight margins are picked from 0 to 3 in steps
// of 0.01.
var (
	BoundHorizons  = []int{1, 2, 3, 4, 7, 14, 28}
	BoundParts     = []int{2, 4}
	BoundMargins   = []float64{0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.7, 1}
	BoundPenalties = []float64{0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10}
)

// dayPeak is what the reference rules know of one day of one container:
// its memory peak and p95, the peaks of its parts for every number of parts
// the rules cut days into (1 and BoundParts), and its running peak.
type dayPeak struct {
	day       int
	peak, p95 float64
	scored    bool
	parts     map[int][]partPeak
	// ladder is the highest sample before each sample, as steps in time
	// order: the first step, level 0, is the first sample's; each later
	// step starts at the sample after a new highest one. With every kill
	// answered a sample's request is the larger of the day's request and
	// its step's level.
	ladder []step
}

// step is a run of samples that have the same highest earlier sample.
type step struct {
	level   float64
	samples int
}

// partPeak is the peak and the number of samples of one part of a day.
type partPeak struct {
	peak    float64
	samples int
}

// newDayPeak returns what the rules know of cd, a day that starts at start.
func newDayPeak(cd replay.ContainerDay, start time.Time) dayPeak {
	d := dayPeak{day: cd.Day, scored: cd.Scored, parts: map[int][]partPeak{}}
	mem := make([]float64, len(cd.Samples))
	for i, s := range cd.Samples {
		mem[i] = s.Memory
	}
	if len(mem) > 0 {
		d.ladder = []step{{level: 0, samples: 1}}
	}
	for _, m := range mem[:max(len(mem)-1, 0)] {
		if m > d.ladder[len(d.ladder)-1].level {
			d.ladder = append(d.ladder, step{level: m})
		}
		d.ladder[len(d.ladder)-1].samples++
	}
	d.p95, d.peak = replay.QuantileMax(mem, 0.95) // sorts mem
	for _, n := range append([]int{1}, BoundParts...) {
		parts := make([]partPeak, n)
		for _, s := range cd.Samples {
			p := &parts[min(int(s.Time.Sub(start)*time.Duration(n)/replay.Day), n-1)]
			p.peak, p.samples = max(p.peak, s.Memory), p.samples+1
		}
		d.parts[n] = parts
	}
	return d
}

// boundOutcome is how a request of level·(1 + margin) for each part of one
// scored day fares: the day's slack is that of the requests' mean over its
// samples, and the day has an OOM when one part's peak is above its request.
type boundOutcome struct {
	// level is the parts' levels weighted by their shares of the samples.
	level float64
	p95   float64
	parts []boundPart
	// ladder is the day's running peak (dayPeak.ladder), for scoring the
	// one-part rules with kills answered.
	ladder []step
}

type boundPart struct {
	level, peak float64
}

// partsOutcome is the outcome on day d, cut into parts, of the requests
// level(j)·(1 + margin) for each part j with samples.
func partsOutcome(d dayPeak, parts int, level func(j int) float64) boundOutcome {
	peaks := d.parts[parts]
	total := 0
	for _, p := range peaks {
		total += p.samples
	}
	o := boundOutcome{p95: d.p95, ladder: d.ladder}
	for j, p := range peaks {
		if p.samples == 0 {
			continue
		}
		l := level(j)
		o.parts = append(o.parts, boundPart{level: l, peak: p.peak})
		o.level += l * (float64(p.samples) / float64(total))
	}
	return o
}

// score returns the day's slack and whether it has an OOM at margin; with
// kills answered (one part) its slack is that of its samples' mean request.
func (o boundOutcome) score(margin float64, answered bool) (float64, bool) {
	oom := false
	for _, p := range o.parts {
		oom = oom || p.peak > p.level*(1+margin)
	}
	request := o.level * (1 + margin)
	if answered && len(o.ladder) > 0 {
		sum, n := 0.0, 0
		for _, s := range o.ladder {
			sum += float64(s.samples) * max(request, s.level)
			n += s.samples
		}
		request = sum / float64(n)
	}
	return replay.Slack(request, o.p95), oom
}

// Bounds scores the reference rules on trace: the oracle for the whole day
// and for every number of parts, the recent-peak rule for every horizon and
// margin, part-peak for every number of parts, horizon and margin, and the
// hindsight-margin and forward-margin rules for every horizon and penalty;
// recent-peak, hindsight-margin and forward-margin also with kills
// answered. Days are scored as in Replay (the same days, the day's memory
// p95 against the request); a scored day with no earlier day of its
// container is left out, and the request is constant over the day (over
// each part, with parts) unless kills are answered.
func Bounds(trace *replay.Trace) []BoundPoint {
	var containers [][]dayPeak
	for _, w := range trace.Workloads {
		t0 := w.Start()
		for _, c := range w.Containers {
			var days []dayPeak
			for _, cd := range replay.ContainerDays(c, t0) {
				days = append(days, newDayPeak(cd, t0.Add(time.Duration(cd.Day)*replay.Day)))
			}
			containers = append(containers, days)
		}
	}

	// The oracle's request is the day's own peak (each part's, with parts):
	// the days the other rules score (those with an earlier day) at margin
	// 0 over that peak.
	var out []BoundPoint
	for _, parts := range append([]int{1}, BoundParts...) {
		var own [][]boundOutcome
		for _, days := range containers {
			var os []boundOutcome
			for i, d := range days {
				if d.scored && i > 0 {
					os = append(os, partsOutcome(d, parts, func(j int) float64 { return d.parts[parts][j].peak }))
				}
			}
			own = append(own, os)
		}
		out = append(out, scoreBound(BoundPoint{Rule: BoundOracle, Parts: parts}, own, func(int, int) float64 { return 0 }))
	}

	for _, h := range BoundHorizons {
		outcomes := make([][]boundOutcome, len(containers))
		for ci, days := range containers {
			outcomes[ci] = partPeakOutcomes(days, h, 1)
		}
		for _, answered := range []bool{false, true} {
			for _, m := range BoundMargins {
				out = append(out, scoreBound(BoundPoint{Rule: BoundRecentPeak, Horizon: h, Parts: 1, Margin: m, Answered: answered}, outcomes,
					func(int, int) float64 { return m }))
			}
			out = append(out, marginBounds(BoundPoint{Horizon: h, Parts: 1, Answered: answered}, outcomes)...)
		}
		for _, parts := range BoundParts {
			partOutcomes := make([][]boundOutcome, len(containers))
			for ci, days := range containers {
				partOutcomes[ci] = partPeakOutcomes(days, h, parts)
			}
			for _, m := range BoundMargins {
				out = append(out, scoreBound(BoundPoint{Rule: BoundPartPeak, Horizon: h, Parts: parts, Margin: m}, partOutcomes,
					func(int, int) float64 { return m }))
			}
		}
	}
	return out
}

// hindsightMargins are the margins the hindsight-margin and forward-margin
// rules pick from: 0 to 3 in steps of 0.01.
var hindsightMargins = func() []float64 {
	ms := make([]float64, 301)
	for i := range ms {
		ms[i] = float64(i) / 100
	}
	return ms
}()

// marginBounds scores the hindsight-margin and forward-margin rules on the
// recent-peak outcomes of every container, p giving the horizon and whether
// kills are answered, for every penalty.
func marginBounds(p BoundPoint, outcomes [][]boundOutcome) []BoundPoint {
	// The cost of each day of each container at every margin counts the
	// day's slack as at least 0: the mean slack is unbounded below, and a
	// margin that leaves a day far under its usage must not look cheap for
	// that.
	costs := make([][][]float64, len(outcomes))
	ooms := make([][][]bool, len(outcomes))
	for ci, os := range outcomes {
		costs[ci], ooms[ci] = make([][]float64, len(os)), make([][]bool, len(os))
		for di, o := range os {
			costs[ci][di], ooms[ci][di] = make([]float64, len(hindsightMargins)), make([]bool, len(hindsightMargins))
			for mi, m := range hindsightMargins {
				s, oom := o.score(m, p.Answered)
				costs[ci][di][mi], ooms[ci][di][mi] = max(s, 0), oom
			}
		}
	}
	var out []BoundPoint
	for _, penalty := range BoundPenalties {
		hindsight := make([]float64, len(outcomes))
		forward := make([][]float64, len(outcomes))
		for ci := range outcomes {
			total := make([]float64, len(hindsightMargins))
			for di := range outcomes[ci] {
				// The margin this day would have had, going forward: the
				// cheapest over the days before it; then the day is added.
				b := len(total) - 1
				for mi := len(total) - 1; mi >= 0; mi-- {
					if total[mi] < total[b] {
						b = mi
					}
				}
				forward[ci] = append(forward[ci], hindsightMargins[b])
				for mi := range total {
					total[mi] += costs[ci][di][mi]
					if ooms[ci][di][mi] {
						total[mi] += penalty
					}
				}
			}
			b := 0
			for mi := range total {
				if total[mi] < total[b] {
					b = mi
				}
			}
			hindsight[ci] = hindsightMargins[b]
		}
		p.Penalty = penalty
		p.Rule = BoundHindsightMargin
		out = append(out, scoreBound(p, outcomes, func(ci, _ int) float64 { return hindsight[ci] }))
		p.Rule = BoundForwardMargin
		out = append(out, scoreBound(p, outcomes, func(ci, di int) float64 { return forward[ci][di] }))
	}
	return out
}

// scoreBound fills p's scores from the outcomes of every container, the
// request of container ci on its di-th scored day being its level times
// (1 + margin(ci, di)).
func scoreBound(p BoundPoint, outcomes [][]boundOutcome, margin func(ci, di int) float64) BoundPoint {
	var slacks []float64
	ooms := 0
	for ci, os := range outcomes {
		for di, o := range os {
			s, oom := o.score(margin(ci, di), p.Answered)
			slacks = append(slacks, s)
			if oom {
				ooms++
			}
		}
	}
	p.WorkloadDays = len(slacks)
	if len(slacks) > 0 {
		p.MemorySlackMean = replay.Mean(slacks)
		p.MemorySlackMedian = replay.Median(slacks)
		p.OOMFreeFraction = 1 - float64(ooms)/float64(len(slacks))
	}
	return p
}

// partPeakOutcomes returns, for every scored day of one container that has
// an earlier day, the outcome of requesting for each of the parts of the
// day its highest peak over the horizon days before (over the latest
// earlier day when none is that recent); when that is 0 (none of them has
// a sample in the part, or only 0-byte readings), their whole-day peak.
// With one part it is the recent-peak rule.
func partPeakOutcomes(days []dayPeak, horizon, parts int) []boundOutcome {
	var out []boundOutcome
	for i, d := range days {
		if !d.scored || i == 0 {
			continue
		}
		recent := days[recentStart(days, i, horizon):i]
		out = append(out, partsOutcome(d, parts, func(j int) float64 {
			level := 0.0
			for _, e := range recent {
				level = max(level, e.parts[parts][j].peak)
			}
			if level > 0 {
				return level
			}
			for _, e := range recent {
				level = max(level, e.peak)
			}
			return level
		}))
	}
	return out
}

// recentStart returns the first of the days a request for day i goes on,
// days[recentStart:i]: the days of the horizon before it, or the latest
// earlier day when none is that recent.
func recentStart(days []dayPeak, i, horizon int) int {
	j := i - 1
	for j > 0 && days[j-1].day >= days[i].day-horizon {
		j--
	}
	return j
}
