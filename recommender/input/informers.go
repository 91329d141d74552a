package input

import (
	"context"
	"errors"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/openvpa/openvpa/apis/generated/clientset/versioned"
	vpainformers "github.com/openvpa/openvpa/apis/generated/informers/externalversions"
	vpalisters "github.com/openvpa/openvpa/apis/generated/listers/autoscaling/v1"
)

// Resync periods, as upstream.
const (
	DefaultResync = 10 * time.Minute
	PodResync     = time.Hour
)

// StripManagedFields is an informer transform that drops managedFields, which
// the recommender never reads, to save memory.
func StripManagedFields(obj any) (any, error) {
	if acc, ok := obj.(metav1.ObjectMetaAccessor); ok {
		if m := acc.GetObjectMeta(); m != nil {
			m.SetManagedFields(nil)
		}
	}
	return obj, nil
}

// Informers are the recommender's informer factories and listers.
type Informers struct {
	// Kube serves the well-known controllers (for pkg/target).
	Kube informers.SharedInformerFactory
	// Pods serves pods whose phase is not Pending.
	Pods informers.SharedInformerFactory
	// Events serves Evicted events.
	Events informers.SharedInformerFactory
	// VPA serves VerticalPodAutoscalers.
	VPA vpainformers.SharedInformerFactory

	PodLister corelisters.PodLister
	VPALister vpalisters.VerticalPodAutoscalerLister
}

// NewInformers builds the factories scoped to namespace ("" for all). The OOM
// observer, if not nil, is registered on the pod and event informers.
func NewInformers(kube kubernetes.Interface, vpa versioned.Interface, namespace string, oom *OOMObserver) (*Informers, error) {
	strip := informers.WithTransform(StripManagedFields)
	ns := informers.WithNamespace(namespace)
	in := &Informers{
		Kube: informers.NewSharedInformerFactoryWithOptions(kube, DefaultResync, ns, strip),
		Pods: informers.NewSharedInformerFactoryWithOptions(kube, PodResync, ns, strip,
			informers.WithTweakListOptions(func(o *metav1.ListOptions) {
				o.FieldSelector = fields.OneTermNotEqualSelector("status.phase", "Pending").String()
			})),
		Events: informers.NewSharedInformerFactoryWithOptions(kube, 0, ns, strip,
			informers.WithTweakListOptions(func(o *metav1.ListOptions) {
				o.FieldSelector = fields.AndSelectors(
					fields.OneTermEqualSelector("reason", "Evicted"),
					fields.OneTermEqualSelector("involvedObject.kind", "Pod"),
				).String()
			})),
		VPA: vpainformers.NewSharedInformerFactoryWithOptions(vpa, DefaultResync,
			vpainformers.WithNamespace(namespace), vpainformers.WithTransform(StripManagedFields)),
	}
	podInformer := in.Pods.Core().V1().Pods()
	in.PodLister = podInformer.Lister()
	in.VPALister = in.VPA.Autoscaling().V1().VerticalPodAutoscalers().Lister()
	if oom != nil {
		if _, err := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
			UpdateFunc: oom.OnPodUpdate,
		}); err != nil {
			return nil, err
		}
		if _, err := in.Events.Core().V1().Events().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: oom.OnEvent,
		}); err != nil {
			return nil, err
		}
	}
	return in, nil
}

// Start starts every factory.
func (in *Informers) Start(ctx context.Context) {
	in.Kube.Start(ctx.Done())
	in.Pods.Start(ctx.Done())
	in.Events.Start(ctx.Done())
	in.VPA.Start(ctx.Done())
}

// WaitForSync blocks until every started informer has synced, or ctx ends.
func (in *Informers) WaitForSync(ctx context.Context) error {
	ok := true
	for _, m := range in.Kube.WaitForCacheSync(ctx.Done()) {
		ok = ok && m
	}
	for _, m := range in.Pods.WaitForCacheSync(ctx.Done()) {
		ok = ok && m
	}
	for _, m := range in.Events.WaitForCacheSync(ctx.Done()) {
		ok = ok && m
	}
	for _, m := range in.VPA.WaitForCacheSync(ctx.Done()) {
		ok = ok && m
	}
	if !ok {
		if err := ctx.Err(); err != nil {
			return err
		}
		return errors.New("informer caches did not sync")
	}
	return nil
}
