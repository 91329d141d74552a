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

package estimator

import (
	"errors"
	"fmt"
	"math"
	"time"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/recommender/model"
)

// AdaptiveName is the name of the Adaptive estimator.
const AdaptiveName = "adaptive"

// AdaptiveConfig holds the tunables of the Adaptive estimator's memory
// recommendation and its CPU target percentile; the rest of its CPU
// recommendation is the percentile chain of Config.
type AdaptiveConfig struct {
	// CPUTargetPercentile replaces Config.TargetCPUPercentile. Memory
	// requests that hold for days also hold the CPU request they were set
	// with, so CPU is targeted higher than the percentile chain's P90.
	CPUTargetPercentile float64
	// MemoryHorizons are the arms' horizons: an arm covers the highest
	// memory peak of roughly this much recent history.
	MemoryHorizons []time.Duration
	// MemoryMargins are the arms' safety margins over that peak.
	MemoryMargins []float64
	// MemoryOverrunCost weighs an arm's overrun (the share of the decayed
	// peak history above its level) against its headroom (the share of its
	// level above the typical peak).
	MemoryOverrunCost float64
	// MemoryYoungMargin is added to every arm's margin, divided by the
	// history length in days, while the history is short.
	MemoryYoungMargin float64
	// MemoryZeroFactor scales the margin added to every arm for peaks that
	// read as no usage at all: z/(1−z) with z their share of the weight.
	MemoryZeroFactor float64
	// MemoryMaxExtraMargin caps the young and zero margins together.
	MemoryMaxExtraMargin float64
	// MemoryRecordWindow is how recent a peak must be to count as a jump:
	// its bucket weighs at least as much as one peak recorded this long
	// before the latest sample.
	MemoryRecordWindow time.Duration
	// MemoryRecordFactor scales the margin over the highest recent peak by
	// how far it jumped above the next lower peak: top · (1 + factor·(jump
	// − 1)). After an OOM kill the bumped request is such a jump, and each
	// further kill in the window makes it larger, so repeated kills
	// escalate quickly. 0 turns it off.
	MemoryRecordFactor float64
	// MemoryRecordMaxMargin caps the margin over the highest recent peak.
	MemoryRecordMaxMargin float64
	// MemoryLowerBoundFraction places the lower bound below the target, as a
	// fraction of the chosen arm's peak.
	MemoryLowerBoundFraction float64
	// MemoryUpperBoundFactor places the upper bound above the target.
	MemoryUpperBoundFactor float64
}

// DefaultAdaptiveConfig returns the Adaptive estimator's defaults.
func DefaultAdaptiveConfig() AdaptiveConfig {
	day := 24 * time.Hour
	return AdaptiveConfig{
		CPUTargetPercentile:      0.93,
		MemoryHorizons:           []time.Duration{day, 2 * day, 4 * day, 7 * day, 14 * day, 28 * day},
		MemoryMargins:            []float64{0, 0.1, 0.2, 0.3, 0.5},
		MemoryOverrunCost:        256,
		MemoryYoungMargin:        3,
		MemoryZeroFactor:         0.2,
		MemoryMaxExtraMargin:     3,
		MemoryRecordWindow:       2 * day,
		MemoryRecordFactor:       2,
		MemoryRecordMaxMargin:    1,
		MemoryLowerBoundFraction: 1.0,
		MemoryUpperBoundFactor:   2.0,
	}
}

// Validate reports every invalid field.
func (c AdaptiveConfig) Validate() error {
	var errs []error
	if !(c.CPUTargetPercentile > 0 && c.CPUTargetPercentile <= 1) {
		errs = append(errs, fmt.Errorf("adaptive CPU target percentile must be in (0, 1], got %v", c.CPUTargetPercentile))
	}
	if len(c.MemoryHorizons) == 0 || len(c.MemoryMargins) == 0 {
		errs = append(errs, errors.New("adaptive memory horizons and margins must not be empty"))
	}
	if len(c.MemoryHorizons)*len(c.MemoryMargins) > 256 {
		errs = append(errs, fmt.Errorf("adaptive estimator: %d×%d arms is more than 256", len(c.MemoryHorizons), len(c.MemoryMargins)))
	}
	for _, h := range c.MemoryHorizons {
		if h <= 0 {
			errs = append(errs, fmt.Errorf("adaptive memory horizon must be > 0, got %v", h))
		}
	}
	if c.MemoryRecordWindow <= 0 {
		errs = append(errs, fmt.Errorf("adaptive memory record window must be > 0, got %v", c.MemoryRecordWindow))
	}
	finite := func(name string, v float64) {
		if !(v >= 0) || math.IsInf(v, 0) {
			errs = append(errs, fmt.Errorf("%s must be a finite number >= 0, got %v", name, v))
		}
	}
	for _, m := range c.MemoryMargins {
		finite("adaptive memory margin", m)
	}
	finite("adaptive memory overrun cost", c.MemoryOverrunCost)
	finite("adaptive memory young margin", c.MemoryYoungMargin)
	finite("adaptive memory zero factor", c.MemoryZeroFactor)
	finite("adaptive memory max extra margin", c.MemoryMaxExtraMargin)
	finite("adaptive memory record factor", c.MemoryRecordFactor)
	finite("adaptive memory record max margin", c.MemoryRecordMaxMargin)
	errs = append(errs, boundErrors("adaptive", c.MemoryLowerBoundFraction, c.MemoryUpperBoundFactor)...)
	return errors.Join(errs...)
}

