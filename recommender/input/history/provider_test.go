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
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/openvpa/openvpa/recommender/model"
)

func testConfig(addr string) Config {
	return Config{
		Address: addr, CadvisorJobName: "kubernetes-cadvisor", Length: 8 * 24 * time.Hour, Resolution: time.Hour,
		CPUMetric: "container_cpu_usage_seconds_total", MemoryMetric: "container_memory_working_set_bytes",
		QueryTimeout: time.Minute, PodLabelsMetric: `up{job="kubernetes-pods"}`, PodLabelPrefix: "pod_label_",
		PodNamespaceLabel: "kubernetes_namespace", PodNameLabel: "kubernetes_pod_name",
		ContainerNamespaceLabel: "namespace", ContainerPodNameLabel: "pod_name", ContainerNameLabel: "name",
	}
}

func TestQueries(t *testing.T) {
	c := testConfig("http://p")
	for _, tc := range []struct{ name, got, want string }{
		{"cpu", c.CPUQuery("shop"), `rate(container_cpu_usage_seconds_total{job="kubernetes-cadvisor", pod_name=~".+", name!="POD", name!="", namespace="shop"}[1h])`},
		{"memory", c.MemoryQuery("shop"), `container_memory_working_set_bytes{job="kubernetes-cadvisor", pod_name=~".+", name!="POD", name!="", namespace="shop"}`},
		{"labels", c.LabelsQuery("shop"), `up{job="kubernetes-pods", kubernetes_namespace="shop"}`},
	} {
		if tc.got != tc.want {
			t.Errorf("%s query\n got %s\nwant %s", tc.name, tc.got, tc.want)
		}
	}
	for metric, want := range map[string]string{
		"kube_pod_labels":              `kube_pod_labels{kubernetes_namespace="a"}`,
		"kube_pod_labels{}":            `kube_pod_labels{kubernetes_namespace="a"}`,
		`up{job="pods"}[8d]`:           `last_over_time(up{job="pods", kubernetes_namespace="a"}[8d])`,
		`{__name__="kube_pod_labels"}`: `{__name__="kube_pod_labels", kubernetes_namespace="a"}`,
	} {
		c.PodLabelsMetric = metric
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", metric, err)
		}
		if got := c.LabelsQuery("a"); got != want {
			t.Errorf("labels query of %s = %s, want %s", metric, got, want)
		}
	}
	c.CadvisorJobName = ""
	if got := c.MemoryQuery("a"); strings.Contains(got, "job=") {
		t.Errorf("an empty job name still selects on job: %s", got)
	}
}

// fakeProm serves /api/v1/query_range and /api/v1/query from generated
// series, refusing range queries of more than maxSteps+1 points per series
// with Prometheus's "too many samples" error.
type fakeProm struct {
	t        *testing.T
	maxSteps int
	down     bool
	mu       sync.Mutex
	ranges   [][2]time.Time
	auth     []string
}

func (f *fakeProm) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	down := f.down
	f.mu.Unlock()
	if down {
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
		return
	}
	if err := r.ParseForm(); err != nil {
		f.t.Error(err)
	}
	q := r.Form.Get("query")
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/api/v1/query_range":
		start, _ := strconv.ParseFloat(r.Form.Get("start"), 64)
		end, _ := strconv.ParseFloat(r.Form.Get("end"), 64)
		step, _ := strconv.ParseFloat(r.Form.Get("step"), 64)
		from, to := time.Unix(int64(start), 0), time.Unix(int64(end), 0)
		f.mu.Lock()
		f.ranges = append(f.ranges, [2]time.Time{from, to})
		f.mu.Unlock()
		if steps := int((end - start) / step); f.maxSteps > 0 && steps > f.maxSteps {
			w.WriteHeader(http.StatusUnprocessableEntity)
			fmt.Fprint(w, `{"status":"error","errorType":"execution","error":"query processing would load too many samples into memory in query execution"}`)
			return
		}
		var series []string
		for _, pod := range []string{"web-0", "web-1"} {
			var vals []string
			for t := start; t <= end; t += step {
				v := 0.25 // cores
				if strings.HasPrefix(q, "container_memory") {
					v = float64(100<<20) + float64(int64(t)%86400)
				}
				vals = append(vals, fmt.Sprintf(`[%s,"%s"]`, strconv.FormatFloat(t, 'f', -1, 64), strconv.FormatFloat(v, 'f', -1, 64)))
			}
			series = append(series, fmt.Sprintf(`{"metric":{"namespace":"shop","pod_name":%q,"name":"app"},"values":[%s]}`, pod, strings.Join(vals, ",")))
		}
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"matrix","result":[%s]}}`, strings.Join(series, ","))
	case "/api/v1/query":
		ts := r.Form.Get("time")
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[`+
			`{"metric":{"__name__":"up","kubernetes_namespace":"shop","kubernetes_pod_name":"web-0","pod_label_app":"web","pod_label_tier":"front"},"value":[%s,"1"]}]}}`, ts)
	default:
		http.NotFound(w, r)
	}
}

