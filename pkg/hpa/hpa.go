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

// Package hpa finds the HorizontalPodAutoscalers (autoscaling/v2) that scale
// a VPA's target on a resource the VPA controls: the recommender's
// HPAConflict condition and the admission controller's warning on a new VPA
// both come from Conflicts. Trim is the transform of the HPA informer: it
// keeps only what Conflicts reads.
package hpa

import (
	"fmt"
	"sort"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/target"
)

// Trim is the HPA informer's transform: it keeps the identity, the
// scale-point record (ScalePointAnnotation), the scaleTargetRef and the cpu
// and memory Resource and ContainerResource metrics (names, containers,
// target types and utilizations only) of an HPA, about a tenth of the
// object. Anything else passes through with its managed fields dropped.
func Trim(obj any) (any, error) {
	h, ok := obj.(*autoscalingv2.HorizontalPodAutoscaler)
	if !ok {
		return target.StripManagedFields(obj)
	}
	out := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: h.Name, Namespace: h.Namespace, UID: h.UID, ResourceVersion: h.ResourceVersion},
		Spec:       autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: h.Spec.ScaleTargetRef},
	}
	if r, ok := h.Annotations[ScalePointAnnotation]; ok {
		out.Annotations = map[string]string{ScalePointAnnotation: r}
	}
	for _, m := range h.Spec.Metrics {
		switch {
		case m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && relevant(m.Resource.Name):
			out.Spec.Metrics = append(out.Spec.Metrics, autoscalingv2.MetricSpec{
				Type: m.Type, Resource: &autoscalingv2.ResourceMetricSource{Name: m.Resource.Name,
					Target: autoscalingv2.MetricTarget{Type: m.Resource.Target.Type, AverageUtilization: m.Resource.Target.AverageUtilization}},
			})
		case m.Type == autoscalingv2.ContainerResourceMetricSourceType && m.ContainerResource != nil && relevant(m.ContainerResource.Name):
			out.Spec.Metrics = append(out.Spec.Metrics, autoscalingv2.MetricSpec{
				Type: m.Type, ContainerResource: &autoscalingv2.ContainerResourceMetricSource{Name: m.ContainerResource.Name, Container: m.ContainerResource.Container,
					Target: autoscalingv2.MetricTarget{Type: m.ContainerResource.Target.Type, AverageUtilization: m.ContainerResource.Target.AverageUtilization}},
			})
		}
	}
	return out, nil
}

func relevant(name corev1.ResourceName) bool {
	return name == corev1.ResourceCPU || name == corev1.ResourceMemory
}

// Conflict is one HPA metric on a resource the VPA controls.
type Conflict struct {
	// HPA is the HorizontalPodAutoscaler's name (in the VPA's namespace).
	HPA string
	// Resource is cpu or memory.
	Resource corev1.ResourceName
	// Container is the container of a ContainerResource metric; empty for a
	// Resource metric (the pod's total).
	Container string
}

func (c Conflict) String() string {
	if c.Container != "" {
		return fmt.Sprintf("%s on %s of container %s", c.HPA, c.Resource, c.Container)
	}
	return fmt.Sprintf("%s on %s", c.HPA, c.Resource)
}

// Conflicts returns the metrics of hpas (any objects of the VPA's namespace)
// that scale the VPA's target on a resource the VPA controls, sorted by HPA,
// container and resource. The HPA's scaleTargetRef must name the VPA's
// targetRef (kind and name; the API version is ignored, as for targetRefs).
// containers are the names of the containers of the VPA's pods, nil when
// unknown: a Resource metric conflicts when the VPA controls that resource
// for one of them (when unknown, for a container no policy names), a
// ContainerResource metric when it controls it for that container. A
// container whose scaling mode is Off is not controlled.
func Conflicts(vpa *vpav1.VerticalPodAutoscaler, hpas []*autoscalingv2.HorizontalPodAutoscaler, containers []string) []Conflict {
	return conflicts(vpa, hpas, containers, all)
}

// Yields returns the Conflicts whose metric targets the resource's
// utilization (a percentage of the requests): those the VPA yields to the
// HPA. Changing the requests moves the utilization the HPA scales on, so
// the two would feed each other; a target of an average value does not
// depend on the requests and is only reported. A metric whose HPA keeps its
// scale point for the VPA (Kept) is not yielded.
func Yields(vpa *vpav1.VerticalPodAutoscaler, hpas []*autoscalingv2.HorizontalPodAutoscaler, containers []string) []Conflict {
	return conflicts(vpa, hpas, containers, yields)
}

