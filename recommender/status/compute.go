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

package status

import (
	"fmt"
	"slices"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/hpa"
	"github.com/openvpa/openvpa/pkg/limitrange"
	"github.com/openvpa/openvpa/pkg/nodefit"
	"github.com/openvpa/openvpa/pkg/quota"
	"github.com/openvpa/openvpa/pkg/recommendation"
	"github.com/openvpa/openvpa/pkg/target"
	"github.com/openvpa/openvpa/recommender/cluster"
	"github.com/openvpa/openvpa/recommender/estimator"
	"github.com/openvpa/openvpa/recommender/input"
	"github.com/openvpa/openvpa/recommender/input/history"
)

// HistoryStatus says where a namespace's history stands (history.Loader).
type HistoryStatus interface {
	Status(namespace string) history.Status
}

// Sources are what a status is computed from besides the VPA's own state.
type Sources struct {
	Estimator estimator.Estimator
	// LimitRanges returns a namespace's LimitRanges; nil means none are
	// checked.
	LimitRanges func(namespace string) limitrange.Merged
	// HPAs returns a namespace's HorizontalPodAutoscalers and whether they
	// are known (pkg/hpa.Cache.Lookup); while they are not, HPAConflict
	// keeps its last state. Nil means no HPAConflict is checked.
	HPAs func(namespace string) ([]*autoscalingv2.HorizontalPodAutoscaler, bool)
	// History says why a VPA still waits for its history; nil when there is
	// no history source.
	History HistoryStatus
	// Nodes returns the nodes a pod with the given scheduling constraints
	// (a nodefit key) may use, not counting the pods of the DaemonSet
	// exclude, with their room (nodefit.Cache.RoomsByKey); nil means no
	// node fit (--node-fit=false).
	Nodes func(key, exclude string) ([]nodefit.Room, bool)
	// Quotas returns what a namespace's ResourceQuotas leave and whether
	// they are known (quota.Cache.Lookup); while they are not,
	// ResourceQuotaConflict keeps its last state. Nil means no quota is
	// checked.
	Quotas func(namespace string) (*quota.Room, bool)
	// Surge returns how many pods a rollout of the VPA's target adds at
	// once (target.SurgeOf); nil for none known.
	Surge func(vpa *vpav1.VerticalPodAutoscaler) int32
	// YieldToHPA says a resource an HPA scales the target on by its
	// utilization is left to the HPA (--yield-to-hpa): HPAConflict then
	// has reason ResourceYieldedToHPA.
	YieldToHPA bool
}

// Compute returns the status a VPA should have now. It changes nothing:
// computed twice in one loop, it is the same.
func (s Sources) Compute(v *cluster.VPA, now time.Time) vpav1.VerticalPodAutoscalerStatus {
	var facts Facts
	if v.HistoryDone {
		res := s.Estimator.Recommend(v.Recommendable(), v.Obj.Spec.ResourcePolicy, v.Obj.Annotations)
		if len(res.Containers) > 0 {
			facts.Recommendation = &vpav1.RecommendedPodResources{ContainerRecommendations: res.Containers}
		}
		facts.Confidence = res.Confidence
	} else {
		// Never a recommendation computed without the history being
		// fetched: the last one stays until the history is in.
		facts.Recommendation = v.Obj.Recommendation.Expand()
		facts.FetchingHistory, facts.FetchingHistoryMessage = s.fetchingHistory(v.Key.Namespace)
	}
	old := v.Obj.VerticalPodAutoscaler.Status.Conditions
	if v.HistoryDone {
		facts.Recommendation, facts.CappedToNode = s.fitToNodes(v, facts.Recommendation)
	} else if c := trueCondition(old, vpav1.RecommendationCappedToNode); c != nil {
		facts.CappedToNode = c.Message // the kept recommendation was capped
	}
	rec := facts.Recommendation
	facts.PodsMatched = v.PodCount > 0
	facts.Unsupported = v.Unsupported
	facts.LimitRangeConflict, facts.LimitRangeConflictMessage = s.limitRangeConflict(v, rec)
	others, chosen := v.Overlaps()
	facts.Overlap = target.OverlapMessage(v.Key.Name, others, chosen)
	var yields []hpa.Conflict
	if s.HPAs != nil && v.Target != nil {
		if hpas, ok := s.HPAs(v.Key.Namespace); ok {
			var containers []string // nil: every container
			if len(v.Live) > 0 {
				containers = v.Live
			}
			vpa := v.Obj.VerticalPodAutoscaler
			if s.YieldToHPA {
				yields = hpa.Yields(vpa, hpas, containers)
			}
			kept := hpa.Kept(vpa, hpas, containers)
			facts.HPAConflictReason, facts.HPAConflict = hpaConflict(vpa, hpa.Conflicts(vpa, hpas, containers), yields, kept)
		} else if c := trueCondition(v.Obj.VerticalPodAutoscaler.Status.Conditions, vpav1.HPAConflict); c != nil {
			facts.HPAConflictReason, facts.HPAConflict = c.Reason, c.Message // not known yet: keep it
		}
	}
	if s.Quotas != nil {
		if room, ok := s.Quotas(v.Key.Namespace); ok {
			facts.QuotaConflict, facts.QuotaConflictMessage = s.quotaConflict(v, rec, room, yields)
		} else if c := trueCondition(old, vpav1.ResourceQuotaConflict); c != nil {
			facts.QuotaConflict, facts.QuotaConflictMessage = c.Reason, c.Message // not known yet: keep it
		}
	}
	return BuildStatus(v.Obj.VerticalPodAutoscaler, facts, now)
}

