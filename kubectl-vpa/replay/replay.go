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

// Package replay is `kubectl vpa replay`: it replays a usage trace through
// the recommender's model, an estimator and the updater's rule, and scores
// the requests they would have set (docs/replay.md). Research that builds on
// it (hack/replay-bounds) adds its analyses through CommandOptions.Analyses.
package replay

import (
	"context"
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/openvpa/openvpa/recommender/estimator"
	"github.com/openvpa/openvpa/recommender/model"
)

const (
	// RecommendationInterval is how often, in trace time, a recommendation
	// is computed and the updater's rule consulted.
	RecommendationInterval = time.Hour
	// Warmup is the time from a workload's first sample during which nothing
	// is applied.
	Warmup = 24 * time.Hour
	// Day is the length of one scored workload-day.
	Day = 24 * time.Hour
)

// Options configures a replay.
type Options struct {
	// Model is the recommender's model configuration (nil: defaults); each
	// estimator runs on estimator.ModelConfig of it, as in the recommender.
	Model *model.Config
	// Estimators are replayed side by side over the same model state; the
	// first one is the primary (its timelines are kept for the plots).
	Estimators []estimator.Estimator
	// Rule is the updater's decision rule (nil: the updater's defaults).
	Rule UpdateRule
	// OOMFeedback treats a memory sample above the request in force as an
	// OOM kill: the model gets the OOM (with the configured bump) instead of
	// the sample, and the pod is updated at once when the updater's rule,
	// quick-OOM included, says so. Without it the trace is fed as observed
	// and a sample above the request only counts against the score (the
	// scoring of earlier releases).
	OOMFeedback bool
	// ZeroMemoryAsMissing leaves memory samples of 0 bytes out of the model
	// (they are still scored): a running container never reports 0 bytes to
	// metrics-server, so a 0 in a trace is a missing reading. Fed to the
	// model under upstream's rule (the percentile estimator's), a window
	// whose first sample reads 0 keeps 0 as its peak and drops the rest of
	// its samples and any OOM kill in it.
	ZeroMemoryAsMissing bool
	// Progress, when set, is called after each workload.
	Progress func(done, total int)
}

// Result is the outcome of a replay.
type Result struct {
	// Estimators are the names of the replayed estimators, in Options order.
	Estimators []string
	// HasProvisioned reports whether Days carry the provisioned baseline.
	HasProvisioned bool
	// Days are the scored workload-days, in trace order.
	Days []DayScore
	// Workloads are per-workload timelines of the primary estimator.
	Workloads []*Timeline
}

// DayScore is one scored workload-day (one container of one workload over
// one day).
type DayScore struct {
	Workload  string
	Container string
	// Day is the day index from the workload's first sample (≥ 1).
	Day   int
	Start time.Time
	// Samples is the number of samples in the day.
	Samples int
	// CPUUsageP95 and MemoryUsageP95 are the day's usage 95th percentiles.
	CPUUsageP95    float64
	MemoryUsageP95 float64
	// CPUUsageMax and MemoryUsageMax are the day's usage maxima.
	CPUUsageMax    float64
	MemoryUsageMax float64
	// Scores holds one entry per estimator, in Result.Estimators order.
	Scores []Score
	// Provisioned scores the trace's own requests; nil without them.
	Provisioned *Score
}

// Score is how one request series fared over one workload-day.
type Score struct {
	// CPURequestMean and MemoryRequestMean are the mean requests in force
	// over the day's samples.
	CPURequestMean    float64
	MemoryRequestMean float64
	// CPUSlack and MemorySlack are (mean request − p95 usage) / mean request.
	CPUSlack    float64
	MemorySlack float64
	// OOMSamples is the number of memory samples above the memory request in
	// force (the OOM proxy); the day is OOM-free when it is zero.
	OOMSamples int
	// CPUShortfall is the share of samples whose CPU usage exceeds the CPU
	// request in force.
	CPUShortfall float64
	// Changes is the number of updates applied during the day (per
	// workload; every container of the workload counts them).
	Changes int
	// UnrecordedOOMs is the number of OOMSamples that were kills the model
	// dropped: the container's memory window had a peak of 0 bytes (its
	// first sample read 0), and upstream's rule then keeps 0.
	UnrecordedOOMs int
	// Recoveries holds, for every OOM episode that began during the day, the
	// time from its first OOM sample to the first later sample within the
	// request in force (to the container's last sample when none is).
	Recoveries []time.Duration
}

