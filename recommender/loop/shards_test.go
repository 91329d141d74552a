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
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/openvpa/openvpa/pkg/shards"
	"github.com/openvpa/openvpa/pkg/testpoll"
)

// fakeShards serves the shards the test sets.
type fakeShards struct {
	n               int
	owned, draining map[int]bool
	drained         map[int]bool
}

func (f *fakeShards) Of(key string) int { return shards.Of(key, f.n) }
func (f *fakeShards) Snapshot() shards.Snapshot {
	o, d := map[int]bool{}, map[int]bool{}
	for i := range f.owned {
		o[i] = true
	}
	for i := range f.draining {
		d[i] = true
	}
	return shards.Snapshot{Owned: o, Draining: d}
}
func (f *fakeShards) Valid(i int) bool { return f.owned[i] || f.draining[i] }
func (f *fakeShards) Drained(i int)    { f.drained[i] = true }

func TestShardsDivideAndHandOver(t *testing.T) {
	h := newHarness(t, nil)
	fs := &fakeShards{n: 2, owned: map[int]bool{0: true}, draining: map[int]bool{}, drained: map[int]bool{}}
	h.withDeps(func(d *Deps) { d.Shards = fs })
	var mine, theirs []string
	for i := range 12 {
		name := fmt.Sprintf("web%d", i)
		h.addVPA("ns", name, name)
		h.addPod("ns", name+"-1", name, 100, 100*mi, "app")
		if shards.Of("ns/"+name, 2) == 0 {
			mine = append(mine, name)
		} else {
			theirs = append(theirs, name)
		}
	}
	if len(mine) == 0 || len(theirs) == 0 {
		t.Fatalf("the 12 VPAs all fall in one shard: %v %v", mine, theirs)
	}
	h.loops(3)
	for _, name := range mine {
		if h.vpa("ns", name).Status.Recommendation == nil {
			t.Errorf("%s (shard 0, served) has no recommendation", name)
		}
	}
	for _, name := range theirs {
		if v := h.vpa("ns", name); v.Status.Recommendation != nil || v.Status.Conditions != nil {
			t.Errorf("%s (shard 1, not served) was written: %+v", name, v.Status)
		}
	}

	// Shard 0 is given away: its checkpoints are written before the shard
	// is reported drained, and its VPAs are no longer served.
	before := h.count("patch", "verticalpodautoscalercheckpoints")
	fs.owned, fs.draining = map[int]bool{}, map[int]bool{0: true}
	h.loop()
	after := h.count("patch", "verticalpodautoscalercheckpoints")
	if !fs.drained[0] {
		t.Fatal("shard 0 not reported drained")
	}
	if after-before < len(mine) {
		t.Errorf("%d checkpoint writes while draining, want one per VPA of shard 0 (%d)", after-before, len(mine))
	}
	if n, _ := h.rec.state.Size(); n != 0 {
		t.Errorf("%d VPAs still served after the shard left", n)
	}

	// Another replica gains shard 0: it restores the checkpoints first.
	h.deps.Shards = &fakeShards{n: 2, owned: map[int]bool{0: true}, draining: map[int]bool{}, drained: map[int]bool{}}
	other := h.newRecommender()
	h.rec = other
	h.loop()
	for _, name := range mine {
		st := other.state.Get(podID("ns", name))
		if st == nil || st.Aggregates["app"] == nil || st.Aggregates["app"].TotalSamplesCount < 3 {
			t.Errorf("%s: history not restored from its checkpoint on the new replica: %+v", name, st)
		}
	}
	cps := h.checkpoints()
	for _, cp := range cps {
		if shards.Of(cp.Namespace+"/"+cp.Spec.VPAObjectName, 2) != 0 {
			t.Errorf("checkpoint %s of a VPA in shard 1, which no replica served", cp.Name)
		}
	}
}

// signallingShards serves the shards the test sets, safely from the loop's
// goroutine, and says when they changed.
type signallingShards struct {
	n       int
	mu      sync.Mutex
	owned   map[int]bool
	changed chan struct{}
}

func (s *signallingShards) Of(key string) int { return shards.Of(key, s.n) }
func (s *signallingShards) Snapshot() shards.Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return shards.Snapshot{Owned: maps.Clone(s.owned), Draining: map[int]bool{}}
}
func (s *signallingShards) Valid(i int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.owned[i]
}
func (s *signallingShards) Drained(int)              {}
func (s *signallingShards) Changed() <-chan struct{} { return s.changed }

// TestRunServesShardsTakenAtOnce: a shard source that says it has new
// shards gets a loop at once, not at the next interval (the fake clock
// never ticks here).
func TestRunServesShardsTakenAtOnce(t *testing.T) {
	h := newHarness(t, nil)
	ss := &signallingShards{n: 1, owned: map[int]bool{}, changed: make(chan struct{}, 1)}
	h.withDeps(func(d *Deps) { d.Shards = ss })
	loops := make(chan struct{}, 10)
	h.withDeps(func(d *Deps) { d.OnLoop = func() { loops <- struct{}{} } })
	h.addVPA("ns", "web", "web")
	h.addPod("ns", "web-1", "web", 100, 100*mi, "app")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.rec.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	wait := func(what string) {
		t.Helper()
		select {
		case <-loops:
		case <-time.After(10 * time.Second):
			t.Fatalf("no loop %s", what)
		}
	}
	wait("at the start")
	ss.mu.Lock()
	ss.owned[0] = true
	ss.mu.Unlock()
	ss.changed <- struct{}{}
	wait("after the shard was taken")
	testpoll.Until(t, 10*time.Second, "a recommendation for the VPA of the shard taken", func() bool {
		return h.vpa("ns", "web").Status.Recommendation != nil
	})
}
