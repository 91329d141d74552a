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

// Package cluster is the recommender's in-memory model of the cluster: the
// VPAs it handles, their pods, and each VPA's per-container aggregates and
// container states. It is fed (SyncVPAs, SyncPods, AddUsage, AddOOMs,
// FeedHistory, Restore) by the loop, which alone calls it; it makes no API
// calls and starts no goroutines.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/namespaces"
	"github.com/openvpa/openvpa/pkg/target"
	"github.com/openvpa/openvpa/recommender/input"
	"github.com/openvpa/openvpa/recommender/model"
	"github.com/openvpa/openvpa/recommender/vpacache"
)

// Config says which VPAs the state handles and how their models are set.
type Config struct {
	RecommenderName string
	Namespaces      namespaces.Filter
	// PerVPAConfig honours the per-VPA model fields of container policies.
	PerVPAConfig bool
	// Model is the global model configuration; nil means the default.
	Model *model.Config
	// Serves reports whether this replica serves a VPA (its shard); nil
	// means every VPA.
	Serves func(types.NamespacedName) bool
	// HistoryPending makes new VPAs wait for their history (HistoryDone
	// false) until FeedHistory or HistoryFed.
	HistoryPending bool
}

// ResolveFunc resolves a VPA's targetRef (pkg/target.Resolver.Resolve).
type ResolveFunc func(ctx context.Context, vpa *vpav1.VerticalPodAutoscaler) (*target.Target, error)

// TopmostFunc finds the topmost controller of a pod's owner
// (pkg/target.Resolver.TopmostController).
type TopmostFunc func(ctx context.Context, ref target.Ref) (*target.Ref, error)

type instanceKey struct {
	pod       types.NamespacedName
	container string
}

type podInfo struct {
	vpas   []types.NamespacedName
	init   map[string]struct{}
	labels map[string]string
}

// State is the recommender's model of the cluster. Its methods must not be
// called concurrently.
type State struct {
	cfg     Config
	vpas    map[types.NamespacedName]*VPA
	pods    map[types.NamespacedName]podInfo
	removed map[types.NamespacedName]podInfo
}

// New returns an empty state.
func New(cfg Config) *State {
	if cfg.Model == nil {
		cfg.Model = model.DefaultConfig()
	}
	return &State{cfg: cfg, vpas: map[types.NamespacedName]*VPA{}, pods: map[types.NamespacedName]podInfo{}}
}

// KeyOf returns a VPA's key.
func KeyOf(v *vpav1.VerticalPodAutoscaler) types.NamespacedName {
	return types.NamespacedName{Namespace: v.Namespace, Name: v.Name}
}

// Handles reports whether this recommender is responsible for v: its
// namespace, its recommender and its shard.
func (s *State) Handles(v *vpav1.VerticalPodAutoscaler) bool {
	return s.cfg.Namespaces.Allows(v.Namespace) && v.SelectsRecommender(s.cfg.RecommenderName) && s.Serves(KeyOf(v))
}

// Serves reports whether this replica serves the VPA k (Config.Serves).
func (s *State) Serves(k types.NamespacedName) bool {
	return s.cfg.Serves == nil || s.cfg.Serves(k)
}

// ModelConfig returns the model configuration of a VPA's container.
func (s *State) ModelConfig(v *vpav1.VerticalPodAutoscaler, container string) *model.Config {
	if !s.cfg.PerVPAConfig || v == nil {
		return s.cfg.Model
	}
	return s.cfg.Model.ForPolicy(vpav1.GetContainerResourcePolicy(container, v.Spec.ResourcePolicy))
}

// Get returns a VPA's state, nil when the state does not hold it.
func (s *State) Get(k types.NamespacedName) *VPA { return s.vpas[k] }

// VPAs iterates over the VPAs, in no particular order.
func (s *State) VPAs() iter.Seq[*VPA] { return maps.Values(s.vpas) }

// Size returns the number of VPAs and of tracked pods.
func (s *State) Size() (vpas, pods int) { return len(s.vpas), len(s.pods) }

// Remove drops a VPA (its shard went to another replica).
func (s *State) Remove(k types.NamespacedName) { delete(s.vpas, k) }

