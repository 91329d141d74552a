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
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/cache"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
)

// Workload is what the Resolver reads of a well-known controller: its
// metadata (the owner chain) and its selector.
type Workload struct {
	metav1.ObjectMeta
	// Kind is one of the well-known controller kinds.
	Kind string
	// Selector selects the workload's pods: spec.selector of a Deployment,
	// ReplicaSet, StatefulSet, DaemonSet or Job, a ReplicationController's
	// selector, the labels of a CronJob's job template. It is parsed once,
	// when the object is cached, since the Resolver reads it for every VPA
	// at every loop; parsed, it is also smaller than the decoded form, whose
	// matchLabels map is a group of eight slots (at 10,000 Deployments and
	// their ReplicaSets: 8.5 MB decoded, about 2 MB parsed, in heap
	// profiles). Nil when SelectorErr says why.
	Selector labels.Selector
	// SelectorErr is why the workload has no Selector: none is set, or it
	// does not parse.
	SelectorErr error
	// Replicas is what the updater counts as the controller's configured
	// replicas, as upstream: spec.replicas of a Deployment, ReplicaSet,
	// StatefulSet or ReplicationController, status.desiredNumberScheduled of a
	// DaemonSet; nil for the other kinds and when unset.
	Replicas *int32
	// Surge is how many pods a rollout of a Deployment adds beyond its
	// replicas at once: its rolling update's maxSurge resolved against its
	// replicas (rounded up, as the Deployment controller does), 0 for the
	// Recreate strategy and the other kinds.
	Surge int32
}

// LabelSelector returns the selector of the workload's pods.
func (w *Workload) LabelSelector() (labels.Selector, error) {
	return w.Selector, w.SelectorErr
}

// workload returns the Workload of kind with metadata m whose pods sel
// selects (nil: none set).
func workload(kind string, m *metav1.ObjectMeta, sel *metav1.LabelSelector, replicas *int32) Workload {
	w := Workload{ObjectMeta: TrimObjectMeta(m), Kind: kind, Replicas: replicas}
	if sel == nil {
		w.SelectorErr = fmt.Errorf("%s %s/%s has no selector", kind, m.Namespace, m.Name)
		return w
	}
	parsed, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		w.SelectorErr = fmt.Errorf("invalid selector of %s %s/%s: %w", kind, m.Namespace, m.Name, err)
		return w
	}
	w.Selector = parsed
	return w
}

// workloadOfSet returns the Workload of kind with metadata m whose pods have
// the labels set.
func workloadOfSet(kind string, m *metav1.ObjectMeta, set map[string]string, replicas *int32) Workload {
	return Workload{ObjectMeta: TrimObjectMeta(m), Kind: kind, Selector: labels.SelectorFromSet(set), Replicas: replicas}
}

// WorkloadOf returns the Workload of a well-known controller object or of a
// *Workload; false for any other object. The result shares the object's
// slices: do not modify them.
func WorkloadOf(obj any) (Workload, bool) {
	switch o := obj.(type) {
	case *Workload:
		return *o, true
	case *appsv1.Deployment:
		w := workload(KindDeployment, &o.ObjectMeta, o.Spec.Selector, o.Spec.Replicas)
		w.Surge = deploymentSurge(o)
		return w, true
	case *appsv1.ReplicaSet:
		return workload(KindReplicaSet, &o.ObjectMeta, o.Spec.Selector, o.Spec.Replicas), true
	case *appsv1.StatefulSet:
		return workload(KindStatefulSet, &o.ObjectMeta, o.Spec.Selector, o.Spec.Replicas), true
	case *appsv1.DaemonSet:
		// A DaemonSet's configured replicas are the nodes it should run on
		// (upstream 1.8; 1.7 counted its ready pods, so pods not yet ready
		// shrank the disruption budget). A copy: a pointer into the status
		// would keep the whole object.
		desired := o.Status.DesiredNumberScheduled
		return workload(KindDaemonSet, &o.ObjectMeta, o.Spec.Selector, &desired), true
	case *batchv1.Job:
		return workload(KindJob, &o.ObjectMeta, o.Spec.Selector, nil), true
	case *batchv1.CronJob:
		return workloadOfSet(KindCronJob, &o.ObjectMeta, o.Spec.JobTemplate.Spec.Template.Labels, nil), true
	case *corev1.ReplicationController:
		return workloadOfSet(KindReplicationController, &o.ObjectMeta, o.Spec.Selector, o.Spec.Replicas), true
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

// deploymentSurge is a Deployment's maxSurge resolved against its
// replicas, with the API's defaults (RollingUpdate, 25%, one replica).
func deploymentSurge(d *appsv1.Deployment) int32 {
	if d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		return 0
	}
	surge := intstr.FromString("25%")
	if ru := d.Spec.Strategy.RollingUpdate; ru != nil && ru.MaxSurge != nil {
		surge = *ru.MaxSurge
	}
	replicas := 1
	if d.Spec.Replicas != nil {
		replicas = int(*d.Spec.Replicas)
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(&surge, replicas, true)
	if err != nil || n < 0 {
		return 0
	}
	return int32(min(n, 1<<30))
}

// SurgeOf returns the Surge of the VPA's target when it is a well-known
// controller w holds, 0 otherwise.
func SurgeOf(w Workloads, vpa *vpav1.VerticalPodAutoscaler) int32 {
	if w == nil || vpa == nil || vpa.Spec.TargetRef == nil {
		return 0
	}
	wl, err := w.Workload(vpa.Spec.TargetRef.Kind, vpa.Namespace, vpa.Spec.TargetRef.Name)
	if err != nil {
		return 0
	}
	return wl.Surge
}
