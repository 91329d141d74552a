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

package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/openvpa/openvpa/kubectl-vpa/replay"
	"github.com/openvpa/openvpa/kubectl-vpa/replay/replaytest"
	"github.com/openvpa/openvpa/kubectl-vpa/snapshot"
)

// usageFixture is fixture's namespace with three workloads no VPA targets:
//   - Deployment cart (tier frontend): containers app (with a cpu limit,
//     which the namespace's LimitRange needs) and cache; Prometheus has the
//     history of app and of a container the template no longer has, over
//     two overlapping pods;
//   - StatefulSet db (tier backend): container postgres, with history;
//   - DaemonSet agent (tier backend): no history at all.
func usageFixture(t *testing.T) (*snapshot.Index, []replaytest.History) {
	t.Helper()
	s := fixtureSnapshot(t)
	limited := func(name, cpu, mem, limit string) corev1.Container {
		return corev1.Container{Name: name, Image: name, Resources: corev1.ResourceRequirements{Requests: rl(cpu, mem),
			Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(limit)}}}
	}
	tmpl := func(app string, cs ...corev1.Container) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}}, Spec: corev1.PodSpec{Containers: cs}}
	}
	sel := func(app string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
	}
	meta := func(name, tier string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: "shop", Name: name, Labels: map[string]string{"tier": tier}}
	}
	s.Workloads = append(s.Workloads,
		&appsv1.Deployment{ObjectMeta: meta("cart", "frontend"), Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: sel("cart"),
			Template: tmpl("cart", limited("app", "100m", "128Mi", "200m"), limited("cache", "50m", "64Mi", "100m"))}},
		&appsv1.StatefulSet{ObjectMeta: meta("db", "backend"), Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1), Selector: sel("db"),
			Template: tmpl("db", limited("postgres", "250m", "1Gi", "500m"))}},
		&appsv1.DaemonSet{ObjectMeta: meta("agent", "backend"), Spec: appsv1.DaemonSetSpec{Selector: sel("agent"),
			Template: tmpl("agent", limited("agent", "10m", "32Mi", "50m"))}},
	)
	// Hourly usage that follows the time of day, with some noise per pod.
	usage := func(base, swing, mi int64) func(pod, container string, t time.Time) (int64, int64) {
		return func(pod, container string, t time.Time) (int64, int64) {
			h := fnv.New32a()
			fmt.Fprintf(h, "%s/%s/%d", pod, container, t.Unix())
			noise := int64(h.Sum32() % 20)
			hour := int64(t.UTC().Hour())
			return base + swing*hour/23 + noise, (mi + 2*hour + noise) << 20
		}
	}
	end := now.Truncate(time.Hour)
	cart := replaytest.History{Namespace: "shop", Workload: "deployment/cart", Containers: []string{"app", "old-sidecar"}, Step: time.Hour,
		Pods: []replaytest.Pod{
			{Name: "cart-7d9c8b6f5-x2k9q", From: end.Add(-72 * time.Hour), To: end.Add(-20 * time.Hour)},
			{Name: "cart-7d9c8b6f5-m4n2p", From: end.Add(-50 * time.Hour), To: end},
		},
		Usage: usage(120, 180, 200)}
	db := replaytest.History{Namespace: "shop", Workload: "statefulset/db", Containers: []string{"postgres"}, Step: time.Hour,
		Pods:  []replaytest.Pod{{Name: "db-0", From: end.Add(-72 * time.Hour), To: end}},
		Usage: usage(100, 60, 900)}
	return index(t, s), []replaytest.History{cart, db}
}

// promArgs are export's flags that read the fake's history.
func promArgs(url string) []string {
	return []string{"--prometheus-url", url, "--history-length", "3d", "--history-resolution", "1h"}
}

// TestGoldenExportFromUsage: export of workloads without a VPA from their
// usage history in Prometheus (an httptest server answering the history
// queries), in both formats and with --all-workloads.
func TestGoldenExportFromUsage(t *testing.T) {
	ix, histories := usageFixture(t)
	fake := &replaytest.Prometheus{Histories: histories}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	tests := map[string]struct {
		names []string
		args  []string
		file  string
	}{
		"a Deployment without a VPA": {names: []string{"deployment/cart"}, file: "export-usage-cart.yaml"},
		"a Deployment without a VPA as a JSON patch": {names: []string{"deploy/cart"}, args: []string{"--format=json6902"},
			file: "export-usage-cart-json6902.yaml"},
		// A VPA's workload by KIND/NAME gives the VPA's patch; a VPA by name
		// beside it.
		"a StatefulSet, a VPA's workload and a VPA": {names: []string{"sts/db", "deployment/web", "twin-a"},
			file: "export-usage-db-web-twin.yaml"},
		// The VPAs and the workloads without one that --target-selector
		// selects: api's VPA, db, and agent (no usage: a warning).
		"--all-workloads of tier backend": {args: []string{"--all-workloads", "--target-selector", "tier=backend"}, file: "export-usage-all-backend.yaml"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o := NewOptions()
			o.History.Now = func() time.Time { return now }
			if err := flagSet(o, "export").Parse(append(promArgs(srv.URL), tc.args...)); err != nil {
				t.Fatal(err)
			}
			if err := o.Validate("export"); err != nil {
				t.Fatal(err)
			}
			var out, stderr bytes.Buffer
			if err := runExport(context.Background(), ix, o, "shop", tc.names, &out, &stderr); err != nil {
				t.Fatal(err)
			}
			golden(t, tc.file, out.Bytes())
			golden(t, tc.file+".stderr", stderr.Bytes())
		})
	}
	for _, q := range fake.Queries() {
		if strings.Contains(q, "web") || strings.Contains(q, "api") {
			t.Errorf("a workload with a VPA was read from Prometheus: %s", q)
		}
	}
}

