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

package cluster

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/openvpa/openvpa/pkg/target"
	"github.com/openvpa/openvpa/recommender/input"
	"github.com/openvpa/openvpa/recommender/model"
	"github.com/openvpa/openvpa/recommender/vpacache"
)

// VPA is everything the recommender keeps about one VPA it handles. The
// loop's goroutine alone reads and writes it.
type VPA struct {
	Key types.NamespacedName
	// Obj is the cached VPA, its stored recommendation in compact form.
	Obj *vpacache.VPA
	// Target is the resolved targetRef; nil when it cannot be resolved.
	Target *target.Target
	// Unsupported is the ConfigUnsupported message, "" when the config is fine.
	Unsupported string
	// Aggregates are the VPA's per-container histories.
	Aggregates map[string]*model.AggregateState
	// PodCount is the number of the VPA's pods in the last SyncPods.
	PodCount int
	// Sample is one of the VPA's pods in the last SyncPods, nil when none:
	// the pod the recommendation is checked against the LimitRanges with.
	Sample *input.Pod
	// LastSample is the Sample of the last SyncPods that had one: node fit
	// caps the recommendation for it while the VPA has no pods, so that
	// scaling to zero does not lift the cap.
	LastSample *input.Pod
	// Live are the containers of the VPA's pods in the last SyncPods.
	Live NameSet
	// HistoryDone is whether the VPA's history was loaded (always true
	// without a history source); until then its status keeps its
	// recommendation and says FetchingHistory.
	HistoryDone bool
	// Written is when this process last wrote the VPA's status.
	Written time.Time

	instances instanceSet
	// overlaps are the other VPAs matching some of this VPA's pods in the
	// last SyncPods, by name; chosen the VPAs the admission controller
	// applies to those pods ("" for none).
	overlaps, chosen map[string]struct{}
	// lastLive is the container set of the last loop that had pods; it
	// decides the recommendation while the workload has no pods.
	lastLive NameSet
	// patchedOver and patched let a just-written object stand in for the
	// informer's copy until the informer catches up.
	patchedOver string
	patched     *vpacache.VPA
}

// NameSet is a small set of names (a pod's containers), in the order added.
type NameSet []string

// Has reports whether name is in the set.
func (s NameSet) Has(name string) bool { return slices.Contains(s, name) }

func (s *NameSet) add(name string) {
	if !s.Has(name) {
		*s = append(*s, name)
	}
}

// Recommendable returns the aggregates the VPA's recommendation is built
// from: when pods match, only the containers some matching pod has; with no
// pods (scaled to zero, between job runs) those of the last loop that had
// pods, or every aggregate, so the recommendation stays available for the
// next pod. Called twice in one loop, it returns the same.
func (v *VPA) Recommendable() map[string]*model.AggregateState {
	live := v.Live
	if v.PodCount == 0 {
		live = v.lastLive
	} else {
		v.lastLive = v.Live
	}
	if len(live) == 0 {
		return v.Aggregates
	}
	out := make(map[string]*model.AggregateState, len(live))
	for name, a := range v.Aggregates {
		if live.Has(name) {
			out[name] = a
		}
	}
	return out
}

// Overlaps returns the other VPAs that matched some of this VPA's pods in the
// last SyncPods, and the VPAs the admission controller applies to those pods
// ("" for none), in no particular order; nil when no other VPA matched.
func (v *VPA) Overlaps() (others, chosen []string) {
	return keysOf(v.overlaps), keysOf(v.chosen)
}

func keysOf(m map[string]struct{}) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// OpenStates returns the container states of the VPA's pods by container:
// their open memory windows go into checkpoints.
func (v *VPA) OpenStates() map[string][]*model.ContainerState {
	open := map[string][]*model.ContainerState{}
	v.instances.each(func(ik instanceKey, cs *model.ContainerState) {
		open[ik.container] = append(open[ik.container], cs)
	})
	return open
}

// Wrote records a status write made at now: obj, the written object in the
// cached form, stands in for the informer's copy of basedOn (the
// resourceVersion the write was based on) until the informer has a newer one.
func (v *VPA) Wrote(now time.Time, basedOn string, obj *vpacache.VPA) {
	v.Written = now
	v.patchedOver = basedOn
	v.patched = obj
	v.Obj = obj
}

// aggregate returns the aggregate of a container, creating it with the
// model configuration s gives it.
func (v *VPA) aggregate(container string, s *State, now time.Time) *model.AggregateState {
	a, ok := v.Aggregates[container]
	if !ok {
		a = model.NewAggregateState(s.ModelConfig(v.Obj.VerticalPodAutoscaler, container), now)
		v.Aggregates[container] = a
	}
	return a
}
