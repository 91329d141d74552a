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
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
)

const mib = 1024 * 1024

var testStart = time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)

func TestRecordOOM(t *testing.T) {
	type oom struct {
		at      time.Duration
		request ResourceAmount
		wantErr bool
	}
	tests := map[string]struct {
		cfg      *Config
		usage    ResourceAmount // memory sample at testStart, if > 0
		zero     bool           // a memory sample of 0 bytes at testStart
		ooms     []oom
		wantPeak ResourceAmount
	}{
		"1000Mi request bumps to 1200Mi": {
			ooms:     []oom{{at: time.Minute, request: 1000 * mib}},
			wantPeak: 1200 * mib,
		},
		"1Mi request bumps by the 100Mi minimum": {
			ooms:     []oom{{at: time.Minute, request: 1 * mib}},
			wantPeak: 101 * mib,
		},
		"a 3000Mi usage peak above the request bumps to 3600Mi": {
			usage:    3000 * mib,
			ooms:     []oom{{at: time.Minute, request: 1000 * mib}},
			wantPeak: 3600 * mib,
		},
		"an OOM 30h before the last memory sample is rejected": {
			usage:    1000 * mib,
			ooms:     []oom{{at: -30 * time.Hour, request: 1000 * mib, wantErr: true}},
			wantPeak: 1000 * mib,
		},
		"an out-of-order OOM within one interval is accepted": {
			usage:    1000 * mib,
			ooms:     []oom{{at: -20 * time.Hour, request: 2000 * mib}},
			wantPeak: 2400 * mib,
		},
		// Upstream 1.8.0 (kubernetes/autoscaler#8548, "do not discard fresh
		// OOMs near aggregation boundary"): an OOM's age counts from the last
		// memory sample. Upstream 1.7 counted it from the window's end, a
		// full interval ahead of a sample that just opened the window, and
		// dropped an OOM seen a moment before that sample.
		"upstream 1.8: an OOM 2m before the sample that opened the window is kept": {
			usage:    1000 * mib,
			ooms:     []oom{{at: -2 * time.Minute, request: 1000 * mib}},
			wantPeak: 1200 * mib,
		},
		"repeated OOMs do not run away": {
			ooms: []oom{
				{at: time.Minute, request: 1000 * mib},
				{at: 2 * time.Minute, request: 999 * mib},
				{at: 3 * time.Minute, request: 999 * mib},
			},
			wantPeak: 1200 * mib,
		},
		"a larger request after repeated OOMs bumps from the request": {
			ooms: []oom{
				{at: time.Minute, request: 1000 * mib},
				{at: 2 * time.Minute, request: 999 * mib},
				{at: 3 * time.Minute, request: 2000 * mib},
			},
			wantPeak: 2400 * mib,
		},
		"upstream: an OOM in a window whose first sample read 0 is dropped": {
			zero:     true,
			ooms:     []oom{{at: time.Minute, request: 1000 * mib}},
			wantPeak: 0,
		},
		"ReplaceZeroPeak: an OOM in a window whose first sample read 0 is recorded": {
			cfg:      replacingZeroPeaks(),
			zero:     true,
			ooms:     []oom{{at: time.Minute, request: 1000 * mib}},
			wantPeak: 1200 * mib,
		},
		"per-VPA ratio and minimum": {
			cfg: DefaultConfig().ForPolicy(&vpav1.ContainerResourcePolicy{
				OOMBumpUpRatio: ptr(resource.MustParse("2")),
				OOMMinBumpUp:   ptr(resource.MustParse("500Mi")),
			}),
			ooms:     []oom{{at: time.Minute, request: 100 * mib}},
			wantPeak: 600 * mib,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			agg := NewAggregateState(tc.cfg, testStart)
			c := NewContainerState(agg)
			if tc.usage > 0 || tc.zero {
				if !c.AddMemorySample(testStart, tc.usage) {
					t.Fatal("memory sample rejected")
				}
			}
			for _, o := range tc.ooms {
				err := c.RecordOOM(testStart.Add(o.at), o.request)
				if (err != nil) != o.wantErr {
					t.Fatalf("RecordOOM(%v, %d) error = %v, want error %v", o.at, o.request, err, o.wantErr)
				}
			}
			if got := c.MaxMemoryPeak(); got != tc.wantPeak {
				t.Errorf("MaxMemoryPeak() = %dMi, want %dMi", got/mib, tc.wantPeak/mib)
			}
			// The aggregate holds exactly one peak for the window, in the bucket of the peak.
			opts := agg.Memory.h.opts
			b := opts.FindBucket(float64(tc.wantPeak))
			if got := agg.Memory.h.weight(b); got == 0 {
				t.Errorf("memory histogram has no weight in the bucket of %dMi", tc.wantPeak/mib)
			}
			if got, want := agg.Memory.Percentile(1), opts.BucketStart(b+1); got != want {
				t.Errorf("memory Percentile(1) = %v, want %v", got, want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// replacingZeroPeaks returns the default Config with ReplaceZeroPeak.
func replacingZeroPeaks() *Config {
	c := DefaultConfig()
	c.ReplaceZeroPeak = true
	return c
}

func TestMemoryWindows(t *testing.T) {
	type sample struct {
		at    time.Duration
		usage ResourceAmount
		want  bool
	}
	tests := map[string]struct {
		cfg           *Config
		samples       []sample
		wantWindowEnd time.Duration
		wantPeak      ResourceAmount
		wantPeaks     float64 // number of peaks in the aggregate
	}{
		"first sample opens a window ending one interval later": {
			samples:       []sample{{0, 100 * mib, true}},
			wantWindowEnd: 24 * time.Hour,
			wantPeak:      100 * mib,
			wantPeaks:     1,
		},
		"larger sample replaces the peak, smaller is ignored": {
			samples:       []sample{{0, 100 * mib, true}, {time.Hour, 300 * mib, true}, {2 * time.Hour, 200 * mib, true}},
			wantWindowEnd: 24 * time.Hour,
			wantPeak:      300 * mib,
			wantPeaks:     1,
		},
		"a sample at the window end starts the next window": {
			samples:       []sample{{0, 100 * mib, true}, {24 * time.Hour, 50 * mib, true}},
			wantWindowEnd: 48 * time.Hour,
			wantPeak:      50 * mib,
			wantPeaks:     2,
		},
		"a gap advances the window by whole intervals": {
			samples:       []sample{{0, 100 * mib, true}, {50 * time.Hour, 50 * mib, true}},
			wantWindowEnd: 72 * time.Hour,
			wantPeak:      50 * mib,
			wantPeaks:     2,
		},
		"out-of-order sample is rejected, equal time accepted": {
			samples:       []sample{{time.Hour, 100 * mib, true}, {0, 500 * mib, false}, {time.Hour, 200 * mib, true}},
			wantWindowEnd: 25 * time.Hour,
			wantPeak:      200 * mib,
			wantPeaks:     1,
		},
		"negative usage is rejected": {
			samples:       []sample{{0, -1, false}},
			wantWindowEnd: -1,
		},
		"upstream: a window whose first peak is 0 keeps 0": {
			samples:       []sample{{0, 0, true}, {time.Hour, 300 * mib, true}},
			wantWindowEnd: 24 * time.Hour,
			wantPeak:      0,
			wantPeaks:     1,
		},
		"ReplaceZeroPeak: a larger sample replaces a peak of 0": {
			cfg:           replacingZeroPeaks(),
			samples:       []sample{{0, 0, true}, {time.Hour, 300 * mib, true}, {2 * time.Hour, 200 * mib, true}},
			wantWindowEnd: 24 * time.Hour,
			wantPeak:      300 * mib,
			wantPeaks:     1,
		},
		"per-VPA interval": {
			cfg:           DefaultConfig().ForPolicy(&vpav1.ContainerResourcePolicy{MemoryAggregationIntervalSeconds: ptr(int32(3600))}),
			samples:       []sample{{0, 100 * mib, true}, {150 * time.Minute, 50 * mib, true}},
			wantWindowEnd: 3 * time.Hour,
			wantPeak:      50 * mib,
			wantPeaks:     2,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			agg := NewAggregateState(tc.cfg, testStart)
			c := NewContainerState(agg)
			for _, s := range tc.samples {
				if got := c.AddMemorySample(testStart.Add(s.at), s.usage); got != s.want {
					t.Fatalf("AddMemorySample(%v, %d) = %v, want %v", s.at, s.usage, got, s.want)
				}
			}
			if tc.wantWindowEnd < 0 {
				if !c.WindowEnd.IsZero() {
					t.Errorf("WindowEnd = %v, want zero", c.WindowEnd)
				}
				return
			}
			if got, want := c.WindowEnd, testStart.Add(tc.wantWindowEnd); !got.Equal(want) {
				t.Errorf("WindowEnd = %v, want %v", got, want)
			}
			if got := c.MaxMemoryPeak(); got != tc.wantPeak {
				t.Errorf("MaxMemoryPeak() = %d, want %d", got, tc.wantPeak)
			}
			// Every case uses distinct peak values, so buckets count peaks.
			if got := countPeaks(agg); got != tc.wantPeaks {
				t.Errorf("aggregate holds %v peaks, want %v", got, tc.wantPeaks)
			}
		})
	}
}

// countPeaks returns the number of buckets holding weight in the memory histogram.
func countPeaks(a *AggregateState) float64 {
	n := 0.0
	for _, w := range a.Memory.h.w {
		if w >= Epsilon {
			n++
		}
	}
	return n
}

func TestCPUSamples(t *testing.T) {
	agg := NewAggregateState(nil, testStart)
	c1, c2 := NewContainerState(agg), NewContainerState(agg)
	steps := []struct {
		c     *ContainerState
		at    time.Duration
		usage ResourceAmount
		want  bool
	}{
		{c1, time.Minute, 100, true},
		{c1, time.Minute, 100, false}, // equal time
		{c1, 0, 100, false},           // out of order
		{c1, 2 * time.Minute, -1, false},
		{c2, 0, 200, true}, // another instance has its own order
		{c2, 3 * time.Minute, 200, true},
	}
	for i, s := range steps {
		if got := s.c.AddCPUSample(testStart.Add(s.at), s.usage); got != s.want {
			t.Fatalf("step %d: AddCPUSample(%v, %d) = %v, want %v", i, s.at, s.usage, got, s.want)
		}
	}
	if got, want := agg.TotalSamplesCount, 3; got != want {
		t.Errorf("TotalSamplesCount = %d, want %d", got, want)
	}
	if got, want := agg.FirstSampleStart, testStart; !got.Equal(want) {
		t.Errorf("FirstSampleStart = %v, want %v", got, want)
	}
	if got, want := agg.LastSampleStart, testStart.Add(3*time.Minute); !got.Equal(want) {
		t.Errorf("LastSampleStart = %v, want %v", got, want)
	}
	// Memory samples do not count toward the CPU statistics.
	c1.AddMemorySample(testStart.Add(time.Hour), mib)
	if agg.TotalSamplesCount != 3 || !agg.LastSampleStart.Equal(testStart.Add(3*time.Minute)) {
		t.Errorf("memory sample changed the CPU statistics")
	}
}

func TestAggregateMerge(t *testing.T) {
	a, b := NewAggregateState(nil, testStart), NewAggregateState(nil, testStart)
	NewContainerState(a).AddCPUSample(testStart.Add(time.Hour), 100)
	cb := NewContainerState(b)
	cb.AddCPUSample(testStart, 300)
	cb.AddCPUSample(testStart.Add(2*time.Hour), 300)
	merged := NewAggregateState(nil, testStart)
	for _, x := range []*AggregateState{a, b} {
		if err := merged.Merge(x); err != nil {
			t.Fatal(err)
		}
	}
	if merged.TotalSamplesCount != 3 || !merged.FirstSampleStart.Equal(testStart) || !merged.LastSampleStart.Equal(testStart.Add(2*time.Hour)) {
		t.Errorf("merged stats = %d, %v, %v", merged.TotalSamplesCount, merged.FirstSampleStart, merged.LastSampleStart)
	}
	other := DefaultConfig()
	other.CPUHistogramDecayHalfLife = time.Hour
	if err := merged.Merge(NewAggregateState(other, testStart)); err == nil {
		t.Errorf("Merge with a different half-life succeeded")
	}
}

func TestConfidenceAndExpiry(t *testing.T) {
	agg := NewAggregateState(nil, testStart)
	c := NewContainerState(agg)
	for i := 0; i < 9; i++ {
		c.AddCPUSample(testStart.Add(time.Duration(2*i)*time.Minute), 100)
	}
	if got, want := agg.Confidence(24*time.Hour), 0.00625; got != want {
		t.Errorf("Confidence(24h) = %v, want %v", got, want)
	}
	if got, want := agg.Confidence(18*time.Minute), 0.5; got != want {
		t.Errorf("Confidence(18m) = %v, want %v", got, want)
	}
	last := testStart.Add(16 * time.Minute)
	if agg.IsExpired(last.Add(8*24*time.Hour - time.Second)) {
		t.Errorf("expired before 8 days after the last sample")
	}
	if !agg.IsExpired(last.Add(8 * 24 * time.Hour)) {
		t.Errorf("not expired 8 days after the last sample")
	}
	empty := NewAggregateState(nil, testStart)
	if !empty.IsExpired(testStart.Add(8 * 24 * time.Hour)) {
		t.Errorf("empty aggregate not expired 8 days after creation")
	}
}

func TestConfigForPolicy(t *testing.T) {
	base := DefaultConfig()
	if got := base.ForPolicy(&vpav1.ContainerResourcePolicy{ContainerName: "a"}); got != base {
		t.Errorf("ForPolicy without overrides returned a copy")
	}
	got := base.ForPolicy(&vpav1.ContainerResourcePolicy{
		OOMBumpUpRatio:                   ptr(resource.MustParse("1.5")),
		OOMMinBumpUp:                     ptr(resource.MustParse("1Gi")),
		MemoryAggregationIntervalSeconds: ptr(int32(7200)),
		MemoryAggregationIntervalCount:   ptr(int64(3)),
	})
	if got.OOMBumpUpRatio != 1.5 || got.OOMMinBumpUpBytes != 1<<30 || got.MemoryAggregationInterval != 2*time.Hour || got.MemoryAggregationIntervalCount != 3 {
		t.Errorf("ForPolicy = %+v", got)
	}
	if base.OOMBumpUpRatio != DefaultOOMBumpUpRatio {
		t.Errorf("ForPolicy modified its receiver")
	}
	if err := got.Validate(); err != nil {
		t.Errorf("Validate() = %v", err)
	}
	bad := *base
	bad.CPUHistogramDecayHalfLife = 0
	bad.OOMBumpUpRatio = 0.5
	if err := bad.Validate(); err == nil {
		t.Errorf("Validate() accepted a zero half-life and a ratio below 1")
	}
}
