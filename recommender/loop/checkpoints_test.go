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
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/recommender/checkpoint"
)

func TestCheckpointWritesSpreadOverInterval(t *testing.T) {
	h := newHarness(t, nil) // 1m loop, 10m write interval
	const n = 40
	for i := range n {
		name := fmt.Sprintf("w%02d", i)
		h.addVPA("ns", name, name)
		h.addPod("ns", name+"-1", name, 300, 200*mi, "app")
	}
	perLoop := []int{}
	for range 31 {
		before := h.count("create", "verticalpodautoscalercheckpoints") + h.count("patch", "verticalpodautoscalercheckpoints")
		h.loop()
		after := h.count("create", "verticalpodautoscalercheckpoints") + h.count("patch", "verticalpodautoscalercheckpoints")
		perLoop = append(perLoop, after-before)
	}
	total := 0
	// Loops 11..30 cover (10m, 30m]: two whole intervals after every VPA's
	// first write, so each VPA is written exactly twice.
	for i, w := range perLoop[11:] {
		total += w
		if w > n/2 {
			t.Errorf("loop %d wrote %d checkpoints; writes should spread over the interval, not pile up", i+11, w)
		}
	}
	if total != 2*n {
		t.Errorf("checkpoint writes over two intervals = %d, want %d (each VPA once per interval); per loop %v", total, 2*n, perLoop)
	}
	if got := len(h.checkpoints()); got != n {
		t.Errorf("checkpoints = %d, want %d", got, n)
	}
}

// TestRestoreBeforeFirstLoop: checkpoints restored once, before the first
// loop, give the first status the saved history. The recommender restores
// in its Work, which the component runtime starts only after the informers
// synced (pkg/component TestRunStopsInOrder), so the VPAs the checkpoints
// belong to are known. Upstream 1.7.0 read the checkpoints while building the
// recommender, before its informers started, and restored nothing; 1.7.1
// moved the restore after the sync ("Ensure that VPA checkpoint is loaded in
// the correct order").
func TestRestoreBeforeFirstLoop(t *testing.T) {
	h := newHarness(t, nil)
	h.addVPA("ns", "web", "web")
	h.addPod("ns", "web-1", "web", 300, 200*mi, "app")
	h.loops(120)
	if err := h.rec.WriteAllCheckpoints(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := h.vpa("ns", "web").Status.Recommendation.ContainerRecommendations[0]
	cps := h.checkpoints()
	if len(cps) != 1 || cps[0].Name != "web-app" || cps[0].Status.TotalSamplesCount != 120 {
		t.Fatalf("checkpoints = %+v, want web-app with 120 samples", cps)
	}

	// A new process: restore, then one loop with a single new sample.
	h.rec = h.newRecommender()
	if err := h.rec.Restore(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.loop()
	got := h.vpa("ns", "web").Status.Recommendation.ContainerRecommendations[0]
	for _, pair := range []struct {
		name      string
		was, now  corev1.ResourceList
		mustNotDn bool
	}{{"lowerBound", want.LowerBound, got.LowerBound, true}, {"target", want.Target, got.Target, false}} {
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			w, g := pair.was[r], pair.now[r]
			if pair.mustNotDn && g.Cmp(w) < 0 {
				t.Errorf("%s %s dropped after restart: %s -> %s", pair.name, r, w.String(), g.String())
			}
		}
	}
	if g, w := got.Target[corev1.ResourceCPU], want.Target[corev1.ResourceCPU]; g.Cmp(w) != 0 {
		t.Errorf("CPU target after restart = %s, want %s", g.String(), w.String())
	}
	if g, w := got.UpperBound[corev1.ResourceCPU], want.UpperBound[corev1.ResourceCPU]; g.Cmp(w) > 0 {
		t.Errorf("upper bound rose after restart (history lost?): %s -> %s", w.String(), g.String())
	}
}

func TestCorruptCheckpointSkipped(t *testing.T) {
	h := newHarness(t, nil)
	h.addVPA("ns", "web", "web")
	bad := &vpav1.VerticalPodAutoscalerCheckpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-app"},
		Spec:       vpav1.VerticalPodAutoscalerCheckpointSpec{VPAObjectName: "web", ContainerName: "app"},
		Status:     vpav1.VerticalPodAutoscalerCheckpointStatus{Version: "v999"},
	}
	if _, err := h.client.AutoscalingV1().VerticalPodAutoscalerCheckpoints("ns").Create(context.Background(), bad, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := h.rec.Restore(context.Background()); err != nil {
		t.Fatalf("a corrupt checkpoint stopped the restore: %v", err)
	}
	h.addPod("ns", "web-1", "web", 300, 200*mi, "app")
	h.loop()
	if err := h.rec.WriteAllCheckpoints(context.Background()); err != nil {
		t.Fatal(err)
	}
	cps := h.checkpoints()
	if len(cps) != 1 || cps[0].Status.Version != "v3" {
		t.Errorf("corrupt checkpoint not overwritten: %+v", cps)
	}
}

func TestCheckpointGC(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.CheckpointsGCInterval = 5 * time.Minute })
	h.addVPA("ns", "web", "web")
	h.addVPA("ns", "theirs", "theirs", withRecommender("other"))
	h.addPod("ns", "web-1", "web", 300, 200*mi, "app")
	h.loop()
	if err := h.rec.WriteAllCheckpoints(context.Background()); err != nil {
		t.Fatal(err)
	}
	store := checkpoint.NewStore(h.client.AutoscalingV1())
	ctx := context.Background()
	for _, k := range []checkpoint.Key{
		{Namespace: "ns", VPA: "theirs", Container: "app"},      // another recommender's VPA: kept
		{Namespace: "ns", VPA: "deleted", Container: "app"},     // no VPA: deleted
		{Namespace: "ns", VPA: "web", Container: "gone"},        // our VPA, unknown container: deleted
		{Namespace: "other-ns", VPA: "deleted", Container: "x"}, // no VPA: deleted
	} {
		if err := store.Write(ctx, k, vpav1.VerticalPodAutoscalerCheckpointStatus{Version: "v3"}); err != nil {
			t.Fatal(err)
		}
	}
	h.clk.Step(5 * time.Minute)
	h.loop()
	names := map[string]bool{}
	for _, cp := range h.checkpoints() {
		names[cp.Namespace+"/"+cp.Name] = true
	}
	want := map[string]bool{"ns/web-app": true, "ns/theirs-app": true}
	if fmt.Sprint(names) != fmt.Sprint(want) {
		t.Errorf("checkpoints after GC = %v, want %v", names, want)
	}
	// Deleting the VPA removes its checkpoints at the next GC.
	h.deleteVPA("ns", "web")
	h.clk.Step(5 * time.Minute)
	h.loop()
	for _, cp := range h.checkpoints() {
		if cp.Spec.VPAObjectName == "web" {
			t.Errorf("checkpoint %s of a deleted VPA survived GC", cp.Name)
		}
	}
}