// Timeline is the request of the primary estimator at every sample of every
// container of one workload.
type Timeline struct {
	Workload   string
	Containers []*Container
	// CPURequest and MemoryRequest hold, per container, one value per
	// sample (the request in force at it).
	CPURequest    [][]float64
	MemoryRequest [][]float64
	// Changes are the times at which updates were applied.
	Changes []time.Time
}

// requests is one container's requests, cores and bytes.
type requests struct {
	cpu, memory float64
	set         bool
}

// series is the state of one estimator while one workload is replayed:
// its own model (with OOM feedback the history depends on the requests the
// estimator set), its requests and its scores.
type series struct {
	est        estimator.Estimator
	aggs       map[string]*model.AggregateState
	states     []*model.ContainerState
	current    map[string]requests // applied requests; unset until the first one
	changed    bool                // an update has been applied
	lastChange time.Time           // the pod's start (age reference)
	changes    map[int]int         // updates per day index
	changeAt   []time.Time
	// per container: when it last (re)started, how long it ran before its
	// last OOM kill (nil when its last termination was not one), and when
	// the open OOM episode began (zero when none is open)
	started  []time.Time
	oomRun   []*time.Duration
	episode  []time.Time
	episodes [][2]time.Time
	// per container, per day accumulators
	acc map[string]map[int]*dayAcc
}

type dayAcc struct {
	cpuReqSum, memReqSum float64
	ooms, cpuOver        int
	unrecorded           int
	recoveries           []time.Duration
}

func newSeries(e estimator.Estimator, w *Workload, cfg *model.Config, t0 time.Time) *series {
	sr := &series{est: e, aggs: make(map[string]*model.AggregateState, len(w.Containers)), current: map[string]requests{},
		lastChange: t0, changes: map[int]int{}, acc: map[string]map[int]*dayAcc{},
		started: make([]time.Time, len(w.Containers)), oomRun: make([]*time.Duration, len(w.Containers)), episode: make([]time.Time, len(w.Containers))}
	for i, c := range w.Containers {
		a := model.NewAggregateState(cfg, t0)
		sr.aggs[c.Name] = a
		sr.states = append(sr.states, model.NewContainerState(a))
		sr.acc[c.Name] = map[int]*dayAcc{}
		sr.started[i] = t0
	}
	return sr
}

// day returns the accumulator of container name for day d.
func (sr *series) day(name string, d int) *dayAcc {
	a := sr.acc[name][d]
	if a == nil {
		a = &dayAcc{}
		sr.acc[name][d] = a
	}
	return a
}

