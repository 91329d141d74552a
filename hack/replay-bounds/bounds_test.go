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

package main

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openvpa/openvpa/kubectl-vpa/replay"
)

// t0 is the time of the first sample of the hand-made traces.
var t0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// hourly returns a container sampled every hour from t0 with the given
// usage, and the same requests at every sample.
func hourly(cpu, mem []float64, cpuReq, memReq float64) *replay.Container {
	c := &replay.Container{Name: "c"}
	for i := range cpu {
		c.Samples = append(c.Samples, replay.Sample{Time: t0.Add(time.Duration(i) * time.Hour), CPU: cpu[i], Memory: mem[i], CPURequest: cpuReq, MemoryRequest: memReq})
	}
	return c
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// peaksTrace builds one workload per element of peaks: a container sampled
// hourly for len(peaks) days whose memory is 100 B except one sample a day at
// that day's peak.
func peaksTrace(peaks ...[]float64) *replay.Trace {
	tr := &replay.Trace{}
	for i, days := range peaks {
		n := 24 * len(days)
		cpu, mem := make([]float64, n), make([]float64, n)
		for j := range n {
			cpu[j], mem[j] = 1, 100
		}
		for d, p := range days {
			mem[24*d+12] = p
		}
		tr.Workloads = append(tr.Workloads, &replay.Workload{Name: string(rune('a' + i)), Containers: []*replay.Container{hourly(cpu, mem, 0, 0)}})
	}
	return tr
}

func TestBoundsByHand(t *testing.T) {
	// a: steady peaks of 200 B. b: 200 B, with a jump to 400 B on day 2.
	// Every day's p95 is 100 B (one sample in 24 is the peak), so a request
	// r scores slack 1 − 100/r: 0.5 at 200, 0.75 at 400, 0.875 at 800.
	tr := peaksTrace([]float64{200, 200, 200, 200, 200}, []float64{200, 200, 400, 200, 200})
	points := Bounds(tr)
	find, findAnswered := findBound(t, points, false), findBound(t, points, true)
	// With kills answered, b's day 2 at 200 B is killed at hour 12 and asks
	// for 400 B from hour 13 on: its mean request is (13·200 + 11·400) / 24.
	answeredDay2 := 1 - 100/((13*200.0+11*400)/24)
	for _, tc := range []struct {
		name           string
		got            BoundPoint
		slack, oomFree float64
	}{
		// Days 1–4 of both.
		{"oracle", find(BoundOracle, 0, 0, 0), (7*0.5 + 0.75) / 8, 1},
		// The peak is in the second half of the day: 100 B is requested for
		// the first, so a day's mean request is (100 + peak) / 2, against a
		// p95 of 100 B: slack 1/3 at a peak of 200 B, 0.6 at 400 B.
		{"oracle, 2 parts", find(BoundOracle, 0, 0, 0, 2), (7.0/3 + 0.6) / 8, 1},
		// As the recent-peak rule, for the second half only: b's day 2 asks
		// for day 1's 200 B (OOM), day 3 for day 2's 400 B.
		{"part peak, 2 parts, 1 day, no margin", find(BoundPartPeak, 1, 0, 0, 2), (7.0/3 + 0.6) / 8, 7.0 / 8},
		// b: 200, 200 (OOM), 400, 200.
		{"recent peak, 1 day, no margin", find(BoundRecentPeak, 1, 0, 0), (7*0.5 + 0.75) / 8, 7.0 / 8},
		// The same request at the start of each day; day 2 is still an OOM day.
		{"recent peak, 1 day, no margin, kills answered", findAnswered(BoundRecentPeak, 1, 0, 0), (6*0.5 + answeredDay2 + 0.75) / 8, 7.0 / 8},
		// Margin 1 kills nothing, so answering changes nothing.
		{"recent peak, 1 day, margin 1, kills answered", findAnswered(BoundRecentPeak, 1, 1, 0), (7*0.75 + 0.875) / 8, 1},
		// a: 400 each day; b: 400, 400, 800, 400.
		{"recent peak, 1 day, margin 1", find(BoundRecentPeak, 1, 1, 0), (7*0.75 + 0.875) / 8, 1},
		// b: 200, 200 (OOM), 400, 400: the jump is covered one day longer.
		{"recent peak, 2 days, no margin", find(BoundRecentPeak, 2, 0, 0), (6*0.5 + 2*0.75) / 8, 7.0 / 8},
		// In hindsight a keeps margin 0. For b, covering day 2 takes margin
		// 1 (slack 3.125 over its days, against 2.25 and one OOM day at
		// margin 0): a penalty of 0.5 keeps the OOM day, 1 covers it.
		{"hindsight, penalty 0.5", find(BoundHindsightMargin, 1, 0, 0.5), (7*0.5 + 0.75) / 8, 7.0 / 8},
		{"hindsight, penalty 1", find(BoundHindsightMargin, 1, 0, 1), (4*0.5 + 3.125) / 8, 1},
		// With kills answered b's margin 0 costs 0.5 + answeredDay2 + 0.75 +
		// 0.5 ≈ 2.41 and one OOM day, against 3.125 at margin 1: a penalty
		// of 0.75 now covers day 2 (without answers it costs 2.25 + 0.75 and
		// keeps the OOM day).
		{"hindsight, penalty 0.5, kills answered", findAnswered(BoundHindsightMargin, 1, 0, 0.5), (6*0.5 + answeredDay2 + 0.75) / 8, 7.0 / 8},
		{"hindsight, penalty 0.75", find(BoundHindsightMargin, 1, 0, 0.75), (7*0.5 + 0.75) / 8, 7.0 / 8},
		{"hindsight, penalty 0.75, kills answered", findAnswered(BoundHindsightMargin, 1, 0, 0.75), (4*0.5 + 3.125) / 8, 1},
		// Going forward, each first day knows nothing and takes the largest
		// margin, 3 (800 B: slack 0.875); later days the cheapest so far.
		// a: margin 0 from day 2 on. b: margin 0 on day 2 (OOM); on day 3
		// margin 0 has cost 0.5 + 0.5 + penalty against 0.75 + 0.75 at
		// margin 1: a penalty of 0.25 keeps margin 0 (400 B, then 200 B),
		// 1 moves to margin 1 (800 B, then 400 B).
		{"forward, penalty 0.25", find(BoundForwardMargin, 1, 0, 0.25), (0.875 + 3*0.5 + 0.875 + 0.5 + 0.75 + 0.5) / 8, 7.0 / 8},
		{"forward, penalty 1", find(BoundForwardMargin, 1, 0, 1), (0.875 + 3*0.5 + 0.875 + 0.5 + 0.875 + 0.75) / 8, 7.0 / 8},
		{"forward, penalty 0.25, kills answered", findAnswered(BoundForwardMargin, 1, 0, 0.25), (0.875 + 3*0.5 + 0.875 + answeredDay2 + 0.75 + 0.5) / 8, 7.0 / 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !near(tc.got.MemorySlackMean, tc.slack) || !near(tc.got.OOMFreeFraction, tc.oomFree) || tc.got.WorkloadDays != 8 {
				t.Errorf("got slack %v, OOM-free %v over %d days; want %v, %v over 8", tc.got.MemorySlackMean, tc.got.OOMFreeFraction,
					tc.got.WorkloadDays, tc.slack, tc.oomFree)
			}
		})
	}

	leanest := LeanestBound(points, 1)
	var rules []string
	for _, p := range leanest {
		rules = append(rules, p.Rule+" "+p.Setting())
	}
	// Fully OOM-free: the recent-peak rule needs margin 1 and is leanest
	// with 1 day, and so is part-peak; hindsight at the first horizon and
	// penalty that covers b (a lower one with kills answered). A rule that
	// kills nothing answers nothing.
	if got, want := strings.Join(rules, "; "), "oracle each day's peak; oracle 2 parts, each part's peak; oracle 4 parts, each part's peak; "+
		"recent-peak 1d, margin 1; recent-peak 1d, margin 1, kills answered; part-peak 2 parts, 1d, margin 1; part-peak 4 parts, 1d, margin 1; "+
		"hindsight-margin 1d, penalty 1; hindsight-margin 1d, penalty 0.75, kills answered"; got != want {
		t.Errorf("leanest fully OOM-free settings: %s, want %s", got, want)
	}

	var csv bytes.Buffer
	if err := WriteBoundsCSV(&csv, []BoundPoint{find(BoundOracle, 0, 0, 0, 2), find(BoundRecentPeak, 1, 0, 0), findAnswered(BoundRecentPeak, 1, 0, 0)}); err != nil {
		t.Fatal(err)
	}
	want := "rule,horizon_days,margin,penalty,workload_days,memory_slack_mean,memory_slack_median,oom_free_fraction,day_parts,kills_answered\n" +
		"oracle,0,0,0,8,0.3667,0.3333,1.0000,2,false\n" +
		"recent-peak,1,0,0,8,0.5312,0.5000,0.8750,1,false\n" +
		"recent-peak,1,0,0,8,0.5509,0.5000,0.8750,1,true\n"
	if csv.String() != want {
		t.Errorf("bounds.csv:\n%s\nwant:\n%s", csv.String(), want)
	}
}

