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

// Package leaderelection runs pkg/leaderelection against the local control
// plane: its lease client over the real API server's protobuf endpoint, and
// two candidates in one process taking turns on a Lease in the test's
// namespace.
package leaderelection

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/openvpa/openvpa/e2e/framework"
	"github.com/openvpa/openvpa/pkg/leaderelection"
	"github.com/openvpa/openvpa/pkg/leases"
)

const leaseName = "openvpa-e2e-leader"

// contentTypes records the Content-Type of every response.
type contentTypes struct {
	next http.RoundTripper
	mu   sync.Mutex
	seen []string
}

func (c *contentTypes) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(r)
	if err == nil {
		c.mu.Lock()
		c.seen = append(c.seen, resp.Header.Get("Content-Type"))
		c.mu.Unlock()
	}
	return resp, err
}

func TestLeaseClient(t *testing.T) {
	c := framework.Start(t)
	ns := c.NewNamespace(t)
	ctx := context.Background()

	recorder := &contentTypes{}
	cfg := rest.CopyConfig(c.Config)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		recorder.next = rt
		return recorder
	}
	leases, err := leases.New(cfg)
	if err != nil {
		t.Fatal(err)
	}

	if _, err := leases.Get(ctx, ns, leaseName); !apierrors.IsNotFound(err) {
		t.Fatalf("Get() of a missing lease: %v, want NotFound", err)
	}
	now := metav1.NewMicroTime(time.Now().Truncate(time.Microsecond))
	created, err := leases.Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: leaseName},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To("one"), LeaseDurationSeconds: ptr.To[int32](15),
			AcquireTime: &now, RenewTime: &now, LeaseTransitions: ptr.To[int32](0),
		},
	})
	if err != nil {
		t.Fatalf("Create(): %v", err)
	}
	if created.ResourceVersion == "" || ptr.Deref(created.Spec.HolderIdentity, "") != "one" {
		t.Fatalf("Create() returned %+v", created)
	}
	again := created.DeepCopy()
	again.ResourceVersion = ""
	if _, err := leases.Create(ctx, again); !apierrors.IsAlreadyExists(err) {
		t.Errorf("second Create(): %v, want AlreadyExists", err)
	}

	next := created.DeepCopy()
	next.Spec.HolderIdentity = ptr.To("two")
	next.Spec.LeaseTransitions = ptr.To[int32](1)
	updated, err := leases.Update(ctx, next)
	if err != nil {
		t.Fatalf("Update(): %v", err)
	}
	if updated.ResourceVersion == created.ResourceVersion {
		t.Errorf("Update() kept resourceVersion %s", updated.ResourceVersion)
	}
	// An update based on the old version must conflict.
	if _, err := leases.Update(ctx, created); !apierrors.IsConflict(err) {
		t.Errorf("Update() with a stale resourceVersion: %v, want Conflict", err)
	}

	got, err := c.Client.CoordinationV1().Leases(ns).Get(ctx, leaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ptr.Deref(got.Spec.HolderIdentity, "") != "two" || ptr.Deref(got.Spec.LeaseTransitions, 0) != 1 || !got.Spec.RenewTime.Equal(&now) {
		t.Errorf("stored lease spec = %+v", got.Spec)
	}

	recorder.mu.Lock()
	defer recorder.mu.Unlock()
	for i, ct := range recorder.seen {
		if ct != runtime.ContentTypeProtobuf {
			t.Errorf("response %d Content-Type = %q, want %s", i, ct, runtime.ContentTypeProtobuf)
		}
	}
}

// candidate is one Run call; its work function blocks until its context ends.
type candidate struct {
	name    string
	cancel  context.CancelFunc
	leading atomic.Bool
	done    chan error
}

