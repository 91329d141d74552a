package replay

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/openvpa/openvpa/recommender/estimator"
	"github.com/openvpa/openvpa/recommender/model"
)

// CommandOptions are the flags of `vpa-recommender replay`.
type CommandOptions struct {
	Trace       string
	InputFormat string
	Estimator   string
	Out         string
	Sweep       bool
	Quiet       bool

	Estimators estimator.Options
	Model      model.Config
	// PodUpdateThreshold and PodLifetimeUpdateThreshold are the updater's
	// --pod-update-threshold and
	// --in-recommendation-bounds-eviction-lifetime-threshold.
	PodUpdateThreshold         float64
	PodLifetimeUpdateThreshold time.Duration
}

// NewCommandOptions returns the defaults: upstream's for every recommender
// and updater flag.
func NewCommandOptions() *CommandOptions {
	return &CommandOptions{
		InputFormat:                FormatNative,
		Estimator:                  estimator.PercentileName,
		Out:                        "replay-out",
		Estimators:                 estimator.DefaultOptions(),
		Model:                      *model.DefaultConfig(),
		PodUpdateThreshold:         0.1,
		PodLifetimeUpdateThreshold: 12 * time.Hour,
	}
}

// AddFlags registers the replay's flags on fs.
func (o *CommandOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Trace, "trace", o.Trace, "Usage trace to replay (CSV, optionally gzipped); see docs/replay.md for the format.")
	fs.StringVar(&o.InputFormat, "input-format", o.InputFormat, fmt.Sprintf("Format of --trace: one of %v. %q reads the derived Bitbrains GWA-T-12 file.", Formats, FormatBitbrains))
	fs.StringVar(&o.Estimator, "estimator", o.Estimator, fmt.Sprintf("Estimator to score: one of %v.", estimator.Names()))
	fs.StringVar(&o.Out, "out", o.Out, "Directory for summary.json, days.csv and the SVG plots (created if missing).")
	fs.BoolVar(&o.Sweep, "sweep", o.Sweep, "Also sweep every estimator over its knobs and write sweep.csv and the frontier to frontier.svg.")
	fs.BoolVar(&o.Quiet, "quiet", o.Quiet, "Do not report progress on stderr.")
	AddEstimatorFlags(fs, &o.Estimators)
	AddModelFlags(fs, &o.Model)
	fs.Float64Var(&o.PodUpdateThreshold, "pod-update-threshold", o.PodUpdateThreshold, "Updater: minimum relative change of requests for a pod within its bounds.")
	fs.DurationVar(&o.PodLifetimeUpdateThreshold, "in-recommendation-bounds-eviction-lifetime-threshold", o.PodLifetimeUpdateThreshold, "Updater: minimum age of a pod within its bounds before it is updated.")
}