// Replay replays trace under opts. It stops with ctx's error when ctx is
// cancelled.
func Replay(ctx context.Context, trace *Trace, opts Options) (*Result, error) {
	if len(opts.Estimators) == 0 {
		return nil, fmt.Errorf("no estimator to replay")
	}
	cfg := opts.Model
	if cfg == nil {
		cfg = model.DefaultConfig()
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	rule := opts.Rule
	if rule == nil {
		rule = DefaultUpdateRule()
	}
	res := &Result{HasProvisioned: trace.HasRequests}
	cfgs := make([]*model.Config, len(opts.Estimators))
	for i, e := range opts.Estimators {
		res.Estimators = append(res.Estimators, e.Name())
		c := estimator.ModelConfig(e.Name(), *cfg)
		cfgs[i] = &c
	}
	for i, w := range trace.Workloads {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		days, tl := replayWorkload(w, trace.HasRequests, cfgs, opts.Estimators, rule, opts.OOMFeedback, opts.ZeroMemoryAsMissing)
		res.Days = append(res.Days, days...)
		res.Workloads = append(res.Workloads, tl)
		if opts.Progress != nil {
			opts.Progress(i+1, len(trace.Workloads))
		}
	}
	return res, nil
}

func replayWorkload(w *Workload, provisioned bool, cfgs []*model.Config, ests []estimator.Estimator, rule UpdateRule, feedback, zeroMissing bool) ([]DayScore, *Timeline) {
	t0, end := w.Start(), w.End()
	all := make([]*series, len(ests))
	for i, e := range ests {
		all[i] = newSeries(e, w, cfgs[i], t0)
	}
	tl := &Timeline{Workload: w.Name, Containers: w.Containers}
	for _, c := range w.Containers {
		tl.CPURequest = append(tl.CPURequest, make([]float64, 0, len(c.Samples)))
		tl.MemoryRequest = append(tl.MemoryRequest, make([]float64, 0, len(c.Samples)))
	}
	cursor := make([]int, len(w.Containers))

	for tick := t0.Add(RecommendationInterval); ; tick = tick.Add(RecommendationInterval) {
		// Score, then feed, the samples of the hour before tick.
		for ci, c := range w.Containers {
			for ; cursor[ci] < len(c.Samples) && c.Samples[cursor[ci]].Time.Before(tick); cursor[ci]++ {
				s := c.Samples[cursor[ci]]
				day := int(s.Time.Sub(t0) / Day)
				for si, sr := range all {
					req := sr.inForce(c.Name, s, provisioned)
					a := sr.day(c.Name, day)
					a.cpuReqSum += req.cpu
					a.memReqSum += req.memory
					oom := s.Memory > req.memory
					if oom {
						a.ooms++
					}
					if s.CPU > req.cpu {
						a.cpuOver++
					}
					if si == 0 {
						tl.CPURequest[ci] = append(tl.CPURequest[ci], req.cpu)
						tl.MemoryRequest[ci] = append(tl.MemoryRequest[ci], req.memory)
					}
					sr.trackEpisode(ci, s.Time, oom, t0, c.Name)
					sr.states[ci].AddCPUSample(s.Time, model.CPUAmountFromCores(s.CPU))
					// Before its first request (a trace without requests, in its
					// first hour) a container has no limit to be killed at.
					if !feedback || !oom || !req.set {
						if s.Memory > 0 || !zeroMissing {
							sr.states[ci].AddMemorySample(s.Time, model.MemoryAmountFromBytes(s.Memory))
						}
						continue
					}
					if st := sr.states[ci]; st.MaxMemoryPeak() == 0 && s.Time.Before(st.WindowEnd) {
						a.unrecorded++
					}
					// The container is killed at its request and restarts; the
					// recommender sees the kill, and the updater acts on it
					// within its next loop, long before the next sample.
					_ = sr.states[ci].RecordOOM(s.Time, model.MemoryAmountFromBytes(req.memory))
					run := s.Time.Sub(sr.started[ci])
					sr.oomRun[ci], sr.started[ci] = &run, s.Time
					if s.Time.Sub(t0) >= Warmup {
						sr.decide(w, s.Time, t0, provisioned, cursor, rule)
					}
				}
			}
		}
		if tick.After(end) {
			break
		}
		warm := tick.Sub(t0) >= Warmup
		for _, sr := range all {
			if !warm {
				if !provisioned {
					// Without provisioned requests the pod starts with the first
					// recommendation.
					recs, ok := sr.recommend()
					if !ok {
						continue
					}
					for _, r := range recs.Containers {
						if cur := sr.current[r.ContainerName]; !cur.set {
							sr.current[r.ContainerName] = fromList(r.Target)
						}
					}
				}
				continue
			}
			sr.decide(w, tick, t0, provisioned, cursor, rule)
		}
	}
	for _, sr := range all {
		for ci, c := range w.Containers {
			if !sr.episode[ci].IsZero() && len(c.Samples) > 0 {
				sr.closeEpisode(ci, c.Samples[len(c.Samples)-1].Time, t0, c.Name)
			}
		}
	}
	tl.Changes = all[0].changeAt
	return scoreWorkload(w, t0, provisioned, all), tl
}

// recommend returns the estimator's recommendation from the non-empty
// aggregates, false when all are empty.
func (sr *series) recommend() (estimator.Result, bool) {
	live := make(map[string]*model.AggregateState, len(sr.aggs))
	for name, a := range sr.aggs {
		if !a.IsEmpty() {
			live[name] = a
		}
	}
	if len(live) == 0 {
		return estimator.Result{}, false
	}
	return sr.est.Recommend(live, nil, nil), true
}

// decide runs the updater's rule at now and applies the targets when it says
// so. cursor holds, per container, the index of the next sample to feed.
func (sr *series) decide(w *Workload, now, t0 time.Time, provisioned bool, cursor []int, rule UpdateRule) {
	recs, ok := sr.recommend()
	if !ok {
		return
	}
	pod := PodState{Age: now.Sub(sr.lastChange)}
	for ci, c := range w.Containers {
		var req requests
		if sr.changed || !provisioned {
			req = sr.current[c.Name]
		} else if cursor[ci] > 0 {
			last := c.Samples[min(cursor[ci], len(c.Samples))-1]
			req = requests{cpu: last.CPURequest, memory: last.MemoryRequest, set: true}
		}
		pc := PodContainer{Name: c.Name, OOMKilledAfter: sr.oomRun[ci]}
		if req.set {
			pc.Requests = toList(req)
		}
		for _, r := range recs.Containers {
			if r.ContainerName == c.Name {
				pc.HasRecommendation = true
				pc.Target, pc.LowerBound, pc.UpperBound = r.Target, r.LowerBound, r.UpperBound
			}
		}
		pod.Containers = append(pod.Containers, pc)
	}
	if !rule.ShouldUpdate(pod) || !changes(pod) {
		return
	}
	for _, pc := range pod.Containers {
		if pc.HasRecommendation {
			sr.current[pc.Name] = fromList(pc.Target)
		} else if !sr.current[pc.Name].set {
			sr.current[pc.Name] = fromList(pc.Requests)
		}
	}
	for ci := range w.Containers {
		sr.started[ci], sr.oomRun[ci] = now, nil
	}
	sr.changed = true
	sr.lastChange = now
	sr.changes[int(now.Sub(t0)/Day)]++
	sr.changeAt = append(sr.changeAt, now)
}

// trackEpisode opens an OOM episode of container ci at its first OOM sample
// and closes it at the first sample within the request.
func (sr *series) trackEpisode(ci int, t time.Time, oom bool, t0 time.Time, name string) {
	switch {
	case oom && sr.episode[ci].IsZero():
		sr.episode[ci] = t
	case !oom && !sr.episode[ci].IsZero():
		sr.closeEpisode(ci, t, t0, name)
	}
}

func (sr *series) closeEpisode(ci int, t, t0 time.Time, name string) {
	begin := sr.episode[ci]
	a := sr.day(name, int(begin.Sub(t0)/Day))
	a.recoveries = append(a.recoveries, t.Sub(begin))
	sr.episode[ci] = time.Time{}
}

// inForce returns the request in force for sample s of container name.
func (sr *series) inForce(name string, s Sample, provisioned bool) requests {
	if !sr.changed && provisioned {
		return requests{cpu: s.CPURequest, memory: s.MemoryRequest, set: true}
	}
	return sr.current[name]
}

// changes reports whether applying the targets would change any request.
func changes(pod PodState) bool {
	for _, c := range pod.Containers {
		if !c.HasRecommendation {
			continue
		}
		for name, t := range c.Target {
			r, ok := c.Requests[name]
			if !ok || r.Cmp(t) != 0 {
				return true
			}
		}
	}
	return false
}

func fromList(l corev1.ResourceList) requests {
	r := requests{set: true}
	if q, ok := l[corev1.ResourceCPU]; ok {
		r.cpu = float64(q.MilliValue()) / 1000
	}
	if q, ok := l[corev1.ResourceMemory]; ok {
		r.memory = float64(q.Value())
	}
	return r
}

func toList(r requests) corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(math.Round(r.cpu*1000)), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(int64(math.Round(r.memory)), resource.BinarySI),
	}
}

