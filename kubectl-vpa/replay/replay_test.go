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

package replay

import (
	"context"
	"math"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/recommender/estimator"
	"github.com/openvpa/openvpa/recommender/model"
)

// fixedEstimator recommends the same amounts for every container.
type fixedEstimator struct {
	cpu, memory [3]float64 // lower, target, upper (cores, bytes)
}

func (f fixedEstimator) Name() string { return "fixed" }

func (f fixedEstimator) Recommend(aggs map[string]*model.AggregateState, _ *vpav1.PodResourcePolicy, _ map[string]string) estimator.Result {
	list := func(i int) corev1.ResourceList {
		return corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(f.cpu[i]*1000), resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(int64(f.memory[i]), resource.BinarySI),
		}
	}
	var res estimator.Result
	for name := range aggs {
		res.Containers = append(res.Containers, vpav1.RecommendedContainerResources{
			ContainerName: name, LowerBound: list(0), Target: list(1), UpperBound: list(2),
		})
	}
	return res
}

var t0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// hourly builds a container sampled every hour from t0, one sample per
// element of cpu/mem, with fixed provisioned requests.
func hourly(cpu, mem []float64, cpuReq, memReq float64) *Container {
	c := &Container{Name: "c"}
	for i := range cpu {
		c.Samples = append(c.Samples, Sample{Time: t0.Add(time.Duration(i) * time.Hour), CPU: cpu[i], Memory: mem[i], CPURequest: cpuReq, MemoryRequest: memReq})
	}
	return c
}

