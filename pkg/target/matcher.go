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

package target

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

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

// Matcher finds the VPAs of a pod among resolved Targets. Targets are
// indexed by namespace and by one equality requirement of their selector
// (app=web, or each value of app in (web, api)), so that finding a pod's
// VPAs costs a lookup per pod label plus the targets whose selectors have no
// such requirement, instead of every selector of the namespace: with 10,000
// VPAs in one namespace, a loop over 10,000 pods matched 10^8 selectors.
type Matcher struct {
	byNamespace map[string]*namespaceIndex
}

type namespaceIndex struct {
	// byLabel maps "key\x00value" to the targets indexed under it.
	byLabel map[string][]*Target
	// rest are the targets whose selectors have no equality requirement.
	rest []*Target
	n    int
}

func labelKey(k, v string) string { return k + "\x00" + v }

// NewMatcher indexes targets. Entries with a nil VPA or selector are ignored.
func NewMatcher(targets []*Target) *Matcher {
	m := &Matcher{byNamespace: map[string]*namespaceIndex{}}
	for _, t := range targets {
		if t == nil || t.VPA == nil || t.Selector == nil {
			continue
		}
		ix, ok := m.byNamespace[t.VPA.Namespace]
		if !ok {
			ix = &namespaceIndex{byLabel: map[string][]*Target{}}
			m.byNamespace[t.VPA.Namespace] = ix
		}
		ix.n++
		keys := indexKeys(t.Selector)
		if len(keys) == 0 {
			ix.rest = append(ix.rest, t)
			continue
		}
		for _, k := range keys {
			ix.byLabel[k] = append(ix.byLabel[k], t)
		}
	}
	return m
}

// indexKeys returns the label keys a selector can be indexed under: the
// values of its first requirement that a matching pod's label must equal.
// A pod has one value per key, so it finds a target under at most one key.
func indexKeys(sel labels.Selector) []string {
	reqs, selectable := sel.Requirements()
	if !selectable {
		return nil
	}
	for _, r := range reqs {
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
			vals := r.Values().List()
			keys := make([]string, 0, len(vals))
			for _, v := range vals {
				keys = append(keys, labelKey(r.Key(), v))
			}
			return keys
		}
	}
	return nil
}

// candidates returns the targets of the namespace that may select a pod
// with these labels, not yet checked against their selectors.
func (m *Matcher) candidates(namespace string, podLabels map[string]string) []*Target {
	ix, ok := m.byNamespace[namespace]
	if !ok {
		return nil
	}
	out := append([]*Target(nil), ix.rest...)
	for k, v := range podLabels {
		out = append(out, ix.byLabel[labelKey(k, v)]...)
	}
	return out
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
	var best *Target
	for _, t := range m.candidates(pod.Namespace, pod.Labels) {
		if t.Ref.Kind == podController.Kind && t.Ref.Name == podController.Name && t.Selector.Matches(set) &&
			(best == nil || Stronger(t.VPA, best.VPA)) {
			best = t
		}
	}
	return best
}

// Selecting returns every Target in a pod's namespace whose selector matches
// the pod's labels, strongest first.
func (m *Matcher) Selecting(namespace string, podLabels map[string]string) []*Target {
	var out []*Target
	set := labels.Set(podLabels)
	for _, t := range m.candidates(namespace, podLabels) {
		if t.Selector.Matches(set) {
			out = append(out, t)
		}
	}
	if len(out) > 1 {
		sort.Slice(out, func(i, j int) bool { return Stronger(out[i].VPA, out[j].VPA) })
	}
	return out
}

// Len returns the number of indexed targets.
func (m *Matcher) Len() int {
	n := 0
	for _, ix := range m.byNamespace {
		n += ix.n
	}
	return n
}
