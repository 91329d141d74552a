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
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/recommender/status"
)

func ownedBy(rs string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs, Controller: ptr.To(true)}}
	}
}

func withMode(m vpav1.UpdateMode) vpaOpt {
	return func(v *vpav1.VerticalPodAutoscaler) { v.Spec.UpdatePolicy = &vpav1.PodUpdatePolicy{UpdateMode: &m} }
}

// TestOverlappingVPACondition: two VPAs on one Deployment both say so, each
// naming the other and the VPA the admission controller applies (the older
// one not in mode Off); the condition goes when the other VPA does.
func TestOverlappingVPACondition(t *testing.T) {
	h := newHarness(t, nil)
	h.addVPA("ns", "first", "web")
	h.clk.Step(time.Second)
	h.addVPA("ns", "second", "web")
	h.addVPA("ns", "alone", "api")
	h.addPodWith("ns", "web-1", "web", 100, 100*mi, ownedBy("web-rs"), "app")
	h.addPodWith("ns", "api-1", "api", 100, 100*mi, ownedBy("api-rs"), "app")
	h.loop()
	want := map[string]string{
		"first":  "Pods of this VPA are also matched by VPA second; the admission controller applies this VPA (first) to them",
		"second": "Pods of this VPA are also matched by VPA first; the admission controller applies VPA first to them",
	}
	for name, msg := range want {
		c := h.condition(h.vpa("ns", name), vpav1.OverlappingVPA)
		if c == nil || c.Status != corev1.ConditionTrue || c.Reason != status.ReasonOverlappingVPAs || c.Message != msg {
			t.Errorf("%s: OverlappingVPA = %+v, want True/%s %q", name, c, status.ReasonOverlappingVPAs, msg)
		}
	}
	if c := h.condition(h.vpa("ns", "alone"), vpav1.OverlappingVPA); c != nil {
		t.Errorf("alone: OverlappingVPA = %+v, want none", c)
	}

	// The older VPA turned Off: the admission controller passes over it.
	v := h.vpa("ns", "first")
	withMode(vpav1.UpdateModeOff)(v)
	if _, err := h.client.AutoscalingV1().VerticalPodAutoscalers("ns").Update(t.Context(), v, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.sync()
	h.loops(2) // the fake API keeps resourceVersions: the first loop still uses the object it wrote
	if c := h.condition(h.vpa("ns", "first"), vpav1.OverlappingVPA); c == nil ||
		c.Message != "Pods of this VPA are also matched by VPA second; the admission controller applies VPA second to them" {
		t.Errorf("first, Off: OverlappingVPA = %+v", c)
	}

	h.deleteVPA("ns", "second")
	h.loop()
	if c := h.condition(h.vpa("ns", "first"), vpav1.OverlappingVPA); c != nil {
		t.Errorf("OverlappingVPA = %+v after the other VPA went, want none", c)
	}
}

// TestHPAConflictCondition: an HPA on cpu of the VPA's Deployment sets
// HPAConflict; once the HPA scales on a resource the VPA leaves alone, it
// goes.
func TestHPAConflictCondition(t *testing.T) {
	h := newHarness(t, nil)
	h.addVPA("ns", "web", "web")
	h.addPod("ns", "web-1", "web", 100, 100*mi, "app")
	cpuHPA := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-hpa"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType,
				Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU}}},
		},
	}
	h.hpas = map[string][]*autoscalingv2.HorizontalPodAutoscaler{"ns": {cpuHPA}}
	h.loop()
	c := h.condition(h.vpa("ns", "web"), vpav1.HPAConflict)
	if c == nil || c.Status != corev1.ConditionTrue || c.Reason != status.ReasonHPAOnSameResource ||
		c.Message != "HorizontalPodAutoscaler web-hpa on cpu scales Deployment/web on a resource this VPA also sets; the two fight over the same resource "+
			"(let the HPA scale on other metrics, or leave that resource out of the VPA's controlledResources)" {
		t.Fatalf("HPAConflict = %+v", c)
	}
	// While the HPAs are not known (a restarted recommender whose HPA
	// cache has not synced), the condition stays as it was.
	h.hpasUnknown, h.hpas = true, nil
	h.loop()
	if c := h.condition(h.vpa("ns", "web"), vpav1.HPAConflict); c == nil || c.Status != corev1.ConditionTrue {
		t.Fatalf("HPAConflict = %+v while the HPAs are unknown, want it kept", c)
	}
	h.hpasUnknown, h.hpas = false, map[string][]*autoscalingv2.HorizontalPodAutoscaler{"ns": {cpuHPA}}
	memoryOnly := []corev1.ResourceName{corev1.ResourceMemory}
	v := h.vpa("ns", "web")
	v.Spec.ResourcePolicy = &vpav1.PodResourcePolicy{ContainerPolicies: []vpav1.ContainerResourcePolicy{{ContainerName: "*", ControlledResources: &memoryOnly}}}
	if _, err := h.client.AutoscalingV1().VerticalPodAutoscalers("ns").Update(t.Context(), v, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.sync()
	h.loops(2) // the fake API keeps resourceVersions: the first loop still uses the object it wrote
	if c := h.condition(h.vpa("ns", "web"), vpav1.HPAConflict); c != nil {
		t.Errorf("HPAConflict = %+v once the VPA controls memory only, want none", c)
	}
}
