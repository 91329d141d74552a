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
	"testing"
	"time"

	"github.com/openvpa/openvpa/recommender/model"
)

func TestAdaptiveMemoryRule(t *testing.T) {
	opts := model.DefaultMemoryHistogramOptions()
	edge := func(v float64) float64 { return opts.BucketStart(opts.FindBucket(v) + 1) }
	now := time.Date(2024, 1, 10, 0, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	type peak struct {
		bytes float64
		age   time.Duration
	}
	// steady returns a 1e9 B peak for each of the last n days.
	steady := func(n int, extra ...peak) []peak {
		var out []peak
		for i := range n {
			out = append(out, peak{1e9, time.Duration(i) * day})
		}
		return append(out, extra...)
	}
	// older returns a 1e9 B peak for each day from 4 to 13 days ago.
	older := func(extra ...peak) []peak {
		var out []peak
		for i := 4; i < 14; i++ {
			out = append(out, peak{1e9, time.Duration(i) * day})
		}
		return append(out, extra...)
	}
	tests := map[string]struct {
		peaks   []peak
		history time.Duration
		cfg     func(*AdaptiveConfig)
		noNow   bool
		// want* in bytes before truncation; compared within 2 bytes + 1e-8.
		wantLower, wantTarget, wantUpper float64
	}{
		"empty histogram": {},
		"only zero peaks read as the first bucket": {
			peaks:     []peak{{0, 0}, {5e6, day}},
			wantLower: 1e7, wantTarget: 1e7, wantUpper: 1e7,
		},
		// Every arm has the same level; headroom is least without margin.
		"single peak, no history yet": {
			peaks:     []peak{{1e9, 0}},
			wantLower: edge(1e9), wantTarget: edge(1e9), wantUpper: 2 * edge(1e9),
		},
		// The young margin 3/1.
		"one day of history": {
			peaks:     []peak{{1e9, 0}},
			history:   day,
			wantLower: edge(1e9), wantTarget: 4 * edge(1e9), wantUpper: 8 * edge(1e9),
		},
		// The young margin 3/1 is capped at 2.
		"young margin capped": {
			peaks:     []peak{{1e9, 0}},
			history:   day,
			cfg:       func(c *AdaptiveConfig) { c.MemoryMaxExtraMargin = 2 },
			wantLower: edge(1e9), wantTarget: 3 * edge(1e9), wantUpper: 6 * edge(1e9),
		},
		// 40 days: young margin 3/40; half the weight reads as zero: 0.2·1.
		"zero peaks and long history": {
			peaks:     []peak{{0, 0}, {1e9, 0}},
			history:   40 * day,
			wantLower: edge(1e9), wantTarget: edge(1e9) * (1 + 0.075 + 0.2), wantUpper: 2 * edge(1e9) * 1.275,
		},
		// A 2e9 peak 3 days ago holds about 1/16 of the weight: leaving it
		// uncovered costs 256/16 = 16, far more than the headroom of
		// covering it (about 0.55), so an arm covering it wins. (It is too
		// old to count as a jump.)
		"recent spike is covered": {
			peaks:     steady(10, peak{2e9, 3 * day}),
			history:   40 * day,
			wantLower: edge(2e9), wantTarget: edge(2e9) * 1.075, wantUpper: 2 * edge(2e9) * 1.075,
		},
		// Two days old it is recent: a jump of about 1 over the 1e9 peaks,
		// margin 2, capped at 1.
		"recent spike is a jump": {
			peaks:     steady(10, peak{2e9, 2 * day}),
			history:   40 * day,
			wantLower: edge(2e9), wantTarget: 2 * edge(2e9), wantUpper: 4 * edge(2e9),
		},
		// Ten days old it holds about 2^-11 of the weight: uncovered it costs
		// 256/2048 = 0.125, less than the headroom covering it would add.
		"old spike is not worth covering": {
			peaks:     steady(10, peak{2e9, 10 * day}),
			history:   40 * day,
			wantLower: edge(1e9), wantTarget: edge(1e9) * 1.075, wantUpper: 2 * edge(1e9) * 1.075,
		},
		// With a higher overrun cost the same old spike is covered.
		"overrun cost decides": {
			peaks:     steady(10, peak{2e9, 10 * day}),
			history:   40 * day,
			cfg:       func(c *AdaptiveConfig) { c.MemoryOverrunCost = 4096 },
			wantLower: edge(2e9), wantTarget: edge(2e9) * 1.075, wantUpper: 2 * edge(2e9) * 1.075,
		},
		// Peaks of 1e9 from 4 to 13 days ago (together lighter than one
		// peak 2 days ago) and one of 1.3e9 now: a jump of e13/e10 − 1
		// over the older peaks, margin twice that, above the arms' 7.5%.
		"recent jump above older peaks": {
			peaks:     older(peak{1.3e9, 0}),
			history:   40 * day,
			wantLower: edge(1.3e9), wantTarget: edge(1.3e9) * (1 + 2*(edge(1.3e9)/edge(1e9)-1)),
			wantUpper: 2 * edge(1.3e9) * (1 + 2*(edge(1.3e9)/edge(1e9)-1)),
		},
		// A jump to 3e9 would be a margin of about 4: capped at 1.
		"jump margin capped": {
			peaks:     older(peak{3e9, 0}),
			history:   40 * day,
			wantLower: edge(3e9), wantTarget: 2 * edge(3e9), wantUpper: 4 * edge(3e9),
		},
		// The same 1.3e9 peak 2.5 days ago is no longer recent; the arms
		// cover it.
		"older jump is not recent": {
			peaks:     older(peak{1.3e9, 60 * time.Hour}),
			history:   40 * day,
			wantLower: edge(1.3e9), wantTarget: edge(1.3e9) * 1.075, wantUpper: 2 * edge(1.3e9) * 1.075,
		},
		// With a record window of 3 days it still is.
		"record window decides": {
			peaks:     older(peak{1.3e9, 60 * time.Hour}),
			history:   40 * day,
			cfg:       func(c *AdaptiveConfig) { c.MemoryRecordWindow = 3 * day },
			wantLower: edge(1.3e9), wantTarget: edge(1.3e9) * (1 + 2*(edge(1.3e9)/edge(1e9)-1)),
			wantUpper: 2 * edge(1.3e9) * (1 + 2*(edge(1.3e9)/edge(1e9)-1)),
		},
		// Without a time to measure recency against there is no jump.
		"no latest sample time": {
			peaks:     older(peak{1.3e9, 0}),
			history:   40 * day,
			noNow:     true,
			wantLower: edge(1.3e9), wantTarget: edge(1.3e9) * 1.075, wantUpper: 2 * edge(1.3e9) * 1.075,
		},
		"record factor 0 turns it off": {
			peaks:     older(peak{1.3e9, 0}),
			history:   40 * day,
			cfg:       func(c *AdaptiveConfig) { c.MemoryRecordFactor = 0 },
			wantLower: edge(1.3e9), wantTarget: edge(1.3e9) * 1.075, wantUpper: 2 * edge(1.3e9) * 1.075,
		},
		// One horizon: the level is the 1e9 bucket; a 1.04e9 peak five days
		// old (2^-6 of the weight) is covered more cheaply by the 10% margin
		// than left over (overrun cost about 4).
		"margin arm": {
			peaks:     steady(10, peak{1.04e9, 5 * day}),
			history:   40 * day,
			cfg:       func(c *AdaptiveConfig) { c.MemoryHorizons = []time.Duration{day}; c.MemoryYoungMargin = 0 },
			wantLower: edge(1e9), wantTarget: edge(1e9) * 1.1, wantUpper: 2 * edge(1e9) * 1.1,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cfg := DefaultAdaptiveConfig()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			h := model.NewDecayingHistogram(opts, 24*time.Hour)
			for _, p := range tc.peaks {
				h.AddSample(p.bytes, 1, now.Add(-p.age))
			}
			at := now
			if tc.noNow {
				at = time.Time{}
			}
			r := NewAdaptive(DefaultConfig(), cfg).MemoryRule(&h, tc.history, at)
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

// TestAdaptiveCPUAndRestoresFromCheckpoint checks that CPU is the percentile
// chain with the adaptive CPU target percentile (0.93, not 0.9) and the same
// bounds, and that memory restores from a checkpoint.
func TestAdaptiveCPUAndRestoresFromCheckpoint(t *testing.T) {
	a := model.NewAggregateState(nil, time.Unix(0, 0))
	c := model.NewContainerState(a)
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	var end time.Time
	for i := range 3 * 24 * 60 {
		end = start.Add(time.Duration(i) * time.Minute)
		// 92% of the time 300m, 8% 1000m: P90 is 300m's bucket, P93 1000m's.
		cpu := model.ResourceAmount(300)
		if i%100 >= 92 {
			cpu = 1000
		}
		c.AddCPUSample(end, cpu)
		mem := 2e9
		if i == 36*60 {
			mem = 3e9
		}
		c.AddMemorySample(end, model.MemoryAmountFromBytes(mem))
	}
	aggs := map[string]*model.AggregateState{"app": a}
	est := NewAdaptive(DefaultConfig(), DefaultAdaptiveConfig())
	pct := NewPercentile(DefaultConfig()).Recommend(aggs, nil, nil).Containers[0]
	p93 := DefaultConfig()
	p93.TargetCPUPercentile = 0.93
	pct93 := NewPercentile(p93).Recommend(aggs, nil, nil).Containers[0]
	got := est.Recommend(aggs, nil, nil).Containers[0]
	if pct.Target.Cpu().Equal(*pct93.Target.Cpu()) {
		t.Fatalf("the samples do not tell P90 (%v) from P93 (%v)", pct.Target.Cpu(), pct93.Target.Cpu())
	}
	if !pct93.Target.Cpu().Equal(*got.Target.Cpu()) || !pct.LowerBound.Cpu().Equal(*got.LowerBound.Cpu()) || !pct.UpperBound.Cpu().Equal(*got.UpperBound.Cpu()) {
		t.Errorf("CPU: adaptive %v; want the P93 target %v and percentile's bounds %v, %v",
			got, pct93.Target.Cpu(), pct.LowerBound.Cpu(), pct.UpperBound.Cpu())
	}
	// The estimator needs nothing but the histograms: a checkpoint (without
	// the open window, as the recommender writes it at a window's end)
	// restores the same recommendation.
	cp, err := model.SaveCheckpoint(a, nil, end)
	if err != nil {
		t.Fatal(err)
	}
	restored, err := model.RestoreCheckpoint(nil, &cp, end)
	if err != nil {
		t.Fatal(err)
	}
	again := est.Recommend(map[string]*model.AggregateState{"app": restored}, nil, nil).Containers[0]
	if !again.Target.Memory().Equal(*got.Target.Memory()) || !again.LowerBound.Memory().Equal(*got.LowerBound.Memory()) || !again.UpperBound.Memory().Equal(*got.UpperBound.Memory()) {
		t.Errorf("memory after restore %v, before %v", again, got)
	}
	// The 3e9 peak of day 2 is covered: its bucket's edge plus the young
	// margin 3/3 days (the margin arms are not worth more headroom). It is
	// also a recent jump of 1.5 over the 2e9 peaks, whose margin 2·0.5 is
	// capped at 1: the same target.
	opts := model.DefaultMemoryHistogramOptions()
	edge := opts.BucketStart(opts.FindBucket(3e9) + 1)
	want := edge * (1 + 3/(float64(3*24*60-1)/(24*60)))
	if v := float64(got.Target.Memory().Value()); v < want-2 || v > want+2 {
		t.Errorf("memory target %.0f, want %.0f", v, want)
	}
}

// TestAdaptiveKillsEscalate replays a workload that steadily peaks at 1e9 B
// for ten days and then needs 8e9 B: every kill at the request records
// upstream's bump (1.2 × request) and the recommendation is applied at
// once, as the updater's quick-OOM rule does. The jump margin grows with
// every kill of the window, so fewer kills reach the need; the
// recommendation is the same from a checkpoint.
func TestAdaptiveKillsEscalate(t *testing.T) {
	tests := map[string]struct {
		recordFactor float64
		wantKills    int
	}{
		"without the jump margin":      {recordFactor: 0, wantKills: 4},
		"with the default jump margin": {recordFactor: 2, wantKills: 3},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			a := model.NewAggregateState(nil, time.Unix(0, 0))
			c := model.NewContainerState(a)
			start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
			now := start
			for i := range 10 * 24 * 12 {
				now = start.Add(time.Duration(i) * 5 * time.Minute)
				c.AddCPUSample(now, 300)
				c.AddMemorySample(now, model.MemoryAmountFromBytes(1e9))
			}
			cfg := DefaultAdaptiveConfig()
			cfg.MemoryRecordFactor = tc.recordFactor
			est := NewAdaptive(DefaultConfig(), cfg)
			aggs := map[string]*model.AggregateState{"app": a}
			request := est.Recommend(aggs, nil, nil).Containers[0].Target.Memory().Value()
			kills := 0
			for ; float64(request) < 8e9 && kills < 20; kills++ {
				now = now.Add(5 * time.Minute)
				c.AddCPUSample(now, 300)
				if err := c.RecordOOM(now, model.ResourceAmount(request)); err != nil {
					t.Fatal(err)
				}
				request = est.Recommend(aggs, nil, nil).Containers[0].Target.Memory().Value()
			}
			if kills != tc.wantKills {
				t.Errorf("%d kills to reach 8e9 B, want %d", kills, tc.wantKills)
			}
			cp, err := model.SaveCheckpoint(a, nil, now)
			if err != nil {
				t.Fatal(err)
			}
			restored, err := model.RestoreCheckpoint(nil, &cp, now)
			if err != nil {
				t.Fatal(err)
			}
			again := est.Recommend(map[string]*model.AggregateState{"app": restored}, nil, nil).Containers[0].Target.Memory().Value()
			if d := float64(again-request) / float64(request); d > 1e-3 || d < -1e-3 {
				t.Errorf("target after restore %d, before %d", again, request)
			}
		})
	}
}
