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

// Package monitoring tests the monitoring kit (deploy/components/monitoring)
// against a real Prometheus scraping the three components: every dashboard
// query over the components' metrics returns series, and two faults fire
// their alerts and resolve (the recommender stopped; a webhook certificate
// near expiry, then rotated).
package monitoring

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openvpa/openvpa/admission-controller/webhook"
	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	vpaclient "github.com/openvpa/openvpa/apis/generated/clientset/versioned"
	"github.com/openvpa/openvpa/e2e/framework"
)

// scrape is Prometheus's scrape and rule evaluation interval in the test.
const scrape = 2 * time.Second

type env struct {
	c     *framework.Cluster
	ns    string
	prom  *framework.Prometheus
	certs string
	// ports of the components' metrics endpoints.
	recPort, updPort, admPort int
	recommender               framework.Component
}

// TestMonitoringKit runs the three components, scoped to a namespace of its
// own, and a Prometheus that scrapes them with the kit's rules (their for:
// durations cut to seconds).
func TestMonitoringKit(t *testing.T) {
	e := setup(t)

	t.Run("every dashboard query returns series", func(t *testing.T) { e.dashboardQueries(t) })

	t.Run("stopped recommender fires VPARecommenderLoopStale, restarted resolves it", func(t *testing.T) {
		e.waitAlert(t, "VPARecommenderLoopStale", false)
		rec := e.recommenderProcess(t)
		rec.Stop(t)
		e.waitAlert(t, "VPARecommenderLoopStale", true)
		e.c.RunComponent(t, e.recommender)
		e.waitAlert(t, "VPARecommenderLoopStale", false)
	})

	t.Run("certificate near expiry fires VPAAdmissionCertificateExpiring, rotated resolves it", func(t *testing.T) {
		// setup issued a certificate valid for two days, under the alert's seven.
		e.waitAlert(t, "VPAAdmissionCertificateExpiring", true)
		if err := webhook.GenerateSelfSigned(e.certs, []string{"127.0.0.1"}, 365*24*time.Hour); err != nil {
			t.Fatal(err)
		}
		e.waitAlert(t, "VPAAdmissionCertificateExpiring", false)
	})
}

// recommenderProcess is the running recommender (started by setup or by
// the subtest that restarts it).
var recommenderProc *framework.Process

func (e *env) recommenderProcess(t *testing.T) *framework.Process {
	t.Helper()
	if recommenderProc == nil {
		t.Fatal("recommender not started")
	}
	return recommenderProc
}

