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
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/testpoll"
	"github.com/openvpa/openvpa/recommender/checkpoint"
	"github.com/openvpa/openvpa/recommender/vpacache"
)

func rl(cpu, mem string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
}

func status(target, lower, upper string, conds ...vpav1.VerticalPodAutoscalerCondition) vpav1.VerticalPodAutoscalerStatus {
	gen := int64(1)
	return vpav1.VerticalPodAutoscalerStatus{
		ObservedGeneration: &gen,
		Conditions:         conds,
		Recommendation: &vpav1.RecommendedPodResources{ContainerRecommendations: []vpav1.RecommendedContainerResources{{
			ContainerName: "app", Target: rl(target, "250Mi"), UncappedTarget: rl(target, "250Mi"),
			LowerBound: rl(lower, "250Mi"), UpperBound: rl(upper, "250Mi"),
		}}},
	}
}

func TestNeedsWrite(t *testing.T) {
	now := start
	provided := vpav1.VerticalPodAutoscalerCondition{Type: vpav1.RecommendationProvided, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(start)}
	lowConfidence := vpav1.VerticalPodAutoscalerCondition{Type: vpav1.LowConfidence, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(start)}
	tests := map[string]struct {
		old, new  vpav1.VerticalPodAutoscalerStatus
		lastWrite time.Time
		want      bool
	}{
		"identical":                  {old: status("350m", "300m", "400m"), new: status("350m", "300m", "400m"), lastWrite: now, want: false},
		"same value, other notation": {old: status("0.35", "300m", "400m"), new: status("350m", "300m", "400m"), lastWrite: now, want: false},
		"target changed":             {old: status("350m", "300m", "400m"), new: status("351m", "300m", "400m"), lastWrite: now, want: true},
		"small bound drift, recent":  {old: status("350m", "300m", "400m"), new: status("350m", "300m", "410m"), lastWrite: now, want: false},
		"small bound drift, stale":   {old: status("350m", "300m", "400m"), new: status("350m", "300m", "410m"), lastWrite: now.Add(-10 * time.Minute), want: true},
		"25% bound move, recent":     {old: status("350m", "300m", "400m"), new: status("350m", "300m", "500m"), lastWrite: now, want: false},
		"large bound move":           {old: status("350m", "300m", "400m"), new: status("350m", "300m", "700m"), lastWrite: now, want: true},
		"large bound move under LowConfidence waits for the slot": {
			old: status("350m", "300m", "400m", lowConfidence), new: status("350m", "300m", "700m", lowConfidence), lastWrite: now, want: false,
		},
		"condition added":          {old: status("350m", "300m", "400m"), new: status("350m", "300m", "400m", provided), lastWrite: now, want: true},
		"recommendation appears":   {old: vpav1.VerticalPodAutoscalerStatus{ObservedGeneration: status("1", "1", "1").ObservedGeneration}, new: status("350m", "300m", "400m"), lastWrite: now, want: true},
		"observedGeneration moves": {old: vpav1.VerticalPodAutoscalerStatus{}, new: vpav1.VerticalPodAutoscalerStatus{ObservedGeneration: status("1", "1", "1").ObservedGeneration}, lastWrite: now, want: true},
		"sub-second transition time only": {old: status("350m", "300m", "400m", provided), new: func() vpav1.VerticalPodAutoscalerStatus {
			p := provided
			p.LastTransitionTime = metav1.NewTime(start.Add(300 * time.Millisecond))
			return status("350m", "300m", "400m", p)
		}(), lastWrite: now, want: false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := NeedsWrite(tc.old, vpacache.Compact(tc.old.Recommendation), tc.new, tc.lastWrite, now, 10*time.Minute, 0); got != tc.want {
				t.Errorf("NeedsWrite = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestBuildStatus(t *testing.T) {
	rec := status("350m", "300m", "400m").Recommendation
	earlier := metav1.NewTime(start.Add(-time.Hour))
	vpa := &vpav1.VerticalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Generation: 3}}
	vpa.Status.Conditions = []vpav1.VerticalPodAutoscalerCondition{
		{Type: vpav1.RecommendationProvided, Status: corev1.ConditionTrue, LastTransitionTime: earlier},
		{Type: vpav1.ConfigDeprecated, Status: corev1.ConditionTrue},
	}
	tests := map[string]struct {
		facts Facts
		want  map[vpav1.VerticalPodAutoscalerConditionType]corev1.ConditionStatus
	}{
		"provided with a week of history": {
			facts: Facts{Recommendation: rec, Confidence: map[string]float64{"app": 7}, PodsMatched: true},
			want:  map[vpav1.VerticalPodAutoscalerConditionType]corev1.ConditionStatus{vpav1.RecommendationProvided: corev1.ConditionTrue},
		},
		"low confidence": {
			facts: Facts{Recommendation: rec, Confidence: map[string]float64{"app": 0.5}, PodsMatched: true},
			want: map[vpav1.VerticalPodAutoscalerConditionType]corev1.ConditionStatus{
				vpav1.RecommendationProvided: corev1.ConditionTrue, vpav1.LowConfidence: corev1.ConditionTrue},
		},
		"no pods, kept recommendation": {
			facts: Facts{Recommendation: rec, Confidence: map[string]float64{"app": 2}},
			want: map[vpav1.VerticalPodAutoscalerConditionType]corev1.ConditionStatus{
				vpav1.RecommendationProvided: corev1.ConditionTrue, vpav1.NoPodsMatched: corev1.ConditionTrue},
		},
		"unsupported, nothing": {
			facts: Facts{Unsupported: "Cannot read targetRef", FetchingHistory: ReasonFetchingHistory},
			want: map[vpav1.VerticalPodAutoscalerConditionType]corev1.ConditionStatus{
				vpav1.RecommendationProvided: corev1.ConditionFalse, vpav1.NoPodsMatched: corev1.ConditionTrue,
				vpav1.ConfigUnsupported: corev1.ConditionTrue, vpav1.FetchingHistory: corev1.ConditionTrue},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			st := BuildStatus(vpa, tc.facts, start)
			if st.ObservedGeneration == nil || *st.ObservedGeneration != 3 {
				t.Errorf("observedGeneration = %v", st.ObservedGeneration)
			}
			got := map[vpav1.VerticalPodAutoscalerConditionType]corev1.ConditionStatus{}
			for i, c := range st.Conditions {
				got[c.Type] = c.Status
				if i > 0 && st.Conditions[i-1].Type >= c.Type {
					t.Errorf("conditions not sorted: %v", st.Conditions)
				}
				if c.Type == vpav1.RecommendationProvided {
					keep := c.Status == corev1.ConditionTrue
					if keep != c.LastTransitionTime.Equal(&earlier) {
						t.Errorf("RecommendationProvided transition time %v (status %s)", c.LastTransitionTime, c.Status)
					}
					if c.Status == corev1.ConditionFalse && c.Reason != ReasonNoPodsMatched {
						t.Errorf("RecommendationProvided False reason %q", c.Reason)
					}
				}
			}
			if len(got) != len(tc.want) {
				t.Errorf("conditions = %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
			if (st.Recommendation != nil) != (tc.facts.Recommendation != nil) {
				t.Errorf("recommendation = %v", st.Recommendation)
			}
		})
	}
}

// TestBoundDriftWritesAreSpread: 500 VPAs written together whose upper bounds
// then drift at every loop (young VPAs whose confidence grows) are rewritten
// about N/10 per 1-minute loop, not all at every loop, and each within the
// 10-minute max age.
func TestBoundDriftWritesAreSpread(t *testing.T) {
	const n, maxAge = 500, 10 * time.Minute
	lowConfidence := vpav1.VerticalPodAutoscalerCondition{Type: vpav1.LowConfidence, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(start)}
	tests := map[string]func(loop int) vpav1.VerticalPodAutoscalerStatus{
		"small drift of settled VPAs": func(loop int) vpav1.VerticalPodAutoscalerStatus {
			return status("350m", "300m", fmt.Sprintf("%dm", 400+10*loop))
		},
		// The upper bound of a young VPA is P95 × (1 + 1/confidence), with
		// confidence growing by 1/1440 per minute.
		"young VPAs under LowConfidence": func(loop int) vpav1.VerticalPodAutoscalerStatus {
			return status("350m", "300m", fmt.Sprintf("%dm", 400*(1+1440/loop)), lowConfidence)
		},
	}
	for name, statusAt := range tests {
		t.Run(name, func(t *testing.T) {
			written := make([]time.Time, n)
			last := make([]vpav1.VerticalPodAutoscalerStatus, n)
			for i := range written {
				written[i], last[i] = start, statusAt(1)
			}
			for loop := 2; loop <= 21; loop++ {
				now := start.Add(time.Duration(loop-1) * time.Minute)
				next := statusAt(loop)
				writes := 0
				for i := range written {
					phase := checkpoint.Offset(fmt.Sprintf("ns/vpa-%d", i), maxAge)
					if NeedsWrite(last[i], vpacache.Compact(last[i].Recommendation), next, written[i], now, maxAge, phase) {
						written[i], last[i] = now, next
						writes++
					}
				}
				if writes > 2*n/10 {
					t.Errorf("loop %d wrote %d of %d statuses; bound drifts should be spread over the max age", loop, writes, n)
				}
				for i, w := range written {
					if now.Sub(w) > maxAge {
						t.Fatalf("loop %d: VPA %d unwritten for %v, more than the max age", loop, i, now.Sub(w))
					}
				}
			}
		})
	}
}

// TestStatusWritesPerLoop: with more status writes due than
// Config.StatusWritesPerLoop, a loop queues only as many as fit beside the
// writes still running, first recommendations before rewrites, and the rest
// wait for later loops (upstream queues every write of a loop, so 10,000 new
// VPAs hold 10,000 statuses for the 200 s that QPS 50 takes to write them).
func TestStatusWritesPerLoop(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.StatusWritesPerLoop = 3 })
	w := &gatedStatus{StatusWriter: h.rec.deps.Status, gate: newGate()}
	h.rec.deps.Status = w
	h.addWorkloads(7)
	ctx := context.Background()
	recommended := func() int {
		n := 0
		for i := range 7 {
			if HasRecommendation(h.vpa("ns", fmt.Sprintf("web%d", i)).Status.Recommendation) {
				n++
			}
		}
		return n
	}

	h.rec.RunOnce(ctx)
	if n := len(h.rec.statusInflight); n != 3 {
		t.Fatalf("%d status writes queued by the first loop, want 3", n)
	}
	var m dto.Metric
	if err := h.rec.deps.Prom.StatusWritesWaiting.Write(&m); err != nil {
		t.Fatal(err)
	}
	if got := m.GetGauge().GetValue(); got != 4 {
		t.Errorf("status_writes_waiting = %v after the first loop, want 4", got)
	}
	// The three writes still run: the next loop has no room.
	h.clk.Step(time.Minute)
	h.rec.RunOnce(ctx)
	if n := len(h.rec.statusInflight); n != 3 {
		t.Fatalf("%d status writes in flight after a loop with three still running, want 3", n)
	}
	close(w.open)
	h.rec.WaitWrites()
	h.sync()
	if n := recommended(); n != 3 {
		t.Fatalf("%d VPAs recommended after the first writes, want 3", n)
	}
	// Every VPA has changed samples now, but the four without a
	// recommendation go first.
	for _, want := range []int{6, 7} {
		h.clk.Step(time.Minute)
		h.rec.RunOnce(ctx)
		h.rec.WaitWrites()
		h.sync()
		if n := recommended(); n != want {
			t.Fatalf("%d VPAs recommended, want %d: first recommendations did not go before rewrites", n, want)
		}
	}
}

func TestLimitStatusJobs(t *testing.T) {
	at := func(m int) time.Time { return start.Add(time.Duration(m) * time.Minute) }
	job := func(name string, first bool, written time.Time) statusJob {
		return statusJob{key: types.NamespacedName{Namespace: "ns", Name: name}, first: first, written: written}
	}
	jobs := func() []statusJob {
		return []statusJob{job("old", false, at(1)), job("new-b", true, time.Time{}), job("recent", false, at(5)), job("new-a", true, time.Time{}), job("never", false, time.Time{})}
	}
	for _, tc := range []struct {
		name        string
		room        int
		capped      bool
		want        []string
		wantWaiting int
		wantFirst   int
	}{
		{name: "no cap keeps all, ordered", room: 0, capped: false, want: []string{"new-a", "new-b", "never", "old", "recent"}},
		{name: "room for all", room: 5, capped: true, want: []string{"new-a", "new-b", "never", "old", "recent"}},
		{name: "first recommendations, then the longest unwritten", room: 3, capped: true, want: []string{"new-a", "new-b", "never"}, wantWaiting: 2},
		{name: "a first recommendation waits", room: 1, capped: true, want: []string{"new-a"}, wantWaiting: 4, wantFirst: 1},
		{name: "no room", room: 0, capped: true, want: []string{}, wantWaiting: 5, wantFirst: 2},
		{name: "more running than the cap", room: -2, capped: true, want: []string{}, wantWaiting: 5, wantFirst: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, waiting, first := limitStatusJobs(jobs(), tc.room, tc.capped)
			names := []string{}
			for _, j := range got {
				names = append(names, j.key.Name)
			}
			if !slices.Equal(names, tc.want) || waiting != tc.wantWaiting || first != tc.wantFirst {
				t.Errorf("limitStatusJobs = %v, %d waiting (%d first); want %v, %d (%d)", names, waiting, first, tc.want, tc.wantWaiting, tc.wantFirst)
			}
		})
	}
}

