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

package policy

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	policyclient "github.com/openvpa/openvpa/apis/generated/clientset/versioned/typed/openvpa/v1alpha1"
	policyv1alpha1 "github.com/openvpa/openvpa/apis/openvpa/v1alpha1"
	"github.com/openvpa/openvpa/pkg/events"
	"github.com/openvpa/openvpa/pkg/informers"
	"github.com/openvpa/openvpa/pkg/kubeclient"
	"github.com/openvpa/openvpa/pkg/namespaces"
	"github.com/openvpa/openvpa/pkg/target"
)

// Event reasons.
const (
	// ReasonManagedVPARemoved is recorded on a user's VPA whose workload had
	// a managed VPA, which the controller removed.
	ReasonManagedVPARemoved = "ManagedVPARemoved"
	// ReasonInvalidUpdateMode is recorded on a namespace whose
	// openvpa.io/vpa-update-mode label is not an update mode.
	ReasonInvalidUpdateMode = "InvalidUpdateMode"
	// ReasonInvalidPolicy is recorded on a policy whose selectors do not parse.
	ReasonInvalidPolicy = "InvalidPolicy"
)

// Options configure the controller.
type Options struct {
	// Namespaces are the namespaces the recommender handles.
	Namespaces namespaces.Filter
	// Workers reconcile namespaces in parallel; 2 when zero.
	Workers int
	// Registerer takes the controller's metrics; nil for none.
	Registerer prometheus.Registerer
	// Clock is nil for the real one.
	Clock clock.WithTicker
	// Component is the events' source.
	Component string
}

// Clients are what the controller reads and writes with.
type Clients struct {
	Kube      kubeclient.Clients
	Policies  policyclient.OpenvpaV1alpha1Interface
	Metadata  metadata.Interface
	Discovery *kubeclient.Discovery
}

// NewClients builds the controller's clients from cfg. They have their own
// rate limiter (cfg's QPS and burst), apart from the recommender's status
// and checkpoint writes.
func NewClients(cfg *rest.Config) (Clients, error) {
	var c Clients
	var err error
	if c.Kube, err = kubeclient.NewClients(cfg); err != nil {
		return c, err
	}
	if c.Policies, err = policyclient.NewForConfig(cfg); err != nil {
		return c, fmt.Errorf("building the policy client: %w", err)
	}
	if c.Metadata, err = metadata.NewForConfig(cfg); err != nil {
		return c, fmt.Errorf("building the metadata client: %w", err)
	}
	if c.Discovery, err = kubeclient.NewDiscovery(cfg); err != nil {
		return c, err
	}
	return c, nil
}

// Controller keeps the managed VPAs.
type Controller struct {
	o       Options
	c       Clients
	clock   clock.WithTicker
	metrics *controllerMetrics

	queue    workqueue.TypedRateLimitingInterface[string]
	statuses workqueue.TypedRateLimitingInterface[string]
	kinds    chan struct{}
	recorder record.EventRecorder

	vpas, policiesIdx, nsIdx cache.Indexer

	mu sync.Mutex
	// watches are the workload caches by kind; kindErrs why a kind named
	// by a policy has none.
	watches  map[schema.GroupKind]*kindWatch
	kindErrs map[schema.GroupKind]error
	// results are the last plan's counts of each namespace.
	results map[string]*nsResult
	// pending are the writes made and not yet seen in the VPA cache, by
	// namespace/name: the resource version written ("" for a delete), so
	// that a plan made before the cache caught up does not write again.
	pending map[string]pendingWrite
}

type kindWatch struct {
	informer   cache.SharedIndexInformer
	apiVersion string
}

type nsResult struct {
	policies map[string]*Counts
	// generations are the policy generations the plan was made with.
	generations map[string]int64
	err         error
}

type pendingWrite struct {
	resourceVersion string
	deleted         bool
	at              time.Time
}

// pendingFor bounds how long a write waits to be seen in the cache.
const pendingFor = time.Minute

