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

// Package replay tests `kubectl vpa replay --prometheus-url` against a real
// Prometheus: a synthetic Deployment's history (kubectl-vpa/replay/replaytest)
// is backfilled as cAdvisor series and written as a trace CSV, and the
// plugin must report the same figures from both. `kubectl vpa export
// --prometheus-url` must then write, for the Deployment without a VPA, a
// patch that gives it the requests replay recommends after that history.
package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/openvpa/openvpa/e2e/framework"
	"github.com/openvpa/openvpa/kubectl-vpa/replay"
	"github.com/openvpa/openvpa/kubectl-vpa/replay/replaytest"
)

// backfilled starts a Prometheus that holds the synthetic history of
// deployment/web (and of another workload) in a new namespace, and builds
// the plugin.
func backfilled(t *testing.T) (c *framework.Cluster, ns string, h replaytest.History, prom *framework.Prometheus, bin string) {
	t.Helper()
	c = framework.Start(t)
	ns = c.NewNamespace(t) // a name no other test's series carry
	// The history's last step: every scrape is in the past.
	end := time.Now().Truncate(5 * time.Minute)
	h = replaytest.Synthetic(ns, end, 10)
	series := filepath.Join(t.TempDir(), "series.om")
	writeFile(t, series, func(f *os.File) error { return h.WriteOpenMetrics(f, time.Minute) })
	prom = c.NewPrometheus(t, framework.PrometheusOptions{OpenMetrics: series})
	prom.Start(t)
	return c, ns, h, prom, c.BuildBinary(t, "./kubectl-vpa")
}

func TestReplayFromPrometheusEqualsCSV(t *testing.T) {
	_, ns, h, prom, bin := backfilled(t)

	promArgs := []string{"replay", "--prometheus-url", prom.URL, "-n", ns, "--history-length", "12d", "--history-resolution", "5m"}
	for _, tc := range []struct {
		name     string
		workload string
		args     []string
	}{
		{"deployment", "deployment/web", []string{"deployment/web"}},
		{"pod selector", "pods{app=web}", []string{"--pod-selector", "app=web", "--metric-for-pod-labels", `up{job="kubernetes-pods"}[12d]`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := h
			h.Workload = tc.workload
			trace := filepath.Join(t.TempDir(), "trace.csv")
			writeFile(t, trace, func(w *os.File) error { return h.WriteCSV(w) })

			want := run(t, bin, "replay", "--trace", trace)
			got := run(t, bin, append(append([]string{}, promArgs...), tc.args...)...)
			for _, k := range []string{"table", "summary.json", "days.csv"} {
				if got[k] != want[k] {
					t.Errorf("%s from Prometheus differs from the CSV's:\n--- Prometheus\n%s\n--- CSV\n%s", k, got[k], want[k])
				}
			}
			if !strings.Contains(want["summary.json"], `"workload_days"`) || strings.Count(want["days.csv"], "\n") < 2*8 {
				t.Errorf("the CSV replay scored too little to compare:\n%s", want["days.csv"])
			}
			// The recommendation after the history: from Prometheus each
			// pod's history goes in as the recommender reads it.
			var rec replay.RecommendationReport
			if err := json.Unmarshal([]byte(got[replay.RecommendationFile]), &rec); err != nil || rec.Pods != 3 || len(rec.Containers) != 2 {
				t.Errorf("%s from Prometheus: %v\n%s", replay.RecommendationFile, err, got[replay.RecommendationFile])
			}
			t.Logf("replayed %s from %s:\n%s", tc.workload, prom.URL, got["table"])
		})
	}
}

