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

package limitrange

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Merged are the LimitRange constraints of one namespace, merged per type.
// A nil item means no LimitRange of that type constrains cpu or memory.
type Merged struct {
	// Container is the merged item of type Container.
	Container *corev1.LimitRangeItem
	// Pod is the merged item of type Pod.
	Pod *corev1.LimitRangeItem
	// Items are the LimitRanges themselves, in name order, which the API
	// server checks one by one.
	Items []*corev1.LimitRange
}

// Merge merges the LimitRanges of a namespace the way the API
// server's admission sees them: for cpu and memory the highest min and the
// lowest max win; of the defaults, the last one (in name order) wins.
func Merge(ranges []*corev1.LimitRange) Merged {
	sorted := make([]*corev1.LimitRange, 0, len(ranges))
	for _, lr := range ranges {
		if lr != nil {
			sorted = append(sorted, lr)
		}
	}
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	out := Merged{
		Container: mergeItems(sorted, corev1.LimitTypeContainer),
		Pod:       mergeItems(sorted, corev1.LimitTypePod),
	}
	if len(sorted) > 0 {
		out.Items = sorted
	}
	return out
}

func mergeItems(ranges []*corev1.LimitRange, typ corev1.LimitType) *corev1.LimitRangeItem {
	var out *corev1.LimitRangeItem
	for _, lr := range ranges {
		for i := range lr.Spec.Limits {
			item := &lr.Spec.Limits[i]
			if item.Type != typ || (item.Min == nil && item.Max == nil && item.Default == nil) {
				continue
			}
			if out == nil {
				out = &corev1.LimitRangeItem{Type: typ}
			}
			if item.Default != nil {
				out.Default = item.Default.DeepCopy()
			}
			out.Max = mergeBound(out.Max, item.Max, func(have, next resource.Quantity) bool { return next.Cmp(have) < 0 })
			out.Min = mergeBound(out.Min, item.Min, func(have, next resource.Quantity) bool { return next.Cmp(have) > 0 })
		}
	}
	return out
}

// mergeBound folds next into have for cpu and memory, taking next's value
// where better(have, next) or where have has none.
func mergeBound(have, next corev1.ResourceList, better func(have, next resource.Quantity) bool) corev1.ResourceList {
	if next == nil {
		return have
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		q, ok := next[name]
		if !ok {
			continue
		}
		if have == nil {
			have = corev1.ResourceList{}
		}
		if cur, ok := have[name]; !ok || better(cur, q) {
			have[name] = q.DeepCopy()
		}
	}
	return have
}
