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
	"strings"

	corev1 "k8s.io/api/core/v1"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/limitrange"
)

// ContainerResources are the resources to give one container.
type ContainerResources struct {
	// Requests are the capped target; nil when the container is left alone.
	Requests corev1.ResourceList
	// Limits are the proportional limits; nil when limits are left alone
	// (RequestsOnly, or no original or default limit).
	Limits corev1.ResourceList
	// Notes say what capped the target or why a limit could not keep its
	// ratio, e.g. "memory capped to maxAllowed".
	Notes []string
}

// Plan is what a VPA's recommendation gives a pod: per container, what to
// set, and whether the result had to give way to the namespace's
// LimitRanges.
type Plan struct {
	// Containers holds, for each of pod.Spec.Containers (same index), the
	// requests and limits to set; containers left alone get an empty entry.
	Containers []ContainerResources
	// Conflict is set when the capped recommendation would give a pod that
	// the API server refuses (a LimitRange, or requests above limits). With
	// PolicyOverridden false, Containers is then all empty: the pod is
	// better left as it is than made uncreatable.
	Conflict error
	// PolicyOverridden says Containers comes from capping with the
	// LimitRanges applied after the VPA's minAllowed and maxAllowed, because
	// upstream's order (the policy last) gave the Conflict.
	PolicyOverridden bool
	// Node says how the requests were capped to fit a node (Fit.Nodes);
	// nil when they were not.
	Node *NodeCap
	// Quota says how the increase was capped to what the namespace's
	// ResourceQuotas leave (Fit.Quota); nil when it was not.
	Quota *QuotaCap
}

// Event reasons for a plan that gave way to the LimitRanges, the same in
// the admission controller's and the updater's events.
const (
	// ReasonLimitRangeConflict: the pod is left as it is, because with the
	// recommendation the API server would refuse it.
	ReasonLimitRangeConflict = "LimitRangeConflict"
	// ReasonLimitRangeOverridesPolicy: the pod gets the recommendation
	// capped to the LimitRanges past the VPA's minAllowed or maxAllowed.
	ReasonLimitRangeOverridesPolicy = "LimitRangeOverridesPolicy"
	// ReasonResourceQuotaConflict: the pod gets less than the
	// recommendation, or is not updated, because the namespace's
	// ResourceQuotas would refuse it (or its replacement) with more.
	ReasonResourceQuotaConflict = "ResourceQuotaConflict"
)

// ConflictReason is the event reason for a plan with a Conflict.
func (p *Plan) ConflictReason() string {
	if p.PolicyOverridden {
		return ReasonLimitRangeOverridesPolicy
	}
	return ReasonLimitRangeConflict
}

// Why is the Conflict on one line (the API server's messages joined by
// "; "), or "" when there is none.
func (p *Plan) Why() string {
	if p.Conflict == nil {
		return ""
	}
	return strings.ReplaceAll(p.Conflict.Error(), "\n", "; ")
}

// Changed reports whether the plan sets anything on any container.
func (p *Plan) Changed() bool {
	for i := range p.Containers {
		if len(p.Containers[i].Requests) > 0 || len(p.Containers[i].Limits) > 0 {
			return true
		}
	}
	return false
}

// ForPod returns, for each of pod.Spec.Containers (same index), the requests
// and limits the VPA's current recommendation gives it after Cap, with
// proportional limits for RequestsAndLimits. Containers without a
// recommendation get an empty entry, unless a Pod LimitRange scales them
// too. Resources with an empty name are dropped. The inputs are not
// modified. It is PlanForPod's Containers.
func ForPod(pod *corev1.Pod, vpa *vpav1.VerticalPodAutoscaler, lr limitrange.Merged) []ContainerResources {
	return planForPod(pod, vpa, lr, Fit{}, false).Containers
}