// New returns a controller; Run starts it.
func New(o Options, c Clients) *Controller {
	if o.Workers <= 0 {
		o.Workers = 2
	}
	clk := o.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Controller{
		o: o, c: c, clock: clk, metrics: newMetrics(o.Registerer),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "policy-namespaces"}),
		statuses: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "policy-statuses"}),
		kinds:    make(chan struct{}, 1),
		watches:  map[schema.GroupKind]*kindWatch{},
		kindErrs: map[schema.GroupKind]error{},
		results:  map[string]*nsResult{},
		pending:  map[string]pendingWrite{},
	}
}

// Run runs the controller until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithName("policy")
	ctx = klog.NewContext(ctx, logger)
	recorder, stopEvents := events.NewRecorder(ctx, c.c.Kube, c.o.Component)
	defer stopEvents()
	c.recorder = recorder
	defer c.queue.ShutDown()
	defer c.statuses.ShutDown()

	watchNs := c.o.Namespaces.WatchNamespace()
	set := &informers.Set{}
	vpaInf := set.AddVPAs(c.c.Kube, watchNs, nil)
	polInf := set.Add(c.c.Policies.RESTClient(), "verticalpodautoscalerpolicies", "", &policyv1alpha1.VerticalPodAutoscalerPolicy{},
		informers.DefaultResync, nil, target.StripManagedFields)
	var nsTweak func(*metav1.ListOptions)
	if watchNs != "" {
		nsTweak = func(lo *metav1.ListOptions) {
			lo.FieldSelector = fields.OneTermEqualSelector("metadata.name", watchNs).String()
		}
	}
	nsInf := set.Add(c.c.Kube.Core, "namespaces", "", &corev1.Namespace{}, informers.DefaultResync, nsTweak, trimNamespace)
	c.vpas, c.policiesIdx, c.nsIdx = vpaInf.GetIndexer(), polInf.GetIndexer(), nsInf.GetIndexer()
	if _, err := vpaInf.AddEventHandler(c.vpaHandler()); err != nil {
		return err
	}
	if _, err := polInf.AddEventHandler(c.policyHandler()); err != nil {
		return err
	}
	if _, err := nsInf.AddEventHandler(c.namespaceHandler()); err != nil {
		return err
	}
	set.Start(ctx)
	logger.Info("Policy controller waiting for its caches")
	if err := set.WaitForSync(ctx); err != nil {
		return fmt.Errorf("policy controller caches: %w", err)
	}
	c.ensureKinds(ctx)
	logger.Info("Policy controller started", "workers", c.o.Workers)

	var wg sync.WaitGroup
	defer wg.Wait()
	for range c.o.Workers {
		wg.Go(func() {
			for c.next(ctx, c.queue, c.syncNamespace) {
			}
		})
	}
	wg.Go(func() {
		for c.next(ctx, c.statuses, c.syncStatus) {
		}
	})
	wg.Go(func() {
		// Kinds a policy names are resolved when the policies change, and
		// retried while one fails.
		t := c.clock.NewTicker(30 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-c.kinds:
			case <-t.C():
				c.mu.Lock()
				retry := len(c.kindErrs) > 0
				c.mu.Unlock()
				if !retry {
					continue
				}
			}
			c.ensureKinds(ctx)
		}
	})
	<-ctx.Done()
	c.queue.ShutDown()
	c.statuses.ShutDown()
	return nil
}

// next processes one key of q with sync; false once q shuts down.
func (c *Controller) next(ctx context.Context, q workqueue.TypedRateLimitingInterface[string], sync func(context.Context, string) error) bool {
	key, shutdown := q.Get()
	if shutdown {
		return false
	}
	defer q.Done(key)
	if err := sync(ctx, key); err != nil {
		if ctx.Err() == nil {
			klog.FromContext(ctx).V(2).Info("Retrying", "key", key, "err", err)
		}
		q.AddRateLimited(key)
		return true
	}
	q.Forget(key)
	return true
}

