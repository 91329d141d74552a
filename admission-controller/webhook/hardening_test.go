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

package webhook

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/openvpa/openvpa/admission-controller/pod"
	"github.com/openvpa/openvpa/admission-controller/vpa"
	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/features"
)

// tlsServer is a webhook Server behind NewHTTPServer on loopback.
type tlsServer struct {
	addr     string
	roots    *x509.CertPool
	requests atomic.Int64 // reviews that reached ServeHTTP
}

func startTLSServer(t testing.TB, o HTTPOptions) *tlsServer {
	t.Helper()
	return startTLSServerWith(t, o, TLSOptions{})
}

func startTLSServerWith(t testing.TB, o HTTPOptions, to TLSOptions) *tlsServer {
	t.Helper()
	dir := t.TempDir()
	if err := GenerateSelfSigned(dir, []string{"127.0.0.1"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	certs, err := NewCertWatcher(filepath.Join(dir, ServerCertFile), filepath.Join(dir, ServerKeyFile), "")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ServerTLSConfig(to, certs.GetCertificate)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(filepath.Join(dir, CACertFile))
	if err != nil {
		t.Fatal(err)
	}
	ts := &tlsServer{roots: x509.NewCertPool()}
	ts.roots.AppendCertsFromPEM(ca)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts.addr = ln.Addr().String()
	srv := NewHTTPServer(context.Background(), NewServer(fixedPods{}, vpa.NewValidator(features.NewGate()), NewMetrics(nil), func() { ts.requests.Add(1) }), cfg, o)
	go func() { _ = srv.Serve(tls.NewListener(ln, cfg)) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ts
}

func (ts *tlsServer) dial(t testing.TB) *tls.Conn {
	t.Helper()
	c, err := tls.Dial("tcp", ts.addr, &tls.Config{RootCAs: ts.roots, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// closedBy reads c until the server closes it and returns how long that
// took; it fails the test when c is still open after limit.
func closedBy(t testing.TB, c net.Conn, limit time.Duration) time.Duration {
	start := time.Now()
	_ = c.SetReadDeadline(start.Add(limit))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Errorf("connection still open after %v", limit)
	}
	return time.Since(start)
}

func totalAlloc() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

func heapAlloc() uint64 {
	// Two cycles: sync.Pool keeps objects for one more.
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestSlowBodyCutOff opens 40 connections that announce a 5 MiB body and
// send one byte of it: each is closed once the read timeout passes, and the
// server allocates for what arrived, not for what was announced.
func TestSlowBodyCutOff(t *testing.T) {
	const clients = 40
	const readTimeout = time.Second
	ts := startTLSServer(t, HTTPOptions{ReadTimeout: readTimeout, WriteTimeout: 5 * time.Second, IdleTimeout: 5 * time.Second})
	conns := make([]*tls.Conn, clients)
	for i := range conns {
		conns[i] = ts.dial(t)
		if err := conns[i].Handshake(); err != nil {
			t.Fatal(err)
		}
	}
	before := totalAlloc()
	var wg sync.WaitGroup
	held := make([]time.Duration, clients)
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			if _, err := fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", MaxBodyBytes); err != nil {
				t.Error(err)
				return
			}
			closedBy(t, c, readTimeout+10*time.Second)
			held[i] = time.Since(start)
		}()
	}
	wg.Wait()
	allocated := totalAlloc() - before
	if n := ts.requests.Load(); n != clients {
		t.Errorf("%d requests reached the handler, want %d", n, clients)
	}
	for i, d := range held {
		if d > readTimeout+3*time.Second {
			t.Errorf("connection %d held %v, read timeout %v", i, d, readTimeout)
		}
	}
	t.Logf("40 slow clients: %.1f MiB allocated in all", float64(allocated)/(1<<20))
	if allocated > 32<<20 {
		t.Errorf("%.1f MiB allocated for 40 bodies of one byte each", float64(allocated)/(1<<20))
	}
}

// TestIdleConnectionClosed: a keep-alive connection that sends no further
// request is closed after the idle timeout, and one that never starts its TLS
// handshake after the read timeout.
func TestIdleConnectionClosed(t *testing.T) {
	const idle = 500 * time.Millisecond
	ts := startTLSServer(t, HTTPOptions{ReadTimeout: idle, WriteTimeout: 5 * time.Second, IdleTimeout: idle})
	t.Run("after a request", func(t *testing.T) {
		c := ts.dial(t)
		body := strings.Replace(podReview, "%s", "admission.k8s.io/v1", 1)
		if _, err := fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d", resp.StatusCode)
		}
		start := time.Now()
		_ = c.SetReadDeadline(start.Add(idle + 10*time.Second))
		_, err = io.Copy(io.Discard, br)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("idle connection still open after %v", time.Since(start))
		}
		if d := time.Since(start); d > idle+3*time.Second {
			t.Errorf("idle connection closed after %v, idle timeout %v", d, idle)
		}
	})
	t.Run("no handshake", func(t *testing.T) {
		c, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if d := closedBy(t, c, idle+10*time.Second); d > idle+3*time.Second {
			t.Errorf("silent connection closed after %v", d)
		}
	})
}

// hugeReview is a pod review of about 5 MiB: a pod with n containers of one
// field each.
func hugeReview(n int, container string) []byte {
	var b strings.Builder
	b.WriteString(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","resource":{"group":"","version":"v1","resource":"pods"},"namespace":"ns","operation":"CREATE","object":{"metadata":{"generateName":"web-"},"spec":{"containers":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(container)
	}
	b.WriteString(`]}}}}`)
	return []byte(b.String())
}

func recommendingServer() *Server {
	mode := vpav1.UpdateModeInitial
	v := &vpav1.VerticalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"},
		Spec: vpav1.VerticalPodAutoscalerSpec{UpdatePolicy: &vpav1.PodUpdatePolicy{UpdateMode: &mode}},
		Status: vpav1.VerticalPodAutoscalerStatus{Recommendation: &vpav1.RecommendedPodResources{ContainerRecommendations: []vpav1.RecommendedContainerResources{
			{ContainerName: "app", Target: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("200Mi")}},
		}}}}
	return NewServer(pod.NewHandler(oneVPA{v}, noLimits{}), vpa.NewValidator(features.NewGate()), NewMetrics(nil), nil)
}