func setup(t *testing.T) *env {
	t.Helper()
	c := framework.Start(t)
	c.InstallCRDs(t)
	for _, comp := range []string{"recommender", "updater", "admission-controller"} {
		c.ApplyRBAC(t, comp)
	}
	e := &env{c: c, ns: c.NewNamespace(t), certs: t.TempDir(),
		recPort: framework.FreePort(t), updPort: framework.FreePort(t), admPort: framework.FreePort(t)}

	// A workload with a VPA, so that the per-VPA gauges have series.
	c.CreateDeployment(t, e.ns, framework.Workload{Name: "web", Usage: framework.Usage{CPU: "200m", Memory: "100Mi"},
		Containers: []framework.Container{{Name: "app", Requests: framework.Resources("100m", "50Mi")}}})
	vpas, err := vpaclient.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	mode := vpav1.UpdateModeOff
	if _, err := vpas.AutoscalingV1().VerticalPodAutoscalers(e.ns).Create(context.Background(), &vpav1.VerticalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: vpav1.VerticalPodAutoscalerSpec{
			TargetRef:    &autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			UpdatePolicy: &vpav1.PodUpdatePolicy{UpdateMode: &mode},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The admission controller, with a certificate that expires in two days.
	if err := webhook.GenerateSelfSigned(e.certs, []string{"127.0.0.1"}, 48*time.Hour); err != nil {
		t.Fatal(err)
	}
	webhookPort := framework.FreePort(t)
	config := "vpa-webhook-" + e.ns
	e.c.AllowWebhookConfig(t, config)
	t.Cleanup(func() {
		_ = c.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(context.Background(), config, metav1.DeleteOptions{})
	})
	c.RunComponent(t, framework.Component{
		Name:   "vpa-admission-controller",
		Binary: c.BuildBinary(t, "./admission-controller"),
		Args: []string{
			"--port=" + strconv.Itoa(webhookPort),
			fmt.Sprintf("--address=127.0.0.1:%d", e.admPort),
			"--register-by-url", "--webhook-address=https://127.0.0.1", "--webhook-port=" + strconv.Itoa(webhookPort),
			"--webhook-config-name=" + config,
			"--webhook-timeout-seconds=5",
			"--vpa-object-namespace=" + e.ns,
			"--client-ca-file=" + filepath.Join(e.certs, webhook.CACertFile),
			"--tls-cert-file=" + filepath.Join(e.certs, webhook.ServerCertFile),
			"--tls-private-key=" + filepath.Join(e.certs, webhook.ServerKeyFile),
			"--reload-cert",
			"--status-lease-namespace=" + e.ns,
			"--status-lease-update-interval=1s",
		},
		ServiceAccount: "kube-system/vpa-admission-controller",
		Env:            []string{"NAMESPACE=kube-system"},
	})
	e.recommender = framework.Component{
		Name:   "vpa-recommender",
		Binary: c.BuildBinary(t, "./recommender"),
		Args: []string{
			"--recommender-interval=5s",
			fmt.Sprintf("--address=127.0.0.1:%d", e.recPort),
			"--vpa-object-namespace=" + e.ns,
			"--recommendation-metrics",
		},
		ServiceAccount: "kube-system/vpa-recommender",
	}
	recommenderProc = c.RunComponent(t, e.recommender)
	c.RunComponent(t, framework.Component{
		Name:   "vpa-updater",
		Binary: c.BuildBinary(t, "./updater"),
		Args: []string{
			"--updater-interval=5s",
			fmt.Sprintf("--address=127.0.0.1:%d", e.updPort),
			"--vpa-object-namespace=" + e.ns,
			"--admission-controller-status-lease-namespace=" + e.ns,
		},
		ServiceAccount: "kube-system/vpa-updater",
	})

	rules := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(rules, []byte(shortenFor(t, readRepoFile(t, c, "deploy/components/monitoring/rules.yaml"))), 0o644); err != nil {
		t.Fatal(err)
	}
	e.prom = c.NewPrometheus(t, framework.PrometheusOptions{Config: fmt.Sprintf(`global:
  scrape_interval: %[1]s
  evaluation_interval: %[1]s
rule_files:
- %[2]s
scrape_configs:
- job_name: vpa-recommender
  honor_labels: true
  static_configs:
  - targets: ["127.0.0.1:%[3]d"]
- job_name: vpa-updater
  static_configs:
  - targets: ["127.0.0.1:%[4]d"]
- job_name: vpa-admission-controller
  static_configs:
  - targets: ["127.0.0.1:%[5]d"]
`, scrape, rules, e.recPort, e.updPort, e.admPort)})
	e.prom.Start(t)
	return e
}

func readRepoFile(t *testing.T, c *framework.Cluster, path string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(c.RepoRoot, path))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

var forLine = regexp.MustCompile(`(?m)^(\s+)for: \S+$`)

// shortenFor cuts every alert's for: to three scrapes, so that the test
// waits seconds, not the minutes the shipped rules wait.
func shortenFor(t *testing.T, rules string) string {
	t.Helper()
	if !forLine.MatchString(rules) {
		t.Fatal("rules.yaml has no for: to shorten")
	}
	return forLine.ReplaceAllString(rules, "${1}for: "+(3*scrape).String())
}

// dashboardQueries checks that every query of the dashboard over our
// metrics returns series. Queries that read kube-state-metrics or cAdvisor
// only (requests and usage of the per-VPA view) are skipped: the local
// cluster runs neither.
func (e *env) dashboardQueries(t *testing.T) {
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal([]byte(readRepoFile(t, e.c, "deploy/components/monitoring/dashboard.json")), &dash); err != nil {
		t.Fatal(err)
	}
	vars := strings.NewReplacer("$namespace", e.ns, "$vpa", "web", "$container", ".+")
	n := 0
	for _, p := range dash.Panels {
		for _, target := range p.Targets {
			if !strings.Contains(target.Expr, "vpa_") {
				t.Logf("skipped (not our metrics): %s: %s", p.Title, target.Expr)
				continue
			}
			n++
			q := vars.Replace(target.Expr)
			framework.WaitFor(t, 3*time.Minute, func() (bool, error) {
				// Pod reviews for the webhook's series (a dry run is reviewed
				// like a creation).
				_, _ = e.c.DryRunPod(e.ns, "web")
				series, err := e.query(q)
				if err != nil {
					return false, err
				}
				if series == 0 {
					return false, fmt.Errorf("panel %q: no series for %s", p.Title, q)
				}
				return true, nil
			})
		}
	}
	if n == 0 {
		t.Fatal("no dashboard query over the components' metrics")
	}
	t.Logf("%d dashboard queries returned series", n)
}

// query runs an instant query and returns the number of series.
func (e *env) query(q string) (int, error) {
	var resp struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := e.get("/api/v1/query?query="+url.QueryEscape(q), &resp); err != nil {
		return 0, err
	}
	if resp.Status != "success" {
		return 0, fmt.Errorf("query %s: %s", q, resp.Error)
	}
	return len(resp.Data.Result), nil
}

// waitAlert waits until the alert is firing (firing true) or neither
// firing nor pending (false).
func (e *env) waitAlert(t *testing.T, name string, firing bool) {
	t.Helper()
	framework.WaitFor(t, 3*time.Minute, func() (bool, error) {
		var resp struct {
			Data struct {
				Alerts []struct {
					Labels map[string]string `json:"labels"`
					State  string            `json:"state"`
				} `json:"alerts"`
			} `json:"data"`
		}
		if err := e.get("/api/v1/alerts", &resp); err != nil {
			return false, err
		}
		state := "inactive"
		for _, a := range resp.Data.Alerts {
			if a.Labels["alertname"] == name {
				state = a.State
				if state == "firing" {
					break
				}
			}
		}
		if (state == "firing") == firing && (firing || state == "inactive") {
			return true, nil
		}
		return false, fmt.Errorf("alert %s is %s", name, state)
	})
	t.Logf("alert %s firing=%v", name, firing)
}

func (e *env) get(path string, into any) error {
	resp, err := http.Get(e.prom.URL + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(into)
}
