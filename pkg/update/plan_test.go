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

package update

import (
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/limitrange"
	"github.com/openvpa/openvpa/pkg/testbuild"
)

var planNow = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func pod(name string, cpu, mem string, age time.Duration) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Requests: testbuild.Resources(cpu, mem)}}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &metav1.Time{Time: planNow.Add(-age)}},
	}
}

func withRecommendation(mode vpav1.UpdateMode) *vpav1.VerticalPodAutoscaler {
	target := testbuild.Resources("500m", "500Mi")
	return &vpav1.VerticalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "v", Namespace: "ns"},
		Spec: vpav1.VerticalPodAutoscalerSpec{
			TargetRef:    &autoscalingv1.CrossVersionObjectReference{Kind: "Deployment", Name: "web"},
			UpdatePolicy: &vpav1.PodUpdatePolicy{UpdateMode: &mode},
		},
		Status: vpav1.VerticalPodAutoscalerStatus{Recommendation: &vpav1.RecommendedPodResources{ContainerRecommendations: []vpav1.RecommendedContainerResources{{
			ContainerName: "app", Target: target, UncappedTarget: target,
			LowerBound: testbuild.Resources("400m", "400Mi"), UpperBound: testbuild.Resources("600m", "600Mi"),
		}}}},
	}
}

func TestPlan(t *testing.T) {
	higher := []*vpav1.EvictionRequirement{{Resources: []corev1.ResourceName{corev1.ResourceCPU}, ChangeRequirement: vpav1.TargetHigherThanRequests}}
	tightLR := limitrange.Merge([]*corev1.LimitRange{{
		ObjectMeta: metav1.ObjectMeta{Name: "max", Namespace: "ns"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypePod,
			Max: testbuild.Resources("300m", "")}}},
	}})
	tests := map[string]struct {
		pods         []*corev1.Pod
		requirements []*vpav1.EvictionRequirement
		lr           limitrange.Merged
		want         []Outcome
		wantOrder    []string
	}{
		"below the bounds, within bounds but young, drifted and old": {
			pods: []*corev1.Pod{pod("young", "450m", "450Mi", time.Hour), pod("small", "100m", "100Mi", time.Hour),
				pod("old", "450m", "450Mi", 13*time.Hour), pod("big", "2", "2Gi", time.Hour)},
			want: []Outcome{NotCandidate, Candidate, Candidate, Candidate},
			// Scale-ups first (larger change first), then scale-downs.
			wantOrder: []string{"small", "old", "big"},
		},
		"evictionRequirements ask for a higher target": {
			pods:         []*corev1.Pod{pod("small", "100m", "100Mi", time.Hour), pod("big", "2", "2Gi", time.Hour)},
			requirements: higher,
			want:         []Outcome{Candidate, EvictionRequirementsNotMet},
			wantOrder:    []string{"small"},
		},
		"a LimitRange the policy cannot meet": {
			pods:      []*corev1.Pod{pod("small", "100m", "100Mi", time.Hour)},
			lr:        tightLR,
			want:      []Outcome{LimitRangeConflict},
			wantOrder: []string{},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			v := withRecommendation(vpav1.UpdateModeRecreate)
			v.Spec.UpdatePolicy.EvictionRequirements = tc.requirements
			all, candidates := Plan(v, tc.pods, PlanOptions{Thresholds: DefaultThresholds(), LimitRanges: tc.lr, Now: planNow})
			if len(all) != len(tc.pods) {
				t.Fatalf("%d decisions for %d pods", len(all), len(tc.pods))
			}
			for i, p := range all {
				if p.Outcome != tc.want[i] {
					t.Errorf("pod %s: outcome %s (%s), want %s", p.Pod.Name, p.Outcome, p.Decision.Reason, tc.want[i])
				}
			}
			if tc.wantOrder != nil {
				var order []string
				for _, c := range candidates {
					order = append(order, c.Pod.Name)
				}
				if len(order) != len(tc.wantOrder) {
					t.Fatalf("candidates %v, want %v", order, tc.wantOrder)
				}
				for i := range order {
					if order[i] != tc.wantOrder[i] {
						t.Errorf("candidates %v, want %v", order, tc.wantOrder)
						break
					}
				}
			}
			for _, c := range candidates {
				if len(c.Requests["app"]) == 0 || c.Plan == nil {
					t.Errorf("candidate %s has no requests or plan: %+v", c.Pod.Name, c)
				}
			}
		})
	}
	t.Run("no recommendation, no decisions", func(t *testing.T) {
		v := withRecommendation(vpav1.UpdateModeRecreate)
		v.Status.Recommendation = nil
		if all, c := Plan(v, []*corev1.Pod{pod("p", "1", "1Gi", time.Hour)}, PlanOptions{Now: planNow}); all != nil || c != nil {
			t.Errorf("Plan without a recommendation = %v, %v", all, c)
		}
	})
}
