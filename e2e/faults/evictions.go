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

package faults

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/e2e/framework"
)

const (
	// churnName is the workload the updater keeps evicting through the rollouts.
	churnName = "churn"
	// churnRecommender is the recommender the churn VPA names: none runs by that name, so only
	// the test writes its recommendation.
	churnRecommender = "e2e-faults-churn"
	// updaterMetrics is the updater's metrics port.
	updaterMetrics = 8943
)

// churnTargets are the two recommendations the churn VPA alternates between. Each is its own
// lower and upper bound, so a pod admitted under one is outside the other's range and due for
// eviction.
var churnTargets = [2]corev1.ResourceList{
	framework.Resources("20m", "24Mi"),
	framework.Resources("30m", "24Mi"),
}

// churn keeps a Recreate workload due for eviction: whenever every pod of it has the
// recommendation, it writes the other one. Its recommender is the test, so the evictions do not
// wait on the recommender's history and go on while the recommender itself rolls. Meanwhile it
// reads every updater pod's failed-eviction counter each second, so that the count of a pod a
// rollout replaces is kept.
type churn struct {
	s       *suite
	current int // written by flip only
	halt    func()

	mu     sync.Mutex
	flips  int
	failed map[string]float64 // by updater pod: the largest count read
	err    error              // the last error reading or writing
}

// startChurn creates the churn workload and runs it until the test's cleanup.
func (s *suite) startChurn(t *testing.T) *churn {
	d := framework.MemhogOnRealNode(s.ns, churnName, []string{"--memory=4Mi", "--cpu=1m"}, framework.Resources("10m", "10Mi"), nil)
	d.Spec.Replicas = ptr.To[int32](2)
	ctx := context.Background()
	if _, err := s.c.Client.AppsV1().Deployments(s.ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mode := vpav1.UpdateModeRecreate
	v := &vpav1.VerticalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: churnName, Namespace: s.ns},
		Spec: vpav1.VerticalPodAutoscalerSpec{
			TargetRef:    &autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: churnName},
			UpdatePolicy: &vpav1.PodUpdatePolicy{UpdateMode: &mode},
			Recommenders: []*vpav1.VerticalPodAutoscalerRecommenderSelector{{Name: churnRecommender}},
		},
	}
	if _, err := s.e.VPAs.AutoscalingV1().VerticalPodAutoscalers(s.ns).Create(ctx, v, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c := &churn{s: s, failed: map[string]float64{}}
	// The pods start with neither recommendation: the first one makes them due.
	if err := c.recommend(ctx); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); c.flip(ctx) }()
	go func() { defer wg.Done(); c.scrape(ctx) }()
	c.halt = sync.OnceFunc(func() {
		cancel()
		wg.Wait()
	})
	t.Cleanup(c.halt)
	return c
}

