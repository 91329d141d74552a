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
	"math"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Thresholds are the limits of the decision rule, named after the updater
// flags that set them.
type Thresholds struct {
	// PodUpdateThreshold is --pod-update-threshold: the minimum relative
	// change of requests for a pod whose requests are within bounds.
	PodUpdateThreshold float64
	// PodLifetimeUpdateThreshold is
	// --in-recommendation-bounds-eviction-lifetime-threshold: the minimum age
	// of a pod whose requests are within bounds.
	PodLifetimeUpdateThreshold time.Duration
	// EvictAfterOOMThreshold is --evict-after-oom-threshold (or a VPA's
	// evictAfterOOMSeconds): a container OOM-killed after running less than
	// this long makes its pod a candidate regardless of age.
	EvictAfterOOMThreshold time.Duration
}

// DefaultThresholds returns the updater's default thresholds.
func DefaultThresholds() Thresholds {
	return Thresholds{
		PodUpdateThreshold:         0.1,
		PodLifetimeUpdateThreshold: 12 * time.Hour,
		EvictAfterOOMThreshold:     10 * time.Minute,
	}
}

// ContainerInput is one observed container of a pod, as plain values.
type ContainerInput struct {
	Name string
	// Requests are the container's current requests; a missing key means the
	// container has no request for that resource.
	Requests corev1.ResourceList
	// HasRecommendation is false when the VPA has no recommendation for this
	// container; Target, LowerBound and UpperBound are then ignored.
	HasRecommendation bool
	// Target, LowerBound and UpperBound are the (capped) recommendation.
	// Only resources present in Target are considered; a missing bound is
	// not checked.
	Target     corev1.ResourceList
	LowerBound corev1.ResourceList
	UpperBound corev1.ResourceList
	// OOMKilledAfter is how long the container ran before its last
	// termination when that termination was an OOM kill; nil otherwise.
	OOMKilledAfter *time.Duration
	// OOMKilledAgo is how long ago that OOM kill ended; nil when unknown.
	// An OOM kill that ended EvictAfterOOMThreshold or longer ago no longer
	// makes a quick OOM (upstream 1.8).
	OOMKilledAgo *time.Duration
	// ScalingOff is true when the container's scaling mode is Off; its OOM
	// kills then do not count.
	ScalingOff bool
}

// PodInput is a pod as plain values.
type PodInput struct {
	// Containers are the observed containers.
	Containers []ContainerInput
	// Age is how long the pod has been running; nil when the pod has no start
	// time yet.
	Age *time.Duration
}

// Reason says why a pod is, or is not, a candidate.
type Reason string

const (
	// ReasonOutsideRange: a request is outside the recommended bounds, or a
	// recommended resource has no request.
	ReasonOutsideRange Reason = "OutsideRecommendedRange"
	// ReasonQuickOOM: a container was OOM-killed soon after it started.
	ReasonQuickOOM Reason = "QuickOOM"
	// ReasonLongLivedDrift: the pod is older than the lifetime threshold and
	// its requests drifted at least the update threshold from the target.
	ReasonLongLivedDrift Reason = "LongLivedDrift"

	// ReasonNoStartTime: within bounds and the pod has no start time.
	ReasonNoStartTime Reason = "NoStartTime"
	// ReasonTooYoung: within bounds and younger than the lifetime threshold.
	ReasonTooYoung Reason = "TooYoung"
	// ReasonBelowThreshold: within bounds and the relative change is below
	// the update threshold.
	ReasonBelowThreshold Reason = "BelowUpdateThreshold"
	// ReasonNoChange: a quick OOM, but the recommendation equals the requests.
	ReasonNoChange Reason = "NoChange"
)

