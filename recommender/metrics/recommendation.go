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
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
)

// Bounds of a container recommendation, in the order of the gauge names.
var recommendationBounds = [...]string{"target", "lower_bound", "upper_bound", "uncapped_target"}

// Resources of the per-VPA gauges, with the unit in the gauge name.
var recommendationResources = [...]struct {
	name corev1.ResourceName
	unit string
}{{corev1.ResourceCPU, "cpu_cores"}, {corev1.ResourceMemory, "memory_bytes"}}

// RecommendationGauges export each VPA's recommendation, one series per VPA ×
// container × resource × bound, as
// vpa_recommender_recommendation_<bound>_<cpu_cores|memory_bytes>{namespace,
// verticalpodautoscaler, container}: the same names and labels as the
// kube-state-metrics configuration in deploy/components/monitoring gives.
// Observe every VPA of a loop, then Sweep: the series of VPAs that were not
// observed (deleted, or moved to another shard) go.
type RecommendationGauges struct {
	gauges [len(recommendationBounds)][len(recommendationResources)]*prometheus.GaugeVec
	// containers holds the containers exported per VPA; seen, the VPAs
	// observed since the last Sweep.
	containers map[types.NamespacedName][]string
	seen       map[types.NamespacedName]bool
}

// NewRecommendationGauges creates the gauges and registers them on reg (if
// not nil).
func NewRecommendationGauges(reg prometheus.Registerer) *RecommendationGauges {
	g := &RecommendationGauges{containers: map[types.NamespacedName][]string{}, seen: map[types.NamespacedName]bool{}}
	help := map[string]string{
		"target":          "Target the VPA recommends for the container",
		"lower_bound":     "Lower bound the VPA recommends for the container",
		"upper_bound":     "Upper bound the VPA recommends for the container",
		"uncapped_target": "Target the VPA recommends for the container, before its resource policy",
	}
	for i, b := range recommendationBounds {
		for j, r := range recommendationResources {
			g.gauges[i][j] = prometheus.NewGaugeVec(prometheus.GaugeOpts{
				Namespace: "vpa_recommender", Name: "recommendation_" + b + "_" + r.unit,
				Help: help[b] + ", in " + r.unit[len(r.name)+1:] + " (--recommendation-metrics).",
			}, []string{"namespace", "verticalpodautoscaler", "container"})
			if reg != nil {
				reg.MustRegister(g.gauges[i][j])
			}
		}
	}
	return g
}

// Observe sets the gauges of the VPA key to rec (nil: none).
func (g *RecommendationGauges) Observe(key types.NamespacedName, rec *vpav1.RecommendedPodResources) {
	if g == nil {
		return
	}
	g.seen[key] = true
	var now []string
	if rec != nil {
		for i := range rec.ContainerRecommendations {
			c := &rec.ContainerRecommendations[i]
			now = append(now, c.ContainerName)
			lists := [len(recommendationBounds)]corev1.ResourceList{c.Target, c.LowerBound, c.UpperBound, c.UncappedTarget}
			for b, l := range lists {
				for r, res := range recommendationResources {
					gv := g.gauges[b][r]
					q, ok := l[res.name]
					if !ok {
						gv.DeleteLabelValues(key.Namespace, key.Name, c.ContainerName)
						continue
					}
					gv.WithLabelValues(key.Namespace, key.Name, c.ContainerName).Set(q.AsApproximateFloat64())
				}
			}
		}
	}
	for _, old := range g.containers[key] {
		if !slices.Contains(now, old) {
			g.delete(key, old)
		}
	}
	if len(now) == 0 {
		delete(g.containers, key)
		return
	}
	g.containers[key] = now
}

// Sweep deletes the series of the VPAs not observed since the last Sweep.
func (g *RecommendationGauges) Sweep() {
	if g == nil {
		return
	}
	for key, containers := range g.containers {
		if g.seen[key] {
			continue
		}
		for _, c := range containers {
			g.delete(key, c)
		}
		delete(g.containers, key)
	}
	clear(g.seen)
}

func (g *RecommendationGauges) delete(key types.NamespacedName, container string) {
	for b := range g.gauges {
		for r := range g.gauges[b] {
			g.gauges[b][r].DeleteLabelValues(key.Namespace, key.Name, container)
		}
	}
}
