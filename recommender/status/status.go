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

// Package status turns what the recommender knows of a VPA into the status
// it should have (Compute, BuildStatus), decides when that status is worth a
// write (NeedsWrite), and writes it: the write queue within the shared write
// budget (Queue) and the API writer (APIWriter).
package status

import (
	"fmt"
	"math"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/recommendation"
	"github.com/openvpa/openvpa/recommender/vpacache"
)

// Condition reasons and messages the recommender writes.
const (
	ReasonNoPodsMatched   = "NoPodsMatched"
	MessageNoPodsMatched  = "No pods match this VPA object"
	ReasonLowConfidence   = "LowConfidence"
	ReasonFetchingHistory = "FetchingHistory"
	// ReasonHistoryFetchFailed: the last fetch of the history failed; it is
	// retried with backoff.
	ReasonHistoryFetchFailed = "HistoryFetchFailed"
	// ReasonPodsKeepRequests: no capping of the recommendation gives a pod
	// the API server admits, so pods keep their requests.
	ReasonPodsKeepRequests = "PodsKeepRequests"
	// ReasonLimitRangeOverridesPolicy: pods get the recommendation capped
	// to the LimitRanges past minAllowed or maxAllowed.
	ReasonLimitRangeOverridesPolicy = recommendation.ReasonLimitRangeOverridesPolicy
	// ReasonOverlappingVPAs: another VPA matches some of this VPA's pods.
	ReasonOverlappingVPAs = "OverlappingVPAs"
	// ReasonHPAOnSameResource: an HPA scales the target on a resource this
	// VPA sets.
	ReasonHPAOnSameResource = "HPAOnSameResource"
	// ReasonResourceYieldedToHPA: an HPA scales the target on the
	// utilization of a resource this VPA would set, and the VPA leaves it to
	// the HPA.
	ReasonResourceYieldedToHPA = "ResourceYieldedToHPA"
	// ReasonScalePointKept: an HPA scales the target on the utilization of
	// a resource this VPA sets, and keeps its scale point: the updater
	// scales the HPA's target with the requests (hpa.ModeScalePoint).
	ReasonScalePointKept = "ScalePointKept"
	// ReasonLargestEligibleNode: the target is capped to what the largest
	// node the pods may be scheduled on holds.
	ReasonLargestEligibleNode = "LargestEligibleNode"
	// ReasonQuotaCapsIncrease: pods get the increase over their requests
	// capped to what the namespace's ResourceQuotas leave.
	ReasonQuotaCapsIncrease = "QuotaCapsIncrease"
	// LowConfidenceThreshold is the confidence (in days of history) below
	// which LowConfidence is set.
	LowConfidenceThreshold = 1.0
)

// Facts is what the loop knows about one VPA when it builds its status.
type Facts struct {
	// Recommendation is the new recommendation; nil or empty means none.
	Recommendation *vpav1.RecommendedPodResources
	// Confidence per recommended container, in days of history.
	Confidence map[string]float64
	// PodsMatched is whether any pod matches the VPA.
	PodsMatched bool
	// Unsupported is the ConfigUnsupported message; empty when the config is fine.
	Unsupported string
	// FetchingHistory is the FetchingHistory condition's reason while the
	// VPA's history is being loaded, with its message; empty otherwise.
	FetchingHistory, FetchingHistoryMessage string
	// LimitRangeConflict is the LimitRangeConflict condition's reason and
	// message; empty when the recommendation fits the pods.
	LimitRangeConflict, LimitRangeConflictMessage string
	// Overlap is the OverlappingVPA message; empty when no other VPA
	// matches the VPA's pods.
	Overlap string
	// HPAConflict is the HPAConflict message; empty when no HPA scales the
	// target on a resource the VPA sets. HPAConflictReason is its reason
	// (ReasonHPAOnSameResource when empty).
	HPAConflict, HPAConflictReason string
	// CappedToNode is the RecommendationCappedToNode message; empty when
	// the target fits a node the pods may use as it is.
	CappedToNode string
	// QuotaConflict is the ResourceQuotaConflict condition's reason and
	// message; empty when the namespace's quotas admit the recommendation.
	QuotaConflict, QuotaConflictMessage string
}

// conditionSet edits a list of conditions keyed by type, keeping the
// transition time of a condition whose status does not change.
type conditionSet struct {
	now   metav1.Time
	byTyp map[vpav1.VerticalPodAutoscalerConditionType]vpav1.VerticalPodAutoscalerCondition
}

func newConditionSet(old []vpav1.VerticalPodAutoscalerCondition, now time.Time) *conditionSet {
	s := &conditionSet{now: metav1.NewTime(now.Truncate(time.Second)), byTyp: map[vpav1.VerticalPodAutoscalerConditionType]vpav1.VerticalPodAutoscalerCondition{}}
	for _, c := range old {
		s.byTyp[c.Type] = c
	}
	return s
}

