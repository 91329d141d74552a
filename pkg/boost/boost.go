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

// Package boost is the CPU startup boost (spec.startupBoost, feature gate
// CPUStartupBoost) shared by the admission controller, which raises the CPU
// of new pods, and the updater, which sets it back in place once the pod is
// Ready and the boost's duration has passed.
//
// A boosted container is marked with the pod annotation
// vpaCpuStartupBoost/<container>, whose value is the container's CPU and
// memory requests and limits before the boost, as upstream writes it:
//
//	{"requests":{"cpu":"100m","memory":"100Mi"},"limits":{"cpu":"200m"}}
package boost

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/recommendation"
)

// AnnotationPrefix starts the annotation that marks a boosted container; the
// container's name follows it.
const AnnotationPrefix = "vpaCpuStartupBoost/"

// Annotation returns the annotation key for a boosted container.
func Annotation(container string) string { return AnnotationPrefix + container }

// Configured reports whether the VPA asks for a startup boost, for the pod
// or for any container.
func Configured(vpa *vpav1.VerticalPodAutoscaler) bool {
	if vpa == nil {
		return false
	}
	if vpa.Spec.StartupBoost != nil {
		return true
	}
	if vpa.Spec.ResourcePolicy != nil {
		for i := range vpa.Spec.ResourcePolicy.ContainerPolicies {
			if vpa.Spec.ResourcePolicy.ContainerPolicies[i].StartupBoost != nil {
				return true
			}
		}
	}
	return false
}

// PolicyFor returns the CPU boost of a container: its container policy's, else
// the VPA's, nil when neither has one or the container's mode is Off.
func PolicyFor(vpa *vpav1.VerticalPodAutoscaler, container string) *vpav1.GenericStartupBoost {
	cp := vpav1.GetContainerResourcePolicy(container, vpa.Spec.ResourcePolicy)
	if cp.ScalingMode() == vpav1.ContainerScalingModeOff {
		return nil
	}
	b := vpa.Spec.StartupBoost
	if cp != nil && cp.StartupBoost != nil {
		b = cp.StartupBoost
	}
	if b == nil {
		return nil
	}
	return b.CPU
}

// Duration is how long a container's boost lasts once the pod is Ready: the
// container policy's durationSeconds, else the VPA's, else zero.
func Duration(vpa *vpav1.VerticalPodAutoscaler, container string) time.Duration {
	var secs int32
	if b := vpa.Spec.StartupBoost; b != nil && b.CPU != nil && b.CPU.DurationSeconds != nil {
		secs = *b.CPU.DurationSeconds
	}
	if cp := vpav1.GetContainerResourcePolicy(container, vpa.Spec.ResourcePolicy); cp != nil && cp.StartupBoost != nil &&
		cp.StartupBoost.CPU != nil && cp.StartupBoost.CPU.DurationSeconds != nil {
		secs = *cp.StartupBoost.CPU.DurationSeconds
	}
	return time.Duration(secs) * time.Second
}

// Boosted returns base raised by b: multiplied by the factor, or with the
// quantity added, in millicores and truncated as upstream computes it, then
// capped to maxBoost when that is not zero.
func Boosted(base resource.Quantity, b *vpav1.GenericStartupBoost, maxBoost resource.Quantity) (resource.Quantity, error) {
	milli := base.MilliValue()
	switch b.Type {
	case vpav1.FactorStartupBoostType, "":
		if b.Factor == nil {
			return resource.Quantity{}, fmt.Errorf("startupBoost.cpu.factor is required for type Factor")
		}
		if *b.Factor < 1 {
			return resource.Quantity{}, fmt.Errorf("startupBoost.cpu.factor must be at least 1, got %d", *b.Factor)
		}
		milli = int64(float64(milli) * float64(*b.Factor))
	case vpav1.QuantityStartupBoostType:
		if b.Quantity == nil {
			return resource.Quantity{}, fmt.Errorf("startupBoost.cpu.quantity is required for type Quantity")
		}
		milli += b.Quantity.MilliValue()
	default:
		return resource.Quantity{}, fmt.Errorf("unsupported startupBoost.cpu.type %q", b.Type)
	}
	out := *resource.NewMilliQuantity(milli, resource.DecimalSI)
	if !maxBoost.IsZero() && out.Cmp(maxBoost) > 0 {
		return maxBoost.DeepCopy(), nil
	}
	return out, nil
}

// Original is the value of a container's boost annotation: its CPU and
// memory requests and limits before the boost.
type Original struct {
	Requests corev1.ResourceList `json:"requests"`
	Limits   corev1.ResourceList `json:"limits"`
}

// Encode returns the annotation value for a container's resources.
func Encode(r corev1.ResourceRequirements) string {
	o := Original{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := r.Requests[name]; ok {
			o.Requests[name] = q
		}
		if q, ok := r.Limits[name]; ok {
			o.Limits[name] = q
		}
	}
	b, err := json.Marshal(o)
	if err != nil {
		// Resource lists of quantities always marshal.
		panic(err)
	}
	return string(b)
}

