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

// Package leaderelection runs a component's work under a Lease so only one
// replica acts at a time, with upstream VPA's flag names and defaults.
//
// It is built on the lease core (pkg/leases: its lean client, its Lease
// specs, its Observer and Holder) instead of client-go's leader election, whose
// packages link the typed clientsets, every built-in API group and the
// informers into the binary. The election follows client-go's LeaderElector
// with ReleaseOnCancel: candidates poll every RetryPeriod, a lease counts as
// held until its record has not changed for LeaseDuration by the candidate's
// own clock, the leader renews every RetryPeriod and gives up when it cannot
// renew within RenewDeadline, and a leader that stops on purpose empties the
// lease so another replica takes over at once.
package leaderelection

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/openvpa/openvpa/pkg/leases"
)

// LeasesResourceLock is the only supported --leader-elect-resource-lock.
const LeasesResourceLock = "leases"

// jitterFactor spreads the candidates' acquisition attempts over up to
// 1.2 extra retry periods, as client-go does.
const jitterFactor = 1.2

// ErrLeaseLost is returned by Run when the component stops being the leader
// before its context is cancelled.
var ErrLeaseLost = errors.New("leader election lost")

// Options configure leader election.
type Options struct {
	LeaderElect       bool
	LeaseDuration     time.Duration
	RenewDeadline     time.Duration
	RetryPeriod       time.Duration
	ResourceLock      string
	ResourceName      string
	ResourceNamespace string
	// Watchdog, when set, is told when this candidate leads and renews,
	// for the liveness check (not a flag).
	Watchdog *Watchdog
	// OnLeading, when set, is called with true when this candidate starts
	// leading and with false when it stops (not a flag).
	OnLeading func(bool)
}

// WatchdogGrace is how long past the lease duration a leader may go without
// renewing before its Watchdog fails, as client-go's healthz adaptor is used
// by Kubernetes' controllers.
const WatchdogGrace = 20 * time.Second

// Watchdog is a liveness check for leader election: it fails when this
// process leads but has not renewed its lease for the lease duration plus
// WatchdogGrace, i.e. when it should have stopped leading and did not. A
// candidate that does not lead is healthy.
type Watchdog struct {
	clock   clock.PassiveClock
	timeout time.Duration
	mu      sync.Mutex
	leading bool
	renewed time.Time
}

// NewWatchdog returns a watchdog for leases of the given duration.
func NewWatchdog(clk clock.PassiveClock, leaseDuration time.Duration) *Watchdog {
	return &Watchdog{clock: clk, timeout: leaseDuration + WatchdogGrace}
}

func (w *Watchdog) set(leading bool) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.leading, w.renewed = leading, w.clock.Now()
}

func (w *Watchdog) renew() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.renewed = w.clock.Now()
}

// Check returns an error when this process leads on a lease it has not
// renewed in time.
func (w *Watchdog) Check() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.leading {
		return nil
	}
	if since := w.clock.Since(w.renewed); since > w.timeout {
		return fmt.Errorf("leading, but the lease was last renewed %v ago (limit %v)", since.Round(time.Second), w.timeout)
	}
	return nil
}

// NewOptions returns upstream's defaults for a component whose lease is
// called leaseName (vpa-recommender-lease, vpa-updater).
func NewOptions(leaseName string) Options {
	return Options{
		LeaseDuration:     15 * time.Second,
		RenewDeadline:     10 * time.Second,
		RetryPeriod:       2 * time.Second,
		ResourceLock:      LeasesResourceLock,
		ResourceName:      leaseName,
		ResourceNamespace: "kube-system",
	}
}

// AddFlags registers the --leader-elect* flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "Start a leader election client and gain leadership before executing the main loop. Enable this when running replicated components for high availability.")
	fs.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", o.LeaseDuration, "The duration that non-leader candidates will wait after observing a leadership renewal until attempting to acquire leadership of a led but unrenewed leader slot.")
	fs.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", o.RenewDeadline, "The interval between attempts by the acting master to renew a leadership slot before it stops leading. This must be less than the lease duration.")
	fs.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", o.RetryPeriod, "The duration the clients should wait between attempting acquisition and renewal of a leadership.")
	fs.StringVar(&o.ResourceLock, "leader-elect-resource-lock", o.ResourceLock, "The type of resource object that is used for locking during leader election. The only supported option is 'leases'.")
	fs.StringVar(&o.ResourceName, "leader-elect-resource-name", o.ResourceName, "The name of resource object that is used for locking during leader election.")
	fs.StringVar(&o.ResourceNamespace, "leader-elect-resource-namespace", o.ResourceNamespace, "The namespace of resource object that is used for locking during leader election.")
}

