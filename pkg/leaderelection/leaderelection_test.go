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

package leaderelection

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/openvpa/openvpa/pkg/testpoll"
)

const (
	testNamespace = "kube-system"
	testLease     = "vpa-test-lease"
)

var leaseResource = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}

// write is one successful Create or Update seen by the fake API server.
type write struct {
	by          string // the candidate whose client wrote
	holder      string
	transitions int32
	at          time.Time
}

// fakeServer keeps Leases in memory with resourceVersion checks like the API
// server: an Update must carry the version it read.
type fakeServer struct {
	mu      sync.Mutex
	leases  map[string]*coordinationv1.Lease
	version int
	writes  []write
	gets    map[string][]time.Time // by candidate
}

func newFakeServer() *fakeServer {
	return &fakeServer{leases: map[string]*coordinationv1.Lease{}, gets: map[string][]time.Time{}}
}

// put stores a lease as if another client wrote it.
func (s *fakeServer) put(lease *coordinationv1.Lease) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.version++
	l := lease.DeepCopy()
	l.ResourceVersion = strconv.Itoa(s.version)
	s.leases[l.Namespace+"/"+l.Name] = l
}

func (s *fakeServer) lease(t *testing.T) *coordinationv1.Lease {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.leases[testNamespace+"/"+testLease]
	if !ok {
		t.Fatal("the lease does not exist")
	}
	return l.DeepCopy()
}

func (s *fakeServer) holder() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.leases[testNamespace+"/"+testLease]; ok {
		return ptr.Deref(l.Spec.HolderIdentity, "")
	}
	return ""
}

func (s *fakeServer) writeLog() []write {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]write(nil), s.writes...)
}

func (s *fakeServer) writesBy(who string) int {
	n := 0
	for _, w := range s.writeLog() {
		if w.by == who {
			n++
		}
	}
	return n
}

func (s *fakeServer) getsBy(who string) []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.gets[who]...)
}

// client returns the LeaseClient of one candidate; its calls can be made to
// fail.
func (s *fakeServer) client(who string) *fakeClient {
	return &fakeClient{server: s, who: who}
}

type fakeClient struct {
	server *fakeServer
	who    string
	down   atomic.Bool  // every call fails
	failN  atomic.Int32 // the next failN calls fail
}

var errUnreachable = errors.New("connection refused")

func (c *fakeClient) check() error {
	if c.down.Load() {
		return errUnreachable
	}
	for {
		n := c.failN.Load()
		if n <= 0 {
			return nil
		}
		if c.failN.CompareAndSwap(n, n-1) {
			return errUnreachable
		}
	}
}

func (c *fakeClient) Get(_ context.Context, namespace, name string) (*coordinationv1.Lease, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	s := c.server
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gets[c.who] = append(s.gets[c.who], time.Now())
	l, ok := s.leases[namespace+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(leaseResource, name)
	}
	return l.DeepCopy(), nil
}

func (c *fakeClient) Create(_ context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	s := c.server
	s.mu.Lock()
	defer s.mu.Unlock()
	key := lease.Namespace + "/" + lease.Name
	if _, ok := s.leases[key]; ok {
		return nil, apierrors.NewAlreadyExists(leaseResource, lease.Name)
	}
	return s.storeLocked(c.who, key, lease), nil
}

func (c *fakeClient) Update(_ context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	s := c.server
	s.mu.Lock()
	defer s.mu.Unlock()
	key := lease.Namespace + "/" + lease.Name
	old, ok := s.leases[key]
	if !ok {
		return nil, apierrors.NewNotFound(leaseResource, lease.Name)
	}
	if lease.ResourceVersion != old.ResourceVersion {
		return nil, apierrors.NewConflict(leaseResource, lease.Name, errors.New("the object has been modified"))
	}
	return s.storeLocked(c.who, key, lease), nil
}

