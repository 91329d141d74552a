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
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeLeases is an in-memory Lease store with resource versions and
// optimistic concurrency, as the API server has.
type fakeLeases struct {
	mu sync.Mutex
	rv int
	m  map[string]*coordinationv1.Lease
}

var leaseGR = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}

func (f *fakeLeases) Get(_ context.Context, _, name string) (*coordinationv1.Lease, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, ok := f.m[name]
	if !ok {
		return nil, apierrors.NewNotFound(leaseGR, name)
	}
	return l.DeepCopy(), nil
}

func (f *fakeLeases) Create(_ context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.m[l.Name]; ok {
		return nil, apierrors.NewAlreadyExists(leaseGR, l.Name)
	}
	f.rv++
	c := l.DeepCopy()
	c.ResourceVersion = strconv.Itoa(f.rv)
	f.m[l.Name] = c
	return c.DeepCopy(), nil
}

func (f *fakeLeases) Update(_ context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cur, ok := f.m[l.Name]
	if !ok {
		return nil, apierrors.NewNotFound(leaseGR, l.Name)
	}
	if cur.ResourceVersion != l.ResourceVersion {
		return nil, apierrors.NewConflict(leaseGR, l.Name, fmt.Errorf("version %s, not %s", cur.ResourceVersion, l.ResourceVersion))
	}
	f.rv++
	c := l.DeepCopy()
	c.ResourceVersion = strconv.Itoa(f.rv)
	f.m[l.Name] = c
	return c.DeepCopy(), nil
}

func (f *fakeLeases) List(_ context.Context, _, selector string) (*coordinationv1.LeaseList, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sel, err := labels.Parse(selector)
	if err != nil {
		return nil, err
	}
	out := &coordinationv1.LeaseList{}
	for _, l := range f.m {
		if sel.Matches(labels.Set(l.Labels)) {
			out.Items = append(out.Items, *l.DeepCopy())
		}
	}
	return out, nil
}