// trimNamespace keeps a namespace's name, labels and deletion.
func trimNamespace(obj any) (any, error) {
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return obj, nil
	}
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: ns.Name, UID: ns.UID, ResourceVersion: ns.ResourceVersion, Labels: ns.Labels, DeletionTimestamp: ns.DeletionTimestamp,
	}}, nil
}

// enqueueAll queues every namespace the recommender handles.
func (c *Controller) enqueueAll() {
	for _, ns := range c.nsIdx.ListKeys() {
		if c.o.Namespaces.Allows(ns) {
			c.queue.Add(ns)
		}
	}
}

func (c *Controller) enqueueNamespaceOf(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		ns, _, err := cache.SplitMetaNamespaceKey(t.Key)
		if err == nil && c.o.Namespaces.Allows(ns) {
			c.queue.Add(ns)
		}
		return
	}
	if m, ok := obj.(metav1.Object); ok && c.o.Namespaces.Allows(m.GetNamespace()) {
		c.queue.Add(m.GetNamespace())
	}
}

func (c *Controller) vpaHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			c.seen(obj, false)
			c.enqueueNamespaceOf(obj)
		},
		UpdateFunc: func(oldObj, newObj any) {
			c.seen(newObj, false)
			o, n := oldObj.(*vpav1.VerticalPodAutoscaler), newObj.(*vpav1.VerticalPodAutoscaler)
			// Status writes (every recommender loop) change neither.
			if o.Generation != n.Generation || !labels.Equals(o.Labels, n.Labels) || len(o.OwnerReferences) != len(n.OwnerReferences) {
				c.enqueueNamespaceOf(newObj)
			}
		},
		DeleteFunc: func(obj any) {
			c.seen(obj, true)
			c.enqueueNamespaceOf(obj)
		},
	}
}

func (c *Controller) policyHandler() cache.ResourceEventHandler {
	changed := func(name string) {
		c.enqueueAll()
		c.statuses.Add(name)
		select {
		case c.kinds <- struct{}{}:
		default:
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if p, ok := obj.(*policyv1alpha1.VerticalPodAutoscalerPolicy); ok {
				changed(p.Name)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, n := oldObj.(*policyv1alpha1.VerticalPodAutoscalerPolicy), newObj.(*policyv1alpha1.VerticalPodAutoscalerPolicy)
			if o.Generation != n.Generation {
				changed(n.Name)
			}
		},
		DeleteFunc: func(any) {
			c.enqueueAll()
		},
	}
}

func (c *Controller) namespaceHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if ns, ok := obj.(*corev1.Namespace); ok && c.o.Namespaces.Allows(ns.Name) {
				c.queue.Add(ns.Name)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, n := oldObj.(*corev1.Namespace), newObj.(*corev1.Namespace)
			if !labels.Equals(o.Labels, n.Labels) && c.o.Namespaces.Allows(n.Name) {
				c.queue.Add(n.Name)
			}
		},
		DeleteFunc: func(obj any) {
			ns, ok := obj.(*corev1.Namespace)
			if !ok {
				if t, tok := obj.(cache.DeletedFinalStateUnknown); tok {
					ns = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: t.Key}}
				} else {
					return
				}
			}
			c.mu.Lock()
			old := c.results[ns.Name]
			delete(c.results, ns.Name)
			c.mu.Unlock()
			if old != nil {
				for p := range old.policies {
					c.statuses.AddAfter(p, time.Second)
				}
			}
		},
	}
}

func (c *Controller) workloadHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueueNamespaceOf,
		UpdateFunc: func(oldObj, newObj any) {
			o, n := oldObj.(*Workload), newObj.(*Workload)
			if o.Owned != n.Owned || o.UID != n.UID || !labels.Equals(o.Labels, n.Labels) {
				c.enqueueNamespaceOf(newObj)
			}
		},
		DeleteFunc: c.enqueueNamespaceOf,
	}
}