// findBound returns a function that finds the point of a rule's setting in
// points, with one part of the day unless parts says otherwise, its kills
// answered or not.
func findBound(t *testing.T, points []BoundPoint, answered bool) func(rule string, horizon int, margin, penalty float64, parts ...int) BoundPoint {
	return func(rule string, horizon int, margin, penalty float64, parts ...int) BoundPoint {
		t.Helper()
		n := 1
		if len(parts) > 0 {
			n = parts[0]
		}
		for _, p := range points {
			if p.Rule == rule && p.Horizon == horizon && p.Margin == margin && p.Penalty == penalty && p.Parts == n && p.Answered == answered {
				return p
			}
		}
		t.Fatalf("no %s point at %dd, margin %v, penalty %v, %d parts, kills answered %v", rule, horizon, margin, penalty, n, answered)
		return BoundPoint{}
	}
}

func TestBoundsPartPeak(t *testing.T) {
	// Hourly samples at 100 B. Day 0 has only its first 12 hours, with a
	// 200 B peak at hour 3; day 1 peaks at 200 B at hour 15, day 2 at hour
	// 3, day 3 at 300 B at hour 15.
	mem := make([]float64, 24*4)
	for i := range mem {
		mem[i] = 100
	}
	at := func(day, hour int) int { return 24*day + hour }
	mem[at(0, 3)], mem[at(1, 15)], mem[at(2, 3)], mem[at(3, 15)] = 200, 200, 200, 300
	c := hourly(make([]float64, len(mem)), mem, 0, 0)
	c.Samples = slices.Delete(c.Samples, 12, 24)
	tr := &replay.Trace{Workloads: []*replay.Workload{{Name: "w", Containers: []*replay.Container{c}}}}
	find := findBound(t, Bounds(tr), false)
	// p95 of every scored day: 100 B. With 2 parts and 1 day:
	//   day 1: the first half asks for day 0's 200 B; day 0 has no second
	//     half, so the second asks for its whole-day peak, 200 B: slack 0.5.
	//   day 2: the first half asks for day 1's first half, 100 B, and its
	//     peak at hour 3 is an OOM; the second for 200 B: slack 1/3.
	//   day 3: 200 B and 100 B (OOM at hour 15): slack 1/3.
	// The whole-day rule asks for 200 B every day: day 3 is its only OOM.
	for _, tc := range []struct {
		name           string
		got            BoundPoint
		slack, oomFree float64
	}{
		{"part peak", find(BoundPartPeak, 1, 0, 0, 2), (0.5 + 2.0/3) / 3, 1.0 / 3},
		{"recent peak", find(BoundRecentPeak, 1, 0, 0), 0.5, 2.0 / 3},
		// Each part's own peak: 200 B and 100 B, 100 B and 200 B, 100 B and 300 B.
		{"oracle of parts", find(BoundOracle, 0, 0, 0, 2), (2.0/3 + 1 - 100.0/200) / 3, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !near(tc.got.MemorySlackMean, tc.slack) || !near(tc.got.OOMFreeFraction, tc.oomFree) || tc.got.WorkloadDays != 3 {
				t.Errorf("got slack %v, OOM-free %v over %d days; want %v, %v over 3", tc.got.MemorySlackMean, tc.got.OOMFreeFraction,
					tc.got.WorkloadDays, tc.slack, tc.oomFree)
			}
		})
	}
}

