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
	"strconv"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

// fakeLeases is Client over a fake clientset whose reactors give every
// write a new resourceVersion and refuse an Update of a stale one, as the
// API server does (the fake tracker alone does neither).
type fakeLeases struct {
	cs *fake.Clientset

	mu      sync.Mutex
	version int
	updates int
}

func newFakeLeases(t *testing.T, seed ...*coordinationv1.Lease) *fakeLeases {
	t.Helper()
	f := &fakeLeases{cs: fake.NewClientset()}
	f.cs.PrependReactor("create", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		f.stamp(a.(k8stesting.CreateAction).GetObject().(*coordinationv1.Lease))
		return false, nil, nil
	})
	f.cs.PrependReactor("update", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		l := a.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease)
		// The tracker, not the clientset: a reactor must not call back into
		// the clientset, which holds its lock.
		cur, err := f.cs.Tracker().Get(coordinationv1.SchemeGroupVersion.WithResource("leases"), l.Namespace, l.Name)
		if err != nil {
			return false, nil, nil // the tracker answers NotFound
		}
		if cur.(*coordinationv1.Lease).ResourceVersion != l.ResourceVersion {
			return true, nil, apierrors.NewConflict(coordinationv1.Resource("leases"), l.Name, errors.New("the object has been modified"))
		}
		f.mu.Lock()
		f.updates++
		f.mu.Unlock()
		f.stamp(l)
		return false, nil, nil
	})
	for _, l := range seed {
		if _, err := f.Create(context.Background(), l); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func (f *fakeLeases) stamp(l *coordinationv1.Lease) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.version++
	l.ResourceVersion = strconv.Itoa(f.version)
}

func (f *fakeLeases) writes() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.updates
}

func (f *fakeLeases) Get(ctx context.Context, namespace, name string) (*coordinationv1.Lease, error) {
	return f.cs.CoordinationV1().Leases(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (f *fakeLeases) Create(ctx context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	return f.cs.CoordinationV1().Leases(l.Namespace).Create(ctx, l, metav1.CreateOptions{})
}

func (f *fakeLeases) Update(ctx context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	return f.cs.CoordinationV1().Leases(l.Namespace).Update(ctx, l, metav1.UpdateOptions{})
}

func lease(spec coordinationv1.LeaseSpec) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "l"}, Spec: spec}
}

