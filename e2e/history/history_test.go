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

// Package history holds the end-to-end tests of --storage=prometheus: a real
// Prometheus (Debian's package) backfilled with eight days of cAdvisor-shaped
// series (recommender/input/history/historytest) serves the recommender's
// history, against the local control plane.
package history

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	vpaclient "github.com/openvpa/openvpa/apis/generated/clientset/versioned"
	"github.com/openvpa/openvpa/e2e/framework"
	"github.com/openvpa/openvpa/recommender/estimator"
	"github.com/openvpa/openvpa/recommender/input/history/historytest"
	"github.com/openvpa/openvpa/recommender/model"
)

const (
	historyLength = 8 * 24 * time.Hour
	mi            = int64(1) << 20
)

// Usage of the containers, by the hour the usage is for.
var (
	// A web server: busier in the day, a memory spike at 13:00 every day.
	webApp = func(h time.Time) (int64, int64) {
		hour := int64(h.Hour())
		mem := 300*mi + hour*8*mi
		if hour == 13 {
			mem += 400 * mi
		}
		return 150 + 20*hour, mem
	}
	// Its sidecar: flat, with a slow weekly climb.
	webSidecar = func(h time.Time) (int64, int64) {
		return 20 + int64(h.Weekday()), 64*mi + int64(h.YearDay()%7)*mi
	}
	// Another workload, which no VPA of the test selects.
	other = func(time.Time) (int64, int64) { return 2000, 4096 * mi }
)

type env struct {
	c   *framework.Cluster
	ns  string
	vpa vpaclient.Interface
	// series is the OpenMetrics file the test's Prometheus is backfilled from.
	series string
}

// gonePods are the pods of Deployment "web", all gone now (it is scaled to
// zero): their history and their labels come from Prometheus only.
func gonePods(ns string) []historytest.Pod {
	return []historytest.Pod{
		{Namespace: ns, Name: "web-6d4cf56db6-2xkqp", Labels: map[string]string{"app": "web", "pod-template-hash": "6d4cf56db6"},
			Containers: []historytest.Container{{Name: "app", Usage: webApp}, {Name: "sidecar", Usage: webSidecar}}},
		{Namespace: ns, Name: "web-6d4cf56db6-9zl7c", Labels: map[string]string{"app": "web", "pod-template-hash": "6d4cf56db6"},
			Containers: []historytest.Container{{Name: "app", Usage: webApp}}},
		{Namespace: ns, Name: "batch-0", Labels: map[string]string{"app": "batch"},
			Containers: []historytest.Container{{Name: "app", Usage: other}}},
	}
}

