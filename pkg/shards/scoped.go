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
	"maps"
	"slices"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// Cache is a cache that can be narrowed to some namespaces
// (informers.Scope): Set returns a generation, and every cache holds the
// namespaces of SyncedGeneration or of a later generation.
type Cache interface {
	Set(keep func(namespace string) bool) uint64
	SyncedGeneration() uint64
}

// Scoped keeps a cache on the namespaces of the shards a Manager (with
// ByNamespace) holds, and serves a shard only once the cache holds its
// namespaces. The cache is narrowed only past shards that are neither held
// nor served, so what is served never leaves it, and only once they have
// been neither for a lease duration: a replica that misses renewals for a
// moment and keeps its shards does not list everything twice.
type Scoped struct {
	m     *Manager
	cache Cache

	mu        sync.Mutex
	requested map[int]bool
	sets      map[uint64]map[int]bool // shards of each generation Set that may still be listing
	served    map[int]bool            // Owned of the last Snapshot
	wanted    map[int]time.Time       // when each shard requested was last held or served
	servable  chan struct{}
}

// NewScoped returns a Scoped over m, which must divide by namespace.
func NewScoped(m *Manager, cache Cache) *Scoped {
	return &Scoped{m: m, cache: cache, sets: map[uint64]map[int]bool{}, wanted: map[int]time.Time{}, servable: make(chan struct{}, 1)}
}

// Of, Valid and Drained are the Manager's.
func (s *Scoped) Of(key string) int { return s.m.Of(key) }
func (s *Scoped) Valid(i int) bool  { return s.m.Valid(i) }
func (s *Scoped) Drained(i int)     { s.m.Drained(i) }

// Snapshot returns the Manager's, with only the shards the cache holds as
// Owned: a shard just taken is served once the cache has listed its
// namespaces.
func (s *Scoped) Snapshot() Snapshot {
	snap := s.m.Snapshot()
	s.mu.Lock()
	defer s.mu.Unlock()
	covered := s.coveredLocked()
	owned := map[int]bool{}
	for i := range snap.Owned {
		if covered[i] {
			owned[i] = true
		}
	}
	s.served = owned
	return Snapshot{Owned: maps.Clone(owned), Draining: snap.Draining}
}

// coveredLocked intersects the shards of every generation from the oldest a
// cache may hold to the last one Set.
func (s *Scoped) coveredLocked() map[int]bool {
	synced := s.cache.SyncedGeneration()
	if synced == 0 {
		return map[int]bool{}
	}
	var out map[int]bool
	for gen, set := range s.sets {
		if gen < synced {
			delete(s.sets, gen)
			continue
		}
		if out == nil {
			out = maps.Clone(set)
			continue
		}
		for i := range out {
			if !set[i] {
				delete(out, i)
			}
		}
	}
	if out == nil {
		out = map[int]bool{}
	}
	return out
}

// Changed receives when a shard held but not served has been listed: a
// loop waiting for its next interval can serve it at once.
func (s *Scoped) Changed() <-chan struct{} { return s.servable }

// Update sets the cache on the shards held or served, when they changed:
// at once for shards taken, a lease duration later for shards left.
func (s *Scoped) Update(ctx context.Context) {
	want := s.m.Snapshot().Owned
	now := s.m.o.Clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	covered := s.coveredLocked()
	for i := range want {
		if covered[i] && !s.served[i] {
			notify(s.servable)
			break
		}
	}
	for i := range s.served {
		want[i] = true
	}
	for i := range want {
		s.wanted[i] = now
	}
	for i := range s.requested {
		if !want[i] && now.Sub(s.wanted[i]) < s.m.o.LeaseDuration {
			want[i] = true
		}
	}
	for i := range s.wanted {
		if !want[i] {
			delete(s.wanted, i)
		}
	}
	if s.requested != nil && maps.Equal(want, s.requested) {
		return
	}
	keep := maps.Clone(want)
	gen := s.cache.Set(func(namespace string) bool { return keep[s.m.OfNamespace(namespace)] })
	s.sets[gen] = keep
	s.requested = keep
	klog.FromContext(ctx).Info("Caching the namespaces of these shards", "shards", sortedKeys(keep), "generation", gen)
}

// Run calls Update every retry period until ctx ends.
func (s *Scoped) Run(ctx context.Context) {
	t := s.m.o.Clock.NewTicker(s.m.o.RetryPeriod)
	defer t.Stop()
	for {
		s.Update(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
}

func sortedKeys(m map[int]bool) []int { return slices.Sorted(maps.Keys(m)) }
