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

// Package tunables registers the recommender's estimator and model flags
// (the numbers its recommendations are computed with) and checks them. The
// recommender and kubectl-vpa's explain and replay register the
// same flags from here, so that the same flags give the same numbers; the
// package links nothing but pflag, the estimator and the model.
package tunables

import (
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/openvpa/openvpa/recommender/estimator"
	"github.com/openvpa/openvpa/recommender/model"
)

// Validate reports an unknown estimator name (--estimator) or invalid
// estimator settings, and invalid model settings, with the recommender's
// messages.
func Validate(name string, o estimator.Options, m model.Config) error {
	var errs []error
	if err := m.Validate(); err != nil {
		errs = append(errs, err)
	}
	if _, err := estimator.New(name, o); err != nil {
		errs = append(errs, fmt.Errorf("--estimator: %w", err))
	}
	return errors.Join(errs...)
}

// AddEstimatorFlags registers the estimators' tunables under upstream's flag
// names and defaults, plus the peak and adaptive estimators' own.
func AddEstimatorFlags(fs *pflag.FlagSet, o *estimator.Options) {
	e := &o.Config
	fs.Float64Var(&e.MarginFraction, "recommendation-margin-fraction", e.MarginFraction, "Fraction of usage added as the safety margin to the recommended request")
	fs.Float64Var(&e.PodMinCPUMillicores, "pod-recommendation-min-cpu-millicores", e.PodMinCPUMillicores, "Minimum CPU recommendation for a pod")
	fs.Float64Var(&e.PodMinMemoryMb, "pod-recommendation-min-memory-mb", e.PodMinMemoryMb, "Minimum memory recommendation for a pod")
	fs.Float64Var(&e.TargetCPUPercentile, "target-cpu-percentile", e.TargetCPUPercentile, "CPU usage percentile that will be used as a base for CPU target recommendation. Doesn't affect CPU lower bound, CPU upper bound nor memory recommendations.")
	fs.Float64Var(&e.LowerBoundCPUPercentile, "recommendation-lower-bound-cpu-percentile", e.LowerBoundCPUPercentile, "CPU usage percentile that will be used for the lower bound on CPU recommendation.")
	fs.Float64Var(&e.UpperBoundCPUPercentile, "recommendation-upper-bound-cpu-percentile", e.UpperBoundCPUPercentile, "CPU usage percentile that will be used for the upper bound on CPU recommendation.")
	fs.DurationVar(&e.ConfidenceIntervalCPU, "confidence-interval-cpu", e.ConfidenceIntervalCPU, "The time interval used for computing the confidence multiplier for the CPU lower and upper bound. Default: 24h")
	fs.Float64Var(&e.TargetMemoryPercentile, "target-memory-percentile", e.TargetMemoryPercentile, "Memory usage percentile that will be used as a base for memory target recommendation. Doesn't affect memory lower bound nor memory upper bound.")
	fs.Float64Var(&e.LowerBoundMemoryPercentile, "recommendation-lower-bound-memory-percentile", e.LowerBoundMemoryPercentile, "Memory usage percentile that will be used for the lower bound on memory recommendation.")
	fs.Float64Var(&e.UpperBoundMemoryPercentile, "recommendation-upper-bound-memory-percentile", e.UpperBoundMemoryPercentile, "Memory usage percentile that will be used for the upper bound on memory recommendation.")
	fs.DurationVar(&e.ConfidenceIntervalMemory, "confidence-interval-memory", e.ConfidenceIntervalMemory, "The time interval used for computing the confidence multiplier for the memory lower and upper bound. Default: 24h")
	fs.BoolVar(&e.HumanizeMemory, "humanize-memory", e.HumanizeMemory, "DEPRECATED: Convert memory values in recommendations to the highest appropriate SI unit with up to 2 decimal places for better readability.")
	fs.IntVar(&e.RoundCPUMillicores, "round-cpu-millicores", e.RoundCPUMillicores, "CPU recommendation rounding factor in millicores. The CPU value will always be rounded up to the nearest multiple of this factor.")
	fs.IntVar(&e.RoundMemoryBytes, "round-memory-bytes", e.RoundMemoryBytes, "Memory recommendation rounding factor in bytes. The Memory value will always be rounded up to the nearest multiple of this factor.")
	fs.BoolVar(&e.CPUIntegerPostProcessorEnabled, "cpu-integer-post-processor-enabled", e.CPUIntegerPostProcessorEnabled, "Enable the cpu-integer recommendation post processor. The post processor will round up CPU recommendations to a whole CPU for pods which were opted in by setting an appropriate label on VPA object (experimental)")
	p := &o.Peak
	fs.DurationVar(&p.MemoryHorizon, "peak-memory-horizon", p.MemoryHorizon, "Peak estimator: how much recent history of memory peaks the target covers.")
	fs.Float64Var(&p.MemoryMargin, "peak-memory-margin", p.MemoryMargin, "Peak estimator: base safety margin over the highest recent memory peak.")
	fs.Float64Var(&p.MemoryVariabilityFactor, "peak-memory-variability-factor", p.MemoryVariabilityFactor, "Peak estimator: extra margin per unit of (highest recent peak / median peak - 1).")
	fs.Float64Var(&p.MemoryYoungMargin, "peak-memory-young-margin", p.MemoryYoungMargin, "Peak estimator: extra margin divided by the history length in days (at least 1).")
	fs.Float64Var(&p.MemoryZeroFactor, "peak-memory-zero-factor", p.MemoryZeroFactor, "Peak estimator: extra margin per unit of z/(1-z), z the weight share of peaks that read as no usage.")
	fs.Float64Var(&p.MemoryMaxMargin, "peak-memory-max-margin", p.MemoryMaxMargin, "Peak estimator: cap on the total margin.")
	fs.Float64Var(&p.MemoryLowerBoundFraction, "peak-memory-lower-bound-fraction", p.MemoryLowerBoundFraction, "Peak estimator: lower bound as a fraction of the highest recent peak.")
	fs.Float64Var(&p.MemoryUpperBoundFactor, "peak-memory-upper-bound-factor", p.MemoryUpperBoundFactor, "Peak estimator: upper bound as a multiple of the target.")
	ad := &o.Adaptive
	fs.Float64Var(&ad.CPUTargetPercentile, "adaptive-cpu-target-percentile", ad.CPUTargetPercentile, "Adaptive estimator: CPU usage percentile for the CPU target, in place of --target-cpu-percentile; at most --recommendation-upper-bound-cpu-percentile.")
	fs.DurationSliceVar(&ad.MemoryHorizons, "adaptive-memory-horizons", ad.MemoryHorizons, "Adaptive estimator: the arms' horizons, how much recent history of memory peaks each arm covers.")
	fs.Float64SliceVar(&ad.MemoryMargins, "adaptive-memory-margins", ad.MemoryMargins, "Adaptive estimator: the arms' safety margins over their peak.")
	fs.Float64Var(&ad.MemoryOverrunCost, "adaptive-memory-overrun-cost", ad.MemoryOverrunCost, "Adaptive estimator: cost of the share of past memory peaks an arm leaves uncovered, against the headroom it costs; higher is safer.")
	fs.Float64Var(&ad.MemoryYoungMargin, "adaptive-memory-young-margin", ad.MemoryYoungMargin, "Adaptive estimator: extra margin divided by the history length in days (at least 1).")
	fs.Float64Var(&ad.MemoryZeroFactor, "adaptive-memory-zero-factor", ad.MemoryZeroFactor, "Adaptive estimator: extra margin per unit of z/(1-z), z the weight share of peaks that read as no usage.")
	fs.Float64Var(&ad.MemoryMaxExtraMargin, "adaptive-memory-max-extra-margin", ad.MemoryMaxExtraMargin, "Adaptive estimator: cap on the young and zero margins together.")
	fs.DurationVar(&ad.MemoryRecordWindow, "adaptive-memory-record-window", ad.MemoryRecordWindow, "Adaptive estimator: how recent a memory peak must be to count as a jump above the peaks below it.")
	fs.Float64Var(&ad.MemoryRecordFactor, "adaptive-memory-record-factor", ad.MemoryRecordFactor, "Adaptive estimator: margin over the highest recent memory peak per unit of its jump (its value / the next lower peak - 1); 0 turns it off.")
	fs.Float64Var(&ad.MemoryRecordMaxMargin, "adaptive-memory-record-max-margin", ad.MemoryRecordMaxMargin, "Adaptive estimator: cap on the margin over the highest recent memory peak.")
	fs.Float64Var(&ad.MemoryLowerBoundFraction, "adaptive-memory-lower-bound-fraction", ad.MemoryLowerBoundFraction, "Adaptive estimator: lower bound as a fraction of the chosen arm's peak.")
	fs.Float64Var(&ad.MemoryUpperBoundFactor, "adaptive-memory-upper-bound-factor", ad.MemoryUpperBoundFactor, "Adaptive estimator: upper bound as a multiple of the target.")
}