func TestCandidatesTakeTurns(t *testing.T) {
	c := framework.Start(t)
	ns := c.NewNamespace(t)
	ctx := context.Background()

	o := leaderelection.NewOptions(leaseName)
	o.LeaderElect = true
	o.ResourceNamespace = ns
	o.RetryPeriod = 100 * time.Millisecond
	// The default lease duration (15s): the second candidate can only lead
	// within the takeover timeout below because the first released the lease.
	const takeover = 5 * time.Second

	var leaders, maxLeaders atomic.Int32
	start := func(name string) *candidate {
		leases, err := leases.New(c.Config)
		if err != nil {
			t.Fatal(err)
		}
		cd := &candidate{name: name, done: make(chan error, 1)}
		runCtx, cancel := context.WithCancel(ctx)
		cd.cancel = cancel
		t.Cleanup(cancel)
		go func() {
			cd.done <- leaderelection.Run(runCtx, o, leases, func(ctx context.Context) error {
				n := leaders.Add(1)
				for m := maxLeaders.Load(); n > m && !maxLeaders.CompareAndSwap(m, n); m = maxLeaders.Load() {
				}
				cd.leading.Store(true)
				<-ctx.Done()
				cd.leading.Store(false)
				leaders.Add(-1)
				return nil
			})
		}()
		return cd
	}
	getLease := func() (*coordinationv1.Lease, error) {
		return c.Client.CoordinationV1().Leases(ns).Get(ctx, leaseName, metav1.GetOptions{})
	}
	stop := func(cd *candidate) {
		t.Helper()
		cd.cancel()
		select {
		case err := <-cd.done:
			if err != nil {
				t.Fatalf("%s: Run() = %v", cd.name, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: Run did not return after cancel", cd.name)
		}
	}

	a, b := start("a"), start("b")
	var first, second *candidate
	framework.WaitFor(t, 30*time.Second, func() (bool, error) {
		switch {
		case a.leading.Load():
			first, second = a, b
		case b.leading.Load():
			first, second = b, a
		}
		return first != nil, nil
	})

	// The leader renews; the other candidate keeps waiting.
	renewals := map[string]bool{}
	var firstHolder string
	framework.WaitFor(t, 30*time.Second, func() (bool, error) {
		if second.leading.Load() {
			return false, errors.New("both candidates lead")
		}
		lease, err := getLease()
		if err != nil {
			return false, err
		}
		firstHolder = ptr.Deref(lease.Spec.HolderIdentity, "")
		if lease.Spec.RenewTime != nil {
			renewals[lease.Spec.RenewTime.String()] = true
		}
		return len(renewals) >= 3, nil
	})
	if second.leading.Load() {
		t.Fatalf("%s leads while %s holds the lease", second.name, first.name)
	}
	lease, err := getLease()
	if err != nil {
		t.Fatal(err)
	}
	if firstHolder == "" || ptr.Deref(lease.Spec.LeaseTransitions, -1) != 0 {
		t.Fatalf("lease while %s leads: %+v", first.name, lease.Spec)
	}

	stop(first)
	framework.WaitFor(t, takeover, func() (bool, error) { return second.leading.Load(), nil })
	lease, err = getLease()
	if err != nil {
		t.Fatal(err)
	}
	secondHolder := ptr.Deref(lease.Spec.HolderIdentity, "")
	if secondHolder == "" || secondHolder == firstHolder {
		t.Errorf("holder after the takeover = %q, first holder %q", secondHolder, firstHolder)
	}
	if tr := ptr.Deref(lease.Spec.LeaseTransitions, 0); tr != 1 {
		t.Errorf("leaseTransitions after the takeover = %d, want 1", tr)
	}

	stop(second)
	lease, err = getLease()
	if err != nil {
		t.Fatal(err)
	}
	if h := ptr.Deref(lease.Spec.HolderIdentity, "x"); h != "" || ptr.Deref(lease.Spec.LeaseTransitions, 0) != 1 {
		t.Errorf("lease after both stopped: holder %q, spec %+v; want released with 1 transition", h, lease.Spec)
	}
	if m := maxLeaders.Load(); m != 1 {
		t.Errorf("at most %d candidates led at once, want 1", m)
	}
}