// Decision is the outcome of the rule for one pod.
type Decision struct {
	// Update is true when the pod is a candidate.
	Update bool
	// Reason explains Update.
	Reason Reason
	// ScaleUp is true when some target exceeds its request (or a recommended
	// resource has no request).
	ScaleUp bool
	// OutsideRecommendedRange is true when a request is outside its bounds.
	OutsideRecommendedRange bool
	// QuickOOM is true when a container was OOM-killed within the threshold.
	QuickOOM bool
	// ResourceDiff is the sum over resources of
	// |totalRequest - totalTarget| / totalRequest, totals over the observed
	// containers in milli-units, totalRequest at least 1.
	ResourceDiff float64
}

// Decide applies the rule to one pod.
func Decide(cfg Thresholds, in PodInput) Decision {
	var d Decision
	totalRequest := map[corev1.ResourceName]int64{}
	totalTarget := map[corev1.ResourceName]int64{}
	for _, c := range in.Containers {
		if c.OOMKilledAfter != nil && !c.ScalingOff && *c.OOMKilledAfter < cfg.EvictAfterOOMThreshold &&
			(c.OOMKilledAgo == nil || *c.OOMKilledAgo < cfg.EvictAfterOOMThreshold) {
			d.QuickOOM = true
		}
		if !c.HasRecommendation {
			continue
		}
		for name, target := range c.Target {
			totalTarget[name] += target.MilliValue()
			request, ok := c.Requests[name]
			if !ok {
				d.ScaleUp = true
				d.OutsideRecommendedRange = true
				continue
			}
			totalRequest[name] += request.MilliValue()
			if target.Cmp(request) > 0 {
				d.ScaleUp = true
			}
			if lower, ok := c.LowerBound[name]; ok && request.Cmp(lower) < 0 {
				d.OutsideRecommendedRange = true
			}
			if upper, ok := c.UpperBound[name]; ok && request.Cmp(upper) > 0 {
				d.OutsideRecommendedRange = true
			}
		}
	}
	d.ResourceDiff = ResourceDiff(totalRequest, totalTarget)

	switch {
	case d.QuickOOM && d.ResourceDiff == 0:
		// An OOM-killed pod is only disrupted when its requests would change.
		d.Reason = ReasonNoChange
	case d.OutsideRecommendedRange:
		d.Update, d.Reason = true, ReasonOutsideRange
	case d.QuickOOM:
		d.Update, d.Reason = true, ReasonQuickOOM
	case in.Age == nil:
		d.Reason = ReasonNoStartTime
	case *in.Age < cfg.PodLifetimeUpdateThreshold:
		d.Reason = ReasonTooYoung
	case d.ResourceDiff < cfg.PodUpdateThreshold:
		d.Reason = ReasonBelowThreshold
	default:
		d.Update, d.Reason = true, ReasonLongLivedDrift
	}
	return d
}

// ResourceDiff sums, over the resources of totalTarget, the relative
// difference between the total request and the total target (both in
// milli-units); a total request below 1 counts as 1.
func ResourceDiff(totalRequest, totalTarget map[corev1.ResourceName]int64) float64 {
	// Sum in a fixed order so the float result does not depend on map order.
	names := make([]string, 0, len(totalTarget))
	for name := range totalTarget {
		names = append(names, string(name))
	}
	sort.Strings(names)
	diff := 0.0
	for _, name := range names {
		request := math.Max(float64(totalRequest[corev1.ResourceName(name)]), 1)
		diff += math.Abs(request-float64(totalTarget[corev1.ResourceName(name)])) / request
	}
	return diff
}

// Before reports whether a should be updated before b: scale-ups first, then
// the larger relative change.
func Before(a, b Decision) bool {
	if a.ScaleUp != b.ScaleUp {
		return a.ScaleUp
	}
	return a.ResourceDiff > b.ResourceDiff
}

// SortByPriority orders items by the decision each carries, most urgent
// first; equal items keep their order.
func SortByPriority[T any](items []T, decision func(T) Decision) {
	sort.SliceStable(items, func(i, j int) bool { return Before(decision(items[i]), decision(items[j])) })
}
