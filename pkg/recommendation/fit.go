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

	"github.com/openvpa/openvpa/pkg/hpa"
	"github.com/openvpa/openvpa/pkg/nodefit"
	"github.com/openvpa/openvpa/pkg/quota"
)

// Fit is what a plan must fit besides the namespace's LimitRanges. The zero
// Fit checks nothing: the plan is upstream's.
type Fit struct {
	// Nodes are the nodes the pod may be scheduled on, with their room
	// (nodefit.Cache.Rooms); nil checks no node. Empty (no node allows the
	// pod) caps nothing.
	Nodes []nodefit.Room
	// Quota is what the namespace's ResourceQuotas leave (quota.Cache.Room);
	// nil checks no quota.
	Quota *quota.Room
	// Surge is how many more pods of the workload a rollout may create while
	// this one is being created (a Deployment's maxSurge). The increase a
	// pod is given leaves the quota room for that many pods, at least one,
	// with the pod's own requests.
	Surge int32
	// Yield are the resources left to an HPA that scales the workload on
	// their utilization (hpa.Yields): the plan does not set them, as if the
	// policy did not control them.
	Yield []hpa.Conflict
}

// Outside returns why pod with resources applied would not fit fit, or ""
// when it fits: no node of fit.Nodes holds it (unless none holds the pod as
// it is either), or it would be charged more than the quota allows
// (quotaAllowance). For changes made after planning, such as the startup
// boost.
func Outside(pod *corev1.Pod, resources []ContainerResources, fit Fit) string {
	p := Applied(pod, resources)
	if len(fit.Nodes) > 0 && !fitsSome(fit.Nodes, p) && fitsSome(fit.Nodes, pod) {
		return fmt.Sprintf("no node the pod may be scheduled on holds it (%s)", nodefit.PodAmounts(p))
	}
	if fit.Quota != nil {
		allowed := quotaAllowance(quota.TotalsOf(pod), fit.Quota, fit.Surge)
		if got := quota.TotalsOf(p); !got.Within(allowed) {
			return fmt.Sprintf("ResourceQuota %s leaves too little room for it", fit.Quota.Names())
		}
	}
	return ""
}

func fitsSome(rooms []nodefit.Room, pod *corev1.Pod) bool {
	need := nodefit.PodAmounts(pod)
	for _, r := range rooms {
		if r.Free.Covers(need) {
			return true
		}
	}
	return false
}
