package target

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
)

// Stronger reports whether a should control a pod rather than b when both
// match it: the older VPA wins, then the lexically smaller name.
func Stronger(a, b *vpav1.VerticalPodAutoscaler) bool {
	at, bt := a.CreationTimestamp, b.CreationTimestamp
	if !at.Equal(&bt) {
		return at.Before(&bt)
	}
	return a.Name < b.Name
}

// Matcher finds the VPAs of a pod among resolved Targets.
type Matcher struct {
	byNamespace map[string][]*Target
}

// NewMatcher indexes targets by namespace. Entries with a nil VPA or selector
// are ignored.
func NewMatcher(targets []*Target) *Matcher {
	m := &Matcher{byNamespace: map[string][]*Target{}}
	for _, t := range targets {
		if t == nil || t.VPA == nil || t.Selector == nil {
			continue
		}
		m.byNamespace[t.VPA.Namespace] = append(m.byNamespace[t.VPA.Namespace], t)
	}
	for _, ts := range m.byNamespace {
		sort.Slice(ts, func(i, j int) bool { return Stronger(ts[i].VPA, ts[j].VPA) })
	}
	return m
}

// ControllingVPA returns the Target controlling the pod, given the pod's
// topmost controller (from Resolver.PodController): same namespace, targetRef
// naming that controller, selector matching the pod's labels; the Stronger VPA
// wins. It returns nil when podController is nil or nothing matches.
func (m *Matcher) ControllingVPA(pod *corev1.Pod, podController *Ref) *Target {
	if podController == nil {
		return nil
	}
	set := labels.Set(pod.Labels)
	for _, t := range m.byNamespace[pod.Namespace] { // strongest first
		if t.Ref.Kind == podController.Kind && t.Ref.Name == podController.Name && t.Selector.Matches(set) {
			return t
		}
	}
	return nil
}

// Selecting returns every Target in a pod's namespace whose selector matches
// the pod's labels, strongest first.
func (m *Matcher) Selecting(namespace string, podLabels map[string]string) []*Target {
	var out []*Target
	set := labels.Set(podLabels)
	for _, t := range m.byNamespace[namespace] {
		if t.Selector.Matches(set) {
			out = append(out, t)
		}
	}
	return out
}

// Len returns the number of indexed targets.
func (m *Matcher) Len() int {
	n := 0
	for _, ts := range m.byNamespace {
		n += len(ts)
	}
	return n
}