// apiServerStatus returns what the API server returns for a status
// patch: the object with its managedFields and a new resourceVersion
// (writtenVersion; the fake clientset keeps none).
type apiServerStatus struct{ StatusWriter }

const writtenVersion = "written"

func (m apiServerStatus) WriteStatus(ctx context.Context, v *vpav1.VerticalPodAutoscaler, s vpav1.VerticalPodAutoscalerStatus) (*vpav1.VerticalPodAutoscaler, error) {
	u, err := m.StatusWriter.WriteStatus(ctx, v, s)
	if err != nil {
		return nil, err
	}
	u.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: checkpoint.FieldManager, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status"}}
	u.ResourceVersion = writtenVersion
	return u, nil
}

// TestWrittenObjectHeldInTheCachedForm: the object a status write returns
// stands in for the informer's copy until the informer catches up. It is
// held as the cached object with the written resourceVersion and status:
// neither the answer's managedFields (most of a written VPA's bytes) nor a
// second decoded copy of its metadata and spec.
func TestWrittenObjectHeldInTheCachedForm(t *testing.T) {
	h := newHarness(t, nil)
	h.rec.deps.Status = apiServerStatus{h.rec.deps.Status}
	h.addVPA("ns", "web", "web")
	h.addPod("ns", "web-1", "web", 300, 200*mi, "app")
	ctx := context.Background()
	k := types.NamespacedName{Namespace: "ns", Name: "web"}
	cached := h.rec.deps.VPAs.Get("ns", "web")
	if cached == nil {
		t.Fatal("the VPA is not cached")
	}
	h.rec.RunOnce(ctx)
	h.rec.WaitWrites()
	h.rec.RunOnce(ctx) // applies the outcome; the lister has not caught up
	st := h.rec.vpas[k]
	if st == nil || st.obj == nil || len(st.obj.Recommendation) == 0 {
		t.Fatalf("the loop does not hold the written object")
	}
	if st.obj.VerticalPodAutoscaler.Status.Recommendation != nil {
		t.Errorf("the written recommendation is held decoded, not in the compact form")
	}
	if len(st.obj.ManagedFields) != 0 {
		t.Errorf("the written object is held with its managedFields")
	}
	if st.obj.ResourceVersion != writtenVersion {
		t.Errorf("held resourceVersion %q, want the written %q", st.obj.ResourceVersion, writtenVersion)
	}
	if st.obj.Spec.TargetRef != cached.Spec.TargetRef {
		t.Errorf("the held object carries a copy of the spec, not the cached one")
	}
	if st.obj == cached || len(cached.Recommendation) != 0 {
		t.Errorf("the cached object was modified in place")
	}
}

