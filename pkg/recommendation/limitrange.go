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
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Notes added when the container LimitRange caps a target; the vpaUpdates
// annotation and the updater's events show every note as
// "<resource> <note>".
const (
	NoteLimitRangeMin = "capped to fit Min in container LimitRange"
	NoteLimitRangeMax = "capped to fit Max in container LimitRange"
)

// The LimitRange stages. What the LimitRanges allow is pkg/limitrange's
// (merged per namespace by limitrange.Merge); these stages fit a
// recommendation into it: first the pod's totals, then each container.

// podLimitRange is the Pod LimitRange stage: for each field, cpu and memory,
// the containers' recommendations are scaled together so that the pod
// total fits the Pod LimitRange.
func podLimitRange(w *working) {
	if w.lr.Pod == nil {
		return
	}
	for _, b := range w.bounds {
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			fitPodTotal(w, w.lr.Pod, name, b)
		}
	}
}

// fitPodTotal scales one field of every container's recommendation so
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
func fitPodTotal(w *working, item *corev1.LimitRangeItem, name corev1.ResourceName, b bound) {
	pod, recs := w.pod, w.recs
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
		scaleField(w, b, name, from, to, roundUp)
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
	scaleField(w, b, name, from, to, roundDown)
}

// scaleField multiplies one resource of one field of every container's
// recommendation by to/from.
func scaleField(w *working, b bound, name corev1.ResourceName, from, to resource.Quantity, r rounding) {
	for i, rec := range w.recs {
		if rec == nil {
			continue
		}
		l := w.list(i, b)
		if q, ok := l.m[name]; ok {
			v, _ := scale(name, q, from, to, r)
			l.set(name, v)
			w.store(i, b, l)
		}
	}
}

// containerLimitRange is the container LimitRange stage: every field is
// kept within the container LimitRange's min and max, which bound limits
// and so are converted to bounds on the request with the container's
// limit:request ratio (the LimitRange default limit standing in for a
// missing limit).
func containerLimitRange(w *working) {
	item := w.lr.Container
	if item == nil {
		return
	}
	w.each(func(i int, l resourceList) (resourceList, []string) {
		if len(l.m) == 0 {
			return l, nil
		}
		c := &w.pod.Spec.Containers[i]
		var notes []string
		var buf [4]corev1.ResourceName
		for _, name := range sortedNames(l.m, buf[:0]) {
			def := get(item.Default, name)
			minReq := boundaryRequest(name, c, get(item.Min, name), def)
			if m := get(item.Min, name); m != nil && !m.IsZero() && (minReq == nil || m.Cmp(*minReq) > 0) {
				minReq = m
			}
			maxReq := boundaryRequest(name, c, get(item.Max, name), def)
			notes = l.clamp(name, minReq, maxReq, NoteLimitRangeMin, NoteLimitRangeMax, notes)
		}
		return l, notes
	})
}

// boundaryRequest converts a LimitRange bound on the limit into a bound on the
// request, using the container's limit:request ratio. It returns nil when no
// bound applies.
func boundaryRequest(name corev1.ResourceName, c *corev1.Container, bound, defaultLimit *resource.Quantity) *resource.Quantity {
	if bound == nil || bound.IsZero() {
		return nil
	}
	limit := get(c.Resources.Limits, name)
	if limit == nil || limit.IsZero() {
		limit = defaultLimit
	}
	if limit == nil || limit.IsZero() {
		return nil
	}
	request := get(c.Resources.Requests, name)
	if request == nil || request.IsZero() {
		b := bound.DeepCopy()
		return &b
	}
	r, _ := scale(name, *request, *limit, *bound, roundDown)
	return &r
}