// AddModelFlags registers the model's tunables (histogram half-lives, memory
// windows, OOM bump) under upstream's flag names and defaults.
func AddModelFlags(fs *pflag.FlagSet, m *model.Config) {
	fs.DurationVar(&m.MemoryAggregationInterval, "memory-aggregation-interval", m.MemoryAggregationInterval, "The length of a single interval, for which the peak memory usage is computed. Memory usage peaks are aggregated in multiples of this interval. In other words there is one memory usage sample per interval (the maximum usage over that interval)")
	fs.Int64Var(&m.MemoryAggregationIntervalCount, "memory-aggregation-interval-count", m.MemoryAggregationIntervalCount, "The number of consecutive memory-aggregation-intervals which make up the MemoryAggregationWindowLength which in turn is the period for memory usage aggregation by VPA. In other words, `MemoryAggregationWindowLength = memory-aggregation-interval * memory-aggregation-interval-count`.")
	fs.DurationVar(&m.MemoryHistogramDecayHalfLife, "memory-histogram-decay-half-life", m.MemoryHistogramDecayHalfLife, "The amount of time it takes a historical memory usage sample to lose half of its weight. In other words, a fresh usage sample is twice as 'important' as one with age equal to the half life period.")
	fs.DurationVar(&m.CPUHistogramDecayHalfLife, "cpu-histogram-decay-half-life", m.CPUHistogramDecayHalfLife, "The amount of time it takes a historical CPU usage sample to lose half of its weight.")
	fs.Float64Var(&m.OOMBumpUpRatio, "oom-bump-up-ratio", m.OOMBumpUpRatio, "Default memory bump up ratio when OOM occurs. This value applies to all VPAs unless overridden in the VPA spec.")
	fs.Float64Var(&m.OOMMinBumpUpBytes, "oom-min-bump-up-bytes", m.OOMMinBumpUpBytes, "Default minimal increase of memory (in bytes) when OOM occurs. This value applies to all VPAs unless overridden in the VPA spec.")
}
