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

// Package vpacache is the recommender's cache of VerticalPodAutoscalers. The
// recommender reads a VPA's stored recommendation only to compare it with the
// one it computes, so each cached object is kept without it, and the
// recommendation beside it in a compact form: its quantities in small sorted
// slices instead of four maps per container (a Go map of one or two
// entries still allocates a group of eight slots; at 10,000 VPAs the maps
// were 25 MB of the recommender's live heap). Condition and resource names,
// repeated in every object, are interned.
package vpacache

import (
	"slices"
	"strings"
	"unique"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/tools/cache"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
)

// LastAppliedAnnotation is kubectl's copy of the applied object, which the
// recommender never reads.
const LastAppliedAnnotation = corev1.LastAppliedConfigAnnotation

// VPA is a VerticalPodAutoscaler as the recommender caches it.
type VPA struct {
	// VerticalPodAutoscaler is the object without managed fields, kubectl's
	// last-applied annotation and status.recommendation. It is shared with
	// the cache: read it, never change it.
	*vpav1.VerticalPodAutoscaler
	// Recommendation is the object's status.recommendation.
	Recommendation Recommendation
}

// New returns v in its cached form. It takes v over: v's recommendation is
// removed, its managed fields and last-applied annotation dropped.
func New(v *vpav1.VerticalPodAutoscaler) *VPA {
	out := &VPA{VerticalPodAutoscaler: v}
	if r := v.Status.Recommendation; r != nil {
		out.Recommendation = Compact(r)
		v.Status.Recommendation = nil
	}
	v.ManagedFields = nil
	if _, ok := v.Annotations[LastAppliedAnnotation]; ok {
		a := make(map[string]string, len(v.Annotations)-1)
		for k, x := range v.Annotations {
			if k != LastAppliedAnnotation {
				a[k] = x
			}
		}
		v.Annotations = a
	}
	for i := range v.Status.Conditions {
		c := &v.Status.Conditions[i]
		c.Type = vpav1.VerticalPodAutoscalerConditionType(intern(string(c.Type)))
		c.Status = corev1.ConditionStatus(intern(string(c.Status)))
		c.Reason = intern(c.Reason)
		c.Message = intern(c.Message)
	}
	return out
}

// Transform is the informer transform that caches VPAs as *VPA. An object
// already transformed (the informer hands cached objects back at resync) is
// returned as it is.
func Transform(obj any) (any, error) {
	if v, ok := obj.(*vpav1.VerticalPodAutoscaler); ok {
		return New(v), nil
	}
	return obj, nil
}

// Status returns the object's status with its recommendation: a new status
// sharing the cached conditions. Being a method of VPA, it also hides the
// embedded object's Status field, whose recommendation is always nil here:
// code reading v.Status.Recommendation does not compile; the cached
// conditions are v.VerticalPodAutoscaler.Status.
func (v *VPA) Status() vpav1.VerticalPodAutoscalerStatus {
	st := v.VerticalPodAutoscaler.Status
	st.Recommendation = v.Recommendation.Expand()
	return st
}

// Lister reads an informer's cache of *VPA.
type Lister struct {
	indexer cache.Indexer
}

// NewLister returns a Lister over an indexer filled through Transform.
func NewLister(indexer cache.Indexer) Lister { return Lister{indexer: indexer} }

// List returns every cached VPA.
func (l Lister) List() []*VPA {
	objs := l.indexer.List()
	out := make([]*VPA, 0, len(objs))
	for _, o := range objs {
		if v, ok := o.(*VPA); ok {
			out = append(out, v)
		}
	}
	return out
}

// Get returns the cached VPA namespace/name, or nil when there is none.
func (l Lister) Get(namespace, name string) *VPA {
	o, ok, err := l.indexer.GetByKey(namespace + "/" + name)
	if err != nil || !ok {
		return nil
	}
	v, _ := o.(*VPA)
	return v
}

// Recommendation is a VPA's recommendation in compact form; nil or empty
// means none.
type Recommendation []Container

