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

package loop

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/recommender/estimator"
	"github.com/openvpa/openvpa/recommender/input/history"
	"github.com/openvpa/openvpa/recommender/input/history/historytest"
	"github.com/openvpa/openvpa/recommender/model"
	"github.com/openvpa/openvpa/recommender/status"
)

// fakeHistory is a HistorySource the test fills by hand.
type fakeHistory struct {
	wanted map[string]int
	ready  []*history.Namespace
	status map[string]history.Status
}

func newFakeHistory() *fakeHistory {
	return &fakeHistory{wanted: map[string]int{}, status: map[string]history.Status{}}
}

func (f *fakeHistory) Want(ns string) { f.wanted[ns]++ }
func (f *fakeHistory) Take() []*history.Namespace {
	out := f.ready
	f.ready = nil
	return out
}
func (f *fakeHistory) Status(ns string) history.Status { return f.status[ns] }

// withHistory makes the harness run in --storage=prometheus mode.
func withHistory(h *harness) *fakeHistory {
	f := newFakeHistory()
	h.withDeps(func(d *Deps) { d.History = f })
	h.withDeps(func(d *Deps) { d.Checkpoints = nil })
	return f
}

// hourlyHistory is 8 days of hourly points ending at end: CPU rises and
// falls over each day, memory peaks once a day.
func hourlyHistory(end time.Time, cpuBase, memBase int64) *history.Container {
	c := &history.Container{}
	for t := end.Add(-8 * 24 * time.Hour); !t.After(end); t = t.Add(time.Hour) {
		h := int64(t.Hour())
		c.CPU = append(c.CPU, history.Sample{Time: t, Value: model.ResourceAmount(cpuBase + 10*h)})
		mem := memBase + h*mi
		if h == 13 {
			mem += 300 * mi
		}
		c.Memory = append(c.Memory, history.Sample{Time: t, Value: model.ResourceAmount(mem)})
	}
	return c
}

func TestHistoryGivesTheRecommendationOfTheSameSamples(t *testing.T) {
	h := newHarness(t, nil)
	fh := withHistory(h)
	h.addVPA("ns", "web", "web")
	h.addPod("ns", "web-1", "web", 300, 200*mi, "app")
	end := start.Truncate(time.Hour)
	gone := hourlyHistory(end, 200, 400*mi)
	live := hourlyHistory(end, 100, 250*mi)
	fh.ready = []*history.Namespace{{Name: "ns", Start: end.Add(-8 * 24 * time.Hour), End: end, Pods: map[string]*history.Pod{
		// A pod that is gone: its labels come from the pod labels metric.
		"web-0": {Name: "web-0", Labels: map[string]string{"app": "web"}, Containers: map[string]*history.Container{"app": gone}},
		// A live pod: the metric has no labels for it; the API server's count.
		"web-1": {Name: "web-1", Containers: map[string]*history.Container{"app": live}},
		// Another workload's pod.
		"db-0": {Name: "db-0", Labels: map[string]string{"app": "db"}, Containers: map[string]*history.Container{"app": gone}},
	}}}
	h.loop()

	cfg := model.DefaultConfig()
	a := model.NewAggregateState(cfg, start)
	historytest.Feed(a, gone) // a gone pod: a container state of its own
	cs := model.NewContainerState(a)
	for _, s := range live.CPU {
		cs.AddCPUSample(s.Time, s.Value)
	}
	for _, s := range live.Memory {
		cs.AddMemorySample(s.Time, s.Value)
	}
	cs.AddCPUSample(start, 300)       // the first loop's live sample
	cs.AddMemorySample(start, 200*mi) // continues the live pod's last window
	want := estimator.NewPercentile(estimator.DefaultConfig()).Recommend(map[string]*model.AggregateState{"app": a}, nil, nil)

	got := h.vpa("ns", "web").Status
	if got.Recommendation == nil || !apiequality.Semantic.DeepEqual(got.Recommendation.ContainerRecommendations, want.Containers) {
		t.Fatalf("recommendation from history\n got %+v\nwant %+v", got.Recommendation, want.Containers)
	}
	if c := h.condition(h.vpa("ns", "web"), vpav1.FetchingHistory); c != nil {
		t.Errorf("FetchingHistory = %+v after the history was applied", c)
	}
	if n := h.count("create", "verticalpodautoscalercheckpoints"); n != 0 {
		t.Errorf("%d checkpoints written with --storage=prometheus", n)
	}
}

