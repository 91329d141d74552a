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

// Package sidecar is OpenVPA's view of native sidecars (init containers with
// restartPolicy: Always, which run beside the pod's containers for its whole
// life). With the NativeSidecar feature gate the three components treat them
// as containers: the recommender records their usage, the admission
// controller patches them under /spec/initContainers and the updater resizes
// or evicts for them. Without the gate they are ignored, as upstream does.
//
// The components plan on a View of the pod, where the native sidecars follow
// the containers, so that code written for pod.Spec.Containers covers them.
package sidecar

import (
	corev1 "k8s.io/api/core/v1"
)

// IsNative reports whether an init container is a native sidecar.
func IsNative(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// Count returns the number of native sidecars among the pod's init containers.
func Count(pod *corev1.Pod) int {
	n := 0
	for i := range pod.Spec.InitContainers {
		if IsNative(&pod.Spec.InitContainers[i]) {
			n++
		}
	}
	return n
}

// Indexes returns the indexes in pod.Spec.InitContainers of its native
// sidecars, in order: the init container of View's container
// len(pod.Spec.Containers)+k is Indexes(pod)[k].
func Indexes(pod *corev1.Pod) []int {
	var out []int
	for i := range pod.Spec.InitContainers {
		if IsNative(&pod.Spec.InitContainers[i]) {
			out = append(out, i)
		}
	}
	return out
}

// View returns the pod as the components plan on it: its containers followed
// by its native sidecars, which leave the init containers, and their statuses
// likewise. A pod without native sidecars is returned as it is. The view
// shares everything else with pod and must be treated as read-only.
func View(pod *corev1.Pod) *corev1.Pod {
	if pod == nil || Count(pod) == 0 {
		return pod
	}
	v := *pod
	v.Spec.Containers = make([]corev1.Container, 0, len(pod.Spec.Containers)+len(pod.Spec.InitContainers))
	v.Spec.Containers = append(v.Spec.Containers, pod.Spec.Containers...)
	v.Spec.InitContainers = nil
	sidecars := map[string]bool{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if IsNative(c) {
			v.Spec.Containers = append(v.Spec.Containers, *c)
			sidecars[c.Name] = true
		} else {
			v.Spec.InitContainers = append(v.Spec.InitContainers, *c)
		}
	}
	if len(pod.Status.InitContainerStatuses) > 0 {
		v.Status.ContainerStatuses = append([]corev1.ContainerStatus(nil), pod.Status.ContainerStatuses...)
		v.Status.InitContainerStatuses = nil
		for _, s := range pod.Status.InitContainerStatuses {
			if sidecars[s.Name] {
				v.Status.ContainerStatuses = append(v.Status.ContainerStatuses, s)
			} else {
				v.Status.InitContainerStatuses = append(v.Status.InitContainerStatuses, s)
			}
		}
	}
	return &v
}
