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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TrimWorkload is an informer transform for the well-known controllers that
// turns each into a *Workload: identity, labels, owner references and the
// selector (for a CronJob, its job template's labels), which is all the
// Resolver reads. A trimmed Deployment would still cost its 1.2 KB struct; a
// Workload is a fifth of that. Read the cache with IndexerWorkloads. Other
// objects pass through with their managed fields dropped; the transform is
// idempotent.
func TrimWorkload(obj any) (any, error) {
	if w, ok := obj.(*Workload); ok {
		return w, nil
	}
	if w, ok := WorkloadOf(obj); ok {
		return &w, nil
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

// TrimObjectMeta returns the identity and owner references of m: what
// informer transforms keep of a controller's metadata. Its labels are not
// kept: a controller's pods are found by its selector, never by its labels,
// and each label map is a group of eight slots per cached controller.
func TrimObjectMeta(m *metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:              m.Name,
		Namespace:         m.Namespace,
		UID:               m.UID,
		ResourceVersion:   m.ResourceVersion,
		Generation:        m.Generation,
		CreationTimestamp: m.CreationTimestamp,
		DeletionTimestamp: m.DeletionTimestamp,
		OwnerReferences:   m.OwnerReferences,
	}
}