// Adaptive recommends memory per workload from several arms (horizon ×
// margin), each scored against the workload's own decayed peak history by
// the peaks it leaves uncovered and the headroom it costs; the cheapest arm
// sets the target. CPU is the percentile chain. Everything is computed from
// the aggregate's histograms, so a restored checkpoint gives the same
// recommendation. See docs/algorithm.md, "The adaptive estimator".
type Adaptive struct {
	cfg        Config
	adaptive   AdaptiveConfig
	percentile *Percentile
}

var _ Explainer = (*Adaptive)(nil)

// NewAdaptive returns the Adaptive estimator.
func NewAdaptive(cfg Config, adaptive AdaptiveConfig) *Adaptive {
	cpu := cfg
	cpu.TargetCPUPercentile = adaptive.CPUTargetPercentile
	return &Adaptive{cfg: cfg, adaptive: adaptive, percentile: NewPercentile(cpu)}
}

// Name returns AdaptiveName.
func (p *Adaptive) Name() string { return AdaptiveName }

// Recommend implements Estimator.
func (p *Adaptive) Recommend(aggregates map[string]*model.AggregateState, policy *vpav1.PodResourcePolicy, annotations map[string]string) Result {
	return recommend(p.cfg, p.Estimate, aggregates, policy, annotations)
}

// Estimate returns the raw amounts for one aggregate: CPU from the percentile
// chain, memory from MemoryRule, each at least minimum.
func (p *Adaptive) Estimate(a *model.AggregateState, minimum Resources) Amounts {
	r := p.MemoryRule(&a.Memory, historySpan(a), a.LastSampleStart)
	return ruleEstimate(p.percentile, &r, a, minimum)
}

// Explain computes Estimate step by step, with the memory rule.
func (p *Adaptive) Explain(a *model.AggregateState, minimum Resources) Breakdown {
	return ruleExplain(p.percentile, p.MemoryRule(&a.Memory, historySpan(a), a.LastSampleStart), a, minimum)
}

// peakBucket is one non-empty bucket of a memory peak histogram above the
// first bucket: its upper edge (the value Percentile reports for it) and
// weight.
type peakBucket struct {
	edge, weight float64
}