func TestAcquire(t *testing.T) {
	const duration = 15 * time.Second
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	earlier := metav1.NewMicroTime(start.Add(-time.Hour))
	tests := []struct {
		name string
		seed *coordinationv1.Lease // nil: no Lease
		// watched: the observer saw the seed this long before the attempt.
		watched         time.Duration
		wantErr         error
		wantHolder      string
		wantTransitions int32
		wantAcquire     time.Time
	}{
		{name: "missing lease is created", wantHolder: "me", wantTransitions: 0, wantAcquire: start},
		{
			name:    "another holder, just seen",
			seed:    lease(coordinationv1.LeaseSpec{HolderIdentity: ptr.To("other"), RenewTime: &earlier, LeaseTransitions: ptr.To[int32](2)}),
			wantErr: ErrHeld, wantHolder: "other", wantTransitions: 2,
		},
		{
			name:    "another holder, unchanged for under the duration",
			seed:    lease(coordinationv1.LeaseSpec{HolderIdentity: ptr.To("other"), LeaseTransitions: ptr.To[int32](2)}),
			watched: duration - time.Second,
			wantErr: ErrHeld, wantHolder: "other", wantTransitions: 2,
		},
		{
			name:       "another holder, unchanged for the duration: expired, taken over",
			seed:       lease(coordinationv1.LeaseSpec{HolderIdentity: ptr.To("other"), AcquireTime: &earlier, LeaseTransitions: ptr.To[int32](2)}),
			watched:    duration,
			wantHolder: "me", wantTransitions: 3, wantAcquire: start,
		},
		{
			name:       "released lease is taken at once",
			seed:       lease(coordinationv1.LeaseSpec{HolderIdentity: ptr.To(""), LeaseTransitions: ptr.To[int32](2)}),
			wantHolder: "me", wantTransitions: 3, wantAcquire: start,
		},
		{
			name:       "our own lease is renewed",
			seed:       lease(coordinationv1.LeaseSpec{HolderIdentity: ptr.To("me"), AcquireTime: &earlier, LeaseTransitions: ptr.To[int32](2)}),
			wantHolder: "me", wantTransitions: 2, wantAcquire: earlier.Time,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			var f *fakeLeases
			if tt.seed != nil {
				f = newFakeLeases(t, tt.seed)
			} else {
				f = newFakeLeases(t)
			}
			clk := testingclock.NewFakeClock(start.Add(-tt.watched))
			obs := NewObserver(clk, duration)
			h := NewHolder(f, "me", duration, clk)
			if tt.watched > 0 {
				cur, err := f.Get(ctx, "ns", "l")
				if err != nil {
					t.Fatal(err)
				}
				obs.Observe(cur)
				clk.SetTime(start)
			}
			got, err := h.Acquire(ctx, obs, "ns", "l")
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Acquire() error = %v, want %v", err, tt.wantErr)
			}
			stored, gerr := f.Get(ctx, "ns", "l")
			if gerr != nil {
				t.Fatal(gerr)
			}
			if holder := HolderOf(stored); holder != tt.wantHolder {
				t.Errorf("holder = %q, want %q", holder, tt.wantHolder)
			}
			if tr := ptr.Deref(stored.Spec.LeaseTransitions, -1); tr != tt.wantTransitions {
				t.Errorf("leaseTransitions = %d, want %d", tr, tt.wantTransitions)
			}
			if err != nil {
				return
			}
			if got.ResourceVersion != stored.ResourceVersion {
				t.Errorf("Acquire() returned version %q, the server holds %q", got.ResourceVersion, stored.ResourceVersion)
			}
			if !stored.Spec.AcquireTime.Time.Equal(tt.wantAcquire) || !stored.Spec.RenewTime.Time.Equal(start) {
				t.Errorf("acquire/renew time = %v/%v, want %v/%v", stored.Spec.AcquireTime, stored.Spec.RenewTime, tt.wantAcquire, start)
			}
			if s := ptr.Deref(stored.Spec.LeaseDurationSeconds, 0); s != 15 {
				t.Errorf("leaseDurationSeconds = %d, want 15", s)
			}
			if holder, live := obs.Holder("ns", "l"); holder != "me" || !live {
				t.Errorf("the observer sees %q, live %v after the write, want me, live", holder, live)
			}
		})
	}
}

// TestClaimConflict: a renewal or release based on a version another writer
// replaced fails with a Conflict and leaves the Lease as it is; one based on
// the current version lands.
func TestClaimConflict(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := testingclock.NewFakeClock(start)
	f := newFakeLeases(t)
	h := NewHolder(f, "me", 15*time.Second, clk)
	first, err := h.Create(ctx, metav1.ObjectMeta{Namespace: "ns", Name: "l"})
	if err != nil {
		t.Fatal(err)
	}
	clk.Step(time.Second)
	second, err := h.Claim(ctx, first)
	if err != nil {
		t.Fatalf("renewing the current version: %v", err)
	}
	tests := []struct {
		name  string
		write func(*coordinationv1.Lease) (*coordinationv1.Lease, error)
	}{
		{name: "renew", write: func(l *coordinationv1.Lease) (*coordinationv1.Lease, error) { return h.Claim(ctx, l) }},
		{name: "release", write: func(l *coordinationv1.Lease) (*coordinationv1.Lease, error) { return h.Release(ctx, l) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk.Step(time.Second)
			if _, err := tt.write(first); !apierrors.IsConflict(err) {
				t.Fatalf("writing a stale version: error = %v, want a Conflict", err)
			}
			stored, err := f.Get(ctx, "ns", "l")
			if err != nil {
				t.Fatal(err)
			}
			if stored.ResourceVersion != second.ResourceVersion || HolderOf(stored) != "me" {
				t.Errorf("the stale write changed the lease: %+v", stored)
			}
		})
	}
	third, err := h.Claim(ctx, second)
	if err != nil {
		t.Fatalf("renewing the current version: %v", err)
	}
	if !third.Spec.AcquireTime.Time.Equal(start) || !third.Spec.RenewTime.Time.Equal(clk.Now()) {
		t.Errorf("acquire/renew time = %v/%v, want %v/%v", third.Spec.AcquireTime, third.Spec.RenewTime, start, clk.Now())
	}
}

