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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/boost"
)

const (
	// DeferredResizeTimeout is how long a Deferred resize may wait before an
	// InPlaceOrRecreate pod is evicted instead.
	DeferredResizeTimeout = 5 * time.Minute
	// InProgressResizeTimeout is how long a resize may stay in progress
	// before an InPlaceOrRecreate pod is evicted instead.
	InProgressResizeTimeout = time.Hour
)

// RestrictionConfig holds the updater flags the restrictions need.
type RestrictionConfig struct {
	// MinReplicas is --min-replicas; a VPA's minReplicas overrides it.
	MinReplicas int
	// EvictionTolerance is --eviction-tolerance.
	EvictionTolerance float64
	// InPlaceSkipDisruptionBudget is --in-place-skip-disruption-budget.
	InPlaceSkipDisruptionBudget bool
}

// ReplicaCounter returns the replica count configured on a pod's controller.
type ReplicaCounter interface {
	// ConfiguredReplicas returns the configured replicas of the controller
	// named by owner in namespace; livePods is the number of its live pods.
	ConfiguredReplicas(namespace string, owner metav1.OwnerReference, livePods int) (int, error)
}

// GroupKey names a replica group: the direct controller of its pods.
type GroupKey struct {
	Namespace, Kind, Name string
}

// GroupStats are the counts of one replica group in one loop.
type GroupStats struct {
	Configured        int
	Live              int
	Pending           int
	Resizing          int
	EvictionTolerance int
	Evicted           int
	InPlaceInitiated  int
	// BelowMinReplicas marks a group kept only for in-place updates
	// (--in-place-skip-disruption-budget); it may not be evicted.
	BelowMinReplicas bool
}

// Running is the number of live pods that are not pending.
func (g *GroupStats) Running() int { return g.Live - g.Pending }

// Disruptable reports whether one more pod of the group may be disrupted:
// more pods must stay alive than configured minus the tolerance, except that
// a fully running group with zero tolerance may lose one pod per loop.
func (g *GroupStats) Disruptable() bool {
	shouldBeAlive := g.Configured - g.EvictionTolerance
	actuallyAlive := g.Running() - (g.Evicted + g.InPlaceInitiated)
	return actuallyAlive > shouldBeAlive ||
		(g.Configured == g.Running() && g.EvictionTolerance == 0 && g.Evicted == 0 && g.InPlaceInitiated == 0)
}

// Restrictions track the replica groups of one VPA's pods during one loop.
type Restrictions struct {
	now           time.Time
	groups        map[GroupKey]*GroupStats
	podGroup      map[types.UID]GroupKey
	skipBudget    bool
	resizeStarted func(*corev1.Pod) (time.Time, bool)
	// Skipped lists the groups left out, with the reason, for logging.
	Skipped map[GroupKey]string
}

// RestrictionOptions are the per-loop inputs of NewRestrictions besides the pods.
type RestrictionOptions struct {
	Config RestrictionConfig
	// VPA whose pods these are; its minReplicas and mode are read.
	VPA *vpav1.VerticalPodAutoscaler
	// Counter returns configured replicas.
	Counter ReplicaCounter
	// Now is the loop's time.
	Now time.Time
	// ResizeStarted returns when the pod's current resize started, if known;
	// an unknown start counts as now.
	ResizeStarted func(*corev1.Pod) (time.Time, bool)
	// KeepBoosted keeps a group with fewer live pods than required when one
	// of its pods carries a startup boost, so that it can be unboosted; the
	// group is marked BelowMinReplicas and is not otherwise disrupted.
	KeepBoosted bool
}

// wellKnownOwners are the controller kinds pods are grouped by.
var wellKnownOwners = map[string]bool{"ReplicaSet": true, "StatefulSet": true, "ReplicationController": true, "DaemonSet": true, "Job": true}

