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
	"math"
	"testing"
	"time"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
)

func TestHistogramOptions(t *testing.T) {
	tests := map[string]struct {
		opts       *HistogramOptions
		wantN      int
		wantStarts []float64
	}{
		"cpu default":    {opts: DefaultCPUHistogramOptions(), wantN: 176},
		"memory default": {opts: DefaultMemoryHistogramOptions(), wantN: 176},
		"max 100 first 1 ratio 2": {
			opts:       mustOptions(t, 100, 1, 2, 1e-4),
			wantN:      8,
			wantStarts: []float64{0, 1, 3, 7, 15, 31, 63, 127},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := tc.opts.NumBuckets(); got != tc.wantN {
				t.Fatalf("NumBuckets() = %d, want %d", got, tc.wantN)
			}
			for b, want := range tc.wantStarts {
				if got := tc.opts.BucketStart(b); got != want {
					t.Errorf("BucketStart(%d) = %v, want %v", b, got, want)
				}
			}
			for b := 1; b < tc.opts.NumBuckets(); b++ {
				want := tc.opts.first * (math.Pow(tc.opts.ratio, float64(b)) - 1) / (tc.opts.ratio - 1)
				if got := tc.opts.BucketStart(b); got != want {
					t.Errorf("BucketStart(%d) = %v, want %v", b, got, want)
				}
			}
		})
	}
}

func TestFindBucket(t *testing.T) {
	cpu, mem := DefaultCPUHistogramOptions(), DefaultMemoryHistogramOptions()
	tests := map[string]struct {
		opts  *HistogramOptions
		value float64
		want  int
	}{
		"zero":               {cpu, 0, 0},
		"negative":           {cpu, -1, 0},
		"below first bucket": {cpu, 0.0099, 0},
		"NaN":                {cpu, math.NaN(), 0},
		"300m":               {cpu, 0.3, 18},
		"one core":           {cpu, 1, 36},
		"above max":          {cpu, 1e6, 175},
		"+Inf":               {cpu, math.Inf(1), 175},
		"200Mi":              {mem, 200 * 1024 * 1024, 14},
		"20500000 bytes sits below its decimal edge": {mem, 20500000, 1},
		"31525000 bytes sits below its decimal edge": {mem, 31525000, 2},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := tc.opts.FindBucket(tc.value); got != tc.want {
				t.Errorf("FindBucket(%v) = %d, want %d", tc.value, got, tc.want)
			}
		})
	}
}

func mustOptions(t testing.TB, maxValue, first, ratio, eps float64) *HistogramOptions {
	t.Helper()
	o, err := NewExponentialHistogramOptions(maxValue, first, ratio, eps)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestHistogramPercentile(t *testing.T) {
	cpu, mem := DefaultCPUHistogramOptions(), DefaultMemoryHistogramOptions()
	tests := map[string]struct {
		opts    *HistogramOptions
		samples []float64
		weight  float64
		p       float64
		want    float64
		tol     float64
	}{
		"{1,2,3} cores at p=0.2 is about 1 core":       {cpu, []float64{1, 2, 3}, 0.1, 0.2, 1.0, 0.05},
		"{1e9,2e9,3e9} bytes at p=0.5 is about 2e9":    {mem, []float64{1e9, 2e9, 3e9}, 1, 0.5, 2e9, 0.05},
		"empty histogram is 0":                         {cpu, nil, 0.1, 0.9, 0, 0},
		"steady 0 reads the first bucket's upper edge": {cpu, []float64{0, 0, 0}, 0.1, 0.9, 0.01, 0},
		"steady 300m P90 upper edge":                   {cpu, []float64{0.3, 0.3}, 0.1, 0.9, 0.3053900390751276, 0},
		"last bucket returns its start":                {cpu, []float64{5000}, 0.1, 1, cpu.BucketStart(175), 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := NewHistogram(tc.opts)
			for _, v := range tc.samples {
				h.AddSample(v, tc.weight)
			}
			got := h.Percentile(tc.p)
			if tc.tol == 0 {
				if got != tc.want {
					t.Errorf("Percentile(%v) = %v, want %v", tc.p, got, tc.want)
				}
				return
			}
			if math.Abs(got-tc.want) > tc.tol*tc.want {
				t.Errorf("Percentile(%v) = %v, want %v ± %v%%", tc.p, got, tc.want, tc.tol*100)
			}
		})
	}
}

