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

// bound selects one of the recommendation fields.
type bound int

const (
	boundTarget bound = iota
	boundLower
	boundUpper
)

var (
	// allBounds are the fields Cap caps, in the order the stages take
	// them.
	allBounds = []bound{boundUpper, boundTarget, boundLower}
	// targetBound is the field ForPod caps.
	targetBound = allBounds[1:2]
)

// working is what the capping stages pass on: the pod and the rules being
// applied, and per pod container (same index) the recommendation so far.
type working struct {
	pod    *corev1.Pod
	policy *vpav1.PodResourcePolicy
	lr     limitrange.Merged
	// bounds are the recommendation fields being capped.
	bounds []bound
	// recs[i] is the working copy for pod.Spec.Containers[i], nil when
	// the container gets no recommendation.
	recs []*vpav1.RecommendedContainerResources
	// shared[i] says recs[i].Target is still the input's map; nil when
	// every map is a copy.
	shared []bool
	// inserted[i] says recs[i] was made from the container's requests
	// because a Pod LimitRange applies and the recommendation has no
	// entry for it.
	inserted []bool
	// notes[i] says what capped the target; notes is nil when there are
	// none.
	notes [][]string
	// fit is what the node fit stage fits the pod to.
	fit Fit
	// nodeCap says how the node fit stage capped the target; nil when it
	// did not.
	nodeCap *NodeCap
}

// containerPolicy returns the VPA policy of pod container i.
func (w *working) containerPolicy(i int) *vpav1.ContainerResourcePolicy {
	return vpav1.GetContainerResourcePolicy(w.pod.Spec.Containers[i].Name, w.policy)
}

// each calls f on every field being capped of every container's
// recommendation, stores the field f returns and keeps the notes f returns
// for the target. (The field goes by value so that it stays on the stack.)
func (w *working) each(f func(i int, l resourceList) (resourceList, []string)) {
	for i, r := range w.recs {
		if r == nil {
			continue
		}
		for _, b := range w.bounds {
			l, ns := f(i, w.list(i, b))
			w.store(i, b, l)
			if b == boundTarget && len(ns) > 0 {
				w.addNotes(i, ns)
			}
		}
	}
}

func (w *working) addNotes(i int, ns []string) {
	if w.notes == nil {
		w.notes = make([][]string, len(w.recs))
	}
	w.notes[i] = append(w.notes[i], ns...)
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

// clamp raises one resource to lo or lowers it to hi (a nil or zero bound
// does not apply) and appends a note for each: "<resource> <loNote>".
func (l *resourceList) clamp(name corev1.ResourceName, lo, hi *resource.Quantity, loNote, hiNote string, notes []string) []string {
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
