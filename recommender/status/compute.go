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
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/hpa"
	"github.com/openvpa/openvpa/pkg/limitrange"
	"github.com/openvpa/openvpa/pkg/recommendation"
	"github.com/openvpa/openvpa/pkg/target"
	"github.com/openvpa/openvpa/recommender/cluster"
	"github.com/openvpa/openvpa/recommender/estimator"
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
	rec := facts.Recommendation
	facts.PodsMatched = v.PodCount > 0
	facts.Unsupported = v.Unsupported
	facts.LimitRangeConflict, facts.LimitRangeConflictMessage = s.limitRangeConflict(v, rec)
	others, chosen := v.Overlaps()
	facts.Overlap = target.OverlapMessage(v.Key.Name, others, chosen)
	if s.HPAs != nil && v.Target != nil {
		if hpas, ok := s.HPAs(v.Key.Namespace); ok {
			var containers []string // nil: every container
			if len(v.Live) > 0 {
				containers = v.Live
			}
			facts.HPAConflict = hpa.Message(v.Obj.VerticalPodAutoscaler, hpa.Conflicts(v.Obj.VerticalPodAutoscaler, hpas, containers))
		} else if c := trueCondition(v.Obj.VerticalPodAutoscaler.Status.Conditions, vpav1.HPAConflict); c != nil {
			facts.HPAConflict = c.Message // not known yet: keep it
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
