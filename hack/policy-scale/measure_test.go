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

package main

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

const exposition = `# HELP vpa_recommender_policy_vpa_writes_total Writes of managed VPAs by the policy controller.
# TYPE vpa_recommender_policy_vpa_writes_total counter
vpa_recommender_policy_vpa_writes_total{verb="create"} 10000
vpa_recommender_policy_vpa_writes_total{verb="status"} 3
vpa_recommender_policy_reconcile_errors_total 0
process_resident_memory_bytes 1.2345e+08
go_memstats_heap_inuse_bytes 5.5e+07 1733356800000
some_latency_seconds_bucket{le="0.1"} 4
some_latency_seconds_sum{step="a b",quoted="x\"}y"} 1.5
`

func TestParseExposition(t *testing.T) {
	s, err := parseExposition(strings.NewReader(exposition))
	if err != nil {
		t.Fatal(err)
	}
	want := sample{
		`vpa_recommender_policy_vpa_writes_total{verb="create"}`: 10000,
		`vpa_recommender_policy_vpa_writes_total{verb="status"}`: 3,
		`vpa_recommender_policy_reconcile_errors_total`:          0,
		`process_resident_memory_bytes`:                          1.2345e8,
		`go_memstats_heap_inuse_bytes`:                           5.5e7,
		`some_latency_seconds_sum{step="a b",quoted="x\"}y"}`:    1.5,
	}
	if !maps.Equal(s, want) {
		t.Errorf("parseExposition:\n got %v\nwant %v", s, want)
	}
}

func TestByLabel(t *testing.T) {
	s := sample{
		`vpa_recommender_policy_vpa_writes_total{verb="create"}`:               10000,
		`vpa_recommender_policy_vpa_writes_total{verb="update"}`:               0,
		`vpa_recommender_policy_vpa_writes_total_other{verb="create"}`:         7,
		`vpa_recommender_policy_vpa_writes_total{kind="x",verb="delete"}`:      2,
		`vpa_recommender_policy_vpa_writes_total{kind="y"}`:                    5,
		`vpa_recommender_policy_vpa_writes_total{verb="delete",kind="z"}`:      1,
		`vpa_recommender_policy_vpa_writes_total{verb="status\"quoted\\\\"}`:   4,
		`other_total{verb="create"}`:                                           9,
		`vpa_recommender_policy_vpa_writes_total{verb="broken}`:                8,
		`vpa_recommender_policy_vpa_writes_total{verb="create",pod="a, b=c"}`:  1,
		`vpa_recommender_policy_vpa_writes_total{ verb = "update" , x = "1" }`: 2,
	}
	got := s.byLabel("vpa_recommender_policy_vpa_writes_total", "verb")
	want := map[string]float64{"create": 10001, "update": 2, "delete": 3, `status"quoted\\`: 4}
	if !maps.Equal(got, want) {
		t.Errorf("byLabel = %v, want %v", got, want)
	}
}

func TestDelta(t *testing.T) {
	tests := map[string]struct {
		before, after, want map[string]float64
	}{
		"nothing moved":           {before: map[string]float64{"create": 5}, after: map[string]float64{"create": 5}, want: map[string]float64{}},
		"a counter grew":          {before: map[string]float64{"create": 5, "status": 1}, after: map[string]float64{"create": 5, "status": 3}, want: map[string]float64{"status": 2}},
		"a counter appeared":      {before: map[string]float64{}, after: map[string]float64{"update": 1}, want: map[string]float64{"update": 1}},
		"a series went (restart)": {before: map[string]float64{"delete": 4}, after: map[string]float64{}, want: map[string]float64{"delete": -4}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := delta(tc.before, tc.after); !maps.Equal(got, tc.want) {
				t.Errorf("delta = %v, want %v", got, tc.want)
			}
		})
	}
	if got := formatCounts(map[string]float64{"status": 2, "create": 10000}); got != "create=10000 status=2" {
		t.Errorf("formatCounts = %q", got)
	}
	if got := formatCounts(nil); got != "none" {
		t.Errorf("formatCounts(nil) = %q", got)
	}
}