func (s *fakeServer) storeLocked(who, key string, lease *coordinationv1.Lease) *coordinationv1.Lease {
	s.version++
	l := lease.DeepCopy()
	l.ResourceVersion = strconv.Itoa(s.version)
	s.leases[key] = l
	s.writes = append(s.writes, write{
		by:          who,
		holder:      ptr.Deref(l.Spec.HolderIdentity, ""),
		transitions: ptr.Deref(l.Spec.LeaseTransitions, 0),
		at:          time.Now(),
	})
	return l.DeepCopy()
}

func testOptions(leaseDuration, renewDeadline time.Duration) Options {
	o := NewOptions(testLease)
	o.LeaderElect = true
	o.LeaseDuration = leaseDuration
	o.RenewDeadline = renewDeadline
	o.RetryPeriod = 10 * time.Millisecond
	return o
}

// candidate runs an elector in a goroutine; its work function reports when
// it starts and blocks until its context ends, then runs finish.
type candidate struct {
	id      string
	client  *fakeClient
	cancel  context.CancelFunc
	leading chan struct{}
	stopped chan struct{} // closed when the work function's context ended
	done    chan error
	ledAt   atomic.Pointer[time.Time]
}

func startCandidate(t *testing.T, s *fakeServer, o Options, id string, finish func(ctx context.Context) error) *candidate {
	t.Helper()
	c := &candidate{
		id:      id,
		client:  s.client(id),
		leading: make(chan struct{}),
		stopped: make(chan struct{}),
		done:    make(chan error, 1),
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	t.Cleanup(cancel)
	go func() {
		c.done <- newElector(o, c.client, clock.RealClock{}, id).run(ctx, func(runCtx context.Context) error {
			now := time.Now()
			c.ledAt.Store(&now)
			close(c.leading)
			<-runCtx.Done()
			close(c.stopped)
			if finish != nil {
				return finish(runCtx)
			}
			return nil
		})
	}()
	return c
}

func (c *candidate) isLeading() bool {
	select {
	case <-c.leading:
		return true
	default:
		return false
	}
}

func (c *candidate) wait(t *testing.T, timeout time.Duration) error {
	t.Helper()
	select {
	case err := <-c.done:
		return err
	case <-time.After(timeout):
		t.Fatalf("candidate %s did not return within %v", c.id, timeout)
		return nil
	}
}

func TestRunWithoutElectionCallsRunDirectly(t *testing.T) {
	want := errors.New("done")
	err := Run(context.Background(), NewOptions("x"), nil, func(context.Context) error { return want })
	if !errors.Is(err, want) {
		t.Fatalf("Run() = %v, want %v", err, want)
	}
}

func TestRunAcquiresAndReleasesTheLease(t *testing.T) {
	s := newFakeServer()
	client := s.client("a")
	o := testOptions(time.Minute, 30*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err := Run(ctx, o, client, func(ctx context.Context) error {
		lease, err := client.Get(ctx, testNamespace, testLease)
		if err != nil {
			return err
		}
		if ptr.Deref(lease.Spec.HolderIdentity, "") == "" {
			return errors.New("lease has no holder while running")
		}
		if got := ptr.Deref(lease.Spec.LeaseDurationSeconds, 0); got != 60 {
			return fmt.Errorf("leaseDurationSeconds = %d while running, want 60", got)
		}
		if lease.Spec.AcquireTime == nil || lease.Spec.RenewTime == nil {
			return errors.New("lease has no acquire or renew time while running")
		}
		cancel()
		return nil
	})
	if err != nil {
		t.Fatalf("Run() = %v", err)
	}
	lease := s.lease(t)
	if h := ptr.Deref(lease.Spec.HolderIdentity, "x"); h != "" {
		t.Errorf("lease still held by %q after cancel", h)
	}
	if d := ptr.Deref(lease.Spec.LeaseDurationSeconds, 0); d != 1 {
		t.Errorf("released leaseDurationSeconds = %d, want 1", d)
	}
	if tr := ptr.Deref(lease.Spec.LeaseTransitions, -1); tr != 0 {
		t.Errorf("leaseTransitions = %d after release, want 0 (unchanged)", tr)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		change  func(*Options)
		wantErr bool
	}{
		{name: "defaults", change: func(*Options) {}},
		{name: "off skips the checks", change: func(o *Options) { o.LeaderElect = false; o.ResourceLock = "endpoints" }},
		{name: "renew deadline equal to the lease duration", change: func(o *Options) { o.RenewDeadline = o.LeaseDuration }, wantErr: true},
		{name: "other resource lock", change: func(o *Options) { o.ResourceLock = "configmapsleases" }, wantErr: true},
		{name: "no retry period", change: func(o *Options) { o.RetryPeriod = 0 }, wantErr: true},
		{name: "no lease name", change: func(o *Options) { o.ResourceName = "" }, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := NewOptions("x")
			o.LeaderElect = true
			tt.change(&o)
			if err := o.Validate(); (err != nil) != tt.wantErr {
				t.Fatalf("Validate() = %v, want error: %v", err, tt.wantErr)
			}
		})
	}
}

// A leader keeps renewing while its work function finishes after the context
// was cancelled, so a second replica cannot start meanwhile, and releases the
// lease only once the work function has returned.
func TestRunReturnsOnlyAfterTheWorkFunction(t *testing.T) {
	s := newFakeServer()
	o := testOptions(200*time.Millisecond, 150*time.Millisecond)
	var returnedAt time.Time
	var holderAtReturn string
	a := startCandidate(t, s, o, "a", func(context.Context) error {
		// Work that outlives the cancellation, like writing checkpoints on
		// shutdown: it lasts over three lease durations.
		start := time.Now()
		n := s.writesBy("a")
		for time.Since(start) < 3*o.LeaseDuration || s.writesBy("a") < n+3 {
			time.Sleep(time.Millisecond)
		}
		holderAtReturn = s.holder()
		returnedAt = time.Now()
		return nil
	})
	testpoll.Until(t, 5*time.Second, "a to lead", a.isLeading)
	b := startCandidate(t, s, o, "b", nil)
	testpoll.Until(t, 5*time.Second, "b to watch the lease", func() bool { return len(s.getsBy("b")) >= 2 })
	a.cancel()
	if err := a.wait(t, 10*time.Second); err != nil {
		t.Fatalf("Run() = %v", err)
	}
	if holderAtReturn != "a" {
		t.Errorf("holder when the work function returned = %q, want a (renewed while finishing)", holderAtReturn)
	}
	if at := b.ledAt.Load(); at != nil && at.Before(returnedAt) {
		t.Errorf("b led at %v, before a's work function returned at %v", at, returnedAt)
	}
	var release *write
	for _, w := range s.writeLog() {
		if w.by == "a" && w.holder == "" {
			release = &w
		}
	}
	if release == nil {
		t.Fatal("a never released the lease")
	}
	if release.at.Before(returnedAt) {
		t.Errorf("a released the lease at %v, before its work function returned at %v", release.at, returnedAt)
	}
	testpoll.Until(t, 5*time.Second, "b to lead after a released", b.isLeading)
}

func TestSecondCandidateDoesNotLeadWhileTheFirstRenews(t *testing.T) {
	s := newFakeServer()
	o := testOptions(600*time.Millisecond, 400*time.Millisecond)
	a := startCandidate(t, s, o, "a", nil)
	testpoll.Until(t, 5*time.Second, "a to lead", a.isLeading)
	b := startCandidate(t, s, o, "b", nil)
	// b must watch the lease for several lease durations.
	testpoll.Until(t, 10*time.Second, "b to watch the lease for three lease durations", func() bool {
		gets := s.getsBy("b")
		return len(gets) > 1 && gets[len(gets)-1].Sub(gets[0]) > 3*o.LeaseDuration
	})
	if b.isLeading() {
		t.Fatal("b leads while a holds and renews the lease")
	}
	if h := s.holder(); h != "a" {
		t.Fatalf("holder = %q, want a", h)
	}
	if n := s.writesBy("a"); n < 10 {
		t.Errorf("a wrote the lease %d times, want it renewed every retry period", n)
	}
	if n := s.writesBy("b"); n != 0 {
		t.Errorf("b wrote the lease %d times while a held it", n)
	}
}

func TestSecondCandidateTakesOverAfterRelease(t *testing.T) {
	s := newFakeServer()
	// A lease duration far longer than the test: b may only lead because a
	// released the lease.
	o := testOptions(time.Minute, 30*time.Second)
	a := startCandidate(t, s, o, "a", nil)
	testpoll.Until(t, 5*time.Second, "a to lead", a.isLeading)
	b := startCandidate(t, s, o, "b", nil)
	testpoll.Until(t, 5*time.Second, "b to watch the lease", func() bool { return len(s.getsBy("b")) >= 2 })
	if b.isLeading() {
		t.Fatal("b leads while a holds the lease")
	}
	a.cancel()
	if err := a.wait(t, 5*time.Second); err != nil {
		t.Fatalf("a: Run() = %v", err)
	}
	testpoll.Until(t, 5*time.Second, "b to lead after a released", b.isLeading)
	lease := s.lease(t)
	if h := ptr.Deref(lease.Spec.HolderIdentity, ""); h != "b" {
		t.Errorf("holder = %q, want b", h)
	}
	if tr := ptr.Deref(lease.Spec.LeaseTransitions, 0); tr != 1 {
		t.Errorf("leaseTransitions = %d, want 1", tr)
	}
	var releasedAt time.Time
	for _, w := range s.writeLog() {
		if w.by == "a" && w.holder == "" {
			releasedAt = w.at
		}
	}
	if releasedAt.IsZero() {
		t.Fatal("a did not release the lease")
	}
	if lease.Spec.AcquireTime == nil || lease.Spec.AcquireTime.Time.Before(releasedAt.Truncate(time.Microsecond)) {
		t.Errorf("acquireTime = %v, want b's takeover time, after a's release at %v", lease.Spec.AcquireTime, releasedAt)
	}
}

func TestSecondCandidateTakesOverAfterExpiry(t *testing.T) {
	s := newFakeServer()
	o := testOptions(300*time.Millisecond, 100*time.Millisecond)
	a := startCandidate(t, s, o, "a", func(context.Context) error {
		// Keep a's work running, cut off from the API server, until b
		// leads; then let a reach the server again on its way out.
		deadline := time.Now().Add(10 * time.Second)
		for s.holder() != "b" && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		return nil
	})
	testpoll.Until(t, 5*time.Second, "a to lead", a.isLeading)
	b := startCandidate(t, s, o, "b", nil)
	testpoll.Until(t, 5*time.Second, "b to watch the lease", func() bool { return len(s.getsBy("b")) >= 2 })
	a.client.down.Store(true)
	testpoll.Until(t, 5*time.Second, "a's work to be cancelled", func() bool {
		select {
		case <-a.stopped:
			return true
		default:
			return false
		}
	})
	testpoll.Until(t, 5*time.Second, "b to lead after the lease expired", b.isLeading)
	a.client.down.Store(false)
	if err := a.wait(t, 5*time.Second); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("a: Run() = %v, want ErrLeaseLost", err)
	}

	var lastByA, firstByB *write
	for _, w := range s.writeLog() {
		switch {
		case w.by == "a":
			lastByA = &w
		case w.by == "b" && firstByB == nil:
			firstByB = &w
		}
	}
	if lastByA == nil || firstByB == nil {
		t.Fatalf("writes: %+v", s.writeLog())
	}
	if lastByA.holder != "a" {
		t.Errorf("a's last write set holder %q; a must not release a lease it lost", lastByA.holder)
	}
	if gap := firstByB.at.Sub(lastByA.at); gap < o.LeaseDuration {
		t.Errorf("b took over %v after a's last renewal, want at least the lease duration %v", gap, o.LeaseDuration)
	}
	lease := s.lease(t)
	if h := ptr.Deref(lease.Spec.HolderIdentity, ""); h != "b" {
		t.Errorf("holder = %q, want b", h)
	}
	if tr := ptr.Deref(lease.Spec.LeaseTransitions, 0); tr != 1 {
		t.Errorf("leaseTransitions = %d, want 1", tr)
	}
}

