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

// Package healthserver serves a component's /metrics, /healthz and /readyz
// (and optionally /debug/pprof) on their own mux and port, with the
// component's own Prometheus registry.
package healthserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Check is a named readiness or liveness test.
type Check struct {
	Name string
	Func func() error
}

// Options configure the server.
type Options struct {
	// Address to listen on, e.g. ":8942".
	Address string
	// Registry holds the component's metrics. Go and process collectors are added.
	Registry *prometheus.Registry
	// Profiling enables /debug/pprof.
	Profiling bool
	// Liveness and Readiness checks; an empty list answers OK.
	Liveness  []Check
	Readiness []Check
}

// NewRegistry returns a registry with the Go runtime and process collectors.
func NewRegistry() *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return r
}

// Handler returns the mux with every endpoint.
func Handler(o Options) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(o.Registry, promhttp.HandlerOpts{
		Registry: o.Registry,
		// A scrape is a few kilobytes; a gzip writer per scrape costs far more
		// memory (about 1 MB each, pooled) than compression saves on the wire.
		DisableCompression: true,
	}))
	mux.Handle("/healthz", checksHandler(o.Liveness))
	mux.Handle("/health-check", checksHandler(o.Liveness))
	mux.Handle("/readyz", checksHandler(o.Readiness))
	if o.Profiling {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

func checksHandler(checks []Check) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		var failed []string
		for _, c := range checks {
			if err := c.Func(); err != nil {
				failed = append(failed, fmt.Sprintf("[-]%s failed: %v", c.Name, err))
			}
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if len(failed) > 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			for _, f := range failed {
				fmt.Fprintln(w, f)
			}
			return
		}
		fmt.Fprintln(w, "ok")
	})
}

// Serve listens on o.Address until ctx is cancelled, then shuts down.
func Serve(ctx context.Context, o Options) error {
	ln, err := net.Listen("tcp", o.Address)
	if err != nil {
		return fmt.Errorf("listening on %s for metrics and health: %w", o.Address, err)
	}
	return ServeListener(ctx, ln, o)
}

// ServeListener is Serve on an existing listener.
func ServeListener(ctx context.Context, ln net.Listener, o Options) error {
	srv := &http.Server{Handler: Handler(o), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	klog.FromContext(ctx).Info("Serving metrics and health", "address", ln.Addr().String())
	select {
	case err := <-errc:
		return fmt.Errorf("metrics and health server: %w", err)
	case <-ctx.Done():
		shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}

// LoopHealth is a liveness check for a periodic loop: it fails when no loop
// finished within five loops' time, as upstream's health check does. It
// counts only while the loop is meant to run: a replica that waits for the
// leader lease runs no loop and is healthy.
type LoopHealth struct {
	clock    clock.PassiveClock
	interval time.Duration
	mu       sync.Mutex
	last     time.Time
	started  time.Time
	inactive bool
}

// NewLoopHealth tracks a loop with the given period; it fails after five
// periods without a finished loop. It starts active.
func NewLoopHealth(c clock.PassiveClock, interval time.Duration) *LoopHealth {
	now := c.Now()
	return &LoopHealth{clock: c, interval: interval, started: now}
}

// SetActive starts (true) or stops (false) holding the loop to its period;
// a loop that becomes active has five periods from now for its first loop.
func (h *LoopHealth) SetActive(active bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if active && h.inactive {
		h.started, h.last = h.clock.Now(), time.Time{}
	}
	h.inactive = !active
}

// MarkLoop records that a loop finished now.
func (h *LoopHealth) MarkLoop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last = h.clock.Now()
}

// Check returns an error when the loop is active and overdue.
func (h *LoopHealth) Check() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.inactive {
		return nil
	}
	ref := h.last
	if ref.IsZero() {
		ref = h.started
	}
	if since := h.clock.Since(ref); since > 5*h.interval {
		return fmt.Errorf("no loop finished in the last %v (interval %v)", since.Round(time.Second), h.interval)
	}
	return nil
}