// seen clears the pending write of a VPA the cache now has.
func (c *Controller) seen(obj any, deleted bool) {
	var key string
	var rv string
	switch v := obj.(type) {
	case *vpav1.VerticalPodAutoscaler:
		key, rv = v.Namespace+"/"+v.Name, v.ResourceVersion
	case cache.DeletedFinalStateUnknown:
		key = v.Key
	default:
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.pending[key]
	if !ok {
		return
	}
	if deleted == p.deleted && (deleted || p.resourceVersion == "" || p.resourceVersion == rv) {
		delete(c.pending, key)
	}
}

// markPending records a write until the cache has it. The cache may have
// it already: the watch event can arrive before the write returns.
func (c *Controller) markPending(key string, p pendingWrite) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p.at = c.clock.Now()
	c.pending[key] = p
	// The store is updated before the handlers run: a write whose event was
	// handled before it was recorded is in the store now.
	obj, exists, err := c.vpas.GetByKey(key)
	if err != nil {
		return
	}
	if p.deleted && !exists {
		delete(c.pending, key)
	}
	if v, ok := obj.(*vpav1.VerticalPodAutoscaler); ok && !p.deleted && v.ResourceVersion == p.resourceVersion {
		delete(c.pending, key)
	}
}

// isPending reports whether a write to key is not yet in the cache.
func (c *Controller) isPending(key string) bool {
	p, ok := c.pending[key]
	if !ok {
		return false
	}
	if c.clock.Since(p.at) > pendingFor {
		delete(c.pending, key)
		return false
	}
	return true
}

// sources compiles the policies in the cache; invalid ones are left out.
func (c *Controller) sources() (out []*Source, invalid map[string]error) {
	for _, obj := range c.policiesIdx.List() {
		p, ok := obj.(*policyv1alpha1.VerticalPodAutoscalerPolicy)
		if !ok || p.DeletionTimestamp != nil {
			continue
		}
		s, err := Compile(p)
		if err != nil {
			if invalid == nil {
				invalid = map[string]error{}
			}
			invalid[p.Name] = err
			continue
		}
		out = append(out, s)
	}
	return out, invalid
}

// workloads returns the namespace's workloads and the kinds not known yet.
func (c *Controller) workloads(ns string, want []*Source) ([]*Workload, map[schema.GroupKind]bool) {
	c.mu.Lock()
	watches := make(map[schema.GroupKind]*kindWatch, len(c.watches))
	for gk, w := range c.watches {
		watches[gk] = w
	}
	c.mu.Unlock()
	unwatched := map[schema.GroupKind]bool{}
	for _, s := range want {
		for gk := range s.kinds {
			if w, ok := watches[gk]; !ok || !w.informer.HasSynced() {
				unwatched[gk] = true
			}
		}
	}
	for _, gk := range DefaultKinds {
		if w, ok := watches[gk]; !ok || !w.informer.HasSynced() {
			unwatched[gk] = true
		}
	}
	var out []*Workload
	for gk, w := range watches {
		if unwatched[gk] {
			continue
		}
		objs, err := w.informer.GetIndexer().ByIndex(cache.NamespaceIndex, ns)
		if err != nil {
			unwatched[gk] = true
			continue
		}
		for _, o := range objs {
			if wl, ok := o.(*Workload); ok {
				out = append(out, wl)
			}
		}
	}
	return out, unwatched
}