// ForPodShared is ForPod for callers that only read the result: where
// capping leaves a container's target as it is, its Requests is the VPA's
// own recommendation map rather than a copy, so it must not be modified.
func ForPodShared(pod *corev1.Pod, vpa *vpav1.VerticalPodAutoscaler, lr limitrange.Merged) []ContainerResources {
	return planForPod(pod, vpa, lr, Fit{}, true).Containers
}

// PlanForPod is ForPod with the outcome of the LimitRange check. When the
// namespace has LimitRanges or the pod sets pod-level resources, the
// resulting pod is checked against them (and against requests above limits)
// as the API server would: upstream's
// capping first; if the API server would refuse that, capping with the
// LimitRanges winning over the VPA policy; if it would refuse that too,
// nothing. So a plan never makes a pod uncreatable or a resize refused.
func PlanForPod(pod *corev1.Pod, vpa *vpav1.VerticalPodAutoscaler, lr limitrange.Merged) Plan {
	return planForPod(pod, vpa, lr, Fit{}, false)
}

// PlanForPodShared is PlanForPod with ForPodShared's sharing.
func PlanForPodShared(pod *corev1.Pod, vpa *vpav1.VerticalPodAutoscaler, lr limitrange.Merged) Plan {
	return planForPod(pod, vpa, lr, Fit{}, true)
}

// PlanForPodFit is PlanForPod that also fits fit: the requests are capped so
// that the pod fits the largest node fit.Nodes holds (the node fit stage),
// and their increase so that the namespace's ResourceQuotas still admit it
// (fit.Quota, after the LimitRange check). The zero Fit gives PlanForPod's
// plan.
func PlanForPodFit(pod *corev1.Pod, vpa *vpav1.VerticalPodAutoscaler, lr limitrange.Merged, fit Fit) Plan {
	return planForPod(pod, vpa, lr, fit, false)
}

// PlanForPodSharedFit is PlanForPodFit with ForPodShared's sharing.
func PlanForPodSharedFit(pod *corev1.Pod, vpa *vpav1.VerticalPodAutoscaler, lr limitrange.Merged, fit Fit) Plan {
	return planForPod(pod, vpa, lr, fit, true)
}

// planForPod runs the capping pipeline (resourcesFor) in upstream's order,
// checks the pod it gives with Admissible and, when that would be refused,
// runs it again in the policy-first order.
func planForPod(pod *corev1.Pod, vpa *vpav1.VerticalPodAutoscaler, lr limitrange.Merged, fit Fit, shared bool) Plan {
	plan := planLimitRanges(pod, vpa, lr, fit, shared)
	fitQuota(pod, lr, fit, &plan)
	return plan
}

// planLimitRanges is planForPod before the quota: capping, the LimitRange
// check and its fallback.
func planLimitRanges(pod *corev1.Pod, vpa *vpav1.VerticalPodAutoscaler, lr limitrange.Merged, fit Fit, shared bool) Plan {
	if pod == nil {
		return Plan{}
	}
	if vpa == nil || vpa.Status.Recommendation == nil {
		return Plan{Containers: make([]ContainerResources, len(pod.Spec.Containers))}
	}
	var plan Plan
	plan.Containers, plan.Node = resourcesFor(pod, vpa, lr, capOptions{targetOnly: true, shared: shared, fit: fit})
	if (len(lr.Items) == 0 && pod.Spec.Resources == nil) || !plan.Changed() {
		// Without LimitRanges or pod-level resources, capping keeps
		// every request within its limit by construction.
		return plan
	}
	err := Admissible(pod, plan.Containers, lr.Items)
	if err == nil {
		return plan
	}
	plan.Conflict = err
	if vpa.Spec.ResourcePolicy != nil {
		alt, node := resourcesFor(pod, vpa, lr, capOptions{targetOnly: true, shared: shared, policyFirst: true, fit: fit})
		if Admissible(pod, alt, lr.Items) == nil {
			plan.Containers, plan.Node = alt, node
			plan.PolicyOverridden = true
			return plan
		}
	}
	plan.Containers = make([]ContainerResources, len(pod.Spec.Containers))
	plan.Node = nil
	return plan
}
