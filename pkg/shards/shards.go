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

// Package shards divides a component's objects among its replicas through
// one coordination.k8s.io/v1 Lease per shard.
//
// An object belongs to shard Of(key, N). Every replica holds one of
// MaxMembers member Leases, counts the live members M, and holds up to ceil(N/M) shard Leases:
// it takes shards that are free or whose holder stopped renewing, and when
// members join it gives its extra shards back, after the caller has drained
// them (written what it keeps for them). As in leader election, a Lease
// counts as held until its spec has not changed for LeaseDuration by the
// observer's own clock, and a holder treats a shard as its own only while
// its last renewal is younger than RenewDeadline, which is shorter: so two
// replicas never both treat a shard as theirs. The Leases are written and
// observed through the lease core, pkg/leases.
package shards

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/openvpa/openvpa/pkg/leases"
)

// Labels of the Leases a group uses.
const (
	LabelGroup = "shards.openvpa.io/group"
	LabelRole  = "shards.openvpa.io/role"
	RoleShard  = "shard"
	RoleMember = "member"
)

// Of returns the shard of key among n (FNV-1a; 0 when n < 2).
func Of(key string, n int) int {
	if n < 2 {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return int(h.Sum32() % uint32(n))
}

// Options configure a Manager.
type Options struct {
	// Shards is the number of shards, 1 to MaxShards.
	Shards int
	// ByNamespace divides namespaces among the shards, not objects: all
	// objects of a namespace are in one shard, so a replica can cache only
	// its shards' namespaces.
	ByNamespace bool
	// Name names the group: shard Leases are <Name>-shard-<i>, member
	// Leases <Name>-member-<slot>.
	Name      string
	Namespace string
	// Identity is this replica's holder identity.
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod mean what they mean for
	// leader election.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	Clock                                     clock.WithTicker
	// Registerer receives the metrics; nil: not registered.
	Registerer prometheus.Registerer
}

// Snapshot is which shards a replica serves.
type Snapshot struct {
	// Owned are the shards whose objects the replica serves.
	Owned map[int]bool
	// Draining are shards the replica still holds but gives away: it
	// should save what it keeps for their objects and call Drained.
	Draining map[int]bool
}

type held struct {
	lease    *coordinationv1.Lease
	renewed  time.Time // start of the last successful write
	draining bool
	drained  bool
}

// Manager holds this replica's shards. Run keeps them; Snapshot, Valid and
// Drained are safe to call from any goroutine.
type Manager struct {
	o      Options
	leases leases.ListClient
	holder *leases.Holder
	// obs tells whether the group's Leases are held, by this replica's
	// clock.
	obs    *leases.Observer
	owned  prometheus.Gauge
	member prometheus.Gauge

	mu      sync.Mutex
	held    map[int]*held
	members int
	self    *coordinationv1.Lease
	// rounds counts the rounds run so far; settled closes at the end of
	// the first round that may take shards.
	rounds  int
	settled chan struct{}
	// taken receives (without blocking) when a round takes a shard.
	taken chan struct{}
}

// New returns a Manager.
func New(o Options, client leases.ListClient) (*Manager, error) {
	if o.Shards < 1 || o.Shards > MaxShards {
		return nil, fmt.Errorf("shards: need 1 to %d shards, got %d", MaxShards, o.Shards)
	}
	if o.Name == "" || o.Namespace == "" || o.Identity == "" {
		return nil, errors.New("shards: name, namespace and identity must be set")
	}
	if o.RenewDeadline <= 0 || o.RenewDeadline >= o.LeaseDuration || o.RetryPeriod <= 0 {
		return nil, fmt.Errorf("shards: need 0 < retry period and 0 < renew deadline (%v) < lease duration (%v)", o.RenewDeadline, o.LeaseDuration)
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	m := &Manager{
		o:      o,
		leases: client,
		holder: leases.NewHolder(client, o.Identity, o.LeaseDuration, o.Clock),
		obs:    leases.NewObserver(o.Clock, o.LeaseDuration),
		owned: prometheus.NewGauge(prometheus.GaugeOpts{Name: "shards_owned", Namespace: "vpa_recommender",
			Help: "Shards this replica serves."}),
		member: prometheus.NewGauge(prometheus.GaugeOpts{Name: "shard_members", Namespace: "vpa_recommender",
			Help: "Live replicas sharing the shards, as this replica counts them."}),
		held:    map[int]*held{},
		settled: make(chan struct{}),
		taken:   make(chan struct{}, 1),
	}
	if o.Registerer != nil {
		o.Registerer.MustRegister(m.owned, m.member)
	}
	return m, nil
}

func (m *Manager) shardName(i int) string { return m.o.Name + "-shard-" + strconv.Itoa(i) }

// Limits on the group, so that RBAC can name every Lease it uses
// (deploy/rbac/recommender.yaml).
const (
	MaxShards  = 64
	MaxMembers = 64
)

func (m *Manager) memberName(k int) string { return m.o.Name + "-member-" + strconv.Itoa(k) }

// Of returns the shard of an object's "namespace/name" key: with
// ByNamespace, the shard of its namespace.
func (m *Manager) Of(key string) int {
	if m.o.ByNamespace {
		ns, _, _ := strings.Cut(key, "/")
		return m.OfNamespace(ns)
	}
	return Of(key, m.o.Shards)
}

// OfNamespace returns the shard of every object in namespace; only with
// ByNamespace.
func (m *Manager) OfNamespace(namespace string) int { return Of(namespace, m.o.Shards) }

// Identity is the holder identity this replica writes on its Leases.
func (m *Manager) Identity() string { return m.o.Identity }

// Snapshot returns the shards this replica serves and drains now.
func (m *Manager) Snapshot() Snapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.o.Clock.Now()
	s := Snapshot{Owned: map[int]bool{}, Draining: map[int]bool{}}
	for i, h := range m.held {
		switch {
		case !m.valid(h, now):
		case h.draining:
			s.Draining[i] = true
		default:
			s.Owned[i] = true
		}
	}
	return s
}

// Valid reports whether this replica may write the objects of shard i now:
// it holds the shard (owned or draining) and renewed it within the renew
// deadline.
func (m *Manager) Valid(i int) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	h, ok := m.held[i]
	return ok && m.valid(h, m.o.Clock.Now())
}

