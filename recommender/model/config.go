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

package model

import (
	"errors"
	"fmt"
	"time"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
)

// Defaults of the model's tunables; each equals the upstream flag of the
// same meaning.
const (
	// DefaultCPUHistogramDecayHalfLife is --cpu-histogram-decay-half-life.
	DefaultCPUHistogramDecayHalfLife = 24 * time.Hour
	// DefaultMemoryHistogramDecayHalfLife is --memory-histogram-decay-half-life.
	DefaultMemoryHistogramDecayHalfLife = 24 * time.Hour
	// DefaultMemoryAggregationInterval is --memory-aggregation-interval.
	DefaultMemoryAggregationInterval = 24 * time.Hour
	// DefaultMemoryAggregationIntervalCount is --memory-aggregation-interval-count.
	DefaultMemoryAggregationIntervalCount = 8
	// DefaultOOMBumpUpRatio is --oom-bump-up-ratio.
	DefaultOOMBumpUpRatio = 1.2
	// DefaultOOMMinBumpUpBytes is --oom-min-bump-up-bytes (100Mi).
	DefaultOOMMinBumpUpBytes = 100 * 1024 * 1024
)

// Config holds the model's tunables. Histogram options and half-lives are
// global (aggregates can only be merged when they agree); the memory window
// and OOM fields may differ per VPA (see ForPolicy). A Config is read-only
// once aggregates use it and is shared by pointer.
type Config struct {
	// CPUHistogramOptions is the CPU bucketing scheme, in cores.
	CPUHistogramOptions *HistogramOptions
	// MemoryHistogramOptions is the memory bucketing scheme, in bytes.
	MemoryHistogramOptions *HistogramOptions
	// CPUHistogramDecayHalfLife is the half-life of CPU sample weights.
	CPUHistogramDecayHalfLife time.Duration
	// MemoryHistogramDecayHalfLife is the half-life of memory peak weights.
	MemoryHistogramDecayHalfLife time.Duration
	// MemoryAggregationInterval is the length of one memory peak window.
	MemoryAggregationInterval time.Duration
	// MemoryAggregationIntervalCount is the number of windows of history an
	// aggregate keeps before it expires.
	MemoryAggregationIntervalCount int64
	// OOMBumpUpRatio multiplies the memory in use at an OOM kill.
	OOMBumpUpRatio float64
	// OOMMinBumpUpBytes is the smallest increase after an OOM kill, in bytes.
	OOMMinBumpUpBytes float64
	// ReplaceZeroPeak lets a later, larger sample or OOM kill replace a
	// window peak of 0 bytes. Upstream keeps the 0 and drops every later
	// sample and kill of that window; false (the default) does the same, so
	// that numbers equal upstream's.
	ReplaceZeroPeak bool
}

// DefaultConfig returns the configuration equal to upstream's defaults.
func DefaultConfig() *Config {
	return &Config{
		CPUHistogramOptions:            DefaultCPUHistogramOptions(),
		MemoryHistogramOptions:         DefaultMemoryHistogramOptions(),
		CPUHistogramDecayHalfLife:      DefaultCPUHistogramDecayHalfLife,
		MemoryHistogramDecayHalfLife:   DefaultMemoryHistogramDecayHalfLife,
		MemoryAggregationInterval:      DefaultMemoryAggregationInterval,
		MemoryAggregationIntervalCount: DefaultMemoryAggregationIntervalCount,
		OOMBumpUpRatio:                 DefaultOOMBumpUpRatio,
		OOMMinBumpUpBytes:              DefaultOOMMinBumpUpBytes,
	}
}

// Validate reports every invalid field.
func (c *Config) Validate() error {
	var errs []error
	if c.CPUHistogramOptions == nil || c.MemoryHistogramOptions == nil {
		errs = append(errs, errors.New("histogram options must be set"))
	}
	if c.CPUHistogramDecayHalfLife <= 0 {
		errs = append(errs, fmt.Errorf("cpu histogram decay half-life must be > 0, got %v", c.CPUHistogramDecayHalfLife))
	}
	if c.MemoryHistogramDecayHalfLife <= 0 {
		errs = append(errs, fmt.Errorf("memory histogram decay half-life must be > 0, got %v", c.MemoryHistogramDecayHalfLife))
	}
	if c.MemoryAggregationInterval <= 0 {
		errs = append(errs, fmt.Errorf("memory aggregation interval must be > 0, got %v", c.MemoryAggregationInterval))
	}
	if c.MemoryAggregationIntervalCount <= 0 {
		errs = append(errs, fmt.Errorf("memory aggregation interval count must be > 0, got %d", c.MemoryAggregationIntervalCount))
	}
	if !(c.OOMBumpUpRatio >= 1) {
		errs = append(errs, fmt.Errorf("oom bump-up ratio must be >= 1, got %v", c.OOMBumpUpRatio))
	}
	if !(c.OOMMinBumpUpBytes >= 0) {
		errs = append(errs, fmt.Errorf("oom min bump-up must be >= 0, got %v", c.OOMMinBumpUpBytes))
	}
	return errors.Join(errs...)
}

// HistoryWindow returns MemoryAggregationInterval × MemoryAggregationIntervalCount,
// the age after which an aggregate expires.
func (c *Config) HistoryWindow() time.Duration {
	return c.MemoryAggregationInterval * time.Duration(c.MemoryAggregationIntervalCount)
}

// ForPolicy returns c with the per-VPA fields of a container policy applied
// (oomBumpUpRatio read as MilliValue/1000, oomMinBumpUp in bytes,
// memoryAggregationIntervalSeconds and memoryAggregationIntervalCount). It
// returns c itself when the policy overrides nothing, so that aggregates of
// VPAs without overrides share one Config. Whether overrides are honoured at
// all (upstream's PerVPAConfig gate) is the caller's decision.
func (c *Config) ForPolicy(p *vpav1.ContainerResourcePolicy) *Config {
	if p == nil || (p.OOMBumpUpRatio == nil && p.OOMMinBumpUp == nil &&
		p.MemoryAggregationIntervalSeconds == nil && p.MemoryAggregationIntervalCount == nil) {
		return c
	}
	out := *c
	if p.OOMBumpUpRatio != nil {
		out.OOMBumpUpRatio = float64(p.OOMBumpUpRatio.MilliValue()) / 1000.0
	}
	if p.OOMMinBumpUp != nil {
		out.OOMMinBumpUpBytes = float64(p.OOMMinBumpUp.Value())
	}
	if p.MemoryAggregationIntervalSeconds != nil && *p.MemoryAggregationIntervalSeconds > 0 {
		out.MemoryAggregationInterval = time.Duration(*p.MemoryAggregationIntervalSeconds) * time.Second
	}
	if p.MemoryAggregationIntervalCount != nil && *p.MemoryAggregationIntervalCount > 0 {
		out.MemoryAggregationIntervalCount = *p.MemoryAggregationIntervalCount
	}
	return &out
}
