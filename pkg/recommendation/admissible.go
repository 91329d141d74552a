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
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/openvpa/openvpa/pkg/limitrange"
)

// Admissible returns why the API server would refuse pod with resources
// applied (as the admission controller's patch or the updater's resize sets
// them), or nil when it would take it: the LimitRanges' rules as
// limitrange.Validate restates them, a request above its limit, and
// container totals above the pod-level resources. Problems the pod already
// has without resources applied are reported too: the caller cannot tell the
// API server's answer apart.
func Admissible(pod *corev1.Pod, resources []ContainerResources, ranges []*corev1.LimitRange) error {
	p := Applied(pod, resources)
	// The API server validates the pod before its validating admission
	// (LimitRanger's checks) runs, so a pod with invalid resources gets
	// only those errors.
	if err := validateResources(p); err != nil {
		return err
	}
	return limitrange.Validate(p, ranges)
}

// validateResources restates the API server's pod validation of what a plan
// changes: requests within limits, container totals within the pod-level
// resources. The messages are the API server's.
func validateResources(p *corev1.Pod) error {
	var errs []error
	for _, cs := range []struct {
		field      string
		containers []corev1.Container
	}{{"initContainers", p.Spec.InitContainers}, {"containers", p.Spec.Containers}} {
		for i := range cs.containers {
			c := &cs.containers[i]
			for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				req, hasReq := c.Resources.Requests[name]
				lim, hasLim := c.Resources.Limits[name]
				if hasReq && hasLim && req.Cmp(lim) > 0 {
					errs = append(errs, fmt.Errorf("spec.%s[%d].resources.requests: Invalid value: %q: must be less than or equal to %s limit of %s", cs.field, i, req.String(), name, lim.String()))
				}
			}
		}
	}
	if r := p.Spec.Resources; r != nil {
		containersOnly := *p
		containersOnly.Spec.Resources = nil
		sum := limitrange.PodRequests(&containersOnly)
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			podReq, ok := r.Requests[name]
			if have, sumOK := sum[name]; ok && sumOK && have.Cmp(podReq) > 0 {
				errs = append(errs, fmt.Errorf("spec.resources.requests[%s]: Invalid value: %q: must be greater than or equal to aggregate container requests of %s", name, podReq.String(), have.String()))
			}
			podLim, ok := r.Limits[name]
			if !ok {
				continue
			}
			for i := range p.Spec.Containers {
				if lim, has := p.Spec.Containers[i].Resources.Limits[name]; has && lim.Cmp(podLim) > 0 {
					errs = append(errs, fmt.Errorf("spec.resources.containers[%d][%s].limits: Invalid value: %q: must be less than or equal to pod limits of %s", i, name, lim.String(), podLim.String()))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// Applied returns a copy of pod whose containers have resources applied:
// each request and limit given replaces the container's own, the others stay.
// The pod itself is not modified; what is not changed is shared with it.
func Applied(pod *corev1.Pod, resources []ContainerResources) *corev1.Pod {
	p := *pod
	p.Spec.Containers = make([]corev1.Container, len(pod.Spec.Containers))
	copy(p.Spec.Containers, pod.Spec.Containers)
	for i := range p.Spec.Containers {
		if i >= len(resources) {
			break
		}
		r := &resources[i]
		c := &p.Spec.Containers[i]
		c.Resources.Requests = overlay(c.Resources.Requests, r.Requests)
		c.Resources.Limits = overlay(c.Resources.Limits, r.Limits)
	}
	return &p
}

func overlay(base, top corev1.ResourceList) corev1.ResourceList {
	if len(top) == 0 {
		return base
	}
	out := make(corev1.ResourceList, len(base)+len(top))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range top {
		out[k] = v
	}
	return out
}
