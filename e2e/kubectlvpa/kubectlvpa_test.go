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

// Package kubectlvpa tests kubectl-vpa (explain, report and export) and the
// recommender's OverlappingVPA and HPAConflict conditions end to end: the
// recommender and the admission controller run as processes acting as their
// ServiceAccounts (RBAC from deploy/rbac), against the local control plane
// with KWOK pods whose usage metrics-server reports, and the plugin runs as a
// binary with the admin kubeconfig, as a user runs it.
package kubectlvpa

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	vpaclient "github.com/openvpa/openvpa/apis/generated/clientset/versioned"
	"github.com/openvpa/openvpa/e2e/framework"
	"github.com/openvpa/openvpa/kubectl-vpa/explain"
	"github.com/openvpa/openvpa/kubectl-vpa/report"
	"github.com/openvpa/openvpa/pkg/annotations"
	"github.com/openvpa/openvpa/recommender/checkpoint"
	"github.com/openvpa/openvpa/recommender/model"
)

type env struct {
	c   *framework.Cluster
	ns  string
	vpa vpaclient.Interface
}

func setup(t *testing.T) *env {
	t.Helper()
	c := framework.Start(t)
	c.InstallCRDs(t)
	c.ApplyRBAC(t, "recommender")
	c.ApplyRBAC(t, "admission-controller")
	return &env{c: c, ns: c.NewNamespace(t), vpa: vpaclient.NewForConfigOrDie(c.Config)}
}

// runRecommender starts the recommender for the namespace, with extra
// flags after the common ones.
func (e *env) runRecommender(t *testing.T, extra ...string) {
	t.Helper()
	e.c.RunComponent(t, framework.Component{
		Binary: e.c.BuildBinary(t, "./recommender"),
		Args: append([]string{"--recommender-interval=5s", "--checkpoints-gc-interval=1m", "--checkpoints-write-interval=5s",
			"--address=127.0.0.1:0", "--v=3", "--vpa-object-namespace=" + e.ns}, extra...),
		ServiceAccount: "kube-system/vpa-recommender",
	})
}

// runAdmission starts the admission controller for the namespace, registered
// by URL, and waits until it is ready and registered.
func (e *env) runAdmission(t *testing.T) {
	t.Helper()
	e.c.StartScopedAdmission(t, e.ns, "--v=3")
}

func newVPA(ns, name, deployment string, mode vpav1.UpdateMode, policy *vpav1.PodResourcePolicy) *vpav1.VerticalPodAutoscaler {
	return &vpav1.VerticalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: vpav1.VerticalPodAutoscalerSpec{
			TargetRef:      &autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: deployment},
			UpdatePolicy:   &vpav1.PodUpdatePolicy{UpdateMode: &mode},
			ResourcePolicy: policy,
		},
	}
}

