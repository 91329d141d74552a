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

package component

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/openvpa/openvpa/pkg/healthserver"
	"github.com/openvpa/openvpa/pkg/leaderelection"
)

// events records what the parts of a runtime did, in order.
type events struct {
	mu   sync.Mutex
	list []string
}

func (e *events) add(s string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, s)
}

func (e *events) get() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.list)
}

// fakeInformers sync when synced is closed and record when they stop.
type fakeInformers struct {
	events  *events
	synced  chan struct{}
	stopped chan struct{}
}

func newFakeInformers(ev *events) *fakeInformers {
	return &fakeInformers{events: ev, synced: make(chan struct{}), stopped: make(chan struct{})}
}

func (f *fakeInformers) Start(ctx context.Context) {
	f.events.add("informers started")
	go func() {
		<-ctx.Done()
		f.events.add("informers stopped")
		close(f.stopped)
	}()
}

func (f *fakeInformers) WaitForSync(ctx context.Context) error {
	select {
	case <-f.synced:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// recordingServer serves until ctx ends, or fails with err when fail is
// closed.
func recordingServer(ev *events, fail <-chan struct{}, err error) Server {
	return Server{Name: "test server", Serve: func(ctx context.Context) error {
		select {
		case <-ctx.Done():
			ev.add("server drained")
			return nil
		case <-fail:
			return err
		}
	}}
}

func testHealth() healthserver.Options {
	return healthserver.Options{Address: "127.0.0.1:0", Registry: healthserver.NewRegistry()}
}

// lameduckWait records when it starts and returns, and returns when
// released or when its ctx ends.
func lameduckWait(ev *events, release <-chan struct{}) func(context.Context) error {
	return func(ctx context.Context) error {
		ev.add("lameduck waiting")
		select {
		case <-release:
			ev.add("lameduck released")
		case <-ctx.Done():
			ev.add("lameduck cancelled")
		}
		return nil
	}
}

func TestRunStopsInOrder(t *testing.T) {
	ev := &events{}
	inf := newFakeInformers(ev)
	working := make(chan struct{})
	release := make(chan struct{})
	health := testHealth()
	health.Address = freeAddress(t)
	r := &Runtime{
		Health:    health,
		Servers:   []Server{recordingServer(ev, nil, nil)},
		Informers: inf,
		Lameduck:  &Lameduck{Wait: lameduckWait(ev, release), Timeout: 20 * time.Second},
		Clock:     testingclock.NewFakeClock(time.Now()),
		Work: func(ctx context.Context) error {
			ev.add("work started")
			close(working)
			<-ctx.Done()
			if !Stopping(ctx) {
				t.Error("Stopping(ctx) = false after the root context ended")
			}
			ev.add("work stopped")
			return ctx.Err()
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	time.Sleep(50 * time.Millisecond)
	if err := r.cachesSynced(); err == nil {
		t.Error("ready before the caches synced")
	}
	if got := ev.get(); slices.Contains(got, "work started") {
		t.Errorf("the work started before the caches synced: %v", got)
	}
	close(inf.synced)
	<-working
	waitFor(t, func() bool { return probe("http://"+health.Address+"/readyz") == nil })
	cancel()
	// Not ready at once, while the servers still serve.
	waitFor(t, func() bool { return slices.Contains(ev.get(), "lameduck waiting") })
	err := probe("http://" + health.Address + "/readyz")
	if err == nil || !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), "shutting down") {
		t.Errorf("/readyz while shutting down: %v, want 503 shutting down", err)
	}
	if got := ev.get(); slices.Contains(got, "server drained") {
		t.Errorf("the servers stopped before the lameduck let them go: %v", got)
	}
	close(release)
	if err := <-done; err != nil {
		t.Errorf("Run() = %v after the root context ended, want nil", err)
	}
	<-inf.stopped
	want := []string{"informers started", "work started", "work stopped", "lameduck waiting", "lameduck released", "server drained", "informers stopped"}
	if got := ev.get(); !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
}

// TestLameduck: after the root context ends the runtime is not ready at
// once, and its servers serve until the lameduck's wait returns or its
// timeout passes; a stop from within skips it.
func TestLameduck(t *testing.T) {
	const timeout = 20 * time.Second
	serverErr := errors.New("port in use")
	tests := map[string]struct {
		lameduck bool
		timeout  time.Duration
		// stop ends the lameduck, once it waits, through release, the
		// fake clock or the server's failure.
		stop       func(release, fail chan struct{}, clk *testingclock.FakeClock)
		workFails  bool
		wantEvents []string
		wantErr    string
	}{
		"the wait returns": {
			lameduck: true, timeout: timeout,
			stop:       func(release, _ chan struct{}, _ *testingclock.FakeClock) { close(release) },
			wantEvents: []string{"work stopped", "lameduck waiting", "lameduck released", "server drained"},
		},
		"the timeout passes": {
			lameduck: true, timeout: timeout,
			stop: func(_, _ chan struct{}, clk *testingclock.FakeClock) {
				clk.Step(timeout - time.Millisecond)
				clk.Step(time.Millisecond)
			},
			wantEvents: []string{"work stopped", "lameduck waiting", "lameduck cancelled", "server drained"},
		},
		"a server stops on its own": {
			lameduck: true, timeout: timeout,
			stop:       func(_, fail chan struct{}, _ *testingclock.FakeClock) { close(fail) },
			wantEvents: []string{"work stopped", "lameduck waiting", "lameduck cancelled"},
			wantErr:    "test server: port in use",
		},
		"no lameduck": {
			wantEvents: []string{"work stopped", "server drained"},
		},
		"a zero timeout skips it": {
			lameduck: true, timeout: 0,
			wantEvents: []string{"work stopped", "server drained"},
		},
		"the work stops on its own": {
			lameduck: true, timeout: timeout, workFails: true,
			wantEvents: []string{"work stopped", "server drained"},
			wantErr:    "boom",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ev := &events{}
			release, fail := make(chan struct{}), make(chan struct{})
			clk := testingclock.NewFakeClock(time.Now())
			r := &Runtime{
				Health:  testHealth(),
				Servers: []Server{recordingServer(ev, fail, serverErr)},
				Clock:   clk,
			}
			if tc.lameduck {
				r.Lameduck = &Lameduck{Wait: lameduckWait(ev, release), Timeout: tc.timeout}
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			working := make(chan struct{})
			r.Work = func(ctx context.Context) error {
				close(working)
				if tc.workFails {
					ev.add("work stopped")
					return errors.New("boom")
				}
				<-ctx.Done()
				ev.add("work stopped")
				return nil
			}
			done := make(chan error, 1)
			go func() { done <- r.Run(ctx) }()
			<-working
			if !tc.workFails {
				if err := r.running(); err != nil {
					t.Errorf("not running before the stop: %v", err)
				}
				cancel()
			}
			if tc.stop != nil {
				waitFor(t, func() bool { return slices.Contains(ev.get(), "lameduck waiting") && clk.HasWaiters() })
				if err := r.running(); err == nil {
					t.Error("ready while the lameduck waits")
				}
				if got := ev.get(); slices.Contains(got, "server drained") {
					t.Errorf("the servers stopped while the lameduck waits: %v", got)
				}
				tc.stop(release, fail, clk)
			}
			err := <-done
			if got := errString(err); got != tc.wantErr {
				t.Errorf("Run() = %q, want %q", got, tc.wantErr)
			}
			if err := r.running(); err == nil {
				t.Error("ready after the stop")
			}
			if got := ev.get(); !slices.Equal(got, tc.wantEvents) {
				t.Errorf("events %v, want %v", got, tc.wantEvents)
			}
		})
	}
}

func TestRunReturnsTheFirstError(t *testing.T) {
	serverErr := errors.New("port in use")
	tests := map[string]struct {
		serverFails bool
		workErr     error
		wantErr     string
		wantSaved   bool
	}{
		"a server fails: the work stops, as on a signal": {serverFails: true, wantErr: "test server: port in use", wantSaved: true},
		"the lease is lost":              {workErr: leaderelection.ErrLeaseLost, wantErr: leaderelection.ErrLeaseLost.Error()},
		"the work ends without an error": {},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ev := &events{}
			fail := make(chan struct{})
			saved := false
			r := &Runtime{
				Health:  testHealth(),
				Servers: []Server{recordingServer(ev, fail, serverErr)},
				Work: func(ctx context.Context) error {
					if tc.serverFails {
						close(fail)
						<-ctx.Done()
						saved = Stopping(ctx)
						return ctx.Err()
					}
					return tc.workErr
				},
			}
			err := r.Run(context.Background())
			if got := errString(err); got != tc.wantErr {
				t.Errorf("Run() = %q, want %q", got, tc.wantErr)
			}
			if saved != tc.wantSaved {
				t.Errorf("Stopping(ctx) = %v, want %v", saved, tc.wantSaved)
			}
			if !tc.serverFails && !slices.Equal(ev.get(), []string{"server drained"}) {
				t.Errorf("events %v: the server did not drain", ev.get())
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestRunHealthServerFailure(t *testing.T) {
	r := &Runtime{Health: healthserver.Options{Address: "127.0.0.1:-1", Registry: healthserver.NewRegistry()}}
	err := r.Run(context.Background())
	if err == nil || !strings.HasPrefix(err.Error(), "health server: ") {
		t.Errorf("Run() = %v, want the health server's error", err)
	}
}

// fakeLeases is an in-memory Lease store with resourceVersion checks.
type fakeLeases struct {
	mu    sync.Mutex
	lease *coordinationv1.Lease
	rv    int
}

var leaseResource = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}

func (f *fakeLeases) Get(_ context.Context, _, name string) (*coordinationv1.Lease, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lease == nil {
		return nil, apierrors.NewNotFound(leaseResource, name)
	}
	return f.lease.DeepCopy(), nil
}

func (f *fakeLeases) Create(_ context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lease != nil {
		return nil, apierrors.NewAlreadyExists(leaseResource, l.Name)
	}
	return f.store(l), nil
}

func (f *fakeLeases) Update(_ context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lease == nil || f.lease.ResourceVersion != l.ResourceVersion {
		return nil, apierrors.NewConflict(leaseResource, l.Name, errors.New("stale"))
	}
	return f.store(l), nil
}

func (f *fakeLeases) store(l *coordinationv1.Lease) *coordinationv1.Lease {
	f.rv++
	f.lease = l.DeepCopy()
	f.lease.ResourceVersion = strconv.Itoa(f.rv)
	return f.lease.DeepCopy()
}

func (f *fakeLeases) holder() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lease == nil {
		return ""
	}
	return ptr.Deref(f.lease.Spec.HolderIdentity, "")
}

func testElection(l *fakeLeases, onLeading func(bool)) *Election {
	o := leaderelection.NewOptions("test-lease")
	o.LeaderElect = true
	o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 3*time.Second, 2*time.Second, 50*time.Millisecond
	return &Election{Options: o, Leases: l, OnLeading: onLeading}
}

// TestStandbyIsReadyAndLive: a replica that does not lead runs no work, and
// is ready and live once its caches synced.
func TestStandbyIsReadyAndLive(t *testing.T) {
	now := metav1.NewMicroTime(time.Now())
	leases := &fakeLeases{}
	leases.store(&coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "test-lease", Namespace: "kube-system"},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To("other"), LeaseDurationSeconds: ptr.To[int32](3600), AcquireTime: &now, RenewTime: &now,
		},
	})
	inf := newFakeInformers(&events{})
	close(inf.synced)
	worked := false
	health := testHealth()
	health.Address = freeAddress(t)
	r := &Runtime{
		Health:    health,
		Informers: inf,
		Election:  testElection(leases, nil),
		Work:      func(context.Context) error { worked = true; return nil },
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	waitFor(t, func() bool { return probe("http://"+health.Address+"/readyz") == nil })
	for _, path := range []string{"/readyz", "/healthz"} {
		if err := probe("http://" + health.Address + path); err != nil {
			t.Errorf("standby: %s: %v", path, err)
		}
	}
	time.Sleep(200 * time.Millisecond) // a few retry periods
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run() = %v", err)
	}
	if worked {
		t.Error("a standby ran the work")
	}
}