// handTrace: 72 hourly samples (days 0, 1, 2) plus 5 on day 3. Memory is
// 400 B except one 1200 B sample on day 2; CPU is 1 core except two 1.8-core
// samples on day 1. Provisioned: 2 cores, 1000 B.
func handTrace() *Trace {
	n := 77
	cpu, mem := make([]float64, n), make([]float64, n)
	for i := range n {
		cpu[i], mem[i] = 1, 400
	}
	cpu[30], cpu[31] = 1.8, 1.8
	mem[60] = 1200
	return &Trace{HasRequests: true, Workloads: []*Workload{{Name: "w", Containers: []*Container{hourly(cpu, mem, 2, 1000)}}}}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestReplayMetricsByHand(t *testing.T) {
	// The estimator always recommends 1.5 cores [1, 2] and 500 B [450, 600].
	// At hour 24 the provisioned 1000 B is above the upper bound: the update
	// applies from hour 24 on (day 1, one change); afterwards the requests
	// equal the target and nothing changes.
	est := fixedEstimator{cpu: [3]float64{1, 1.5, 2}, memory: [3]float64{450, 500, 600}}
	res, err := Replay(context.Background(), handTrace(), Options{Estimators: []estimator.Estimator{est}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Days) != 2 || res.Days[0].Day != 1 || res.Days[1].Day != 2 {
		t.Fatalf("scored days %+v, want days 1 and 2 (day 0 is warm-up, day 3 has 5 of 24 samples)", res.Days)
	}
	d1, d2 := res.Days[0], res.Days[1]
	// Day 1: memory p95 400 → slack (500−400)/500; CPU p95 (23rd of 24) is
	// 1.8 → slack (1.5−1.8)/1.5; 2 of 24 CPU samples above 1.5.
	want1 := Score{CPURequestMean: 1.5, MemoryRequestMean: 500, CPUSlack: -0.2, MemorySlack: 0.2, CPUShortfall: 2.0 / 24, Changes: 1}
	// Day 2: one memory sample (1200) above 500 → OOM; p95 still 400.
	want2 := Score{CPURequestMean: 1.5, MemoryRequestMean: 500, CPUSlack: 1.0 / 3, MemorySlack: 0.2, OOMSamples: 1}
	for i, c := range []struct {
		got, want Score
	}{{d1.Scores[0], want1}, {d2.Scores[0], want2}} {
		g, w := c.got, c.want
		if !near(g.CPURequestMean, w.CPURequestMean) || !near(g.MemoryRequestMean, w.MemoryRequestMean) || !near(g.CPUSlack, w.CPUSlack) ||
			!near(g.MemorySlack, w.MemorySlack) || !near(g.CPUShortfall, w.CPUShortfall) || g.OOMSamples != w.OOMSamples || g.Changes != w.Changes {
			t.Errorf("day %d: got %+v, want %+v", i+1, g, w)
		}
	}
	got := res.EstimatorSummary(0)
	want := Summary{WorkloadDays: 2, CPUSlackMean: (-0.2 + 1.0/3) / 2, CPUSlackMedian: (-0.2 + 1.0/3) / 2, MemorySlackMean: 0.2, MemorySlackMedian: 0.2,
		OOMFreeFraction: 0.5, CPUShortfallMean: 1.0 / 24, ChangesPerDayMean: 0.5, ChangesPerDayP99: 1}
	if !summaryNear(got, want) {
		t.Errorf("summary\n got %+v\nwant %+v", got, want)
	}
	// Provisioned: 2 cores, 1000 B throughout; day 2's 1200 B sample is
	// above it too.
	gotP := res.ProvisionedSummary()
	wantP := Summary{WorkloadDays: 2, CPUSlackMean: (0.1 + 0.5) / 2, CPUSlackMedian: 0.3, MemorySlackMean: 0.6, MemorySlackMedian: 0.6, OOMFreeFraction: 0.5}
	if !summaryNear(gotP, wantP) {
		t.Errorf("provisioned summary\n got %+v\nwant %+v", gotP, wantP)
	}
}

func TestReplayWithoutProvisionedRequests(t *testing.T) {
	// Without provisioned requests the pod starts with the first
	// recommendation, which the rule then keeps: no change at all.
	tr := handTrace()
	tr.HasRequests = false
	for i := range tr.Workloads[0].Containers[0].Samples {
		s := &tr.Workloads[0].Containers[0].Samples[i]
		s.CPURequest, s.MemoryRequest = 0, 0
	}
	est := fixedEstimator{cpu: [3]float64{1, 1.5, 2}, memory: [3]float64{450, 500, 600}}
	res, err := Replay(context.Background(), tr, Options{Estimators: []estimator.Estimator{est}})
	if err != nil {
		t.Fatal(err)
	}
	got := res.EstimatorSummary(0)
	if got.WorkloadDays != 2 || got.ChangesPerDayMean != 0 || !near(got.MemorySlackMean, 0.2) || got.OOMFreeFraction != 0.5 {
		t.Errorf("got %+v", got)
	}
	if res.HasProvisioned || res.Days[0].Provisioned != nil {
		t.Error("provisioned baseline reported for a trace without requests")
	}
}

func TestReplayYoungPodWaitsForDrift(t *testing.T) {
	// The target moves by 20% at hour 30 while staying inside the bounds:
	// the pod, updated at hour 24, is only 6h old then, so the change waits
	// until hour 36 (age 12h).
	tr := handTrace()
	est := &switchingEstimator{at: t0.Add(30 * time.Hour)}
	res, err := Replay(context.Background(), tr, Options{Estimators: []estimator.Estimator{est}})
	if err != nil {
		t.Fatal(err)
	}
	changes := res.Workloads[0].Changes
	if len(changes) != 2 || !changes[0].Equal(t0.Add(24*time.Hour)) || !changes[1].Equal(t0.Add(36*time.Hour)) {
		t.Errorf("changes at %v, want hours 24 and 36", changes)
	}
}

// switchingEstimator recommends 500 B [400, 1000] until at, then 600 B with
// the same bounds; CPU is always 1.5 [1, 2]. It reads the time from the
// aggregate's last sample.
type switchingEstimator struct{ at time.Time }

func (s *switchingEstimator) Name() string { return "switching" }

func (s *switchingEstimator) Recommend(aggs map[string]*model.AggregateState, p *vpav1.PodResourcePolicy, a map[string]string) estimator.Result {
	mem := 500.0
	for _, agg := range aggs {
		if !agg.LastSampleStart.Before(s.at) {
			mem = 600
		}
	}
	return fixedEstimator{cpu: [3]float64{1, 1.5, 2}, memory: [3]float64{400, mem, 1000}}.Recommend(aggs, p, a)
}

func summaryNear(a, b Summary) bool {
	return a.WorkloadDays == b.WorkloadDays && near(a.CPUSlackMean, b.CPUSlackMean) && near(a.CPUSlackMedian, b.CPUSlackMedian) &&
		near(a.MemorySlackMean, b.MemorySlackMean) && near(a.MemorySlackMedian, b.MemorySlackMedian) && near(a.OOMFreeFraction, b.OOMFreeFraction) &&
		near(a.CPUShortfallMean, b.CPUShortfallMean) && near(a.ChangesPerDayMean, b.ChangesPerDayMean) && near(a.ChangesPerDayP99, b.ChangesPerDayP99)
}

func TestQuantiles(t *testing.T) {
	tests := map[string]struct {
		xs           []float64
		q            float64
		wantQ, wantM float64
		wantMedian   float64
	}{
		"single":                  {xs: []float64{3}, q: 0.95, wantQ: 3, wantM: 3, wantMedian: 3},
		"twenty values, p95 19th": {xs: []float64{20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1}, q: 0.95, wantQ: 19, wantM: 20, wantMedian: 10.5},
		"p99 of two":              {xs: []float64{0, 1}, q: 0.99, wantQ: 1, wantM: 1, wantMedian: 0.5},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := Median(tc.xs); got != tc.wantMedian {
				t.Errorf("median %v, want %v", got, tc.wantMedian)
			}
			if got := nearestRank(tc.xs, tc.q); got != tc.wantQ {
				t.Errorf("nearestRank %v, want %v", got, tc.wantQ)
			}
			gq, gm := QuantileMax(append([]float64(nil), tc.xs...), tc.q)
			if gq != tc.wantQ || gm != tc.wantM {
				t.Errorf("quantileMax %v %v, want %v %v", gq, gm, tc.wantQ, tc.wantM)
			}
		})
	}
}