// syncNamespace plans one namespace and writes the plan.
func (c *Controller) syncNamespace(ctx context.Context, ns string) error {
	logger := klog.FromContext(ctx).WithValues("namespace", ns)
	obj, exists, err := c.nsIdx.GetByKey(ns)
	if err != nil {
		return err
	}
	if !exists || !c.o.Namespaces.Allows(ns) {
		return nil
	}
	nsObj := obj.(*corev1.Namespace)
	sources, _ := c.sources()
	if nsObj.DeletionTimestamp != nil {
		// Its VPAs go with it: nothing to write, nothing to count.
		c.record(ns, sources, nil, nil)
		return nil
	}
	wls, unwatched := c.workloads(ns, sources)
	vpaObjs, err := c.vpas.ByIndex(cache.NamespaceIndex, ns)
	if err != nil {
		return err
	}
	vpas := make([]*vpav1.VerticalPodAutoscaler, 0, len(vpaObjs))
	for _, o := range vpaObjs {
		if v, ok := o.(*vpav1.VerticalPodAutoscaler); ok {
			vpas = append(vpas, v)
		}
	}
	plan, nsErr := PlanNamespace(Input{Namespace: ns, NamespaceLabels: nsObj.Labels, Sources: sources, Workloads: wls, VPAs: vpas, Unwatched: unwatched})
	if nsErr != nil {
		c.recorder.Eventf(nsObj, corev1.EventTypeWarning, ReasonInvalidUpdateMode, "Ignoring the label: %v", nsErr)
	}
	writeErr := c.write(ctx, logger, &plan)

	c.record(ns, sources, plan.Policies, writeErr)
	return writeErr
}

// record keeps a namespace's plan counts and queues the statuses of the
// policies whose counts, errors or generations changed.
func (c *Controller) record(ns string, sources []*Source, policies map[string]*Counts, writeErr error) {
	gens := make(map[string]int64, len(sources))
	for _, s := range sources {
		gens[s.Policy] = s.Generation
	}
	c.mu.Lock()
	old := c.results[ns]
	c.results[ns] = &nsResult{policies: policies, generations: gens, err: writeErr}
	c.mu.Unlock()
	touched := map[string]bool{}
	for p := range policies {
		touched[p] = true
	}
	if old != nil {
		for p := range old.policies {
			touched[p] = true
		}
		if (old.err == nil) != (writeErr == nil) {
			for _, s := range sources {
				touched[s.Policy] = true
			}
		}
	}
	for _, s := range sources {
		if old == nil || old.generations[s.Policy] != s.Generation {
			touched[s.Policy] = true
		}
	}
	for p := range touched {
		c.statuses.AddAfter(p, time.Second)
	}
}

// write makes the plan's writes, skipping those already made and not yet
// seen in the cache.
func (c *Controller) write(ctx context.Context, logger klog.Logger, plan *Plan) error {
	var errs []error
	for _, d := range plan.Displaced {
		src := policyv1alpha1.ManagedBy(d.Managed.Labels)
		c.recorder.Eventf(d.User, corev1.EventTypeNormal, ReasonManagedVPARemoved,
			"Removing VPA %s, which %s made for the same workload: a VPA written for a workload wins over a policy", d.Managed.Name, src)
	}
	for _, v := range plan.Creates {
		key := v.Namespace + "/" + v.Name
		c.mu.Lock()
		skip := c.isPending(key)
		c.mu.Unlock()
		if skip {
			continue
		}
		created, err := c.c.Kube.VPA.VerticalPodAutoscalers(v.Namespace).Create(ctx, v, metav1.CreateOptions{FieldManager: fieldManager})
		if apierrors.IsAlreadyExists(err) {
			// The cache is behind, or a user's VPA has the name: the next
			// event settles it.
			errs = append(errs, fmt.Errorf("creating VPA %s: %w", key, err))
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("creating VPA %s: %w", key, err))
			continue
		}
		c.metrics.writes.WithLabelValues("create").Inc()
		c.markPending(key, pendingWrite{resourceVersion: created.ResourceVersion})
		logger.V(2).Info("Created managed VPA", "vpa", klog.KObj(v), "policy", v.Labels[policyv1alpha1.LabelPolicy])
	}
	for _, v := range plan.Updates {
		key := v.Namespace + "/" + v.Name
		c.mu.Lock()
		skip := c.isPending(key)
		c.mu.Unlock()
		if skip {
			continue
		}
		updated, err := c.c.Kube.VPA.VerticalPodAutoscalers(v.Namespace).Update(ctx, v, metav1.UpdateOptions{FieldManager: fieldManager})
		if err != nil {
			errs = append(errs, fmt.Errorf("updating VPA %s: %w", key, err))
			continue
		}
		c.metrics.writes.WithLabelValues("update").Inc()
		c.markPending(key, pendingWrite{resourceVersion: updated.ResourceVersion})
		logger.V(2).Info("Updated managed VPA", "vpa", klog.KObj(v), "policy", v.Labels[policyv1alpha1.LabelPolicy])
	}
	for _, v := range plan.Deletes {
		key := v.Namespace + "/" + v.Name
		c.mu.Lock()
		skip := c.isPending(key)
		c.mu.Unlock()
		if skip {
			continue
		}
		uid := v.UID
		err := c.c.Kube.VPA.VerticalPodAutoscalers(v.Namespace).Delete(ctx, v.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting VPA %s: %w", key, err))
			continue
		}
		c.metrics.writes.WithLabelValues("delete").Inc()
		c.markPending(key, pendingWrite{deleted: true})
		logger.V(2).Info("Deleted managed VPA", "vpa", klog.KObj(v))
	}
	if len(errs) > 0 {
		c.metrics.errors.Inc()
	}
	return errors.Join(errs...)
}

