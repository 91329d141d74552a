package target

import (
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TrimWorkload is an informer transform for the well-known controllers that
// keeps only what the Resolver reads: identity, labels, owner references and
// the selector (for a CronJob, its job template's labels). Pod templates,
// annotations, managed fields and status are dropped: in a large cluster
// they are most of the memory an informer cache of controllers holds.
// Other objects pass through with their managed fields dropped.
func TrimWorkload(obj any) (any, error) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return &appsv1.Deployment{ObjectMeta: TrimObjectMeta(&o.ObjectMeta),
			Spec: appsv1.DeploymentSpec{Selector: o.Spec.Selector}}, nil
	case *appsv1.ReplicaSet:
		return &appsv1.ReplicaSet{ObjectMeta: TrimObjectMeta(&o.ObjectMeta),
			Spec: appsv1.ReplicaSetSpec{Selector: o.Spec.Selector}}, nil
	case *appsv1.StatefulSet:
		return &appsv1.StatefulSet{ObjectMeta: TrimObjectMeta(&o.ObjectMeta),
			Spec: appsv1.StatefulSetSpec{Selector: o.Spec.Selector}}, nil
	case *appsv1.DaemonSet:
		return &appsv1.DaemonSet{ObjectMeta: TrimObjectMeta(&o.ObjectMeta),
			Spec: appsv1.DaemonSetSpec{Selector: o.Spec.Selector}}, nil
	case *batchv1.Job:
		return &batchv1.Job{ObjectMeta: TrimObjectMeta(&o.ObjectMeta),
			Spec: batchv1.JobSpec{Selector: o.Spec.Selector}}, nil
	case *batchv1.CronJob:
		c := &batchv1.CronJob{ObjectMeta: TrimObjectMeta(&o.ObjectMeta)}
		c.Spec.JobTemplate.Spec.Template.Labels = o.Spec.JobTemplate.Spec.Template.Labels
		return c, nil
	case *corev1.ReplicationController:
		return &corev1.ReplicationController{ObjectMeta: TrimObjectMeta(&o.ObjectMeta),
			Spec: corev1.ReplicationControllerSpec{Selector: o.Spec.Selector}}, nil
	}
	return StripManagedFields(obj)
}

// StripManagedFields is an informer transform that drops managed fields,
// which no component reads, to save memory.
func StripManagedFields(obj any) (any, error) {
	if acc, ok := obj.(metav1.ObjectMetaAccessor); ok {
		if m := acc.GetObjectMeta(); m != nil {
			m.SetManagedFields(nil)
		}
	}
	return obj, nil
}

// TrimObjectMeta returns the identity, labels and owner references of m:
// what informer transforms keep of an object's metadata.
func TrimObjectMeta(m *metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:              m.Name,
		Namespace:         m.Namespace,
		UID:               m.UID,
		ResourceVersion:   m.ResourceVersion,
		Generation:        m.Generation,
		CreationTimestamp: m.CreationTimestamp,
		DeletionTimestamp: m.DeletionTimestamp,
		Labels:            m.Labels,
		OwnerReferences:   m.OwnerReferences,
	}
}