// limitRangeConflict checks rec against the namespace's LimitRanges (and
// pod-level resources) on one of the VPA's pods, as the admission controller
// and the updater will, and returns the LimitRangeConflict condition's reason
// and message, or "" when the recommendation fits. Namespaces without
// LimitRanges cost a lookup.
func (s Sources) limitRangeConflict(v *cluster.VPA, rec *vpav1.RecommendedPodResources) (string, string) {
	if s.LimitRanges == nil || v.Sample == nil || !HasRecommendation(rec) {
		return "", ""
	}
	lr := s.LimitRanges(v.Key.Namespace)
	if len(lr.Items) == 0 && v.Sample.PodResources == nil {
		return "", ""
	}
	vpa := *v.Obj.VerticalPodAutoscaler
	vpa.Status.Recommendation = rec
	plan := recommendation.PlanForPodShared(v.Sample.SpecPod(), &vpa, lr)
	if plan.Conflict == nil {
		return "", ""
	}
	if plan.PolicyOverridden {
		return ReasonLimitRangeOverridesPolicy, "Pods get the recommendation capped to the namespace's LimitRanges past the resource policy, which they do not admit: " + plan.Why()
	}
	return ReasonPodsKeepRequests, "Pods keep their requests: the API server would refuse them with the recommendation: " + plan.Why()
}

// fetchingHistory returns the FetchingHistory condition's reason and message
// for a VPA of the namespace that still waits for its history.
func (s Sources) fetchingHistory(namespace string) (string, string) {
	if s.History != nil {
		if st := s.History.Status(namespace); st.Err != nil {
			return ReasonHistoryFetchFailed, fmt.Sprintf("Cannot load usage history from Prometheus (%d failed attempts, next at %s): %v; the recommendation is kept until it is in",
				st.Attempts, st.NextAttempt.UTC().Format(time.RFC3339), st.Err)
		}
	}
	return ReasonFetchingHistory, "Loading usage history from Prometheus; the recommendation is kept until it is in"
}

// fitToNodes caps rec (target and bounds, not uncappedTarget) so that the
// VPA's pods fit the largest node they may be scheduled on, and returns the
// RecommendationCappedToNode message ("" when nothing was capped). The pods'
// constraints and other containers are those of the sample pod, or of the
// last one while the VPA has no pods.
func (s Sources) fitToNodes(v *cluster.VPA, rec *vpav1.RecommendedPodResources) (*vpav1.RecommendedPodResources, string) {
	sample := v.Sample
	if sample == nil {
		sample = v.LastSample
	}
	if s.Nodes == nil || sample == nil || !HasRecommendation(rec) {
		return rec, ""
	}
	rooms, ok := s.Nodes(sample.Constraints, sample.DaemonSet())
	if !ok || fitsAsIs(sample, rec, rooms) {
		return rec, ""
	}
	capped, nc := recommendation.FitToNodes(sample.SpecPod(), rec, rooms)
	if nc == nil {
		return capped, ""
	}
	return capped, CappedToNodeMessage(nc, rec)
}

// fitsAsIs reports, without allocating, whether the pod with every field of
// rec (the largest of target and bounds per resource) fits one of the
// rooms, or there are none: then node fit has nothing to cap.
func fitsAsIs(pod *input.Pod, rec *vpav1.RecommendedPodResources, rooms []nodefit.Room) bool {
	if len(rooms) == 0 {
		return true
	}
	if pod.PodResources != nil || len(pod.InitContainers) > 0 {
		return false // counted by the full computation
	}
	var need nodefit.Amounts
	for i := range pod.Containers {
		c := &pod.Containers[i]
		cpu, mem := max(c.Spec.CPURequest, 0), max(c.Spec.MemoryRequest, 0)
		for j := range rec.ContainerRecommendations {
			r := &rec.ContainerRecommendations[j]
			if r.ContainerName != c.Name {
				continue
			}
			for _, l := range []corev1.ResourceList{r.Target, r.LowerBound, r.UpperBound} {
				if q, ok := l[corev1.ResourceCPU]; ok {
					cpu = max(cpu, q.MilliValue())
				}
				if q, ok := l[corev1.ResourceMemory]; ok {
					mem = max(mem, q.Value())
				}
			}
			break
		}
		need = need.Add(nodefit.Amounts{CPU: cpu, Memory: mem})
	}
	for _, r := range rooms {
		if r.Free.Covers(need) {
			return true
		}
	}
	return false
}

