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
	"fmt"
	"time"
)

// AggregateState is the usage history of one container name under one VPA,
// fed by any number of container instances (see ContainerState).
type AggregateState struct {
	// CPU holds CPU usage samples in cores, each of weight MinSampleWeight.
	CPU DecayingHistogram
	// Memory holds one peak per memory window per container instance, in
	// bytes, each of weight 1, recorded at the window's end.
	Memory DecayingHistogram
	// FirstSampleStart is the time of the earliest CPU sample.
	FirstSampleStart time.Time
	// LastSampleStart is the time of the latest CPU sample.
	LastSampleStart time.Time
	// TotalSamplesCount is the number of CPU samples.
	TotalSamplesCount int
	// CreationTime is when the aggregate was created.
	CreationTime time.Time

	config *Config
}

// NewAggregateState returns an empty aggregate using cfg (DefaultConfig when
// nil) created at now.
func NewAggregateState(cfg *Config, now time.Time) *AggregateState {
	if cfg == nil {
		cfg = DefaultConfig()
	}
	return &AggregateState{
		CPU:          NewDecayingHistogram(cfg.CPUHistogramOptions, cfg.CPUHistogramDecayHalfLife),
		Memory:       NewDecayingHistogram(cfg.MemoryHistogramOptions, cfg.MemoryHistogramDecayHalfLife),
		CreationTime: now,
		config:       cfg,
	}
}

// Config returns the aggregate's configuration.
func (a *AggregateState) Config() *Config { return a.config }

// SetConfig replaces the per-VPA part of the configuration, for example after
// the VPA's container policy changed. The histogram options and half-lives of
// cfg must equal the current ones.
func (a *AggregateState) SetConfig(cfg *Config) error {
	if cfg.CPUHistogramDecayHalfLife != a.CPU.halfLife || cfg.MemoryHistogramDecayHalfLife != a.Memory.halfLife ||
		!cfg.CPUHistogramOptions.Equal(a.CPU.h.opts) || !cfg.MemoryHistogramOptions.Equal(a.Memory.h.opts) {
		return fmt.Errorf("cannot change histogram options or half-lives of an existing aggregate")
	}
	a.config = cfg
	return nil
}

// addCPU records a CPU sample of m millicores taken at t. It does what
// a.CPU.AddSample(CoresFromCPUAmount(m), MinSampleWeight, t) does, with the
// common cases of the decay factor and of the bucket lookup inlined: it runs
// once per container per recommender loop.
// w is t as a wallTime.
func (a *AggregateState) addCPU(t time.Time, w wallTime, m ResourceAmount) {
	value := CoresFromCPUAmount(m)
	weight := MinSampleWeight * a.CPU.decayFactorAt(t, w)
	h := &a.CPU.h
	b, ok := h.opts.index.find(value)
	if !ok {
		b = h.opts.findBucketOutsideIndex(value)
	}
	h.add(b, weight)
	if wallOf(a.LastSampleStart).before(w) {
		a.LastSampleStart = t
	}
	if a.FirstSampleStart.IsZero() || w.before(wallOf(a.FirstSampleStart)) {
		a.FirstSampleStart = t
	}
	a.TotalSamplesCount++
}

// addMemoryPeak records a memory peak of b bytes for the window ending at t.
func (a *AggregateState) addMemoryPeak(t time.Time, b ResourceAmount) {
	a.Memory.AddSample(BytesFromMemoryAmount(b), 1.0, t)
}

// subtractMemoryPeak removes a memory peak of b bytes for the window ending at t.
func (a *AggregateState) subtractMemoryPeak(t time.Time, b ResourceAmount) {
	a.Memory.SubtractSample(BytesFromMemoryAmount(b), 1.0, t)
}

// Merge adds other's histograms and sample statistics to a. other is left
// unchanged. It fails only when the histogram options or half-lives differ.
func (a *AggregateState) Merge(other *AggregateState) error {
	if a.CPU.halfLife != other.CPU.halfLife || a.Memory.halfLife != other.Memory.halfLife {
		return errHalfLifeMismatch
	}
	if !a.CPU.h.opts.Equal(other.CPU.h.opts) || !a.Memory.h.opts.Equal(other.Memory.h.opts) {
		return errOptionsMismatch
	}
	if err := a.CPU.Merge(&other.CPU); err != nil {
		return err
	}
	if err := a.Memory.Merge(&other.Memory); err != nil {
		return err
	}
	if a.FirstSampleStart.IsZero() || (!other.FirstSampleStart.IsZero() && other.FirstSampleStart.Before(a.FirstSampleStart)) {
		a.FirstSampleStart = other.FirstSampleStart
	}
	if other.LastSampleStart.After(a.LastSampleStart) {
		a.LastSampleStart = other.LastSampleStart
	}
	a.TotalSamplesCount += other.TotalSamplesCount
	return nil
}

// Clone returns a deep copy sharing the configuration.
func (a *AggregateState) Clone() *AggregateState {
	c := *a
	c.CPU = a.CPU.clone()
	c.Memory = a.Memory.clone()
	return &c
}

// Confidence returns how much history backs the aggregate, in units of
// interval: min((LastSampleStart − FirstSampleStart)/interval,
// TotalSamplesCount/interval-in-minutes). For a steady stream of one sample
// per minute over N intervals it equals N. With a 24h interval it is the
// history length in days.
func (a *AggregateState) Confidence(interval time.Duration) float64 {
	lifespan := float64(a.LastSampleStart.Sub(a.FirstSampleStart)) / float64(interval)
	samples := float64(a.TotalSamplesCount) / interval.Minutes()
	return min(lifespan, samples)
}

// IsEmpty reports whether the aggregate has no CPU samples.
func (a *AggregateState) IsEmpty() bool { return a.TotalSamplesCount == 0 }

// IsExpired reports whether the aggregate is older than its history window:
// measured from its creation when it has no CPU samples, else from its last
// CPU sample.
func (a *AggregateState) IsExpired(now time.Time) bool {
	if a.IsEmpty() {
		return now.Sub(a.CreationTime) >= a.config.HistoryWindow()
	}
	return now.Sub(a.LastSampleStart) >= a.config.HistoryWindow()
}
