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

package pod

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/boost"
	"github.com/openvpa/openvpa/pkg/informers"
	"github.com/openvpa/openvpa/pkg/target"
)

// TargetRefIndex is the name of the VPA informer index Finder needs; add it
// with cache.Indexers{TargetRefIndex: TargetRefIndexFunc}.
const TargetRefIndex = "targetRef"

func targetRefKey(namespace, kind, name string) string {
	return namespace + "/" + kind + "/" + name
}

// TargetRefIndexFunc indexes VPAs by namespace/kind/name of their targetRef.
func TargetRefIndexFunc(obj any) ([]string, error) {
	vpa, ok := obj.(*vpav1.VerticalPodAutoscaler)
	if !ok {
		return nil, fmt.Errorf("expected a VerticalPodAutoscaler, got %T", obj)
	}
	if vpa.Spec.TargetRef == nil {
		return nil, nil
	}
	return []string{targetRefKey(vpa.Namespace, vpa.Spec.TargetRef.Kind, vpa.Spec.TargetRef.Name)}, nil
}

// ControllerResolver is the part of target.Resolver a Finder uses.
type ControllerResolver interface {
	TopmostController(ctx context.Context, ref target.Ref) (*target.Ref, error)
	Selector(ctx context.Context, vpa *vpav1.VerticalPodAutoscaler) (labels.Selector, error)
}

// Finder implements VPAFinder over a VPA informer indexed by TargetRefIndex:
// the pod's topmost controller selects the candidate VPAs by targetRef, and
// the VPA whose selector matches the pod wins, the stronger one
// (target.Stronger) among several (target.AdmissionChoice). VPAs in mode Off
// are skipped, unless they have a startup boost and WithStartupBoost was
// called.
type Finder struct {
	vpas     cache.Indexer
	resolver ControllerResolver
	allows   func(namespace string) bool
	boostOff bool

	// Parsed selectors of targets whose kind is watched (CacheSelectors),
	// dropped when the target object changes or goes away.
	mu        sync.RWMutex
	selectors map[targetKey]labels.Selector
	watched   map[string]bool // by kind; written before serving only
	// gen counts invalidations, so that a selector read from an object
	// that changed meanwhile is not cached.
	gen atomic.Uint64
}

type targetKey struct{ namespace, kind, name string }

// NewFinder returns a Finder. allows filters namespaces (nil allows all).
func NewFinder(vpas cache.Indexer, resolver ControllerResolver, allows func(namespace string) bool) *Finder {
	return &Finder{vpas: vpas, resolver: resolver, allows: allows, selectors: map[targetKey]labels.Selector{}, watched: map[string]bool{}}
}

// WithStartupBoost makes the Finder match VPAs in mode Off that have a
// startup boost, which the admission controller applies in any mode (the
// CPUStartupBoost feature gate), and returns it.
func (f *Finder) WithStartupBoost() *Finder {
	f.boostOff = true
	return f
}

// CacheSelectors makes the Finder keep the parsed selectors of targets of
// the given kind (a targetRef kind, e.g. "Deployment"), which informer
// holds: the selector is resolved once and reused until the informer reports
// the object updated or deleted. Call it before the Finder serves requests.
func (f *Finder) CacheSelectors(kind string, informer EventSource) error {
	invalidate := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		m, err := meta.Accessor(obj)
		if err != nil {
			return
		}
		f.mu.Lock()
		delete(f.selectors, targetKey{namespace: m.GetNamespace(), kind: kind, name: m.GetName()})
		f.gen.Add(1)
		f.mu.Unlock()
	}
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    invalidate,
		UpdateFunc: func(_, obj any) { invalidate(obj) },
		DeleteFunc: invalidate,
	})
	if err != nil {
		return err
	}
	f.watched[kind] = true
	return nil
}

// selector returns the VPA's target selector, from the cache when its kind
// is watched.
func (f *Finder) selector(ctx context.Context, vpa *vpav1.VerticalPodAutoscaler) (labels.Selector, error) {
	ref := vpa.Spec.TargetRef
	if ref == nil || !f.watched[ref.Kind] {
		return f.resolver.Selector(ctx, vpa)
	}
	key := targetKey{namespace: vpa.Namespace, kind: ref.Kind, name: ref.Name}
	f.mu.RLock()
	sel, ok := f.selectors[key]
	f.mu.RUnlock()
	if ok {
		return sel, nil
	}
	gen := f.gen.Load()
	sel, err := f.resolver.Selector(ctx, vpa)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	if f.gen.Load() == gen {
		f.selectors[key] = sel
	}
	f.mu.Unlock()
	return sel, nil
}

// ControllingVPA implements VPAFinder.
func (f *Finder) ControllingVPA(ctx context.Context, pod *Decoded) (*vpav1.VerticalPodAutoscaler, error) {
	if f.allows != nil && !f.allows(pod.Namespace) {
		return nil, nil
	}
	// As target.Resolver's PodController, from the decoded owners.
	owner, ok := pod.controller()
	if !ok {
		return nil, nil
	}
	ctrl, err := f.resolver.TopmostController(ctx, owner)
	if err != nil {
		return nil, err
	}
	if ctrl == nil {
		return nil, nil
	}
	objs, err := f.vpas.ByIndex(TargetRefIndex, targetRefKey(pod.Namespace, ctrl.Kind, ctrl.Name))
	if err != nil {
		return nil, err
	}
	candidates := make([]*vpav1.VerticalPodAutoscaler, 0, len(objs))
	for _, o := range objs {
		if vpa, ok := o.(*vpav1.VerticalPodAutoscaler); ok {
			candidates = append(candidates, vpa)
		}
	}
	podLabels := labels.Set(pod.Labels)
	// The rule is shared with the recommender's OverlappingVPA condition,
	// which names the VPA chosen here.
	applies := target.AppliesAtAdmission
	if f.boostOff {
		applies = func(vpa *vpav1.VerticalPodAutoscaler) bool {
			return target.AppliesAtAdmission(vpa) || boost.Configured(vpa)
		}
	}
	return target.AdmissionChoiceWith(candidates, applies, func(vpa *vpav1.VerticalPodAutoscaler) bool {
		sel, err := f.selector(ctx, vpa)
		if err != nil {
			klog.FromContext(ctx).V(3).Info("Skipping a VPA whose target cannot be read", "vpa", klog.KObj(vpa), "err", err.Error())
			return false
		}
		return sel.Matches(podLabels)
	}), nil
}

// EventSource is what CacheSelectors needs of an informer.
type EventSource interface {
	AddEventHandler(cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error)
}

// CacheSelectorsOf calls CacheSelectors for each kind's informer, e.g. the
// well-known controllers' (informers.Workloads.Informers).
func (f *Finder) CacheSelectorsOf(byKind map[string]informers.Informer) error {
	for kind, inf := range byKind {
		if err := f.CacheSelectors(kind, inf); err != nil {
			return fmt.Errorf("watching %s selectors: %w", kind, err)
		}
	}
	return nil
}