// Yielded reports whether the yields cover the resource of the container:
// a Resource metric yields it for every container, a ContainerResource
// metric for its own.
func Yielded(yields []Conflict, container string, r corev1.ResourceName) bool {
	for _, y := range yields {
		if y.Resource == r && (y.Container == "" || y.Container == container) {
			return true
		}
	}
	return false
}

// YieldMessage describes yields for the HPAConflict condition; "" when
// there are none.
func YieldMessage(vpa *vpav1.VerticalPodAutoscaler, yields []Conflict) string {
	if len(yields) == 0 {
		return ""
	}
	parts := make([]string, len(yields))
	for i, c := range yields {
		parts[i] = c.String()
	}
	return fmt.Sprintf("Left to HorizontalPodAutoscaler %s, which scales %s/%s on its utilization: this VPA does not set it "+
		"(its recommendation is still computed) and keeps setting the other resources", strings.Join(parts, ", "), vpa.Spec.TargetRef.Kind, vpa.Spec.TargetRef.Name)
}

// selection is which conflicts conflicts returns.
type selection int

const (
	all         selection = iota // every metric on a controlled resource
	utilization                  // those on its utilization
	yields                       // those on its utilization not kept at their scale point
	onlyKept                     // those on its utilization kept at their scale point
)

func conflicts(vpa *vpav1.VerticalPodAutoscaler, hpas []*autoscalingv2.HorizontalPodAutoscaler, containers []string, sel selection) []Conflict {
	if vpa == nil || vpa.Spec.TargetRef == nil {
		return nil
	}
	ref := vpa.Spec.TargetRef
	controls := func(container string, r corev1.ResourceName) bool {
		p := vpav1.GetContainerResourcePolicy(container, vpa.Spec.ResourcePolicy)
		return p.ScalingMode() != vpav1.ContainerScalingModeOff && p.Controls(r)
	}
	podControls := func(r corev1.ResourceName) bool {
		if containers == nil {
			// A container no policy names gets the "*" policy, or none.
			return controls("", r)
		}
		for _, c := range containers {
			if controls(c, r) {
				return true
			}
		}
		return false
	}
	var out []Conflict
	for _, h := range hpas {
		if h == nil || h.Namespace != vpa.Namespace || h.Spec.ScaleTargetRef.Kind != ref.Kind || h.Spec.ScaleTargetRef.Name != ref.Name {
			continue
		}
		seen := map[Conflict]bool{}
		for _, m := range h.Spec.Metrics {
			var c Conflict
			var onUtilization bool
			switch {
			case m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil:
				c = Conflict{HPA: h.Name, Resource: m.Resource.Name}
				if !relevant(c.Resource) || !podControls(c.Resource) {
					continue
				}
				onUtilization = m.Resource.Target.Type == autoscalingv2.UtilizationMetricType
			case m.Type == autoscalingv2.ContainerResourceMetricSourceType && m.ContainerResource != nil:
				c = Conflict{HPA: h.Name, Resource: m.ContainerResource.Name, Container: m.ContainerResource.Container}
				if !relevant(c.Resource) || !controls(c.Container, c.Resource) {
					continue
				}
				onUtilization = m.ContainerResource.Target.Type == autoscalingv2.UtilizationMetricType
			default:
				continue
			}
			if sel != all && !onUtilization ||
				sel == yields && keptBy(vpa, h, c) ||
				sel == onlyKept && !keptBy(vpa, h, c) {
				continue
			}
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.HPA != b.HPA {
			return a.HPA < b.HPA
		}
		if a.Container != b.Container {
			return a.Container < b.Container
		}
		return a.Resource < b.Resource
	})
	return out
}

// Message describes conflicts for a condition or a warning; "" when there
// are none.
func Message(vpa *vpav1.VerticalPodAutoscaler, conflicts []Conflict) string {
	if len(conflicts) == 0 {
		return ""
	}
	parts := make([]string, len(conflicts))
	for i, c := range conflicts {
		parts[i] = c.String()
	}
	noun := "HorizontalPodAutoscaler"
	if len(conflicts) > 1 {
		noun = "HorizontalPodAutoscaler metrics"
	}
	return fmt.Sprintf("%s %s scales %s/%s on a resource this VPA also sets; the two fight over the same resource "+
		"(let the HPA scale on other metrics, or leave that resource out of the VPA's controlledResources)",
		noun, strings.Join(parts, ", "), vpa.Spec.TargetRef.Kind, vpa.Spec.TargetRef.Name)
}
