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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
)

func TestDecidePod(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	rec := &vpav1.RecommendedPodResources{ContainerRecommendations: []vpav1.RecommendedContainerResources{
		{ContainerName: "app", LowerBound: rl("150m", ""), Target: rl("200m", ""), UpperBound: rl("300m", "")},
		{ContainerName: "sidecar", LowerBound: rl("150m", ""), Target: rl("200m", ""), UpperBound: rl("300m", "")},
	}}
	pod := func(appCPU, sidecarCPU string, mut ...func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{
			Spec: corev1.PodSpec{Containers: []corev1.Container{
				{Name: "app", Resources: corev1.ResourceRequirements{Requests: rl(appCPU, "")}},
				{Name: "sidecar", Resources: corev1.ResourceRequirements{Requests: rl(sidecarCPU, "")}},
			}},
			Status: corev1.PodStatus{StartTime: &metav1.Time{Time: now.Add(-time.Hour)}},
		}
		for _, m := range mut {
			m(p)
		}
		return p
	}
	oomEnded := func(ran, ago time.Duration) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", LastTerminationState: corev1.ContainerState{
				Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", StartedAt: metav1.Time{Time: now.Add(-ran - ago)}, FinishedAt: metav1.Time{Time: now.Add(-ago)}},
			}}}
		}
	}
	oom := func(ran time.Duration) func(*corev1.Pod) { return oomEnded(ran, time.Minute) }
	off := vpav1.ContainerScalingModeOff
	tests := map[string]struct {
		pod      *corev1.Pod
		policy   *vpav1.PodResourcePolicy
		observed []string
		perVPA   *int32
		want     Reason
		update   bool
	}{
		"all containers observed when the annotation is absent": {
			pod: pod("200m", "100m"), want: ReasonOutsideRange, update: true,
		},
		"unobserved sidecar is ignored": {
			pod: pod("200m", "100m"), observed: []string{"app"}, want: ReasonTooYoung,
		},
		"quick OOM from the last termination state": {
			pod: pod("180m", "200m", oom(time.Minute)), want: ReasonQuickOOM, update: true,
		},
		// Upstream 1.8: the OOM kill must also have ended within the
		// threshold; 1.7 counted a quick OOM of any age, so a pod that
		// OOMed once at start stayed a candidate for its whole life.
		"quick OOM that ended 11m ago no longer counts": {
			pod: pod("180m", "200m", oomEnded(time.Minute, 11*time.Minute)), want: ReasonTooYoung,
		},
		"quick OOM that ended 9m ago counts": {
			pod: pod("180m", "200m", oomEnded(time.Minute, 9*time.Minute)), want: ReasonQuickOOM, update: true,
		},
		"OOM of a container with scaling mode Off": {
			pod: pod("180m", "200m", oom(time.Minute)), want: ReasonTooYoung,
			policy: &vpav1.PodResourcePolicy{ContainerPolicies: []vpav1.ContainerResourcePolicy{{ContainerName: "app", Mode: &off}}},
		},
		"per-VPA OOM threshold": {
			pod: pod("180m", "200m", oom(20*time.Minute)), perVPA: ptr.To(int32(3600)), want: ReasonQuickOOM, update: true,
		},
		"status resources win over the spec": {
			pod: pod("200m", "200m", func(p *corev1.Pod) {
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Resources: &corev1.ResourceRequirements{Requests: rl("100m", "")}}}
			}), want: ReasonOutsideRange, update: true,
		},
		"no start time": {
			pod: pod("180m", "200m", func(p *corev1.Pod) { p.Status.StartTime = nil }), want: ReasonNoStartTime,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			vpa := &vpav1.VerticalPodAutoscaler{Spec: vpav1.VerticalPodAutoscalerSpec{UpdatePolicy: &vpav1.PodUpdatePolicy{EvictAfterOOMSeconds: tc.perVPA}}}
			cfg := ThresholdsForVPA(DefaultThresholds(), vpa, true)
			got := DecidePod(cfg, tc.pod, rec, tc.policy, tc.observed, now)
			if got.Reason != tc.want || got.Update != tc.update {
				t.Errorf("DecidePod() = %+v, want reason %s update %v", got, tc.want, tc.update)
			}
		})
	}
}

func TestThresholdsForVPAGate(t *testing.T) {
	vpa := &vpav1.VerticalPodAutoscaler{Spec: vpav1.VerticalPodAutoscalerSpec{UpdatePolicy: &vpav1.PodUpdatePolicy{EvictAfterOOMSeconds: ptr.To(int32(60))}}}
	if got := ThresholdsForVPA(DefaultThresholds(), vpa, false).EvictAfterOOMThreshold; got != 10*time.Minute {
		t.Errorf("gate off: threshold %v, want 10m", got)
	}
	if got := ThresholdsForVPA(DefaultThresholds(), vpa, true).EvictAfterOOMThreshold; got != time.Minute {
		t.Errorf("gate on: threshold %v, want 1m", got)
	}
}