// TestRelease: only a Lease held by this holder is released.
func TestRelease(t *testing.T) {
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	earlier := metav1.NewMicroTime(start.Add(-time.Hour))
	tests := []struct {
		name       string
		spec       coordinationv1.LeaseSpec
		wantErr    error
		wantWrites int
		wantHolder string
	}{
		{
			name:       "held by us",
			spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("me"), AcquireTime: &earlier, LeaseTransitions: ptr.To[int32](4)},
			wantWrites: 1, wantHolder: "",
		},
		{
			name:       "held by another",
			spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("other"), LeaseTransitions: ptr.To[int32](4)},
			wantErr:    ErrNotHeld,
			wantWrites: 0, wantHolder: "other",
		},
		{
			name:       "already released",
			spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(""), LeaseTransitions: ptr.To[int32](4)},
			wantErr:    ErrNotHeld,
			wantWrites: 0, wantHolder: "",
		},
		{
			name:       "no holder field",
			spec:       coordinationv1.LeaseSpec{LeaseTransitions: ptr.To[int32](4)},
			wantErr:    ErrNotHeld,
			wantWrites: 0, wantHolder: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			f := newFakeLeases(t, lease(tt.spec))
			h := NewHolder(f, "me", 15*time.Second, testingclock.NewFakeClock(start))
			cur, err := f.Get(ctx, "ns", "l")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := h.Release(ctx, cur); !errors.Is(err, tt.wantErr) {
				t.Fatalf("Release() error = %v, want %v", err, tt.wantErr)
			}
			if n := f.writes(); n != tt.wantWrites {
				t.Errorf("Release() wrote %d times, want %d", n, tt.wantWrites)
			}
			stored, err := f.Get(ctx, "ns", "l")
			if err != nil {
				t.Fatal(err)
			}
			if holder := HolderOf(stored); holder != tt.wantHolder {
				t.Errorf("holder = %q, want %q", holder, tt.wantHolder)
			}
			if tr := ptr.Deref(stored.Spec.LeaseTransitions, -1); tr != 4 {
				t.Errorf("leaseTransitions = %d, want 4 (kept)", tr)
			}
			if tt.wantErr == nil {
				if s := ptr.Deref(stored.Spec.LeaseDurationSeconds, 0); s != 1 || !stored.Spec.RenewTime.Time.Equal(start) {
					t.Errorf("released spec = %+v, want a 1s duration renewed at %v", stored.Spec, start)
				}
			}
		})
	}
}

// nothingClient answers every call with neither a lease nor an error.
type nothingClient struct{}

func (nothingClient) Get(context.Context, string, string) (*coordinationv1.Lease, error) {
	return nil, nil
}

func (nothingClient) Create(context.Context, *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	return nil, nil
}

func (nothingClient) Update(context.Context, *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	return nil, nil
}

func TestAnswerWithoutALeaseIsAnError(t *testing.T) {
	h := NewHolder(nothingClient{}, "me", time.Second, nil)
	obs := NewObserver(nil, time.Second)
	if _, err := h.Acquire(context.Background(), obs, "ns", "l"); err == nil {
		t.Error("Acquire() = nil error with a client that returns no lease")
	}
	if _, err := h.Create(context.Background(), metav1.ObjectMeta{Namespace: "ns", Name: "l"}); err == nil {
		t.Error("Create() = nil error with a client that returns no lease")
	}
}
