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
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/openvpa/openvpa/kubectl-vpa/replay/replaytest"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files under testdata/")

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
// times it took: what the same history must give from any source ("table",
// "summary.json", "days.csv"); and apart, the recommendation after the
// history ("recommendation" from the table, and recommendation.json when
// written), which a history from Prometheus computes pod by pod.
func reportOf(t *testing.T, stdout, out string) map[string]string {
	t.Helper()
	var lines, rec []string
	inRec := false
	for i, l := range strings.Split(stdout, "\n") {
		switch {
		case i == 0 || strings.HasPrefix(l, "wrote ") || strings.HasPrefix(l, "done in "):
			continue
		case strings.HasPrefix(l, RecommendationHeading):
			inRec = true
		case l == "":
			inRec = false
		}
		if inRec {
			rec = append(rec, l)
		} else {
			lines = append(lines, l)
		}
	}
	r := map[string]string{"table": strings.Join(lines, "\n"), "recommendation": strings.Join(rec, "\n")}
	for _, f := range []string{"summary.json", "days.csv", RecommendationFile} {
		b, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			if f == RecommendationFile && os.IsNotExist(err) {
				continue
			}
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
			fake := &replaytest.Prometheus{Histories: []replaytest.History{h}}
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
			for _, q := range fake.Queries() {
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

			// The recommendation after the history: from Prometheus, pod by
			// pod as the recommender reads it; from the CSV, whose containers
			// hold the highest of the pods at each step, as one pod's.
			r, err := NewCommandOptions().Recommender()
			if err != nil {
				t.Fatal(err)
			}
			wantRec := r.Report(&Workload{Name: tc.workload, Pods: h.PodHistories()})
			var gotRec RecommendationReport
			if err := json.Unmarshal([]byte(got[RecommendationFile]), &gotRec); err != nil {
				t.Fatalf("%s: %v", RecommendationFile, err)
			}
			if wantRec.Pods != 3 || len(wantRec.Containers) != 2 {
				t.Fatalf("the fixture's recommendation %+v: want 3 pods and 2 containers", wantRec)
			}
			if !apiequality.Semantic.DeepEqual(gotRec, wantRec) {
				t.Errorf("%s from Prometheus:\n%s\nwant the recommendation after each pod's history, %+v", RecommendationFile, got[RecommendationFile], wantRec)
			}
			var csvRec RecommendationReport
			if err := json.Unmarshal([]byte(want[RecommendationFile]), &csvRec); err != nil {
				t.Fatalf("%s of the CSV: %v", RecommendationFile, err)
			}
			if csvRec.Pods != 0 || apiequality.Semantic.DeepEqual(csvRec.Containers, gotRec.Containers) {
				t.Errorf("the CSV's recommendation %+v: want one of the highest usage fed as one pod, not the pods' %+v", csvRec, gotRec)
			}
			if !strings.Contains(got["recommendation"], "each of 3 pods fed on its own") {
				t.Errorf("the table's recommendation does not say how the history went in:\n%s", got["recommendation"])
			}
			if tc.golden != "" {
				golden(t, filepath.Join("testdata", "prometheus-recommendation.json"), got[RecommendationFile])
				golden(t, filepath.Join("testdata", "prometheus-recommendation.txt"), got["recommendation"]+"\n")
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
	working := httptest.NewServer(&replaytest.Prometheus{Histories: []replaytest.History{h}})
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
