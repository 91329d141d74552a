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

package differential

import (
	"testing"
	"time"
)

const mi = 1 << 20

// start is when every history begins.
var start = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)

// history is a usage history under construction, in the order it is fed.
type history []event

// sample adds a CPU sample (millicores) and a memory sample (bytes) of one
// container at at.
func (h *history) sample(at time.Time, pod, container string, cpu, memory int64) {
	*h = append(*h, event{at: at, pod: pod, container: container, kind: cpuSample, value: cpu},
		event{at: at, pod: pod, container: container, kind: memorySample, value: memory})
}

// oom adds an OOM kill of a container that requested request bytes.
func (h *history) oom(at time.Time, pod, container string, request int64) {
	*h = append(*h, event{at: at, pod: pod, container: container, kind: oomKill, value: request})
}

// every calls f n times, at from, from+step, ...
func every(from time.Time, step time.Duration, n int, f func(i int, at time.Time)) {
	for i := range n {
		f(i, from.Add(time.Duration(i)*step))
	}
}

// scenario is one usage history, fed to both sides.
type scenario struct {
	// policy is the VPA's spec.resourcePolicy as JSON; empty for none.
	policy  string
	history history
	// refused are the events both sides must refuse, by index in history.
	refused []int
}

func scenarios() map[string]scenario {
	s := map[string]scenario{}

	var steady history
	every(start, time.Minute, 3*24*60, func(_ int, at time.Time) { steady.sample(at, "app-1", "app", 300, 200*mi) })
	s["steady usage, three days"] = scenario{history: steady}

	var spiky history
	every(start, time.Minute, 2*24*60, func(i int, at time.Time) {
		cpu := int64(100 + 10*(i%3))
		if i%20 == 0 {
			cpu = 2000
		}
		spiky.sample(at, "app-1", "app", cpu, 300*mi+int64(i%60)*mi)
		cpu = int64(120 + 5*(i%4))
		if i%20 == 10 {
			cpu = 1500
		}
		spiky.sample(at.Add(17*time.Second), "app-2", "app", cpu, 280*mi+int64(i%45)*mi)
	})
	s["spiky CPU, two pods"] = scenario{history: spiky}

	var growth history
	const growthSteps = 8 * 24 * 12
	every(start, 5*time.Minute, growthSteps, func(i int, at time.Time) {
		memory := 100*mi + (2048*mi-100*mi)*int64(i)/(growthSteps-1)
		growth.sample(at, "app-1", "app", int64(200+10*(i%7)), memory)
	})
	s["memory growing to 2Gi over eight days"] = scenario{history: growth}

	var ooms history
	var oomRefused []int
	// An OOM before any memory sample of the container.
	ooms.oom(start, "app-1", "app", 256*mi)
	every(start.Add(time.Minute), time.Minute, 2*24*60, func(i int, at time.Time) {
		ooms.sample(at, "app-1", "app", 150, 240*mi)
		if i >= 24*60 {
			ooms.sample(at.Add(30*time.Second), "app-2", "app", 160, 250*mi)
		}
		switch i {
		case 27 * 60:
			ooms.oom(at, "app-1", "app", 256*mi)
		case 27*60 + 10:
			// Again in the same window: the bump does not compound.
			ooms.oom(at, "app-1", "app", 256*mi)
		case 30 * 60:
			ooms.oom(at, "app-2", "app", 300*mi)
		}
	})
	last := start.Add(2 * 24 * time.Hour) // app-1's last memory sample
	// Too old: 30h before the last memory sample.
	oomRefused = append(oomRefused, len(ooms))
	ooms.oom(last.Add(-30*time.Hour), "app-1", "app", 1024*mi)
	// Seen late, 20h before the last memory sample: within one interval.
	ooms.oom(last.Add(-20*time.Hour), "app-1", "app", 512*mi)
	// A recorded OOM's time becomes the container's last memory sample
	// time, even when earlier: the OOM refused above is now 10h before it
	// and counts, on both sides.
	ooms.oom(last.Add(-30*time.Hour), "app-1", "app", 1024*mi)
	s["OOM kills"] = scenario{history: ooms, refused: oomRefused}

	// Upstream 1.8.0, "do not discard fresh OOMs near aggregation boundary"
	// (kubernetes/autoscaler#8548): the sample at start+24h opens the next
	// memory window; an OOM one second before it, seen after it, counts.
	// Upstream 1.7 refused it as older than the window's end minus one
	// interval.
	var boundary history
	every(start, time.Minute, 24*60+1, func(_ int, at time.Time) { boundary.sample(at, "app-1", "app", 400, 1000*mi) })
	boundary.oom(start.Add(24*time.Hour-time.Second), "app-1", "app", 1000*mi)
	every(start.Add(24*time.Hour+time.Minute), time.Minute, 6*60, func(_ int, at time.Time) {
		boundary.sample(at, "app-1", "app", 400, 1000*mi)
	})
	s["OOM a second before a memory window boundary, seen after it"] = scenario{history: boundary}

	var short history
	every(start, time.Minute, 3*60, func(i int, at time.Time) {
		short.sample(at, "app-1", "app", int64(500+i%50), 400*mi+int64(i%10)*mi)
	})
	s["three hours of history (low confidence)"] = scenario{history: short}

	var decaying history
	every(start, 10*time.Minute, 10*24*6, func(i int, at time.Time) {
		if i < 5*24*6 {
			decaying.sample(at, "app-1", "app", 1000+int64(i%13), 1024*mi)
			return
		}
		decaying.sample(at, "app-1", "app", 200+int64(i%11), 300*mi)
	})
	s["usage falling after five days (decaying weights)"] = scenario{history: decaying}

	var long history
	every(start, time.Hour, 120*24, func(i int, at time.Time) {
		cpu := int64(100 + 10*((i/24)%5))
		if h := i % 24; h >= 9 && h < 17 {
			cpu += 400
		}
		long.sample(at, "app-1", "app", cpu, 500*mi+int64((i/24)%10)*10*mi)
	})
	s["120 days, past 100 half-lives (reference shift)"] = scenario{history: long}

	// A memory peak replaced (subtracted, then the larger one added) in a
	// bucket that holds, besides it, only a weight below epsilon: a peak
	// of day 80, scaled down when the decay reference moved on at day 100.
	var decayed history
	every(start, time.Hour, 102*24, func(i int, at time.Time) {
		memory := int64(300 * mi)
		if i/24 == 80 {
			memory = 700 * mi
		}
		decayed.sample(at, "app-1", "app", 200, memory)
	})
	next := start.Add(102 * 24 * time.Hour)
	decayed.sample(next, "app-2", "app", 200, 700*mi)
	decayed.sample(next.Add(time.Hour), "app-2", "app", 200, 900*mi)
	s["a peak replaced in a bucket holding only decayed weight"] = scenario{history: decayed}

	var small history
	every(start, time.Minute, 24*60, func(_ int, at time.Time) {
		small.sample(at, "app-1", "app", 5, 10*mi)
		small.sample(at, "app-1", "sidecar", 2, 5*mi)
	})
	s["two small containers (pod minimum split)"] = scenario{history: small}

	var churn history
	every(start, time.Minute, 2*24*60, func(i int, at time.Time) {
		pod := "app-" + string(rune('a'+i/(6*60)))
		churn.sample(at, pod, "app", int64(200+50*(i/(6*60))), int64(150+20*(i/(6*60)))*mi)
	})
	s["a new pod every six hours"] = scenario{history: churn}

	var refused history
	var refusedAt []int
	every(start, time.Minute, 24*60, func(i int, at time.Time) {
		refused.sample(at, "app-1", "app", 250, 220*mi)
		if i == 600 {
			refusedAt = append(refusedAt, len(refused))
			refused = append(refused, event{at: at, pod: "app-1", container: "app", kind: cpuSample, value: 900})
			refusedAt = append(refusedAt, len(refused))
			refused = append(refused, event{at: at.Add(-time.Second), pod: "app-1", container: "app", kind: memorySample, value: 900 * mi})
			refusedAt = append(refusedAt, len(refused))
			refused = append(refused, event{at: at.Add(time.Second), pod: "app-1", container: "app", kind: cpuSample, value: -1})
		}
	})
	s["duplicate, out-of-order and negative samples"] = scenario{history: refused, refused: refusedAt}

	var policy history
	every(start, time.Minute, 24*60, func(i int, at time.Time) {
		policy.sample(at, "app-1", "app", 300+int64(i%5), 200*mi)
		policy.sample(at, "app-1", "sidecar", 50, 50*mi)
		policy.sample(at, "app-1", "off", 10, 10*mi)
		policy.sample(at, "app-1", "big", 3000, 3*1024*mi)
	})
	s["resource policy: min and max allowed, controlled resources, mode Off"] = scenario{
		policy: `{"containerPolicies": [
			{"containerName": "app", "minAllowed": {"cpu": "400m"}, "maxAllowed": {"memory": "100Mi"}},
			{"containerName": "sidecar", "controlledResources": ["cpu"]},
			{"containerName": "off", "mode": "Off"},
			{"containerName": "*", "maxAllowed": {"cpu": "2", "memory": "2Gi"}}]}`,
		history: policy,
	}
	return s
}