// scoreWorkload turns the accumulators into workload-day scores. Day 0 and
// days with fewer than half the expected samples are left out; the expected
// count is one day over the container's median sampling interval.
func scoreWorkload(w *Workload, t0 time.Time, provisioned bool, all []*series) []DayScore {
	var out []DayScore
	for _, c := range w.Containers {
		for _, cd := range ContainerDays(c, t0) {
			day, samples := cd.Day, cd.Samples
			if !cd.Scored {
				continue
			}
			ds := DayScore{Workload: w.Name, Container: c.Name, Day: day, Start: t0.Add(time.Duration(day) * Day), Samples: len(samples)}
			cpu := make([]float64, len(samples))
			mem := make([]float64, len(samples))
			for i, s := range samples {
				cpu[i], mem[i] = s.CPU, s.Memory
			}
			ds.CPUUsageP95, ds.CPUUsageMax = QuantileMax(cpu, 0.95)
			ds.MemoryUsageP95, ds.MemoryUsageMax = QuantileMax(mem, 0.95)
			n := float64(len(samples))
			for _, sr := range all {
				a := sr.acc[c.Name][day]
				sc := Score{
					CPURequestMean:    a.cpuReqSum / n,
					MemoryRequestMean: a.memReqSum / n,
					OOMSamples:        a.ooms,
					UnrecordedOOMs:    a.unrecorded,
					CPUShortfall:      float64(a.cpuOver) / n,
					Changes:           sr.changes[day],
					Recoveries:        a.recoveries,
				}
				sc.CPUSlack = Slack(sc.CPURequestMean, ds.CPUUsageP95)
				sc.MemorySlack = Slack(sc.MemoryRequestMean, ds.MemoryUsageP95)
				ds.Scores = append(ds.Scores, sc)
			}
			if provisioned {
				sc := &Score{}
				over, cpuOver := 0, 0
				for _, s := range samples {
					sc.CPURequestMean += s.CPURequest / n
					sc.MemoryRequestMean += s.MemoryRequest / n
					if s.Memory > s.MemoryRequest {
						over++
					}
					if s.CPU > s.CPURequest {
						cpuOver++
					}
				}
				sc.OOMSamples, sc.CPUShortfall = over, float64(cpuOver)/n
				sc.CPUSlack = Slack(sc.CPURequestMean, ds.CPUUsageP95)
				sc.MemorySlack = Slack(sc.MemoryRequestMean, ds.MemoryUsageP95)
				ds.Provisioned = sc
			}
			out = append(out, ds)
		}
	}
	return out
}