func (m *Manager) valid(h *held, now time.Time) bool {
	return now.Sub(h.renewed) < m.o.RenewDeadline
}

// Drained tells the manager that shard i's objects are saved: its Lease is
// released at the next round.
func (m *Manager) Drained(i int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if h, ok := m.held[i]; ok && h.draining {
		h.drained = true
	}
}

// Run keeps the member and shard Leases every RetryPeriod until ctx ends.
// It does not release them: call Release once the objects are saved.
func (m *Manager) Run(ctx context.Context) {
	for {
		m.round(ctx)
		t := m.o.Clock.NewTimer(m.o.RetryPeriod)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// round is one pass: list the group's Leases, renew this replica's, count
// the members, give away extra shards, release drained ones and take free
// ones up to this replica's share.
func (m *Manager) round(ctx context.Context) {
	logger := klog.FromContext(ctx)
	rctx, cancel := context.WithTimeout(ctx, m.o.RenewDeadline)
	defer cancel()
	list, err := m.leases.List(rctx, m.o.Namespace, LabelGroup+"="+m.o.Name)
	if err != nil {
		logger.Error(err, "Cannot list the shard leases", "group", m.o.Name)
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.o.Clock.Now()
	byName := map[string]*coordinationv1.Lease{}
	for i := range list.Items {
		l := &list.Items[i]
		byName[l.Name] = l
		m.obs.Observe(l)
	}
	m.renewMember(rctx, byName, now)
	members := 1
	for _, l := range list.Items {
		if l.Labels[LabelRole] == RoleMember && (m.self == nil || l.Name != m.self.Name) && m.alive(l) {
			members++
		}
	}
	m.members = members
	share := (m.o.Shards + members - 1) / members

	// Renew what is held; forget what was lost.
	for i, h := range m.held {
		l := byName[m.shardName(i)]
		if l == nil || leases.HolderOf(l) != m.o.Identity {
			logger.Info("Lost a shard", "shard", i, "group", m.o.Name)
			delete(m.held, i)
			continue
		}
		if h.drained {
			m.release(rctx, i, l)
			continue
		}
		if u, err := m.write(rctx, l, now); err == nil {
			h.lease, h.renewed = u, now
		} else if !m.valid(h, m.o.Clock.Now()) {
			logger.Info("Could not renew a shard in time; giving it up", "shard", i, "err", err.Error())
			delete(m.held, i)
		}
	}
	// Give extra shards away, the highest first.
	active := m.activeIndices()
	for len(active) > share {
		i := active[len(active)-1]
		active = active[:len(active)-1]
		m.held[i].draining = true
		logger.Info("Giving a shard to another replica", "shard", i, "share", share, "members", members)
	}
	// Take free shards up to the share, starting at a point of this
	// replica's own so that replicas starting together try different ones.
	// Not in the first round: it only announces this replica, so that
	// replicas starting together count each other before they take shards
	// (otherwise the first to list takes every shard and must then hand
	// half of them over, saving their checkpoints, before the others can
	// write a first status).
	m.rounds++
	announceOnly := m.rounds == 1
	start := Of(m.o.Identity, m.o.Shards)
	for k := 0; !announceOnly && k < m.o.Shards && len(active) < share; k++ {
		i := (start + k) % m.o.Shards
		if _, ok := m.held[i]; ok {
			continue
		}
		l := byName[m.shardName(i)]
		if l != nil && leases.HolderOf(l) != "" && m.alive(*l) {
			continue
		}
		var u *coordinationv1.Lease
		var err error
		if l == nil {
			u, err = m.create(rctx, m.shardName(i), RoleShard, now)
		} else {
			u, err = m.write(rctx, l, now)
		}
		if err != nil {
			logger.V(2).Info("Could not take a shard", "shard", i, "err", err.Error())
			continue
		}
		m.held[i] = &held{lease: u, renewed: now}
		active = append(active, i)
		logger.Info("Took a shard", "shard", i, "group", m.o.Name, "share", share, "members", members)
		notify(m.taken)
	}
	m.owned.Set(float64(len(active)))
	m.member.Set(float64(members))
	if m.rounds == 2 {
		close(m.settled)
	}
}

// Changed receives when the replica took a shard: a loop waiting for its
// next interval can serve it at once.
func (m *Manager) Changed() <-chan struct{} { return m.taken }

func notify(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// LeaseDuration is the Leases' duration.
func (m *Manager) LeaseDuration() time.Duration { return m.o.LeaseDuration }

// Settled is closed once the manager has run the first round in which it
// takes shards: a loop started before would serve nothing for an interval.
func (m *Manager) Settled() <-chan struct{} { return m.settled }

func (m *Manager) activeIndices() []int {
	var out []int
	for i, h := range m.held {
		if !h.draining {
			out = append(out, i)
		}
	}
	sort.Ints(out)
	return out
}

// alive reports whether a Lease held by someone changed within the lease
// duration by this replica's clock.
func (m *Manager) alive(l coordinationv1.Lease) bool {
	_, live := m.obs.Holder(l.Namespace, l.Name)
	return live
}

// renewMember renews this replica's member slot, or takes a free one.
func (m *Manager) renewMember(ctx context.Context, byName map[string]*coordinationv1.Lease, now time.Time) {
	logger := klog.FromContext(ctx)
	if m.self != nil {
		if cur := byName[m.self.Name]; cur != nil && leases.HolderOf(cur) == m.o.Identity {
			u, err := m.write(ctx, cur, now)
			if err != nil {
				logger.V(2).Info("Could not renew the member lease", "lease", m.self.Name, "err", err.Error())
				return
			}
			m.self = u
			return
		}
		m.self = nil // lost: the slot was taken over
	}
	start := Of(m.o.Identity, MaxMembers)
	for k := range MaxMembers {
		name := m.memberName((start + k) % MaxMembers)
		cur := byName[name]
		var u *coordinationv1.Lease
		var err error
		switch {
		case cur == nil:
			u, err = m.create(ctx, name, RoleMember, now)
		case leases.HolderOf(cur) == "" || !m.alive(*cur):
			u, err = m.write(ctx, cur, now)
		default:
			continue
		}
		if err == nil {
			m.self = u
			return
		}
	}
	logger.Info("No member slot is free; this replica takes no shards", "slots", MaxMembers)
}

// create creates a Lease of the group held by this replica; now is when
// the round began.
func (m *Manager) create(ctx context.Context, name, role string, now time.Time) (*coordinationv1.Lease, error) {
	u, err := m.holder.Create(ctx, metav1.ObjectMeta{Namespace: m.o.Namespace, Name: name, Labels: map[string]string{LabelGroup: m.o.Name, LabelRole: role}})
	if err != nil {
		return nil, err
	}
	m.obs.Wrote(u, now)
	return u, nil
}

// write renews l, or takes it over from its former holder, with an
// optimistic update of the version listed.
func (m *Manager) write(ctx context.Context, l *coordinationv1.Lease, now time.Time) (*coordinationv1.Lease, error) {
	u, err := m.holder.Claim(ctx, l)
	if err != nil {
		return nil, err
	}
	m.obs.Wrote(u, now)
	return u, nil
}

// release empties a held shard's Lease so another replica takes it at once.
func (m *Manager) release(ctx context.Context, i int, l *coordinationv1.Lease) {
	delete(m.held, i)
	if _, err := m.holder.Release(ctx, l); err != nil {
		klog.FromContext(ctx).Error(err, "Could not release a shard; it expires instead", "shard", i)
		return
	}
	klog.FromContext(ctx).Info("Released a shard", "shard", i, "group", m.o.Name)
}

// Release gives back every shard and the member Lease, e.g. on shutdown
// once the objects are saved. Run must have returned.
func (m *Manager) Release(ctx context.Context) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, h := range m.held {
		m.release(ctx, i, h.lease)
	}
	if m.self != nil {
		if _, err := m.holder.Release(ctx, m.self); err != nil {
			klog.FromContext(ctx).V(2).Info("Could not release the member lease", "err", err.Error())
		}
	}
	m.owned.Set(0)
}
