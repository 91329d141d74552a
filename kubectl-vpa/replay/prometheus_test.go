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

package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openvpa/openvpa/kubectl-vpa/replay/replaytest"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files under testdata/")

// fakeProm answers the history queries from a replaytest.History as
// Prometheus's HTTP API does.
type fakeProm struct {
	t    *testing.T
	h    replaytest.History
	mu   sync.Mutex
	seen []string
}

func (f *fakeProm) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		f.t.Error(err)
	}
	q := r.Form.Get("query")
	f.mu.Lock()
	f.seen = append(f.seen, q)
	f.mu.Unlock()
	unix := func(name string) time.Time {
		v, err := strconv.ParseFloat(r.Form.Get(name), 64)
		if err != nil {
			f.t.Errorf("%s=%q: %v", name, r.Form.Get(name), err)
		}
		return time.Unix(int64(v), 0).UTC()
	}
	metric := func(l map[string]string) string {
		b, _ := json.Marshal(l)
		return string(b)
	}
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/api/v1/query_range":
		series, err := f.h.Answer(q, unix("start"), unix("end"))
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"status":"error","errorType":"bad_data","error":%q}`, err.Error())
			return
		}
		var out []string
		for _, s := range series {
			vals := make([]string, len(s.Times))
			for i := range s.Times {
				vals[i] = fmt.Sprintf(`[%d,"%s"]`, s.Times[i].Unix(), strconv.FormatFloat(s.Values[i], 'g', -1, 64))
			}
			out = append(out, fmt.Sprintf(`{"metric":%s,"values":[%s]}`, metric(s.Labels), strings.Join(vals, ",")))
		}
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"matrix","result":[%s]}}`, strings.Join(out, ","))
	case "/api/v1/query":
		at := unix("time")
		// A range selector (last_over_time) sees every pod of the history.
		var series []map[string]string
		if strings.HasPrefix(q, "last_over_time(") {
			seen := map[string]bool{}
			for _, p := range f.h.Pods {
				for _, l := range f.h.LabelSeries(p.To) {
					if n := l["kubernetes_pod_name"]; !seen[n] {
						seen[n] = true
						series = append(series, l)
					}
				}
			}
		} else {
			series = f.h.LabelSeries(at)
		}
		var out []string
		for _, l := range series {
			out = append(out, fmt.Sprintf(`{"metric":%s,"value":[%d,"1"]}`, metric(l), at.Unix()))
		}
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[%s]}}`, strings.Join(out, ","))
	default:
		http.NotFound(w, r)
	}
}

// replayEnd is the fake's now: the history ends an hour before it.
var replayEnd = time.Date(2026, 3, 20, 0, 0, 0, 0, time.UTC)

// runReplay runs the command and returns what it reports (reportOf).
func runReplay(t *testing.T, o *CommandOptions, args ...string) map[string]string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	var so, se bytes.Buffer
	if err := RunCommand(context.Background(), o, Usage, append(args, "--out", out, "--quiet"), &so, &se); err != nil {
		t.Fatalf("replay %v: %v\n%s", args, err, se.String())
	}
	return reportOf(t, so.String(), out)
}

// reportOf is what a replay reports, without its source's name and the
// times it took: what the same history must give from any source.
func reportOf(t *testing.T, stdout, out string) map[string]string {
	t.Helper()
	var lines []string
	for i, l := range strings.Split(stdout, "\n") {
		if i == 0 || strings.HasPrefix(l, "wrote ") || strings.HasPrefix(l, "done in ") {
			continue
		}
		lines = append(lines, l)
	}
	r := map[string]string{"table": strings.Join(lines, "\n")}
	for _, f := range []string{"summary.json", "days.csv"} {
		b, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		r[f] = string(b)
	}
	return r
}

func TestPrometheusReplayEqualsCSV(t *testing.T) {
	for _, tc := range []struct {
		name     string
		workload string
		args     []string
		golden   string
	}{
		{name: "deployment", workload: "deployment/web", args: []string{"deployment/web"}, golden: "prometheus-summary.json"},
		{name: "pod selector with a range labels metric", workload: "pods{app=web}",
			args: []string{"--pod-selector", "app=web", "--metric-for-pod-labels", `up{job="kubernetes-pods"}[12d]`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := replaytest.Synthetic("shop", replayEnd.Add(-time.Hour), 10)
			h.Workload = tc.workload
			fake := &fakeProm{t: t, h: h}
			srv := httptest.NewServer(fake)
			t.Cleanup(srv.Close)

			trace := filepath.Join(t.TempDir(), "trace.csv")
			var csv bytes.Buffer
			if err := h.WriteCSV(&csv); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(trace, csv.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			want := runReplay(t, NewCommandOptions(), "--trace", trace)

			o := NewCommandOptions()
			o.Prometheus.Now = func() time.Time { return replayEnd }
			got := runReplay(t, o, append([]string{"--prometheus-url", srv.URL, "-n", "shop",
				"--history-length", "12d", "--history-resolution", "5m"}, tc.args...)...)
			for _, k := range []string{"table", "summary.json", "days.csv"} {
				if got[k] != want[k] {
					t.Errorf("%s from Prometheus differs from the CSV's:\n--- Prometheus\n%s\n--- CSV\n%s", k, head(got[k]), head(want[k]))
				}
			}
			for _, q := range fake.seen {
				if strings.Contains(q, "canary") {
					t.Errorf("a query selects the other workload's pods: %s", q)
				}
			}

			// The history exercises what the report counts: updates and OOM kills.
			var sum ReportSummary
			if err := json.Unmarshal([]byte(got["summary.json"]), &sum); err != nil {
				t.Fatal(err)
			}
			if s := sum.Estimator; s.WorkloadDays < 8 || s.ChangesPerDayMean == 0 || s.OOMEventsPerDayMean == 0 {
				t.Errorf("summary %+v: want at least 8 scored days, some changes and some OOM kills", s)
			}
			if tc.golden != "" {
				golden(t, filepath.Join("testdata", tc.golden), got["summary.json"])
			}
		})
	}
}

func head(s string) string {
	lines := strings.SplitN(s, "\n", 12)
	if len(lines) > 11 {
		lines = append(lines[:11], "...")
	}
	return strings.Join(lines, "\n")
}

func golden(t *testing.T, file, got string) {
	t.Helper()
	if *updateGolden {
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (run with -update to accept):\n got %s\nwant %s", file, got, want)
	}
}

func TestPrometheusErrors(t *testing.T) {
	h := replaytest.Synthetic("shop", replayEnd.Add(-time.Hour), 10)
	working := httptest.NewServer(&fakeProm{t: t, h: h})
	t.Cleanup(working.Close)
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	// hanging answers nothing until the client gives up (or the test ends).
	stop := make(chan struct{})
	hanging := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm() // the server notices a closed connection once the body is read
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(hanging.Close)
	t.Cleanup(func() { close(stop) }) // runs first
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "upstream unavailable", http.StatusServiceUnavailable)
	}))
	t.Cleanup(failing.Close)

	base := func(url string) []string {
		return []string{"--prometheus-url", url, "-n", "shop", "--history-length", "12d", "--history-resolution", "5m"}
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"server down", append(base(closed.URL), "deployment/web"), []string{closed.URL, "is Prometheus running and reachable"}},
		{"server failing", append(base(failing.URL), "deployment/web"), []string{failing.URL, "503"}},
		{"query timeout", append(base(hanging.URL), "deployment/web", "--prometheus-query-timeout", "200ms"), []string{hanging.URL, "no answer within the query timeout 200ms"}},
		{"too many samples", append(base(working.URL), "deployment/web", "--max-samples", "1000"), []string{"too many samples", "passed 1000 points"}},
		{"no such workload", append(base(working.URL), "deployment/api"), []string{"no usage of deployment/api in namespace shop"}},
		{"selector matches no pod", append(base(working.URL), "--pod-selector", "app=api"), []string{`no pod of namespace shop has labels matching "app=api"`, `up{job="kubernetes-pods"}[12d]`}},
		{"no namespace", []string{"--prometheus-url", working.URL, "deployment/web"}, []string{"needs --namespace"}},
		{"no workload", base(working.URL), []string{"needs the workload"}},
		{"both workloads", append(base(working.URL), "deployment/web", "--pod-selector", "app=web"), []string{"not both"}},
		{"unknown kind", append(base(working.URL), "rollout/web"), []string{`unknown kind "rollout"`}},
		{"bad selector", append(base(working.URL), "--pod-selector", "app=(web"), []string{"--pod-selector"}},
		{"trace too", append(base(working.URL), "deployment/web", "--trace", "x.csv"), []string{"give one source"}},
		{"bad url", []string{"--prometheus-url", "prometheus:9090", "-n", "shop", "deployment/web"}, []string{"--prometheus-url must be an http or https URL"}},
		{"argument without prometheus", []string{"--trace", "x.csv", "deployment/web"}, []string{"goes with --prometheus-url"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := NewCommandOptions()
			o.Prometheus.Now = func() time.Time { return replayEnd }
			var so, se bytes.Buffer
			err := RunCommand(context.Background(), o, Usage, append(tc.args, "--out", filepath.Join(t.TempDir(), "out"), "--quiet"), &so, &se)
			if err == nil {
				t.Fatalf("no error; stdout:\n%s", so.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestWorkloadPodRegex(t *testing.T) {
	for _, tc := range []struct {
		workload    string
		match, miss []string
	}{
		{"deployment/web", []string{"web-5d8f7c9b4-x2k9q", "web-6b9-m4n2p"}, []string{"web-canary-0", "web-api-5d8f7c9b4-x2k9q", "web-5d8f7c9b4-x2k9", "web-x2k9q", "xweb-5d8f7c9b4-x2k9q"}},
		{"deploy/web", []string{"web-5d8f7c9b4-x2k9q"}, nil},
		{"statefulset/db", []string{"db-0", "db-12"}, []string{"db-a", "db-0-x2k9q", "db"}},
		{"daemonset/agent", []string{"agent-x2k9q"}, []string{"agent-5d8f7c9b4-x2k9q", "agent-0"}},
		{"job/migrate", []string{"migrate-x2k9q"}, []string{"migrate"}},
		{"cronjob/backup", []string{"backup-29012345-x2k9q"}, []string{"backup-x2k9q"}},
		{"pod/web.v2-0", []string{"web.v2-0"}, []string{"webxv2-0"}},
	} {
		t.Run(tc.workload, func(t *testing.T) {
			expr, err := workloadPodRegex(tc.workload)
			if err != nil {
				t.Fatal(err)
			}
			re := regexp.MustCompile("^(?:" + expr + ")$")
			for _, n := range tc.match {
				if !re.MatchString(n) {
					t.Errorf("%s does not match %s", expr, n)
				}
			}
			for _, n := range tc.miss {
				if re.MatchString(n) {
					t.Errorf("%s matches %s", expr, n)
				}
			}
		})
	}
	for _, bad := range []string{"web", "deployment/", "deployment/Web", "deployment/a/b"} {
		if _, err := workloadPodRegex(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
