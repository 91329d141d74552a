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
	corev1 "k8s.io/api/core/v1"

	"github.com/openvpa/openvpa/pkg/annotations"
)

// Baseline returns the pod as it was before OpenVPA changed it: each
// container the openvpa.io/original-resources annotation records gets its
// recorded requests and limits back. Plans for running pods start from
// there, as the admission controller's plan for the pod did, so that planning
// again gives the same answer: a container scaled down to fit a Pod
// LimitRange is not scaled again from its scaled value, loop after loop. A
// pod without the annotation (or with one that does not decode) is returned
// as it is; pod is never modified.
func Baseline(pod *corev1.Pod) *corev1.Pod {
	orig, ok, err := annotations.OriginalOf(pod)
	if !ok || err != nil || len(orig) == 0 {
		return pod
	}
	p := *pod
	p.Spec.Containers = make([]corev1.Container, len(pod.Spec.Containers))
	copy(p.Spec.Containers, pod.Spec.Containers)
	for i := range p.Spec.Containers {
		c := &p.Spec.Containers[i]
		if r, found := orig[c.Name]; found {
			c.Resources.Requests = r.Requests
			c.Resources.Limits = r.Limits
		}
	}
	return &p
}