// NewRestrictions groups the live pods of one VPA by their direct
// controller. Pods without a well-known controller, and groups with fewer
// live pods than the required minimum (or whose replica count cannot be
// read), are left out: they can be neither evicted nor resized.
func NewRestrictions(o RestrictionOptions, pods []*corev1.Pod) *Restrictions {
	r := &Restrictions{
		now:           o.Now,
		groups:        map[GroupKey]*GroupStats{},
		podGroup:      map[types.UID]GroupKey{},
		resizeStarted: o.ResizeStarted,
		Skipped:       map[GroupKey]string{},
	}
	mode := vpav1.GetUpdateMode(o.VPA)
	inPlaceMode := mode == vpav1.UpdateModeInPlace || mode == vpav1.UpdateModeInPlaceOrRecreate
	r.skipBudget = o.Config.InPlaceSkipDisruptionBudget && inPlaceMode

	required := o.Config.MinReplicas
	if o.VPA != nil && o.VPA.Spec.UpdatePolicy != nil && o.VPA.Spec.UpdatePolicy.MinReplicas != nil {
		required = int(*o.VPA.Spec.UpdatePolicy.MinReplicas)
	}

	byGroup := map[GroupKey][]*corev1.Pod{}
	owners := map[GroupKey]metav1.OwnerReference{}
	for _, pod := range pods {
		owner := metav1.GetControllerOfNoCopy(pod)
		if owner == nil || !wellKnownOwners[owner.Kind] {
			continue
		}
		key := GroupKey{Namespace: pod.Namespace, Kind: owner.Kind, Name: owner.Name}
		byGroup[key] = append(byGroup[key], pod)
		owners[key] = *owner
	}
	for key, groupPods := range byGroup {
		stats := &GroupStats{Live: len(groupPods)}
		if stats.Live < required {
			if !r.skipBudget && !(o.KeepBoosted && anyBoosted(groupPods)) {
				r.Skipped[key] = fmt.Sprintf("%d live pods, fewer than the %d required", stats.Live, required)
				continue
			}
			stats.BelowMinReplicas = true
		}
		configured, err := o.Counter.ConfiguredReplicas(key.Namespace, owners[key], stats.Live)
		if err != nil {
			r.Skipped[key] = err.Error()
			continue
		}
		stats.Configured = configured
		stats.EvictionTolerance = int(float64(configured) * o.Config.EvictionTolerance)
		for _, pod := range groupPods {
			if pod.Status.Phase == corev1.PodPending {
				stats.Pending++
			}
			if Resizing(pod) {
				stats.Resizing++
			}
			r.podGroup[pod.UID] = key
		}
		r.groups[key] = stats
	}
	return r
}

// Group returns the stats of the pod's group, or nil when the pod is in none.
func (r *Restrictions) Group(pod *corev1.Pod) *GroupStats {
	key, ok := r.podGroup[pod.UID]
	if !ok {
		return nil
	}
	return r.groups[key]
}

// Groups returns every group kept for this loop.
func (r *Restrictions) Groups() map[GroupKey]*GroupStats { return r.groups }

// CanEvict reports whether the pod may be evicted now.
func (r *Restrictions) CanEvict(pod *corev1.Pod) bool {
	g := r.Group(pod)
	if g == nil {
		return false
	}
	if pod.Status.Phase == corev1.PodPending {
		return true
	}
	if g.BelowMinReplicas {
		return false
	}
	if Resizing(pod) {
		return r.canEvictResizingPod(pod, g)
	}
	return g.Disruptable()
}

// canEvictResizingPod applies the fallback timers of a resize in progress.
func (r *Restrictions) canEvictResizingPod(pod *corev1.Pod, g *GroupStats) bool {
	if g.BelowMinReplicas || !g.Disruptable() {
		return false
	}
	started := r.now
	if r.resizeStarted != nil {
		if t, ok := r.resizeStarted(pod); ok {
			started = t
		}
	}
	age := r.now.Sub(started)
	if c := condition(pod, corev1.PodResizePending); c != nil {
		switch c.Reason {
		case corev1.PodReasonDeferred:
			return age > DeferredResizeTimeout
		default: // Infeasible, or anything else
			return true
		}
	}
	if c := condition(pod, corev1.PodResizeInProgress); c != nil {
		if c.Reason == "" && c.Message == "" {
			return age > InProgressResizeTimeout
		}
		return true
	}
	return true
}

// InPlaceDecision is the outcome of CanInPlaceUpdate.
type InPlaceDecision string