func (s *conditionSet) set(t vpav1.VerticalPodAutoscalerConditionType, status bool, reason, message string) {
	c := vpav1.VerticalPodAutoscalerCondition{Type: t, Status: corev1.ConditionFalse, Reason: reason, Message: message, LastTransitionTime: s.now}
	if status {
		c.Status = corev1.ConditionTrue
	}
	if old, ok := s.byTyp[t]; ok && old.Status == c.Status {
		c.LastTransitionTime = old.LastTransitionTime
	}
	s.byTyp[t] = c
}

func (s *conditionSet) remove(t vpav1.VerticalPodAutoscalerConditionType) { delete(s.byTyp, t) }

func (s *conditionSet) list() []vpav1.VerticalPodAutoscalerCondition {
	if len(s.byTyp) == 0 {
		return nil
	}
	out := make([]vpav1.VerticalPodAutoscalerCondition, 0, len(s.byTyp))
	for _, c := range s.byTyp {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	return out
}

// HasRecommendation reports whether r holds at least one container.
func HasRecommendation(r *vpav1.RecommendedPodResources) bool {
	return r != nil && len(r.ContainerRecommendations) > 0
}

// BuildStatus returns the status the VPA should have: the recommendation,
// the conditions (upstream's RecommendationProvided, NoPodsMatched and
// ConfigUnsupported rules, plus LowConfidence, FetchingHistory,
// LimitRangeConflict, OverlappingVPA, HPAConflict, RecommendationCappedToNode
// and ResourceQuotaConflict; conditions of other
// types are kept, ConfigDeprecated is removed), sorted by type with
// unchanged transition times, and observedGeneration.
func BuildStatus(vpa *vpav1.VerticalPodAutoscaler, f Facts, now time.Time) vpav1.VerticalPodAutoscalerStatus {
	cs := newConditionSet(vpa.Status.Conditions, now)
	cs.remove(vpav1.ConfigDeprecated)
	if f.Unsupported != "" {
		cs.set(vpav1.ConfigUnsupported, true, "", f.Unsupported)
	} else {
		cs.remove(vpav1.ConfigUnsupported)
	}
	reason, message := "", ""
	if !f.PodsMatched {
		reason, message = ReasonNoPodsMatched, MessageNoPodsMatched
		cs.set(vpav1.NoPodsMatched, true, reason, message)
	} else {
		cs.remove(vpav1.NoPodsMatched)
	}
	has := HasRecommendation(f.Recommendation)
	if has {
		cs.set(vpav1.RecommendationProvided, true, "", "")
	} else {
		cs.set(vpav1.RecommendationProvided, false, reason, message)
	}
	if msg := lowConfidence(f); has && msg != "" {
		cs.set(vpav1.LowConfidence, true, ReasonLowConfidence, msg)
	} else {
		cs.remove(vpav1.LowConfidence)
	}
	if f.FetchingHistory != "" {
		cs.set(vpav1.FetchingHistory, true, f.FetchingHistory, f.FetchingHistoryMessage)
	} else {
		cs.remove(vpav1.FetchingHistory)
	}
	if f.LimitRangeConflict != "" && has {
		cs.set(vpav1.LimitRangeConflict, true, f.LimitRangeConflict, f.LimitRangeConflictMessage)
	} else {
		cs.remove(vpav1.LimitRangeConflict)
	}
	if f.Overlap != "" {
		cs.set(vpav1.OverlappingVPA, true, ReasonOverlappingVPAs, f.Overlap)
	} else {
		cs.remove(vpav1.OverlappingVPA)
	}
	if f.HPAConflict != "" {
		reason := f.HPAConflictReason
		if reason == "" {
			reason = ReasonHPAOnSameResource
		}
		cs.set(vpav1.HPAConflict, true, reason, f.HPAConflict)
	} else {
		cs.remove(vpav1.HPAConflict)
	}
	if f.CappedToNode != "" && has {
		cs.set(vpav1.RecommendationCappedToNode, true, ReasonLargestEligibleNode, f.CappedToNode)
	} else {
		cs.remove(vpav1.RecommendationCappedToNode)
	}
	if f.QuotaConflict != "" && has {
		cs.set(vpav1.ResourceQuotaConflict, true, f.QuotaConflict, f.QuotaConflictMessage)
	} else {
		cs.remove(vpav1.ResourceQuotaConflict)
	}
	st := vpav1.VerticalPodAutoscalerStatus{Conditions: cs.list()}
	if has {
		st.Recommendation = f.Recommendation
	}
	gen := vpa.Generation
	st.ObservedGeneration = &gen
	return st
}

// lowConfidence returns the LowConfidence message for the container with the
// least history, or "" when every container has at least a day.
func lowConfidence(f Facts) string {
	if f.Recommendation == nil {
		return ""
	}
	worst, name := LowConfidenceThreshold, ""
	for _, r := range f.Recommendation.ContainerRecommendations {
		c, ok := f.Confidence[r.ContainerName]
		if ok && c < worst {
			worst, name = c, r.ContainerName
		}
	}
	if name == "" {
		return ""
	}
	// The message names the container but not the amount of history, so
	// that it does not change (and cause a write) at every loop.
	return fmt.Sprintf("Less than a day of usage history backs the recommendation for container %s", name)
}

// BoundsTolerance is the relative change of a lower or upper bound that is
// written at once. Smaller drifts wait for the VPA's next bounds slot.
const BoundsTolerance = 0.5

// NeedsWrite decides whether the new status must be written over the stored
// one, old with its recommendation oldRec (old's own is not read). Any change of
// conditions, observedGeneration, the set of containers, a target or an
// uncapped target is written at once, and so is a bound that moves by more
// than BoundsTolerance while the recommendation has at least a day of history
// (under LowConfidence the bounds are wide on purpose and shrink at every
// loop as history grows). Other bound drifts are written at the VPA's bounds
// slot: once per maxAge, at the VPA's own phase within it (phase, e.g.
// checkpoint.Offset of its key). While confidence grows the bounds move a
// little at every loop for every young VPA at once (upstream rewrites every
// VPA at every loop because of it); the slots spread those writes evenly over
// maxAge, and no bound is ever more than maxAge stale.
func NeedsWrite(old vpav1.VerticalPodAutoscalerStatus, oldRec vpacache.Recommendation, updated vpav1.VerticalPodAutoscalerStatus,
	lastWrite, now time.Time, maxAge, phase time.Duration) bool {
	oc, nc := oldRec, containersOf(updated.Recommendation)
	sameConditions := conditionsEqual(old.Conditions, updated.Conditions) &&
		int64PtrEqual(old.ObservedGeneration, updated.ObservedGeneration)
	if sameConditions && oc.Equal(nc) {
		return false // StatusChanged says no
	}
	if !sameConditions || (len(oc) == 0) != (len(nc) == 0) {
		return true
	}
	if lastWrite.Before(lastSlot(now, maxAge, phase)) {
		return true
	}
	if len(oc) != len(nc) {
		return true
	}
	settled := !hasTrueCondition(updated.Conditions, vpav1.LowConfidence)
	for i := range oc {
		a, b := &oc[i], &nc[i]
		if a.Name != b.ContainerName ||
			!a.Target.Equal(b.Target) ||
			!a.UncappedTarget.Equal(b.UncappedTarget) ||
			settled && (boundMoved(a.LowerBound, b.LowerBound) || boundMoved(a.UpperBound, b.UpperBound)) {
			return true
		}
	}
	return false
}

func hasTrueCondition(conds []vpav1.VerticalPodAutoscalerCondition, t vpav1.VerticalPodAutoscalerConditionType) bool {
	return trueCondition(conds, t) != nil
}

// trueCondition returns the condition of type t when it is True, else nil.
func trueCondition(conds []vpav1.VerticalPodAutoscalerCondition, t vpav1.VerticalPodAutoscalerConditionType) *vpav1.VerticalPodAutoscalerCondition {
	for i := range conds {
		if conds[i].Type == t && conds[i].Status == corev1.ConditionTrue {
			return &conds[i]
		}
	}
	return nil
}

// lastSlot returns the latest time at or before now that is phase past a
// multiple of period (counted from the Unix epoch).
func lastSlot(now time.Time, period, phase time.Duration) time.Time {
	if period <= 0 {
		return now
	}
	since := (now.UnixNano() - int64(phase)) % int64(period)
	if since < 0 {
		since += int64(period)
	}
	return now.Add(-time.Duration(since))
}

func boundMoved(a vpacache.Resources, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return true
	}
	for _, x := range a {
		qa := x.Value
		qb, ok := b[x.Name]
		if !ok {
			return true
		}
		x, y := qa.AsApproximateFloat64(), qb.AsApproximateFloat64()
		if x == y {
			continue
		}
		if x == 0 || math.Abs(y-x)/math.Abs(x) > BoundsTolerance {
			return true
		}
	}
	return false
}

// StatusChanged reports whether the new status differs from the stored one
// (old, with its recommendation oldRec) in any way kubectl shows: quantities
// compared by value, transition times to the second, no conditions the same
// as an empty list, and no recommendation the same as one without
// containers. It allocates nothing: the loop asks it of every VPA at every
// loop.
func StatusChanged(old vpav1.VerticalPodAutoscalerStatus, oldRec vpacache.Recommendation, updated vpav1.VerticalPodAutoscalerStatus) bool {
	return !conditionsEqual(old.Conditions, updated.Conditions) ||
		!int64PtrEqual(old.ObservedGeneration, updated.ObservedGeneration) ||
		!oldRec.Equal(containersOf(updated.Recommendation))
}

func containersOf(r *vpav1.RecommendedPodResources) []vpav1.RecommendedContainerResources {
	if r == nil {
		return nil
	}
	return r.ContainerRecommendations
}

func conditionsEqual(a, b []vpav1.VerticalPodAutoscalerCondition) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message ||
			x.ObservedGeneration != y.ObservedGeneration ||
			!x.LastTransitionTime.Truncate(time.Second).Equal(y.LastTransitionTime.Truncate(time.Second)) {
			return false
		}
	}
	return true
}

func int64PtrEqual(a, b *int64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
