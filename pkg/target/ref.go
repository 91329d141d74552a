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

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Ref identifies a controller object in a namespace.
type Ref struct {
	// APIVersion is the group/version as written in a targetRef or an
	// ownerReference, e.g. "apps/v1".
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
}

// RefFromTargetRef turns a VPA's targetRef in namespace ns into a Ref.
func RefFromTargetRef(ns string, t *autoscalingv1.CrossVersionObjectReference) Ref {
	return Ref{APIVersion: t.APIVersion, Kind: t.Kind, Namespace: ns, Name: t.Name}
}

// ControllerOf returns the owner with controller=true of an object in namespace
// ns, or nil. When several owners claim control the last one wins, as upstream.
func ControllerOf(ns string, owners []metav1.OwnerReference) *Ref {
	var ref *Ref
	for i := range owners {
		o := owners[i]
		if o.Controller != nil && *o.Controller {
			ref = &Ref{APIVersion: o.APIVersion, Kind: o.Kind, Namespace: ns, Name: o.Name}
		}
	}
	return ref
}

// Group returns the API group of the reference ("" for the core group or an
// unparsable apiVersion).
func (r Ref) Group() string {
	gv, err := schema.ParseGroupVersion(r.APIVersion)
	if err != nil {
		return ""
	}
	return gv.Group
}

// GroupKind returns the group and kind of the reference.
func (r Ref) GroupKind() schema.GroupKind {
	return schema.GroupKind{Group: r.Group(), Kind: r.Kind}
}

// SameObject reports whether two references name the same object: same
// namespace, kind and name. The API version is ignored, so a targetRef written
// as extensions/v1beta1 still matches an apps/v1 owner.
func (r Ref) SameObject(o Ref) bool {
	return r.Namespace == o.Namespace && r.Kind == o.Kind && r.Name == o.Name
}

// String formats the reference as upstream does in its condition messages:
// <apiVersion>.<kind>/<name>.
func (r Ref) String() string {
	return fmt.Sprintf("%s.%s/%s", r.APIVersion, r.Kind, r.Name)
}