const (
	// InPlaceApproved: resize now.
	InPlaceApproved InPlaceDecision = "Approved"
	// InPlaceDeferred: not now; try again in a later loop.
	InPlaceDeferred InPlaceDecision = "Deferred"
	// InPlaceInfeasible: the running resize is infeasible (InPlace mode).
	InPlaceInfeasible InPlaceDecision = "Infeasible"
	// InPlaceInfeasibleCached: an earlier attempt was infeasible and the
	// recommendation is not lower than it (InPlace mode); skip.
	InPlaceInfeasibleCached InPlaceDecision = "InfeasibleCached"
	// InPlaceEvict: give up on the resize and evict (InPlaceOrRecreate).
	InPlaceEvict InPlaceDecision = "Evict"
)

// CanInPlaceUpdate decides whether the pod may be resized in place now.
// hasRecommendation says whether the VPA has a recommendation;
// infeasibleCached whether an earlier infeasible attempt rules out the
// current recommendation.
func (r *Restrictions) CanInPlaceUpdate(pod *corev1.Pod, mode vpav1.UpdateMode, hasRecommendation, infeasibleCached bool) InPlaceDecision {
	g := r.Group(pod)
	switch {
	case g == nil, pod.Status.Phase == corev1.PodPending, !hasRecommendation:
		return InPlaceDeferred
	case mode == vpav1.UpdateModeInPlace && infeasibleCached:
		return InPlaceInfeasibleCached
	}
	if Resizing(pod) {
		if mode == vpav1.UpdateModeInPlace {
			if c := condition(pod, corev1.PodResizePending); c != nil && c.Reason == corev1.PodReasonInfeasible {
				return InPlaceInfeasible
			}
			return InPlaceDeferred
		}
		if r.canEvictResizingPod(pod, g) {
			return InPlaceEvict
		}
		return InPlaceDeferred
	}
	if r.skipBudget && !restartsOnResize(pod) {
		return InPlaceApproved
	}
	if g.BelowMinReplicas {
		return InPlaceDeferred
	}
	if g.Disruptable() {
		return InPlaceApproved
	}
	return InPlaceDeferred
}

// CanUnboost reports whether the pod's startup boost may be ended in place
// now: it is not pending, not resizing, and its group may lose one more pod
// to a disruption.
func (r *Restrictions) CanUnboost(pod *corev1.Pod) bool {
	g := r.Group(pod)
	if g == nil || pod.Status.Phase == corev1.PodPending || Resizing(pod) {
		return false
	}
	return g.Disruptable()
}

func anyBoosted(pods []*corev1.Pod) bool {
	for _, p := range pods {
		if len(boost.Containers(p)) > 0 {
			return true
		}
	}
	return false
}

// RecordEviction counts an eviction in the pod's group. A pending pod was
// not running, so its eviction takes nothing away from the group.
func (r *Restrictions) RecordEviction(pod *corev1.Pod) {
	if pod.Status.Phase == corev1.PodPending {
		return
	}
	if g := r.Group(pod); g != nil {
		g.Evicted++
	}
}

// RecordInPlaceUpdate counts a started resize in the pod's group.
func (r *Restrictions) RecordInPlaceUpdate(pod *corev1.Pod) {
	if g := r.Group(pod); g != nil {
		g.InPlaceInitiated++
	}
}

// Resizing reports whether the pod has a resize pending or in progress.
func Resizing(pod *corev1.Pod) bool {
	return condition(pod, corev1.PodResizePending) != nil || condition(pod, corev1.PodResizeInProgress) != nil
}

// ResizeInfeasible reports whether the pod's pending resize is infeasible.
func ResizeInfeasible(pod *corev1.Pod) bool {
	c := condition(pod, corev1.PodResizePending)
	return c != nil && c.Reason == corev1.PodReasonInfeasible
}

func condition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		c := &pod.Status.Conditions[i]
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return c
		}
	}
	return nil
}

func restartsOnResize(pod *corev1.Pod) bool {
	for _, c := range pod.Spec.Containers {
		for _, p := range c.ResizePolicy {
			if p.RestartPolicy == corev1.RestartContainer {
				return true
			}
		}
	}
	return false
}
