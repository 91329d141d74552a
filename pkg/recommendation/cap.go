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
	"k8s.io/apimachinery/pkg/api/resource"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/limitrange"
)

// Notes added when a target is capped; the vpaUpdates annotation and the
// updater's events show them as "<resource> <note>".
const (
	NoteMinAllowed     = "capped to minAllowed"
	NoteMaxAllowed     = "capped to maxAllowed"
	NoteContainerLimit = "capped to container limit"
	NoteLimitRangeMin  = "capped to fit Min in container LimitRange"
	NoteLimitRangeMax  = "capped to fit Max in container LimitRange"
)

// bound selects one of the recommendation fields.
type bound int

const (
	boundTarget bound = iota
	boundLower
	boundUpper
)

// Capped is the result of Cap.
type Capped struct {
	// Recommendation holds, in pod container order, one entry per container
	// that has a recommendation, is in scaling mode Auto and exists in the
	// pod. Target, LowerBound and UpperBound are capped; UncappedTarget is
	// copied unchanged.
	Recommendation vpav1.RecommendedPodResources
	// Notes maps a container name to what capped its target, e.g.
	// "cpu capped to maxAllowed".
	Notes map[string][]string
}

// Cap applies the pod LimitRange, the container LimitRange, the VPA container
// policies and (for RequestsOnly) the containers' current limits to rec, for
// the given pod. rec may be nil. The inputs are not modified.
//
// Containers without a recommendation count towards a Pod LimitRange with
// their current requests and are scaled with the others (as upstream does),
// but only ForPod returns what they get: Cap's result holds the containers
// the recommendation names.
func Cap(pod *corev1.Pod, rec *vpav1.RecommendedPodResources, policy *vpav1.PodResourcePolicy, lr limitrange.Merged) Capped {
	out := Capped{Notes: map[string][]string{}}
	if pod == nil || rec == nil {
		return out
	}
	c := capRecs(pod, rec, policy, lr, capOptions{})
	for i := range pod.Spec.Containers {
		if c.recs[i] == nil || c.inserted[i] {
			continue
		}
		if c.notes != nil && len(c.notes[i]) > 0 {
			out.Notes[pod.Spec.Containers[i].Name] = c.notes[i]
		}
		out.Recommendation.ContainerRecommendations = append(out.Recommendation.ContainerRecommendations, *c.recs[i])
	}
	return out
}

// capOptions select what capRecs does beyond capping every bound.
type capOptions struct {
	// targetOnly caps only Target and leaves the bounds empty.
	targetOnly bool
	// shared (with targetOnly) leaves a Target that capping does not
	// change as the recommendation's own map rather than a copy.
	shared bool
	// policyFirst applies the VPA's minAllowed and maxAllowed before the
	// LimitRanges instead of after them, so that the LimitRanges win. It
	// is the fallback when the upstream order gives a pod the API server
	// would refuse.
	policyFirst bool
}

// capped is what capRecs returns, per pod container (same index).
type capped struct {
	// recs[i] is the capped recommendation, nil when the container gets
	// none.
	recs []*vpav1.RecommendedContainerResources
	// inserted[i] says recs[i] was made from the container's requests
	// because a Pod LimitRange applies and the recommendation has no
	// entry for it.
	inserted []bool
	// notes[i] says what capped the target; notes is nil when there are
	// none.
	notes [][]string
}

