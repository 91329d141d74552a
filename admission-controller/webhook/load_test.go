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
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openvpa/openvpa/admission-controller/pod"
	"github.com/openvpa/openvpa/admission-controller/vpa"
	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/features"
	"github.com/openvpa/openvpa/pkg/limitrange"
)

type oneVPA struct{ v *vpav1.VerticalPodAutoscaler }

func (o oneVPA) ControllingVPA(context.Context, *pod.Decoded) (*vpav1.VerticalPodAutoscaler, error) {
	return o.v, nil
}

type noLimits struct{}

func (noLimits) LimitRanges(string) (limitrange.Merged, error) {
	return limitrange.Merged{}, nil
}

const loadReview = `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"group":"","version":"v1","kind":"Pod"},
"resource":{"group":"","version":"v1","resource":"pods"},"namespace":"ns","operation":"CREATE",
"object":{"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"web-","labels":{"app":"web"}},"spec":{"containers":[
{"name":"app","image":"x","resources":{"requests":{"cpu":"100m","memory":"100Mi"},"limits":{"cpu":"200m","memory":"200Mi"}}},
{"name":"sidecar","image":"y","resources":{"requests":{"cpu":"10m"}}}]}}}}`

// loopback is the real webhook Server, with the default timeouts, behind
// crypto/tls on 127.0.0.1.
type loopback struct {
	url  string
	pool *x509.CertPool
}

func startLoopback(b *testing.B) *loopback {
	mode := vpav1.UpdateModeInitial
	v := &vpav1.VerticalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"},
		Spec: vpav1.VerticalPodAutoscalerSpec{UpdatePolicy: &vpav1.PodUpdatePolicy{UpdateMode: &mode}},
		Status: vpav1.VerticalPodAutoscalerStatus{Recommendation: &vpav1.RecommendedPodResources{ContainerRecommendations: []vpav1.RecommendedContainerResources{
			{ContainerName: "app", Target: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("200Mi")}},
		}}}}
	return serveLoopback(b, NewServer(pod.NewHandler(oneVPA{v}, noLimits{}), vpa.NewValidator(features.NewGate()), NewMetrics(nil), nil))
}

// serveLoopback serves handler as the admission controller serves its
// Server: NewHTTPServer with the default timeouts, behind crypto/tls on
// 127.0.0.1, with a fresh self-signed certificate.
func serveLoopback(b *testing.B, handler http.Handler) *loopback {
	dir := b.TempDir()
	if err := GenerateSelfSigned(dir, []string{"127.0.0.1"}, time.Hour); err != nil {
		b.Fatal(err)
	}
	certs, err := NewCertWatcher(filepath.Join(dir, ServerCertFile), filepath.Join(dir, ServerKeyFile), filepath.Join(dir, CACertFile))
	if err != nil {
		b.Fatal(err)
	}
	tlsCfg, err := TLSConfig("tls1_2", "", certs.GetCertificate)
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := NewHTTPServer(context.Background(), handler, tlsCfg, HTTPOptions{
		ReadTimeout: DefaultReadTimeout, ReadHeaderTimeout: DefaultReadHeaderTimeout, WriteTimeout: DefaultWriteTimeout, IdleTimeout: DefaultIdleTimeout,
		ErrorLog: log.New(io.Discard, "", 0),
	})
	go func() { _ = srv.Serve(tls.NewListener(ln, tlsCfg)) }()
	b.Cleanup(func() { _ = srv.Close() })
	ca, err := os.ReadFile(filepath.Join(dir, CACertFile))
	if err != nil {
		b.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	return &loopback{url: "https://" + ln.Addr().String(), pool: pool}
}

// BenchmarkLoopbackTLS sends pod reviews through TLS and HTTP/1.1 on
// loopback from 1 and 4 concurrent clients (one keep-alive connection each,
// as the API server keeps them), reporting requests per second and p50/p99
// latency over every request.
func BenchmarkLoopbackTLS(b *testing.B) {
	lb := startLoopback(b)
	for _, clients := range []int{1, 4} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) { lb.honest(b, clients) })
	}
}

