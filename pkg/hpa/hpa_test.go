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

package hpa

import (
	"reflect"
	"strings"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
)

func newHPA(name, kind, target string, metrics ...autoscalingv2.MetricSpec) *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{"a": "b"}},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: kind, Name: target},
			Metrics:        metrics,
		},
	}
}

func resourceMetric(r corev1.ResourceName) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: r, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType},
	}}
}

func containerMetric(c string, r corev1.ResourceName) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ContainerResourceMetricSourceType, ContainerResource: &autoscalingv2.ContainerResourceMetricSource{Name: r, Container: c}}
}

func podsMetric() autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: "qps"}}}
}

func newVPA(policies ...vpav1.ContainerResourcePolicy) *vpav1.VerticalPodAutoscaler {
	v := &vpav1.VerticalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "v", Namespace: "ns"},
		Spec:       vpav1.VerticalPodAutoscalerSpec{TargetRef: &autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}},
	}
	if len(policies) > 0 {
		v.Spec.ResourcePolicy = &vpav1.PodResourcePolicy{ContainerPolicies: policies}
	}
	return v
}

func TestConflicts(t *testing.T) {
	off := vpav1.ContainerScalingModeOff
	memoryOnly := []corev1.ResourceName{corev1.ResourceMemory}
	tests := map[string]struct {
		vpa        *vpav1.VerticalPodAutoscaler
		hpas       []*autoscalingv2.HorizontalPodAutoscaler
		containers []string
		want       []Conflict
	}{
		"cpu utilization on the same Deployment": {
			vpa:  newVPA(),
			hpas: []*autoscalingv2.HorizontalPodAutoscaler{newHPA("h", "Deployment", "web", resourceMetric(corev1.ResourceCPU))},
			want: []Conflict{{HPA: "h", Resource: corev1.ResourceCPU}},
		},
		"another Deployment": {
			vpa:  newVPA(),
			hpas: []*autoscalingv2.HorizontalPodAutoscaler{newHPA("h", "Deployment", "api", resourceMetric(corev1.ResourceCPU))},
		},
		"another kind of the same name": {
			vpa:  newVPA(),
			hpas: []*autoscalingv2.HorizontalPodAutoscaler{newHPA("h", "StatefulSet", "web", resourceMetric(corev1.ResourceCPU))},
		},
		"custom metrics only": {
			vpa:  newVPA(),
			hpas: []*autoscalingv2.HorizontalPodAutoscaler{newHPA("h", "Deployment", "web", podsMetric())},
		},
		"cpu metric, VPA controls memory only": {
			vpa:  newVPA(vpav1.ContainerResourcePolicy{ContainerName: "*", ControlledResources: &memoryOnly}),
			hpas: []*autoscalingv2.HorizontalPodAutoscaler{newHPA("h", "Deployment", "web", resourceMetric(corev1.ResourceCPU), podsMetric())},
		},
		"cpu metric, the only container is Off": {
			vpa:        newVPA(vpav1.ContainerResourcePolicy{ContainerName: "app", Mode: &off}),
			hpas:       []*autoscalingv2.HorizontalPodAutoscaler{newHPA("h", "Deployment", "web", resourceMetric(corev1.ResourceCPU))},
			containers: []string{"app"},
		},
		"cpu metric, one of two containers Off": {
			vpa:        newVPA(vpav1.ContainerResourcePolicy{ContainerName: "app", Mode: &off}),
			hpas:       []*autoscalingv2.HorizontalPodAutoscaler{newHPA("h", "Deployment", "web", resourceMetric(corev1.ResourceCPU))},
			containers: []string{"app", "sidecar"},
			want:       []Conflict{{HPA: "h", Resource: corev1.ResourceCPU}},
		},
		"container metric on a controlled container, memory and cpu, two HPAs": {
			vpa: newVPA(vpav1.ContainerResourcePolicy{ContainerName: "sidecar", Mode: &off}),
			hpas: []*autoscalingv2.HorizontalPodAutoscaler{
				newHPA("z", "Deployment", "web", containerMetric("app", corev1.ResourceMemory), containerMetric("sidecar", corev1.ResourceCPU)),
				newHPA("a", "Deployment", "web", resourceMetric(corev1.ResourceMemory), resourceMetric(corev1.ResourceMemory)),
			},
			want: []Conflict{{HPA: "a", Resource: corev1.ResourceMemory}, {HPA: "z", Resource: corev1.ResourceMemory, Container: "app"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := Conflicts(tc.vpa, tc.hpas, tc.containers)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Conflicts = %v, want %v", got, tc.want)
			}
			// The trimmed HPAs give the same answer.
			var trimmed []*autoscalingv2.HorizontalPodAutoscaler
			for _, h := range tc.hpas {
				o, err := Trim(h)
				if err != nil {
					t.Fatal(err)
				}
				trimmed = append(trimmed, o.(*autoscalingv2.HorizontalPodAutoscaler))
			}
			if got := Conflicts(tc.vpa, trimmed, tc.containers); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Conflicts over trimmed HPAs = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestTrimKeepsOnlyWhatConflictsReads(t *testing.T) {
	h := newHPA("h", "Deployment", "web", resourceMetric(corev1.ResourceCPU), podsMetric(), containerMetric("app", corev1.ResourceMemory))
	h.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	h.Status.CurrentReplicas = 3
	h.Annotations = map[string]string{ScalePointAnnotation: "{}", "other": "x"}
	o, err := Trim(h)
	if err != nil {
		t.Fatal(err)
	}
	got := o.(*autoscalingv2.HorizontalPodAutoscaler)
	want := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "h", Namespace: "ns", Annotations: map[string]string{ScalePointAnnotation: "{}"}},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: h.Spec.ScaleTargetRef,
			Metrics: []autoscalingv2.MetricSpec{
				resourceMetric(corev1.ResourceCPU),
				containerMetric("app", corev1.ResourceMemory),
			},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Trim = %+v, want %+v", got, want)
	}
}

func TestMessage(t *testing.T) {
	v := newVPA()
	got := Message(v, []Conflict{{HPA: "h", Resource: corev1.ResourceCPU}})
	want := "HorizontalPodAutoscaler h on cpu scales Deployment/web on a resource this VPA also sets; the two fight over the same resource " +
		"(let the HPA scale on other metrics, or leave that resource out of the VPA's controlledResources)"
	if got != want {
		t.Errorf("Message = %q, want %q", got, want)
	}
	if Message(v, nil) != "" {
		t.Error("Message of no conflicts is not empty")
	}
}

func TestYields(t *testing.T) {
	value := func(r corev1.ResourceName) autoscalingv2.MetricSpec {
		m := resourceMetric(r)
		m.Resource.Target = autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType}
		return m
	}
	containerUtil := containerMetric("app", corev1.ResourceMemory)
	containerUtil.ContainerResource.Target.Type = autoscalingv2.UtilizationMetricType
	hpas := []*autoscalingv2.HorizontalPodAutoscaler{
		newHPA("cpu", "Deployment", "web", resourceMetric(corev1.ResourceCPU), value(corev1.ResourceMemory)),
		newHPA("app", "Deployment", "web", containerUtil, containerMetric("app", corev1.ResourceCPU)),
	}
	var trimmed []*autoscalingv2.HorizontalPodAutoscaler
	for _, h := range hpas {
		o, err := Trim(h)
		if err != nil {
			t.Fatal(err)
		}
		trimmed = append(trimmed, o.(*autoscalingv2.HorizontalPodAutoscaler))
	}
	want := []Conflict{{HPA: "app", Resource: corev1.ResourceMemory, Container: "app"}, {HPA: "cpu", Resource: corev1.ResourceCPU}}
	for name, in := range map[string][]*autoscalingv2.HorizontalPodAutoscaler{"objects": hpas, "trimmed": trimmed} {
		if got := Yields(newVPA(), in, []string{"app", "log"}); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: Yields = %v, want %v (utilization targets only)", name, got, want)
		}
	}
	for _, tc := range []struct {
		container string
		r         corev1.ResourceName
		want      bool
	}{
		{"app", corev1.ResourceCPU, true}, {"log", corev1.ResourceCPU, true},
		{"app", corev1.ResourceMemory, true}, {"log", corev1.ResourceMemory, false},
	} {
		if got := Yielded(want, tc.container, tc.r); got != tc.want {
			t.Errorf("Yielded(%s, %s) = %v, want %v", tc.container, tc.r, got, tc.want)
		}
	}
	if m := YieldMessage(newVPA(), want[1:]); m == "" || !strings.Contains(m, "cpu on cpu") || !strings.Contains(m, "Deployment/web") {
		t.Errorf("YieldMessage = %q", m)
	}
}
