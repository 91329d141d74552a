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
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/annotations"
	"github.com/openvpa/openvpa/pkg/limitrange"
	"github.com/openvpa/openvpa/pkg/quota"
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
	// Fit, when set, is what a pod's plan must fit (recommendation.Fit: the
	// nodes it may use, the namespace's quota); nil fits nothing beyond the
	// LimitRanges, as upstream.
	Fit func(pod *corev1.Pod) recommendation.Fit
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
	// QuotaConflict: the namespace's ResourceQuotas would refuse the
	// replacement (or the resize) the update needs, or leave it no more of
	// what the recommendation raises than the pod has now.
	QuotaConflict Outcome = "QuotaConflict"
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
	// ReplacementFits says the namespace's ResourceQuotas admit the pod an
	// eviction makes the controller create (while the evicted pod is still
	// charged); true when no quota is checked.
	ReplacementFits bool
	// Why says why the Outcome is QuotaConflict.
	Why string
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
		var fit recommendation.Fit
		if o.Fit != nil {
			fit = o.Fit(view)
		}
		capped := recommendation.CapFit(base, rec, vpa.Spec.ResourcePolicy, o.LimitRanges, fit)
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
		plan := recommendation.PlanForPodFit(base, vpa, o.LimitRanges, fit)
		p.Plan = &plan
		if plan.Conflict != nil && !plan.PolicyOverridden {
			p.Outcome = LimitRangeConflict
			continue
		}
		if why := quotaConflict(vpa, view, base, &plan, fit, p); why != "" {
			p.Outcome, p.Why = QuotaConflict, why
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

// quotaConflict checks a candidate's plan against the namespace's
// ResourceQuotas (fit.Quota; nil checks nothing) and returns why the update
// is to be left out, or "". It sets p.ReplacementFits: the pod the eviction
// makes the controller create, with the plan, is charged while the evicted
// pod still is, so it needs all of its totals in what the quota leaves; a
// resize needs only its increase. The VPA's mode says which of the two the
// update takes (InPlaceOrRecreate: either). An update is also left out when
// the quota capped the plan to no more than the pod has now of a resource
// it raises: the replacement would get no more (an eviction would then be
// for nothing, and the next one would give back the increase it took).
func quotaConflict(vpa *vpav1.VerticalPodAutoscaler, view, base *corev1.Pod, plan *recommendation.Plan, fit recommendation.Fit, p *PodPlan) string {
	p.ReplacementFits = true
	if fit.Quota == nil {
		return ""
	}
	now := quota.TotalsOf(view)
	planned := quota.TotalsOf(recommendation.Applied(base, plan.Containers))
	left := fit.Quota.Left()
	p.ReplacementFits = planned.Within(left)
	resizeFits := planned.Sub(now).Within(left)
	if qc := plan.Quota; qc != nil {
		for _, name := range qc.Resources {
			if planned.Requests.Get(name) <= now.Requests.Get(name) && planned.Limits.Get(name) <= now.Limits.Get(name) {
				return fmt.Sprintf("ResourceQuota %s leaves no room to give the pod more %s than it has", qc.Quotas, name)
			}
		}
	}
	switch mode := vpav1.GetUpdateMode(vpa); {
	case mode == vpav1.UpdateModeInPlace && !resizeFits,
		mode == vpav1.UpdateModeInPlaceOrRecreate && !resizeFits && !p.ReplacementFits:
		return fmt.Sprintf("ResourceQuota %s would refuse the resize", fit.Quota.Names())
	case mode != vpav1.UpdateModeInPlace && mode != vpav1.UpdateModeInPlaceOrRecreate && !p.ReplacementFits:
		return fmt.Sprintf("ResourceQuota %s would refuse the replacement pod while the evicted one terminates", fit.Quota.Names())
	}
	return ""
}
