package target

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// Workload is what the Resolver reads of a well-known controller: its
// metadata (the owner chain) and its selector.
type Workload struct {
	metav1.ObjectMeta
	// Kind is one of the well-known controller kinds.
	Kind string
	// Selector is spec.selector of a Deployment, ReplicaSet, StatefulSet,
	// DaemonSet or Job.
	Selector *metav1.LabelSelector
	// MatchLabels is a ReplicationController's selector, or the labels of a
	// CronJob's job template.
	MatchLabels map[string]string
	// Replicas is what the updater counts as the controller's configured
	// replicas, as upstream: spec.replicas of a Deployment, ReplicaSet,
	// StatefulSet or ReplicationController, status.numberReady of a
	// DaemonSet; nil for the other kinds and when unset.
	Replicas *int32
}

// LabelSelector returns the selector of the workload's pods.
func (w *Workload) LabelSelector() (labels.Selector, error) {
	switch w.Kind {
	case KindCronJob, KindReplicationController:
		return labels.SelectorFromSet(w.MatchLabels), nil
	}
	if w.Selector == nil {
		return nil, fmt.Errorf("%s %s/%s has no selector", w.Kind, w.Namespace, w.Name)
	}
	sel, err := metav1.LabelSelectorAsSelector(w.Selector)
	if err != nil {
		return nil, fmt.Errorf("invalid selector of %s %s/%s: %w", w.Kind, w.Namespace, w.Name, err)
	}
	return sel, nil
}

// WorkloadOf returns the Workload of a well-known controller object or of a
// *Workload; false for any other object. The result shares the object's maps
// and slices: do not modify them.
func WorkloadOf(obj any) (Workload, bool) {
	switch o := obj.(type) {
	case *Workload:
		return *o, true
	case *appsv1.Deployment:
		return Workload{ObjectMeta: TrimObjectMeta(&o.ObjectMeta), Kind: KindDeployment, Selector: o.Spec.Selector, Replicas: o.Spec.Replicas}, true
	case *appsv1.ReplicaSet:
		return Workload{ObjectMeta: TrimObjectMeta(&o.ObjectMeta), Kind: KindReplicaSet, Selector: o.Spec.Selector, Replicas: o.Spec.Replicas}, true
	case *appsv1.StatefulSet:
		return Workload{ObjectMeta: TrimObjectMeta(&o.ObjectMeta), Kind: KindStatefulSet, Selector: o.Spec.Selector, Replicas: o.Spec.Replicas}, true
	case *appsv1.DaemonSet:
		// A copy: a pointer into the status would keep the whole object.
		ready := o.Status.NumberReady
		return Workload{ObjectMeta: TrimObjectMeta(&o.ObjectMeta), Kind: KindDaemonSet, Selector: o.Spec.Selector, Replicas: &ready}, true
	case *batchv1.Job:
		return Workload{ObjectMeta: TrimObjectMeta(&o.ObjectMeta), Kind: KindJob, Selector: o.Spec.Selector}, true
	case *batchv1.CronJob:
		return Workload{ObjectMeta: TrimObjectMeta(&o.ObjectMeta), Kind: KindCronJob,
			MatchLabels: o.Spec.JobTemplate.Spec.Template.Labels}, true
	case *corev1.ReplicationController:
		return Workload{ObjectMeta: TrimObjectMeta(&o.ObjectMeta), Kind: KindReplicationController, MatchLabels: o.Spec.Selector, Replicas: o.Spec.Replicas}, true
	}
	return Workload{}, false
}

// Workloads reads the well-known controllers.
type Workloads interface {
	// Workload returns the named controller of a well-known kind, or an
	// error that apierrors.IsNotFound recognises.
	Workload(kind, namespace, name string) (Workload, error)
}

// Workload implements Workloads over the typed listers.
func (l Listers) Workload(kind, namespace, name string) (Workload, error) {
	var obj any
	var err error
	switch kind {
	case KindDeployment:
		obj, err = l.Deployments.Deployments(namespace).Get(name)
	case KindReplicaSet:
		obj, err = l.ReplicaSets.ReplicaSets(namespace).Get(name)
	case KindStatefulSet:
		obj, err = l.StatefulSets.StatefulSets(namespace).Get(name)
	case KindDaemonSet:
		obj, err = l.DaemonSets.DaemonSets(namespace).Get(name)
	case KindJob:
		obj, err = l.Jobs.Jobs(namespace).Get(name)
	case KindCronJob:
		obj, err = l.CronJobs.CronJobs(namespace).Get(name)
	case KindReplicationController:
		obj, err = l.ReplicationControllers.ReplicationControllers(namespace).Get(name)
	default:
		return Workload{}, fmt.Errorf("kind %s is not a well-known controller", kind)
	}
	if err != nil {
		return Workload{}, err
	}
	w, _ := WorkloadOf(obj)
	return w, nil
}

// IndexerWorkloads implements Workloads over informer indexers keyed by kind,
// whose objects are Workloads (see TrimWorkload) or well-known controllers.
type IndexerWorkloads map[string]cache.Indexer

// Workload implements Workloads.
func (w IndexerWorkloads) Workload(kind, namespace, name string) (Workload, error) {
	idx, ok := w[kind]
	if !ok {
		return Workload{}, fmt.Errorf("kind %s is not a well-known controller", kind)
	}
	obj, exists, err := idx.GetByKey(namespace + "/" + name)
	if err != nil {
		return Workload{}, err
	}
	if !exists {
		return Workload{}, apierrors.NewNotFound(schema.GroupResource{Resource: kind}, name)
	}
	out, ok := WorkloadOf(obj)
	if !ok {
		return Workload{}, fmt.Errorf("cached %s %s/%s is a %T", kind, namespace, name, obj)
	}
	return out, nil
}