func setup(t *testing.T, pods func(ns string) []historytest.Pod) *env {
	t.Helper()
	c := framework.Start(t)
	c.InstallCRDs(t)
	c.ApplyRBAC(t, "recommender")
	e := &env{c: c, ns: c.NewNamespace(t), vpa: vpaclient.NewForConfigOrDie(c.Config)}
	e.series = filepath.Join(t.TempDir(), "series.om")
	f, err := os.Create(e.series)
	if err != nil {
		t.Fatal(err)
	}
	// Two hours past now at both ends: the fetch's range is now rounded
	// down to the hour, whenever the recommender starts.
	now := time.Now().Truncate(time.Minute)
	if err := historytest.WriteOpenMetrics(f, pods(e.ns), historytest.Options{From: now.Add(-historyLength - 2*time.Hour), To: now.Add(2 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return e
}

// run starts the recommender in --storage=prometheus mode on the test's
// namespace, as its ServiceAccount.
func (e *env) run(t *testing.T, promURL string, metricsPort int, args ...string) *framework.Process {
	t.Helper()
	return e.c.RunComponent(t, framework.Component{
		Binary: e.c.BuildBinary(t, "./recommender"),
		Args: append([]string{
			"--recommender-interval=5s", "--v=3", fmt.Sprintf("--address=127.0.0.1:%d", metricsPort),
			"--vpa-object-namespace=" + e.ns, "--storage=prometheus", "--prometheus-address=" + promURL,
		}, args...),
		ServiceAccount: "kube-system/vpa-recommender",
	})
}

// scaledToZero creates Deployment name with no replicas: its pods are gone.
func (e *env) scaledToZero(t *testing.T, name string) {
	t.Helper()
	d := framework.Workload{Name: name}.Deployment(e.ns)
	zero := int32(0)
	d.Spec.Replicas = &zero
	if _, err := e.c.Client.AppsV1().Deployments(e.ns).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (e *env) createVPA(t *testing.T, name, kind, target string) {
	t.Helper()
	off := vpav1.UpdateModeOff
	v := &vpav1.VerticalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name},
		Spec: vpav1.VerticalPodAutoscalerSpec{
			TargetRef:    &autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: kind, Name: target},
			UpdatePolicy: &vpav1.PodUpdatePolicy{UpdateMode: &off},
		},
	}
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

// expected is the recommendation the gone pods' history gives when fed to the
// model as samples, for a fetch whose range ends at end: each pod's
// containers through container states of their own, into one aggregate per
// container name, and the default percentile estimator.
func expected(pods []historytest.Pod, app string, end time.Time) []vpav1.RecommendedContainerResources {
	aggs := map[string]*model.AggregateState{}
	for _, p := range pods {
		if p.Labels["app"] != app {
			continue
		}
		for _, c := range p.Containers {
			a, ok := aggs[c.Name]
			if !ok {
				a = model.NewAggregateState(model.DefaultConfig(), end)
				aggs[c.Name] = a
			}
			historytest.Feed(a, historytest.Expected(c, end, historyLength, time.Hour))
		}
	}
	return estimator.NewPercentile(estimator.DefaultConfig()).Recommend(aggs, nil, nil).Containers
}

// sameAs reports whether got equals the recommendation of a fetch that ended
// at the hour of from or of to (the recommender fetched in between).
func sameAs(got *vpav1.RecommendedPodResources, pods []historytest.Pod, app string, from, to time.Time) error {
	if got == nil {
		return fmt.Errorf("no recommendation")
	}
	var want []vpav1.RecommendedContainerResources
	for _, end := range []time.Time{from.Truncate(time.Hour), to.Truncate(time.Hour)} {
		want = expected(pods, app, end)
		if apiequality.Semantic.DeepEqual(got.ContainerRecommendations, want) {
			return nil
		}
	}
	return fmt.Errorf("recommendation from Prometheus\n got %+v\nwant %+v (the same history fed as samples)", got.ContainerRecommendations, want)
}

// metric reads a counter or gauge from the recommender's /metrics.
func metric(t *testing.T, port int, name string) float64 {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindSubmatch(body)
	if m == nil {
		t.Fatalf("metric %s not found", name)
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestFirstLoopHasTheBackfilledHistory: a VPA whose pods have eight days of
// history in Prometheus gets, in the recommender's first loop, exactly the
// recommendation that the same history fed as samples gives.
func TestFirstLoopHasTheBackfilledHistory(t *testing.T) {
	e := setup(t, gonePods)
	prom := e.c.NewPrometheus(t, framework.PrometheusOptions{OpenMetrics: e.series})
	prom.Start(t)
	e.scaledToZero(t, "web")
	e.createVPA(t, "web", "Deployment", "web")

	from := time.Now()
	port := framework.FreePort(t)
	rec := e.run(t, prom.URL, port)
	var v *vpav1.VerticalPodAutoscaler
	framework.WaitFor(t, 2*time.Minute, func() (bool, error) {
		v = e.getVPA(t, "web")
		return v.Status.Conditions != nil, nil
	})
	to := time.Now()
	if err := sameAs(v.Status.Recommendation, gonePods(e.ns), "web", from, to); err != nil {
		t.Fatalf("first status: %v\nconditions %+v", err, v.Status.Conditions)
	}
	if c := framework.Condition(v, vpav1.FetchingHistory); c != nil {
		t.Errorf("FetchingHistory = %+v with the history loaded", c)
	}
	if c := framework.Condition(v, vpav1.NoPodsMatched); c == nil || c.Status != corev1.ConditionTrue {
		t.Errorf("NoPodsMatched = %+v, want True: the Deployment has no pods", c)
	}
	if n := metric(t, port, `vpa_recommender_history_loads_total{result="success"}`); n != 1 {
		t.Errorf("history loads = %v, want 1", n)
	}
	if !strings.Contains(rec.Log(), `"Applied usage history"`) {
		t.Error("the recommender did not log the history it applied")
	}
	cps, err := e.vpa.AutoscalingV1().VerticalPodAutoscalerCheckpoints(e.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cps.Items) != 0 {
		t.Errorf("%d checkpoints written with --storage=prometheus", len(cps.Items))
	}
}

// TestPrometheusDownAtStart: the recommender keeps running, the VPA says
// FetchingHistory with the error and gets no recommendation computed without
// its history; fetches are retried, and once Prometheus is up the history
// is used.
func TestPrometheusDownAtStart(t *testing.T) {
	e := setup(t, gonePods)
	prom := e.c.NewPrometheus(t, framework.PrometheusOptions{OpenMetrics: e.series})
	e.scaledToZero(t, "web")
	e.createVPA(t, "web", "Deployment", "web")

	port := framework.FreePort(t)
	// The labels of pods that are gone, from any point of the range.
	rec := e.run(t, prom.URL, port, `--metric-for-pod-labels=up{job="kubernetes-pods"}[8d]`)
	var c *vpav1.VerticalPodAutoscalerCondition
	framework.WaitFor(t, 2*time.Minute, func() (bool, error) {
		v := e.getVPA(t, "web")
		if v.Status.Recommendation != nil {
			t.Fatalf("recommendation %+v written without the history", v.Status.Recommendation)
		}
		c = framework.Condition(v, vpav1.FetchingHistory)
		return c != nil && c.Status == corev1.ConditionTrue && c.Reason == "HistoryFetchFailed" && strings.Contains(c.Message, "connection refused"), nil
	})
	t.Logf("while Prometheus is down: %s: %s", c.Reason, c.Message)
	framework.WaitFor(t, time.Minute, func() (bool, error) {
		return metric(t, port, `vpa_recommender_history_loads_total{result="error"}`) >= 2, nil
	})
	if exited, err := rec.Exited(); exited {
		t.Fatalf("the recommender exited: %v", err)
	}

	from := time.Now()
	prom.Start(t)
	var v *vpav1.VerticalPodAutoscaler
	framework.WaitFor(t, 2*time.Minute, func() (bool, error) {
		v = e.getVPA(t, "web")
		return v.Status.Recommendation != nil, nil
	})
	if err := sameAs(v.Status.Recommendation, gonePods(e.ns), "web", from, time.Now()); err != nil {
		t.Fatal(err)
	}
	if c := framework.Condition(v, vpav1.FetchingHistory); c != nil {
		t.Errorf("FetchingHistory = %+v after the history was loaded", c)
	}
}

// TestQueriesPrometheusRefusesAreSplit: a Prometheus that refuses to load
// more than 300 samples at once (the whole range of three series returns 579 points)
// still serves the whole history, in smaller queries.
func TestQueriesPrometheusRefusesAreSplit(t *testing.T) {
	e := setup(t, gonePods)
	prom := e.c.NewPrometheus(t, framework.PrometheusOptions{OpenMetrics: e.series, MaxSamples: 300})
	prom.Start(t)
	e.scaledToZero(t, "web")
	e.createVPA(t, "web", "Deployment", "web")

	from := time.Now()
	port := framework.FreePort(t)
	e.run(t, prom.URL, port)
	var v *vpav1.VerticalPodAutoscaler
	framework.WaitFor(t, 2*time.Minute, func() (bool, error) {
		v = e.getVPA(t, "web")
		return v.Status.Recommendation != nil, nil
	})
	if err := sameAs(v.Status.Recommendation, gonePods(e.ns), "web", from, time.Now()); err != nil {
		t.Fatal(err)
	}
	if n := metric(t, port, "vpa_recommender_history_query_splits_total"); n == 0 {
		t.Error("no query was split: the limit did not bite")
	}
}

// TestLivePodsLabelsComeFromTheAPIServer: the pod labels metric has no
// series for a pod that still runs; its labels come from the API server, and
// its history counts.
func TestLivePodsLabelsComeFromTheAPIServer(t *testing.T) {
	pods := func(ns string) []historytest.Pod {
		return []historytest.Pod{{Namespace: ns, Name: "db-0", Containers: []historytest.Container{{Name: "app", Usage: webApp}}}}
	}
	e := setup(t, pods)
	prom := e.c.NewPrometheus(t, framework.PrometheusOptions{OpenMetrics: e.series})
	prom.Start(t)
	w := framework.Workload{Name: "db", Usage: framework.Usage{CPU: "50m", Memory: "100Mi"}}
	one := int32(1)
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: e.ns},
		Spec: appsv1.StatefulSetSpec{
			Replicas: &one, ServiceName: "db",
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			Template: w.PodTemplate(),
		},
	}
	if _, err := e.c.Client.AppsV1().StatefulSets(e.ns).Create(context.Background(), sts, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.c.WaitForPod(t, e.ns, "db-0", framework.PodRunning)
	e.createVPA(t, "db", "StatefulSet", "db")

	e.run(t, prom.URL, framework.FreePort(t))
	var v *vpav1.VerticalPodAutoscaler
	framework.WaitFor(t, 2*time.Minute, func() (bool, error) {
		v = e.getVPA(t, "db")
		return v.Status.Recommendation != nil, nil
	})
	r := v.Status.Recommendation.ContainerRecommendations[0]
	// Live usage is 100Mi; the history peaks at 300Mi + 13×8Mi + 400Mi
	// every day.
	if mem := r.Target[corev1.ResourceMemory]; mem.Value() < 800*mi {
		t.Errorf("memory target %s ignores the pod's history (daily peaks of 804Mi)", mem.String())
	}
	if cpu := r.Target[corev1.ResourceCPU]; cpu.MilliValue() < 400 {
		t.Errorf("CPU target %s ignores the pod's history (150m to 610m over each day)", cpu.String())
	}
}