func TestLeaderWhoseRenewalsFail(t *testing.T) {
	tests := []struct {
		name     string
		o        Options
		disrupt  func(s *fakeServer, c *fakeClient)
		wantLost bool
		// wantHolder is the lease holder after Run returned.
		wantHolder string
	}{
		{
			name:       "failures shorter than the renew deadline keep the lease",
			o:          testOptions(3*time.Second, 2*time.Second),
			disrupt:    func(_ *fakeServer, c *fakeClient) { c.failN.Store(5) },
			wantHolder: "",
		},
		{
			name:       "failures for the renew deadline lose it",
			o:          testOptions(300*time.Millisecond, 100*time.Millisecond),
			disrupt:    func(_ *fakeServer, c *fakeClient) { c.down.Store(true) },
			wantLost:   true,
			wantHolder: "a",
		},
		{
			name: "another holder in the lease loses it at once",
			// A renew deadline longer than the test: only seeing the
			// other holder can end the leadership.
			o: testOptions(time.Minute, 30*time.Second),
			disrupt: func(s *fakeServer, _ *fakeClient) {
				s.put(&coordinationv1.Lease{
					ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: testLease},
					Spec: coordinationv1.LeaseSpec{
						HolderIdentity:       ptr.To("intruder"),
						LeaseDurationSeconds: ptr.To[int32](60),
					},
				})
			},
			wantLost:   true,
			wantHolder: "intruder",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newFakeServer()
			c := s.client("a")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var brokeAt, cancelledAt time.Time
			err := newElector(tt.o, c, clock.RealClock{}, "a").run(ctx, func(runCtx context.Context) error {
				brokeAt = time.Now()
				tt.disrupt(s, c)
				if tt.wantLost {
					select {
					case <-runCtx.Done():
						cancelledAt = time.Now()
					case <-time.After(10 * time.Second):
						return errors.New("the work function's context was not cancelled")
					}
					c.down.Store(false)
					return nil
				}
				// The failures are over once a renewal landed after them.
				n := s.writesBy("a")
				deadline := time.Now().Add(10 * time.Second)
				for c.failN.Load() > 0 || s.writesBy("a") < n+2 {
					if time.Now().After(deadline) {
						return errors.New("no renewal after the failures")
					}
					time.Sleep(time.Millisecond)
				}
				if runCtx.Err() != nil {
					return errors.New("the work function's context was cancelled by short failures")
				}
				cancel()
				return nil
			})
			if tt.wantLost {
				if !errors.Is(err, ErrLeaseLost) {
					t.Fatalf("run() = %v, want ErrLeaseLost", err)
				}
			} else if err != nil {
				t.Fatalf("run() = %v", err)
			}
			if tt.wantLost && tt.o.RenewDeadline < time.Second {
				if d := cancelledAt.Sub(brokeAt); d < tt.o.RenewDeadline {
					t.Errorf("lost the lease %v after renewals began to fail, before the renew deadline %v", d, tt.o.RenewDeadline)
				}
			}
			if h := s.holder(); h != tt.wantHolder {
				t.Errorf("holder after Run = %q, want %q", h, tt.wantHolder)
			}
		})
	}
}