// capRecs does the work of Cap and ForPod.
func capRecs(pod *corev1.Pod, rec *vpav1.RecommendedPodResources, policy *vpav1.PodResourcePolicy, lr limitrange.Merged, opts capOptions) capped {
	n := len(pod.Spec.Containers)
	// w.recs[i] is the working copy for pod.Spec.Containers[i], nil when
	// the container gets no recommendation.
	w := working{recs: make([]*vpav1.RecommendedContainerResources, n)}
	out := capped{inserted: make([]bool, n)}
	var copies []vpav1.RecommendedContainerResources
	if opts.targetOnly || lr.Pod != nil {
		copies = make([]vpav1.RecommendedContainerResources, n)
	}
	if opts.shared {
		w.shared = make([]bool, n)
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		cp := vpav1.GetContainerResourcePolicy(c.Name, policy)
		if cp.ScalingMode() == vpav1.ContainerScalingModeOff {
			continue
		}
		r := find(rec, c.Name)
		var target resourceList
		switch {
		case r == nil && lr.Pod != nil && len(c.Resources.Requests) > 0:
			// Upstream's rule: under a Pod LimitRange, a container the
			// recommendation does not cover is scaled with the others,
			// starting from its requests. Its bounds (when capped) start
			// from its requests too, so that they scale like the target.
			target = resourceList{m: c.Resources.Requests, shared: true}
			copies[i] = vpav1.RecommendedContainerResources{ContainerName: c.Name}
			r = &copies[i]
			if !opts.targetOnly {
				r.LowerBound = controlled(c.Resources.Requests.DeepCopy(), cp)
				r.UpperBound = controlled(c.Resources.Requests.DeepCopy(), cp)
			}
			out.inserted[i] = true
		case r == nil:
			continue
		case opts.targetOnly:
			target = resourceList{m: r.Target, shared: true}
			copies[i] = vpav1.RecommendedContainerResources{ContainerName: r.ContainerName}
			r = &copies[i]
		default:
			r = r.DeepCopy()
			target = resourceList{m: r.Target}
			r.LowerBound = controlled(r.LowerBound, cp)
			r.UpperBound = controlled(r.UpperBound, cp)
		}
		if target.shared && !opts.shared {
			target.own()
		}
		target.keepControlled(cp)
		r.Target = target.m
		if opts.shared {
			w.shared[i] = target.shared
		}
		w.recs[i] = r
	}
	bounds := []bound{boundUpper, boundTarget, boundLower}
	if opts.targetOnly {
		bounds = bounds[1:2]
	}
	if opts.policyFirst && policy != nil {
		for i, r := range w.recs {
			if r == nil {
				continue
			}
			cp := vpav1.GetContainerResourcePolicy(pod.Spec.Containers[i].Name, policy)
			for _, b := range bounds {
				l := w.list(i, b)
				ns := capPolicy(&l, cp, nil)
				w.store(i, b, l)
				if b == boundTarget && len(ns) > 0 {
					out.addNotes(n, i, ns)
				}
			}
		}
	}
	if lr.Pod != nil {
		for _, b := range bounds {
			for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				applyPodLimitRange(pod, &w, lr.Pod, name, b)
			}
		}
	}
	for i := range pod.Spec.Containers {
		r := w.recs[i]
		if r == nil {
			continue
		}
		c := &pod.Spec.Containers[i]
		cp := vpav1.GetContainerResourcePolicy(c.Name, policy)
		target := w.list(i, boundTarget)
		if ns := capContainer(c, &target, cp, lr.Container, !opts.policyFirst); len(ns) > 0 {
			out.addNotes(n, i, ns)
		}
		w.store(i, boundTarget, target)
		if !opts.targetOnly {
			lower, upper := w.list(i, boundLower), w.list(i, boundUpper)
			capContainer(c, &lower, cp, lr.Container, !opts.policyFirst)
			capContainer(c, &upper, cp, lr.Container, !opts.policyFirst)
			w.store(i, boundLower, lower)
			w.store(i, boundUpper, upper)
		}
	}
	out.recs = w.recs
	return out
}

func (c *capped) addNotes(n, i int, ns []string) {
	if c.notes == nil {
		c.notes = make([][]string, n)
	}
	c.notes[i] = append(c.notes[i], ns...)
}

// working holds the recommendations being capped.
type working struct {
	recs []*vpav1.RecommendedContainerResources
	// shared[i] says recs[i].Target is still the input's map; nil when
	// every map is a copy.
	shared []bool
}

// list returns one field of recs[i] for capping.
func (w *working) list(i int, b bound) resourceList {
	return resourceList{m: field(w.recs[i], b), shared: b == boundTarget && w.shared != nil && w.shared[i]}
}

// store puts back a field list returned, possibly copied since.
func (w *working) store(i int, b bound, l resourceList) {
	r := w.recs[i]
	switch b {
	case boundLower:
		r.LowerBound = l.m
	case boundUpper:
		r.UpperBound = l.m
	default:
		r.Target = l.m
	}
	if b == boundTarget && w.shared != nil {
		w.shared[i] = l.shared
	}
}

