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
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/openvpa/openvpa/pkg/healthserver"
	"github.com/openvpa/openvpa/pkg/leaderelection"
	"github.com/openvpa/openvpa/pkg/leases"
)

// Informers are a component's caches.
type Informers interface {
	// Start starts them; they stop when ctx ends.
	Start(ctx context.Context)
	// WaitForSync blocks until they have synced, or ctx ends.
	WaitForSync(ctx context.Context) error
}

// Server is a server every replica runs beside the metrics and health
// server, e.g. the admission webhook.
type Server struct {
	// Name prefixes its error.
	Name string
	// Serve serves until ctx ends, then drains and returns. Returning
	// earlier stops the component.
	Serve func(ctx context.Context) error
}

// Election makes a component's work leader-only.
type Election struct {
	// Options are the --leader-elect* flags. With --leader-elect off every
	// replica leads (one replica, or the recommender's shards).
	Options leaderelection.Options
	// Leases is the Lease client; nil with --leader-elect off.
	Leases leases.Client
	// OnLeading, when set, is called with true when this replica starts
	// leading and with false when it stops.
	OnLeading func(leading bool)
}

// Runtime is what one replica of a component runs, in two phases. Every
// replica runs the metrics and health server, the other Servers and the
// Informers; once the caches synced, the Work runs: on every replica, or,
// with an Election, only on the leader.
//
// Readiness is the caches (and Health's own readiness checks), never
// leadership: a standby is ready. With an Election, liveness adds a
// watchdog that fails only a leader that stopped renewing its Lease, so a
// healthy standby is live.
//
// The runtime stops when ctx ends, when the Work returns or when a server
// stops, in this order: readiness fails at once ("shutting down"), the Work
// stops (a leader releases its Lease), when ctx ended the servers go on
// serving until the Lameduck lets them go, then the servers drain, then
// the informers stop. Run returns the first error.
type Runtime struct {
	// Health configures the metrics and health server. Run adds the
	// "informers" readiness check and, with an Election, the
	// "leader-election" liveness check and the leader_election_master_status
	// metric to its Registry.
	Health healthserver.Options
	// Servers are the other servers every replica runs.
	Servers []Server
	// Informers are the caches every replica keeps warm; nil for none.
	Informers Informers
	// Election, when set, runs the Work only while this replica leads.
	Election *Election
	// Work is the component's work: a loop, or what the admission
	// controller does besides serving. It runs until ctx ends; Stopping
	// tells a stopping component from a lost Lease.
	Work func(ctx context.Context) error
	// SyncInWork makes the Work start before the caches synced: it waits
	// for them itself, through WaitForSync, after it has chosen what they
	// hold (the recommender sharded by namespace caches its shards'
	// namespaces). Readiness waits for them all the same.
	SyncInWork bool
	// Lameduck, when set, keeps the servers serving after ctx ended while
	// the component is taken out of rotation.
	Lameduck *Lameduck
	// Clock is the clock of the leader-election watchdog and of the
	// Lameduck's bound; nil for the real one.
	Clock clock.Clock

	synced   atomic.Bool
	stopping atomic.Bool
}

// Lameduck is the shutdown phase between the end of the root context and
// the servers' drain: the component reports not ready and goes on serving
// until whoever routes traffic to it (a Service's endpoints) has stopped
// doing so, so no client meets a closed port.
type Lameduck struct {
	// Wait blocks until the servers may stop, or until ctx ends when
	// Timeout passed. Its error is logged, never returned by Run.
	Wait func(ctx context.Context) error
	// Timeout bounds Wait; zero or less skips the phase.
	Timeout time.Duration
}

// Run runs the component until ctx ends, the Work returns or a server
// stops. A stop through ctx is not an error.
func (r *Runtime) Run(ctx context.Context) error {
	health, election, err := r.prepare()
	if err != nil {
		return err
	}
	// Three lifetimes: the work's ends first (ctx, or a failure); the
	// servers' and the caches' outlive ctx and end in turn after it, the
	// servers' after the Lameduck when ctx ended.
	workCtx, stopWork := context.WithCancel(ctx)
	defer stopWork()
	serveCtx, stopServing := context.WithCancel(context.WithoutCancel(ctx))
	defer stopServing()
	cacheCtx, stopCaches := context.WithCancel(context.WithoutCancel(ctx))
	defer stopCaches()

	// Readiness fails the moment the component starts stopping.
	stopMarking := context.AfterFunc(ctx, func() { r.stopping.Store(true) })
	defer stopMarking()

	serverStopped, markServerStopped := context.WithCancel(context.Background())
	defer markServerStopped()

	var first firstError
	var serving sync.WaitGroup
	servers := append([]Server{{Name: "health server", Serve: func(ctx context.Context) error {
		return healthserver.Serve(ctx, health)
	}}}, r.Servers...)
	for _, s := range servers {
		serving.Go(func() {
			if err := s.Serve(serveCtx); err != nil {
				first.set(fmt.Errorf("%s: %w", s.Name, err))
			}
			markServerStopped()
			stopWork()
		})
	}
	if r.Informers != nil {
		r.Informers.Start(cacheCtx)
	}
	first.set(r.work(workCtx, election))
	r.stopping.Store(true)
	stopWork()
	if ctx.Err() != nil {
		// Stopped from outside: serve on, not ready, until the Lameduck
		// lets the servers go (or one of them stops on its own).
		lameduckCtx, stopLameduck := context.WithCancel(serveCtx)
		stopWatching := context.AfterFunc(serverStopped, stopLameduck)
		r.lameduck(lameduckCtx)
		stopWatching()
		stopLameduck()
	}
	stopServing()
	serving.Wait()
	stopCaches()
	if err := first.get(); err != nil && !(errors.Is(err, context.Canceled) && ctx.Err() != nil) {
		return err
	}
	return nil
}