func (e *env) createVPA(t *testing.T, v *vpav1.VerticalPodAutoscaler) {
	t.Helper()
	if _, err := e.vpa.AutoscalingV1().VerticalPodAutoscalers(e.ns).Create(context.Background(), v, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (e *env) getVPA(t *testing.T, name string) *vpav1.VerticalPodAutoscaler {
	t.Helper()
	v, err := e.vpa.AutoscalingV1().VerticalPodAutoscalers(e.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// waitFor waits until the VPA satisfies ok, which says why not.
func (e *env) waitFor(t *testing.T, name string, ok func(*vpav1.VerticalPodAutoscaler) error) *vpav1.VerticalPodAutoscaler {
	t.Helper()
	var v *vpav1.VerticalPodAutoscaler
	framework.WaitFor(t, 3*time.Minute, func() (bool, error) {
		var err error
		if v, err = e.vpa.AutoscalingV1().VerticalPodAutoscalers(e.ns).Get(context.Background(), name, metav1.GetOptions{}); err != nil {
			return false, err
		}
		if err := ok(v); err != nil {
			return false, err
		}
		return true, nil
	})
	return v
}

func hasRecommendation(v *vpav1.VerticalPodAutoscaler) error {
	if v.Status.Recommendation == nil || len(v.Status.Recommendation.ContainerRecommendations) == 0 {
		return fmt.Errorf("no recommendation yet; conditions %+v", v.Status.Conditions)
	}
	return nil
}

// plugin runs bin/kubectl-vpa with the admin kubeconfig.
func (e *env) plugin(t *testing.T, args ...string) string {
	t.Helper()
	bin := e.c.BuildBinary(t, "./kubectl-vpa")
	cmd := exec.Command(bin, append(args, "--kubeconfig="+e.c.KubeconfigPath)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl-vpa %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// explainJSON runs explain NAME -o json with the extra flags.
func (e *env) explainJSON(t *testing.T, name string, extra ...string) *explain.Explanation {
	t.Helper()
	var out explain.Explanation
	if err := json.Unmarshal([]byte(e.plugin(t, append([]string{"explain", name, "-n", e.ns, "-o", "json"}, extra...)...)), &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

func container(t *testing.T, x *explain.Explanation, name string) explain.Container {
	t.Helper()
	for _, c := range x.Containers {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("explain of %s has no container %s: %+v", x.Name, name, x.Containers)
	return explain.Container{}
}

// TestExplainClippedByMaxAllowed: usage above the VPA's maxAllowed is
// explained as clipped by maxAllowed, with the uncapped value shown.
func TestExplainClippedByMaxAllowed(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.c.CreateDeployment(t, e.ns, framework.Workload{Name: "web", Usage: framework.Usage{CPU: "500m", Memory: "200Mi"}})
	e.createVPA(t, newVPA(e.ns, "web", "web", vpav1.UpdateModeOff, &vpav1.PodResourcePolicy{ContainerPolicies: []vpav1.ContainerResourcePolicy{{
		ContainerName: "*", MaxAllowed: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
	}}}))
	e.runRecommender(t)
	var uncapped resource.Quantity
	e.waitFor(t, "web", func(v *vpav1.VerticalPodAutoscaler) error {
		if err := hasRecommendation(v); err != nil {
			return err
		}
		r := v.Status.Recommendation.ContainerRecommendations[0]
		uncapped = r.UncappedTarget[corev1.ResourceCPU]
		if target := r.Target[corev1.ResourceCPU]; target.Cmp(resource.MustParse("100m")) != 0 || uncapped.Cmp(resource.MustParse("400m")) < 0 {
			return fmt.Errorf("cpu target %s, uncapped %s; want 100m and at least 400m", target.String(), uncapped.String())
		}
		return nil
	})

	x := e.explainJSON(t, "web")
	c := container(t, x, "app")
	if len(c.Clipped) != 1 || c.Clipped[0].Resource != "cpu" || c.Clipped[0].Limit != "maxAllowed" || c.Clipped[0].Value != "100m" ||
		c.Clipped[0].Target != "100m" || c.Clipped[0].Uncapped == "" {
		t.Errorf("clipped = %+v, want cpu by maxAllowed 100m with the uncapped target", c.Clipped)
	}
	u, err := resource.ParseQuantity(c.Clipped[0].Uncapped)
	if err != nil || u.Cmp(resource.MustParse("400m")) < 0 {
		t.Errorf("uncapped %q, want at least 400m (the status said %s)", c.Clipped[0].Uncapped, uncapped.String())
	}
	text := e.plugin(t, "explain", "web", "-n", e.ns)
	if !strings.Contains(text, "clipped: cpu by maxAllowed 100m (uncapped ") {
		t.Errorf("explain does not say the target was clipped by maxAllowed:\n%s", text)
	}
}

// TestReportNotApplied: an Off VPA whose pods request less than its lower
// bound is reported "not-applied", in the table, the JSON and the HTML page,
// which headless Chromium renders.
func TestReportNotApplied(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.c.CreateDeployment(t, e.ns, framework.Workload{Name: "small", Replicas: 2, Usage: framework.Usage{CPU: "300m", Memory: "200Mi"},
		Containers: []framework.Container{{Name: "app", Requests: framework.Resources("10m", "16Mi")}}})
	e.c.CreateDeployment(t, e.ns, framework.Workload{Name: "big", Usage: framework.Usage{CPU: "20m", Memory: "20Mi"},
		Containers: []framework.Container{{Name: "app", Requests: framework.Resources("2", "2Gi")}}})
	e.createVPA(t, newVPA(e.ns, "small", "small", vpav1.UpdateModeOff, nil))
	e.createVPA(t, newVPA(e.ns, "big", "big", vpav1.UpdateModeOff, nil))
	e.runRecommender(t)
	for _, name := range []string{"small", "big"} {
		e.waitFor(t, name, hasRecommendation)
	}
	e.c.WaitForPods(t, e.ns, "app=small", 2, framework.PodRunning)

	var r report.Report
	if err := json.Unmarshal([]byte(e.plugin(t, "report", "-n", e.ns, "-o", "json")), &r); err != nil {
		t.Fatal(err)
	}
	rows := map[string]report.Row{}
	for _, row := range r.Rows {
		rows[row.Name] = row
	}
	small, big := rows["small"], rows["big"]
	if !contains(small.Flags, report.FlagNotApplied) {
		t.Errorf("small: flags %v, want %s", small.Flags, report.FlagNotApplied)
	}
	if small.Pods != 2 || small.CPURequested != 0.02 || small.CPUSavings >= 0 {
		t.Errorf("small: pods %d, cpu requested %v, savings %v; want 2 pods, 0.02 cores and a shortfall", small.Pods, small.CPURequested, small.CPUSavings)
	}
	if big.CPURequested != 2 || big.CPUSavings <= 1 || big.MemorySavings <= 1 {
		t.Errorf("big: cpu requested %v, savings %v cores and %v GiB; want 2 cores and savings above 1 core and 1 GiB", big.CPURequested, big.CPUSavings, big.MemorySavings)
	}
	if r.Totals.CPUSavings != big.CPUSavings || r.Totals.CPUShortfall != -small.CPUSavings {
		t.Errorf("totals %+v do not add the rows up", r.Totals)
	}
	table := e.plugin(t, "report", "-n", e.ns)
	if !strings.Contains(table, "not-applied") || !strings.Contains(table, "small") || !strings.Contains(table, "cores to save") {
		t.Errorf("report table:\n%s", table)
	}
	// As a kubectl plugin: kubectl finds kubectl-vpa on PATH.
	kubectl := exec.Command(e.c.KubectlPath, "vpa", "report", "-A", "-o", "json", "--kubeconfig="+e.c.KubeconfigPath)
	kubectl.Env = append(os.Environ(), "PATH="+filepath.Dir(e.c.BuildBinary(t, "./kubectl-vpa"))+string(os.PathListSeparator)+os.Getenv("PATH"))
	all, err := kubectl.Output()
	if err != nil {
		t.Fatalf("kubectl vpa report -A: %v", err)
	}
	var everywhere report.Report
	if err := json.Unmarshal(all, &everywhere); err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, row := range everywhere.Rows {
		if row.Namespace == e.ns {
			found++
		}
	}
	if found != 2 || everywhere.Namespace != "" {
		t.Errorf("kubectl vpa report -A lists %d VPAs of %s (want 2), scope %q", found, e.ns, everywhere.Namespace)
	}

	out := filepath.Join(e.c.RepoRoot, "_output", "kubectl-vpa")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(out, "report.html")
	e.plugin(t, "report", "-n", e.ns, "-o", "html", "--out", page)
	text := renderText(t, e.c.RepoRoot, page, filepath.Join(out, "report.png"))
	for _, want := range []string{"small", "big", "not-applied", fmt.Sprintf("%.3f", big.CPUSavings), fmt.Sprintf("%.3f", r.Totals.CPUSavings) + " cores to save",
		fmt.Sprintf("%+.3f", small.CPUSavings)} {
		if !strings.Contains(text, want) {
			t.Errorf("the rendered page lacks %q; its text:\n%s", want, text)
		}
	}
	// The table sorts: by cpu saved, big (which saves) comes last going up
	// and first going down.
	for hash, first := range map[string]string{"#sort=cpu-saved": "small", "#sort=cpu-saved-desc": "big"} {
		text := dumpText(t, e.c.RepoRoot, "file://"+page+hash)
		b, s := strings.Index(text, " big Deployment/big"), strings.Index(text, " small Deployment/small")
		if b < 0 || s < 0 || (first == "big") != (b < s) {
			t.Errorf("page%s: want %s first; text:\n%s", hash, first, text)
		}
	}
}

var chromiumOnce sync.Once
var chromiumPath string

// renderText renders the page in headless Chromium (installed by
// hack/chromium.sh when missing), saves a screenshot and returns the text of
// the page's body after its scripts ran.
func renderText(t *testing.T, repoRoot, page, screenshot string) string {
	t.Helper()
	text := dumpText(t, repoRoot, "file://"+page)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, chromiumPath, append(chromiumArgs(t), "--screenshot="+screenshot, "file://"+page)...).CombinedOutput(); err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, out)
	}
	if st, err := os.Stat(screenshot); err != nil || st.Size() == 0 {
		t.Fatalf("no screenshot at %s: %v", screenshot, err)
	}
	t.Logf("screenshot of the report: %s", screenshot)
	return text
}

func chromiumArgs(t *testing.T) []string {
	return []string{"--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + t.TempDir(), "--window-size=1800,500"}
}

// dumpText loads url in headless Chromium and returns the text of the DOM
// after the page's scripts ran.
func dumpText(t *testing.T, repoRoot, url string) string {
	t.Helper()
	chromiumOnce.Do(func() {
		out, err := exec.Command(filepath.Join(repoRoot, "hack", "chromium.sh")).Output()
		if err != nil {
			t.Fatalf("hack/chromium.sh: %v", err)
		}
		chromiumPath = strings.TrimSpace(string(out))
	})
	if chromiumPath == "" {
		t.Fatal("no chromium")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stderr strings.Builder
	cmd := exec.CommandContext(ctx, chromiumPath, append(chromiumArgs(t), "--dump-dom", url)...)
	cmd.Stderr = &stderr
	dom, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom %s: %v\n%s", url, err, stderr.String())
	}
	return textOf(string(dom))
}

// textOf strips the tags of an HTML document (the DOM Chromium dumped),
// leaving its text with the whitespace collapsed.
func textOf(doc string) string {
	var b strings.Builder
	inTag := false
	if i := strings.Index(doc, "<script"); i >= 0 {
		if j := strings.Index(doc[i:], "</script>"); j >= 0 {
			doc = doc[:i] + doc[i+j+len("</script>"):]
		}
	}
	for _, r := range doc {
		switch {
		case r == '<':
			inTag = true
			b.WriteRune(' ')
		case r == '>':
			inTag = false
		case !inTag:
			b.WriteRune(r)
		}
	}
	return strings.Join(strings.Fields(strings.ReplaceAll(b.String(), "&nbsp;", " ")), " ")
}

func contains(s []string, x string) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

// TestOverlappingVPAs: two VPAs on one Deployment both carry OverlappingVPA,
// each naming the other and the one the admission controller applies (the
// older).
func TestOverlappingVPAs(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.c.CreateDeployment(t, e.ns, framework.Workload{Name: "web", Usage: framework.Usage{CPU: "100m", Memory: "100Mi"}})
	e.createVPA(t, newVPA(e.ns, "first", "web", vpav1.UpdateModeInitial, nil))
	// Creation timestamps have a resolution of a second: make first the older.
	framework.WaitFor(t, 10*time.Second, func() (bool, error) {
		return time.Since(e.getVPA(t, "first").CreationTimestamp.Time) > time.Second, nil
	})
	e.createVPA(t, newVPA(e.ns, "second", "web", vpav1.UpdateModeInitial, nil))
	e.runRecommender(t)
	want := map[string]string{
		"first":  "Pods of this VPA are also matched by VPA second; the admission controller applies this VPA (first) to them",
		"second": "Pods of this VPA are also matched by VPA first; the admission controller applies VPA first to them",
	}
	for name, msg := range want {
		e.waitFor(t, name, func(v *vpav1.VerticalPodAutoscaler) error {
			c := framework.Condition(v, vpav1.OverlappingVPA)
			if c == nil || c.Status != corev1.ConditionTrue || c.Message != msg {
				return fmt.Errorf("OverlappingVPA = %+v, want True %q", c, msg)
			}
			return nil
		})
	}
	// The admission controller applies the VPA the condition names.
	e.runAdmission(t)
	framework.WaitFor(t, time.Minute, func() (bool, error) {
		p, err := e.c.DryRunPod(e.ns, "web")
		if err != nil {
			return false, err
		}
		if got := p.Annotations[annotations.Updates]; !strings.HasPrefix(got, "Pod resources updated by first:") {
			return false, fmt.Errorf("vpaUpdates %q, want the pod updated by first", got)
		}
		return true, nil
	})
	x := e.explainJSON(t, "second")
	if len(x.Problems) == 0 || !strings.Contains(strings.Join(x.Problems, "\n"), "also matched by VPA first; the admission controller applies VPA first") {
		t.Errorf("explain problems = %q, want the overlap", x.Problems)
	}
}

// warnings collects the warnings the API server returns.
type warnings struct {
	mu   sync.Mutex
	seen []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = append(w.seen, text)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.seen
	w.seen = nil
	return out
}

// TestHPAOnCPU: an HPA on cpu of a VPA'd Deployment gives the VPA the
// HPAConflict condition (cpu left to the HPA, which scales on its
// utilization), and creating a VPA for it returns the webhook's warning; so
// does a second VPA on the same Deployment.
func TestHPAOnCPU(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.c.CreateDeployment(t, e.ns, framework.Workload{Name: "web", Usage: framework.Usage{CPU: "100m", Memory: "100Mi"}})
	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: e.ns},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    ptr.To[int32](1), MaxReplicas: 1,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](70)},
			}}},
		},
	}
	if _, err := e.c.Client.AutoscalingV2().HorizontalPodAutoscalers(e.ns).Create(context.Background(), hpa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.runAdmission(t)
	warned := &warnings{}
	cfg := rest.CopyConfig(e.c.Config)
	cfg.WarningHandler = warned
	client := vpaclient.NewForConfigOrDie(cfg)
	wantHPA := "VPA web: HorizontalPodAutoscaler web on cpu scales Deployment/web on a resource this VPA also sets"
	// The admission controller's HPA cache is not part of its readiness:
	// dry runs (which webhooks see too) until it has the HPA.
	framework.WaitFor(t, time.Minute, func() (bool, error) {
		_, err := client.AutoscalingV1().VerticalPodAutoscalers(e.ns).Create(context.Background(), newVPA(e.ns, "web", "web", vpav1.UpdateModeOff, nil),
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err
		}
		if got := warned.take(); !strings.Contains(strings.Join(got, "\n"), wantHPA) {
			return false, fmt.Errorf("warnings %q", got)
		}
		return true, nil
	})
	if _, err := client.AutoscalingV1().VerticalPodAutoscalers(e.ns).Create(context.Background(), newVPA(e.ns, "web", "web", vpav1.UpdateModeOff, nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := warned.take(); len(got) != 1 || !strings.HasPrefix(got[0], wantHPA) {
		t.Errorf("warnings on create = %q, want one starting %q", got, wantHPA)
	}
	// A second VPA on the same Deployment: both warnings.
	framework.WaitFor(t, 30*time.Second, func() (bool, error) {
		_, err := client.AutoscalingV1().VerticalPodAutoscalers(e.ns).Create(context.Background(), newVPA(e.ns, "again", "web", vpav1.UpdateModeOff, nil),
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err
		}
		got := strings.Join(warned.take(), "\n")
		if !strings.Contains(got, "VPA again: VPA web also targets Deployment/web; the admission controller applies none of them (each is in mode Off)") ||
			!strings.Contains(got, "VPA again: HorizontalPodAutoscaler web on cpu") {
			return false, fmt.Errorf("warnings %q", got)
		}
		return true, nil
	})

	e.runRecommender(t)
	// The HPA scales on cpu utilization: with --yield-to-hpa (the default)
	// cpu is left to it, and the condition says so.
	e.waitFor(t, "web", func(v *vpav1.VerticalPodAutoscaler) error {
		c := framework.Condition(v, vpav1.HPAConflict)
		if c == nil || c.Status != corev1.ConditionTrue || c.Reason != "ResourceYieldedToHPA" ||
			!strings.HasPrefix(c.Message, "Left to HorizontalPodAutoscaler web on cpu, which scales Deployment/web on its utilization") {
			return fmt.Errorf("HPAConflict = %+v", c)
		}
		return nil
	})
}

// TestExplainRestoredCheckpoint: a checkpoint holding three days of history,
// restored by the recommender, is explained with that history, and the
// recommendation carries no LowConfidence.
func TestExplainRestoredCheckpoint(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.c.CreateDeployment(t, e.ns, framework.Workload{Name: "web", Usage: framework.Usage{CPU: "200m", Memory: "300Mi"}})
	e.createVPA(t, newVPA(e.ns, "web", "web", vpav1.UpdateModeOff, nil))

	e.createThreeDayCheckpoint(t, "web")
	e.runRecommender(t)
	e.waitForRestored(t, "web")
	x := e.explainJSON(t, "web")
	c := container(t, x, "app")
	h := c.History
	if h == nil || h.Error != "" || h.Days < 2.99 || h.Samples < 72*60 || h.Confidence < 2.99 {
		t.Fatalf("history = %+v, want the three restored days, at least %d samples and a confidence of three days", h, 72*60)
	}
	if c.CPU == nil || c.CPU.Target.Percentile != 0.9 || c.CPU.Target.Final == "" || c.Memory == nil {
		t.Errorf("estimator steps = %+v / %+v", c.CPU, c.Memory)
	}
	// The target from the restored history: the P90 bucket of 200m, plus
	// the margin.
	if got := c.CPU.Target.Final; got != c.Status.UncappedTarget["cpu"] {
		t.Logf("estimate from the checkpoint %s, status %s (the status may be from a later loop)", got, c.Status.UncappedTarget["cpu"])
	}
	text := e.plugin(t, "explain", "web", "-n", e.ns)
	if !strings.Contains(text, "history: 3.00 days") && !strings.Contains(text, "history: 3.01 days") {
		t.Errorf("explain does not show the restored three days:\n%s", text)
	}
}

// createThreeDayCheckpoint creates the checkpoint of container app of VPA
// vpaName holding three days of one sample a minute at 200m and 300Mi, as
// the recommender's model would have recorded them.
func (e *env) createThreeDayCheckpoint(t *testing.T, vpaName string) {
	t.Helper()
	now := time.Now()
	start := now.Add(-72 * time.Hour)
	a := model.NewAggregateState(model.DefaultConfig(), start)
	cs := model.NewContainerState(a)
	for ts := start; ts.Before(now); ts = ts.Add(time.Minute) {
		cs.AddCPUSample(ts, model.CPUAmountFromCores(0.2))
		cs.AddMemorySample(ts, model.MemoryAmountFromBytes(300*1024*1024))
	}
	status, err := model.SaveCheckpoint(a, []*model.ContainerState{cs}, now)
	if err != nil {
		t.Fatal(err)
	}
	cp := &vpav1.VerticalPodAutoscalerCheckpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: checkpoint.Name(vpaName, "app")},
		Spec:       vpav1.VerticalPodAutoscalerCheckpointSpec{VPAObjectName: vpaName, ContainerName: "app"},
		Status:     status,
	}
	if _, err := e.vpa.AutoscalingV1().VerticalPodAutoscalerCheckpoints(e.ns).Create(context.Background(), cp, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitForRestored waits for a recommendation of the VPA without
// LowConfidence: the restored three days back it.
func (e *env) waitForRestored(t *testing.T, name string) *vpav1.VerticalPodAutoscaler {
	t.Helper()
	return e.waitFor(t, name, func(v *vpav1.VerticalPodAutoscaler) error {
		if err := hasRecommendation(v); err != nil {
			return err
		}
		if c := framework.Condition(v, vpav1.LowConfidence); c != nil {
			return fmt.Errorf("LowConfidence = %+v with three days restored", c)
		}
		return nil
	})
}

// TestExplainAdaptiveEstimator: the recommender runs --estimator=adaptive
// over a restored three-day checkpoint. Explained with --estimator=adaptive,
// the memory estimate is within 1% of the status, with the young margin of
// a three-day history, and no note; explained without it (the percentile
// chain), the estimate is not, and a note points at --estimator=adaptive.
func TestExplainAdaptiveEstimator(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.c.CreateDeployment(t, e.ns, framework.Workload{Name: "web", Usage: framework.Usage{CPU: "200m", Memory: "300Mi"}})
	e.createVPA(t, newVPA(e.ns, "web", "web", vpav1.UpdateModeOff, nil))
	e.createThreeDayCheckpoint(t, "web")
	e.runRecommender(t, "--estimator=adaptive")
	e.waitForRestored(t, "web")

	memory := func(s string) float64 {
		t.Helper()
		q, err := resource.ParseQuantity(s)
		if err != nil {
			t.Fatalf("memory %q: %v", s, err)
		}
		return float64(q.Value())
	}
	within := func(got, want float64) bool { return got >= want*0.99 && got <= want*1.01 }

	x := e.explainJSON(t, "web", "--estimator=adaptive")
	c := container(t, x, "app")
	if x.Estimator != "adaptive" || c.Memory == nil || c.MemoryRule == nil || c.Status == nil {
		t.Fatalf("explain --estimator=adaptive: estimator %q, memory steps %+v, memory rule %+v, status %+v", x.Estimator, c.Memory, c.MemoryRule, c.Status)
	}
	status := memory(c.Status.UncappedTarget["memory"])
	if estimate := memory(c.Memory.Target.Final); !within(estimate, status) {
		t.Errorf("adaptive memory estimate %s is not within 1%% of the status's uncapped target %s", c.Memory.Target.Final, c.Status.UncappedTarget["memory"])
	}
	// What explain expects the recommender to write (estimator.Finish over the estimate) is the
	// status, up to the samples the recommender added since the restore.
	if x := c.ExpectedStatus; x == nil || !within(memory(x.UncappedTarget["memory"]), status) {
		t.Errorf("expected status %+v, want its uncapped memory within 1%% of the status's %s", x, c.Status.UncappedTarget["memory"])
	}
	// Three days: the young margin 3/3.
	if young := c.MemoryRule.Margin.Young; young < 0.95 || young > 1.01 {
		t.Errorf("young margin %v, want about 3/3 days = 1 (rule %+v)", young, c.MemoryRule)
	}
	for _, n := range c.Notes {
		if strings.Contains(n, "--estimator=") {
			t.Errorf("explain --estimator=adaptive notes another estimator: %s", n)
		}
	}

	x = e.explainJSON(t, "web")
	c = container(t, x, "app")
	if x.Estimator != "percentile" || c.Memory == nil || c.MemoryRule != nil {
		t.Fatalf("explain: estimator %q, memory steps %+v, memory rule %+v; want the percentile chain", x.Estimator, c.Memory, c.MemoryRule)
	}
	if estimate := memory(c.Memory.Target.Final); within(estimate, memory(c.Status.UncappedTarget["memory"])) {
		t.Errorf("percentile memory estimate %s is within 1%% of the adaptive status %s", c.Memory.Target.Final, c.Status.UncappedTarget["memory"])
	}
	if notes := strings.Join(c.Notes, "\n"); !strings.Contains(notes, "--estimator=adaptive") {
		t.Errorf("explain without --estimator: notes %q, want one pointing at --estimator=adaptive", c.Notes)
	}
}
