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
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	appslisters "k8s.io/client-go/listers/apps/v1"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/scale"
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

// Resolver reads targetRefs and owner chains. It is safe for concurrent use.
type Resolver struct {
	deployments  appslisters.DeploymentLister
	replicaSets  appslisters.ReplicaSetLister
	statefulSets appslisters.StatefulSetLister
	daemonSets   appslisters.DaemonSetLister
	jobs         batchlisters.JobLister
	cronJobs     batchlisters.CronJobLister
	rcs          corelisters.ReplicationControllerLister

	scales scale.ScalesGetter
	mapper meta.RESTMapper
	opts   Options

	mu        sync.Mutex
	cache     map[scaleKey]scaleEntry
	lastReset time.Time
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

// NewResolver returns a Resolver reading the well-known kinds from factory
// (it registers those informers, so start the factory afterwards) and every
// other kind through scales and mapper.
func NewResolver(factory informers.SharedInformerFactory, scales scale.ScalesGetter, mapper meta.RESTMapper, opts Options) *Resolver {
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
		deployments:  factory.Apps().V1().Deployments().Lister(),
		replicaSets:  factory.Apps().V1().ReplicaSets().Lister(),
		statefulSets: factory.Apps().V1().StatefulSets().Lister(),
		daemonSets:   factory.Apps().V1().DaemonSets().Lister(),
		jobs:         factory.Batch().V1().Jobs().Lister(),
		cronJobs:     factory.Batch().V1().CronJobs().Lister(),
		rcs:          factory.Core().V1().ReplicationControllers().Lister(),
		scales:       scales,
		mapper:       mapper,
		opts:         opts,
		cache:        map[scaleKey]scaleEntry{},
	}
}

// NewForConfig builds the discovery-backed RESTMapper and scale client from cfg
// and returns NewResolver with them.
func NewForConfig(cfg *rest.Config, disc discovery.DiscoveryInterface, factory informers.SharedInformerFactory, opts Options) (*Resolver, error) {
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	scales, err := scale.NewForConfig(cfg, mapper, dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(disc))
	if err != nil {
		return nil, fmt.Errorf("building scale client: %w", err)
	}
	return NewResolver(factory, scales, mapper, opts), nil
}