// BenchmarkHostileLoad runs 4 clients at full speed, as
// BenchmarkLoopbackTLS does, alone and while 40 hostile connections are
// open: each announces a 5 MiB review and sends one byte of it every 100 ms,
// and connects again when the server cuts it off (after --read-timeout).
// Compare the p99 of the two.
func BenchmarkHostileLoad(b *testing.B) {
	lb := startLoopback(b)
	for _, hostile := range []int{0, 40} {
		b.Run(fmt.Sprintf("hostile=%d", hostile), func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			started := make(chan struct{}, hostile)
			var cutOff atomic.Int64
			for i := 0; i < hostile; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					lb.slowClient(ctx, started, &cutOff)
				}()
			}
			defer func() {
				cancel()
				wg.Wait()
			}()
			for i := 0; i < hostile; i++ {
				select {
				case <-started:
				case <-time.After(30 * time.Second):
					b.Fatalf("only %d hostile connections opened", i)
				}
			}
			lb.honest(b, 4)
			b.ReportMetric(float64(cutOff.Load()), "cut-off")
		})
	}
}

// slowClient keeps one slow connection open until ctx ends, reconnecting
// when the server closes it; it signals started after its first headers.
func (lb *loopback) slowClient(ctx context.Context, started chan<- struct{}, cutOff *atomic.Int64) {
	first := true
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for ctx.Err() == nil {
		d := tls.Dialer{Config: &tls.Config{RootCAs: lb.pool, MinVersion: tls.VersionTLS12}}
		c, err := d.DialContext(ctx, "tcp", strings.TrimPrefix(lb.url, "https://"))
		if err != nil {
			continue
		}
		_, err = fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", MaxBodyBytes)
		if first && err == nil {
			started <- struct{}{}
			first = false
		}
		for err == nil {
			select {
			case <-ctx.Done():
				err = ctx.Err()
			case <-tick.C:
				_, err = c.Write([]byte{' '})
			}
		}
		if ctx.Err() == nil {
			cutOff.Add(1)
		}
		_ = c.Close()
	}
}

// honest posts the small loadReview (see post).
func (lb *loopback) honest(b *testing.B, clients int) {
	lb.post(b, clients, []byte(loadReview))
}

// post runs b.N reviews of body from clients concurrent clients and
// reports requests per second and p50/p99 latency.
func (lb *loopback) post(b *testing.B, clients int, body []byte) {
	// Each client sends its reviews one after the other over its own
	// keep-alive connection, straight through a Transport (an http.Client
	// adds redirect and timeout bookkeeping the API server's webhook client
	// does not have).
	transports := make([]*http.Transport, clients)
	for c := range transports {
		transports[c] = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: lb.pool, MinVersion: tls.VersionTLS12},
			MaxIdleConnsPerHost: 1, ForceAttemptHTTP2: false, DisableCompression: true}
		defer transports[c].CloseIdleConnections()
	}
	var mu sync.Mutex
	durations := make([]time.Duration, 0, b.N)
	var wg sync.WaitGroup
	per := b.N / clients
	if per == 0 {
		per = 1
	}
	reqs := make([]*http.Request, clients)
	for c := range reqs {
		req, err := http.NewRequest(http.MethodPost, lb.url, nil)
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.ContentLength = int64(len(body))
		reqs[c] = req
		// Open the connection before timing.
		if err := roundTrip(transports[c], req, body, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	start := time.Now()
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := make([]time.Duration, 0, per)
			req := reqs[c]
			buf := make([]byte, 4096)
			for i := 0; i < per; i++ {
				t0 := time.Now()
				if err := roundTrip(transports[c], req, body, buf); err != nil {
					b.Error(err)
					return
				}
				local = append(local, time.Since(t0))
			}
			mu.Lock()
			durations = append(durations, local...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if len(durations) == 0 {
		return
	}
	slices.Sort(durations)
	b.ReportMetric(float64(len(durations))/elapsed.Seconds(), "req/s")
	b.ReportMetric(float64(durations[len(durations)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(durations[len(durations)*99/100].Nanoseconds())/1e3, "p99-µs")
}

// roundTrip posts body with req (reused, one request at a time) and reads
// the whole response into buf. The body is an io.NopCloser over a
// bytes.Reader, which net/http knows to be in memory, so headers and body go
// out in one write, as the API server's client sends them.
func roundTrip(t http.RoundTripper, req *http.Request, body, buf []byte) error {
	req.Body = io.NopCloser(bytes.NewReader(body))
	resp, err := t.RoundTrip(req)
	if err != nil {
		return err
	}
	if buf == nil {
		buf = make([]byte, 4096)
	}
	for {
		_, err := resp.Body.Read(buf)
		if err == io.EOF {
			break
		}
		if err != nil {
			resp.Body.Close()
			return err
		}
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}