// resourceList is a list being capped that is copied before its first
// change while it is shared with the input.
type resourceList struct {
	m      corev1.ResourceList
	shared bool
}

func (l *resourceList) own() {
	if l.shared {
		l.m = l.m.DeepCopy()
		l.shared = false
	}
}

func (l *resourceList) set(name corev1.ResourceName, q resource.Quantity) {
	l.own()
	l.m[name] = q
}

// keepControlled drops the resources the policy does not control.
func (l *resourceList) keepControlled(cp *vpav1.ContainerResourcePolicy) {
	for name := range l.m {
		if !cp.Controls(name) {
			l.own()
			break
		}
	}
	if l.shared {
		return
	}
	l.m = controlled(l.m, cp)
}

func find(rec *vpav1.RecommendedPodResources, name string) *vpav1.RecommendedContainerResources {
	for i := range rec.ContainerRecommendations {
		if rec.ContainerRecommendations[i].ContainerName == name {
			return &rec.ContainerRecommendations[i]
		}
	}
	return nil
}

// controlled drops the resources the policy does not control.
func controlled(l corev1.ResourceList, cp *vpav1.ContainerResourcePolicy) corev1.ResourceList {
	if l == nil {
		return nil
	}
	for name := range l {
		if !cp.Controls(name) {
			delete(l, name)
		}
	}
	return l
}

func field(r *vpav1.RecommendedContainerResources, b bound) corev1.ResourceList {
	switch b {
	case boundLower:
		return r.LowerBound
	case boundUpper:
		return r.UpperBound
	default:
		return r.Target
	}
}

// applyPodLimitRange scales one field of every container's recommendation so
// that the pod total of one resource fits the Pod LimitRange.
//
// Upstream's arithmetic: the pod totals are the sums of the recommendations
// and of their proportional limits; a total of recommendations below min is
// scaled up to min, otherwise a total of limits outside [min, max] is scaled
// onto the bound. A container that cannot be scaled (scaling mode Off, or a
// resource its policy does not control) keeps its value, so the others are
// scaled by the share left to them: with no such container this is
// upstream's factor exactly, and with one it still makes the pod fit, where
// upstream's factor would leave it above max.
func applyPodLimitRange(pod *corev1.Pod, w *working, item *corev1.LimitRangeItem, name corev1.ResourceName, b bound) {
	recs := w.recs
	minLimit := item.Min[name]
	maxLimit := item.Max[name]
	defaultLimit := get(item.Default, name)
	var sumLimit, sumRec, fixedLimit, fixedRec resource.Quantity
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		var recommended *resource.Quantity
		if recs[i] != nil {
			recommended = get(field(recs[i], b), name)
		}
		fixed := recommended == nil
		if fixed {
			// Containers that are not scaled keep their requests and
			// still count towards the pod total.
			recommended = get(c.Resources.Requests, name)
		}
		if recommended == nil {
			continue
		}
		if l, ok, _ := ProportionalLimit(name, get(c.Resources.Limits, name), get(c.Resources.Requests, name), recommended, defaultLimit); ok {
			sumLimit.Add(l)
			if fixed {
				fixedLimit.Add(l)
			}
		}
		sumRec.Add(*recommended)
		if fixed {
			fixedRec.Add(*recommended)
		}
	}
	if minLimit.Cmp(sumLimit) <= 0 && minLimit.Cmp(sumRec) <= 0 && (maxLimit.IsZero() || maxLimit.Cmp(sumLimit) >= 0) {
		return
	}
	// Upstream scales up only when some container has a limit; without
	// limits its pod stays below min and is refused, so here the requests
	// are scaled up either way.
	if minLimit.Cmp(sumRec) > 0 && !sumRec.IsZero() {
		from, to := sumRec.DeepCopy(), minLimit.DeepCopy()
		from.Sub(fixedRec)
		to.Sub(fixedRec)
		if from.Sign() <= 0 || to.Sign() <= 0 {
			return
		}
		forEachField(w, b, name, func(q resource.Quantity) resource.Quantity {
			v, _ := scale(name, q, from, to, roundUp)
			return v
		})
		return
	}
	if sumLimit.IsZero() {
		return
	}
	var targetTotal resource.Quantity
	if minLimit.Cmp(sumLimit) > 0 {
		targetTotal = minLimit
	}
	if !maxLimit.IsZero() && maxLimit.Cmp(sumLimit) < 0 {
		targetTotal = maxLimit
	}
	from, to := sumLimit.DeepCopy(), targetTotal.DeepCopy()
	from.Sub(fixedLimit)
	to.Sub(fixedLimit)
	if from.Sign() <= 0 || to.Sign() <= 0 {
		// The containers that cannot be scaled alone break the bound.
		return
	}
	forEachField(w, b, name, func(q resource.Quantity) resource.Quantity {
		v, _ := scale(name, q, from, to, roundDown)
		return v
	})
}