func admitted(t *testing.T, rec *httptest.ResponseRecorder) *admissionv1.AdmissionResponse {
	t.Helper()
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %.200s", rec.Code, rec.Body.String())
	}
	var r admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil || r.Response == nil {
		t.Fatalf("not a review: %v", err)
	}
	return r.Response
}

// TestHugePod: a 5 MiB review of a pod with 400,000 one-field containers
// under a VPA is admitted unchanged with a warning, within 64 MiB of
// allocation and with a small response.
func TestHugePod(t *testing.T) {
	body := hugeReview(400_000, `{"name":"a"}`)
	if len(body) > MaxBodyBytes {
		t.Fatalf("review of %d bytes is over the limit", len(body))
	}
	s := recommendingServer()
	before := totalAlloc()
	rec := post(t, s, "POST", "application/json", string(body))
	allocated := totalAlloc() - before
	resp := admitted(t, rec)
	t.Logf("%d-byte review: %.1f MiB allocated, %d-byte response", len(body), float64(allocated)/(1<<20), rec.Body.Len())
	if !resp.Allowed || len(resp.Patch) != 0 || len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], "containers") {
		t.Errorf("response %+v, want allowed without a patch, with a warning", resp)
	}
	if allocated > 64<<20 {
		t.Errorf("%.1f MiB allocated, want at most 64", float64(allocated)/(1<<20))
	}
	if rec.Body.Len() > 4096 {
		t.Errorf("response of %d bytes", rec.Body.Len())
	}
}

// TestPatchCap: a pod within the container limit whose patch would pass
// MaxPatchBytes is admitted unchanged with a warning.
func TestPatchCap(t *testing.T) {
	body := hugeReview(pod.MaxContainers, `{"name":"app","resources":{"requests":{"cpu":"1","memory":"1Gi"},"limits":{"cpu":"2","memory":"2Gi"}}}`)
	rec := post(t, recommendingServer(), "POST", "application/json", string(body))
	resp := admitted(t, rec)
	if !resp.Allowed || len(resp.Patch) != 0 || len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], "patch would be larger") {
		t.Errorf("response %.300v, want allowed without a patch, with a warning", resp)
	}
	if rec.Body.Len() > 4096 {
		t.Errorf("response of %d bytes", rec.Body.Len())
	}
	// A pod of a few such containers is patched.
	resp = admitted(t, post(t, recommendingServer(), "POST", "application/json", string(hugeReview(3, `{"name":"app","resources":{"requests":{"cpu":"1"}}}`))))
	if len(resp.Patch) == 0 {
		t.Errorf("small pod not patched")
	}
}

// TestPoolMemoryReturns: after a burst of large reviews, the memory the
// server and handler keep for reuse goes back to what small reviews need.
func TestPoolMemoryReturns(t *testing.T) {
	s := recommendingServer()
	small := strings.Replace(loadReview, `"uid":"u"`, `"uid":"s"`, 1)
	post(t, s, "POST", "application/json", small)
	base := heapAlloc()
	large := string(hugeReview(10_000, `{"name":"app","resources":{"requests":{"cpu":"1"}}}`))
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 3; i++ {
				if rec := post(t, s, "POST", "application/json", large); rec.Code != http.StatusOK {
					t.Errorf("status %d", rec.Code)
				}
			}
		}()
	}
	wg.Wait()
	// One review per GC cycle: what the pools keep is taken and put back
	// every cycle.
	var after uint64
	for i := 0; i < 4; i++ {
		post(t, s, "POST", "application/json", small)
		after = heapAlloc()
	}
	t.Logf("heap before the burst %.1f MiB, after %.1f MiB", float64(base)/(1<<20), float64(after)/(1<<20))
	if after > base+4<<20 {
		t.Errorf("heap %.1f MiB after the burst, %.1f MiB before", float64(after)/(1<<20), float64(base)/(1<<20))
	}
}