// ContainerDay is the samples of one container in day Day of its workload.
type ContainerDay struct {
	Day     int
	Samples []Sample
	// Scored is whether the day is scored: not the warm-up (day 0), and with
	// at least half the expected samples (one day over the container's
	// median sampling interval).
	Scored bool
}

// ContainerDays splits c's samples into the days of a workload whose first
// sample is at t0, in order; days without a sample are left out.
func ContainerDays(c *Container, t0 time.Time) []ContainerDay {
	interval := medianInterval(c.Samples, 5*time.Minute)
	if interval <= 0 {
		interval = time.Second
	}
	minSamples := float64(Day/interval) / 2
	var out []ContainerDay
	for lo := 0; lo < len(c.Samples); {
		day := int(c.Samples[lo].Time.Sub(t0) / Day)
		hi := lo
		for hi < len(c.Samples) && int(c.Samples[hi].Time.Sub(t0)/Day) == day {
			hi++
		}
		out = append(out, ContainerDay{Day: day, Samples: c.Samples[lo:hi], Scored: day > 0 && float64(hi-lo) >= minSamples})
		lo = hi
	}
	return out
}

// Slack returns (request − usage) / request, or 0 for a zero request: the
// slack of a request in force against a day's usage p95.
func Slack(request, usage float64) float64 {
	if request <= 0 {
		return 0
	}
	return (request - usage) / request
}