// prepare returns the health server's options with the runtime's checks,
// and the election's options with the watchdog and the leader metric.
func (r *Runtime) prepare() (healthserver.Options, leaderelection.Options, error) {
	health := r.Health
	health.Readiness = append([]healthserver.Check{{Name: "shutdown", Func: r.running}, {Name: "informers", Func: r.cachesSynced}}, r.Health.Readiness...)
	health.Liveness = append([]healthserver.Check(nil), r.Health.Liveness...)
	if r.Election == nil {
		return health, leaderelection.Options{}, nil
	}
	election := r.Election.Options
	election.Watchdog = leaderelection.NewWatchdog(r.clock(), election.LeaseDuration)
	health.Liveness = append(health.Liveness, healthserver.Check{Name: "leader-election", Func: election.Watchdog.Check})
	setLeader, err := leaderelection.LeaderMetric(health.Registry, election.ResourceName)
	if err != nil {
		return health, election, err
	}
	onLeading := r.Election.OnLeading
	election.OnLeading = func(leading bool) {
		if onLeading != nil {
			onLeading(leading)
		}
		setLeader(leading)
	}
	return health, election, nil
}

// work waits for the caches and runs the Work, under the election if any.
func (r *Runtime) work(ctx context.Context, election leaderelection.Options) error {
	ctx = context.WithValue(ctx, stoppingKey{}, ctx)
	if !r.SyncInWork {
		if err := r.WaitForSync(ctx); err != nil {
			return err
		}
	}
	work := r.Work
	if work == nil {
		work = func(ctx context.Context) error {
			<-ctx.Done()
			return nil
		}
	}
	if r.Election == nil {
		return work(ctx)
	}
	return leaderelection.Run(ctx, election, r.Election.Leases, work)
}

// WaitForSync waits for the informers to sync, and marks the component
// ready once they have.
func (r *Runtime) WaitForSync(ctx context.Context) error {
	if r.synced.Load() {
		return nil
	}
	if r.Informers != nil {
		logger := klog.FromContext(ctx)
		logger.Info("Waiting for informer caches")
		if err := r.Informers.WaitForSync(ctx); err != nil {
			return err
		}
		logger.Info("Informer caches synced")
	}
	r.synced.Store(true)
	return nil
}

func (r *Runtime) clock() clock.Clock {
	if r.Clock == nil {
		return clock.RealClock{}
	}
	return r.Clock
}

// lameduck runs the Lameduck's Wait, bounded by its Timeout; it returns at
// once without one, and when ctx ends (a server stopped). When the bound or
// ctx ends the wait, the Wait is cancelled and lameduck returns once it has
// returned.
func (r *Runtime) lameduck(ctx context.Context) {
	if r.Lameduck == nil || r.Lameduck.Wait == nil || r.Lameduck.Timeout <= 0 {
		return
	}
	logger := klog.FromContext(ctx)
	logger.Info("Shutting down: not ready, serving until taken out of rotation", "timeout", r.Lameduck.Timeout)
	waitCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Lameduck.Wait(waitCtx) }()
	timer := r.clock().NewTimer(r.Lameduck.Timeout)
	defer timer.Stop()
	select {
	case err := <-done:
		if err != nil && ctx.Err() == nil {
			logger.Error(err, "Waiting to be taken out of rotation failed; stopping the servers")
		}
	case <-timer.C():
		logger.Info("Stopping the servers: still in rotation after the timeout", "timeout", r.Lameduck.Timeout)
		cancel()
		<-done // the Wait ends before the servers drain, and leaves nothing behind
	case <-ctx.Done():
		<-done
	}
}

// running is the "shutdown" readiness check: it fails once the component
// is stopping.
func (r *Runtime) running() error {
	if r.stopping.Load() {
		return errors.New("shutting down")
	}
	return nil
}

// cachesSynced is the "informers" readiness check.
func (r *Runtime) cachesSynced() error {
	if !r.synced.Load() {
		return errors.New("informers not synced")
	}
	return nil
}

type stoppingKey struct{}

// Stopping reports whether the component a Work's ctx belongs to is
// stopping (a signal, or a server failed), rather than this replica having
// lost its leader Lease: a leader saves its state on the way out only when
// no other replica can have taken over.
func Stopping(ctx context.Context) bool {
	work, ok := ctx.Value(stoppingKey{}).(context.Context)
	return ok && work.Err() != nil
}

// firstError keeps the first error set.
type firstError struct {
	mu  sync.Mutex
	err error
}

func (f *firstError) set(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err == nil {
		f.err = err
	}
}

func (f *firstError) get() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}
