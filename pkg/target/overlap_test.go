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

import "testing"

func TestOverlapMessage(t *testing.T) {
	tests := map[string]struct {
		self           string
		others, chosen []string
		want           string
	}{
		"no overlap": {self: "a"},
		"none applies": {self: "a", others: []string{"b"}, chosen: []string{""},
			want: "Pods of this VPA are also matched by VPA b; the admission controller applies none of them (each is in mode Off or does not target the pods' controller)"},
		"no choice recorded": {self: "a", others: []string{"b"},
			want: "Pods of this VPA are also matched by VPA b; the admission controller applies none of them (each is in mode Off or does not target the pods' controller)"},
		"this VPA applies": {self: "a", others: []string{"b"}, chosen: []string{"a"},
			want: "Pods of this VPA are also matched by VPA b; the admission controller applies this VPA (a) to them"},
		"the other VPA applies": {self: "twin-b", others: []string{"twin-a"}, chosen: []string{"twin-a"},
			want: "Pods of this VPA are also matched by VPA twin-a; the admission controller applies VPA twin-a to them"},
		"two others, sorted": {self: "a", others: []string{"c", "b"}, chosen: []string{"c"},
			want: "Pods of this VPA are also matched by VPAs b, c; the admission controller applies VPA c to them"},
		"depends on the pod": {self: "a", others: []string{"b"}, chosen: []string{"b", "a", ""},
			want: "Pods of this VPA are also matched by VPA b; the admission controller applies, depending on the pod, this VPA (a) or VPA b or none"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := OverlapMessage(tc.self, tc.others, tc.chosen); got != tc.want {
				t.Errorf("OverlapMessage = %q, want %q", got, tc.want)
			}
		})
	}
}
