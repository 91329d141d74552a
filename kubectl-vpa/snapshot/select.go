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

package snapshot

import (
	"sort"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/target"
)

// Workload returns the well-known controller kind namespace/name as it was
// read (the whole object, with its pod template), nil when the snapshot does
// not hold it.
func (s *Snapshot) Workload(kind, namespace, name string) runtime.Object {
	for _, obj := range s.Workloads {
		w, ok := target.WorkloadOf(obj)
		if ok && w.Kind == kind && w.Namespace == namespace && w.Name == name {
			return obj
		}
	}
	return nil
}

// Select returns the VPAs whose labels vpaSel matches and whose target
// workload's labels targetSel matches, sorted by namespace and name. Every
// VPA stays in the index (overlaps are found among all of them); selection
// only says which ones a command shows. A VPA whose target is not a
// well-known controller in the snapshot matches targetSel only when that
// selects everything.
func (ix *Index) Select(vpaSel, targetSel labels.Selector) []*vpav1.VerticalPodAutoscaler {
	var out []*vpav1.VerticalPodAutoscaler
	for _, v := range ix.VPAs {
		if vpaSel != nil && !vpaSel.Matches(labels.Set(v.Labels)) {
			continue
		}
		if targetSel != nil && !targetSel.Empty() && !ix.targetMatches(v, targetSel) {
			continue
		}
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}

func (ix *Index) targetMatches(v *vpav1.VerticalPodAutoscaler, sel labels.Selector) bool {
	t := ix.Targets[v]
	if t == nil {
		return false
	}
	obj := ix.Workload(t.Ref.Kind, v.Namespace, t.Ref.Name)
	if obj == nil {
		return false
	}
	m, err := meta.Accessor(obj)
	return err == nil && sel.Matches(labels.Set(m.GetLabels()))
}