func TestOOMFreeStdErr(t *testing.T) {
	// day builds a scored day of workload w, OOM-free unless oom.
	day := func(w string, oom bool) DayScore {
		s := Score{}
		if oom {
			s.OOMSamples = 1
		}
		return DayScore{Workload: w, Scores: []Score{s}}
	}
	tests := map[string]struct {
		days         []DayScore
		wantFraction float64
		wantStdErr   float64
	}{
		// p = 3/5; residuals f_w − p·n_w: 2 − 1.2, 0 − 1.2, 1 − 0.6; their
		// squares sum to 2.24; (3/2 · 2.24)^½ / 5.
		"three workloads": {
			days:         []DayScore{day("a", false), day("a", false), day("b", true), day("b", true), day("c", false)},
			wantFraction: 0.6, wantStdErr: math.Sqrt(1.5*2.24) / 5,
		},
		"one workload has no spread to measure": {
			days:         []DayScore{day("a", false), day("a", true)},
			wantFraction: 0.5, wantStdErr: 0,
		},
		"workloads alike": {
			days:         []DayScore{day("a", false), day("a", true), day("b", true), day("b", false)},
			wantFraction: 0.5, wantStdErr: 0,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := Summarize(tc.days, func(d *DayScore) *Score { return &d.Scores[0] })
			if !near(s.OOMFreeFraction, tc.wantFraction) || !near(s.OOMFreeStdErr, tc.wantStdErr) {
				t.Errorf("OOM-free %v ± %v, want %v ± %v", s.OOMFreeFraction, s.OOMFreeStdErr, tc.wantFraction, tc.wantStdErr)
			}
		})
	}
}

// edgeEstimator recommends the highest memory peak (its bucket's upper
// edge) with bounds [target/2, 2·target], and 1.5 cores [1, 2].
type edgeEstimator struct{}

func (edgeEstimator) Name() string { return "edge" }

func (edgeEstimator) Recommend(aggs map[string]*model.AggregateState, _ *vpav1.PodResourcePolicy, _ map[string]string) estimator.Result {
	var res estimator.Result
	for name, a := range aggs {
		m := a.Memory.Percentile(1)
		list := func(cpu, mem float64) corev1.ResourceList {
			return corev1.ResourceList{
				corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(cpu*1000), resource.DecimalSI),
				corev1.ResourceMemory: *resource.NewQuantity(int64(mem), resource.BinarySI),
			}
		}
		res.Containers = append(res.Containers, vpav1.RecommendedContainerResources{
			ContainerName: name, LowerBound: list(1, m/2), Target: list(1.5, m), UpperBound: list(2, 2*m),
		})
	}
	return res
}

// namedEdge is edgeEstimator under another estimator's name, so that it runs
// on that estimator's model configuration (estimator.ModelConfig).
type namedEdge struct {
	edgeEstimator
	name string
}