func TestHistoryPendingKeepsTheStatusAndSaysWhy(t *testing.T) {
	h := newHarness(t, nil)
	fh := withHistory(h)
	h.addVPA("ns", "web", "web")
	h.addPod("ns", "web-1", "web", 300, 200*mi, "app")
	h.loop()
	if fh.wanted["ns"] == 0 {
		t.Fatal("the namespace's history was not asked for")
	}
	v := h.vpa("ns", "web")
	if c := h.condition(v, vpav1.FetchingHistory); c == nil || c.Status != corev1.ConditionTrue || c.Reason != status.ReasonFetchingHistory {
		t.Fatalf("FetchingHistory = %+v, want True/%s while the first fetch runs", c, status.ReasonFetchingHistory)
	}
	if v.Status.Recommendation != nil {
		t.Fatalf("recommendation %+v written without the history", v.Status.Recommendation)
	}

	fh.status["ns"] = history.Status{Known: true, Attempts: 3, Err: errors.New("dial tcp 127.0.0.1:9090: connection refused"), NextAttempt: start.Add(time.Minute)}
	h.loops(3)
	v = h.vpa("ns", "web")
	c := h.condition(v, vpav1.FetchingHistory)
	if c == nil || c.Status != corev1.ConditionTrue || c.Reason != status.ReasonHistoryFetchFailed || !strings.Contains(c.Message, "connection refused") || !strings.Contains(c.Message, "3 failed attempts") {
		t.Fatalf("FetchingHistory = %+v, want True/%s with the error", c, status.ReasonHistoryFetchFailed)
	}
	if v.Status.Recommendation != nil {
		t.Fatalf("recommendation %+v written without the history", v.Status.Recommendation)
	}

	// The live samples taken meanwhile are kept: they count once the
	// history is in, beside it.
	end := start.Truncate(time.Hour)
	fh.ready = []*history.Namespace{{Name: "ns", End: end, Pods: map[string]*history.Pod{
		"web-0": {Name: "web-0", Labels: map[string]string{"app": "web"}, Containers: map[string]*history.Container{"app": hourlyHistory(end, 200, 400*mi)}},
	}}}
	h.loop()
	v = h.vpa("ns", "web")
	if c := h.condition(v, vpav1.FetchingHistory); c != nil {
		t.Fatalf("FetchingHistory = %+v after the history arrived", c)
	}
	if v.Status.Recommendation == nil {
		t.Fatal("no recommendation after the history arrived")
	}
	mem := v.Status.Recommendation.ContainerRecommendations[0].Target[corev1.ResourceMemory]
	if mem.Value() < 600*mi {
		t.Errorf("memory target %s ignores the history's daily peaks of 700Mi", mem.String())
	}
	if st := h.rec.state.Get(podID("ns", "web")); st.Aggregates["app"].TotalSamplesCount != 193+5 {
		t.Errorf("CPU samples = %d, want 193 from history + 5 live", st.Aggregates["app"].TotalSamplesCount)
	}
}

func TestHistoryIsFetchedForVPAsCreatedLater(t *testing.T) {
	h := newHarness(t, nil)
	fh := withHistory(h)
	h.addVPA("ns", "web", "web")
	h.loop()
	fh.ready = []*history.Namespace{{Name: "ns", Pods: map[string]*history.Pod{}}}
	h.loop()
	asked := fh.wanted["ns"]
	h.loop()
	if fh.wanted["ns"] != asked {
		t.Fatalf("history asked for again (%d times) though every VPA has it", fh.wanted["ns"])
	}
	h.addVPA("ns", "api", "api")
	h.loop()
	if fh.wanted["ns"] != asked+1 {
		t.Fatalf("a new VPA in a namespace whose history was loaded did not ask for it again")
	}
	if c := h.condition(h.vpa("ns", "api"), vpav1.FetchingHistory); c == nil {
		t.Fatal("the new VPA does not say it waits for its history")
	}
	if c := h.condition(h.vpa("ns", "web"), vpav1.FetchingHistory); c != nil {
		t.Fatalf("the VPA that has its history waits again: %+v", c)
	}
}