func TestHistogramSubtractAndEmpty(t *testing.T) {
	opts := DefaultCPUHistogramOptions()
	h := NewHistogram(opts)
	h.AddSample(1, 1)
	h.AddSample(2, 1)
	h.SubtractSample(2, 1-Epsilon/2) // leaves less than epsilon: bucket cleared
	if got, want := h.Percentile(1), opts.BucketStart(opts.FindBucket(1)+1); got != want {
		t.Errorf("after subtract Percentile(1) = %v, want %v", got, want)
	}
	if got := h.weight(opts.FindBucket(2)); got != 0 {
		t.Errorf("bucket of 2 weighs %v, want 0", got)
	}
	// Upstream's arithmetic: the total drops by the weight subtracted, not
	// by the bucket's weight cleared (hack/tools/upstream-vpa/differential
	// checks it against upstream's code).
	subtracted := 1 - Epsilon/2
	if got, want := h.TotalWeight(), 2-subtracted; got != want {
		t.Errorf("TotalWeight() = %v, want %v", got, want)
	}
	h.SubtractSample(1, 1)
	if !h.IsEmpty() {
		t.Errorf("IsEmpty() = false after removing every sample")
	}
	if got := h.TotalWeight(); got != 0 {
		t.Errorf("TotalWeight() = %v after removing every sample, want 0 (less than epsilon left)", got)
	}
	if len(h.w) != 0 {
		t.Errorf("empty histogram holds %d buckets", len(h.w))
	}
}

func TestHistogramMerge(t *testing.T) {
	opts := DefaultCPUHistogramOptions()
	a, b := NewHistogram(opts), NewHistogram(opts)
	a.AddSample(1, 1)
	b.AddSample(3, 3)
	if err := a.Merge(&b); err != nil {
		t.Fatal(err)
	}
	if got := a.TotalWeight(); got != 4 {
		t.Errorf("TotalWeight() = %v, want 4", got)
	}
	if got, want := a.Percentile(0.25), opts.BucketStart(opts.FindBucket(1)+1); got != want {
		t.Errorf("Percentile(0.25) = %v, want %v", got, want)
	}
	if got, want := a.Percentile(0.26), opts.BucketStart(opts.FindBucket(3)+1); got != want {
		t.Errorf("Percentile(0.26) = %v, want %v", got, want)
	}
	other := NewHistogram(mustOptions(t, 100, 1, 2, 1e-4))
	if err := a.Merge(&other); err == nil {
		t.Errorf("Merge with different options succeeded")
	}
}

func TestDecayingHistogram(t *testing.T) {
	opts := DefaultCPUHistogramOptions()
	edge := func(v float64) float64 { return opts.BucketStart(opts.FindBucket(v) + 1) }
	t0 := time.Time{}
	tests := map[string]struct {
		samples []struct {
			value, weight float64
			at            time.Duration
		}
		want map[float64]float64 // percentile → value
	}{
		"a new sample outweighs an old heavy one after 20 half-lives": {
			samples: []struct {
				value, weight float64
				at            time.Duration
			}{{2, 1000, 0}, {1, 1, 20 * time.Hour}},
			want: map[float64]float64{0.999: edge(1), 1: edge(2)},
		},
		"101 half-lives later the old sample is renormalised away": {
			samples: []struct {
				value, weight float64
				at            time.Duration
			}{{2, 1000, 0}, {1, 1, 101 * time.Hour}},
			want: map[float64]float64{1: edge(1)},
		},
		"weights i at t0+i hours step at 2%, 10% and 34%": {
			samples: []struct {
				value, weight float64
				at            time.Duration
			}{{1, 1, time.Hour}, {2, 2, 2 * time.Hour}, {3, 3, 3 * time.Hour}, {4, 4, 4 * time.Hour}},
			want: map[float64]float64{
				0.01: edge(1), 0.02: edge(1), 0.03: edge(2), 0.10: edge(2),
				0.11: edge(3), 0.34: edge(3), 0.35: edge(4), 1: edge(4),
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d := NewDecayingHistogram(opts, time.Hour)
			for _, s := range tc.samples {
				d.AddSample(s.value, s.weight, t0.Add(s.at))
			}
			for p, want := range tc.want {
				if got := d.Percentile(p); got != want {
					t.Errorf("Percentile(%v) = %v, want %v", p, got, want)
				}
			}
		})
	}
}

func TestDecayingHistogramReferenceShift(t *testing.T) {
	opts := DefaultCPUHistogramOptions()
	start := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	d := NewDecayingHistogram(opts, 24*time.Hour)
	d.AddSample(1, 0.1, start)
	// A noon start rounds up to the next midnight for a 24h half-life.
	if got, want := d.ReferenceTimestamp(), time.Date(2025, 3, 2, 0, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Fatalf("reference after first sample = %v, want %v", got, want)
	}
	if got, want := d.TotalWeight(), 0.1*math.Exp2(-0.5); got != want {
		t.Errorf("TotalWeight() = %v, want %v", got, want)
	}
	ref := d.ReferenceTimestamp()
	// Up to 100 half-lives after the reference nothing moves.
	d.AddSample(1, 0.1, ref.Add(100*24*time.Hour))
	if got := d.ReferenceTimestamp(); !got.Equal(ref) {
		t.Errorf("reference moved to %v at exactly 100 half-lives", got)
	}
	before := d.TotalWeight()
	// Past 100 half-lives the reference moves to the sample time rounded to
	// the half-life and the weights are scaled by 2^-101.
	at := ref.Add(101*24*time.Hour + 3*time.Hour)
	d.AddSample(1, 0.1, at)
	if got, want := d.ReferenceTimestamp(), ref.Add(101*24*time.Hour); !got.Equal(want) {
		t.Errorf("reference = %v, want %v", got, want)
	}
	want := before*math.Ldexp(1, -101) + 0.1*math.Exp2(3.0/24)
	if got := d.TotalWeight(); got != want {
		t.Errorf("TotalWeight() = %v, want %v", got, want)
	}
}

