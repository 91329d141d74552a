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
	"math/bits"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/nodefit"
)

// NoteNodeFit is the start of the note on a target capped to fit a node:
// "cpu capped to fit node <name>".
const NoteNodeFit = "capped to fit node"

// NodeCap says how the node fit stage capped a recommendation field.
type NodeCap struct {
	// Room is the node chosen (nodefit.Best): the eligible node that holds
	// the most of the recommendation.
	nodefit.Room
	// Wanted is what the capped containers asked for together, Allowed what
	// the node leaves them once the pod's other containers have theirs.
	Wanted, Allowed nodefit.Amounts
	// Resources are the resources capped, cpu before memory.
	Resources []corev1.ResourceName
}

// nodeFit is the node fit stage: for each field being capped, when the pod
// with the recommended containers at that field fits no eligible node
// (Fit.Nodes), every recommended container's cpu, or memory, is scaled down
// by the same factor so that the pod fits the node that holds the most of
// it (nodefit.Best). The pod's other containers, the resources the VPA does
// not control, native sidecars, init containers and the overhead keep what
// they request. With no eligible node, or none that holds even the rest of
// the pod, nothing is capped: the pod is unschedulable whatever its
// requests.
func nodeFit(w *working) {
	if w.fit.Nodes == nil {
		return
	}
	for _, b := range w.bounds {
		d, want := nodeDemand(w, b)
		choice, ok := nodefit.Best(w.fit.Nodes, d, want)
		if !ok || choice.Fits {
			continue
		}
		nc := &NodeCap{Room: choice.Room, Wanted: want, Allowed: choice.Allowed}
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if want.Get(name) > choice.Allowed.Get(name) {
				nc.Resources = append(nc.Resources, name)
			}
		}
		for i := range w.recs {
			if w.recs[i] == nil {
				continue
			}
			l := w.list(i, b)
			var notes []string
			for _, name := range nc.Resources {
				q, ok := l.m[name]
				if !ok {
					continue
				}
				l.set(name, scaledDown(name, q, choice.Allowed.Get(name), want.Get(name)))
				notes = append(notes, fmt.Sprintf("%s %s %s", name, NoteNodeFit, choice.Node))
			}
			w.store(i, b, l)
			if b == boundTarget && len(notes) > 0 {
				w.addNotes(i, notes)
			}
		}
		if b == boundTarget {
			w.nodeCap = nc
		}
	}
}

// nodeDemand splits the pod's requests, with the recommended containers at
// field b, into what the plan sets (want) and the rest (nodefit.Demand).
func nodeDemand(w *working, b bound) (nodefit.Demand, nodefit.Amounts) {
	pod := w.pod
	var d nodefit.Demand
	var want nodefit.Amounts
	for i := range pod.Spec.Containers {
		own := nodefit.AmountsOf(pod.Spec.Containers[i].Resources.Requests)
		if w.recs[i] == nil {
			d.Fixed = d.Fixed.Add(own)
			continue
		}
		l := field(w.recs[i], b)
		if q, ok := l[corev1.ResourceCPU]; ok {
			want.CPU += q.MilliValue()
		} else {
			d.Fixed.CPU += own.CPU
		}
		if q, ok := l[corev1.ResourceMemory]; ok {
			want.Memory += q.Value()
		} else {
			d.Fixed.Memory += own.Memory
		}
	}
	// Init containers as the scheduler counts them: native sidecars run
	// beside the containers, the others each need their request and the
	// sidecars started before them.
	var sidecars nodefit.Amounts
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		own := nodefit.AmountsOf(c.Resources.Requests)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars = sidecars.Add(own)
			d.Floor = d.Floor.Max(sidecars)
			continue
		}
		d.Floor = d.Floor.Max(own.Add(sidecars))
	}
	d.Fixed = d.Fixed.Add(sidecars)
	if r := pod.Spec.Resources; r != nil {
		if q, ok := r.Requests[corev1.ResourceCPU]; ok {
			d.PinnedCPU, d.Fixed.CPU, want.CPU = true, q.MilliValue(), 0
		}
		if q, ok := r.Requests[corev1.ResourceMemory]; ok {
			d.PinnedMemory, d.Fixed.Memory, want.Memory = true, q.Value(), 0
		}
	}
	overhead := nodefit.AmountsOf(pod.Spec.Overhead)
	d.Fixed, d.Floor = d.Fixed.Add(overhead), d.Floor.Add(overhead)
	return d, want
}

// scaledDown returns q × allowed / want (allowed < want), rounded down to a
// millicore, or for memory of at least 1Mi to a whole Mi, so that the
// scaled containers together stay within allowed.
func scaledDown(name corev1.ResourceName, q resource.Quantity, allowed, want int64) resource.Quantity {
	if name == corev1.ResourceCPU {
		return *resource.NewMilliQuantity(mulDiv(q.MilliValue(), allowed, want), q.Format)
	}
	v := mulDiv(q.Value(), allowed, want)
	if v >= mi {
		v -= v % mi
	}
	return *resource.NewQuantity(v, q.Format)
}

const mi = 1 << 20

// mulDiv is v × num / den rounded down, for 0 ≤ num < den and v ≥ 0,
// without overflow.
func mulDiv(v, num, den int64) int64 {
	if v <= 0 || num <= 0 || den <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(v), uint64(num))
	q, _ := bits.Div64(hi, lo, uint64(den)) // hi < den as num < den
	return int64(q)
}

// mulDivCeil is mulDiv rounded up.
func mulDivCeil(v, num, den int64) int64 {
	if v <= 0 || num <= 0 || den <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(v), uint64(num))
	q, r := bits.Div64(hi, lo, uint64(den))
	if r != 0 {
		q++
	}
	return int64(q)
}

// FitToNodes caps the target and both bounds of a recommendation, as the
// recommender writes it, so that pod fits an eligible node (rooms; nil caps
// nothing): the node fit stage alone, on the containers of rec that pod has
// (the others are left as they are). UncappedTarget is left as it is. rec
// is not modified, and is returned as it is when nothing needs capping. The
// NodeCap says how the target was capped, nil when it was not.
func FitToNodes(pod *corev1.Pod, rec *vpav1.RecommendedPodResources, rooms []nodefit.Room) (*vpav1.RecommendedPodResources, *NodeCap) {
	if pod == nil || rec == nil || rooms == nil {
		return rec, nil
	}
	n := len(pod.Spec.Containers)
	w := working{pod: pod, bounds: allBounds, recs: make([]*vpav1.RecommendedContainerResources, n), fit: Fit{Nodes: rooms}}
	at := make([]int, n)
	for i := range pod.Spec.Containers {
		at[i] = -1
		for j := range rec.ContainerRecommendations {
			if rec.ContainerRecommendations[j].ContainerName == pod.Spec.Containers[i].Name {
				w.recs[i], at[i] = &rec.ContainerRecommendations[j], j
				break
			}
		}
	}
	// Most recommendations fit: they are checked before anything is
	// copied.
	needed := false
	for _, b := range w.bounds {
		d, want := nodeDemand(&w, b)
		if c, ok := nodefit.Best(rooms, d, want); ok && !c.Fits {
			needed = true
			break
		}
	}
	if !needed {
		return rec, nil
	}
	out := rec.DeepCopy()
	for i := range w.recs {
		if at[i] >= 0 {
			w.recs[i] = &out.ContainerRecommendations[at[i]]
		}
	}
	nodeFit(&w)
	return out, w.nodeCap
}