// semanticChanged is StatusChanged as reflection over copies would decide
// it (apiequality.Semantic after normalizing): the reference the
// allocation-free comparison must agree with.
func semanticChanged(a, b vpav1.VerticalPodAutoscalerStatus) bool {
	norm := func(s vpav1.VerticalPodAutoscalerStatus) vpav1.VerticalPodAutoscalerStatus {
		out := *s.DeepCopy()
		if len(out.Conditions) == 0 {
			out.Conditions = nil
		}
		for i := range out.Conditions {
			out.Conditions[i].LastTransitionTime = metav1.NewTime(out.Conditions[i].LastTransitionTime.Truncate(time.Second))
		}
		if out.Recommendation != nil && len(out.Recommendation.ContainerRecommendations) == 0 {
			out.Recommendation = nil
		}
		return out
	}
	return !apiequality.Semantic.DeepEqual(norm(a), norm(b))
}

// TestStatusChangedAgreesWithSemanticEquality compares every pair of a set
// of statuses that differ in one respect each, or only in form (1000m and
// 1, nil and empty, sub-second times).
func TestStatusChangedAgreesWithSemanticEquality(t *testing.T) {
	gen := func(g int64) *int64 { return &g }
	t0 := metav1.NewTime(start)
	rec := func(name string, target, lower corev1.ResourceList) *vpav1.RecommendedPodResources {
		return &vpav1.RecommendedPodResources{ContainerRecommendations: []vpav1.RecommendedContainerResources{
			{ContainerName: name, Target: target, LowerBound: lower, UpperBound: rl("2", "2Gi"), UncappedTarget: target}}}
	}
	cond := func(typ vpav1.VerticalPodAutoscalerConditionType, status corev1.ConditionStatus, at metav1.Time, msg string) []vpav1.VerticalPodAutoscalerCondition {
		return []vpav1.VerticalPodAutoscalerCondition{{Type: typ, Status: status, LastTransitionTime: at, Message: msg}}
	}
	statuses := map[string]vpav1.VerticalPodAutoscalerStatus{
		"empty":                      {},
		"empty conditions":           {Conditions: []vpav1.VerticalPodAutoscalerCondition{}},
		"no containers":              {Recommendation: &vpav1.RecommendedPodResources{}},
		"generation 1":               {ObservedGeneration: gen(1)},
		"generation 2":               {ObservedGeneration: gen(2)},
		"rec":                        {Recommendation: rec("app", rl("1", "1Gi"), rl("500m", "512Mi"))},
		"rec in other units":         {Recommendation: rec("app", rl("1000m", "1024Mi"), rl("0.5", "536870912"))},
		"rec other container":        {Recommendation: rec("side", rl("1", "1Gi"), rl("500m", "512Mi"))},
		"rec other target":           {Recommendation: rec("app", rl("2", "1Gi"), rl("500m", "512Mi"))},
		"rec other lower bound":      {Recommendation: rec("app", rl("1", "1Gi"), rl("400m", "512Mi"))},
		"rec without lower bound":    {Recommendation: rec("app", rl("1", "1Gi"), nil)},
		"rec with empty lower bound": {Recommendation: rec("app", rl("1", "1Gi"), corev1.ResourceList{})},
		"rec cpu only":               {Recommendation: rec("app", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}, rl("500m", "512Mi"))},
		"condition":                  {Conditions: cond(vpav1.RecommendationProvided, corev1.ConditionTrue, t0, "")},
		"condition later in second":  {Conditions: cond(vpav1.RecommendationProvided, corev1.ConditionTrue, metav1.NewTime(start.Add(300*time.Millisecond)), "")},
		"condition a second later":   {Conditions: cond(vpav1.RecommendationProvided, corev1.ConditionTrue, metav1.NewTime(start.Add(time.Second)), "")},
		"condition false":            {Conditions: cond(vpav1.RecommendationProvided, corev1.ConditionFalse, t0, "")},
		"condition other message":    {Conditions: cond(vpav1.RecommendationProvided, corev1.ConditionTrue, t0, "m")},
		"condition other type":       {Conditions: cond(vpav1.LowConfidence, corev1.ConditionTrue, t0, "")},
	}
	for an, a := range statuses {
		for bn, b := range statuses {
			if got, want := StatusChanged(a, vpacache.Compact(a.Recommendation), b), semanticChanged(a, b); got != want {
				t.Errorf("StatusChanged(%s, %s) = %v, semantic equality says %v", an, bn, got, want)
			}
		}
	}
}

