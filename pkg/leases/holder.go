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
	"context"
	"errors"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
)

var (
	// ErrHeld is returned by Acquire when another holder's holding of the
	// Lease is live.
	ErrHeld = errors.New("the lease is held by another holder")
	// ErrNotHeld is returned by Release when the Lease names another holder
	// (or none): it is left as it is.
	ErrNotHeld = errors.New("the lease is not held by this holder")
	// errNoLease is returned when the client answers without a Lease or an
	// error.
	errNoLease = errors.New("the API server returned no lease")
)

// Holder writes Leases as one holder identity: it creates them, renews or
// takes them over with optimistic updates of the version it read or wrote
// last (a stale version fails with a Conflict, apierrors.IsConflict), and
// releases them.
type Holder struct {
	client   Client
	identity string
	duration time.Duration
	clock    clock.PassiveClock
}

// NewHolder returns a Holder writing identity as the holder of Leases held
// for duration, with times from clk (nil: the real clock).
func NewHolder(client Client, identity string, duration time.Duration, clk clock.PassiveClock) *Holder {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Holder{client: client, identity: identity, duration: duration, clock: clk}
}

// Identity is the holder identity written on the Leases.
func (h *Holder) Identity() string { return h.identity }

// Create creates the Lease meta names, held by this holder.
func (h *Holder) Create(ctx context.Context, meta metav1.ObjectMeta) (*coordinationv1.Lease, error) {
	created, err := h.client.Create(ctx, &coordinationv1.Lease{
		ObjectMeta: meta,
		Spec:       NextSpec(nil, h.identity, h.duration, h.clock.Now()),
	})
	return answer(created, err)
}

// Claim writes current, the version read or written last, with this holder
// as holder: a renewal when current names it, a take-over otherwise. It does
// not check whether another holder's holding is live (see Acquire).
func (h *Holder) Claim(ctx context.Context, current *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	next := current.DeepCopy()
	next.Spec = NextSpec(&current.Spec, h.identity, h.duration, h.clock.Now())
	updated, err := h.client.Update(ctx, next)
	return answer(updated, err)
}

// Acquire reads the Lease namespace/name and, unless obs sees another
// holder's holding of it live (ErrHeld), creates it or claims it. It tells
// obs what it read and what it wrote.
func (h *Holder) Acquire(ctx context.Context, obs *Observer, namespace, name string) (*coordinationv1.Lease, error) {
	start := h.clock.Now()
	current, err := answer(h.client.Get(ctx, namespace, name))
	if apierrors.IsNotFound(err) {
		created, err := h.Create(ctx, metav1.ObjectMeta{Namespace: namespace, Name: name})
		if err != nil {
			return nil, fmt.Errorf("creating the lease: %w", err)
		}
		obs.Wrote(created, start)
		return created, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the lease: %w", err)
	}
	obs.Observe(current)
	if holder, live := obs.Holder(namespace, name); live && holder != h.identity {
		return nil, fmt.Errorf("%w %q", ErrHeld, holder)
	}
	updated, err := h.Claim(ctx, current)
	if err != nil {
		return nil, fmt.Errorf("writing the lease: %w", err)
	}
	obs.Wrote(updated, start)
	return updated, nil
}

// Release empties current, the version read or written last, so that
// another holder may take it at once, if current names this holder;
// otherwise it returns ErrNotHeld and writes nothing.
func (h *Holder) Release(ctx context.Context, current *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	if holder := HolderOf(current); holder != h.identity {
		return nil, fmt.Errorf("%w (holder %q)", ErrNotHeld, holder)
	}
	next := current.DeepCopy()
	next.Spec = ReleasedSpec(&current.Spec, h.clock.Now())
	updated, err := h.client.Update(ctx, next)
	return answer(updated, err)
}

func answer(lease *coordinationv1.Lease, err error) (*coordinationv1.Lease, error) {
	if err == nil && lease == nil {
		return nil, errNoLease
	}
	return lease, err
}
