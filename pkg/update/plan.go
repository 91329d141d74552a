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
	"time"

	corev1 "k8s.io/api/core/v1"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/annotations"
	"github.com/openvpa/openvpa/pkg/limitrange"
	"github.com/openvpa/openvpa/pkg/recommendation"
)

// PlanOptions are the inputs of Plan besides the VPA and its pods.
type PlanOptions struct {
	// Thresholds are the updater's; the VPA's evictAfterOOMSeconds is
	// applied when PerVPAConfig is set.
	Thresholds   Thresholds
	PerVPAConfig bool
	// LimitRanges are the namespace's, merged.
	LimitRanges limitrange.Merged
	// Now is the loop's time.
	Now time.Time
	// View, when set, is the pod the decisions are made on (with native
	// sidecars, sidecar.View: the sidecars follow the containers); nil
	// means the pod itself.
	View func(*corev1.Pod) *corev1.Pod
}

// Outcome says what became of one pod.
type Outcome string

const (
	// Candidate: the pod is to be updated, as far as the Restrictions, the rate
	// limits and PDBs allow.
	Candidate Outcome = "Candidate"
	// NotCandidate: the rule leaves the pod alone (Decision.Reason says why).
	NotCandidate Outcome = "NotCandidate"
	// EvictionRequirementsNotMet: a candidate the VPA's
	// evictionRequirements leave alone.
	EvictionRequirementsNotMet Outcome = "EvictionRequirementsNotMet"
	// LimitRangeConflict: with the recommendation the API server would
	// refuse the pod, so neither an eviction nor a resize can give it.
	LimitRangeConflict Outcome = "LimitRangeConflict"
)

// PodPlan is the decision for one pod.
type PodPlan struct {
	Pod *corev1.Pod
	// Recommendation is the VPA's recommendation capped for this pod
	// (policy, LimitRanges), as the rule saw it.
	Recommendation vpav1.RecommendedPodResources
	// CapNotes say, per container, what capped the recommendation for this
	// pod ("cpu capped to fit Max in container LimitRange", ...).
	CapNotes map[string][]string
	// Input and Decision are the rule's input and outcome.
	Input    PodInput
	Decision Decision
	Outcome  Outcome
	// Plan is the admission-style plan for the pod; set for candidates and
	// for pods refused by LimitRangeConflict. Plan.Conflict with
	// PolicyOverridden is a candidate that gets the recommendation capped
	// to the LimitRanges past the policy.
	Plan *recommendation.Plan
	// Observed is the pod's vpaObservedContainers set, nil without the
	// annotation (every container).
	Observed map[string]bool
	// Requests are the requests the update would set, by container.
	Requests map[string]corev1.ResourceList
}

// Plan decides for every pod of the VPA. It returns the decisions in
// the order of pods and the candidates, most urgent first (SortByPriority).
// A VPA without a recommendation has no candidates.
func Plan(vpa *vpav1.VerticalPodAutoscaler, pods []*corev1.Pod, o PlanOptions) (all []*PodPlan, candidates []*PodPlan) {
	rec := vpa.Status.Recommendation
	if rec == nil || len(rec.ContainerRecommendations) == 0 {
		return nil, nil
	}
	cfg := ThresholdsForVPA(o.Thresholds, vpa, o.PerVPAConfig)
	var requirements []*vpav1.EvictionRequirement
	if vpa.Spec.UpdatePolicy != nil {
		requirements = vpa.Spec.UpdatePolicy.EvictionRequirements
	}
	for _, pod := range pods {
		observedSet, ok := annotations.ObservedContainerSet(pod)
		var observed []string
		if ok {
			observed = make([]string, 0, len(observedSet))
			for n := range observedSet {
				observed = append(observed, n)
			}
		} else {
			observedSet = nil
		}
		// Plans start from the pod as it was before OpenVPA changed it, as
		// the admission controller's did, so that a pod already updated
		// gets the same plan again rather than one scaled from its updated
		// values.
		view := pod
		if o.View != nil {
			view = o.View(pod)
		}
		base := recommendation.Baseline(view)
		capped := recommendation.Cap(base, rec, vpa.Spec.ResourcePolicy, o.LimitRanges)
		p := &PodPlan{Pod: pod, Recommendation: capped.Recommendation, CapNotes: capped.Notes, Observed: observedSet}
		p.Input = PodInputFor(view, &capped.Recommendation, vpa.Spec.ResourcePolicy, observed, o.Now)
		p.Decision = Decide(cfg, p.Input)
		all = append(all, p)
		if !p.Decision.Update {
			p.Outcome = NotCandidate
			continue
		}
		if !MeetsEvictionRequirements(requirements, p.Input.Containers) {
			p.Outcome = EvictionRequirementsNotMet
			continue
		}
		plan := recommendation.PlanForPod(base, vpa, o.LimitRanges)
		p.Plan = &plan
		if plan.Conflict != nil && !plan.PolicyOverridden {
			p.Outcome = LimitRangeConflict
			continue
		}
		p.Outcome = Candidate
		p.Requests = map[string]corev1.ResourceList{}
		for i, r := range plan.Containers {
			name := view.Spec.Containers[i].Name
			if len(r.Requests) > 0 && (observedSet == nil || observedSet[name]) {
				p.Requests[name] = r.Requests
			}
		}
		candidates = append(candidates, p)
	}
	SortByPriority(candidates, func(p *PodPlan) Decision { return p.Decision })
	return all, candidates
}