// recommend writes churnTargets[current] as the churn VPA's recommendation.
func (c *churn) recommend(ctx context.Context) error {
	vpas := c.s.e.VPAs.AutoscalingV1().VerticalPodAutoscalers(c.s.ns)
	v, err := vpas.Get(ctx, churnName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	r := churnTargets[c.current]
	v.Status.Recommendation = &vpav1.RecommendedPodResources{ContainerRecommendations: []vpav1.RecommendedContainerResources{{
		ContainerName: "hog", Target: r, LowerBound: r, UpperBound: r, UncappedTarget: r,
	}}}
	_, err = vpas.UpdateStatus(ctx, v, metav1.UpdateOptions{})
	return err
}

// flip writes the other recommendation whenever both pods run with the current one.
func (c *churn) flip(ctx context.Context) {
	for ctx.Err() == nil {
		if err := c.flipOnce(ctx); err != nil && ctx.Err() == nil {
			c.setErr(err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (c *churn) flipOnce(ctx context.Context) error {
	pods, err := c.s.c.Client.CoreV1().Pods(c.s.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + churnName})
	if err != nil {
		return err
	}
	settled := 0
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && framework.PodRunning(&p) &&
			framework.SameRequests(p.Spec.Containers[0].Resources.Requests, churnTargets[c.current]) {
			settled++
		}
	}
	if settled < 2 {
		return nil
	}
	c.current = 1 - c.current
	if err := c.recommend(ctx); err != nil {
		c.current = 1 - c.current
		return err
	}
	c.mu.Lock()
	c.flips++
	c.mu.Unlock()
	return nil
}

// scrape reads the failed-eviction counter of every updater pod each second.
func (c *churn) scrape(ctx context.Context) {
	client := &http.Client{Timeout: 2 * time.Second}
	for ctx.Err() == nil {
		pods, err := c.s.c.Client.CoreV1().Pods(system).List(ctx, metav1.ListOptions{LabelSelector: "app=vpa-updater"})
		if err == nil {
			for _, p := range pods.Items {
				if p.Status.PodIP == "" {
					continue
				}
				// A pod that is not serving (starting, or gone) has nothing to read.
				if n, err := metricSum(ctx, client, fmt.Sprintf("http://%s:%d/metrics", p.Status.PodIP, updaterMetrics),
					"vpa_updater_failed_eviction_attempts_total"); err == nil {
					c.mu.Lock()
					c.failed[p.Name] = max(c.failed[p.Name], n)
					c.mu.Unlock()
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (c *churn) setErr(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.err = err
}

// churnState is what the churn saw so far.
type churnState struct {
	// failed holds the updater pods that counted failed evictions; read is how many were read.
	failed map[string]float64
	read   int
	// flips is how many recommendations were written; err the last error reading or writing.
	flips int
	err   error
}

func (c *churn) state() churnState {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := churnState{failed: map[string]float64{}, read: len(c.failed), flips: c.flips, err: c.err}
	for pod, n := range c.failed {
		if n > 0 {
			st.failed[pod] = n
		}
	}
	return st
}

// metricSum sums every series of a metric family read from url.
func metricSum(ctx context.Context, client *http.Client, url, family string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	fams, err := parseMetrics(resp.Body)
	if err != nil {
		return 0, err
	}
	var sum float64
	if f := fams[family]; f != nil {
		for _, m := range f.Metric {
			sum += m.GetCounter().GetValue()
		}
	}
	return sum, nil
}

func parseMetrics(r io.Reader) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(r)
}

// evictionCodes is kube-apiserver's count of pod evictions it answered, by response code: every
// eviction any client asked for, as the API server saw it.
func (s *suite) evictionCodes(ctx context.Context) (map[string]float64, error) {
	body, err := s.c.Client.CoreV1().RESTClient().Get().AbsPath("/metrics").Stream(ctx)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	fams, err := parseMetrics(body)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	f := fams["apiserver_request_total"]
	if f == nil {
		return nil, fmt.Errorf("kube-apiserver exports no apiserver_request_total")
	}
	for _, m := range f.Metric {
		l := map[string]string{}
		for _, p := range m.Label {
			l[p.GetName()] = p.GetValue()
		}
		if l["resource"] == "pods" && l["subresource"] == "eviction" {
			out[l["code"]] += m.GetCounter().GetValue()
		}
	}
	return out, nil
}

// evictionsSince returns, by response code, the evictions the API server answered since before
// (all of them for a nil before).
func (s *suite) evictionsSince(t *testing.T, before map[string]float64) map[string]float64 {
	t.Helper()
	var now map[string]float64
	framework.WaitFor(t, time.Minute, func() (bool, error) {
		var err error
		now, err = s.evictionCodes(context.Background())
		return err == nil, err
	})
	out := map[string]float64{}
	for code, n := range now {
		if d := n - before[code]; d > 0 {
			out[code] = d
		}
	}
	return out
}

// describeCodes prints counts by code in a stable order.
func describeCodes(m map[string]float64) string {
	parts := []string{}
	for _, code := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%v × %s", m[code], code))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// stop deletes the churn workload, so that the faults after the rollouts see only the prober's.
func (c *churn) stop(t *testing.T) {
	c.halt()
	ctx := context.Background()
	if err := c.s.e.VPAs.AutoscalingV1().VerticalPodAutoscalers(c.s.ns).Delete(ctx, churnName, metav1.DeleteOptions{}); err != nil {
		t.Error(err)
	}
	if err := c.s.c.Client.AppsV1().Deployments(c.s.ns).Delete(ctx, churnName, metav1.DeleteOptions{}); err != nil {
		t.Error(err)
	}
}