// Decode parses an annotation value.
func Decode(value string) (Original, error) {
	var o Original
	if err := json.Unmarshal([]byte(value), &o); err != nil {
		return Original{}, fmt.Errorf("decoding a startup boost annotation: %w", err)
	}
	return o, nil
}

// Containers returns the containers the pod's annotations mark as boosted,
// mapped to their annotation values.
func Containers(pod *corev1.Pod) map[string]string {
	var out map[string]string
	for k, v := range pod.Annotations {
		if name, ok := strings.CutPrefix(k, AnnotationPrefix); ok && name != "" {
			if out == nil {
				out = map[string]string{}
			}
			out[name] = v
		}
	}
	return out
}

// readySince returns when the pod became Ready; ok is false while it is not.
func readySince(pod *corev1.Pod) (time.Time, bool) {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.LastTransitionTime.Time, c.Status == corev1.ConditionTrue
		}
	}
	return time.Time{}, false
}

// Expired returns the boosted containers of the pod whose boost is over at
// now: the pod is Ready and, unless the duration is zero, has been Ready for
// longer than the container's duration. remaining is the shortest time until
// another boosted container's boost ends, zero when none is pending on
// time (the pod is not Ready, or no boost is left).
func Expired(pod *corev1.Pod, vpa *vpav1.VerticalPodAutoscaler, now time.Time) (expired []string, remaining time.Duration) {
	boosted := Containers(pod)
	if len(boosted) == 0 {
		return nil, 0
	}
	since, ready := readySince(pod)
	if !ready {
		return nil, 0
	}
	for name := range boosted {
		d := Duration(vpa, name)
		if d == 0 || now.Sub(since) > d {
			expired = append(expired, name)
			continue
		}
		if left := d - now.Sub(since); remaining == 0 || left < remaining {
			remaining = left
		}
	}
	return expired, remaining
}

// Apply raises the CPU of each container of pod that the VPA boosts, in
// resources (same index as pod.Spec.Containers, as recommendation.Plan gives
// them; their maps are replaced, never modified). The base is the planned CPU
// request, else the container's own; for RequestsOnly the boosted request
// stays 1m under the container's CPU limit, for RequestsAndLimits the CPU
// limit keeps its ratio to the request. It returns the annotations to set,
// keyed by annotation name.
func Apply(pod *corev1.Pod, vpa *vpav1.VerticalPodAutoscaler, resources []recommendation.ContainerResources, maxBoost resource.Quantity) (map[string]string, error) {
	var marks map[string]string
	for i := range pod.Spec.Containers {
		if i >= len(resources) {
			break
		}
		c := &pod.Spec.Containers[i]
		b := PolicyFor(vpa, c.Name)
		if b == nil {
			continue
		}
		r := &resources[i]
		base, ok := r.Requests[corev1.ResourceCPU]
		if !ok || base.IsZero() {
			base = c.Resources.Requests[corev1.ResourceCPU]
		}
		boosted, err := Boosted(base, b, maxBoost)
		if err != nil {
			return nil, fmt.Errorf("container %s: %w", c.Name, err)
		}
		if boosted.IsZero() {
			// Nothing to raise (no request and a factor): a zero request
			// would only be a new request the container never asked for.
			continue
		}
		requests := copyList(r.Requests)
		requests[corev1.ResourceCPU] = boosted
		cp := vpav1.GetContainerResourcePolicy(c.Name, vpa.Spec.ResourcePolicy)
		switch cp.ControlledValuesOrDefault() {
		case vpav1.ContainerControlledValuesRequestsOnly:
			if limit, ok := c.Resources.Limits[corev1.ResourceCPU]; ok && boosted.Cmp(limit) > 0 {
				capped := limit.DeepCopy()
				if limit.MilliValue() > 1 {
					capped = *resource.NewMilliQuantity(limit.MilliValue()-1, resource.DecimalSI)
				}
				requests[corev1.ResourceCPU] = capped
			}
		default:
			limits, _ := recommendation.ProportionalLimits(c.Resources.Limits, c.Resources.Requests,
				corev1.ResourceList{corev1.ResourceCPU: boosted}, nil)
			if l, ok := limits[corev1.ResourceCPU]; ok {
				r.Limits = copyList(r.Limits)
				r.Limits[corev1.ResourceCPU] = l
			}
		}
		r.Requests = requests
		if marks == nil {
			marks = map[string]string{}
		}
		marks[Annotation(c.Name)] = Encode(c.Resources)
	}
	return marks, nil
}

func copyList(l corev1.ResourceList) corev1.ResourceList {
	out := make(corev1.ResourceList, len(l)+1)
	for k, v := range l {
		out[k] = v
	}
	return out
}
