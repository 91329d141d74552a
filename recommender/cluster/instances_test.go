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

package cluster

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/openvpa/openvpa/recommender/model"
)

// TestInstanceSetAcrossItsSizes checks the set against a map, through adds,
// replacements and deletions, below, at and past the size where it moves
// from a slice to a map.
func TestInstanceSetAcrossItsSizes(t *testing.T) {
	key := func(i int) instanceKey {
		return instanceKey{pod: types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("p%d", i)}, container: "app"}
	}
	for _, n := range []int{1, smallInstances - 1, smallInstances, smallInstances + 1, 3 * smallInstances} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var s instanceSet
			want := map[instanceKey]*model.ContainerState{}
			check := func(when string) {
				t.Helper()
				got := map[instanceKey]*model.ContainerState{}
				s.each(func(k instanceKey, cs *model.ContainerState) {
					if _, dup := got[k]; dup {
						t.Errorf("%s: %v listed twice", when, k)
					}
					got[k] = cs
				})
				if len(got) != len(want) {
					t.Errorf("%s: %d states, want %d", when, len(got), len(want))
				}
				for k, cs := range want {
					if g, ok := s.get(k); !ok || g != cs || got[k] != cs {
						t.Errorf("%s: state of %v is %p (found %v), want %p", when, k, g, ok, cs)
					}
				}
				if _, ok := s.get(key(-1)); ok {
					t.Errorf("%s: a missing key is found", when)
				}
			}
			for i := range n {
				cs := &model.ContainerState{}
				s.put(key(i), cs)
				want[key(i)] = cs
			}
			check("after adding")
			replaced := &model.ContainerState{}
			s.put(key(0), replaced)
			want[key(0)] = replaced
			check("after replacing")
			s.deleteFunc(func(k instanceKey) bool { return k.pod.Name[1]%2 == 1 }) // odd names
			for k := range want {
				if k.pod.Name[1]%2 == 1 {
					delete(want, k)
				}
			}
			check("after deleting")
		})
	}
}
