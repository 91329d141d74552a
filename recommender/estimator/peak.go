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

// PeakName is the name of the Peak estimator.
const PeakName = "peak"

// PeakConfig holds the tunables of the Peak estimator's memory
// recommendation; CPU follows the percentile chain of Config.
type PeakConfig struct {
	// MemoryHorizon is how far back a memory peak keeps counting at full
	// height: the target covers the highest peak of roughly this much recent
	// history (older peaks fade with the histogram's half-life).
	MemoryHorizon time.Duration
	// MemoryMargin is the safety margin added to a workload whose recent
	// peaks are all alike.
	MemoryMargin float64
	// MemoryVariabilityFactor scales the extra margin taken from the
	// workload's own variability: the relative distance between its highest
	// recent peak and its typical (median) peak.
	MemoryVariabilityFactor float64
	// MemoryYoungMargin is added, divided by the history length in days,
	// while the history is short.
	MemoryYoungMargin float64
	// MemoryZeroFactor scales the margin added for peaks that read as no
	// usage at all: z/(1−z) with z their share of the peaks' weight.
	MemoryZeroFactor float64
	// MemoryMaxMargin caps the total margin.
	MemoryMaxMargin float64
	// MemoryLowerBoundFraction places the lower bound below the target:
	// a request under lowerBound = peak × fraction is updated at once.
	MemoryLowerBoundFraction float64
	// MemoryUpperBoundFactor places the upper bound above the target.
	MemoryUpperBoundFactor float64
}

// DefaultPeakConfig returns the Peak estimator's defaults.
func DefaultPeakConfig() PeakConfig {
	return PeakConfig{
		MemoryHorizon:            14 * 24 * time.Hour,
		MemoryMargin:             0.15,
		MemoryVariabilityFactor:  0,
		MemoryYoungMargin:        0.5,
		MemoryZeroFactor:         0.2,
		MemoryMaxMargin:          1.0,
		MemoryLowerBoundFraction: 1.0,
		MemoryUpperBoundFactor:   2.0,
	}
}

// Validate reports every invalid field.
func (c PeakConfig) Validate() error {
	var errs []error
	if c.MemoryHorizon <= 0 {
		errs = append(errs, fmt.Errorf("peak memory horizon must be > 0, got %v", c.MemoryHorizon))
	}
	for _, f := range []struct {
		name string
		v    float64
	}{
		{"peak memory margin", c.MemoryMargin},
		{"peak memory variability factor", c.MemoryVariabilityFactor},
		{"peak memory max margin", c.MemoryMaxMargin},
		{"peak memory young margin", c.MemoryYoungMargin},
		{"peak memory zero factor", c.MemoryZeroFactor},
	} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) {
			errs = append(errs, fmt.Errorf("%s must be a finite number >= 0, got %v", f.name, f.v))
		}
	}
	errs = append(errs, boundErrors("peak", c.MemoryLowerBoundFraction, c.MemoryUpperBoundFactor)...)
	return errors.Join(errs...)
}

// Peak recommends memory from the highest recent window peak plus a margin
// derived from the workload's own variability; CPU is the percentile chain.
// See docs/algorithm.md, "The peak estimator".
type Peak struct {
	cfg        Config
	peak       PeakConfig
	percentile *Percentile
}

var _ Explainer = (*Peak)(nil)

// NewPeak returns the Peak estimator.
func NewPeak(cfg Config, peak PeakConfig) *Peak {
	return &Peak{cfg: cfg, peak: peak, percentile: NewPercentile(cfg)}
}

// Name returns PeakName.
func (p *Peak) Name() string { return PeakName }

// Recommend implements Estimator.
func (p *Peak) Recommend(aggregates map[string]*model.AggregateState, policy *vpav1.PodResourcePolicy, annotations map[string]string) Result {
	return recommend(p.cfg, p.Estimate, aggregates, policy, annotations)
}

// Estimate returns the raw amounts for one aggregate: CPU from the percentile
// chain, memory from MemoryRule, each at least minimum.
func (p *Peak) Estimate(a *model.AggregateState, minimum Resources) Amounts {
	r := p.MemoryRule(&a.Memory, historySpan(a))
	return ruleEstimate(p.percentile, &r, a, minimum)
}

// Explain computes Estimate step by step, with the memory rule.
func (p *Peak) Explain(a *model.AggregateState, minimum Resources) Breakdown {
	return ruleExplain(p.percentile, p.MemoryRule(&a.Memory, historySpan(a)), a, minimum)
}

