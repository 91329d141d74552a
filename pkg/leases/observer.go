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

package leases

import (
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

// Observer tells whether Leases are held, by the observer's own clock and
// never by the times a Lease states (the holder's clock may differ): a
// Lease's holding is live until its spec has not changed for the lease
// duration since the observer first saw that spec. Safe for concurrent use.
type Observer struct {
	clock    clock.PassiveClock
	duration time.Duration

	mu   sync.Mutex
	seen map[types.NamespacedName]sighting
}

type sighting struct {
	spec coordinationv1.LeaseSpec
	at   time.Time
}

// NewObserver returns an Observer of Leases held for duration; clk nil is
// the real clock.
func NewObserver(clk clock.PassiveClock, duration time.Duration) *Observer {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Observer{clock: clk, duration: duration, seen: map[types.NamespacedName]sighting{}}
}

func keyOf(lease *coordinationv1.Lease) types.NamespacedName {
	return types.NamespacedName{Namespace: lease.Namespace, Name: lease.Name}
}

// Observe records a Lease read from the API server. A spec unchanged since
// the last sighting keeps its first-seen time, so a holder that stopped
// renewing expires after the lease duration, whatever times it wrote.
func (o *Observer) Observe(lease *coordinationv1.Lease) {
	if lease == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	k := keyOf(lease)
	if s, ok := o.seen[k]; ok && apiequality.Semantic.DeepEqual(s.spec, lease.Spec) {
		return
	}
	o.seen[k] = sighting{spec: *lease.Spec.DeepCopy(), at: o.clock.Now()}
}

// Wrote records a Lease the observer's own holder wrote in a write that
// began at at: its holding counts from then, not from when the answer came.
func (o *Observer) Wrote(lease *coordinationv1.Lease, at time.Time) {
	if lease == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.seen[keyOf(lease)] = sighting{spec: *lease.Spec.DeepCopy(), at: at}
}

// Holder returns the holder the Lease namespace/name named when last
// observed ("" when none or never observed) and whether that holding is
// live: it names a holder and its spec changed less than the lease
// duration ago.
func (o *Observer) Holder(namespace, name string) (holder string, live bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	s, ok := o.seen[types.NamespacedName{Namespace: namespace, Name: name}]
	if !ok {
		return "", false
	}
	holder = ptr.Deref(s.spec.HolderIdentity, "")
	return holder, holder != "" && o.clock.Since(s.at) < o.duration
}
