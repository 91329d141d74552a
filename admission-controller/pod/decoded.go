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

package pod

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openvpa/openvpa/pkg/target"
)

// Decoded is what the admission controller knows of a pod under review:
// the fields its decoder reads from the AdmissionReview, and no others, so
// that the handler and the Finder cannot read a field that was never
// decoded. Code shared with the other components, which takes a
// *corev1.Pod, gets one from Pod.
//
// Each field is the pod's field of the same name, metadata's from Name to
// OwnerReferences and spec's after, as the API server's decoder fills it;
// TestDecodedFields pairs them and holds the decoder and Pod to them.
type Decoded struct {
	Name            string
	GenerateName    string
	Namespace       string
	Labels          map[string]string
	Annotations     map[string]string
	OwnerReferences []Owner
	Containers      []Container
	InitContainers  []Container
	// Resources are the pod-level resources, nil when the pod has none.
	Resources *corev1.ResourceRequirements
	// NodeSelector, RequiredNodeAffinity (the pod's
	// affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution)
	// and Tolerations decide which nodes the pod may be scheduled on, for
	// node fit.
	NodeSelector         map[string]string
	RequiredNodeAffinity *corev1.NodeSelector
	Tolerations          []corev1.Toleration
}

// Owner is the part of an ownerReference that Decoded holds.
type Owner struct {
	APIVersion string
	Kind       string
	Name       string
	Controller *bool
}

// Container is the part of a container or init container that Decoded
// holds.
type Container struct {
	Name          string
	Resources     corev1.ResourceRequirements
	RestartPolicy *corev1.ContainerRestartPolicy
}

// Pod returns a pod holding the fields of p and nothing else, for code that
// takes a *corev1.Pod (pkg/recommendation); it is the one place a Decoded
// becomes a corev1.Pod. The pod is written into dst, whose slices are
// reused, and shares p's maps, resources and pointers: it must be treated
// as read-only and not kept past p's next change.
func (p *Decoded) Pod(dst *corev1.Pod) *corev1.Pod {
	*dst = corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: p.Name, GenerateName: p.GenerateName, Namespace: p.Namespace,
			Labels: p.Labels, Annotations: p.Annotations, OwnerReferences: podOwners(dst.OwnerReferences, p.OwnerReferences),
		},
		Spec: corev1.PodSpec{
			Containers:     podContainers(dst.Spec.Containers, p.Containers),
			InitContainers: podContainers(dst.Spec.InitContainers, p.InitContainers),
			Resources:      p.Resources,
			NodeSelector:   p.NodeSelector,
			Tolerations:    p.Tolerations,
		},
	}
	if p.RequiredNodeAffinity != nil {
		dst.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: p.RequiredNodeAffinity}}
	}
	return dst
}

// podOwners is Pod's copy of the owner references into buf, nil for nil.
func podOwners(buf []metav1.OwnerReference, owners []Owner) []metav1.OwnerReference {
	if owners == nil {
		return nil
	}
	if buf == nil {
		buf = make([]metav1.OwnerReference, 0, len(owners))
	}
	buf = buf[:0]
	for i := range owners {
		o := &owners[i]
		buf = append(buf, metav1.OwnerReference{APIVersion: o.APIVersion, Kind: o.Kind, Name: o.Name, Controller: o.Controller})
	}
	return buf
}

// podContainers is Pod's copy of a list of containers into buf, nil for a
// nil list.
func podContainers(buf []corev1.Container, cs []Container) []corev1.Container {
	if cs == nil {
		return nil
	}
	if buf == nil {
		buf = make([]corev1.Container, 0, len(cs))
	}
	buf = buf[:0]
	for i := range cs {
		c := &cs[i]
		buf = append(buf, corev1.Container{Name: c.Name, Resources: c.Resources, RestartPolicy: c.RestartPolicy})
	}
	return buf
}

// controller is target.ControllerOf for the owners of p: the owner with
// controller=true, the last one when several claim control; false when
// none does.
func (p *Decoded) controller() (target.Ref, bool) {
	var ref target.Ref
	found := false
	for i := range p.OwnerReferences {
		if o := &p.OwnerReferences[i]; o.Controller != nil && *o.Controller {
			ref = target.Ref{APIVersion: o.APIVersion, Kind: o.Kind, Namespace: p.Namespace, Name: o.Name}
			found = true
		}
	}
	return ref, found
}

// displayName is the pod's name, or its generateName followed by "%" for
// pods whose name the API server has not generated yet.
func (p *Decoded) displayName() string {
	if p.Name != "" {
		return p.Name
	}
	return p.GenerateName + "%"
}