// Selector returns the label selector of the VPA's targetRef.
func (r *Resolver) Selector(ctx context.Context, vpa *vpav1.VerticalPodAutoscaler) (labels.Selector, error) {
	if vpa.Spec.TargetRef == nil {
		return nil, errors.New("targetRef not defined")
	}
	ref := RefFromTargetRef(vpa.Namespace, vpa.Spec.TargetRef)
	var sel *metav1.LabelSelector
	switch ref.Kind {
	case KindDeployment:
		o, err := r.deployments.Deployments(ref.Namespace).Get(ref.Name)
		if err != nil {
			return nil, notExist(ref, err)
		}
		sel = o.Spec.Selector
	case KindReplicaSet:
		o, err := r.replicaSets.ReplicaSets(ref.Namespace).Get(ref.Name)
		if err != nil {
			return nil, notExist(ref, err)
		}
		sel = o.Spec.Selector
	case KindStatefulSet:
		o, err := r.statefulSets.StatefulSets(ref.Namespace).Get(ref.Name)
		if err != nil {
			return nil, notExist(ref, err)
		}
		sel = o.Spec.Selector
	case KindDaemonSet:
		o, err := r.daemonSets.DaemonSets(ref.Namespace).Get(ref.Name)
		if err != nil {
			return nil, notExist(ref, err)
		}
		sel = o.Spec.Selector
	case KindJob:
		o, err := r.jobs.Jobs(ref.Namespace).Get(ref.Name)
		if err != nil {
			return nil, notExist(ref, err)
		}
		sel = o.Spec.Selector
	case KindCronJob:
		o, err := r.cronJobs.CronJobs(ref.Namespace).Get(ref.Name)
		if err != nil {
			return nil, notExist(ref, err)
		}
		return labels.SelectorFromSet(o.Spec.JobTemplate.Spec.Template.Labels), nil
	case KindReplicationController:
		o, err := r.rcs.ReplicationControllers(ref.Namespace).Get(ref.Name)
		if err != nil {
			return nil, notExist(ref, err)
		}
		return labels.SelectorFromSet(o.Spec.Selector), nil
	default:
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
	if sel == nil {
		return nil, fmt.Errorf("%s %s/%s has no selector", ref.Kind, ref.Namespace, ref.Name)
	}
	parsed, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return nil, fmt.Errorf("invalid selector of %s %s/%s: %w", ref.Kind, ref.Namespace, ref.Name, err)
	}
	return parsed, nil
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
	var meta *metav1.ObjectMeta
	switch ref.Kind {
	case KindNode:
		return nil, nil
	case KindDeployment:
		d, e := r.deployments.Deployments(ref.Namespace).Get(ref.Name)
		if e != nil {
			return nil, notExist(ref, e)
		}
		meta = &d.ObjectMeta
	case KindReplicaSet:
		d, e := r.replicaSets.ReplicaSets(ref.Namespace).Get(ref.Name)
		if e != nil {
			return nil, notExist(ref, e)
		}
		meta = &d.ObjectMeta
	case KindStatefulSet:
		d, e := r.statefulSets.StatefulSets(ref.Namespace).Get(ref.Name)
		if e != nil {
			return nil, notExist(ref, e)
		}
		meta = &d.ObjectMeta
	case KindDaemonSet:
		d, e := r.daemonSets.DaemonSets(ref.Namespace).Get(ref.Name)
		if e != nil {
			return nil, notExist(ref, e)
		}
		meta = &d.ObjectMeta
	case KindJob:
		d, e := r.jobs.Jobs(ref.Namespace).Get(ref.Name)
		if e != nil {
			return nil, notExist(ref, e)
		}
		meta = &d.ObjectMeta
	case KindCronJob:
		d, e := r.cronJobs.CronJobs(ref.Namespace).Get(ref.Name)
		if e != nil {
			return nil, notExist(ref, e)
		}
		meta = &d.ObjectMeta
	case KindReplicationController:
		d, e := r.rcs.ReplicationControllers(ref.Namespace).Get(ref.Name)
		if e != nil {
			return nil, notExist(ref, e)
		}
		meta = &d.ObjectMeta
	default:
		s, e := r.getScale(ctx, ref)
		if apierrors.IsNotFound(e) {
			return nil, nil
		}
		if e != nil {
			return nil, fmt.Errorf("unhandled targetRef %s / %s / %s, last error %v", ref.APIVersion, ref.Kind, ref.Name, e)
		}
		meta = &s.ObjectMeta
	}
	return ControllerOf(ref.Namespace, meta.OwnerReferences), nil
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
	if r.scales == nil || r.mapper == nil {
		return nil, fmt.Errorf("kind %s is not well-known and no scale client is configured", key.gk)
	}
	mappings, err := r.mapper.RESTMappings(key.gk)
	if meta.IsNoMatchError(err) && r.resetMapper() {
		// A kind added after the mapper's last discovery (a new CRD).
		mappings, err = r.mapper.RESTMappings(key.gk)
	}
	if err != nil {
		return nil, err
	}
	var lastErr error = fmt.Errorf("no REST mapping for %s", key.gk)
	for _, m := range mappings {
		s, err := r.scales.Scales(key.namespace).Get(ctx, m.Resource.GroupResource(), key.name, metav1.GetOptions{})
		if err == nil {
			return s, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

// resetMapper forgets the mapper's discovery data, at most once per
// ErrorCacheTTL; it reports whether it did.
func (r *Resolver) resetMapper() bool {
	rm, ok := r.mapper.(meta.ResettableRESTMapper)
	if !ok {
		return false
	}
	now := r.opts.Clock.Now()
	r.mu.Lock()
	if !r.lastReset.IsZero() && now.Sub(r.lastReset) < r.opts.ErrorCacheTTL {
		r.mu.Unlock()
		return false
	}
	r.lastReset = now
	r.mu.Unlock()
	rm.Reset()
	return true
}

// Forget drops cached scale reads, e.g. after an object was deleted.
func (r *Resolver) Forget() {
	r.mu.Lock()
	r.cache = map[scaleKey]scaleEntry{}
	r.mu.Unlock()
}