// continuation is one more day of usage, of a new pod, for each container.
func continuation(from time.Time, containers []string) history {
	var h history
	every(from, 5*time.Minute, 24*12, func(i int, at time.Time) {
		for _, c := range containers {
			h.sample(at, "app-next", c, 250+int64(i%9), 180*mi+int64(i%4)*mi)
		}
	})
	return h
}

// last is the time of the latest event.
func (h history) last() time.Time {
	var t time.Time
	for _, e := range h {
		if e.at.After(t) {
			t = e.at
		}
	}
	return t
}

// TestRecommendations feeds each history to upstream's recommender and to
// OpenVPA's and requires the same target, bounds and uncapped target.
func TestRecommendations(t *testing.T) {
	for name, sc := range scenarios() {
		t.Run(name, func(t *testing.T) {
			upstream, ours := newUpstream(t, sc.policy, nil), newOurs(t, sc.policy, nil, start)
			checkRefused(t, sc, feedBoth(t, upstream, ours, sc.history))
			u, o := upstream.recommend(), ours.recommend()
			if len(u) == 0 {
				t.Fatal("upstream recommends nothing")
			}
			compare(t, "recommendation", u, o)
		})
	}
}

// TestCheckpoints: after each history, upstream's checkpoint writer and
// OpenVPA's write the same checkpoints; each side restores the other's and
// recommends what the writer's own side recommends from it; and both go on
// alike with a day more of usage.
func TestCheckpoints(t *testing.T) {
	for name, sc := range scenarios() {
		t.Run(name, func(t *testing.T) {
			upstream, ours := newUpstream(t, sc.policy, nil), newOurs(t, sc.policy, nil, start)
			feedBoth(t, upstream, ours, sc.history)
			now := sc.history.last().Add(time.Minute)
			fromUpstream, fromOurs := upstream.checkpoints(t, now), ours.checkpoints(t, now)
			if len(fromUpstream) != len(fromOurs) {
				t.Fatalf("upstream writes %d checkpoints, OpenVPA %d", len(fromUpstream), len(fromOurs))
			}
			for c, u := range fromUpstream {
				if o := fromOurs[c]; string(o) != string(u) {
					t.Errorf("checkpoint of %s differs:\nupstream: %s\nOpenVPA:  %s", c, u, o)
				}
			}

			upstreamFromUpstream := newUpstream(t, sc.policy, fromUpstream)
			oursFromUpstream := newOurs(t, sc.policy, fromUpstream, now)
			compare(t, "restored from upstream's checkpoints", upstreamFromUpstream.recommend(), oursFromUpstream.recommend())
			upstreamFromOurs := newUpstream(t, sc.policy, fromOurs)
			oursFromOurs := newOurs(t, sc.policy, fromOurs, now)
			compare(t, "restored from OpenVPA's checkpoints", upstreamFromOurs.recommend(), oursFromOurs.recommend())

			containers := make([]string, 0, len(fromUpstream))
			for c := range fromUpstream {
				containers = append(containers, c)
			}
			more := continuation(now.Add(time.Hour), sortedStrings(containers))
			feedBoth(t, upstreamFromUpstream, oursFromUpstream, more)
			compare(t, "restored from upstream's checkpoints, a day later", upstreamFromUpstream.recommend(), oursFromUpstream.recommend())
		})
	}
}

func checkRefused(t *testing.T, sc scenario, refused []event) {
	t.Helper()
	want := make([]event, 0, len(sc.refused))
	for _, i := range sc.refused {
		want = append(want, sc.history[i])
	}
	if len(refused) != len(want) {
		t.Fatalf("both sides refused %v, want %v", refused, want)
	}
	for i := range want {
		if refused[i] != want[i] {
			t.Fatalf("both sides refused %v, want %v", refused, want)
		}
	}
}