func TestBoundsSkipDaysWithoutHistory(t *testing.T) {
	// A container whose samples start on day 1 of its workload: its first
	// day is scored in a replay but has no earlier day to go on.
	tr := peaksTrace([]float64{200, 200, 200})
	late := peaksTrace([]float64{300, 300}).Workloads[0].Containers[0]
	late.Name = "late"
	for i := range late.Samples {
		late.Samples[i].Time = late.Samples[i].Time.Add(replay.Day)
	}
	tr.Workloads[0].Containers = append(tr.Workloads[0].Containers, late)
	for _, p := range Bounds(tr) {
		// Days 1 and 2 of the first container, day 2 of the late one.
		if p.WorkloadDays != 3 {
			t.Errorf("%s %s: %d days, want 3", p.Rule, p.Setting(), p.WorkloadDays)
		}
	}
}

func TestBoundsHindsightDoesNotBuyNegativeSlack(t *testing.T) {
	// Day 1 runs at 1000 B all day after a day at 100 B: under any margin it
	// is an OOM day, with slack far below 0 (−9 at margin 0, −5.7 at 0.5).
	// Day 2 peaks at 1500 B once: margin 0.5 over day 1's 1000 B covers it.
	mem := make([]float64, 72)
	for i := range mem {
		mem[i] = 100
		if i >= 24 && i < 48 {
			mem[i] = 1000
		}
	}
	mem[60] = 1500
	tr := &replay.Trace{Workloads: []*replay.Workload{{Name: "w", Containers: []*replay.Container{hourly(make([]float64, 72), mem, 0, 0)}}}}
	for _, p := range Bounds(tr) {
		// Summing slack as is, margin 0 would look cheaper (−8.1 and two
		// OOM days against −4.7 and one) and keep day 2's OOM.
		if p.Rule == BoundHindsightMargin && p.Horizon == 1 && p.Penalty == 1 && p.OOMFreeFraction != 0.5 {
			t.Errorf("hindsight margin at penalty 1: OOM-free %v, want 0.5 (only day 1)", p.OOMFreeFraction)
		}
	}
}
