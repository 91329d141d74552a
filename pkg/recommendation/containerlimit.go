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

package recommendation

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
)

// NoteContainerLimit is added when a RequestsOnly target is lowered to the
// container's limit.
const NoteContainerLimit = "capped to container limit"

// containerLimit is the last capping stage: for controlledValues
// RequestsOnly, whose limits are left alone, every field is lowered to the
// container's current limit, so that requests never exceed limits.
func containerLimit(w *working) {
	w.each(func(i int, l resourceList) (resourceList, []string) {
		if w.containerPolicy(i).ControlledValuesOrDefault() != vpav1.ContainerControlledValuesRequestsOnly || len(l.m) == 0 {
			return l, nil
		}
		c := &w.pod.Spec.Containers[i]
		var notes []string
		var buf [4]corev1.ResourceName
		for _, name := range sortedNames(l.m, buf[:0]) {
			limit := get(c.Resources.Limits, name)
			if limit == nil || limit.IsZero() {
				continue
			}
			if q := l.m[name]; compareUnits(q, *limit) > 0 {
				l.set(name, limit.DeepCopy())
				notes = append(notes, fmt.Sprintf("%s %s", name, NoteContainerLimit))
			}
		}
		return l, notes
	})
}
