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

package v1alpha1

import "testing"

func TestManagedBy(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   string
	}{
		{"a user's VPA", map[string]string{"app": "web"}, ""},
		{"a policy label alone is not enough", map[string]string{LabelPolicy: "x"}, ""},
		{"a policy", map[string]string{LabelManagedBy: ManagedByPolicyController, LabelPolicy: "x"}, "policy x"},
		{"the namespace label", map[string]string{LabelManagedBy: ManagedByPolicyController}, NamespaceLabelSource},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ManagedBy(tc.labels); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