func TestOddLeasesAreTaken(t *testing.T) {
	long := metav1.NewMicroTime(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC))
	future := metav1.NewMicroTime(time.Now().Add(100 * 365 * 24 * time.Hour))
	tests := []struct {
		name string
		spec coordinationv1.LeaseSpec
		// wantWait: the lease names another holder, so the candidate must
		// watch it unchanged for the lease duration before taking it.
		wantWait        bool
		wantTransitions int32
	}{
		{name: "empty spec", wantTransitions: 1},
		{name: "empty holder", spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(""), LeaseTransitions: ptr.To[int32](4)}, wantTransitions: 5},
		{name: "holder without times or duration", spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("other")}, wantWait: true, wantTransitions: 1},
		{
			name:     "holder renewed long ago by its clock",
			spec:     coordinationv1.LeaseSpec{HolderIdentity: ptr.To("other"), LeaseDurationSeconds: ptr.To[int32](1), RenewTime: &long, AcquireTime: &long},
			wantWait: true, wantTransitions: 1,
		},
		{
			name:     "holder renewed in the future by its clock",
			spec:     coordinationv1.LeaseSpec{HolderIdentity: ptr.To("other"), LeaseDurationSeconds: ptr.To[int32](0), RenewTime: &future, LeaseTransitions: ptr.To[int32](-3)},
			wantWait: true, wantTransitions: -2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newFakeServer()
			s.put(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: testLease}, Spec: tt.spec})
			o := testOptions(200*time.Millisecond, 100*time.Millisecond)
			a := startCandidate(t, s, o, "a", nil)
			testpoll.Until(t, 5*time.Second, "a to lead", a.isLeading)
			lease := s.lease(t)
			if h := ptr.Deref(lease.Spec.HolderIdentity, ""); h != "a" {
				t.Errorf("holder = %q, want a", h)
			}
			if tr := ptr.Deref(lease.Spec.LeaseTransitions, 0); tr != tt.wantTransitions {
				t.Errorf("leaseTransitions = %d, want %d", tr, tt.wantTransitions)
			}
			if lease.Spec.AcquireTime == nil || lease.Spec.RenewTime == nil || ptr.Deref(lease.Spec.LeaseDurationSeconds, 0) != 1 {
				t.Errorf("spec = %+v, want acquire and renew times and a 1s duration", lease.Spec)
			}
			if tt.wantWait {
				gets := s.getsBy("a")
				if waited := a.ledAt.Load().Sub(gets[0]); waited < o.LeaseDuration {
					t.Errorf("took the lease %v after first reading it, want at least the lease duration %v", waited, o.LeaseDuration)
				}
			}
			a.cancel()
			if err := a.wait(t, 5*time.Second); err != nil {
				t.Fatalf("Run() = %v", err)
			}
		})
	}
}

