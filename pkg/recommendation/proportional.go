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

package recommendation

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/limitrange"
)

// proportionalLimits is the last stage: for controlledValues
// RequestsAndLimits, each container given requests gets limits that keep
// its original limit:request ratio (the container LimitRange's default limit
// standing in for a missing limit). RequestsOnly never sets limits.
func proportionalLimits(pod *corev1.Pod, policy *vpav1.PodResourcePolicy, lr limitrange.Merged, out []ContainerResources) {
	var defaults corev1.ResourceList
	if lr.Container != nil {
		defaults = lr.Container.Default
	}
	for i := range pod.Spec.Containers {
		if len(out[i].Requests) == 0 {
			continue
		}
		c := &pod.Spec.Containers[i]
		cp := vpav1.GetContainerResourcePolicy(c.Name, policy)
		if cp.ControlledValuesOrDefault() == vpav1.ContainerControlledValuesRequestsAndLimits {
			limits, notes := ProportionalLimits(c.Resources.Limits, c.Resources.Requests, out[i].Requests, defaults)
			out[i].Limits = limits
			out[i].Notes = append(out[i].Notes, notes...)
		}
	}
}

// ProportionalLimit returns the limit that keeps the original limit:request
// ratio for a new request, and a note when the ratio could not be kept. A
// missing or zero original limit is replaced by defaultLimit (the LimitRange
// default); with neither, ok is false and no limit should be set. A missing
// request, or a request equal to the limit, gives limit = newRequest.
func ProportionalLimit(name corev1.ResourceName, originalLimit, originalRequest, newRequest, defaultLimit *resource.Quantity) (limit resource.Quantity, ok bool, note string) {
	if originalLimit == nil || originalLimit.IsZero() {
		originalLimit = defaultLimit
	}
	if originalLimit == nil || originalLimit.IsZero() || newRequest == nil || newRequest.IsZero() {
		return resource.Quantity{}, false, ""
	}
	if originalRequest == nil || originalRequest.IsZero() || sameUnits(name, *originalRequest, *originalLimit) {
		return newRequest.DeepCopy(), true, ""
	}
	l, fits := scale(name, *originalLimit, *originalRequest, *newRequest, roundDown)
	if !fits {
		return l, true, fmt.Sprintf("%s: failed to keep limit to request ratio; capping limit to int64", name)
	}
	return l, true, ""
}

// ProportionalLimits applies ProportionalLimit to every resource of newRequests
// and returns the limits to set (nil when none) and the notes.
func ProportionalLimits(originalLimits, originalRequests, newRequests, defaultLimits corev1.ResourceList) (corev1.ResourceList, []string) {
	var out corev1.ResourceList
	var notes []string
	var buf [4]corev1.ResourceName
	for _, name := range sortedNames(newRequests, buf[:0]) {
		req := newRequests[name]
		l, ok, note := ProportionalLimit(name, get(originalLimits, name), get(originalRequests, name), &req, get(defaultLimits, name))
		if note != "" {
			notes = append(notes, note)
		}
		if !ok {
			continue
		}
		if out == nil {
			out = corev1.ResourceList{}
		}
		out[name] = l
	}
	return out, notes
}
