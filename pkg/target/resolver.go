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
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	appslisters "k8s.io/client-go/listers/apps/v1"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
)

// Well-known controller kinds, recognised by kind as upstream does.
const (
	KindDeployment            = "Deployment"
	KindReplicaSet            = "ReplicaSet"
	KindStatefulSet           = "StatefulSet"
	KindDaemonSet             = "DaemonSet"
	KindJob                   = "Job"
	KindCronJob               = "CronJob"
	KindReplicationController = "ReplicationController"
	KindNode                  = "Node"
)

// IsWellKnown reports whether kind is read from informers rather than through
// the scale subresource.
func IsWellKnown(kind string) bool {
	switch kind {
	case KindDeployment, KindReplicaSet, KindStatefulSet, KindDaemonSet, KindJob, KindCronJob,
		KindReplicationController, KindNode:
		return true
	}
	return false
}

// maxOwnerDepth bounds the ownerReferences walk, so a reference cycle cannot
// loop forever.
const maxOwnerDepth = 16

// Options tune a Resolver. Zero values take the defaults.
type Options struct {
	// ScaleCacheTTL is how long a successful scale subresource read is reused
	// (default 1m).
	ScaleCacheTTL time.Duration
	// ErrorCacheTTL is how long a failed scale read is reused (default 10s).
	ErrorCacheTTL time.Duration
	// Clock defaults to the real clock.
	Clock clock.PassiveClock
}

// Listers read the well-known controller kinds, typically from informers
// whose objects were trimmed by TrimWorkload.
type Listers struct {
	Deployments            appslisters.DeploymentLister
	ReplicaSets            appslisters.ReplicaSetLister
	StatefulSets           appslisters.StatefulSetLister
	DaemonSets             appslisters.DaemonSetLister
	Jobs                   batchlisters.JobLister
	CronJobs               batchlisters.CronJobLister
	ReplicationControllers corelisters.ReplicationControllerLister
}

// Resolver reads targetRefs and owner chains. It is safe for concurrent use.
type Resolver struct {
	workloads Workloads
	scales    ScaleGetter
	opts      Options

	mu    sync.Mutex
	cache map[scaleKey]scaleEntry
}

type scaleKey struct {
	gk        schema.GroupKind
	namespace string
	name      string
}

type scaleEntry struct {
	scale   *autoscalingv1.Scale
	err     error
	fetched time.Time
}

// NewResolver returns a Resolver reading the well-known kinds from workloads
// (Listers, or IndexerWorkloads over trimmed caches) and every other kind
// through scales (nil: only the well-known kinds).
func NewResolver(workloads Workloads, scales ScaleGetter, opts Options) *Resolver {
	if opts.ScaleCacheTTL <= 0 {
		opts.ScaleCacheTTL = time.Minute
	}
	if opts.ErrorCacheTTL <= 0 {
		opts.ErrorCacheTTL = 10 * time.Second
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Resolver{
		workloads: workloads,
		scales:    scales,
		opts:      opts,
		cache:     map[scaleKey]scaleEntry{},
	}
}

// NewForConfig returns NewResolver with a ScaleClient over cfg.
func NewForConfig(cfg *rest.Config, workloads Workloads, opts Options) (*Resolver, error) {
	scales, err := NewScaleClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("building scale client: %w", err)
	}
	return NewResolver(workloads, scales, opts), nil
}

// Selector returns the label selector of the VPA's targetRef.
func (r *Resolver) Selector(ctx context.Context, vpa *vpav1.VerticalPodAutoscaler) (labels.Selector, error) {
	if vpa.Spec.TargetRef == nil {
		return nil, errors.New("targetRef not defined")
	}
	ref := RefFromTargetRef(vpa.Namespace, vpa.Spec.TargetRef)
	if isWellKnownController(ref.Kind) {
		w, err := r.workloads.Workload(ref.Kind, ref.Namespace, ref.Name)
		if err != nil {
			return nil, notExist(ref, err)
		}
		return w.LabelSelector()
	}
	s, err := r.getScale(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("reading scale subresource of %s %s/%s: %w", ref.Kind, ref.Namespace, ref.Name, err)
	}
	if s.Status.Selector == "" {
		return nil, fmt.Errorf("Resource %s/%s has an empty selector for scale sub-resource", ref.Namespace, ref.Name) //nolint:staticcheck // upstream's wording
	}
	parsed, err := labels.Parse(s.Status.Selector)
	if err != nil {
		return nil, fmt.Errorf("parsing selector %q of %s/%s: %w", s.Status.Selector, ref.Namespace, ref.Name, err)
	}
	return parsed, nil
}

