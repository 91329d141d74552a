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
	"encoding/json"
	"fmt"
	"math"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
)

// The scale-point mode. A VPA annotated ModeAnnotation: ModeScalePoint
// keeps controlling a resource an HPA scales on by its utilization: the
// updater (--hpa-scale-point) records the HPA's target on the HPA
// (ScalePointAnnotation) and from then on scales that target with the
// requests, so the replicas the HPA computes stay the same. The other
// components stop yielding the resource only once the record exists.
const (
	// ModeAnnotation is the VPA annotation that selects how the VPA and an
	// HPA on the same resource share it.
	ModeAnnotation = "openvpa.io/hpa-mode"
	// ModeScalePoint keeps the HPA's scale point.
	ModeScalePoint = "scale-point"
	// ScalePointAnnotation is the HPA annotation that holds the Record.
	ScalePointAnnotation = "openvpa.io/scale-point"
)

// ScalePointMode reports whether the VPA asks to keep the scale point of
// the HPAs on its resources.
func ScalePointMode(vpa *vpav1.VerticalPodAutoscaler) bool {
	return vpa != nil && vpa.Annotations[ModeAnnotation] == ModeScalePoint
}

// Record is what the updater keeps on an HPA in scale-point mode: per
// metric, the target the HPA had and the request per pod it was set for.
type Record struct {
	// VPA is the name of the VPA whose requests the targets follow.
	VPA string `json:"vpa"`
	// Metrics are the HPA's utilization metrics on the VPA's resources.
	Metrics []RecordedMetric `json:"metrics"`
}

// RecordedMetric is one utilization metric of a Record.
type RecordedMetric struct {
	// Resource is cpu or memory.
	Resource corev1.ResourceName `json:"resource"`
	// Container is the container of a ContainerResource metric; empty for
	// a Resource metric.
	Container string `json:"container,omitempty"`
	// Original is the target averageUtilization the HPA had.
	Original int32 `json:"averageUtilization"`
	// Request is the request per pod (of the container, for a
	// ContainerResource metric) Original was set for.
	Request resource.Quantity `json:"request"`
	// Set is the target last written; a target that is neither Set nor
	// Original was changed by someone else and is recorded anew.
	Set int32 `json:"set"`
}

// Conflict is the metric as a Conflict of the HPA named hpa.
func (m RecordedMetric) Conflict(hpa string) Conflict {
	return Conflict{HPA: hpa, Resource: m.Resource, Container: m.Container}
}

// Target returns the target averageUtilization that keeps the scale point
// at a request per pod of current (in the units of Request): round(Original
// × Request / current), at least 1 (the API refuses less). There is no
// upper bound: a utilization above 100% is valid (usage above the request)
// and is what keeps the scale point when the requests shrink. ok is false
// when current is not positive.
func (m RecordedMetric) Target(current resource.Quantity) (int32, bool) {
	if current.Sign() <= 0 || m.Request.Sign() <= 0 {
		return 0, false
	}
	t := math.Round(float64(m.Original) * float64(m.Request.MilliValue()) / float64(current.MilliValue()))
	return int32(max(1, min(t, math.MaxInt32))), true
}

// Find returns the recorded metric for the resource (and container), or
// nil.
func (r *Record) Find(res corev1.ResourceName, container string) *RecordedMetric {
	if r == nil {
		return nil
	}
	for i := range r.Metrics {
		if r.Metrics[i].Resource == res && r.Metrics[i].Container == container {
			return &r.Metrics[i]
		}
	}
	return nil
}

// Encode returns the record as the annotation's value.
func (r *Record) Encode() string {
	b, _ := json.Marshal(r) // a struct of strings, numbers and quantities
	return string(b)
}