func newFake(t *testing.T, maxSteps int) (*fakeProm, *httptest.Server) {
	f := &fakeProm{t: t, maxSteps: maxSteps}
	s := httptest.NewServer(f)
	t.Cleanup(s.Close)
	return f, s
}

var now = time.Date(2026, 3, 10, 14, 27, 0, 0, time.UTC)

func TestFetch(t *testing.T) {
	_, srv := newFake(t, 0)
	p, err := NewProvider(testConfig(srv.URL), clocktesting.NewFakePassiveClock(now), nil)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := p.Fetch(context.Background(), "shop")
	if err != nil {
		t.Fatal(err)
	}
	end := now.Truncate(time.Hour)
	if !ns.End.Equal(end) || !ns.Start.Equal(end.Add(-8*24*time.Hour)) {
		t.Errorf("range %v..%v, want 8 days ending at %v", ns.Start, ns.End, end)
	}
	if len(ns.Pods) != 2 {
		t.Fatalf("pods = %d, want 2", len(ns.Pods))
	}
	web0 := ns.Pods["web-0"]
	if web0.Labels["app"] != "web" || web0.Labels["tier"] != "front" || len(web0.Labels) != 2 {
		t.Errorf("web-0 labels = %v, want app=web tier=front (prefix stripped, other labels dropped)", web0.Labels)
	}
	if ns.Pods["web-1"].Labels != nil {
		t.Errorf("web-1 has labels %v though the labels metric has none", ns.Pods["web-1"].Labels)
	}
	c := web0.Containers["app"]
	if len(c.CPU) != 193 || len(c.Memory) != 193 {
		t.Fatalf("points: cpu %d memory %d, want 193 each (8 days hourly, both ends)", len(c.CPU), len(c.Memory))
	}
	if c.CPU[0].Value != model.CPUAmountFromCores(0.25) || !c.CPU[0].Time.Equal(ns.Start) {
		t.Errorf("first CPU point %+v, want 250m at %v", c.CPU[0], ns.Start)
	}
	if ns.Queries != 3 {
		t.Errorf("queries = %d, want 3", ns.Queries)
	}
}

// TestFetchSplitsQueriesPrometheusRefuses: a range over more points than the
// server accepts is split until each part is served, and the result is the
// same as one query's.
func TestFetchSplitsQueriesPrometheusRefuses(t *testing.T) {
	_, whole := newFake(t, 0)
	fake, limited := newFake(t, 40)
	clk := clocktesting.NewFakePassiveClock(now)
	pw, _ := NewProvider(testConfig(whole.URL), clk, nil)
	metrics := NewMetrics(nil)
	pl, _ := NewProvider(testConfig(limited.URL), clk, metrics)
	want, err := pw.Fetch(context.Background(), "shop")
	if err != nil {
		t.Fatal(err)
	}
	got, err := pl.Fetch(context.Background(), "shop")
	if err != nil {
		t.Fatal(err)
	}
	for name, pod := range want.Pods {
		for cname, c := range pod.Containers {
			g := got.Pods[name].Containers[cname]
			if fmt.Sprint(g.CPU) != fmt.Sprint(c.CPU) || fmt.Sprint(g.Memory) != fmt.Sprint(c.Memory) {
				t.Errorf("%s/%s: split fetch differs from the whole one", name, cname)
			}
		}
	}
	served := 0
	for _, r := range fake.ranges {
		if steps := int(r[1].Sub(r[0]) / time.Hour); steps <= 40 {
			served++
		}
	}
	if served < 2*5 {
		t.Errorf("%d range queries served, want at least 5 parts per resource for 192 steps at 40 per query", served)
	}
	if got.Queries <= want.Queries {
		t.Errorf("queries = %d, want more than the unsplit %d", got.Queries, want.Queries)
	}
}