func (e namedEdge) Name() string { return e.name }

func TestReplayOOMFeedback(t *testing.T) {
	// Hourly samples of 400Mi (provisioned 1000Mi) for 77 hours, and a
	// spike: 1200Mi at 30h and 30h05m, back to 400Mi at 30h10m. The pod is
	// updated at 24h to the 400Mi peak's bucket edge E0, so at 30h it is 6h
	// old and both spike samples are OOM kills.
	const mi = 1 << 20
	var samples []Sample
	add := func(at time.Duration, mem float64) {
		samples = append(samples, Sample{Time: t0.Add(at), CPU: 1, Memory: mem, CPURequest: 2, MemoryRequest: 1000 * mi})
	}
	for i := range 77 {
		add(time.Duration(i)*time.Hour, 400*mi)
		if i == 30 {
			samples[len(samples)-1].Memory = 1200 * mi
			add(30*time.Hour+5*time.Minute, 1200*mi)
			add(30*time.Hour+10*time.Minute, 400*mi)
		}
	}
	trace := &Trace{HasRequests: true, Workloads: []*Workload{{Name: "w", Containers: []*Container{{Name: "c", Samples: samples}}}}}
	opts := model.DefaultMemoryHistogramOptions()
	e0 := opts.BucketStart(opts.FindBucket(400*mi) + 1)
	// The OOM at E0 is recorded as E0 + 100Mi (more than 1.2·E0), which
	// replaces the window's 400Mi peak.
	bumped := float64(int64(opts.BucketStart(opts.FindBucket(float64(int64(e0))+100*mi) + 1)))

	tests := map[string]struct {
		feedback      bool
		evictAfterOOM time.Duration
		wantChanges   []time.Duration
		// wantMemoryAfter is the memory request in force from 30h10m on,
		// until the next change.
		wantMemoryAfter float64
	}{
		// The second kill comes 5 minutes after the restart of the first:
		// a quick OOM, and the pod gets the bumped target at once.
		"quick OOM updates the pod at once": {
			feedback: true, evictAfterOOM: 10 * time.Minute,
			wantChanges: []time.Duration{24 * time.Hour, 30*time.Hour + 5*time.Minute}, wantMemoryAfter: bumped,
		},
		// Without the quick-OOM rule the pod is within its bounds and young:
		// the bumped target waits for the 12h rule (age 12h at 36h).
		"without quick OOM the change waits": {
			feedback: true, evictAfterOOM: 0,
			wantChanges: []time.Duration{24 * time.Hour, 36 * time.Hour}, wantMemoryAfter: float64(int64(e0)),
		},
		// Replayed as observed, the model sees the 1200Mi samples: the next
		// hourly decision finds the request below the new lower bound.
		"no feedback": {
			feedback: false, evictAfterOOM: 10 * time.Minute,
			wantChanges: []time.Duration{24 * time.Hour, 31 * time.Hour}, wantMemoryAfter: float64(int64(e0)),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			res, err := Replay(context.Background(), trace, Options{Estimators: []estimator.Estimator{edgeEstimator{}},
				Rule: NewUpdateRule(0.1, 12*time.Hour, tc.evictAfterOOM), OOMFeedback: tc.feedback})
			if err != nil {
				t.Fatal(err)
			}
			var got []time.Duration
			for _, c := range res.Workloads[0].Changes {
				got = append(got, c.Sub(t0))
			}
			if len(got) < len(tc.wantChanges) {
				t.Fatalf("changes at %v, want %v first", got, tc.wantChanges)
			}
			for i, w := range tc.wantChanges {
				if got[i] != w {
					t.Fatalf("changes at %v, want %v first", got, tc.wantChanges)
				}
			}
			// Sample 33 is 30h10m.
			if m := res.Workloads[0].MemoryRequest[0][32]; m != tc.wantMemoryAfter {
				t.Errorf("memory request at 30h10m %.0f, want %.0f", m, tc.wantMemoryAfter)
			}
			d1 := res.Days[0]
			if d1.Day != 1 || d1.Scores[0].OOMSamples != 2 {
				t.Fatalf("day %d: %d OOM samples, want day 1 with 2", d1.Day, d1.Scores[0].OOMSamples)
			}
			if r := d1.Scores[0].Recoveries; len(r) != 1 || r[0] != 10*time.Minute {
				t.Errorf("recoveries %v, want one of 10m", r)
			}
			sum := res.EstimatorSummary(0)
			if sum.OOMEpisodes != 1 || !near(sum.RecoveryHoursMean, 1.0/6) || !near(sum.RecoveryHoursP90, 1.0/6) || !near(sum.OOMEventsPerDayMean, 2.0/float64(sum.WorkloadDays)) {
				t.Errorf("summary %+v", sum)
			}
		})
	}
}