func TestDecayingHistogramMergeLeavesOtherUnchanged(t *testing.T) {
	opts := DefaultCPUHistogramOptions()
	day := 24 * time.Hour
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	old := NewDecayingHistogram(opts, day)
	old.AddSample(1, 0.1, start)
	young := NewDecayingHistogram(opts, day)
	young.AddSample(2, 0.1, start.Add(200*day))
	snapshot := old.clone()

	merged := NewDecayingHistogram(opts, day)
	for _, h := range []*DecayingHistogram{&young, &old} {
		if err := merged.Merge(h); err != nil {
			t.Fatal(err)
		}
	}
	if !old.Equal(&snapshot) {
		t.Errorf("Merge modified its argument")
	}
	if got, want := merged.ReferenceTimestamp(), young.ReferenceTimestamp(); !got.Equal(want) {
		t.Errorf("merged reference = %v, want %v", got, want)
	}
	if err := merged.Merge(&DecayingHistogram{h: NewHistogram(opts), halfLife: time.Hour}); err == nil {
		t.Errorf("Merge with a different half-life succeeded")
	}
}

func TestHistogramCheckpointEncoding(t *testing.T) {
	opts := DefaultCPUHistogramOptions()
	ref := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := map[string]struct {
		weights   map[float64]float64 // value → weight
		want      map[int]uint32
		wantTotal float64
	}{
		"single value weighs 10000": {
			weights:   map[float64]float64{1: 3},
			want:      map[int]uint32{opts.FindBucket(1): 10000},
			wantTotal: 3,
		},
		"tiny bucket is dropped": {
			weights:   map[float64]float64{1: 1, 2: 100000},
			want:      map[int]uint32{opts.FindBucket(2): 10000},
			wantTotal: 100001,
		},
		"weights 1, 10000 and 50 keep their scale": {
			weights:   map[float64]float64{1: 1, 2: 10000, 3: 50},
			want:      map[int]uint32{opts.FindBucket(1): 1, opts.FindBucket(2): 10000, opts.FindBucket(3): 50},
			wantTotal: 10051,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d := NewDecayingHistogram(opts, 24*time.Hour)
			d.setReference(ref)
			for v, w := range tc.weights {
				d.AddSample(v, w, ref)
			}
			c := encodeHistogram(&d)
			if c.TotalWeight != tc.wantTotal {
				t.Errorf("TotalWeight = %v, want %v", c.TotalWeight, tc.wantTotal)
			}
			if len(c.BucketWeights) != len(tc.want) {
				t.Errorf("BucketWeights = %v, want %v", c.BucketWeights, tc.want)
			}
			for b, w := range tc.want {
				if c.BucketWeights[b] != w {
					t.Errorf("BucketWeights = %v, want %v", c.BucketWeights, tc.want)
				}
			}
			if !c.ReferenceTimestamp.Time.Equal(ref) {
				t.Errorf("ReferenceTimestamp = %v, want %v", c.ReferenceTimestamp, ref)
			}
		})
	}
}

func TestHistogramCheckpointDecoding(t *testing.T) {
	d := NewDecayingHistogram(DefaultCPUHistogramOptions(), 24*time.Hour)
	c := vpav1.HistogramCheckpoint{BucketWeights: map[int]uint32{0: 1, 1: 2}, TotalWeight: 6}
	if err := decodeHistogram(&d, &c); err != nil {
		t.Fatal(err)
	}
	if got := d.h.weight(0); got != 2 {
		t.Errorf("bucket 0 = %v, want 2", got)
	}
	if got := d.h.weight(1); got != 4 {
		t.Errorf("bucket 1 = %v, want 4", got)
	}
	if got := d.TotalWeight(); got != 6 {
		t.Errorf("TotalWeight() = %v, want 6", got)
	}
}

func TestHistogramBuckets(t *testing.T) {
	opts := DefaultMemoryHistogramOptions()
	h := NewHistogram(opts)
	h.AddSample(0, 2)
	h.AddSample(5e8, 1)
	h.AddSample(2e9, 3)
	h.AddSample(1e9, 1)
	h.SubtractSample(1e9, 1) // an emptied bucket inside the window is skipped
	type bucket struct {
		b             int
		start, weight float64
	}
	var got []bucket
	h.Buckets(func(b int, start, weight float64) { got = append(got, bucket{b, start, weight}) })
	want := []bucket{{0, 0, 2}, {opts.FindBucket(5e8), opts.BucketStart(opts.FindBucket(5e8)), 1}, {opts.FindBucket(2e9), opts.BucketStart(opts.FindBucket(2e9)), 3}}
	if len(got) != len(want) {
		t.Fatalf("Buckets visited %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("bucket %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	empty := NewHistogram(opts)
	empty.Buckets(func(int, float64, float64) { t.Error("empty histogram visited a bucket") })
}
