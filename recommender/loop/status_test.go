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
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/testpoll"
	"github.com/openvpa/openvpa/recommender/checkpoint"
	"github.com/openvpa/openvpa/recommender/status"
)

// TestStatusWritesPerLoop: with more status writes due than
// Config.StatusWritesPerLoop, a loop queues only as many as fit beside the
// writes still running, first recommendations before rewrites, and the rest
// wait for later loops (upstream queues every write of a loop, so 10,000 new
// VPAs hold 10,000 statuses for the 200 s that QPS 50 takes to write them).
func TestStatusWritesPerLoop(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.StatusWritesPerLoop = 3 })
	w := &gatedStatus{Writer: h.deps.Status, gate: newGate()}
	h.withDeps(func(d *Deps) { d.Status = w })
	h.addWorkloads(7)
	ctx := context.Background()
	recommended := func() int {
		n := 0
		for i := range 7 {
			if status.HasRecommendation(h.vpa("ns", fmt.Sprintf("web%d", i)).Status.Recommendation) {
				n++
			}
		}
		return n
	}

	h.rec.RunOnce(ctx)
	if n := h.rec.statuses.InFlight(); n != 3 {
		t.Fatalf("%d status writes queued by the first loop, want 3", n)
	}
	var m dto.Metric
	if err := h.deps.Prom.StatusWritesWaiting.Write(&m); err != nil {
		t.Fatal(err)
	}
	if got := m.GetGauge().GetValue(); got != 4 {
		t.Errorf("status_writes_waiting = %v after the first loop, want 4", got)
	}
	// The three writes still run: the next loop has no room.
	h.clk.Step(time.Minute)
	h.rec.RunOnce(ctx)
	if n := h.rec.statuses.InFlight(); n != 3 {
		t.Fatalf("%d status writes in flight after a loop with three still running, want 3", n)
	}
	close(w.open)
	h.rec.WaitWrites()
	h.sync()
	if n := recommended(); n != 3 {
		t.Fatalf("%d VPAs recommended after the first writes, want 3", n)
	}
	// Every VPA has changed samples now, but the four without a
	// recommendation go first.
	for _, want := range []int{6, 7} {
		h.clk.Step(time.Minute)
		h.rec.RunOnce(ctx)
		h.rec.WaitWrites()
		h.sync()
		if n := recommended(); n != want {
			t.Fatalf("%d VPAs recommended, want %d: first recommendations did not go before rewrites", n, want)
		}
	}
}

// apiServerStatus returns what the API server returns for a status
// patch: the object with its managedFields and a new resourceVersion
// (writtenVersion; the fake clientset keeps none).
type apiServerStatus struct{ status.Writer }

const writtenVersion = "written"

func (m apiServerStatus) WriteStatus(ctx context.Context, v *vpav1.VerticalPodAutoscaler, s vpav1.VerticalPodAutoscalerStatus) (*vpav1.VerticalPodAutoscaler, error) {
	u, err := m.Writer.WriteStatus(ctx, v, s)
	if err != nil {
		return nil, err
	}
	u.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: checkpoint.FieldManager, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status"}}
	u.ResourceVersion = writtenVersion
	return u, nil
}

// TestWrittenObjectHeldInTheCachedForm: the object a status write returns
// stands in for the informer's copy until the informer catches up. It is
// held as the cached object with the written resourceVersion and status:
// neither the answer's managedFields (most of a written VPA's bytes) nor a
// second decoded copy of its metadata and spec.
func TestWrittenObjectHeldInTheCachedForm(t *testing.T) {
	h := newHarness(t, nil)
	h.withDeps(func(d *Deps) { d.Status = apiServerStatus{h.deps.Status} })
	h.addVPA("ns", "web", "web")
	h.addPod("ns", "web-1", "web", 300, 200*mi, "app")
	ctx := context.Background()
	k := types.NamespacedName{Namespace: "ns", Name: "web"}
	cached := h.deps.VPAs.Get("ns", "web")
	if cached == nil {
		t.Fatal("the VPA is not cached")
	}
	h.rec.RunOnce(ctx)
	h.rec.WaitWrites()
	h.rec.RunOnce(ctx) // applies the outcome; the lister has not caught up
	st := h.rec.state.Get(k)
	if st == nil || st.Obj == nil || len(st.Obj.Recommendation) == 0 {
		t.Fatalf("the loop does not hold the written object")
	}
	if st.Obj.VerticalPodAutoscaler.Status.Recommendation != nil {
		t.Errorf("the written recommendation is held decoded, not in the compact form")
	}
	if len(st.Obj.ManagedFields) != 0 {
		t.Errorf("the written object is held with its managedFields")
	}
	if st.Obj.ResourceVersion != writtenVersion {
		t.Errorf("held resourceVersion %q, want the written %q", st.Obj.ResourceVersion, writtenVersion)
	}
	if st.Obj.Spec.TargetRef != cached.Spec.TargetRef {
		t.Errorf("the held object carries a copy of the spec, not the cached one")
	}
	if st.Obj == cached || len(cached.Recommendation) != 0 {
		t.Errorf("the cached object was modified in place")
	}
}

// tokenStatus lets one status write through per token and counts the
// finished ones.
type tokenStatus struct {
	status.Writer
	tokens   chan struct{}
	finished atomic.Int32
}

func (w *tokenStatus) WriteStatus(ctx context.Context, v *vpav1.VerticalPodAutoscaler, s vpav1.VerticalPodAutoscalerStatus) (*vpav1.VerticalPodAutoscaler, error) {
	select {
	case <-w.tokens:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer w.finished.Add(1)
	return w.Writer.WriteStatus(ctx, v, s)
}

// TestStatusWritesPerLoopCountsUnfinishedWrites: the room a loop has for
// status writes is the cap less the writes still unfinished, not less the
// whole batch they came in: with QPS-paced writes a batch is still running
// when the next loop starts, and counting all of it would leave every other
// loop without writes (10,000 new VPAs got 30 instead of 50 writes a second).
func TestStatusWritesPerLoopCountsUnfinishedWrites(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.StatusWritesPerLoop = 3 })
	w := &tokenStatus{Writer: h.deps.Status, tokens: make(chan struct{}, 10)}
	h.withDeps(func(d *Deps) { d.Status = w })
	h.addWorkloads(7)
	ctx := context.Background()
	h.rec.RunOnce(ctx) // queues 3
	w.tokens <- struct{}{}
	w.tokens <- struct{}{}
	// Wait for the loop's own count: the writer returns before the loop's
	// worker counts its write finished.
	testpoll.Until(t, 10*time.Second, "the 2 released writes to be counted finished", func() bool {
		return int64(h.rec.budget.StatusPending()) == 1
	})
	h.clk.Step(time.Minute)
	h.rec.RunOnce(ctx) // one write of the first batch still runs: room for 2
	if got := int64(h.rec.budget.StatusPending()); got != 3 {
		t.Errorf("%d status writes unfinished after the second loop, want 1 left + 2 new", got)
	}
	for range 3 {
		w.tokens <- struct{}{}
	}
	h.rec.WaitWrites()
	if got := w.finished.Load(); got != 5 {
		t.Errorf("%d status writes after two loops, want 5", got)
	}
}