func freeAddress(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func probe(url string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for range 200 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("condition not met within 2s")
}

// TestLeaderWorksAndReleases: the leader runs the work, reports it in the
// metric and OnLeading, and releases the Lease when it stops.
func TestLeaderWorksAndReleases(t *testing.T) {
	leases := &fakeLeases{}
	var leading []bool
	var mu sync.Mutex
	r := &Runtime{
		Health: testHealth(),
		Election: testElection(leases, func(l bool) {
			mu.Lock()
			defer mu.Unlock()
			leading = append(leading, l)
		}),
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.Work = func(ctx context.Context) error {
		if leases.holder() == "" {
			t.Error("working without holding the Lease")
		}
		if got := leaderMetric(t, r.Health.Registry); got != 1 {
			t.Errorf("leader_election_master_status = %v while leading, want 1", got)
		}
		cancel()
		<-ctx.Done()
		return nil
	}
	if err := r.Run(ctx); err != nil {
		t.Errorf("Run() = %v", err)
	}
	if h := leases.holder(); h != "" {
		t.Errorf("Lease held by %q after the stop, want released", h)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(leading, []bool{true, false}) {
		t.Errorf("OnLeading calls %v, want [true false]", leading)
	}
}

// leaderMetric reads leader_election_master_status from reg.
func leaderMetric(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "leader_election_master_status" && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatal("no leader_election_master_status metric")
	return 0
}
