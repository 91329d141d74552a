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

package nodefit

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Amounts are a cpu and a memory amount: millicores and bytes.
type Amounts struct {
	CPU, Memory int64
}

// AmountsOf reads the cpu and memory of a resource list.
func AmountsOf(l corev1.ResourceList) Amounts {
	var a Amounts
	if q, ok := l[corev1.ResourceCPU]; ok {
		a.CPU = q.MilliValue()
	}
	if q, ok := l[corev1.ResourceMemory]; ok {
		a.Memory = q.Value()
	}
	return a
}

// Get returns the amount of a resource (cpu or memory; 0 for others).
func (a Amounts) Get(name corev1.ResourceName) int64 {
	switch name {
	case corev1.ResourceCPU:
		return a.CPU
	case corev1.ResourceMemory:
		return a.Memory
	}
	return 0
}

// Add returns a + b, saturating at the int64 limits.
func (a Amounts) Add(b Amounts) Amounts {
	return Amounts{CPU: addSat(a.CPU, b.CPU), Memory: addSat(a.Memory, b.Memory)}
}

// Sub returns a - b, saturating at the int64 limits.
func (a Amounts) Sub(b Amounts) Amounts {
	return Amounts{CPU: addSat(a.CPU, -b.CPU), Memory: addSat(a.Memory, -b.Memory)}
}

// Max returns the larger of a and b per resource.
func (a Amounts) Max(b Amounts) Amounts {
	return Amounts{CPU: max(a.CPU, b.CPU), Memory: max(a.Memory, b.Memory)}
}

// Covers reports whether a is at least b in both resources.
func (a Amounts) Covers(b Amounts) bool { return a.CPU >= b.CPU && a.Memory >= b.Memory }

// String shows the amounts as quantities, e.g. "cpu 3500m, memory 7Gi".
func (a Amounts) String() string {
	return fmt.Sprintf("cpu %s, memory %s", CPUQuantity(a.CPU).String(), MemoryQuantity(a.Memory).String())
}

// CPUQuantity is millicores as a quantity.
func CPUQuantity(milli int64) *resource.Quantity {
	return resource.NewMilliQuantity(milli, resource.DecimalSI)
}

// MemoryQuantity is bytes as a quantity.
func MemoryQuantity(bytes int64) *resource.Quantity {
	return resource.NewQuantity(bytes, resource.BinarySI)
}

func addSat(a, b int64) int64 {
	s := a + b
	switch {
	case a > 0 && b > 0 && s < 0:
		return math.MaxInt64
	case a < 0 && b < 0 && s >= 0:
		return math.MinInt64
	}
	return s
}

// Room is one node a pod may be scheduled on, with what is left of its
// allocatable once the DaemonSet pods running on it have their requests.
type Room struct {
	Node        string
	Allocatable Amounts
	// Free is Allocatable minus the requests of the DaemonSet pods on the
	// node.
	Free Amounts
}

// Frontier returns the rooms that no other room beats in both resources
// (ties kept once, by name), ordered by free cpu, largest first: the only
// rooms Best can choose, since a room with at least as much of both is
// always at least as good. rooms is reordered.
func Frontier(rooms []Room) []Room {
	slices.SortFunc(rooms, func(a, b Room) int {
		return cmp.Or(cmp.Compare(b.Free.CPU, a.Free.CPU), cmp.Compare(b.Free.Memory, a.Free.Memory), cmp.Compare(a.Node, b.Node))
	})
	out := rooms[:0]
	best := int64(math.MinInt64)
	for _, r := range rooms {
		if r.Free.Memory > best {
			out = append(out, r)
			best = r.Free.Memory
		}
	}
	return slices.Clip(out)
}

// Demand is a pod's requests as node fit sees them, apart from what a plan
// sets: Fixed are the requests the plan leaves as they are (other
// containers, resources the VPA does not control, native sidecars, the
// pod's overhead), Floor the least the pod needs whatever the plan (its
// largest init container, with the sidecars started before it). A resource
// Pinned by the pod-level requests is not the containers' to change: its
// Fixed is the pod-level request.
type Demand struct {
	Fixed, Floor            Amounts
	PinnedCPU, PinnedMemory bool
}

// Choice is the room Best chose for a pod and what the plan may set there.
type Choice struct {
	Room
	// Allowed is the most the planned containers may request together on
	// that node, per resource; math.MaxInt64 for a pinned resource.
	Allowed Amounts
	// Fits says the wanted amounts fit as they are.
	Fits bool
}

// Best chooses among rooms (the eligible nodes) the one where a pod with
// demand d keeps the most of want, the sum of what the plan sets: where it
// fits as wanted if any node holds that, else where the fraction kept of
// cpu and the fraction kept of memory add up highest (ties to the room
// with more free cpu, then memory, then the first name). A room that
// cannot hold the pod's fixed part or its floor is not chosen. ok is false
// when no room is left.
func Best(rooms []Room, d Demand, want Amounts) (c Choice, ok bool) {
	bestScore := -1.0
	for _, r := range rooms {
		allowed, usable := allowedOn(r.Free, d, want)
		if !usable {
			continue
		}
		score := kept(want.CPU, allowed.CPU) + kept(want.Memory, allowed.Memory)
		if !ok || score > bestScore || score == bestScore && better(r, c.Room) {
			c = Choice{Room: r, Allowed: allowed, Fits: allowed.Covers(want)}
			bestScore, ok = score, true
		}
	}
	return c, ok
}

// allowedOn is what the planned containers may request on a node with free
// room, and whether the node can hold the pod at all.
func allowedOn(free Amounts, d Demand, want Amounts) (Amounts, bool) {
	if !free.Covers(d.Floor) {
		return Amounts{}, false
	}
	one := func(free, fixed, want int64, pinned bool) (int64, bool) {
		if pinned {
			return math.MaxInt64, fixed <= free
		}
		left := free - fixed
		if left < 0 || left == 0 && want > 0 {
			return 0, false
		}
		return left, true
	}
	cpu, okCPU := one(free.CPU, d.Fixed.CPU, want.CPU, d.PinnedCPU)
	mem, okMem := one(free.Memory, d.Fixed.Memory, want.Memory, d.PinnedMemory)
	return Amounts{CPU: cpu, Memory: mem}, okCPU && okMem
}

// kept is the fraction of want that allowed keeps, 1 for nothing wanted.
func kept(want, allowed int64) float64 {
	if want <= 0 || allowed >= want {
		return 1
	}
	return float64(allowed) / float64(want)
}

func better(a, b Room) bool {
	return cmp.Or(cmp.Compare(a.Free.CPU, b.Free.CPU), cmp.Compare(a.Free.Memory, b.Free.Memory), cmp.Compare(b.Node, a.Node)) > 0
}