// RecordOf returns the HPA's record; nil without one. A record that does not
// decode is an error.
func RecordOf(h *autoscalingv2.HorizontalPodAutoscaler) (*Record, error) {
	if h == nil {
		return nil, nil
	}
	s, ok := h.Annotations[ScalePointAnnotation]
	if !ok {
		return nil, nil
	}
	var r Record
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return nil, fmt.Errorf("annotation %s of HorizontalPodAutoscaler %s/%s: %w", ScalePointAnnotation, h.Namespace, h.Name, err)
	}
	return &r, nil
}

// UtilizationTarget returns the target averageUtilization of the HPA's
// metric on the resource (and container); ok false when it has no such
// utilization metric.
func UtilizationTarget(h *autoscalingv2.HorizontalPodAutoscaler, res corev1.ResourceName, container string) (int32, bool) {
	if t := utilizationTarget(h, res, container); t != nil && t.AverageUtilization != nil {
		return *t.AverageUtilization, true
	}
	return 0, false
}

// SetUtilizationTarget sets the target averageUtilization of the HPA's
// metric on the resource (and container); false when it has no such
// utilization metric.
func SetUtilizationTarget(h *autoscalingv2.HorizontalPodAutoscaler, res corev1.ResourceName, container string, v int32) bool {
	t := utilizationTarget(h, res, container)
	if t == nil {
		return false
	}
	t.AverageUtilization = &v
	return true
}

func utilizationTarget(h *autoscalingv2.HorizontalPodAutoscaler, res corev1.ResourceName, container string) *autoscalingv2.MetricTarget {
	if h == nil {
		return nil
	}
	for i := range h.Spec.Metrics {
		m := &h.Spec.Metrics[i]
		var t *autoscalingv2.MetricTarget
		switch {
		case container == "" && m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == res:
			t = &m.Resource.Target
		case container != "" && m.Type == autoscalingv2.ContainerResourceMetricSourceType && m.ContainerResource != nil &&
			m.ContainerResource.Name == res && m.ContainerResource.Container == container:
			t = &m.ContainerResource.Target
		default:
			continue
		}
		if t.Type == autoscalingv2.UtilizationMetricType {
			return t
		}
	}
	return nil
}

// keptBy reports whether the HPA h keeps its scale point on the conflict
// for vpa: the VPA is in scale-point mode and h's record, written for that
// VPA, holds the metric.
func keptBy(vpa *vpav1.VerticalPodAutoscaler, h *autoscalingv2.HorizontalPodAutoscaler, c Conflict) bool {
	if !ScalePointMode(vpa) {
		return false
	}
	r, err := RecordOf(h)
	return err == nil && r != nil && r.VPA == vpa.Name && r.Find(c.Resource, c.Container) != nil
}

// Kept returns the utilization Conflicts whose HPA keeps its scale point
// for the VPA: those the VPA does not yield (Yields leaves them out).
func Kept(vpa *vpav1.VerticalPodAutoscaler, hpas []*autoscalingv2.HorizontalPodAutoscaler, containers []string) []Conflict {
	return conflicts(vpa, hpas, containers, onlyKept)
}

// OnUtilization returns the Conflicts whose metric targets the resource's
// utilization, kept at their scale point or not.
func OnUtilization(vpa *vpav1.VerticalPodAutoscaler, hpas []*autoscalingv2.HorizontalPodAutoscaler, containers []string) []Conflict {
	return conflicts(vpa, hpas, containers, utilization)
}

// KeptMessage describes kept scale points for the HPAConflict condition;
// "" when there are none.
func KeptMessage(vpa *vpav1.VerticalPodAutoscaler, kept []Conflict) string {
	if len(kept) == 0 {
		return ""
	}
	parts := make([]string, len(kept))
	for i, c := range kept {
		parts[i] = c.String()
	}
	return fmt.Sprintf("HorizontalPodAutoscaler %s keeps its scale point: this VPA sets the resource, and the updater scales the HPA's "+
		"target utilization with the requests of %s/%s (annotation %s on the HPA)", strings.Join(parts, ", "), vpa.Spec.TargetRef.Kind, vpa.Spec.TargetRef.Name, ScalePointAnnotation)
}