// nothingClient answers every call with neither a lease nor an error.
type nothingClient struct{ calls atomic.Int32 }

func (c *nothingClient) Get(context.Context, string, string) (*coordinationv1.Lease, error) {
	c.calls.Add(1)
	return nil, nil
}

func (c *nothingClient) Create(context.Context, *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	c.calls.Add(1)
	return nil, nil
}

func (c *nothingClient) Update(context.Context, *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	c.calls.Add(1)
	return nil, nil
}

func TestClientReturningNothingNeverLeads(t *testing.T) {
	c := &nothingClient{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	led := atomic.Bool{}
	go func() {
		done <- Run(ctx, testOptions(time.Second, 500*time.Millisecond), c, func(context.Context) error {
			led.Store(true)
			return nil
		})
	}()
	testpoll.Until(t, 5*time.Second, "several attempts", func() bool { return c.calls.Load() >= 5 })
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run() = %v, want nil after cancel", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	if led.Load() {
		t.Error("led with a client that returns no lease")
	}
}

func TestRunNeedsALeaseClient(t *testing.T) {
	err := Run(context.Background(), testOptions(time.Second, 500*time.Millisecond), nil, func(context.Context) error { return nil })
	if err == nil {
		t.Fatal("Run() with leader election on and no lease client = nil, want an error")
	}
}

