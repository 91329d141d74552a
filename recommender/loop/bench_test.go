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