// AddEstimatorFlags registers the estimator tunables under the recommender's
// flag names and defaults, plus the peak estimator's own.
func AddEstimatorFlags(fs *pflag.FlagSet, o *estimator.Options) {
	c := &o.Config
	fs.Float64Var(&c.TargetCPUPercentile, "target-cpu-percentile", c.TargetCPUPercentile, "CPU usage percentile that will be used as a base for CPU target recommendation.")
	fs.Float64Var(&c.LowerBoundCPUPercentile, "recommendation-lower-bound-cpu-percentile", c.LowerBoundCPUPercentile, "CPU usage percentile that will be used for the lower bound on CPU recommendation.")
	fs.Float64Var(&c.UpperBoundCPUPercentile, "recommendation-upper-bound-cpu-percentile", c.UpperBoundCPUPercentile, "CPU usage percentile that will be used for the upper bound on CPU recommendation.")
	fs.Float64Var(&c.TargetMemoryPercentile, "target-memory-percentile", c.TargetMemoryPercentile, "Memory usage percentile that will be used as a base for memory target recommendation.")
	fs.Float64Var(&c.LowerBoundMemoryPercentile, "recommendation-lower-bound-memory-percentile", c.LowerBoundMemoryPercentile, "Memory usage percentile that will be used for the lower bound on memory recommendation.")
	fs.Float64Var(&c.UpperBoundMemoryPercentile, "recommendation-upper-bound-memory-percentile", c.UpperBoundMemoryPercentile, "Memory usage percentile that will be used for the upper bound on memory recommendation.")
	fs.DurationVar(&c.ConfidenceIntervalCPU, "confidence-interval-cpu", c.ConfidenceIntervalCPU, "The time interval used for computing the confidence multiplier for the CPU lower and upper bound.")
	fs.DurationVar(&c.ConfidenceIntervalMemory, "confidence-interval-memory", c.ConfidenceIntervalMemory, "The time interval used for computing the confidence multiplier for the memory lower and upper bound.")
	fs.Float64Var(&c.MarginFraction, "recommendation-margin-fraction", c.MarginFraction, "Fraction of usage added as the safety margin to the recommended request.")
	fs.Float64Var(&c.PodMinCPUMillicores, "pod-recommendation-min-cpu-millicores", c.PodMinCPUMillicores, "Minimum CPU recommendation for a pod, in millicores.")
	fs.Float64Var(&c.PodMinMemoryMb, "pod-recommendation-min-memory-mb", c.PodMinMemoryMb, "Minimum memory recommendation for a pod, in MiB.")
	fs.IntVar(&c.RoundCPUMillicores, "round-cpu-millicores", c.RoundCPUMillicores, "CPU recommendations are rounded up to a multiple of this many millicores.")
	fs.IntVar(&c.RoundMemoryBytes, "round-memory-bytes", c.RoundMemoryBytes, "Memory recommendations are rounded up to a multiple of this many bytes.")
	p := &o.Peak
	fs.DurationVar(&p.MemoryHorizon, "peak-memory-horizon", p.MemoryHorizon, "Peak estimator: how much recent history of memory peaks the target covers.")
	fs.Float64Var(&p.MemoryMargin, "peak-memory-margin", p.MemoryMargin, "Peak estimator: base safety margin over the highest recent memory peak.")
	fs.Float64Var(&p.MemoryVariabilityFactor, "peak-memory-variability-factor", p.MemoryVariabilityFactor, "Peak estimator: extra margin per unit of (highest recent peak / median peak - 1).")
	fs.Float64Var(&p.MemoryYoungMargin, "peak-memory-young-margin", p.MemoryYoungMargin, "Peak estimator: extra margin divided by the history length in days (at least 1).")
	fs.Float64Var(&p.MemoryZeroFactor, "peak-memory-zero-factor", p.MemoryZeroFactor, "Peak estimator: extra margin per unit of z/(1-z), z the weight share of peaks that read as no usage.")
	fs.Float64Var(&p.MemoryMaxMargin, "peak-memory-max-margin", p.MemoryMaxMargin, "Peak estimator: cap on the total margin.")
	fs.Float64Var(&p.MemoryLowerBoundFraction, "peak-memory-lower-bound-fraction", p.MemoryLowerBoundFraction, "Peak estimator: lower bound as a fraction of the highest recent peak.")
	fs.Float64Var(&p.MemoryUpperBoundFactor, "peak-memory-upper-bound-factor", p.MemoryUpperBoundFactor, "Peak estimator: upper bound as a multiple of the target.")
}

// AddModelFlags registers the model tunables under the recommender's flag
// names and defaults.
func AddModelFlags(fs *pflag.FlagSet, c *model.Config) {
	fs.DurationVar(&c.CPUHistogramDecayHalfLife, "cpu-histogram-decay-half-life", c.CPUHistogramDecayHalfLife, "The amount of time it takes a historical CPU usage sample to lose half of its weight.")
	fs.DurationVar(&c.MemoryHistogramDecayHalfLife, "memory-histogram-decay-half-life", c.MemoryHistogramDecayHalfLife, "The amount of time it takes a historical memory usage sample to lose half of its weight.")
	fs.DurationVar(&c.MemoryAggregationInterval, "memory-aggregation-interval", c.MemoryAggregationInterval, "The length of a single interval, for which the peak memory usage is computed.")
	fs.Int64Var(&c.MemoryAggregationIntervalCount, "memory-aggregation-interval-count", c.MemoryAggregationIntervalCount, "The number of consecutive memory-aggregation-intervals which make up the memory history window.")
	fs.Float64Var(&c.OOMBumpUpRatio, "oom-bump-up-ratio", c.OOMBumpUpRatio, "The memory bump up ratio when an OOM occurred (the replay records no OOM kills; accepted for parity).")
	fs.Float64Var(&c.OOMMinBumpUpBytes, "oom-min-bump-up-bytes", c.OOMMinBumpUpBytes, "The minimal increase of memory when an OOM occurred, in bytes (accepted for parity).")
}

// Validate reports every invalid option.
func (o *CommandOptions) Validate() error {
	var errs []error
	if o.Trace == "" {
		errs = append(errs, errors.New("--trace is required"))
	}
	if o.Out == "" {
		errs = append(errs, errors.New("--out must not be empty"))
	}
	if _, err := estimator.Build(o.Estimator, o.Estimators); err != nil {
		errs = append(errs, err)
	}
	if err := o.Model.Validate(); err != nil {
		errs = append(errs, err)
	}
	if !(o.PodUpdateThreshold >= 0) {
		errs = append(errs, fmt.Errorf("--pod-update-threshold must be >= 0, got %v", o.PodUpdateThreshold))
	}
	if o.PodLifetimeUpdateThreshold < 0 {
		errs = append(errs, fmt.Errorf("--in-recommendation-bounds-eviction-lifetime-threshold must be >= 0, got %v", o.PodLifetimeUpdateThreshold))
	}
	return errors.Join(errs...)
}
