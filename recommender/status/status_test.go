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

package status

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/recommender/checkpoint"
	"github.com/openvpa/openvpa/recommender/vpacache"
)

var start = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

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

func TestLimitJobs(t *testing.T) {
	at := func(m int) time.Time { return start.Add(time.Duration(m) * time.Minute) }
	job := func(name string, first bool, written time.Time) Job {
		return Job{Key: types.NamespacedName{Namespace: "ns", Name: name}, First: first, Written: written}
	}
	jobs := func() []Job {
		return []Job{job("old", false, at(1)), job("new-b", true, time.Time{}), job("recent", false, at(5)), job("new-a", true, time.Time{}), job("never", false, time.Time{})}
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
			got, waiting, first := limitJobs(jobs(), tc.room, tc.capped)
			names := []string{}
			for _, j := range got {
				names = append(names, j.Key.Name)
			}
			if !slices.Equal(names, tc.want) || waiting != tc.wantWaiting || first != tc.wantFirst {
				t.Errorf("limitJobs = %v, %d waiting (%d first); want %v, %d (%d)", names, waiting, first, tc.want, tc.wantWaiting, tc.wantFirst)
			}
		})
	}
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