func forEachField(w *working, b bound, name corev1.ResourceName, f func(resource.Quantity) resource.Quantity) {
	for i, r := range w.recs {
		if r == nil {
			continue
		}
		l := w.list(i, b)
		if q, ok := l.m[name]; ok {
			l.set(name, f(q))
			w.store(i, b, l)
		}
	}
}

// capContainer caps one recommendation field and returns the notes: the
// container LimitRange, then (withPolicy) the VPA's minAllowed and
// maxAllowed, then for RequestsOnly the container's limit.
func capContainer(c *corev1.Container, l *resourceList, cp *vpav1.ContainerResourcePolicy, item *corev1.LimitRangeItem, withPolicy bool) []string {
	if len(l.m) == 0 {
		return nil
	}
	var notes []string
	var buf [4]corev1.ResourceName
	names := sortedNames(l.m, buf[:0])
	if item != nil {
		for _, name := range names {
			def := get(item.Default, name)
			minReq := boundaryRequest(name, c, get(item.Min, name), def)
			if m := get(item.Min, name); m != nil && !m.IsZero() && (minReq == nil || m.Cmp(*minReq) > 0) {
				minReq = m
			}
			maxReq := boundaryRequest(name, c, get(item.Max, name), def)
			notes = capTo(l, name, minReq, maxReq, NoteLimitRangeMin, NoteLimitRangeMax, notes)
		}
	}
	if withPolicy {
		notes = capPolicy(l, cp, notes)
	}
	if cp.ControlledValuesOrDefault() == vpav1.ContainerControlledValuesRequestsOnly {
		for _, name := range names {
			limit := get(c.Resources.Limits, name)
			if limit == nil || limit.IsZero() {
				continue
			}
			if q := l.m[name]; compareUnits(q, *limit) > 0 {
				l.set(name, limit.DeepCopy())
				notes = append(notes, fmt.Sprintf("%s %s", name, NoteContainerLimit))
			}
		}
	}
	return notes
}

// capPolicy caps one recommendation field to the VPA's minAllowed and
// maxAllowed and appends the notes.
func capPolicy(l *resourceList, cp *vpav1.ContainerResourcePolicy, notes []string) []string {
	if cp == nil || len(l.m) == 0 {
		return notes
	}
	var buf [4]corev1.ResourceName
	for _, name := range sortedNames(l.m, buf[:0]) {
		notes = capTo(l, name, get(cp.MinAllowed, name), get(cp.MaxAllowed, name), NoteMinAllowed, NoteMaxAllowed, notes)
	}
	return notes
}

func capTo(l *resourceList, name corev1.ResourceName, lo, hi *resource.Quantity, loNote, hiNote string, notes []string) []string {
	q := l.m[name]
	if lo != nil && !lo.IsZero() && q.Cmp(*lo) < 0 {
		q = lo.DeepCopy()
		l.set(name, q)
		notes = append(notes, fmt.Sprintf("%s %s", name, loNote))
	}
	if hi != nil && !hi.IsZero() && q.Cmp(*hi) > 0 {
		l.set(name, hi.DeepCopy())
		notes = append(notes, fmt.Sprintf("%s %s", name, hiNote))
	}
	return notes
}