func BenchmarkNeedsWrite(b *testing.B) {
	old := status("163m", "25m", "11738m", vpav1.VerticalPodAutoscalerCondition{Type: vpav1.RecommendationProvided, Status: corev1.ConditionTrue})
	updated := status("163m", "25m", "11738m", vpav1.VerticalPodAutoscalerCondition{Type: vpav1.RecommendationProvided, Status: corev1.ConditionTrue})
	oldRec := vpacache.Compact(old.Recommendation)
	b.ReportAllocs()
	for b.Loop() {
		NeedsWrite(old, oldRec, updated, start, start, time.Hour, 0)
	}
}

// tokenStatus lets one status write through per token and counts the
// finished ones.
type tokenStatus struct {
	StatusWriter
	tokens   chan struct{}
	finished atomic.Int32
}

func (w *tokenStatus) WriteStatus(ctx context.Context, v *vpav1.VerticalPodAutoscaler, s vpav1.VerticalPodAutoscalerStatus) (*vpav1.VerticalPodAutoscaler, error) {
	select {
	case <-w.tokens:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer w.finished.Add(1)
	return w.StatusWriter.WriteStatus(ctx, v, s)
}

// TestStatusWritesPerLoopCountsUnfinishedWrites: the room a loop has for
// status writes is the cap less the writes still unfinished, not less the
// whole batch they came in: with QPS-paced writes a batch is still running
// when the next loop starts, and counting all of it would leave every other
// loop without writes (10,000 new VPAs got 30 instead of 50 writes a second).
func TestStatusWritesPerLoopCountsUnfinishedWrites(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.StatusWritesPerLoop = 3 })
	w := &tokenStatus{StatusWriter: h.rec.deps.Status, tokens: make(chan struct{}, 10)}
	h.rec.deps.Status = w
	h.addWorkloads(7)
	ctx := context.Background()
	h.rec.RunOnce(ctx) // queues 3
	w.tokens <- struct{}{}
	w.tokens <- struct{}{}
	// Wait for the loop's own count: the writer returns before the loop's
	// worker counts its write finished.
	testpoll.Until(t, 10*time.Second, "the 2 released writes to be counted finished", func() bool {
		return h.rec.statusPending.Load() == 1
	})
	h.clk.Step(time.Minute)
	h.rec.RunOnce(ctx) // one write of the first batch still runs: room for 2
	if got := h.rec.statusPending.Load(); got != 3 {
		t.Errorf("%d status writes unfinished after the second loop, want 1 left + 2 new", got)
	}
	for range 3 {
		w.tokens <- struct{}{}
	}
	h.rec.WaitWrites()
	if got := w.finished.Load(); got != 5 {
		t.Errorf("%d status writes after two loops, want 5", got)
	}
}