// Container is one container's recommendation.
type Container struct {
	Name                                           string
	Target, LowerBound, UpperBound, UncappedTarget Resources
}

// Resources is a resource list as a slice sorted by name.
type Resources []Amount

// Amount is one resource's quantity.
type Amount struct {
	Name  corev1.ResourceName
	Value resource.Quantity
}

// Compact returns r in compact form, nil when r has no container.
func Compact(r *vpav1.RecommendedPodResources) Recommendation {
	if r == nil || len(r.ContainerRecommendations) == 0 {
		return nil
	}
	out := make(Recommendation, len(r.ContainerRecommendations))
	for i := range r.ContainerRecommendations {
		c := &r.ContainerRecommendations[i]
		out[i] = Container{
			Name:           intern(c.ContainerName),
			Target:         compactList(c.Target),
			LowerBound:     compactList(c.LowerBound),
			UpperBound:     compactList(c.UpperBound),
			UncappedTarget: compactList(c.UncappedTarget),
		}
	}
	return out
}

func compactList(l corev1.ResourceList) Resources {
	if len(l) == 0 {
		return nil
	}
	out := make(Resources, 0, len(l))
	for name, q := range l {
		out = append(out, Amount{Name: corev1.ResourceName(intern(string(name))), Value: lean(q)})
	}
	slices.SortFunc(out, func(a, b Amount) int { return strings.Compare(string(a.Name), string(b.Name)) })
	return out
}

// lean returns q without the copy of its text a decoded quantity keeps,
// when a number of thousandths holds it exactly (any request does); else q.
func lean(q resource.Quantity) resource.Quantity {
	m := resource.NewMilliQuantity(q.MilliValue(), q.Format)
	if m.Cmp(q) != 0 {
		return q
	}
	return *m
}

// Expand returns r as the API type, nil when r is empty.
func (r Recommendation) Expand() *vpav1.RecommendedPodResources {
	if len(r) == 0 {
		return nil
	}
	out := &vpav1.RecommendedPodResources{ContainerRecommendations: make([]vpav1.RecommendedContainerResources, len(r))}
	for i, c := range r {
		out.ContainerRecommendations[i] = vpav1.RecommendedContainerResources{
			ContainerName:  c.Name,
			Target:         c.Target.List(),
			LowerBound:     c.LowerBound.List(),
			UpperBound:     c.UpperBound.List(),
			UncappedTarget: c.UncappedTarget.List(),
		}
	}
	return out
}

// List returns rs as a resource list, nil when rs is empty.
func (rs Resources) List() corev1.ResourceList {
	if len(rs) == 0 {
		return nil
	}
	out := make(corev1.ResourceList, len(rs))
	for _, a := range rs {
		out[a.Name] = a.Value.DeepCopy()
	}
	return out
}

// Equal reports whether rs and l hold the same resources with the same
// values; nil and empty are equal.
func (rs Resources) Equal(l corev1.ResourceList) bool {
	if len(rs) != len(l) {
		return false
	}
	for _, a := range rs {
		q, ok := l[a.Name]
		if !ok || a.Value.Cmp(q) != 0 {
			return false
		}
	}
	return true
}

// Equal reports whether r and the containers of o are the same
// recommendation, quantities compared by value.
func (r Recommendation) Equal(o []vpav1.RecommendedContainerResources) bool {
	if len(r) != len(o) {
		return false
	}
	for i := range r {
		a, b := &r[i], &o[i]
		if a.Name != b.ContainerName || !a.Target.Equal(b.Target) || !a.LowerBound.Equal(b.LowerBound) ||
			!a.UpperBound.Equal(b.UpperBound) || !a.UncappedTarget.Equal(b.UncappedTarget) {
			return false
		}
	}
	return true
}

// intern returns the one copy of s the process keeps of equal strings.
func intern(s string) string {
	if s == "" {
		return ""
	}
	return unique.Make(s).Value()
}