// Validate checks the options.
func (o *Options) Validate() error {
	if !o.LeaderElect {
		return nil
	}
	if o.ResourceLock != LeasesResourceLock {
		return fmt.Errorf("--leader-elect-resource-lock must be %q, got %q", LeasesResourceLock, o.ResourceLock)
	}
	if o.RenewDeadline >= o.LeaseDuration {
		return fmt.Errorf("--leader-elect-renew-deadline (%v) must be less than --leader-elect-lease-duration (%v)", o.RenewDeadline, o.LeaseDuration)
	}
	if o.RetryPeriod <= 0 || o.ResourceName == "" || o.ResourceNamespace == "" {
		return errors.New("--leader-elect-retry-period, --leader-elect-resource-name and --leader-elect-resource-namespace must be set")
	}
	return nil
}

// Run calls run directly when leader election is off (leases may then be
// nil). Otherwise it waits for the lease and calls run, in the caller's
// goroutine, with a context that is cancelled when ctx is or when the lease is
// lost. The lease stays renewed while run finishes after ctx was cancelled and
// is released once run has returned. Run returns only after run has returned:
// run's error, or ErrLeaseLost when leadership ended while ctx was still live.
func Run(ctx context.Context, o Options, leases leases.Client, run func(context.Context) error) error {
	if !o.LeaderElect {
		return run(ctx)
	}
	if leases == nil {
		return errors.New("leader election is on but no lease client was given")
	}
	host, err := os.Hostname()
	if err != nil {
		return fmt.Errorf("reading the hostname for the leader election identity: %w", err)
	}
	return newElector(o, leases, clock.RealClock{}, host+"_"+uuid.NewString()).run(ctx, run)
}

// elector is one candidate. Its fields are used by one goroutine at a time:
// the caller's while acquiring and releasing, the renewing goroutine while
// leading.
type elector struct {
	o      Options
	leases leases.Client
	clock  clock.WithTicker
	id     string
	holder *leases.Holder
	// obs holds the last lease spec seen and the local time it was first
	// seen; a holder counts as live until then plus LeaseDuration.
	obs *leases.Observer

	// lease is the last version of the Lease this candidate wrote, the base
	// of the next optimistic renewal.
	lease *coordinationv1.Lease
}

func newElector(o Options, client leases.Client, clk clock.WithTicker, id string) *elector {
	return &elector{
		o: o, leases: client, clock: clk, id: id,
		holder: leases.NewHolder(client, id, o.LeaseDuration, clk),
		obs:    leases.NewObserver(clk, o.LeaseDuration),
	}
}

func (e *elector) leaseRef() klog.ObjectRef {
	return klog.KRef(e.o.ResourceNamespace, e.o.ResourceName)
}

func (e *elector) run(ctx context.Context, run func(context.Context) error) error {
	logger := klog.FromContext(ctx)
	if !e.acquire(ctx) {
		return nil
	}
	logger.Info("Acquired the leader lease", "lease", e.leaseRef(), "identity", e.id)
	e.o.Watchdog.set(true)
	defer e.o.Watchdog.set(false)
	if e.o.OnLeading != nil {
		e.o.OnLeading(true)
		defer e.o.OnLeading(false)
	}

	runCtx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()
	// Renewal outlives ctx: run may still be writing its last state after
	// ctx is cancelled and no other replica may start meanwhile.
	renewCtx, stopRenewing := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRenewing()
	lost := false
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		lost = !e.renew(renewCtx)
		if lost {
			cancelRun()
		}
	}()

	runErr := run(runCtx)
	stopRenewing()
	<-renewed
	if !lost {
		e.release(ctx)
	}
	logger.Info("Stopped leading", "lease", e.leaseRef(), "identity", e.id)
	switch {
	case runErr != nil:
		return runErr
	case lost && ctx.Err() == nil:
		return ErrLeaseLost
	default:
		return nil
	}
}

// acquire tries to take the lease every RetryPeriod, jittered, until it
// succeeds (true) or ctx is cancelled (false).
func (e *elector) acquire(ctx context.Context) bool {
	logger := klog.FromContext(ctx)
	logger.V(2).Info("Waiting for the leader lease", "lease", e.leaseRef(), "identity", e.id)
	for ctx.Err() == nil {
		attemptCtx, cancel := context.WithTimeout(ctx, e.o.RenewDeadline)
		got := e.tryAcquireOrRenew(attemptCtx)
		cancel()
		if got == acquired {
			return true
		}
		if !e.sleep(ctx, wait.Jitter(e.o.RetryPeriod, jitterFactor)) {
			return false
		}
	}
	return false
}