func TestReplayOOMFeedbackNeedsARequest(t *testing.T) {
	// Without request columns the first hour has no request: its samples
	// are usage, not kills, so the first recommendation covers them.
	const mi = 1 << 20
	var samples []Sample
	for i := range 72 {
		samples = append(samples, Sample{Time: t0.Add(time.Duration(i) * time.Hour), CPU: 1, Memory: 400 * mi})
	}
	trace := &Trace{Workloads: []*Workload{{Name: "w", Containers: []*Container{{Name: "c", Samples: samples}}}}}
	res, err := Replay(context.Background(), trace, Options{Estimators: []estimator.Estimator{edgeEstimator{}}, OOMFeedback: true})
	if err != nil {
		t.Fatal(err)
	}
	opts := model.DefaultMemoryHistogramOptions()
	want := float64(int64(opts.BucketStart(opts.FindBucket(400*mi) + 1)))
	if got := res.Workloads[0].MemoryRequest[0][1]; got != want {
		t.Errorf("first memory request %.0f, want %.0f", got, want)
	}
	if s := res.EstimatorSummary(0); s.OOMFreeFraction != 1 || s.OOMEpisodes != 0 {
		t.Errorf("summary %+v, want no OOM", s)
	}
}

func TestReplayZeroMemoryAsMissing(t *testing.T) {
	// Hourly samples of 400Mi (provisioned 1000Mi), except that day 1's
	// memory window (from 24h) opens with a reading of 0 bytes, and a spike
	// of 1200Mi at 30h. Fed to the percentile estimator's model (upstream's
	// rules), the 0 keeps the window's peak at 0, so the kill at 30h is
	// dropped; as a missing reading it is not fed and the kill is recorded.
	// Every other estimator's model replaces a peak of 0 and records it.
	const mi = 1 << 20
	var samples []Sample
	for i := range 77 {
		mem := 400.0 * mi
		switch i {
		case 24:
			mem = 0
		case 30:
			mem = 1200 * mi
		}
		samples = append(samples, Sample{Time: t0.Add(time.Duration(i) * time.Hour), CPU: 1, Memory: mem, CPURequest: 2, MemoryRequest: 1000 * mi})
	}
	trace := &Trace{HasRequests: true, Workloads: []*Workload{{Name: "w", Containers: []*Container{{Name: "c", Samples: samples}}}}}
	tests := map[string]struct {
		estimator      string
		zeroMissing    bool
		wantUnrecorded int
	}{
		"percentile: zero fed to the model": {estimator: estimator.PercentileName, wantUnrecorded: 1},
		"percentile: zero as missing":       {estimator: estimator.PercentileName, zeroMissing: true, wantUnrecorded: 0},
		"adaptive: zero fed to the model":   {estimator: estimator.AdaptiveName, wantUnrecorded: 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			est := namedEdge{name: tc.estimator}
			res, err := Replay(context.Background(), trace, Options{Estimators: []estimator.Estimator{est}, OOMFeedback: true, ZeroMemoryAsMissing: tc.zeroMissing})
			if err != nil {
				t.Fatal(err)
			}
			d1 := res.Days[0]
			if d1.Day != 1 || d1.Scores[0].OOMSamples != 1 || d1.Scores[0].UnrecordedOOMs != tc.wantUnrecorded {
				t.Fatalf("day %d: %d OOM samples, %d unrecorded; want day 1 with 1, %d", d1.Day, d1.Scores[0].OOMSamples, d1.Scores[0].UnrecordedOOMs, tc.wantUnrecorded)
			}
			sum := res.EstimatorSummary(0)
			if !near(sum.UnrecordedOOMEventsPerDayMean, float64(tc.wantUnrecorded)/float64(sum.WorkloadDays)) {
				t.Errorf("unrecorded per day %v", sum.UnrecordedOOMEventsPerDayMean)
			}
		})
	}
}
