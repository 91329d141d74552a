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

package shards

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeCache records what Scoped sets; synced is moved by the test, as the
// informers would list.
type fakeCache struct {
	mu     sync.Mutex
	gen    uint64
	synced uint64
	keeps  map[uint64]func(string) bool
}

func (c *fakeCache) Set(keep func(string) bool) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.keeps[c.gen] = keep
	return c.gen
}

func (c *fakeCache) SyncedGeneration() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.synced
}

func (c *fakeCache) sync(gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.synced = gen
}

func (c *fakeCache) last() (uint64, func(string) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen, c.keeps[c.gen]
}

// namespaceOf returns a namespace name in shard i of 8.
func namespaceOf(t *testing.T, i int) string {
	t.Helper()
	for k := range 1000 {
		if ns := fmt.Sprintf("team-%d", k); Of(ns, 8) == i {
			return ns
		}
	}
	t.Fatalf("no namespace in shard %d", i)
	return ""
}

func keys(m map[int]bool) []int { return slices.Sorted(maps.Keys(m)) }

func TestManagerByNamespaceShardsWholeNamespaces(t *testing.T) {
	m, err := New(Options{Shards: 8, ByNamespace: true, Name: "rec", Namespace: "kube-system", Identity: "a",
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}, &fakeLeases{})
	if err != nil {
		t.Fatal(err)
	}
	spread := map[int]bool{}
	for k := range 50 {
		ns := fmt.Sprintf("team-%d", k)
		want := Of(ns, 8)
		for _, name := range []string{"a", "web", "db-0"} {
			if got := m.Of(ns + "/" + name); got != want {
				t.Fatalf("Of(%s/%s) = %d, want the namespace's shard %d", ns, name, got, want)
			}
		}
		if got := m.OfNamespace(ns); got != want {
			t.Fatalf("OfNamespace(%s) = %d, want %d", ns, got, want)
		}
		spread[want] = true
	}
	if len(spread) != 8 {
		t.Errorf("50 namespaces fell in shards %v, want all 8", keys(spread))
	}
}

