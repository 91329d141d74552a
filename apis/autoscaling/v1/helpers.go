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

package v1

import corev1 "k8s.io/api/core/v1"

// DefaultControlledResources are the resources a container policy controls when
// it lists none.
var DefaultControlledResources = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}

// GetUpdateMode returns the effective update mode of a VPA: the one in its
// update policy, or Recreate when none is set.
func GetUpdateMode(vpa *VerticalPodAutoscaler) UpdateMode {
	if vpa == nil || vpa.Spec.UpdatePolicy == nil || vpa.Spec.UpdatePolicy.UpdateMode == nil || *vpa.Spec.UpdatePolicy.UpdateMode == "" {
		return UpdateModeRecreate
	}
	return *vpa.Spec.UpdatePolicy.UpdateMode
}

// EvictsPods reports whether the mode lets the updater evict pods.
func (m UpdateMode) EvictsPods() bool {
	return m == UpdateModeRecreate || m == UpdateModeAuto || m == UpdateModeInPlaceOrRecreate
}

// UpdatesRunningPods reports whether the updater acts on running pods in this mode.
func (m UpdateMode) UpdatesRunningPods() bool {
	return m.EvictsPods() || m == UpdateModeInPlace
}

// PatchesNewPods reports whether the admission controller applies
// recommendations to new pods in this mode.
func (m UpdateMode) PatchesNewPods() bool {
	return m != UpdateModeOff
}

// GetContainerResourcePolicy returns the policy of the named container: its own
// policy if there is one, else the "*" policy, else nil.
func GetContainerResourcePolicy(containerName string, policy *PodResourcePolicy) *ContainerResourcePolicy {
	if policy == nil {
		return nil
	}
	var fallback *ContainerResourcePolicy
	for i := range policy.ContainerPolicies {
		p := &policy.ContainerPolicies[i]
		switch p.ContainerName {
		case containerName:
			return p
		case DefaultContainerResourcePolicy:
			if fallback == nil {
				fallback = p
			}
		}
	}
	return fallback
}

// ScalingMode returns the container's scaling mode, Auto when unset.
func (p *ContainerResourcePolicy) ScalingMode() ContainerScalingMode {
	if p == nil || p.Mode == nil {
		return ContainerScalingModeAuto
	}
	return *p.Mode
}

// ControlledValuesOrDefault returns the controlled values, RequestsAndLimits when unset.
func (p *ContainerResourcePolicy) ControlledValuesOrDefault() ContainerControlledValues {
	if p == nil || p.ControlledValues == nil {
		return ContainerControlledValuesRequestsAndLimits
	}
	return *p.ControlledValues
}

// ControlledResourcesOrDefault returns the controlled resources, cpu and memory when unset.
func (p *ContainerResourcePolicy) ControlledResourcesOrDefault() []corev1.ResourceName {
	if p == nil || p.ControlledResources == nil {
		return DefaultControlledResources
	}
	return *p.ControlledResources
}

// Controls reports whether the policy controls the resource.
func (p *ContainerResourcePolicy) Controls(name corev1.ResourceName) bool {
	for _, r := range p.ControlledResourcesOrDefault() {
		if r == name {
			return true
		}
	}
	return false
}

// DefaultRecommenderName is the name of the recommender that handles VPAs
// which name no recommender.
const DefaultRecommenderName = "default"

// SelectsRecommender reports whether the recommender with the given name is
// responsible for the VPA: the default recommender handles VPAs that list no
// recommender, and every recommender handles the VPAs that list its name.
func (vpa *VerticalPodAutoscaler) SelectsRecommender(name string) bool {
	if len(vpa.Spec.Recommenders) == 0 {
		return name == DefaultRecommenderName
	}
	for _, r := range vpa.Spec.Recommenders {
		if r != nil && r.Name == name {
			return true
		}
	}
	return false
}
