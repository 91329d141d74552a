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
	corev1 "k8s.io/api/core/v1"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
)

// MeetsEvictionRequirements reports whether a pod with these containers may
// be disrupted under a VPA's evictionRequirements. With no requirements it is
// true. Otherwise some container with a recommendation must meet every
// requirement, a requirement being met when any of its resources changes in
// the required direction (target vs request, in milli-units). A container
// that lacks a cpu or a memory request meets the requirements.
func MeetsEvictionRequirements(requirements []*vpav1.EvictionRequirement, containers []ContainerInput) bool {
	if len(requirements) == 0 {
		return true
	}
	for _, c := range containers {
		if !c.HasRecommendation {
			continue
		}
		_, hasCPU := c.Requests[corev1.ResourceCPU]
		_, hasMemory := c.Requests[corev1.ResourceMemory]
		if !hasCPU || !hasMemory {
			return true
		}
		if containerMeets(requirements, c) {
			return true
		}
	}
	return false
}

func containerMeets(requirements []*vpav1.EvictionRequirement, c ContainerInput) bool {
	for _, req := range requirements {
		if req == nil {
			continue
		}
		met := false
		for _, name := range req.Resources {
			target := c.Target[name]
			request := c.Requests[name]
			switch req.ChangeRequirement {
			case vpav1.TargetHigherThanRequests:
				met = met || target.MilliValue() > request.MilliValue()
			case vpav1.TargetLowerThanRequests:
				met = met || target.MilliValue() < request.MilliValue()
			}
		}
		if !met {
			return false
		}
	}
	return true
}
