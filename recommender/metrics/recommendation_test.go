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

package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
)

func recommendationOf(containers ...string) *vpav1.RecommendedPodResources {
	l := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("128Mi")}
	r := &vpav1.RecommendedPodResources{}
	for _, c := range containers {
		r.ContainerRecommendations = append(r.ContainerRecommendations, vpav1.RecommendedContainerResources{
			ContainerName: c, Target: l, LowerBound: l, UpperBound: l, UncappedTarget: l,
		})
	}
	return r
}

// series returns the per-VPA gauges' series as "namespace/vpa/container" per
// metric name.
func series(t *testing.T, reg *prometheus.Registry) map[string][]string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			out[mf.GetName()] = append(out[mf.GetName()], l["namespace"]+"/"+l["verticalpodautoscaler"]+"/"+l["container"])
		}
	}
	return out
}

func TestRecommendationGauges(t *testing.T) {
	reg := prometheus.NewRegistry()
	g := NewRecommendationGauges(reg)
	a := types.NamespacedName{Namespace: "ns", Name: "a"}
	b := types.NamespacedName{Namespace: "ns", Name: "b"}

	g.Observe(a, recommendationOf("app", "sidecar"))
	g.Observe(b, recommendationOf("app"))
	g.Sweep()
	got := series(t, reg)
	if len(got) != 8 {
		t.Fatalf("got %d metric names, want 8 (4 bounds × 2 resources): %v", len(got), got)
	}
	for name, s := range got {
		if len(s) != 3 {
			t.Errorf("%s has %v, want ns/a/app, ns/a/sidecar and ns/b/app", name, s)
		}
	}
	want := `
# HELP vpa_recommender_recommendation_target_memory_bytes Target the VPA recommends for the container, in bytes (--recommendation-metrics).
# TYPE vpa_recommender_recommendation_target_memory_bytes gauge
vpa_recommender_recommendation_target_memory_bytes{container="app",namespace="ns",verticalpodautoscaler="a"} 1.34217728e+08
vpa_recommender_recommendation_target_memory_bytes{container="app",namespace="ns",verticalpodautoscaler="b"} 1.34217728e+08
vpa_recommender_recommendation_target_memory_bytes{container="sidecar",namespace="ns",verticalpodautoscaler="a"} 1.34217728e+08
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "vpa_recommender_recommendation_target_memory_bytes"); err != nil {
		t.Error(err)
	}
	if v := testutil.ToFloat64(g.gauges[1][0].WithLabelValues("ns", "a", "app")); v != 0.25 {
		t.Errorf("lower bound CPU = %v, want 0.25", v)
	}

	// The sidecar goes from a's recommendation; b is deleted.
	g.Observe(a, recommendationOf("app"))
	g.Sweep()
	for name, s := range series(t, reg) {
		if len(s) != 1 || s[0] != "ns/a/app" {
			t.Errorf("after the sidecar and b went, %s has %v, want only ns/a/app", name, s)
		}
	}

	// a loses its recommendation, then is not seen at all.
	g.Observe(a, nil)
	g.Sweep()
	if got := series(t, reg); len(got) != 0 {
		t.Errorf("series left without recommendations: %v", got)
	}
}

func TestRecommendationGaugesNilIsOff(t *testing.T) {
	var g *RecommendationGauges
	g.Observe(types.NamespacedName{Namespace: "ns", Name: "a"}, recommendationOf("app"))
	g.Sweep()
}
