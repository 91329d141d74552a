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
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
)

func utilizationMetric(r corev1.ResourceName, v int32) autoscalingv2.MetricSpec {
	m := resourceMetric(r)
	m.Resource.Target.AverageUtilization = ptr.To(v)
	return m
}

func TestKeptAndYields(t *testing.T) {
	cpuRecord := (&Record{VPA: "v", Metrics: []RecordedMetric{{Resource: corev1.ResourceCPU, Original: 50, Set: 50, Request: resource.MustParse("200m")}}}).Encode()
	recorded := func(record string) *autoscalingv2.HorizontalPodAutoscaler {
		h := newHPA("h", "Deployment", "web", utilizationMetric(corev1.ResourceCPU, 50), utilizationMetric(corev1.ResourceMemory, 80))
		if record != "" {
			h.Annotations = map[string]string{ScalePointAnnotation: record}
		}
		return h
	}
	scalePoint := newVPA()
	scalePoint.Annotations = map[string]string{ModeAnnotation: ModeScalePoint}
	cpu := Conflict{HPA: "h", Resource: corev1.ResourceCPU}
	memory := Conflict{HPA: "h", Resource: corev1.ResourceMemory}
	for name, tc := range map[string]struct {
		vpa       *vpaT
		hpa       *autoscalingv2.HorizontalPodAutoscaler
		kept, yld []Conflict
	}{
		"no mode, no record":          {vpa: newVPA(), hpa: recorded(""), yld: []Conflict{cpu, memory}},
		"no mode, a record":           {vpa: newVPA(), hpa: recorded(cpuRecord), yld: []Conflict{cpu, memory}},
		"mode, not yet recorded":      {vpa: scalePoint, hpa: recorded(""), yld: []Conflict{cpu, memory}},
		"mode, cpu recorded":          {vpa: scalePoint, hpa: recorded(cpuRecord), kept: []Conflict{cpu}, yld: []Conflict{memory}},
		"mode, record of another VPA": {vpa: scalePoint, hpa: recorded(`{"vpa":"other","metrics":[{"resource":"cpu","averageUtilization":50,"request":"200m","set":50}]}`), yld: []Conflict{cpu, memory}},
		"mode, record unreadable":     {vpa: scalePoint, hpa: recorded(`{`), yld: []Conflict{cpu, memory}},
	} {
		t.Run(name, func(t *testing.T) {
			for _, in := range []*autoscalingv2.HorizontalPodAutoscaler{tc.hpa, trim(t, tc.hpa)} {
				hpas := []*autoscalingv2.HorizontalPodAutoscaler{in}
				if got := Kept(tc.vpa, hpas, nil); !reflect.DeepEqual(got, tc.kept) {
					t.Errorf("Kept = %v, want %v", got, tc.kept)
				}
				if got := Yields(tc.vpa, hpas, nil); !reflect.DeepEqual(got, tc.yld) {
					t.Errorf("Yields = %v, want %v", got, tc.yld)
				}
				if got := OnUtilization(tc.vpa, hpas, nil); !reflect.DeepEqual(got, []Conflict{cpu, memory}) {
					t.Errorf("OnUtilization = %v", got)
				}
			}
		})
	}
}

type vpaT = vpav1.VerticalPodAutoscaler

func trim(t *testing.T, h *autoscalingv2.HorizontalPodAutoscaler) *autoscalingv2.HorizontalPodAutoscaler {
	t.Helper()
	o, err := Trim(h)
	if err != nil {
		t.Fatal(err)
	}
	return o.(*autoscalingv2.HorizontalPodAutoscaler)
}

func TestRecordedMetricTarget(t *testing.T) {
	for name, tc := range map[string]struct {
		original      int32
		base, current string
		want          int32
		ok            bool
	}{
		"unchanged request":          {50, "200m", "200m", 50, true},
		"request doubled":            {50, "200m", "400m", 25, true},
		"request halved":             {80, "200m", "100m", 160, true},
		"rounded to nearest":         {50, "300m", "400m", 38, true}, // 37.5
		"never below one":            {1, "100m", "1", 1, true},
		"memory in bytes":            {70, "256Mi", "512Mi", 35, true},
		"no request":                 {50, "200m", "0", 0, false},
		"recorded without request":   {50, "0", "200m", 0, false},
		"one third, rounded down":    {10, "100m", "300m", 3, true},
		"large ratio stays in int32": {100, "64Gi", "1", 2147483647, true},
	} {
		t.Run(name, func(t *testing.T) {
			m := RecordedMetric{Resource: corev1.ResourceCPU, Original: tc.original, Request: resource.MustParse(tc.base)}
			got, ok := m.Target(resource.MustParse(tc.current))
			if got != tc.want || ok != tc.ok {
				t.Errorf("Target = %d, %v; want %d, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestRecordRoundTripAndTargets(t *testing.T) {
	h := newHPA("h", "Deployment", "web", utilizationMetric(corev1.ResourceCPU, 50), containerMetric("app", corev1.ResourceMemory))
	h.Spec.Metrics[1].ContainerResource.Target = autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(int32(70))}
	r := &Record{VPA: "v", Metrics: []RecordedMetric{
		{Resource: corev1.ResourceCPU, Original: 50, Set: 25, Request: resource.MustParse("200m")},
		{Resource: corev1.ResourceMemory, Container: "app", Original: 70, Set: 70, Request: resource.MustParse("1Gi")},
	}}
	h.Annotations = map[string]string{ScalePointAnnotation: r.Encode()}
	got, err := RecordOf(h)
	if err != nil {
		t.Fatal(err)
	}
	if got.Find(corev1.ResourceMemory, "app") == nil || got.Find(corev1.ResourceMemory, "") != nil || got.Find(corev1.ResourceCPU, "").Set != 25 {
		t.Errorf("RecordOf = %+v", got)
	}
	if v, ok := UtilizationTarget(h, corev1.ResourceMemory, "app"); !ok || v != 70 {
		t.Errorf("UtilizationTarget(memory of app) = %d, %v", v, ok)
	}
	if _, ok := UtilizationTarget(h, corev1.ResourceMemory, ""); ok {
		t.Error("UtilizationTarget found a Resource metric on memory the HPA does not have")
	}
	if !SetUtilizationTarget(h, corev1.ResourceCPU, "", 25) || *h.Spec.Metrics[0].Resource.Target.AverageUtilization != 25 {
		t.Error("SetUtilizationTarget did not set the cpu target")
	}
	if SetUtilizationTarget(h, corev1.ResourceCPU, "app", 25) {
		t.Error("SetUtilizationTarget set a ContainerResource metric the HPA does not have")
	}
}
