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

package loop

import (
	"fmt"
	"testing"
)

// BenchmarkRunOnce measures one loop over 500 VPAs with two pods each, with
// fake clients (so API latency is not included): the in-process cost of a loop.
func BenchmarkRunOnce(b *testing.B) {
	t := &testing.T{}
	h := newHarness(t, nil)
	for i := range 500 {
		name := fmt.Sprintf("w%03d", i)
		h.addVPA("ns", name, name)
		h.addPod("ns", name+"-a", name, 300, 200*mi, "app")
		h.addPod("ns", name+"-b", name, 300, 200*mi, "app")
	}
	h.loops(3)
	b.ResetTimer()
	for range b.N {
		h.loop()
	}
}
