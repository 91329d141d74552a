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
	watches  map[schema.GroupKind]cache.SharedIndexInformer
	kindErrs map[schema.GroupKind]error
	// results are the last plan's counts of each namespace.
	results map[string]*nsResult
	// pending are the writes made and not yet seen in the VPA cache, by
	// namespace/name: the resource version written ("" for a delete), so
	// that a plan made before the cache caught up does not write again.
	pending map[string]pendingWrite
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
		watches:  map[schema.GroupKind]cache.SharedIndexInformer{},
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

// sources compiles the policies in the cache; invalid ones are left out
// (their status says why).
func (c *Controller) sources() []*Source {
	var out []*Source
	for _, obj := range c.policiesIdx.List() {
		p, ok := obj.(*policyv1alpha1.VerticalPodAutoscalerPolicy)
		if !ok || p.DeletionTimestamp != nil {
			continue
		}
		if s, err := Compile(p); err == nil {
			out = append(out, s)
		}
	}
	return out
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
	sources := c.sources()
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
	for _, d := range plan.Displaced {
		c.recorder.Eventf(d.User, corev1.EventTypeNormal, ReasonManagedVPARemoved,
			"Removing VPA %s, which %s made for the same workload: a VPA written for a workload wins over a policy",
			d.Managed.Name, policyv1alpha1.ManagedBy(d.Managed.Labels))
	}
	type op struct {
		verb string
		vpas []*vpav1.VerticalPodAutoscaler
		// do writes one VPA and returns what the cache will hold after it.
		do func(*vpav1.VerticalPodAutoscaler) (pendingWrite, error)
	}
	client := c.c.Kube.VPA.VerticalPodAutoscalers
	ops := []op{{verb: "create", vpas: plan.Creates, do: func(v *vpav1.VerticalPodAutoscaler) (pendingWrite, error) {
		// AlreadyExists: the cache is behind, or a user's VPA has the name;
		// the error is retried, and the next event settles it.
		out, err := client(v.Namespace).Create(ctx, v, metav1.CreateOptions{FieldManager: fieldManager})
		if err != nil {
			return pendingWrite{}, err
		}
		return pendingWrite{resourceVersion: out.ResourceVersion}, nil
	}}, {verb: "update", vpas: plan.Updates, do: func(v *vpav1.VerticalPodAutoscaler) (pendingWrite, error) {
		out, err := client(v.Namespace).Update(ctx, v, metav1.UpdateOptions{FieldManager: fieldManager})
		if err != nil {
			return pendingWrite{}, err
		}
		return pendingWrite{resourceVersion: out.ResourceVersion}, nil
	}}, {verb: "delete", vpas: plan.Deletes, do: func(v *vpav1.VerticalPodAutoscaler) (pendingWrite, error) {
		uid := v.UID
		err := client(v.Namespace).Delete(ctx, v.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if apierrors.IsNotFound(err) {
			err = nil
		}
		return pendingWrite{deleted: true}, err
	}}}
	var errs []error
	for _, o := range ops {
		for _, v := range o.vpas {
			key := v.Namespace + "/" + v.Name
			c.mu.Lock()
			skip := c.isPending(key)
			c.mu.Unlock()
			if skip {
				continue
			}
			p, err := o.do(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s VPA %s: %w", o.verb, key, err))
				continue
			}
			c.metrics.writes.WithLabelValues(o.verb).Inc()
			c.markPending(key, p)
			logger.V(2).Info("Wrote managed VPA", "verb", o.verb, "vpa", klog.KObj(v), "policy", v.Labels[policyv1alpha1.LabelPolicy])
		}
	}
	if len(errs) > 0 {
		c.metrics.errors.Inc()
	}
	return errors.Join(errs...)
}

// fieldManager names the controller's writes in managed fields.
const fieldManager = "vpa-policy-controller"