// fieldManager names the controller's writes in managed fields.
const fieldManager = "vpa-policy-controller"

// ensureKinds starts a cache for every kind the policies name, and the
// well-known ones.
func (c *Controller) ensureKinds(ctx context.Context) {
	want := map[schema.GroupKind]bool{}
	for _, gk := range DefaultKinds {
		want[gk] = true
	}
	sources, _ := c.sources()
	for _, s := range sources {
		for gk := range s.kinds {
			want[gk] = true
		}
	}
	for gk := range want {
		c.mu.Lock()
		_, have := c.watches[gk]
		c.mu.Unlock()
		if have {
			continue
		}
		gvr, err := c.resolve(ctx, gk)
		c.mu.Lock()
		if err != nil {
			c.kindErrs[gk] = err
			c.mu.Unlock()
			klog.FromContext(ctx).Info("Cannot watch a kind a policy names", "kind", gk.String(), "err", err)
			continue
		}
		delete(c.kindErrs, gk)
		c.mu.Unlock()
		c.watch(ctx, gk, gvr)
	}
}

// builtin are the resources of the well-known kinds.
var builtin = map[schema.GroupKind]schema.GroupVersionResource{
	{Group: "apps", Kind: "Deployment"}:        {Group: "apps", Version: "v1", Resource: "deployments"},
	{Group: "apps", Kind: "StatefulSet"}:       {Group: "apps", Version: "v1", Resource: "statefulsets"},
	{Group: "apps", Kind: "DaemonSet"}:         {Group: "apps", Version: "v1", Resource: "daemonsets"},
	{Group: "apps", Kind: "ReplicaSet"}:        {Group: "apps", Version: "v1", Resource: "replicasets"},
	{Group: "batch", Kind: "CronJob"}:          {Group: "batch", Version: "v1", Resource: "cronjobs"},
	{Group: "batch", Kind: "Job"}:              {Group: "batch", Version: "v1", Resource: "jobs"},
	{Group: "", Kind: "ReplicationController"}: {Group: "", Version: "v1", Resource: "replicationcontrollers"},
}