// gate holds writes until the test closes it, counting those that started.
type gate struct {
	open    chan struct{}
	started atomic.Int32
}

func newGate() *gate { return &gate{open: make(chan struct{})} }

// pass counts a write and waits for the gate to open or ctx to end.
func (g *gate) pass(ctx context.Context) error {
	g.started.Add(1)
	select {
	case <-g.open:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// gatedStore is a checkpoint.Storage whose writes wait at a gate, and fail
// while fail is set.
type gatedStore struct {
	checkpoint.Storage
	*gate
	fail atomic.Bool
}

func (g *gatedStore) Write(ctx context.Context, k checkpoint.Key, s vpav1.VerticalPodAutoscalerCheckpointStatus) error {
	if err := g.pass(ctx); err != nil {
		return err
	}
	if g.fail.Load() {
		return errors.New("apiserver unavailable")
	}
	return g.Storage.Write(ctx, k, s)
}

// TestCheckpointWritesDoNotHoldTheLoop: a loop returns while its checkpoint
// writes are still running; the next loops do not queue the same VPA again;
// a write that failed is retried at the next loop, and one that succeeded
// moves the VPA's next write a whole interval on.
func TestCheckpointWritesDoNotHoldTheLoop(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.CheckpointsWriteInterval = time.Minute })
	store := &gatedStore{Storage: checkpoint.NewStore(h.client.AutoscalingV1()), gate: newGate()}
	h.withDeps(func(d *Deps) { d.Checkpoints = store })
	h.addVPA("ns", "web", "web")
	h.addPod("ns", "web-1", "web", 300, 200*mi, "app")
	ctx := context.Background()

	// The first write is due within a minute of the first loop. Each
	// RunOnce returns even though the write it queues cannot finish. The
	// clock moves on only once the queued write has started: a write whose
	// turn came after --checkpoints-timeout would wait for the next loop.
	for i := 0; i < 3 && h.rec.checkpoints.InFlight() == 0; i++ {
		h.rec.RunOnce(ctx)
		if h.rec.checkpoints.InFlight() == 0 {
			h.clk.Step(time.Minute)
		}
	}
	if h.rec.checkpoints.InFlight() != 1 {
		t.Fatalf("%d VPAs with checkpoint writes in flight, want 1 (ns/web)", h.rec.checkpoints.InFlight())
	}
	waitStarted(t, store.gate, 1)
	h.clk.Step(time.Minute)
	// Two more loops while it is blocked; then it fails.
	h.rec.RunOnce(ctx)
	h.clk.Step(time.Minute)
	h.rec.RunOnce(ctx)
	store.fail.Store(true)
	close(store.open)
	h.rec.WaitWrites()
	if n := store.started.Swap(0); n != 1 {
		t.Fatalf("%d writes of ns/web ran, want 1: a VPA in flight was queued again", n)
	}
	if got := len(h.checkpoints()); got != 0 {
		t.Fatalf("checkpoints = %d after a failed write, want 0", got)
	}

	// The next loop retries at once, and succeeds.
	store.fail.Store(false)
	h.rec.RunOnce(ctx)
	h.rec.WaitWrites()
	if n := store.started.Swap(0); n != 1 {
		t.Fatalf("after a failed write the next loop ran %d writes, want 1 (retry)", n)
	}
	if got := len(h.checkpoints()); got != 1 {
		t.Fatalf("checkpoints = %d, want 1", got)
	}

	// The next loop, at the same time, has nothing due.
	h.rec.RunOnce(ctx)
	h.rec.WaitWrites()
	if n := store.started.Load(); n != 0 {
		t.Fatalf("a successful write was repeated by the next loop (%d writes)", n)
	}
	if next, ok := h.rec.checkpoints.NextWrite(types.NamespacedName{Namespace: "ns", Name: "web"}); !ok || !next.After(h.clk.Now()) {
		t.Errorf("next write at %v (tracked %v), want after %v", next, ok, h.clk.Now())
	}
}

