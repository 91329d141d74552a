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

package loop

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/openvpa/openvpa/pkg/target"
	"github.com/openvpa/openvpa/recommender/input/history"
	"github.com/openvpa/openvpa/recommender/model"
)

// HistorySource loads namespaces' past usage in the background
// (history.Loader).
type HistorySource interface {
	// Want asks for a namespace's history.
	Want(namespace string)
	// Take returns the histories that arrived since the last call.
	Take() []*history.Namespace
	// Status is where a namespace's history stands.
	Status(namespace string) history.Status
}

// applyHistory feeds the histories that arrived into the VPAs that wait for
// them, and asks for the namespaces of the VPAs that still wait (new VPAs
// included, so a VPA created after the start gets its history too).
//
// It runs after loadPods and before loadMetrics, so that a live pod's
// history goes through the very container state its live samples continue,
// as if the recommender had watched the pod all along: the same CPU samples
// and the same memory windows. A live container that already has samples
// (its history arrived late, after Prometheus came back) gets its history
// through a container state of its own, whose last window may then overlap
// the live one.
func (r *Recommender) applyHistory(ctx context.Context) {
	logger := klog.FromContext(ctx)
	now := r.deps.Clock.Now()
	for _, h := range r.deps.History.Take() {
		var waiting []*vpaState
		var targets []*target.Target
		for _, st := range r.vpas {
			if st.key.Namespace == h.Name && !st.historyDone {
				waiting = append(waiting, st)
				if st.tgt != nil {
					targets = append(targets, st.tgt)
				}
			}
		}
		matcher := target.NewMatcher(targets)
		var fed, unlabelled, unmatched int
		for _, pod := range h.Pods {
			id := types.NamespacedName{Namespace: h.Name, Name: pod.Name}
			info, live := r.pods[id]
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
				st := r.vpas[keyOf(t.VPA)]
				if st == nil || st.historyDone {
					continue
				}
				for name, c := range pod.Containers {
					if _, isInit := info.init[name]; isInit {
						continue // upstream drops init containers' samples
					}
					r.feedHistory(st, id, name, c, live, now)
				}
				fed++
			}
		}
		for _, st := range waiting {
			st.historyDone = true
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
	r.wantHistory()
}

// wantHistory asks for the history of every namespace with a VPA that waits
// for it, and returns those namespaces.
func (r *Recommender) wantHistory() []string {
	var out []string
	asked := map[string]bool{}
	for _, st := range r.vpas {
		if !st.historyDone && !asked[st.key.Namespace] {
			asked[st.key.Namespace] = true
			r.deps.History.Want(st.key.Namespace)
			out = append(out, st.key.Namespace)
		}
	}
	return out
}

// WantHistory loads the VPAs and asks for the history of every namespace
// that has one, before the first loop, so that the first statuses can carry
// it. It returns the namespaces asked for.
func (r *Recommender) WantHistory(ctx context.Context) []string {
	if r.deps.History == nil {
		return nil
	}
	r.loadVPAs(ctx)
	return r.wantHistory()
}

// feedHistory adds one container's history to a VPA's aggregate.
func (r *Recommender) feedHistory(st *vpaState, pod types.NamespacedName, name string, c *history.Container, live bool, now time.Time) {
	var cs *model.ContainerState
	if live {
		if inst, ok := st.instances.get(instanceKey{pod: pod, container: name}); ok && inst.LastCPUSampleStart.IsZero() && inst.WindowEnd.IsZero() {
			cs = inst
		}
	}
	if cs == nil {
		a, ok := st.aggregates[name]
		if !ok {
			a = model.NewAggregateState(r.modelConfig(st.obj.VerticalPodAutoscaler, name), now)
			st.aggregates[name] = a
		}
		cs = model.NewContainerState(a)
	}
	for _, s := range c.CPU {
		cs.AddCPUSample(s.Time, s.Value)
	}
	for _, s := range c.Memory {
		cs.AddMemorySample(s.Time, s.Value)
	}
}

// fetchingHistory returns the FetchingHistory condition's reason and message
// for a VPA of the namespace that still waits for its history.
func (r *Recommender) fetchingHistory(namespace string) (string, string) {
	s := r.deps.History.Status(namespace)
	if s.Err == nil {
		return ReasonFetchingHistory, "Loading usage history from Prometheus; the recommendation is kept until it is in"
	}
	return ReasonHistoryFetchFailed, fmt.Sprintf("Cannot load usage history from Prometheus (%d failed attempts, next at %s): %v; the recommendation is kept until it is in",
		s.Attempts, s.NextAttempt.UTC().Format(time.RFC3339), s.Err)
}
