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
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/hpa"
	"github.com/openvpa/openvpa/pkg/nodefit"
	"github.com/openvpa/openvpa/pkg/quota"
	"github.com/openvpa/openvpa/pkg/recommendation"
)

func cpuRoom(milli int64) *quota.Room {
	return &quota.Room{
		Requests: nodefit.Amounts{CPU: milli, Memory: quota.Unlimited},
		Limits:   nodefit.Amounts{CPU: quota.Unlimited, Memory: quota.Unlimited},
		By:       map[corev1.ResourceName]string{corev1.ResourceRequestsCPU: "team"},
	}
}

// TestPlanQuota: an update whose replacement (Recreate) or resize
// (InPlace) the quota would refuse, or that the quota leaves no more than
// the pod has, is left out; one with room goes, with the increase capped.
func TestPlanQuota(t *testing.T) {
	tests := map[string]struct {
		mode     vpav1.UpdateMode
		pod      *corev1.Pod
		room     *quota.Room
		want     Outcome
		why      string
		wantCPU  string
		replaces bool
	}{
		"room for the whole replacement": {
			mode: vpav1.UpdateModeRecreate, pod: pod("small", "100m", "500Mi", time.Hour), room: cpuRoom(2000),
			want: Candidate, wantCPU: "500m", replaces: true,
		},
		"increase capped, still more than the pod has": {
			mode: vpav1.UpdateModeRecreate, pod: pod("small", "100m", "500Mi", time.Hour), room: cpuRoom(400),
			want: Candidate, wantCPU: "300m", replaces: true,
		},
		"no room for more than the pod has": {
			mode: vpav1.UpdateModeRecreate, pod: pod("small", "100m", "500Mi", time.Hour), room: cpuRoom(150),
			want: QuotaConflict, why: "leaves no room to give the pod more cpu",
		},
		"a decrease whose replacement the quota refuses while the old pod terminates": {
			mode: vpav1.UpdateModeRecreate, pod: pod("big", "2", "500Mi", time.Hour), room: cpuRoom(100),
			want: QuotaConflict, why: "would refuse the replacement pod",
		},
		"a decrease resized in place needs no room": {
			mode: vpav1.UpdateModeInPlace, pod: pod("big", "2", "500Mi", time.Hour), room: cpuRoom(0),
			want: Candidate, wantCPU: "500m",
		},
		"no quota": {
			mode: vpav1.UpdateModeRecreate, pod: pod("small", "100m", "500Mi", time.Hour),
			want: Candidate, wantCPU: "500m", replaces: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			v := withRecommendation(tc.mode)
			all, _ := Plan(v, []*corev1.Pod{tc.pod}, PlanOptions{Thresholds: DefaultThresholds(), Now: planNow,
				Fit: func(*corev1.Pod) recommendation.Fit { return recommendation.Fit{Quota: tc.room} }})
			p := all[0]
			if p.Outcome != tc.want || !strings.Contains(p.Why, tc.why) {
				t.Fatalf("outcome %s (%q), want %s (%q)", p.Outcome, p.Why, tc.want, tc.why)
			}
			if tc.want != Candidate {
				return
			}
			if got := p.Requests["app"][corev1.ResourceCPU]; got.String() != tc.wantCPU {
				t.Errorf("cpu request %s, want %s", got.String(), tc.wantCPU)
			}
			if tc.replaces && !p.ReplacementFits {
				t.Error("the replacement does not fit")
			}
		})
	}
}

// TestPlanNodeFit: the decision and the plan both see the recommendation
// capped to the largest node, so a pod already at that size is left alone.
func TestPlanNodeFit(t *testing.T) {
	v := withRecommendation(vpav1.UpdateModeRecreate)
	rooms := []nodefit.Room{{Node: "n", Allocatable: nodefit.Amounts{CPU: 300, Memory: 8 << 30}, Free: nodefit.Amounts{CPU: 300, Memory: 8 << 30}}}
	fit := func(*corev1.Pod) recommendation.Fit { return recommendation.Fit{Nodes: rooms} }
	all, candidates := Plan(v, []*corev1.Pod{pod("at-node-size", "300m", "500Mi", time.Hour), pod("small", "100m", "500Mi", time.Hour)},
		PlanOptions{Thresholds: DefaultThresholds(), Now: planNow, Fit: fit})
	if all[0].Outcome != NotCandidate {
		t.Errorf("a pod at the node's size: %s (%s), want NotCandidate", all[0].Outcome, all[0].Decision.Reason)
	}
	if len(candidates) != 1 || candidates[0].Pod.Name != "small" {
		t.Fatalf("candidates %v", candidates)
	}
	if got := candidates[0].Requests["app"][corev1.ResourceCPU]; got.String() != "300m" {
		t.Errorf("cpu request %s, want the node's 300m", got.String())
	}
}

// TestPlanYieldsToHPA: a pod whose cpu is far from the target but whose
// memory is within the bounds is left alone when cpu is left to an HPA.
func TestPlanYieldsToHPA(t *testing.T) {
	v := withRecommendation(vpav1.UpdateModeRecreate)
	p := pod("cpu-off", "100m", "500Mi", time.Hour)
	yield := func(*corev1.Pod) recommendation.Fit {
		return recommendation.Fit{Yield: []hpa.Conflict{{HPA: "web", Resource: corev1.ResourceCPU}}}
	}
	if all, _ := Plan(v, []*corev1.Pod{p}, PlanOptions{Thresholds: DefaultThresholds(), Now: planNow}); all[0].Outcome != Candidate {
		t.Fatalf("without the yield: %s, want Candidate", all[0].Outcome)
	}
	if all, _ := Plan(v, []*corev1.Pod{p}, PlanOptions{Thresholds: DefaultThresholds(), Now: planNow, Fit: yield}); all[0].Outcome != NotCandidate {
		t.Errorf("cpu left to an HPA: %s (%s), want NotCandidate", all[0].Outcome, all[0].Decision.Reason)
	}
}
