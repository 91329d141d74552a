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
	"strings"
	"testing"
	"time"

	"github.com/openvpa/openvpa/recommender/model"
)

func TestPeakMemoryRule(t *testing.T) {
	opts := model.DefaultMemoryHistogramOptions()
	edge := func(v float64) float64 { return opts.BucketStart(opts.FindBucket(v) + 1) }
	now := time.Date(2024, 1, 10, 0, 0, 0, 0, time.UTC)
	type peak struct {
		bytes float64
		age   time.Duration
	}
	tests := map[string]struct {
		peaks   []peak
		history time.Duration
		cfg     func(*PeakConfig)
		// want* in bytes before truncation; compared within 2 bytes + 1e-8.
		wantLower, wantTarget, wantUpper float64
	}{
		"empty histogram": {},
		"only zero peaks read as the first bucket": {
			peaks:     []peak{{0, 0}, {5e6, 24 * time.Hour}},
			wantLower: 1e7, wantTarget: 1e7, wantUpper: 1e7,
		},
		// One peak: high = typical = its bucket's upper edge, margin 0.15
		// (no history yet: no young margin).
		"single peak": {
			peaks:     []peak{{1e9, 0}},
			wantLower: edge(1e9), wantTarget: edge(1e9) * 1.15, wantUpper: edge(1e9) * 1.15 * 2,
		},
		// Half the weight reads as zero: z/(1−z) = 1 adds the zero factor
		// 0.2; one day of history adds the young margin 0.5/1.
		"zero peaks and young history": {
			peaks:     []peak{{0, 0}, {1e9, 0}},
			history:   24 * time.Hour,
			wantLower: edge(1e9), wantTarget: edge(1e9) * (1 + 0.15 + 0.2 + 0.5), wantUpper: edge(1e9) * 1.85 * 2,
		},
		// A peak 20 days old weighs 2^-20 of a fresh one: beyond the 14-day
		// horizon it no longer sets the target.
		"old high peak fades beyond the horizon": {
			peaks:     []peak{{4e9, 20 * 24 * time.Hour}, {1e9, 0}},
			history:   40 * 24 * time.Hour,
			wantLower: edge(1e9), wantTarget: edge(1e9) * (1.15 + 0.5/40), wantUpper: edge(1e9) * (1.15 + 0.5/40) * 2,
		},
		"peak within the horizon sets the target": {
			peaks:     []peak{{4e9, 5 * 24 * time.Hour}, {1e9, 0}},
			history:   40 * 24 * time.Hour,
			wantLower: edge(4e9), wantTarget: edge(4e9) * (1.15 + 0.5/40), wantUpper: edge(4e9) * (1.15 + 0.5/40) * 2,
		},
		"variability adds margin up to the cap": {
			peaks: []peak{{1e8, 0}, {1e8, 0}, {1e9, 0}},
			cfg:   func(c *PeakConfig) { c.MemoryVariabilityFactor = 1 },
			// high/typical − 1 ≈ 9, so the margin is capped at 1.
			wantLower: edge(1e9), wantTarget: edge(1e9) * 2, wantUpper: edge(1e9) * 4,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cfg := DefaultPeakConfig()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			h := model.NewDecayingHistogram(opts, 24*time.Hour)
			for _, p := range tc.peaks {
				h.AddSample(p.bytes, 1, now.Add(-p.age))
			}
			r := NewPeak(DefaultConfig(), cfg).MemoryRule(&h, tc.history)
			for _, c := range []struct {
				name string
				got  model.ResourceAmount
				want float64
			}{{"lower", r.Lower, tc.wantLower}, {"target", r.Target, tc.wantTarget}, {"upper", r.Upper, tc.wantUpper}} {
				if d := float64(c.got) - c.want; d > 2+1e-8*c.want || d < -2-1e-8*c.want {
					t.Errorf("%s = %d, want %.0f", c.name, c.got, c.want)
				}
			}
		})
	}
}

func TestPeakRecommendKeepsPercentileCPU(t *testing.T) {
	a := model.NewAggregateState(nil, time.Unix(0, 0))
	c := model.NewContainerState(a)
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 3 * 24 * 60 {
		ts := start.Add(time.Duration(i) * time.Minute)
		c.AddCPUSample(ts, 300)
		c.AddMemorySample(ts, model.ResourceAmount(2e9))
	}
	aggs := map[string]*model.AggregateState{"app": a}
	pct := NewPercentile(DefaultConfig()).Recommend(aggs, nil, nil).Containers[0]
	peak := NewPeak(DefaultConfig(), DefaultPeakConfig()).Recommend(aggs, nil, nil).Containers[0]
	if !pct.Target.Cpu().Equal(*peak.Target.Cpu()) || !pct.LowerBound.Cpu().Equal(*peak.LowerBound.Cpu()) || !pct.UpperBound.Cpu().Equal(*peak.UpperBound.Cpu()) {
		t.Errorf("CPU differs: percentile %v, peak %v", pct, peak)
	}
	// Steady 2e9 B peaks: margin 0.15 + young 0.5/3 days over the bucket edge.
	opts := model.DefaultMemoryHistogramOptions()
	edge := opts.BucketStart(opts.FindBucket(2e9) + 1)
	want := edge * (1 + 0.15 + 0.5/(float64(3*24*60-1)/(24*60)))
	if got := float64(peak.Target.Memory().Value()); got < want-2 || got > want+2 {
		t.Errorf("memory target %.0f, want %.0f", got, want)
	}
}

func TestBuild(t *testing.T) {
	tests := map[string]struct {
		name     string
		opts     func(*Options)
		wantName string
		wantErr  string
	}{
		"default is percentile": {name: "", wantName: PercentileName},
		"percentile":            {name: "percentile", wantName: PercentileName},
		"peak":                  {name: "peak", wantName: PeakName},
		"adaptive":              {name: "adaptive", wantName: AdaptiveName},
		"invalid adaptive config": {name: "adaptive", opts: func(o *Options) { o.Adaptive.MemoryMargins = []float64{0, -1} },
			wantErr: "adaptive memory margin must be a finite number >= 0"},
		"adaptive without arms": {name: "adaptive", opts: func(o *Options) { o.Adaptive.MemoryHorizons = nil },
			wantErr: "horizons and margins must not be empty"},
		"unknown": {name: "oracle", wantErr: `unknown estimator "oracle" (known: percentile, peak, adaptive)`},
		"invalid peak config": {name: "peak", opts: func(o *Options) { o.Peak.MemoryLowerBoundFraction = 2 },
			wantErr: "lower bound fraction must be in (0, 1]"},
		"invalid shared config": {name: "peak", opts: func(o *Options) { o.Config.TargetCPUPercentile = 1.5 },
			wantErr: "target-cpu-percentile"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o := DefaultOptions()
			if tc.opts != nil {
				tc.opts(&o)
			}
			e, err := New(tc.name, o)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || e.Name() != tc.wantName {
				t.Fatalf("got %v, %v; want %s", e, err, tc.wantName)
			}
		})
	}
}