// The lease's times come from the injected clock.
func TestLeaseTimesComeFromTheClock(t *testing.T) {
	now := time.Date(2030, 5, 6, 7, 8, 9, 0, time.UTC)
	clk := testingclock.NewFakeClock(now)
	s := newFakeServer()
	c := s.client("a")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := NewOptions(testLease)
	o.LeaderElect = true
	err := newElector(o, c, clk, "a").run(ctx, func(ctx context.Context) error {
		lease, err := c.Get(ctx, testNamespace, testLease)
		if err != nil {
			return err
		}
		if !lease.Spec.AcquireTime.Time.Equal(now) || !lease.Spec.RenewTime.Time.Equal(now) {
			return fmt.Errorf("acquire/renew time = %v/%v, want %v", lease.Spec.AcquireTime, lease.Spec.RenewTime, now)
		}
		if d := ptr.Deref(lease.Spec.LeaseDurationSeconds, 0); d != 15 {
			return fmt.Errorf("leaseDurationSeconds = %d, want 15", d)
		}
		clk.Step(time.Second)
		cancel()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	lease := s.lease(t)
	if want := now.Add(time.Second); !lease.Spec.RenewTime.Time.Equal(want) || !lease.Spec.AcquireTime.Time.Equal(want) {
		t.Errorf("released at %v/%v, want %v", lease.Spec.AcquireTime, lease.Spec.RenewTime, want)
	}
}

func TestReleaseLeavesAnotherHoldersLease(t *testing.T) {
	s := newFakeServer()
	s.put(&coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: testLease},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("b"), LeaseTransitions: ptr.To[int32](2)},
	})
	e := newElector(testOptions(time.Second, 500*time.Millisecond), s.client("a"), clock.RealClock{}, "a")
	// a believes it holds the lease, as after a renewal whose reply was lost.
	e.obs.Wrote(&coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: testLease},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("a")},
	}, time.Now())
	e.release(context.Background())
	if h := s.holder(); h != "b" {
		t.Errorf("holder = %q after a's release, want b untouched", h)
	}
	if n := len(s.writeLog()); n != 0 {
		t.Errorf("release wrote %d times", n)
	}
}