// CappedToNodeMessage is the RecommendationCappedToNode message: the node,
// its room, and the uncapped target of the containers capped.
func CappedToNodeMessage(nc *recommendation.NodeCap, uncapped *vpav1.RecommendedPodResources) string {
	msg := fmt.Sprintf("The target is capped to fit node %s, the largest the pods may be scheduled on (allocatable %s; %s left by its DaemonSet pods)",
		nc.Node, nc.Allocatable, nc.Free)
	sep := ": uncapped target "
	for _, r := range uncapped.ContainerRecommendations {
		l := r.UncappedTarget
		if len(l) == 0 {
			l = r.Target
		}
		var parts string
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := l[name]; ok {
				if parts != "" {
					parts += ", "
				}
				parts += fmt.Sprintf("%s %s", name, q.String())
			}
		}
		if parts == "" {
			continue
		}
		msg += fmt.Sprintf("%scontainer %s %s", sep, r.ContainerName, parts)
		sep = "; "
	}
	return msg
}

// quotaConflict plans the sample pod with rec against what the namespace's
// ResourceQuotas leave (room, nil for no quota), as the admission controller
// and the updater will, and returns the ResourceQuotaConflict condition's
// reason and message, or "" when the quota admits the plan as it is. The
// message names the quotas and resources, not amounts, so that it does not
// change (and cause a write) whenever the namespace's usage moves.
func (s Sources) quotaConflict(v *cluster.VPA, rec *vpav1.RecommendedPodResources, room *quota.Room, yields []hpa.Conflict) (string, string) {
	if room == nil || v.Sample == nil || !HasRecommendation(rec) {
		return "", ""
	}
	vpa := *v.Obj.VerticalPodAutoscaler
	vpa.Status.Recommendation = rec
	var lr limitrange.Merged
	if s.LimitRanges != nil {
		lr = s.LimitRanges(v.Key.Namespace)
	}
	var surge int32
	if s.Surge != nil {
		surge = s.Surge(&vpa)
	}
	plan := recommendation.PlanForPodSharedFit(v.Sample.SpecPod(), &vpa, lr, recommendation.Fit{Quota: room, Surge: surge, Yield: yields})
	if plan.Quota == nil {
		return "", ""
	}
	names := ""
	for i, n := range plan.Quota.Resources {
		if i > 0 {
			names += " and "
		}
		names += string(n)
	}
	if plan.Quota.KeptRequests {
		return ReasonPodsKeepRequests, fmt.Sprintf("Pods keep their requests: the namespace's ResourceQuota %s leaves too little room for the increase of %s, and the LimitRanges refuse what it would allow", plan.Quota.Quotas, names)
	}
	return ReasonQuotaCapsIncrease, fmt.Sprintf("Pods get the increase of %s capped: the namespace's ResourceQuota %s leaves too little room for the recommendation (room is kept for %d more pod(s) with their own requests)", names, plan.Quota.Quotas, max(surge, 1))
}

// hpaConflict returns the HPAConflict condition's reason and message for
// the conflicts and, among them, the yields and those kept at their scale
// point: ResourceYieldedToHPA when the VPA leaves some resource to an HPA,
// ScalePointKept when it sets every such resource and the HPAs keep their
// scale point, HPAOnSameResource otherwise (the other conflicts follow in
// the message); "" when there are none.
func hpaConflict(vpa *vpav1.VerticalPodAutoscaler, conflicts, yields, kept []hpa.Conflict) (string, string) {
	if len(yields) == 0 && len(kept) == 0 {
		if len(conflicts) == 0 {
			return "", ""
		}
		return ReasonHPAOnSameResource, hpa.Message(vpa, conflicts)
	}
	var parts []string
	reason := ReasonScalePointKept
	if len(yields) > 0 {
		reason = ReasonResourceYieldedToHPA
		parts = append(parts, hpa.YieldMessage(vpa, yields))
	}
	if len(kept) > 0 {
		parts = append(parts, hpa.KeptMessage(vpa, kept))
	}
	var others []hpa.Conflict
	for _, c := range conflicts {
		if !slices.Contains(yields, c) && !slices.Contains(kept, c) {
			others = append(others, c)
		}
	}
	if len(others) > 0 {
		parts = append(parts, hpa.Message(vpa, others))
	}
	return reason, strings.Join(parts, "; ")
}
