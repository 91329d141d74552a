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

package vpa

import (
	"reflect"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
)

func existing(name, deployment string, age time.Duration, mode vpav1.UpdateMode) *vpav1.VerticalPodAutoscaler {
	return &vpav1.VerticalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: metav1.NewTime(time.Unix(1e9, 0).Add(-age))},
		Spec: vpav1.VerticalPodAutoscalerSpec{
			TargetRef:    &autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: deployment},
			UpdatePolicy: &vpav1.PodUpdatePolicy{UpdateMode: ptr(mode)},
		},
	}
}

func TestConflictWarnings(t *testing.T) {
	cpuHPA := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web-hpa", Namespace: "ns"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "web"},
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType,
				Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU}}},
		},
	}
	hpaWarning := "VPA new: HorizontalPodAutoscaler web-hpa on cpu scales Deployment/web on a resource this VPA also sets; the two fight over the same resource " +
		"(let the HPA scale on other metrics, or leave that resource out of the VPA's controlledResources)"
	tests := map[string]struct {
		vpas   []*vpav1.VerticalPodAutoscaler
		hpas   []*autoscalingv2.HorizontalPodAutoscaler
		update bool
		want   []string
	}{
		"alone": {vpas: []*vpav1.VerticalPodAutoscaler{existing("api", "api", time.Hour, vpav1.UpdateModeRecreate)}},
		"an older VPA on the same Deployment": {
			vpas: []*vpav1.VerticalPodAutoscaler{existing("old", "web", time.Hour, vpav1.UpdateModeRecreate)},
			want: []string{"VPA new: VPA old also targets Deployment/web; the admission controller applies VPA old to its pods"},
		},
		"the older ones are Off": {
			vpas: []*vpav1.VerticalPodAutoscaler{existing("b", "web", time.Hour, vpav1.UpdateModeOff), existing("a", "web", time.Hour, vpav1.UpdateModeOff)},
			want: []string{"VPA new: VPAs a, b also target Deployment/web; the admission controller applies this VPA to its pods"},
		},
		"an HPA on cpu": {
			hpas: []*autoscalingv2.HorizontalPodAutoscaler{cpuHPA},
			want: []string{hpaWarning},
		},
		"updates are not warned about": {
			vpas:   []*vpav1.VerticalPodAutoscaler{existing("old", "web", time.Hour, vpav1.UpdateModeRecreate)},
			hpas:   []*autoscalingv2.HorizontalPodAutoscaler{cpuHPA},
			update: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			v := NewValidator(nil).WithConflicts(Conflicts{
				VPAs: func(string) []*vpav1.VerticalPodAutoscaler { return tc.vpas },
				HPAs: func(string) []*autoscalingv2.HorizontalPodAutoscaler { return tc.hpas },
				Now:  func() time.Time { return time.Unix(1e9, 0) },
			})
			vpa := valid()
			vpa.Name, vpa.Namespace = "new", "ns"
			var old *vpav1.VerticalPodAutoscaler
			if tc.update {
				old = vpa.DeepCopy()
			}
			res := v.Admit(vpa, old)
			if len(res.Errors) > 0 {
				t.Fatalf("errors: %v", res.Errors)
			}
			if !reflect.DeepEqual(res.Warnings, tc.want) {
				t.Errorf("warnings = %q, want %q", res.Warnings, tc.want)
			}
		})
	}
}