// TestWatchdog: healthy while not leading and while leading with fresh
// renewals; failing once a leader has gone the lease duration plus the
// grace without renewing; told of leading and stopping by the elector.
func TestWatchdog(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	w := NewWatchdog(clk, 15*time.Second)
	if err := w.Check(); err != nil {
		t.Fatalf("not leading: %v", err)
	}
	w.set(true)
	clk.Step(30 * time.Second)
	w.renew()
	clk.Step(30 * time.Second)
	if err := w.Check(); err != nil {
		t.Fatalf("renewed 30s ago: %v", err)
	}
	clk.Step(10 * time.Second)
	if err := w.Check(); err == nil {
		t.Fatal("leading without a renewal for 40s (limit 35s) must fail")
	}
	w.set(false)
	if err := w.Check(); err != nil {
		t.Fatalf("after leading: %v", err)
	}

	s := newFakeServer()
	o := testOptions(time.Second, 500*time.Millisecond)
	real := NewWatchdog(clock.RealClock{}, o.LeaseDuration)
	o.Watchdog = real
	var leading []bool
	o.OnLeading = func(l bool) { leading = append(leading, l) }
	ctx, cancel := context.WithCancel(context.Background())
	err := newElector(o, s.client("a"), clock.RealClock{}, "a").run(ctx, func(context.Context) error {
		real.mu.Lock()
		l := real.leading
		real.mu.Unlock()
		if !l {
			return errors.New("the watchdog does not know it leads")
		}
		cancel()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(leading) != "[true false]" {
		t.Errorf("OnLeading calls = %v, want [true false]", leading)
	}
	if real.leading {
		t.Error("the watchdog still believes it leads")
	}
}

func TestLeaderMetric(t *testing.T) {
	reg := prometheus.NewRegistry()
	set, err := LeaderMetric(reg, "vpa-updater")
	if err != nil {
		t.Fatal(err)
	}
	value := func() float64 {
		mfs, err := reg.Gather()
		if err != nil || len(mfs) != 1 || mfs[0].GetName() != "leader_election_master_status" {
			t.Fatalf("gathered %v, %v", mfs, err)
		}
		m := mfs[0].GetMetric()[0]
		if l := m.GetLabel(); len(l) != 1 || l[0].GetName() != "name" || l[0].GetValue() != "vpa-updater" {
			t.Fatalf("labels %v", l)
		}
		return m.GetGauge().GetValue()
	}
	if v := value(); v != 0 {
		t.Errorf("before leading: %v, want 0", v)
	}
	set(true)
	if v := value(); v != 1 {
		t.Errorf("leading: %v, want 1", v)
	}
	set(false)
	if v := value(); v != 0 {
		t.Errorf("after leading: %v, want 0", v)
	}
}
