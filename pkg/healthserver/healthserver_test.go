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

package healthserver

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestLoopHealth(t *testing.T) {
	c := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	h := NewLoopHealth(c, time.Minute)
	if err := h.Check(); err != nil {
		t.Fatalf("fresh loop: %v", err)
	}
	c.SetTime(c.Now().Add(5*time.Minute + time.Second))
	if err := h.Check(); err == nil {
		t.Fatal("no loop for over 5 intervals must fail")
	}
	h.MarkLoop()
	if err := h.Check(); err != nil {
		t.Fatalf("after a loop: %v", err)
	}
}

// TestLoopHealthInactive: a standby replica runs no loop and stays live;
// once it leads, its loop has five periods from then.
func TestLoopHealthInactive(t *testing.T) {
	c := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	h := NewLoopHealth(c, time.Minute)
	h.SetActive(false)
	c.SetTime(c.Now().Add(time.Hour))
	if err := h.Check(); err != nil {
		t.Fatalf("inactive loop: %v", err)
	}
	h.SetActive(true)
	c.SetTime(c.Now().Add(4 * time.Minute))
	if err := h.Check(); err != nil {
		t.Fatalf("4 intervals after becoming active: %v", err)
	}
	c.SetTime(c.Now().Add(2 * time.Minute))
	if err := h.Check(); err == nil {
		t.Fatal("6 intervals after becoming active without a loop must fail")
	}
}

func TestHandler(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "openvpa_test_total", Help: "test"})
	reg.MustRegister(c)
	c.Inc()
	ready := errors.New("caches not synced")
	h := Handler(Options{
		Registry:  reg,
		Liveness:  []Check{{Name: "loop", Func: func() error { return nil }}},
		Readiness: []Check{{Name: "informers", Func: func() error { return ready }}},
	})
	tests := []struct {
		path     string
		code     int
		contains string
	}{
		{"/healthz", http.StatusOK, "ok"},
		{"/readyz", http.StatusServiceUnavailable, "caches not synced"},
		{"/metrics", http.StatusOK, "openvpa_test_total 1"},
		{"/debug/pprof/", http.StatusNotFound, ""},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodGet, tc.path, nil)
			// Prometheus asks for gzip; the metrics are served plain anyway.
			req.Header.Set("Accept-Encoding", "gzip")
			h.ServeHTTP(rec, req)
			if rec.Code != tc.code || !strings.Contains(rec.Body.String(), tc.contains) {
				t.Errorf("GET %s = %d %q, want %d containing %q", tc.path, rec.Code, rec.Body.String(), tc.code, tc.contains)
			}
		})
	}
}