// waitStarted waits until n writes have passed the gate's counter.
func waitStarted(t *testing.T, g *gate, n int32) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for g.started.Load() < n && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	if got := g.started.Load(); got != n {
		t.Fatalf("%d writes started, want %d", got, n)
	}
}

// counterValue reads a counter.
func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// TestCheckpointBudgetBoundsWhenWritesStart: --checkpoints-timeout, counted
// on the loop's clock, bounds when a checkpoint write may start, as
// upstream's bounds its batch. A write that started runs to its end, not cut
// by the batch's deadline; those whose turn came later are not errors: they
// stay due, are counted as postponed and are written by the next loop.
// (Handing each write the batch's deadline made client-go's rate limiter
// refuse every write whose wait for a token would pass it, each logged and
// counted as a failed API write.)
func TestCheckpointBudgetBoundsWhenWritesStart(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.CheckpointsWriteInterval = time.Minute
		c.CheckpointsTimeout = 10 * time.Second
		c.Workers = 1
	})
	store := &gatedStore{Storage: checkpoint.NewStore(h.client.AutoscalingV1()), gate: newGate()}
	h.withDeps(func(d *Deps) { d.Checkpoints = store })
	h.addWorkloads(3)
	ctx := context.Background()
	h.loop() // first recommendations
	h.clk.Step(time.Minute)
	h.rec.RunOnce(ctx) // every checkpoint due: three writes queued on one worker
	if n := h.rec.checkpoints.InFlight(); n != 3 {
		t.Fatalf("%d checkpoint writes queued, want 3", n)
	}
	// The first write waits at the gate while the budget runs out.
	waitStarted(t, store.gate, 1)
	h.clk.Step(h.cfg.CheckpointsTimeout)
	close(store.open)
	h.rec.WaitWrites()
	if n := store.started.Swap(0); n != 1 {
		t.Fatalf("%d writes started, want 1: the others' turn came after --checkpoints-timeout", n)
	}
	if n := len(h.checkpoints()); n != 1 {
		t.Fatalf("%d checkpoints, want 1: the write that started completes", n)
	}
	if n := counterValue(t, h.deps.Prom.APIWrites.WithLabelValues("checkpoint", "error")); n != 0 {
		t.Errorf("%v checkpoint writes counted as errors, want 0", n)
	}
	if n := counterValue(t, h.deps.Prom.CheckpointWritesPostponed); n != 2 {
		t.Errorf("%v checkpoint writes counted as postponed, want 2", n)
	}

	// The next loop writes the two that waited, and only them.
	h.rec.RunOnce(ctx)
	h.rec.WaitWrites()
	if n := store.started.Load(); n != 2 {
		t.Fatalf("the next loop started %d writes, want the 2 postponed", n)
	}
	if n := len(h.checkpoints()); n != 3 {
		t.Fatalf("%d checkpoints after the next loop, want 3", n)
	}
}