func TestFetchChunksLongRanges(t *testing.T) {
	fake, srv := newFake(t, 0)
	cfg := testConfig(srv.URL)
	cfg.Resolution = time.Minute // 11,520 points: more than Prometheus serves per series
	p, _ := NewProvider(cfg, clocktesting.NewFakePassiveClock(now), nil)
	ns, err := p.Fetch(context.Background(), "shop")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range fake.ranges {
		if n := int(r[1].Sub(r[0])/time.Minute) + 1; n > MaxPointsPerSeries {
			t.Errorf("a query asked for %d points per series", n)
		}
	}
	c := ns.Pods["web-0"].Containers["app"]
	if len(c.CPU) != 8*24*60+1 {
		t.Errorf("cpu points = %d, want %d", len(c.CPU), 8*24*60+1)
	}
	for i := 1; i < len(c.CPU); i++ {
		if !c.CPU[i].Time.After(c.CPU[i-1].Time) {
			t.Fatalf("points out of order or repeated at %d: %v then %v", i, c.CPU[i-1].Time, c.CPU[i].Time)
		}
	}
}

func TestAuth(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		set  func(*Config)
		want string
	}{
		"none":       {func(*Config) {}, ""},
		"basic":      {func(c *Config) { c.Username, c.Password = "u", "p" }, "Basic dTpw"},
		"token":      {func(c *Config) { c.BearerToken = "abc" }, "Bearer abc"},
		"token file": {func(c *Config) { c.BearerTokenFile = tokenFile }, "Bearer from-file"},
	} {
		t.Run(name, func(t *testing.T) {
			fake, srv := newFake(t, 0)
			cfg := testConfig(srv.URL)
			tc.set(&cfg)
			p, err := NewProvider(cfg, clocktesting.NewFakePassiveClock(now), nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.Fetch(context.Background(), "shop"); err != nil {
				t.Fatal(err)
			}
			for _, a := range fake.auth {
				if a != tc.want {
					t.Fatalf("Authorization = %q, want %q", a, tc.want)
				}
			}
		})
	}
}

func TestFetchErrorNamesTheServer(t *testing.T) {
	fake, srv := newFake(t, 0)
	fake.down = true
	p, _ := NewProvider(testConfig(srv.URL), clocktesting.NewFakePassiveClock(now), nil)
	_, err := p.Fetch(context.Background(), "shop")
	if err == nil || !strings.Contains(err.Error(), srv.URL) {
		t.Fatalf("error = %v, want one naming %s", err, srv.URL)
	}
}

func TestValidate(t *testing.T) {
	ok := testConfig("http://prometheus:9090")
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mutate := range map[string]func(*Config){
		"no scheme":       func(c *Config) { c.Address = "prometheus:9090" },
		"zero resolution": func(c *Config) { c.Resolution = 0 },
		"bad metric":      func(c *Config) { c.CPUMetric = "rate(x[1m])" },
		"bad labels":      func(c *Config) { c.PodLabelsMetric = "sum by (pod) (up)" },
		"bad label name":  func(c *Config) { c.PodNameLabel = "pod-name" },
		"two auths":       func(c *Config) { c.Username, c.BearerToken = "u", "t" },
	} {
		c := ok
		mutate(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
