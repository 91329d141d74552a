package input

import (
	"context"
	"errors"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	vpaclient "github.com/openvpa/openvpa/apis/generated/clientset/versioned/typed/autoscaling/v1"
	vpalisters "github.com/openvpa/openvpa/apis/generated/listers/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/kubeclient"
	"github.com/openvpa/openvpa/pkg/recommendation"
	"github.com/openvpa/openvpa/pkg/target"
)

// Resync periods, as upstream.
const (
	DefaultResync = 10 * time.Minute
	PodResync     = time.Hour
)

// Informers are the recommender's informers and listers. They are built on
// REST clients for the few built-in kinds the recommender reads
// (kubeclient.RESTClient) rather than on client-go's shared informer factory,
// which links every API group's informer, lister and typed client into the
// binary.
type Informers struct {
	// Targets reads the well-known controllers (for pkg/target).
	Targets target.IndexerWorkloads

	PodLister PodLister
	VPALister vpalisters.VerticalPodAutoscalerLister
	// LimitRanges returns a namespace's LimitRanges, merged.
	LimitRanges func(namespace string) recommendation.LimitRanges

	all []cache.SharedIndexInformer
}

// Clients are what NewInformers reads from.
type Clients struct {
	Core  rest.Interface // core/v1
	Apps  rest.Interface // apps/v1
	Batch rest.Interface // batch/v1
	VPA   *vpaclient.AutoscalingV1Client
}

// NewClients builds Clients from cfg: protobuf for the built-in kinds, JSON
// for the VPA kinds.
func NewClients(cfg *rest.Config) (Clients, error) {
	var c Clients
	var err error
	if c.Core, err = kubeclient.RESTClient(cfg, corev1.SchemeGroupVersion); err != nil {
		return c, err
	}
	if c.Apps, err = kubeclient.RESTClient(cfg, appsv1.SchemeGroupVersion); err != nil {
		return c, err
	}
	if c.Batch, err = kubeclient.RESTClient(cfg, batchv1.SchemeGroupVersion); err != nil {
		return c, err
	}
	c.VPA, err = vpaclient.NewForConfig(cfg)
	return c, err
}

// NewInformers builds the informers scoped to namespace ("" for all). The OOM
// observer, if not nil, is registered on the pod and event informers.
func NewInformers(c Clients, namespace string, oom *OOMObserver) (*Informers, error) {
	in := &Informers{}
	controllers := []struct {
		kind, resource string
		client         rest.Interface
		obj            runtime.Object
	}{
		{target.KindDeployment, "deployments", c.Apps, &appsv1.Deployment{}},
		{target.KindReplicaSet, "replicasets", c.Apps, &appsv1.ReplicaSet{}},
		{target.KindStatefulSet, "statefulsets", c.Apps, &appsv1.StatefulSet{}},
		{target.KindDaemonSet, "daemonsets", c.Apps, &appsv1.DaemonSet{}},
		{target.KindJob, "jobs", c.Batch, &batchv1.Job{}},
		{target.KindCronJob, "cronjobs", c.Batch, &batchv1.CronJob{}},
		{target.KindReplicationController, "replicationcontrollers", c.Core, &corev1.ReplicationController{}},
	}
	workloads := target.IndexerWorkloads{}
	for _, k := range controllers {
		workloads[k.kind] = in.add(k.client, k.resource, namespace, k.obj, DefaultResync, nil, target.TrimWorkload).GetIndexer()
	}
	in.Targets = workloads
	pods := in.add(c.Core, "pods", namespace, &corev1.Pod{}, PodResync, func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermNotEqualSelector("status.phase", "Pending").String()
	}, TrimPod)
	in.PodLister = NewPodLister(pods.GetIndexer())
	vpas := in.add(c.VPA.RESTClient(), "verticalpodautoscalers", namespace, &vpav1.VerticalPodAutoscaler{}, DefaultResync, nil, target.StripManagedFields)
	in.VPALister = vpalisters.NewVerticalPodAutoscalerLister(vpas.GetIndexer())
	lrs := in.add(c.Core, "limitranges", namespace, &corev1.LimitRange{}, DefaultResync, nil, target.StripManagedFields).GetIndexer()
	in.LimitRanges = func(ns string) recommendation.LimitRanges {
		objs, err := lrs.ByIndex(cache.NamespaceIndex, ns)
		if err != nil || len(objs) == 0 {
			return recommendation.LimitRanges{}
		}
		items := make([]*corev1.LimitRange, 0, len(objs))
		for _, o := range objs {
			if lr, ok := o.(*corev1.LimitRange); ok {
				items = append(items, lr)
			}
		}
		return recommendation.MergeLimitRanges(items)
	}
	events := in.add(c.Core, "events", namespace, &corev1.Event{}, 0, func(o *metav1.ListOptions) {
		o.FieldSelector = fields.AndSelectors(
			fields.OneTermEqualSelector("reason", "Evicted"),
			fields.OneTermEqualSelector("involvedObject.kind", "Pod"),
		).String()
	}, target.StripManagedFields)
	if oom != nil {
		if _, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: oom.OnPodUpdate}); err != nil {
			return nil, err
		}
		if _, err := events.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: oom.OnEvent}); err != nil {
			return nil, err
		}
	}
	return in, nil
}

// add creates an informer over client's resource, indexed by namespace as
// the listers expect.
func (in *Informers) add(client rest.Interface, resource, namespace string, obj runtime.Object, resync time.Duration,
	tweak func(*metav1.ListOptions), transform cache.TransformFunc) cache.SharedIndexInformer {
	if tweak == nil {
		tweak = func(*metav1.ListOptions) {}
	}
	lw := cache.NewFilteredListWatchFromClient(client, resource, namespace, tweak)
	inf := cache.NewSharedIndexInformer(lw, obj, resync, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	if transform != nil {
		_ = inf.SetTransform(transform) // cannot fail before the informer starts
	}
	in.all = append(in.all, inf)
	return inf
}

// Start starts every informer.
func (in *Informers) Start(ctx context.Context) {
	for _, inf := range in.all {
		go inf.RunWithContext(ctx)
	}
}

// WaitForSync blocks until every informer has synced, or ctx ends.
func (in *Informers) WaitForSync(ctx context.Context) error {
	synced := make([]cache.InformerSynced, len(in.all))
	for i, inf := range in.all {
		synced[i] = inf.HasSynced
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		if err := ctx.Err(); err != nil {
			return err
		}
		return errors.New("informer caches did not sync")
	}
	return nil
}
