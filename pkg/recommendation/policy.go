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
	corev1 "k8s.io/api/core/v1"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
)

// Notes added when the VPA's policy caps a target.
const (
	NoteMinAllowed = "capped to minAllowed"
	NoteMaxAllowed = "capped to maxAllowed"
)

// policyAllowed is the policy stage: every field is raised to the container
// policy's minAllowed and lowered to its maxAllowed. In upstream's order it
// runs after the LimitRange stages, so that the policy wins over them; in
// the fallback order, before them.
func policyAllowed(w *working) {
	if w.policy == nil {
		return
	}
	w.each(func(i int, l resourceList) (resourceList, []string) {
		notes := capPolicy(&l, w.containerPolicy(i))
		return l, notes
	})
}

// capPolicy caps one recommendation field to the VPA's minAllowed and
// maxAllowed and returns the notes.
func capPolicy(l *resourceList, cp *vpav1.ContainerResourcePolicy) []string {
	if cp == nil || len(l.m) == 0 {
		return nil
	}
	var notes []string
	var buf [4]corev1.ResourceName
	for _, name := range sortedNames(l.m, buf[:0]) {
		notes = l.clamp(name, get(cp.MinAllowed, name), get(cp.MaxAllowed, name), NoteMinAllowed, NoteMaxAllowed, notes)
	}
	return notes
}
