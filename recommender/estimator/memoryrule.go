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
	"time"

	"github.com/openvpa/openvpa/recommender/model"
)

// MemoryRule is how the Peak and Adaptive estimators derive a container's
// memory recommendation from its histogram of window peaks: the one
// computation their Estimate reads its memory amounts from, and their
// Explain shows. Byte values are float64, as the estimators compute them
// (bucket upper edges and their products); the amounts are what Estimate
// uses before the pod minimum.
//
// With no peaks every field is zero. When every peak reads as no usage,
// ZeroShare is 1 and Level, Covered and the amounts are the first bucket's
// upper edge, with no margin.
type MemoryRule struct {
	// ZeroShare is the share of the peaks' weight in the first bucket:
	// peaks that read as no usage at all.
	ZeroShare float64
	// Typical is the median of the non-zero peaks, in bytes.
	Typical float64
	// Horizon is how much recent history Level covers: the Peak estimator's
	// horizon or the chosen arm's.
	Horizon time.Duration
	// Level is the highest peak of about Horizon, in bytes: the histogram's
	// value at LevelPercentile.
	Level float64
	// LevelPercentile is the percentile of the whole peak histogram (zero
	// readings included) that Level is read at.
	LevelPercentile float64

	// BaseMargin is the Peak estimator's base margin, or the chosen arm's.
	BaseMargin float64
	// VariabilityMargin is the Peak estimator's margin for the distance
	// between Level and Typical (0 for Adaptive).
	VariabilityMargin float64
	// YoungMargin is the margin for a short history.
	YoungMargin float64
	// ZeroMargin is the margin for the zero readings.
	ZeroMargin float64
	// Margin is the total margin after the caps (the Peak estimator's
	// maximum margin; the Adaptive estimator's cap on the young and zero
	// margins together).
	Margin float64
	// Covered is Level × (1 + Margin), in bytes: what the rule covers.
	Covered float64

	// Arms is the number of arms the Adaptive estimator scored (0 for
	// Peak).
	Arms int
	// Headroom, Overrun and Cost are the chosen arm's score: Headroom =
	// 1 − Typical/Covered, Overrun the weight share of the non-zero peaks
	// above Covered, Cost = Headroom + overrun cost × Overrun.
	Headroom, Overrun, Cost float64
	// Jump is the Adaptive estimator's recent jump.
	Jump MemoryJump

	// Lower, Target and Upper are the memory amounts of the rule.
	Lower, Target, Upper model.ResourceAmount
}

// MemoryJump is the Adaptive estimator's recent jump: the highest bucket
// holding a peak of the record window, over the next non-empty bucket
// below it.
type MemoryJump struct {
	// Found is whether a recent peak above another peak was found.
	Found bool
	// Top is the upper edge of the highest bucket holding a recent peak,
	// Prior that of the next non-empty bucket below it, in bytes.
	Top, Prior float64
	// Percentile is the share of the peaks' weight up to and including
	// Top's bucket: the highest percentile whose value is Top.
	Percentile float64
	// Margin is min(record factor × (Top/Prior − 1), record max margin).
	Margin float64
	// Covered is Top × (1 + Margin), in bytes.
	Covered float64
	// Raised is whether Covered exceeds the chosen arm's and so sets the
	// target (and Top the lower bound).
	Raised bool
}

// Peak returns the peak the target covers, in bytes, and its percentile:
// the jump's top when it set the target, else Level.
func (r *MemoryRule) Peak() (bytes, percentile float64) {
	if r.Jump.Raised {
		return r.Jump.Top, r.Jump.Percentile
	}
	return r.Level, r.LevelPercentile
}

// steps returns the memory steps of the rule, each at least minimum: from
// the peak the target covers (Raw) through the rule's target (WithMargin;
// the peak itself for the lower bound) to the rule's amount
// (WithConfidence), with no confidence scaling.
func (r *MemoryRule) steps(minimum model.ResourceAmount) ResourceSteps {
	b, pct := r.Peak()
	peak := model.MemoryAmountFromBytes(b)
	step := func(withMargin, amount model.ResourceAmount) Step {
		return Step{Percentile: pct, Raw: peak, WithMargin: withMargin, WithConfidence: amount, Minimum: minimum, Final: max(amount, minimum)}
	}
	return ResourceSteps{
		Target:     step(r.Target, r.Target),
		LowerBound: step(peak, r.Lower),
		UpperBound: step(r.Target, r.Upper),
	}
}

// ruleEstimate returns the percentile chain's amounts for a with memory
// from r instead, each at least minimum: the Estimate of the estimators that
// only change memory.
func ruleEstimate(pc *Percentile, r *MemoryRule, a *model.AggregateState, minimum Resources) Amounts {
	out := pc.Estimate(a, minimum)
	out.Target.Memory = max(r.Target, minimum.Memory)
	out.LowerBound.Memory = max(r.Lower, minimum.Memory)
	out.UpperBound.Memory = max(r.Upper, minimum.Memory)
	return out
}

// ruleExplain is ruleEstimate step by step.
func ruleExplain(pc *Percentile, r MemoryRule, a *model.AggregateState, minimum Resources) Breakdown {
	b := pc.Explain(a, minimum)
	b.Memory = r.steps(minimum.Memory)
	b.MemoryRule = &r
	return b
}

// historySpan is the span of a's samples, which the young margins are divided
// by.
func historySpan(a *model.AggregateState) time.Duration {
	return a.LastSampleStart.Sub(a.FirstSampleStart)
}
