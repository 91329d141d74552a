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
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/openvpa/openvpa/recommender/app/options/tunables"
	"github.com/openvpa/openvpa/recommender/estimator"
	"github.com/openvpa/openvpa/recommender/model"
)

// CommandOptions are the flags of `kubectl vpa replay`.
type CommandOptions struct {
	Trace       string
	InputFormat string
	Estimator   string
	Out         string
	Sweep       bool
	Quiet       bool
	// Holdout is a second trace the same settings (and sweep) are replayed
	// on and reported beside the first, never used to choose them.
	Holdout string
	// OOMFeedback is --oom-feedback (Options.OOMFeedback).
	OOMFeedback bool
	// ZeroMemoryAsMissing is --zero-memory-as-missing
	// (Options.ZeroMemoryAsMissing).
	ZeroMemoryAsMissing bool

	Estimators estimator.Options
	Model      model.Config
	// PodUpdateThreshold and PodLifetimeUpdateThreshold are the updater's
	// --pod-update-threshold and
	// --in-recommendation-bounds-eviction-lifetime-threshold.
	PodUpdateThreshold         float64
	PodLifetimeUpdateThreshold time.Duration
	// EvictAfterOOMThreshold is the updater's --evict-after-oom-threshold.
	EvictAfterOOMThreshold time.Duration

	// Prometheus reads the history from Prometheus instead of --trace
	// (--prometheus-url and its flags).
	Prometheus PrometheusSource

	// Analyses run on every trace beside the replay; not a flag: a tool
	// that builds on the replay adds its own (hack/replay-bounds).
	Analyses []Analyzer
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
		EvictAfterOOMThreshold:     10 * time.Minute,
		OOMFeedback:                true,
		Prometheus:                 NewPrometheusSource(),
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
	fs.StringVar(&o.Holdout, "holdout", o.Holdout, "Holdout trace (same --input-format): replayed with the same settings, and swept with --sweep, and reported beside --trace under DIR/holdout/. Choose settings on --trace only.")
	fs.BoolVar(&o.OOMFeedback, "oom-feedback", o.OOMFeedback, "Treat a memory sample above the request as an OOM kill: the model records the OOM (with the OOM bump) instead of the sample, and the updater's quick-OOM rule applies. false replays the trace as observed and only scores such samples, as earlier releases did.")
	fs.BoolVar(&o.ZeroMemoryAsMissing, "zero-memory-as-missing", o.ZeroMemoryAsMissing, "Leave memory samples of 0 bytes out of the model (they are still scored), as missing readings: a running container never reports 0 bytes. Fed to the model, a window whose first sample reads 0 keeps 0 as its peak and drops the OOM kills in it.")
	tunables.AddEstimatorFlags(fs, &o.Estimators)
	tunables.AddModelFlags(fs, &o.Model)
	fs.Float64Var(&o.PodUpdateThreshold, "pod-update-threshold", o.PodUpdateThreshold, "Updater: minimum relative change of requests for a pod within its bounds.")
	fs.DurationVar(&o.PodLifetimeUpdateThreshold, "in-recommendation-bounds-eviction-lifetime-threshold", o.PodLifetimeUpdateThreshold, "Updater: minimum age of a pod within its bounds before it is updated.")
	fs.DurationVar(&o.EvictAfterOOMThreshold, "evict-after-oom-threshold", o.EvictAfterOOMThreshold, "Updater: a container OOM-killed after running less than this gets its pod updated at once (with --oom-feedback).")
	o.Prometheus.addFlags(fs)
}

// Validate reports every invalid option.
func (o *CommandOptions) Validate() error {
	var errs []error
	switch {
	case o.Prometheus.Enabled():
		if o.Trace != "" || o.Holdout != "" {
			errs = append(errs, errors.New("--prometheus-url replaces --trace and --holdout: give one source"))
		}
		errs = append(errs, o.Prometheus.validate()...)
	case o.Trace == "":
		errs = append(errs, errors.New("--trace is required (or --prometheus-url to read Prometheus)"))
	}
	if o.Holdout != "" {
		if o.Holdout == o.Trace {
			errs = append(errs, errors.New("--holdout must be another trace than --trace"))
		} else if _, err := os.Stat(o.Holdout); err != nil {
			// Checked now rather than after replaying --trace.
			errs = append(errs, fmt.Errorf("--holdout: %w", err))
		}
	}
	if o.Out == "" {
		errs = append(errs, errors.New("--out must not be empty"))
	}
	if err := tunables.Validate(o.Estimator, o.Estimators, o.Model); err != nil {
		errs = append(errs, err)
	}
	if !(o.PodUpdateThreshold >= 0) {
		errs = append(errs, fmt.Errorf("--pod-update-threshold must be >= 0, got %v", o.PodUpdateThreshold))
	}
	if o.EvictAfterOOMThreshold < 0 {
		errs = append(errs, fmt.Errorf("--evict-after-oom-threshold must be >= 0, got %v", o.EvictAfterOOMThreshold))
	}
	if o.PodLifetimeUpdateThreshold < 0 {
		errs = append(errs, fmt.Errorf("--in-recommendation-bounds-eviction-lifetime-threshold must be >= 0, got %v", o.PodLifetimeUpdateThreshold))
	}
	return errors.Join(errs...)
}
