package estimator

import (
	"fmt"
	"strings"
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
func New(name string, o Options) (Estimator, error) {
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
		return NewAdaptive(o.Config, o.Adaptive), nil
	}
	return nil, fmt.Errorf("unknown estimator %q (known: %s)", name, strings.Join(Names(), ", "))
}
