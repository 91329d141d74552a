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
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Config holds every tunable of the estimators and of Finish. Each field
// corresponds to the upstream recommender flag named in its comment.
type Config struct {
	// TargetCPUPercentile is --target-cpu-percentile.
	TargetCPUPercentile float64
	// LowerBoundCPUPercentile is --recommendation-lower-bound-cpu-percentile.
	LowerBoundCPUPercentile float64
	// UpperBoundCPUPercentile is --recommendation-upper-bound-cpu-percentile.
	UpperBoundCPUPercentile float64
	// TargetMemoryPercentile is --target-memory-percentile.
	TargetMemoryPercentile float64
	// LowerBoundMemoryPercentile is --recommendation-lower-bound-memory-percentile.
	LowerBoundMemoryPercentile float64
	// UpperBoundMemoryPercentile is --recommendation-upper-bound-memory-percentile.
	UpperBoundMemoryPercentile float64
	// ConfidenceIntervalCPU is --confidence-interval-cpu.
	ConfidenceIntervalCPU time.Duration
	// ConfidenceIntervalMemory is --confidence-interval-memory.
	ConfidenceIntervalMemory time.Duration
	// MarginFraction is --recommendation-margin-fraction.
	MarginFraction float64
	// PodMinCPUMillicores is --pod-recommendation-min-cpu-millicores.
	PodMinCPUMillicores float64
	// PodMinMemoryMb is --pod-recommendation-min-memory-mb, in MiB.
	PodMinMemoryMb float64
	// RoundCPUMillicores is --round-cpu-millicores; values round up to a multiple.
	RoundCPUMillicores int
	// RoundMemoryBytes is --round-memory-bytes; values round up to a multiple.
	RoundMemoryBytes int
	// HumanizeMemory is --humanize-memory (deprecated upstream).
	HumanizeMemory bool
	// CPUIntegerPostProcessorEnabled is --cpu-integer-post-processor-enabled.
	CPUIntegerPostProcessorEnabled bool
	// MaxAllowed holds --container-recommendation-max-allowed-cpu and
	// --container-recommendation-max-allowed-memory; a VPA's own maxAllowed
	// wins per resource. Nil or zero quantities mean no limit.
	MaxAllowed corev1.ResourceList
}

// DefaultConfig returns upstream's defaults.
func DefaultConfig() Config {
	return Config{
		TargetCPUPercentile:        0.9,
		LowerBoundCPUPercentile:    0.5,
		UpperBoundCPUPercentile:    0.95,
		TargetMemoryPercentile:     0.9,
		LowerBoundMemoryPercentile: 0.5,
		UpperBoundMemoryPercentile: 0.95,
		ConfidenceIntervalCPU:      24 * time.Hour,
		ConfidenceIntervalMemory:   24 * time.Hour,
		MarginFraction:             0.15,
		PodMinCPUMillicores:        25,
		PodMinMemoryMb:             250,
		RoundCPUMillicores:         1,
		RoundMemoryBytes:           1,
	}
}

// Validate reports every invalid field.
func (c Config) Validate() error {
	var errs []error
	for _, p := range []struct {
		name string
		v    float64
	}{
		{"target-cpu-percentile", c.TargetCPUPercentile},
		{"recommendation-lower-bound-cpu-percentile", c.LowerBoundCPUPercentile},
		{"recommendation-upper-bound-cpu-percentile", c.UpperBoundCPUPercentile},
		{"target-memory-percentile", c.TargetMemoryPercentile},
		{"recommendation-lower-bound-memory-percentile", c.LowerBoundMemoryPercentile},
		{"recommendation-upper-bound-memory-percentile", c.UpperBoundMemoryPercentile},
	} {
		if !(p.v >= 0 && p.v <= 1) {
			errs = append(errs, fmt.Errorf("%s must be in [0, 1], got %v", p.name, p.v))
		}
	}
	if c.ConfidenceIntervalCPU <= 0 {
		errs = append(errs, fmt.Errorf("confidence-interval-cpu must be > 0, got %v", c.ConfidenceIntervalCPU))
	}
	if c.ConfidenceIntervalMemory <= 0 {
		errs = append(errs, fmt.Errorf("confidence-interval-memory must be > 0, got %v", c.ConfidenceIntervalMemory))
	}
	if !(c.MarginFraction >= 0) {
		errs = append(errs, fmt.Errorf("recommendation-margin-fraction must be >= 0, got %v", c.MarginFraction))
	}
	if !(c.PodMinCPUMillicores >= 0) {
		errs = append(errs, fmt.Errorf("pod-recommendation-min-cpu-millicores must be >= 0, got %v", c.PodMinCPUMillicores))
	}
	if !(c.PodMinMemoryMb >= 0) {
		errs = append(errs, fmt.Errorf("pod-recommendation-min-memory-mb must be >= 0, got %v", c.PodMinMemoryMb))
	}
	if c.RoundCPUMillicores <= 0 {
		errs = append(errs, fmt.Errorf("round-cpu-millicores must be > 0, got %d", c.RoundCPUMillicores))
	}
	if c.RoundMemoryBytes <= 0 {
		errs = append(errs, fmt.Errorf("round-memory-bytes must be > 0, got %d", c.RoundMemoryBytes))
	}
	for name, q := range c.MaxAllowed {
		if name != corev1.ResourceCPU && name != corev1.ResourceMemory {
			errs = append(errs, fmt.Errorf("max allowed: unsupported resource %q", name))
		} else if q.Sign() < 0 {
			errs = append(errs, fmt.Errorf("max allowed %s must be >= 0, got %s", name, q.String()))
		}
	}
	return errors.Join(errs...)
}