// TestExportFromUsageIsTheReplaysRecommendation: the requests export writes
// for cart are the recommendation replay reports after the same history
// (and capped by the namespace's LimitRange where it says so).
func TestExportFromUsageIsTheReplaysRecommendation(t *testing.T) {
	ix, histories := usageFixture(t)
	srv := httptest.NewServer(&replaytest.Prometheus{Histories: histories})
	t.Cleanup(srv.Close)

	ro := replay.NewCommandOptions()
	ro.Prometheus.Now = func() time.Time { return now }
	var rout, rerr bytes.Buffer
	out := t.TempDir()
	if err := replay.RunCommand(context.Background(), ro, replay.Usage, append(promArgs(srv.URL), "-n", "shop", "statefulset/db", "--out", out, "--quiet"), &rout, &rerr); err != nil {
		t.Fatalf("replay: %v\n%s", err, rerr.String())
	}
	var rec replay.RecommendationReport
	readJSON(t, filepath.Join(out, replay.RecommendationFile), &rec)

	o := NewOptions()
	o.History.Now = func() time.Time { return now }
	if err := flagSet(o, "export").Parse(promArgs(srv.URL)); err != nil {
		t.Fatal(err)
	}
	if err := o.Validate("export"); err != nil {
		t.Fatal(err)
	}
	var eout, eerr bytes.Buffer
	if err := runExport(context.Background(), ix, o, "shop", []string{"statefulset/db"}, &eout, &eerr); err != nil {
		t.Fatal(err)
	}
	var patch appsv1.StatefulSet
	readYAML(t, eout.Bytes(), &patch)
	got := patch.Spec.Template.Spec.Containers
	if len(rec.Containers) != 1 || len(got) != 1 || got[0].Name != "postgres" {
		t.Fatalf("replay recommends %+v; export patches %+v", rec.Containers, got)
	}
	for name, want := range rec.Containers[0].Target {
		if q := got[0].Resources.Requests[name]; q.Cmp(want) != 0 {
			t.Errorf("export's %s request %v, want replay's target %v", name, &q, &want)
		}
	}
}

func readJSON(t *testing.T, file string, into any) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, into); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// readYAML reads the one document of a YAML stream.
func readYAML(t *testing.T, stream []byte, into any) {
	t.Helper()
	if err := yaml.Unmarshal(bytes.TrimPrefix(stream, []byte("---\n")), into); err != nil {
		t.Fatalf("%v in\n%s", err, stream)
	}
}

func TestExportFromUsageErrors(t *testing.T) {
	ix, histories := usageFixture(t)
	working := httptest.NewServer(&replaytest.Prometheus{Histories: histories})
	t.Cleanup(working.Close)
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
	for name, tc := range map[string]struct {
		names []string
		args  []string
		want  []string
	}{
		"no Prometheus and no VPA": {names: []string{"deployment/cart"},
			want: []string{"Deployment shop/cart has no VerticalPodAutoscaler", "give --prometheus-url"}},
		"a named workload with no usage": {names: []string{"daemonset/agent"}, args: promArgs(working.URL),
			want: []string{"DaemonSet shop/agent: no usage of daemonset/agent in namespace shop in Prometheus at " + working.URL}},
		"query timeout": {names: []string{"deployment/cart"}, args: append(promArgs(hanging.URL), "--prometheus-query-timeout", "200ms"),
			want: []string{hanging.URL, "no answer within the query timeout 200ms"}},
		"no such workload":   {names: []string{"deployment/nope"}, args: promArgs(working.URL), want: []string{"Deployment shop/nope not found"}},
		"a VPA not selected": {names: []string{"deployment/web"}, args: []string{"-l", "team=platform"}, want: []string{"Deployment shop/web has VerticalPodAutoscaler web, which -l"}},
		"a pod":              {names: []string{"pod/web-5d9f-a"}, args: promArgs(working.URL), want: []string{"export writes patches of a workload's pod template"}},
	} {
		t.Run(name, func(t *testing.T) {
			o := NewOptions()
			o.History.Now = func() time.Time { return now }
			if err := flagSet(o, "export").Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			if err := o.Validate("export"); err != nil {
				t.Fatal(err)
			}
			var out, stderr bytes.Buffer
			err := runExport(context.Background(), ix, o, "shop", tc.names, &out, &stderr)
			if err == nil {
				t.Fatalf("no error; stdout:\n%s", out.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}
