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
	"fmt"
	"strings"

	"github.com/openvpa/openvpa/recommender/model"
)

// Options holds the configuration of every estimator, for building one by
// name.
type Options struct {
	// Config is shared by all estimators (CPU chain, pod minimum, Finish).
	Config Config
	// Peak holds the Peak estimator's own tunables.
	Peak PeakConfig
	// Adaptive holds the Adaptive estimator's own tunables.
	Adaptive AdaptiveConfig
}

// DefaultOptions returns every estimator's defaults.
func DefaultOptions() Options {
	return Options{Config: DefaultConfig(), Peak: DefaultPeakConfig(), Adaptive: DefaultAdaptiveConfig()}
}

// Names lists the estimators New knows, the default first.
func Names() []string { return []string{PercentileName, PeakName, AdaptiveName} }

// New returns the estimator called name ("" is the default, percentile)
// configured from o.
func New(name string, o Options) (Explainer, error) {
	if err := o.Config.Validate(); err != nil {
		return nil, err
	}
	switch name {
	case PercentileName, "":
		return NewPercentile(o.Config), nil
	case PeakName:
		if err := o.Peak.Validate(); err != nil {
			return nil, err
		}
		return NewPeak(o.Config, o.Peak), nil
	case AdaptiveName:
		if err := o.Adaptive.Validate(); err != nil {
			return nil, err
		}
		if t, u := o.Adaptive.CPUTargetPercentile, o.Config.UpperBoundCPUPercentile; t > u {
			return nil, fmt.Errorf("adaptive CPU target percentile %v is above the CPU upper bound percentile %v: the target would sit above its own upper bound and every pod would be updated", t, u)
		}
		return NewAdaptive(o.Config, o.Adaptive), nil
	}
	return nil, fmt.Errorf("unknown estimator %q (known: %s)", name, strings.Join(Names(), ", "))
}

// ModelConfig returns the model configuration the estimator called name runs
// on. The percentile chain gets cfg as it is, upstream's window rules
// included, so that its numbers equal upstream's. The others, whose numbers
// are their own, get ReplaceZeroPeak: under upstream's rule a window whose
// first sample reads 0 bytes drops every later sample and OOM kill, and a
// container killed in such a window keeps its request until the next window.
func ModelConfig(name string, cfg model.Config) model.Config {
	if name != PercentileName && name != "" {
		cfg.ReplaceZeroPeak = true
	}
	return cfg
}