// AggregateCount returns the number of aggregates held.
func (s *State) AggregateCount() int {
	n := 0
	for _, v := range s.vpas {
		n += len(v.Aggregates)
	}
	return n
}

func (s *State) add(obj *vpacache.VPA) *VPA {
	k := KeyOf(obj.VerticalPodAutoscaler)
	v, ok := s.vpas[k]
	if !ok {
		v = &VPA{Key: k, Aggregates: map[string]*model.AggregateState{}, HistoryDone: !s.cfg.HistoryPending}
		s.vpas[k] = v
	}
	v.Obj = obj
	return v
}

// SyncVPAs makes the state's VPAs those of list it handles, each with its
// target resolved by resolve and its aggregates set to its container
// policies' model settings. An object this process wrote stands in for the
// informer's older copy (VPA.Wrote). It returns the VPAs kept and those
// dropped.
func (s *State) SyncVPAs(ctx context.Context, list []*vpacache.VPA, resolve ResolveFunc) (kept, gone []types.NamespacedName) {
	logger := klog.FromContext(ctx)
	seen := make(map[types.NamespacedName]bool, len(list))
	for _, obj := range list {
		if !s.Handles(obj.VerticalPodAutoscaler) {
			continue
		}
		k := KeyOf(obj.VerticalPodAutoscaler)
		seen[k] = true
		kept = append(kept, k)
		if old, ok := s.vpas[k]; ok && old.patched != nil {
			if obj.ResourceVersion == old.patchedOver {
				obj = old.patched // the informer has not seen our write yet
			}
			old.patched, old.patchedOver = nil, ""
		}
		v := s.add(obj)
		tgt, err := resolve(ctx, obj.VerticalPodAutoscaler)
		if err != nil {
			v.Target = nil
			var ce *target.ConfigError
			if errors.As(err, &ce) {
				v.Unsupported = ce.Message
			} else {
				v.Unsupported = fmt.Sprintf("Cannot read targetRef. Reason: %s", err)
			}
			logger.V(5).Info("VPA has an unsupported targetRef", "vpa", klog.KObj(obj), "reason", v.Unsupported)
		} else {
			v.Target, v.Unsupported = tgt, ""
		}
		for name, a := range v.Aggregates {
			if cfg := s.ModelConfig(obj.VerticalPodAutoscaler, name); a.Config() != cfg {
				if err := a.SetConfig(cfg); err != nil {
					logger.Error(err, "Applying the container policy's model settings", "vpa", klog.KObj(obj), "container", name)
				}
			}
		}
	}
	for k := range s.vpas {
		if !seen[k] {
			delete(s.vpas, k)
			gone = append(gone, k)
		}
	}
	return kept, gone
}

// Restore adds a container's aggregate restored from its checkpoint to the
// VPA obj, which the state starts holding if it did not.
func (s *State) Restore(obj *vpacache.VPA, container string, a *model.AggregateState) {
	s.add(obj).Aggregates[container] = a
}

// Tracked says whether the usage of pod is wanted: only pods of a served VPA
// are tracked.
func (s *State) Tracked(pod types.NamespacedName) bool {
	_, ok := s.pods[pod]
	return ok
}

// MetricsQueries returns the tracked pods, each with the selector of a VPA it
// is under, sorted by pod: what an external metrics source
// (input.ExternalMetrics) asks for.
func (s *State) MetricsQueries() []input.PodQuery {
	out := make([]input.PodQuery, 0, len(s.pods))
	for id, info := range s.pods {
		for _, k := range info.vpas {
			if v := s.vpas[k]; v != nil && v.Target != nil {
				out = append(out, input.PodQuery{Pod: id, Selector: v.Target.Selector})
				break
			}
		}
	}
	slices.SortFunc(out, func(a, b input.PodQuery) int {
		return strings.Compare(a.Pod.String(), b.Pod.String())
	})
	return out
}

// GarbageCollect drops the aggregates whose history expired at now and that
// no live pod feeds.
func (s *State) GarbageCollect(now time.Time) {
	for _, v := range s.vpas {
		for name, a := range v.Aggregates {
			if v.Live.Has(name) || !a.IsExpired(now) {
				continue
			}
			delete(v.Aggregates, name)
			v.instances.deleteFunc(func(ik instanceKey) bool { return ik.container == name })
		}
	}
}
