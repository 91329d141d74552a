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

package history

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Fetcher reads one namespace's history (Provider).
type Fetcher interface {
	Fetch(ctx context.Context, namespace string) (*Namespace, error)
}

// LoaderOptions configure a Loader.
type LoaderOptions struct {
	// Workers is how many namespaces are fetched at once (default 2).
	Workers int
	// InitialBackoff is the wait after a first failure (default 5s); it
	// doubles with each failure up to MaxBackoff (default 5m), with 10%
	// jitter.
	InitialBackoff, MaxBackoff time.Duration
	Clock                      clock.WithTicker
	// Registerer receives the loader's metrics; nil: not registered.
	Registerer prometheus.Registerer
}

// Status is where a namespace's history stands.
type Status struct {
	// Known is false when nothing was asked for the namespace.
	Known bool
	// Attempts is the number of failed fetches so far.
	Attempts int
	// Err is the last failure; nil while the first fetch runs.
	Err error
	// NextAttempt is when the next fetch starts after a failure.
	NextAttempt time.Time
	// Ready is whether the history is in, waiting to be taken.
	Ready bool
}

type phase int

const (
	queued phase = iota
	fetching
	backingOff
	ready
)

type nsState struct {
	phase    phase
	attempts int
	err      error
	next     time.Time
	result   *Namespace
}

// Loader fetches namespaces' history in the background, retrying failures
// with backoff until they succeed. Want asks for a namespace, Take collects
// what has arrived; both are safe to call from any goroutine.
type Loader struct {
	fetch Fetcher
	opts  LoaderOptions
	loads *prometheus.CounterVec
	dur   prometheus.Histogram

	mu     sync.Mutex
	states map[string]*nsState
	order  []string // queued namespaces, oldest first
	wake   chan struct{}
}

// NewLoader returns a loader over f; call Run to start it.
func NewLoader(f Fetcher, o LoaderOptions) *Loader {
	if o.Workers < 1 {
		o.Workers = 2
	}
	if o.InitialBackoff <= 0 {
		o.InitialBackoff = 5 * time.Second
	}
	if o.MaxBackoff < o.InitialBackoff {
		o.MaxBackoff = max(5*time.Minute, o.InitialBackoff)
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	l := &Loader{
		fetch: f,
		opts:  o,
		loads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "vpa_recommender", Name: "history_loads_total",
			Help: "Fetches of one namespace's usage history from Prometheus, by result (success, error).",
		}, []string{"result"}),
		dur: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "vpa_recommender", Name: "history_load_duration_seconds",
			Help:    "Duration of fetches of one namespace's usage history from Prometheus.",
			Buckets: prometheus.ExponentialBuckets(0.01, 4, 8),
		}),
		states: map[string]*nsState{},
		wake:   make(chan struct{}, 1),
	}
	l.loads.WithLabelValues("success")
	l.loads.WithLabelValues("error")
	if o.Registerer != nil {
		o.Registerer.MustRegister(l.loads, l.dur)
	}
	return l
}

// Want asks for a namespace's history. It does nothing while the namespace
// is queued, being fetched, waiting to retry or waiting to be taken.
func (l *Loader) Want(namespace string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.states[namespace]; ok {
		return
	}
	l.states[namespace] = &nsState{phase: queued}
	l.order = append(l.order, namespace)
	l.signal()
}

func (l *Loader) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Take returns the histories fetched since the last call and forgets them:
// a later Want fetches the namespace again.
func (l *Loader) Take() []*Namespace {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []*Namespace
	for ns, st := range l.states {
		if st.phase == ready {
			out = append(out, st.result)
			delete(l.states, ns)
		}
	}
	return out
}

// Status returns where a namespace's history stands.
func (l *Loader) Status(namespace string) Status {
	l.mu.Lock()
	defer l.mu.Unlock()
	st, ok := l.states[namespace]
	if !ok {
		return Status{}
	}
	return Status{Known: true, Attempts: st.attempts, Err: st.err, NextAttempt: st.next, Ready: st.phase == ready}
}

// WaitSettled waits until each namespace's history is in or its fetch has
// failed at least once, at most timeout. It reports whether all settled.
func (l *Loader) WaitSettled(ctx context.Context, namespaces []string, timeout time.Duration) bool {
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		for _, ns := range namespaces {
			if s := l.Status(ns); s.Known && !s.Ready && s.Err == nil {
				return false, nil
			}
		}
		return true, nil
	})
	return err == nil
}

// Run fetches until ctx ends.
func (l *Loader) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for range l.opts.Workers {
		wg.Go(func() { l.work(ctx) })
	}
	wg.Wait()
}

func (l *Loader) work(ctx context.Context) {
	logger := klog.FromContext(ctx)
	for {
		ns, delay, ok := l.next()
		if !ok {
			var timer clock.Timer
			var fire <-chan time.Time
			if delay > 0 {
				timer = l.opts.Clock.NewTimer(delay)
				fire = timer.C()
			}
			select {
			case <-ctx.Done():
			case <-l.wake:
			case <-fire:
			}
			if timer != nil {
				timer.Stop()
			}
			if ctx.Err() != nil {
				return
			}
			continue
		}
		l.signal() // let another worker look for more
		start := l.opts.Clock.Now()
		h, err := l.fetch.Fetch(ctx, ns)
		l.dur.Observe(l.opts.Clock.Since(start).Seconds())
		l.mu.Lock()
		st := l.states[ns]
		if ctx.Err() != nil {
			// Stopped (leadership lost): the next Run fetches it again.
			st.phase = queued
			l.order = append(l.order, ns)
			l.mu.Unlock()
			return
		}
		if err != nil {
			st.attempts++
			st.err = err
			st.phase = backingOff
			backoff := min(l.opts.InitialBackoff<<min(st.attempts-1, 30), l.opts.MaxBackoff)
			st.next = l.opts.Clock.Now().Add(wait.Jitter(backoff, 0.1))
			l.loads.WithLabelValues("error").Inc()
			logger.Error(err, "Cannot load usage history; retrying", "namespace", ns, "attempt", st.attempts, "retryIn", st.next.Sub(l.opts.Clock.Now()).Round(time.Second))
		} else {
			st.phase, st.result, st.err = ready, h, nil
			l.loads.WithLabelValues("success").Inc()
			cpu, mem := h.Samples()
			logger.Info("Loaded usage history", "namespace", ns, "pods", len(h.Pods), "cpuSamples", cpu, "memorySamples", mem,
				"queries", h.Queries, "duration", l.opts.Clock.Since(start).Round(time.Millisecond), "failedAttempts", st.attempts)
		}
		l.mu.Unlock()
	}
}

// next returns a namespace to fetch now, or how long to wait for the next
// retry (0: until woken).
func (l *Loader) next() (string, time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.opts.Clock.Now()
	if len(l.order) > 0 {
		ns := l.order[0]
		l.order = l.order[1:]
		l.states[ns].phase = fetching
		return ns, 0, true
	}
	var soonest time.Duration
	for ns, st := range l.states {
		if st.phase != backingOff {
			continue
		}
		if d := st.next.Sub(now); d <= 0 {
			st.phase = fetching
			return ns, 0, true
		} else if soonest == 0 || d < soonest {
			soonest = d
		}
	}
	return "", soonest, false
}
