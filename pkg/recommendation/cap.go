package recommendation

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
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
func Cap(pod *corev1.Pod, rec *vpav1.RecommendedPodResources, policy *vpav1.PodResourcePolicy, lr LimitRanges) Capped {
	out := Capped{Notes: map[string][]string{}}
	if pod == nil || rec == nil {
		return out
	}
	recs, notes := capRecs(pod, rec, policy, lr, false, false)
	for i := range pod.Spec.Containers {
		if recs[i] == nil {
			continue
		}
		if notes != nil && len(notes[i]) > 0 {
			out.Notes[pod.Spec.Containers[i].Name] = notes[i]
		}
		out.Recommendation.ContainerRecommendations = append(out.Recommendation.ContainerRecommendations, *recs[i])
	}
	return out
}

// capRecs does the work of Cap and returns, per pod container, the capped
// recommendation (nil when the container gets none) and the notes on its
// target (notes is nil when there are none). With targetOnly, only Target is
// capped and the bounds are left empty; with shared too, a Target that
// capping does not change is the recommendation's own map, not a copy.
func capRecs(pod *corev1.Pod, rec *vpav1.RecommendedPodResources, policy *vpav1.PodResourcePolicy, lr LimitRanges, targetOnly, shared bool) ([]*vpav1.RecommendedContainerResources, [][]string) {
	n := len(pod.Spec.Containers)
	// w.recs[i] is the working copy for pod.Spec.Containers[i], nil when
	// the container gets no recommendation.
	w := working{recs: make([]*vpav1.RecommendedContainerResources, n)}
	var copies []vpav1.RecommendedContainerResources
	if targetOnly {
		copies = make([]vpav1.RecommendedContainerResources, n)
	}
	if shared {
		w.shared = make([]bool, n)
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		r := find(rec, c.Name)
		if r == nil {
			continue
		}
		cp := vpav1.GetContainerResourcePolicy(c.Name, policy)
		if cp.ScalingMode() == vpav1.ContainerScalingModeOff {
			continue
		}
		var target resourceList
		if targetOnly {
			target = resourceList{m: r.Target, shared: true}
			if !shared {
				target.own()
			}
			copies[i] = vpav1.RecommendedContainerResources{ContainerName: r.ContainerName}
			r = &copies[i]
		} else {
			r = r.DeepCopy()
			target = resourceList{m: r.Target}
			r.LowerBound = controlled(r.LowerBound, cp)
			r.UpperBound = controlled(r.UpperBound, cp)
		}
		target.keepControlled(cp)
		r.Target = target.m
		if shared {
			w.shared[i] = target.shared
		}
		w.recs[i] = r
	}
	bounds := []bound{boundUpper, boundTarget, boundLower}
	if targetOnly {
		bounds = bounds[1:2]
	}
	if lr.Pod != nil {
		for _, b := range bounds {
			for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				applyPodLimitRange(pod, &w, lr.Pod, name, b)
			}
		}
	}
	var notes [][]string
	for i := range pod.Spec.Containers {
		r := w.recs[i]
		if r == nil {
			continue
		}
		c := &pod.Spec.Containers[i]
		cp := vpav1.GetContainerResourcePolicy(c.Name, policy)
		target := w.list(i, boundTarget)
		if ns := capContainer(c, &target, cp, lr.Container); len(ns) > 0 {
			if notes == nil {
				notes = make([][]string, n)
			}
			notes[i] = ns
		}
		w.store(i, boundTarget, target)
		if !targetOnly {
			lower, upper := resourceList{m: r.LowerBound}, resourceList{m: r.UpperBound}
			capContainer(c, &lower, cp, lr.Container)
			capContainer(c, &upper, cp, lr.Container)
		}
	}
	return w.recs, notes
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
func applyPodLimitRange(pod *corev1.Pod, w *working, item *corev1.LimitRangeItem, name corev1.ResourceName, b bound) {
	recs := w.recs
	minLimit := item.Min[name]
	maxLimit := item.Max[name]
	defaultLimit := get(item.Default, name)
	var sumLimit, sumRec resource.Quantity
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		var recommended *resource.Quantity
		if recs[i] != nil {
			recommended = get(field(recs[i], b), name)
		}
		if recommended == nil {
			// Containers without a recommendation keep their requests and
			// still count towards the pod total.
			recommended = get(c.Resources.Requests, name)
		}
		if recommended == nil {
			continue
		}
		if l, ok, _ := ProportionalLimit(name, get(c.Resources.Limits, name), get(c.Resources.Requests, name), recommended, defaultLimit); ok {
			sumLimit.Add(l)
		}
		sumRec.Add(*recommended)
	}
	if minLimit.Cmp(sumLimit) <= 0 && minLimit.Cmp(sumRec) <= 0 && (maxLimit.IsZero() || maxLimit.Cmp(sumLimit) >= 0) {
		return
	}
	if minLimit.Cmp(sumRec) > 0 && !sumLimit.IsZero() && !sumRec.IsZero() {
		forEachField(w, b, name, func(q resource.Quantity) resource.Quantity {
			v, _ := scale(name, q, sumRec, minLimit, roundUp)
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
	forEachField(w, b, name, func(q resource.Quantity) resource.Quantity {
		v, _ := scale(name, q, sumLimit, targetTotal, roundDown)
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

// capContainer caps one recommendation field and returns the notes.
func capContainer(c *corev1.Container, l *resourceList, cp *vpav1.ContainerResourcePolicy, item *corev1.LimitRangeItem) []string {
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
	if cp != nil {
		for _, name := range names {
			notes = capTo(l, name, get(cp.MinAllowed, name), get(cp.MaxAllowed, name), NoteMinAllowed, NoteMaxAllowed, notes)
		}
	}
	if cp.ControlledValuesOrDefault() == vpav1.ContainerControlledValuesRequestsOnly {
		for _, name := range names {
			limit := get(c.Resources.Limits, name)
			if limit == nil || limit.IsZero() {
				continue
			}
			if q := l.m[name]; q.MilliValue() > limit.MilliValue() {
				l.set(name, limit.DeepCopy())
				notes = append(notes, fmt.Sprintf("%s %s", name, NoteContainerLimit))
			}
		}
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