// boundErrors checks the lower bound fraction (in (0, 1]) and the upper
// bound factor (finite, at least 1) of a memory estimator named name.
func boundErrors(name string, lowerFraction, upperFactor float64) []error {
	var errs []error
	if !(lowerFraction > 0 && lowerFraction <= 1) {
		errs = append(errs, fmt.Errorf("%s memory lower bound fraction must be in (0, 1], got %v", name, lowerFraction))
	}
	if !(upperFactor >= 1) || math.IsInf(upperFactor, 0) {
		errs = append(errs, fmt.Errorf("%s memory upper bound factor must be a finite number >= 1, got %v", name, upperFactor))
	}
	return errs
}

// MemoryRule returns the memory rule, lower bound, target and upper bound
// in bytes, from a decaying histogram of window peaks:
//
//	z      = share of the weight in the first bucket (peaks of "no usage")
//	Q(q)   = Percentile(z + q·(1 − z))   (quantile among the non-zero peaks)
//	ε      = 2^(−horizon/halfLife) / 2
//	high   = Q(1 − ε)                    (highest peak of the recent horizon)
//	typ    = Q(0.5)                      (typical peak)
//	margin = min(MemoryMargin + MemoryVariabilityFactor·(high/typ − 1)
//	             + MemoryYoungMargin/max(days, 1) + MemoryZeroFactor·z/(1 − z), MemoryMaxMargin)
//	target = high · (1 + margin)
//	lower  = high · MemoryLowerBoundFraction
//	upper  = target · MemoryUpperBoundFactor
//
// A histogram holding only first-bucket peaks yields the first bucket's
// upper edge for all three.
func (p *Peak) MemoryRule(h *model.DecayingHistogram, history time.Duration) MemoryRule {
	var r MemoryRule
	if h.IsEmpty() {
		return r
	}
	hist := h.Histogram()
	zeroEdge := hist.Options().BucketStart(1)
	// Find the share z of the weight that sits in the first bucket: the
	// largest p whose percentile is still the first bucket's upper edge.
	z := 0.0
	if h.Percentile(0) <= zeroEdge {
		lo, hi := 0.0, 1.0
		for range 40 {
			mid := (lo + hi) / 2
			if h.Percentile(mid) <= zeroEdge {
				lo = mid
			} else {
				hi = mid
			}
		}
		z = lo
	}
	if z >= 1-1e-9 || h.Percentile(1) <= zeroEdge {
		return zeroRule(zeroEdge)
	}
	r.ZeroShare = z
	r.Horizon = p.peak.MemoryHorizon
	eps := math.Exp2(-float64(p.peak.MemoryHorizon)/float64(h.HalfLife())) / 2
	// Q(1 − ε) and Q(0.5), Q(x) = Percentile(z + x·(1 − z)).
	r.LevelPercentile = z + (1-eps)*(1-z)
	high := h.Percentile(r.LevelPercentile)
	typ := h.Percentile(z + 0.5*(1-z))
	r.Level, r.Typical = high, typ
	margin := p.peak.MemoryMargin
	r.BaseMargin = margin
	if typ > 0 {
		r.VariabilityMargin = p.peak.MemoryVariabilityFactor * (high/typ - 1)
		margin += r.VariabilityMargin
	}
	if days := history.Hours() / 24; days > 0 {
		r.YoungMargin = p.peak.MemoryYoungMargin / max(days, 1)
		margin += r.YoungMargin
	}
	r.ZeroMargin = p.peak.MemoryZeroFactor * z / (1 - z)
	margin += r.ZeroMargin
	margin = min(margin, p.peak.MemoryMaxMargin)
	r.Margin = margin
	r.Covered = high * (1 + margin)
	highAmount := model.MemoryAmountFromBytes(high)
	r.Target = highAmount + model.ScaleResource(highAmount, margin)
	r.Lower = model.ScaleResource(highAmount, p.peak.MemoryLowerBoundFraction)
	r.Upper = model.ScaleResource(r.Target, p.peak.MemoryUpperBoundFactor)
	return r
}

// zeroRule is the rule of a histogram whose peaks all read as no usage:
// the first bucket's upper edge for everything.
func zeroRule(zeroEdge float64) MemoryRule {
	e := model.MemoryAmountFromBytes(zeroEdge)
	return MemoryRule{ZeroShare: 1, Level: zeroEdge, LevelPercentile: 1, Covered: zeroEdge, Lower: e, Target: e, Upper: e}
}