func TestScopedServesAShardOnlyOnceTheCacheHoldsIt(t *testing.T) {
	ctx := context.Background()
	f := &fakeLeases{m: map[string]*coordinationv1.Lease{}}
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC))
	newNS := func(id string) *Manager {
		m, err := New(Options{Shards: 8, ByNamespace: true, Name: "rec", Namespace: "kube-system", Identity: id,
			LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second, Clock: clk}, f)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	a := newNS("a")
	cache := &fakeCache{keeps: map[uint64]func(string) bool{}}
	s := NewScoped(a, cache)
	step(clk, a)
	step(clk, a)
	if n := len(a.Snapshot().Owned); n != 8 {
		t.Fatalf("a alone holds %d shards, want 8", n)
	}
	select {
	case <-a.Changed():
	default:
		t.Error("the manager's Changed did not fire when it took shards")
	}

	// Held, but the cache has not listed: nothing is served.
	s.Update(ctx)
	gen1, keep := cache.last()
	if gen1 != 1 {
		t.Fatalf("generation %d set, want 1", gen1)
	}
	for i := range 8 {
		if !keep(namespaceOf(t, i)) {
			t.Fatalf("generation 1 drops the namespaces of held shard %d", i)
		}
	}
	if got := s.Snapshot().Owned; len(got) != 0 {
		t.Fatalf("served %v before the cache listed, want none", keys(got))
	}
	cache.sync(gen1)
	if got := s.Snapshot().Owned; len(got) != 8 {
		t.Fatalf("served %v once the cache listed, want all 8", keys(got))
	}
	s.Update(ctx)
	if gen, _ := cache.last(); gen != gen1 {
		t.Fatalf("the scope moved to generation %d with no change in the shards", gen)
	}

	// b joins and a gives half away. Until the loop has left them (its next
	// Snapshot), the cache keeps them.
	b := newNS("b")
	for range 5 {
		step(clk, a, b)
		drain(a)
	}
	held := a.Snapshot().Owned
	if len(held) != 4 {
		t.Fatalf("a holds %v after b joined, want 4 shards", keys(held))
	}
	s.Update(ctx)
	if gen, _ := cache.last(); gen != gen1 {
		t.Fatalf("the scope narrowed (generation %d) while the loop still served the shards given away", gen)
	}
	if got := s.Snapshot().Owned; !maps.Equal(got, held) {
		t.Fatalf("served %v, want the shards held %v", keys(got), keys(held))
	}
	// Left, but kept for a lease duration.
	s.Update(ctx)
	if gen, _ := cache.last(); gen != gen1 {
		t.Fatalf("the scope narrowed (generation %d) as soon as the shards were left", gen)
	}
	for range 8 { // the manager keeps renewing while the clock passes the lease duration
		step(clk, a, b)
		drain(a)
	}
	s.Update(ctx)
	gen2, keep := cache.last()
	if gen2 != 2 {
		t.Fatalf("generation %d after the loop left half the shards, want 2", gen2)
	}
	for i := range 8 {
		if keep(namespaceOf(t, i)) != held[i] {
			t.Fatalf("generation 2 keeps shard %d: %v, want %v", i, keep(namespaceOf(t, i)), held[i])
		}
	}
	// While generation 2 lists, what is served stays in both.
	if got := s.Snapshot().Owned; !maps.Equal(got, held) {
		t.Fatalf("served %v while narrowing, want %v", keys(got), keys(held))
	}

	// b dies: a takes its shards back, and serves them only once a
	// generation holding them has listed everywhere.
	died := clk.Now()
	for clk.Since(died) < 20*time.Second {
		step(clk, a)
	}
	if n := len(a.Snapshot().Owned); n != 8 {
		t.Fatalf("a holds %d shards after b died, want 8", n)
	}
	s.Update(ctx)
	gen3, _ := cache.last()
	if gen3 != 3 {
		t.Fatalf("generation %d after taking shards, want 3", gen3)
	}
	cache.sync(gen2) // generation 3 still listing
	drainChanged(s)
	s.Update(ctx)
	if changed(s) {
		t.Error("Changed fired while the shards taken were still listing")
	}
	if got := s.Snapshot().Owned; !maps.Equal(got, held) {
		t.Fatalf("served %v while the taken shards are listed, want only %v", keys(got), keys(held))
	}
	cache.sync(gen3)
	s.Update(ctx)
	if !changed(s) {
		t.Error("Changed did not fire once the shards taken were listed")
	}
	if got := s.Snapshot().Owned; len(got) != 8 {
		t.Fatalf("served %v once listed, want all 8", keys(got))
	}
}

func TestScopedCoversOnlyWhatEveryListingGenerationHolds(t *testing.T) {
	cache := &fakeCache{keeps: map[uint64]func(string) bool{}}
	s := &Scoped{cache: cache, sets: map[uint64]map[int]bool{
		1: {0: true, 1: true, 2: true, 3: true},
		2: {0: true, 1: true},
		3: {0: true, 1: true, 5: true},
	}}
	for _, tc := range []struct {
		synced uint64
		want   []int
	}{
		{synced: 0, want: []int{}},
		{synced: 1, want: []int{0, 1}},    // some caches may hold 1, 2 or 3
		{synced: 2, want: []int{0, 1}},    // 2 or 3
		{synced: 3, want: []int{0, 1, 5}}, // every cache holds 3
	} {
		cache.sync(tc.synced)
		if got := keys(s.coveredLocked()); !slices.Equal(got, tc.want) {
			t.Errorf("synced %d: covered %v, want %v", tc.synced, got, tc.want)
		}
	}
}

func changed(s *Scoped) bool {
	select {
	case <-s.Changed():
		return true
	default:
		return false
	}
}

func drainChanged(s *Scoped) { changed(s) }