func TestParseVmRSS(t *testing.T) {
	tests := map[string]struct {
		status  string
		want    float64
		wantErr bool
	}{
		"a real status":       {status: "Name:\trecommender\nVmPeak:\t 1300000 kB\nVmRSS:\t  123456 kB\nRssAnon:\t 100000 kB\n", want: 123456 * 1024},
		"no VmRSS (a zombie)": {status: "Name:\trecommender\nState:\tZ (zombie)\n", wantErr: true},
		"another unit":        {status: "VmRSS:\t 12 MB\n", wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := parseVmRSS(tc.status)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("parseVmRSS = %v, %v; want %v, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	if got := summarize(nil); got != (stats{}) {
		t.Errorf("summarize(nil) = %+v", got)
	}
	got := summarize([]float64{3, 1, 2, 6})
	want := stats{n: 4, min: 1, mean: 3, max: 6, last: 6}
	if got != want {
		t.Errorf("summarize = %+v, want %+v", got, want)
	}
}

func TestJudge(t *testing.T) {
	tests := map[string]struct {
		elapsed    time.Duration
		n          int
		qps        float64
		wantIdeal  time.Duration
		wantFloor  time.Duration
		wantRatio  float64
		wantWithin bool
	}{
		"at the rate limit":              {elapsed: 198 * time.Second, n: 10000, qps: 50, wantIdeal: 200 * time.Second, wantFloor: 198 * time.Second, wantRatio: 0.99, wantWithin: true},
		"just within 10%":                {elapsed: 219 * time.Second, n: 10000, qps: 50, wantIdeal: 200 * time.Second, wantFloor: 198 * time.Second, wantRatio: 1.095, wantWithin: true},
		"too slow":                       {elapsed: 260 * time.Second, n: 10000, qps: 50, wantIdeal: 200 * time.Second, wantFloor: 198 * time.Second, wantRatio: 1.3, wantWithin: false},
		"faster than the limit allows":   {elapsed: 50 * time.Second, n: 10000, qps: 100, wantIdeal: 100 * time.Second, wantFloor: 99 * time.Second, wantRatio: 0.5, wantWithin: false},
		"fewer than the burst":           {elapsed: 0, n: 50, qps: 50, wantIdeal: time.Second},
		"no workloads: nothing to judge": {elapsed: time.Second, n: 0, qps: 50},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			v := judge(tc.elapsed, tc.n, 100, tc.qps, 0.10)
			if v.ideal != tc.wantIdeal || v.floor != tc.wantFloor || v.within != tc.wantWithin || v.ratio < tc.wantRatio-1e-9 || v.ratio > tc.wantRatio+1e-9 {
				t.Errorf("judge = %+v, want ideal %s ratio %v within %v", v, tc.wantIdeal, tc.wantRatio, tc.wantWithin)
			}
		})
	}
}

func TestVersionChanges(t *testing.T) {
	before := map[string]string{"a/x": "1", "a/y": "2", "a/z": "3"}
	after := map[string]string{"a/x": "1", "a/y": "5", "a/w": "6"}
	ch, add, rm := versionChanges(before, after)
	if ch != 1 || add != 1 || rm != 1 {
		t.Errorf("versionChanges = changed %d, added %d, removed %d; want 1, 1, 1", ch, add, rm)
	}
	if ch, add, rm := versionChanges(before, before); ch+add+rm != 0 {
		t.Errorf("versionChanges of the same map = %d, %d, %d", ch, add, rm)
	}
}

func TestErrorLines(t *testing.T) {
	log := strings.Join([]string{
		`I1205 10:00:00.000000   1 controller.go:201] "Policy controller started"`,
		`E1205 10:00:01.000000   1 controller.go:300] "Retrying" err="conflict"`,
		`Error: not a klog line`,
		`E1205 10:00:02.000000   1 controller.go:300] "Retrying" err="timeout"`,
		`W1205 10:00:03.000000   1 x.go:1] warning`,
		`E1205 10:00:04.000000   1 controller.go:300] third`,
		``,
	}, "\n")
	n, first := errorLines(log, 2)
	if n != 3 || len(first) != 2 || !strings.Contains(first[0], "conflict") || !strings.Contains(first[1], "timeout") {
		t.Errorf("errorLines = %d, %q", n, first)
	}
}

func TestParseFlags(t *testing.T) {
	tests := map[string]struct {
		args    []string
		wantErr bool
		check   func(config) bool
	}{
		"defaults": {check: func(c config) bool {
			return c.workloads == 10000 && c.namespaces == 1 && c.qps == 50 && c.burst == 100 && c.intervals == 10 && c.interval == 30*time.Second
		}},
		"reuse implies keep":        {args: []string{"--reuse"}, check: func(c config) bool { return c.keep }},
		"more namespaces than work": {args: []string{"--workloads=2", "--namespaces=3"}, wantErr: true},
		"no rate":                   {args: []string{"--kube-api-qps=0"}, wantErr: true},
		"an empty steady state":     {args: []string{"--intervals=0"}, wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c, err := parseFlags(tc.args)
			if (err != nil) != tc.wantErr {
				t.Fatalf("parseFlags(%v) error %v, want error %v", tc.args, err, tc.wantErr)
			}
			if tc.check != nil && !tc.check(c) {
				t.Errorf("parseFlags(%v) = %+v", tc.args, c)
			}
		})
	}
}

func TestNamespaces(t *testing.T) {
	one := config{namespace: "ps", namespaces: 1}
	if got := one.namespaceList(); !slices.Equal(got, []string{"ps"}) || one.namespaceOf(7) != "ps" || one.listNamespace() != "ps" {
		t.Errorf("one namespace: %v %s %q", got, one.namespaceOf(7), one.listNamespace())
	}
	three := config{namespace: "ps", namespaces: 3}
	if got := three.namespaceList(); !slices.Equal(got, []string{"ps-0", "ps-1", "ps-2"}) || three.namespaceOf(7) != "ps-1" || three.listNamespace() != "" {
		t.Errorf("three namespaces: %v %s %q", got, three.namespaceOf(7), three.listNamespace())
	}
	if got := (config{policy: "p"}).managedSelector(); got != "openvpa.io/managed-by=vpa-policy-controller,openvpa.io/policy=p" {
		t.Errorf("managedSelector = %q", got)
	}
}