func writeFile(t *testing.T, path string, write func(*os.File) error) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := write(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestExportWithoutVPAFromPrometheus: kubectl vpa export --prometheus-url
// writes, for deployment/web, which no VPA targets, a kustomize Component
// whose patch `kubectl kustomize` applies to the Deployment's manifest as
// kept in Git; the rendered requests are the recommendation replay reports
// after the same history in the same Prometheus (and the limit keeps its
// ratio). A container with no history is left out with a warning.
func TestExportWithoutVPAFromPrometheus(t *testing.T) {
	c, ns, _, prom, bin := backfilled(t)
	w := framework.Workload{Name: "web", Containers: []framework.Container{
		{Name: "app", Requests: framework.Resources("100m", "128Mi"), Limits: framework.Resources("200m", "256Mi")},
		{Name: "sidecar", Requests: framework.Resources("10m", "32Mi")},
		{Name: "cache", Requests: framework.Resources("50m", "64Mi")},
	}}
	d := w.Deployment(ns)
	d.Spec.Replicas = ptr.To[int32](0) // only its template matters
	if _, err := c.Client.AppsV1().Deployments(ns).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	history := []string{"--prometheus-url", prom.URL, "-n", ns, "--history-length", "12d", "--history-resolution", "5m"}

	rep := run(t, bin, append(append([]string{"replay"}, history...), "deployment/web")...)
	var rec replay.RecommendationReport
	if err := json.Unmarshal([]byte(rep[replay.RecommendationFile]), &rec); err != nil {
		t.Fatalf("%s: %v\n%s", replay.RecommendationFile, err, rep[replay.RecommendationFile])
	}
	targets := map[string]corev1.ResourceList{}
	for _, r := range rec.Containers {
		targets[r.ContainerName] = r.Target
	}
	if len(targets) != 2 || targets["app"] == nil || targets["sidecar"] == nil {
		t.Fatalf("replay recommends %+v, want app and sidecar", rec.Containers)
	}

	root := t.TempDir()
	component := filepath.Join(root, "vpa")
	cmd := exec.Command(bin, append(append([]string{"export", "deployment/web", "--kubeconfig=" + c.KubeconfigPath}, history...), "--dir", component)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("export: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	if !strings.Contains(stderr.String(), "Deployment "+ns+"/web: container cache has no usage history; left out") {
		t.Errorf("export's standard error does not warn about cache:\n%s", stderr.String())
	}

	// The Deployment as kept in Git: without a namespace, the overlay sets it.
	d = w.Deployment(ns)
	d.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}
	d.Namespace = ""
	manifest, err := yaml.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	overlay := filepath.Join(root, "overlay")
	if err := os.MkdirAll(overlay, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(overlay, "web.yaml"), func(f *os.File) error { _, err := f.Write(manifest); return err })
	writeFile(t, filepath.Join(overlay, "kustomization.yaml"), func(f *os.File) error {
		_, err := f.WriteString("namespace: " + ns + "\nresources:\n- web.yaml\ncomponents:\n- ../vpa\n")
		return err
	})
	rendered := c.Kubectl(t, "kustomize", overlay)
	var got appsv1.Deployment
	if err := yaml.Unmarshal([]byte(rendered), &got); err != nil {
		t.Fatalf("%v in\n%s", err, rendered)
	}
	for _, ctr := range got.Spec.Template.Spec.Containers {
		want, ok := targets[ctr.Name]
		if !ok {
			// cache: as it was.
			want = framework.Resources("50m", "64Mi")
		}
		if !sameList(ctr.Resources.Requests, want) {
			t.Errorf("container %s: rendered requests %v, want replay's recommendation %v", ctr.Name, ctr.Resources.Requests, want)
		}
		if ctr.Name == "app" {
			for name, q := range ctr.Resources.Requests {
				if lim := ctr.Resources.Limits[name]; lim.MilliValue() != 2*q.MilliValue() {
					t.Errorf("app's %s limit %v, want twice the request %v as before", name, &lim, &q)
				}
			}
		}
	}
	if t.Failed() {
		t.Logf("rendered:\n%s\nreplay:\n%s", rendered, rep["recommendation"])
	}
}

func sameList(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, q := range a {
		if w, ok := b[k]; !ok || w.Cmp(q) != 0 {
			return false
		}
	}
	return true
}

// run runs the plugin with args and returns what it reports: the table
// without its source's name and the times it took, summary.json and
// days.csv, which the same history gives from any source; and apart, the
// recommendation after the history ("recommendation" from the table, and
// recommendation.json), which from Prometheus goes in pod by pod.
func run(t *testing.T, bin string, args ...string) map[string]string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	cmd := exec.Command(bin, append(args, "--out", out, "--quiet")...)
	stdout, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("kubectl-vpa %s: %v\n%s%s", strings.Join(args, " "), err, stdout, stderr)
	}
	var lines, rec []string
	inRec := false
	for i, l := range strings.Split(string(stdout), "\n") {
		switch {
		case i == 0 || strings.HasPrefix(l, "wrote ") || strings.HasPrefix(l, "done in "):
			continue
		case strings.HasPrefix(l, replay.RecommendationHeading):
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
	for _, f := range []string{"summary.json", "days.csv", replay.RecommendationFile} {
		b, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		r[f] = string(b)
	}
	return r
}