// renew keeps the lease while ctx is live. Each round retries every
// RetryPeriod until the lease is written, for at most RenewDeadline; it
// returns false when a round fails or another candidate holds the lease, and
// true when ctx is cancelled.
func (e *elector) renew(ctx context.Context) bool {
	logger := klog.FromContext(ctx)
	for {
		if !e.sleep(ctx, e.o.RetryPeriod) {
			return true
		}
		switch e.renewRound(ctx) {
		case acquired:
			e.o.Watchdog.renew()
			logger.V(5).Info("Renewed the leader lease", "lease", e.leaseRef())
		case heldByOther:
			holder, _ := e.obs.Holder(e.o.ResourceNamespace, e.o.ResourceName)
			logger.Info("The leader lease was taken by another candidate", "lease", e.leaseRef(), "identity", e.id, "holder", holder)
			return false
		default:
			if ctx.Err() != nil {
				return true
			}
			logger.Info("Could not renew the leader lease in time", "lease", e.leaseRef(), "identity", e.id, "renewDeadline", e.o.RenewDeadline)
			return false
		}
	}
}

func (e *elector) renewRound(ctx context.Context) outcome {
	deadline := e.clock.Now().Add(e.o.RenewDeadline)
	for {
		left := deadline.Sub(e.clock.Now())
		if left <= 0 {
			return failed
		}
		attemptCtx, cancel := context.WithTimeout(ctx, left)
		got := e.tryAcquireOrRenew(attemptCtx)
		cancel()
		if got != failed {
			return got
		}
		if !e.sleep(ctx, min(e.o.RetryPeriod, deadline.Sub(e.clock.Now()))) {
			return failed
		}
	}
}

// sleep waits for d or until ctx is cancelled; it reports whether ctx is
// still live.
func (e *elector) sleep(ctx context.Context, d time.Duration) bool {
	t := e.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return ctx.Err() == nil
	}
}

type outcome int

const (
	failed outcome = iota
	heldByOther
	acquired
)

// tryAcquireOrRenew writes the lease with this candidate as holder if it
// already holds it, if nobody does, or if the holder has not renewed for
// LeaseDuration.
func (e *elector) tryAcquireOrRenew(ctx context.Context) outcome {
	logger := klog.FromContext(ctx)

	// The leader first updates the version it wrote last, saving a read.
	if holder, live := e.obs.Holder(e.o.ResourceNamespace, e.o.ResourceName); e.lease != nil && holder == e.id && live {
		start := e.clock.Now()
		updated, err := e.holder.Claim(ctx, e.lease)
		if err == nil {
			e.obs.Wrote(updated, start)
			e.lease = updated
			return acquired
		}
		logger.V(4).Info("Optimistic lease renewal failed, reading the lease", "lease", e.leaseRef(), "err", err)
	}

	lease, err := e.holder.Acquire(ctx, e.obs, e.o.ResourceNamespace, e.o.ResourceName)
	switch {
	case errors.Is(err, leases.ErrHeld):
		holder, _ := e.obs.Holder(e.o.ResourceNamespace, e.o.ResourceName)
		logger.V(5).Info("The leader lease is held by another candidate", "lease", e.leaseRef(), "holder", holder)
		return heldByOther
	case err != nil:
		logger.V(2).Info("Could not acquire or renew the leader lease", "lease", e.leaseRef(), "err", err)
		return failed
	}
	e.lease = lease
	return acquired
}

// release empties the lease if this candidate still holds it, so another
// replica takes over without waiting for it to expire. It runs after ctx may
// have been cancelled, so it uses a context of its own bounded by
// RenewDeadline.
func (e *elector) release(ctx context.Context) {
	logger := klog.FromContext(ctx)
	releaseCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.o.RenewDeadline)
	defer cancel()
	for releaseCtx.Err() == nil {
		current, err := e.leases.Get(releaseCtx, e.o.ResourceNamespace, e.o.ResourceName)
		if err != nil || current == nil {
			logger.Error(err, "Could not read the leader lease to release it", "lease", e.leaseRef())
			return
		}
		_, err = e.holder.Release(releaseCtx, current)
		switch {
		case err == nil:
			logger.V(2).Info("Released the leader lease", "lease", e.leaseRef(), "identity", e.id)
			return
		case errors.Is(err, leases.ErrNotHeld):
			logger.Info("Not releasing the leader lease: another candidate holds it", "lease", e.leaseRef(), "holder", leases.HolderOf(current))
			return
		case !apierrors.IsConflict(err):
			logger.Error(err, "Could not release the leader lease", "lease", e.leaseRef())
			return
		}
		// A renewal that timed out on our side may have landed; read again.
	}
	logger.Error(releaseCtx.Err(), "Could not release the leader lease in time", "lease", e.leaseRef())
}

// LeaderMetric registers client-go's leader election metric on reg,
// leader_election_master_status{name="<lease name>"}: 1 while this process
// leads, else 0. The returned function sets it, for Options.OnLeading.
func LeaderMetric(reg prometheus.Registerer, leaseName string) (func(leading bool), error) {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "leader_election_master_status",
		Help: "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease.",
	}, []string{"name"})
	if err := reg.Register(g); err != nil {
		return nil, err
	}
	m := g.WithLabelValues(leaseName)
	m.Set(0)
	return func(leading bool) {
		if leading {
			m.Set(1)
		} else {
			m.Set(0)
		}
	}, nil
}
