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
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/openvpa/openvpa/pkg/target"
	"github.com/openvpa/openvpa/recommender/input/history"
	"github.com/openvpa/openvpa/recommender/model"
)

// FeedHistory feeds a namespace's history into the VPAs of the namespace that
// wait for it, and marks them as having it.
//
// Call it after SyncPods and before AddUsage, so that a live pod's history
// goes through the very container state its live samples continue, as if
// the recommender had watched the pod all along: the same CPU samples and the
// same memory windows. A live container that already has samples (its
// history arrived late, after Prometheus came back) gets its history through
// a container state of its own, whose last window may then overlap the live
// one.
func (s *State) FeedHistory(ctx context.Context, h *history.Namespace, now time.Time) {
	logger := klog.FromContext(ctx)
	var waiting []*VPA
	var targets []*target.Target
	for _, v := range s.vpas {
		if v.Key.Namespace == h.Name && !v.HistoryDone {
			waiting = append(waiting, v)
			if v.Target != nil {
				targets = append(targets, v.Target)
			}
		}
	}
	matcher := target.NewMatcher(targets)
	var fed, unlabelled, unmatched int
	for _, pod := range h.Pods {
		id := types.NamespacedName{Namespace: h.Name, Name: pod.Name}
		info, live := s.pods[id]
		lbls := pod.Labels
		if live {
			lbls = info.labels // the API server's labels are the truth
		} else if lbls == nil {
			unlabelled++
			continue
		}
		sel := matcher.Selecting(h.Name, lbls)
		if len(sel) == 0 {
			unmatched++
			continue
		}
		for _, t := range sel {
			v := s.vpas[KeyOf(t.VPA)]
			if v == nil || v.HistoryDone {
				continue
			}
			for name, c := range pod.Containers {
				if _, isInit := info.init[name]; isInit {
					continue // upstream drops init containers' samples
				}
				v.feedHistory(id, name, c, live, s, now)
			}
			fed++
		}
	}
	for _, v := range waiting {
		v.HistoryDone = true
	}
	cpu, mem := h.Samples()
	logger.Info("Applied usage history", "namespace", h.Name, "vpas", len(waiting), "from", h.Start, "to", h.End,
		"pods", len(h.Pods), "podsFed", fed, "cpuSamples", cpu, "memorySamples", mem,
		"podsWithoutLabels", unlabelled, "podsUnderNoVPA", unmatched)
	if unlabelled > 0 {
		logger.Info("Usage history of pods that are gone and have no series in the pod labels metric was not used; check --metric-for-pod-labels and the label flags",
			"namespace", h.Name, "pods", unlabelled)
	}
}

// HistoryWanted returns the namespaces with a VPA that waits for its history,
// each once.
func (s *State) HistoryWanted() []string {
	var out []string
	asked := map[string]bool{}
	for _, v := range s.vpas {
		if !v.HistoryDone && !asked[v.Key.Namespace] {
			asked[v.Key.Namespace] = true
			out = append(out, v.Key.Namespace)
		}
	}
	return out
}

// feedHistory adds one container's history to the VPA's aggregate, created
// as s says when needed.
func (v *VPA) feedHistory(pod types.NamespacedName, name string, c *history.Container, live bool, s *State, now time.Time) {
	var cs *model.ContainerState
	if live {
		if inst, ok := v.instances.get(instanceKey{pod: pod, container: name}); ok && inst.LastCPUSampleStart.IsZero() && inst.WindowEnd.IsZero() {
			cs = inst
		}
	}
	if cs == nil {
		cs = model.NewContainerState(v.aggregate(name, s, now))
	}
	for _, smp := range c.CPU {
		cs.AddCPUSample(smp.Time, smp.Value)
	}
	for _, smp := range c.Memory {
		cs.AddMemorySample(smp.Time, smp.Value)
	}
}