// resolve finds the resource of a kind: a well-known one, or a namespaced
// custom resource with the scale subresource in its group's preferred
// version.
func (c *Controller) resolve(ctx context.Context, gk schema.GroupKind) (schema.GroupVersionResource, error) {
	if gvr, ok := builtin[gk]; ok {
		return gvr, nil
	}
	versions, err := c.c.Discovery.Versions(ctx, gk.Group)
	if err != nil {
		return schema.GroupVersionResource{}, fmt.Errorf("discovering group %q: %w", gk.Group, err)
	}
	for _, v := range versions {
		gv := schema.GroupVersion{Group: gk.Group, Version: v}
		list, err := c.c.Discovery.Resources(ctx, gv)
		if err != nil {
			return schema.GroupVersionResource{}, fmt.Errorf("discovering %s: %w", gv, err)
		}
		if gvr, ok, err := scalable(list, gv, gk.Kind); ok || err != nil {
			return gvr, err
		}
	}
	return schema.GroupVersionResource{}, fmt.Errorf("no resource of kind %s is served", gk)
}

// scalable finds kind in a group version's resources; an error when it is
// cluster-scoped or has no scale subresource.
func scalable(list *metav1.APIResourceList, gv schema.GroupVersion, kind string) (schema.GroupVersionResource, bool, error) {
	for _, r := range list.APIResources {
		if r.Kind != kind || containsSlash(r.Name) {
			continue
		}
		if !r.Namespaced {
			return schema.GroupVersionResource{}, false, fmt.Errorf("%s %s is cluster-scoped", gv, kind)
		}
		for _, s := range list.APIResources {
			if s.Name == r.Name+"/scale" {
				return gv.WithResource(r.Name), true, nil
			}
		}
		return schema.GroupVersionResource{}, false, fmt.Errorf("%s %s has no scale subresource", gv, kind)
	}
	return schema.GroupVersionResource{}, false, nil
}

func containsSlash(s string) bool {
	for i := range len(s) {
		if s[i] == '/' {
			return true
		}
	}
	return false
}

// watch starts the metadata cache of one kind; once it has synced, every
// namespace is planned again.
func (c *Controller) watch(ctx context.Context, gk schema.GroupKind, gvr schema.GroupVersionResource) {
	// A metadata-only list and watch: client-go's metadatainformer would
	// link its all-groups informer factory into the recommender.
	client := c.c.Metadata.Resource(gvr).Namespace(c.o.Namespaces.WatchNamespace())
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, lo metav1.ListOptions) (runtime.Object, error) {
			return client.List(ctx, lo)
		},
		WatchFuncWithContext: client.Watch,
	}
	inf := cache.NewSharedIndexInformer(lw, &metav1.PartialObjectMetadata{}, informers.DefaultResync,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	apiVersion := gvr.GroupVersion().String()
	_ = inf.SetTransform(workloadTransform(gk, apiVersion))
	if _, err := inf.AddEventHandler(c.workloadHandler()); err != nil {
		klog.FromContext(ctx).Error(err, "Adding the workload handler", "kind", gk.String())
		return
	}
	c.mu.Lock()
	c.watches[gk] = &kindWatch{informer: inf, apiVersion: apiVersion}
	c.mu.Unlock()
	go inf.RunWithContext(ctx)
	go func() {
		if cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			klog.FromContext(ctx).V(1).Info("Watching workloads", "kind", gk.String(), "resource", gvr.String())
			c.enqueueAll()
		}
	}()
}

// workloadTransform turns cached metadata into a *Workload; idempotent, as
// a watch-list start runs it twice.
func workloadTransform(gk schema.GroupKind, apiVersion string) cache.TransformFunc {
	return func(obj any) (any, error) {
		switch o := obj.(type) {
		case *Workload:
			return o, nil
		case *metav1.PartialObjectMetadata:
			w := &Workload{
				ObjectMeta: metav1.ObjectMeta{
					Name: o.Name, Namespace: o.Namespace, UID: o.UID, ResourceVersion: o.ResourceVersion, Labels: o.Labels,
				},
				GroupKind: gk, APIVersion: apiVersion,
			}
			for _, ref := range o.OwnerReferences {
				if ref.Controller != nil && *ref.Controller {
					w.Owned = true
				}
			}
			return w, nil
		}
		return obj, nil
	}
}