// isWellKnownController reports whether kind is read from Workloads: the
// well-known kinds except Node, which only appears as an owner.
func isWellKnownController(kind string) bool {
	return kind != KindNode && IsWellKnown(kind)
}

func notExist(ref Ref, err error) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%s %s/%s does not exist", ref.Kind, ref.Namespace, ref.Name)
	}
	return err
}

// TopmostController walks owner references up from ref and returns the
// topmost well-known or scalable controller met on the way, ref itself
// included; nil if there is none.
func (r *Resolver) TopmostController(ctx context.Context, ref Ref) (*Ref, error) {
	var top *Ref
	cur := ref
	for depth := 0; ; depth++ {
		if depth > maxOwnerDepth {
			return nil, fmt.Errorf("owner chain of %s is deeper than %d", ref, maxOwnerDepth)
		}
		if r.isWellKnownOrScalable(ctx, cur) {
			c := cur
			top = &c
		}
		parent, err := r.parent(ctx, cur)
		if err != nil {
			return nil, err
		}
		if parent == nil {
			return top, nil
		}
		cur = *parent
	}
}

// PodController returns the topmost well-known or scalable controller of a
// pod, or nil when the pod has no controlling owner or none on its chain
// qualifies.
func (r *Resolver) PodController(ctx context.Context, pod *corev1.Pod) (*Ref, error) {
	owner := ControllerOf(pod.Namespace, pod.OwnerReferences)
	if owner == nil {
		return nil, nil
	}
	return r.TopmostController(ctx, *owner)
}

func (r *Resolver) isWellKnownOrScalable(ctx context.Context, ref Ref) bool {
	if IsWellKnown(ref.Kind) {
		return true
	}
	_, err := r.getScale(ctx, ref)
	return err == nil
}

// parent returns the controlling owner of ref, nil when it has none.
func (r *Resolver) parent(ctx context.Context, ref Ref) (*Ref, error) {
	switch {
	case ref.Kind == KindNode:
		return nil, nil
	case isWellKnownController(ref.Kind):
		w, err := r.workloads.Workload(ref.Kind, ref.Namespace, ref.Name)
		if err != nil {
			return nil, notExist(ref, err)
		}
		return ControllerOf(ref.Namespace, w.OwnerReferences), nil
	}
	s, err := r.getScale(ctx, ref)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("unhandled targetRef %s / %s / %s, last error %v", ref.APIVersion, ref.Kind, ref.Name, err)
	}
	return ControllerOf(ref.Namespace, s.OwnerReferences), nil
}

// getScale reads the scale subresource of ref through every REST mapping of its
// group and kind, with a cache.
func (r *Resolver) getScale(ctx context.Context, ref Ref) (*autoscalingv1.Scale, error) {
	key := scaleKey{gk: ref.GroupKind(), namespace: ref.Namespace, name: ref.Name}
	now := r.opts.Clock.Now()
	r.mu.Lock()
	e, ok := r.cache[key]
	r.mu.Unlock()
	if ok {
		ttl := r.opts.ScaleCacheTTL
		if e.err != nil {
			ttl = r.opts.ErrorCacheTTL
		}
		if now.Sub(e.fetched) < ttl {
			return e.scale, e.err
		}
	}
	s, err := r.fetchScale(ctx, key)
	if ctx.Err() == nil { // a cancelled request says nothing about the object
		r.mu.Lock()
		r.cache[key] = scaleEntry{scale: s, err: err, fetched: now}
		r.mu.Unlock()
	}
	return s, err
}

func (r *Resolver) fetchScale(ctx context.Context, key scaleKey) (*autoscalingv1.Scale, error) {
	if r.scales == nil {
		return nil, fmt.Errorf("kind %s is not well-known and no scale client is configured", key.gk)
	}
	return r.scales.GetScale(ctx, key.gk, key.namespace, key.name)
}

// Forget drops cached scale reads, e.g. after an object was deleted.
func (r *Resolver) Forget() {
	r.mu.Lock()
	r.cache = map[scaleKey]scaleEntry{}
	r.mu.Unlock()
}