func newManager(t *testing.T, f *fakeLeases, clk *clocktesting.FakeClock, id string) *Manager {
	t.Helper()
	m, err := New(Options{Shards: 8, Name: "rec", Namespace: "kube-system", Identity: id,
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second, Clock: clk}, f)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// step runs one round of each manager, then advances the clock by the
// retry period.
func step(clk *clocktesting.FakeClock, ms ...*Manager) {
	for _, m := range ms {
		m.round(context.Background())
	}
	clk.Step(2 * time.Second)
}

func owned(m *Manager) map[int]bool { return m.Snapshot().Owned }

// drain acknowledges every draining shard, as the loop does once it saved them.
func drain(m *Manager) {
	for i := range m.Snapshot().Draining {
		m.Drained(i)
	}
}

func checkDisjoint(t *testing.T, ms ...*Manager) int {
	t.Helper()
	total := 0
	seen := map[int]int{}
	for k, m := range ms {
		for i := range owned(m) {
			if other, ok := seen[i]; ok {
				t.Fatalf("shard %d served by replicas %d and %d", i, other, k)
			}
			seen[i] = k
			total++
		}
	}
	return total
}

func TestSharesAndHandOver(t *testing.T) {
	f := &fakeLeases{m: map[string]*coordinationv1.Lease{}}
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	a := newManager(t, f, clk, "a")
	step(clk, a)
	if n := len(owned(a)); n != 0 {
		t.Fatalf("a owns %d shards after its first round, which only announces it", n)
	}
	step(clk, a)
	if n := len(owned(a)); n != 8 {
		t.Fatalf("a alone owns %d shards, want 8", n)
	}

	// b joins: a gives half away once it has drained them.
	b := newManager(t, f, clk, "b")
	for range 5 {
		step(clk, a, b)
		drain(a)
		checkDisjoint(t, a, b)
	}
	if na, nb := len(owned(a)), len(owned(b)); na != 4 || nb != 4 {
		t.Fatalf("after b joined: a owns %d, b owns %d, want 4 each", na, nb)
	}

	// a third replica: shares of 3, 3 and 2.
	c := newManager(t, f, clk, "c")
	for range 5 {
		step(clk, a, b, c)
		drain(a)
		drain(b)
		if checkDisjoint(t, a, b, c) > 8 {
			t.Fatal("more than 8 shards owned")
		}
	}
	if total := checkDisjoint(t, a, b, c); total != 8 {
		t.Fatalf("%d shards owned with three replicas, want 8", total)
	}
	for _, m := range []*Manager{a, b, c} {
		if n := len(owned(m)); n < 2 || n > 3 {
			t.Errorf("%s owns %d shards, want 2 or 3", m.o.Identity, n)
		}
	}

	// c dies (stops renewing): a and b serve its shards within the lease
	// duration and a retry period, and never while c could still write.
	cShards := owned(c)
	died := clk.Now()
	for clk.Since(died) < 15*time.Second+4*time.Second {
		step(clk, a, b)
		for i := range cShards {
			if (a.Valid(i) || b.Valid(i)) && c.Valid(i) {
				t.Fatalf("shard %d valid on two replicas at once", i)
			}
		}
		checkDisjoint(t, a, b)
	}
	if total := checkDisjoint(t, a, b); total != 8 {
		t.Fatalf("%d shards served %v after c died, want 8", total, clk.Since(died))
	}

	// a shuts down and releases: b takes everything at the next rounds.
	a.Release(context.Background())
	for range 3 {
		step(clk, b)
	}
	if n := len(owned(b)); n != 8 {
		t.Fatalf("b owns %d shards after a released, want 8", n)
	}
}

func TestOfIsStableAndSpread(t *testing.T) {
	counts := make([]int, 8)
	for i := range 8000 {
		counts[Of(fmt.Sprintf("ns-%d/vpa-%d", i%40, i), 8)]++
	}
	for i, n := range counts {
		if n < 800 || n > 1200 {
			t.Errorf("shard %d has %d of 8000 keys", i, n)
		}
	}
	if Of("default/web", 8) != Of("default/web", 8) || Of("x", 1) != 0 {
		t.Error("Of is not stable")
	}
}

// TestRBACNamesEveryLease: the recommender's Role names every shard and
// member Lease of the default group, so replicas can write them.
func TestRBACNamesEveryLease(t *testing.T) {
	data, err := os.ReadFile("../../deploy/rbac/recommender.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := &Manager{o: Options{Name: "vpa-recommender-lease"}}
	for i := range MaxShards {
		if !strings.Contains(string(data), `"`+m.shardName(i)+`"`) {
			t.Errorf("deploy/rbac/recommender.yaml does not name %s", m.shardName(i))
		}
	}
	for k := range MaxMembers {
		if !strings.Contains(string(data), `"`+m.memberName(k)+`"`) {
			t.Errorf("deploy/rbac/recommender.yaml does not name %s", m.memberName(k))
		}
	}
}

// TestReplicasStartingTogetherSplitAtOnce: replicas started at the same
// time take shares of the shards from the start, without the first one
// taking all of them and handing half over (which at 10,000 VPAs costs the
// checkpoints of 5,000 before the second replica writes anything).
func TestReplicasStartingTogetherSplitAtOnce(t *testing.T) {
	f := &fakeLeases{m: map[string]*coordinationv1.Lease{}}
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	a, b := newManager(t, f, clk, "a"), newManager(t, f, clk, "b")
	step(clk, a) // a starts first, b a moment later
	step(clk, b)
	for range 2 {
		step(clk, a, b)
		if len(a.Snapshot().Draining) > 0 || len(b.Snapshot().Draining) > 0 {
			t.Fatalf("a replica gives shards away right after starting: a %v, b %v", a.Snapshot().Draining, b.Snapshot().Draining)
		}
	}
	if na, nb := len(owned(a)), len(owned(b)); na != 4 || nb != 4 {
		t.Fatalf("a owns %d shards, b %d, want 4 each", na, nb)
	}
	checkDisjoint(t, a, b)
}

func TestSettledAfterTheFirstTakingRound(t *testing.T) {
	f := &fakeLeases{m: map[string]*coordinationv1.Lease{}}
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	a := newManager(t, f, clk, "a")
	isSettled := func() bool {
		select {
		case <-a.Settled():
			return true
		default:
			return false
		}
	}
	step(clk, a)
	if isSettled() {
		t.Fatal("settled after the round that only announces the replica")
	}
	step(clk, a)
	if !isSettled() || len(owned(a)) != 8 {
		t.Fatalf("settled %v with %d shards after the second round, want settled with 8", isSettled(), len(owned(a)))
	}
	step(clk, a) // a later round must not close it again
}