// MemoryRule returns the memory rule, lower bound, target and upper bound
// in bytes, from a decaying histogram of window peaks. With the non-zero peaks
// (those above the first bucket, of weight share 1 − z):
//
//	Q(q)        = weighted q-quantile of the non-zero peaks (bucket upper edge)
//	extra       = min(young / max(days, 1) + zeroFactor · z/(1 − z), maxExtra)
//	level(h)    = Q(1 − 2^(−h/halfLife)/2)      highest peak of about the last h
//	L(h, m)     = level(h) · (1 + m + extra)    the arm's target
//	overrun(L)  = weight share of non-zero peaks whose bucket edge exceeds L
//	headroom(L) = 1 − Q(0.5)/L
//	cost        = headroom + overrunCost · overrun
//
// The arm of lowest cost (ties: the higher target) gives target = L. With
// recordFactor > 0, a recent peak that jumped above the peaks below it
// raises it (see record; recent means of the last recordWindow before now):
//
//	top         = edge of the highest bucket holding a recent peak
//	prior       = edge of the next non-empty bucket below top
//	target      = max(L, top · (1 + min(recordFactor · (top/prior − 1), recordMaxMargin)))
//
// After an OOM kill the bumped request is such a peak, and each further kill
// in the same window raises top while prior stays: the margin grows with
// every kill, so a workload far above its request needs few kills and
// updates to get there. The level is then top. lower = level ·
// lowerFraction and upper = target · upperFactor. A histogram holding only
// first-bucket peaks yields the first bucket's upper edge for all three.
func (p *Adaptive) MemoryRule(h *model.DecayingHistogram, history time.Duration, now time.Time) MemoryRule {
	var r MemoryRule
	if h.IsEmpty() {
		return r
	}
	hist := h.Histogram()
	zeroEdge := hist.Options().BucketStart(1)
	var buckets []peakBucket
	zeroWeight, total := 0.0, 0.0
	hist.Buckets(func(b int, _, w float64) {
		total += w
		if b == 0 {
			zeroWeight += w
			return
		}
		buckets = append(buckets, peakBucket{edge: hist.Options().BucketStart(b + 1), weight: w})
	})
	nonZero := total - zeroWeight
	if len(buckets) == 0 || !(nonZero > 0) {
		return zeroRule(zeroEdge)
	}
	z := zeroWeight / total
	r.ZeroShare = z
	quantile := func(q float64) float64 {
		threshold := q * nonZero
		sum := 0.0
		for _, b := range buckets {
			sum += b.weight
			if sum >= threshold {
				return b.edge
			}
		}
		return buckets[len(buckets)-1].edge
	}
	overrun := func(level float64) float64 {
		above := 0.0
		for i := len(buckets) - 1; i >= 0 && buckets[i].edge > level; i-- {
			above += buckets[i].weight
		}
		return above / nonZero
	}
	c := p.adaptive
	r.ZeroMargin = c.MemoryZeroFactor * z / (1 - z)
	extra := r.ZeroMargin
	if days := history.Hours() / 24; days > 0 {
		r.YoungMargin = c.MemoryYoungMargin / max(days, 1)
		extra += r.YoungMargin
	}
	extra = min(extra, c.MemoryMaxExtraMargin)
	typical := quantile(0.5)
	r.Typical = typical
	r.Cost = math.Inf(1)
	for _, hz := range c.MemoryHorizons {
		q := 1 - math.Exp2(-float64(hz)/float64(h.HalfLife()))/2
		level := quantile(q)
		for _, m := range c.MemoryMargins {
			l := level * (1 + m + extra)
			headroom, over := 1-typical/l, overrun(l)
			cost := headroom + c.MemoryOverrunCost*over
			r.Arms++
			if cost < r.Cost || (cost == r.Cost && l > r.Covered) {
				r.Cost, r.Covered, r.Level, r.Headroom, r.Overrun = cost, l, level, headroom, over
				r.Horizon, r.LevelPercentile, r.BaseMargin = hz, z+q*(1-z), m
			}
		}
	}
	r.Margin = r.BaseMargin + extra
	target, level := r.Covered, r.Level
	if c.MemoryRecordFactor > 0 {
		if i, ok := record(h, buckets, now, c.MemoryRecordWindow); ok {
			j := &r.Jump
			j.Found, j.Top, j.Prior = true, buckets[i].edge, buckets[i-1].edge
			j.Margin = min(c.MemoryRecordFactor*(j.Top/j.Prior-1), c.MemoryRecordMaxMargin)
			j.Covered = j.Top * (1 + j.Margin)
			if j.Covered > target {
				j.Raised = true
				target, level = j.Covered, j.Top
			}
			below := zeroWeight
			for _, b := range buckets[:i+1] {
				below += b.weight
			}
			j.Percentile = below / total
		}
	}
	levelAmount := model.MemoryAmountFromBytes(level)
	r.Target = model.MemoryAmountFromBytes(target)
	r.Lower = model.ScaleResource(levelAmount, c.MemoryLowerBoundFraction)
	r.Upper = model.ScaleResource(r.Target, c.MemoryUpperBoundFactor)
	return r
}

// record returns the index in buckets of the highest peak bucket holding a
// peak of the last window before now; the next non-empty bucket below it is
// the one before. A bucket holds a recent peak when it weighs at least as
// much as one peak recorded window before now; several older peaks in one
// bucket can weigh as much, which only makes a bucket look recent. ok is
// false without such a bucket or without one below it.
func record(h *model.DecayingHistogram, buckets []peakBucket, now time.Time, window time.Duration) (top int, ok bool) {
	if now.IsZero() {
		// No CPU sample yet: no time to measure recency against.
		return 0, false
	}
	recent := math.Exp2(float64(now.Sub(h.ReferenceTimestamp())-window) / float64(h.HalfLife()))
	i := len(buckets) - 1
	for i >= 0 && buckets[i].weight < recent {
		i--
	}
	if i < 1 {
		return 0, false
	}
	return i, true
}