// TestCheckpointsWaitForAStatusBacklog: while more status writes of earlier
// loops are running than there are workers, due checkpoints wait but for
// MinCheckpoints per loop (upstream's --min-checkpoints), so that statuses
// get the QPS budget and history is still saved; once the backlog drained
// every due checkpoint is written.
func TestCheckpointsWaitForAStatusBacklog(t *testing.T) {
	for _, tc := range []struct {
		minCheckpoints int
		during         []int // checkpoints after each loop of the backlog
	}{
		{minCheckpoints: 0, during: []int{0, 0, 0}},
		{minCheckpoints: 5, during: []int{5, 10, 12}},
	} {
		t.Run(fmt.Sprintf("min-checkpoints=%d", tc.minCheckpoints), func(t *testing.T) {
			h := newHarness(t, func(c *Config) {
				c.CheckpointsWriteInterval = time.Minute
				c.MinCheckpoints = tc.minCheckpoints
			})
			gated := &gatedStatus{Writer: h.deps.Status, gate: newGate()}
			h.withDeps(func(d *Deps) { d.Status = gated })
			h.addWorkloads(12)
			ctx := context.Background()
			h.rec.RunOnce(ctx) // queues 12 status writes, which wait at the gate
			for _, want := range tc.during {
				h.clk.Step(time.Minute) // every checkpoint is due
				h.rec.RunOnce(ctx)
				// The checkpoint writes run in the background, beside the
				// status writes held at the gate: poll for them.
				deadline := time.Now().Add(10 * time.Second)
				for n := len(h.checkpoints()); n != want; n = len(h.checkpoints()) {
					if n > want || time.Now().After(deadline) {
						t.Fatalf("%d checkpoints while 12 status writes were still running, want %d", n, want)
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
			close(gated.open)
			h.rec.WaitWrites()
			h.rec.RunOnce(ctx)
			h.rec.WaitWrites()
			if n := len(h.checkpoints()); n != 12 {
				t.Fatalf("%d checkpoints after the status writes drained, want 12", n)
			}
		})
	}
}

// TestCheckpointsWaitForWaitingFirstRecommendations: while first
// recommendations wait for a later loop (more were due than
// StatusWritesPerLoop), due checkpoints wait too, even when no status write
// is running, so that first statuses get the whole QPS budget.
func TestCheckpointsWaitForWaitingFirstRecommendations(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.CheckpointsWriteInterval = time.Minute
		c.StatusWritesPerLoop = 4
	})
	h.addWorkloads(10)
	checkpointWrites := func() int {
		return h.count("patch", "verticalpodautoscalercheckpoints") + h.count("create", "verticalpodautoscalercheckpoints")
	}
	h.loop() // 4 first recommendations, 6 waiting
	h.loop() // 4 more, 2 waiting; checkpoints due but waiting
	if n := checkpointWrites(); n != 0 {
		t.Fatalf("%d checkpoint writes while first recommendations waited", n)
	}
	h.loop() // the last 2 first recommendations: none waits, checkpoints go
	h.loop()
	if n := len(h.checkpoints()); n != 10 {
		t.Fatalf("%d checkpoints once every VPA had its first recommendation, want 10", n)
	}
}
