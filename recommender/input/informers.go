package input

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/openvpa/openvpa/apis/generated/clientset/versioned"
	vpainformers "github.com/openvpa/openvpa/apis/generated/informers/externalversions"
	vpalisters "github.com/openvpa/openvpa/apis/generated/listers/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/target"
)

// Resync periods, as upstream.
const (
	DefaultResync = 10 * time.Minute
	PodResync     = time.Hour
)

// TrimPod is the pod informer's transform: it keeps what the recommender
// reads (identity, labels, owner references, container names and requests,
// phase, and the container statuses the OOM observer compares) and drops the
// rest of the spec and status, annotations and managed fields. Pods are most
// of what the recommender caches; a real pod's volumes, environment, probes,
// conditions and annotations are several times the size of what remains.
func TrimPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return target.StripManagedFields(obj)
	}
	out := &corev1.Pod{
		ObjectMeta: target.TrimObjectMeta(&p.ObjectMeta),
		Status:     corev1.PodStatus{Phase: p.Status.Phase},
	}
	out.Spec.Containers = make([]corev1.Container, len(p.Spec.Containers))
	for i, c := range p.Spec.Containers {
		out.Spec.Containers[i] = corev1.Container{Name: c.Name, Resources: requestsOnly(&c.Resources)}
	}
	if len(p.Spec.InitContainers) > 0 {
		out.Spec.InitContainers = make([]corev1.Container, len(p.Spec.InitContainers))
		for i, c := range p.Spec.InitContainers {
			out.Spec.InitContainers[i] = corev1.Container{Name: c.Name}
		}
	}
	if len(p.Status.ContainerStatuses) > 0 {
		out.Status.ContainerStatuses = make([]corev1.ContainerStatus, len(p.Status.ContainerStatuses))
		for i, s := range p.Status.ContainerStatuses {
			out.Status.ContainerStatuses[i] = corev1.ContainerStatus{
				Name:                 s.Name,
				RestartCount:         s.RestartCount,
				State:                trimState(s.State),
				LastTerminationState: trimState(s.LastTerminationState),
			}
			if s.Resources != nil {
				r := requestsOnly(s.Resources)
				out.Status.ContainerStatuses[i].Resources = &r
			}
		}
	}
	return out, nil
}

// requestsOnly returns the requests of r: the recommender never reads limits.
func requestsOnly(r *corev1.ResourceRequirements) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Requests: r.Requests}
}

// trimState keeps whether a container runs and why and when it terminated.
func trimState(s corev1.ContainerState) corev1.ContainerState {
	var out corev1.ContainerState
	if s.Running != nil {
		out.Running = &corev1.ContainerStateRunning{}
	}
	if t := s.Terminated; t != nil {
		out.Terminated = &corev1.ContainerStateTerminated{Reason: t.Reason, FinishedAt: t.FinishedAt, ExitCode: t.ExitCode}
	}
	return out
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
	strip := informers.WithTransform(target.StripManagedFields)
	ns := informers.WithNamespace(namespace)
	in := &Informers{
		Kube: informers.NewSharedInformerFactoryWithOptions(kube, DefaultResync, ns, informers.WithTransform(target.TrimWorkload)),
		Pods: informers.NewSharedInformerFactoryWithOptions(kube, PodResync, ns, informers.WithTransform(TrimPod),
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
			vpainformers.WithNamespace(namespace), vpainformers.WithTransform(target.StripManagedFields)),
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