// TestDecodeErrorLogSampled: undecodable pods log one line per
// DecodeLogInterval, the next line counting those left out.
func TestDecodeErrorLogSampled(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	logger := funcr.New(func(prefix, args string) {
		mu.Lock()
		lines = append(lines, args)
		mu.Unlock()
	}, funcr.Options{})
	clk := testingclock.NewFakePassiveClock(time.Unix(1000, 0))
	s := newTestServer().WithClock(clk)
	body := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","resource":{"version":"v1","resource":"pods"},"operation":"CREATE","object":{"metadata":5}}}`
	send := func(n int) {
		for i := 0; i < n; i++ {
			req := httptest.NewRequest("POST", "/", strings.NewReader(body)).WithContext(klog.NewContext(context.Background(), logger))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, req)
			if resp := admitted(t, rec); !resp.Allowed || len(resp.Warnings) != 1 {
				t.Fatalf("response %+v, want allowed with a warning", resp)
			}
		}
	}
	send(100)
	if len(lines) != 1 {
		t.Fatalf("%d lines for 100 undecodable pods in one interval, want 1: %q", len(lines), lines)
	}
	clk.SetTime(clk.Now().Add(DecodeLogInterval - time.Millisecond))
	send(1)
	if len(lines) != 1 {
		t.Fatalf("%d lines before the interval passed, want 1", len(lines))
	}
	clk.SetTime(clk.Now().Add(time.Millisecond))
	send(1)
	if len(lines) != 2 || !strings.Contains(lines[1], `"suppressedSinceLast"=100`) {
		t.Fatalf("lines %q, want a second one counting 100 left out", lines)
	}
}

// TestHugeVPADenialBounded: a VPA with 100,000 invalid container policies is
// denied with the first errors and a count of the rest.
func TestHugeVPADenialBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","resource":{"group":"autoscaling.k8s.io","version":"v1","resource":"verticalpodautoscalers"},"operation":"CREATE",
"object":{"apiVersion":"autoscaling.k8s.io/v1","kind":"VerticalPodAutoscaler","metadata":{"name":"v"},"spec":{"targetRef":{"kind":"Deployment","name":"web"},"updatePolicy":{"updateMode":"Auto"},"resourcePolicy":{"containerPolicies":[`)
	for i := 0; i < 100_000; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{}`)
	}
	b.WriteString(`]}}}}}`)
	rec := post(t, newTestServer(), "POST", "application/json", b.String())
	resp := admitted(t, rec)
	if resp.Allowed || resp.Result == nil || !strings.Contains(resp.Result.Message, "and 99980 more errors") {
		t.Fatalf("response %.500v, want a denial counting the errors left out", resp)
	}
	if len(resp.Warnings) != 1 {
		t.Errorf("warnings %q, want the one for Auto", resp.Warnings)
	}
	if rec.Body.Len() > 16<<10 {
		t.Errorf("response of %d bytes", rec.Body.Len())
	}
}

func TestBoundedWarnings(t *testing.T) {
	long := strings.Repeat("x", 10*maxWarning)
	many := make([]string, 3*maxListed)
	for i := range many {
		many[i] = "w"
	}
	tests := map[string]struct {
		in      []string
		wantLen int
		wantEnd string
	}{
		"few":     {in: []string{"a", "b"}, wantLen: 2, wantEnd: "b"},
		"long":    {in: []string{long}, wantLen: 1, wantEnd: "..."},
		"many":    {in: many, wantLen: maxListed + 1, wantEnd: "and 40 more warnings"},
		"no list": {in: nil, wantLen: 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := boundedWarnings(tc.in)
			if len(got) != tc.wantLen || (tc.wantLen > 0 && !strings.HasSuffix(got[len(got)-1], tc.wantEnd)) {
				t.Errorf("got %d warnings ending %q", len(got), got[len(got)-1:])
			}
			for _, w := range got {
				if len(w) > maxWarning+3 {
					t.Errorf("warning of %d bytes", len(w))
				}
			}
		})
	}
}

// TestVPADecodedAsTheAPIServerDoes: a key that differs from a field only in
// case is not that field, as in the API server (encoding/json would merge
// it into spec and deny the VPA).
func TestVPADecodedAsTheAPIServerDoes(t *testing.T) {
	body := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","resource":{"group":"autoscaling.k8s.io","version":"v1","resource":"verticalpodautoscalers"},"operation":"CREATE",
"object":{"apiVersion":"autoscaling.k8s.io/v1","kind":"VerticalPodAutoscaler","metadata":{"name":"v"},"spec":{"targetRef":{"kind":"Deployment","name":"web"},"updatePolicy":{"updateMode":"Recreate"}},
"SPEC":{"updatePolicy":{"updateMode":"Bogus"}}}}}`
	if resp := admitted(t, post(t, newTestServer(), "POST", "application/json", body)); !resp.Allowed {
		t.Errorf("denied: %v", resp.Result)
	}
}
