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

// Package metrics defines the recommender's Prometheus metrics, with
// upstream's names, and OpenVPA's additions.
package metrics

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
)

// Steps of the loop, the values of the step label.
const (
	StepLoadVPAs = "LoadVPAs"
	StepLoadPods = "LoadPods"
	// StepLoadHistory applies history fetched from Prometheus (not upstream's).
	StepLoadHistory         = "LoadHistory"
	StepLoadMetrics         = "LoadMetrics"
	StepDeleteRemovedPods   = "DeleteRemovedPods"
	StepUpdateVPAs          = "UpdateVPAs"
	StepMaintainCheckpoints = "MaintainCheckpoints"
	StepGarbageCollect      = "GarbageCollect"
	StepTotal               = "total"
)

// Metrics are the recommender's Prometheus metrics, with upstream's names.
type Metrics struct {
	VPAObjects            *prometheus.GaugeVec
	RecommendationLatency prometheus.Histogram
	ExecutionLatency      *prometheus.HistogramVec
	AggregateStates       prometheus.Gauge
	MetricServerResponses *prometheus.CounterVec
	// APIWrites counts status patches, checkpoint writes and deletions
	// (OpenVPA addition).
	APIWrites *prometheus.CounterVec
	// StatusWritesWaiting is the number of VPAs whose status write the
	// last loop left for a later one (Config.StatusWritesPerLoop; OpenVPA
	// addition).
	StatusWritesWaiting prometheus.Gauge
	// CheckpointWritesPostponed counts checkpoint writes left for the
	// next loop because --checkpoints-timeout ran out before their turn
	// (OpenVPA addition).
	CheckpointWritesPostponed prometheus.Counter
	// OOMKillsAfterUpdate counts OOM kills of containers within
	// OOMAfterUpdateWindow of their pod's last update by OpenVPA (OpenVPA
	// addition).
	OOMKillsAfterUpdate prometheus.Counter
}

// OOMAfterUpdateWindow is how soon after its pod's update an OOM kill
// counts in oom_kills_after_update_total: the updater's quick-OOM window.
const OOMAfterUpdateWindow = 10 * time.Minute

// New creates the metrics and registers them on reg (if not nil).
func New(reg prometheus.Registerer) *Metrics {
	const ns = "vpa_recommender"
	m := &Metrics{
		VPAObjects: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: ns, Name: "vpa_objects_count", Help: "Number of VPA objects present in the cluster.",
		}, []string{"update_mode", "has_recommendation", "api", "matches_pods", "unsupported_config"}),
		RecommendationLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: ns, Name: "recommendation_latency_seconds", Help: "Time elapsed from creating a valid VPA configuration to the first recommendation.",
			Buckets: []float64{1.0, 2.0, 5.0, 7.5, 10.0, 20.0, 30.0, 40.00, 50.0, 60.0, 90.0, 120.0, 150.0, 180.0, 240.0, 300.0, 600.0, 900.0, 1800.0},
		}),
		ExecutionLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: ns, Name: "execution_latency_seconds", Help: "Time spent in various parts of VPA Recommender main loop.",
			Buckets: []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0},
		}, []string{"step"}),
		AggregateStates: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: ns, Name: "aggregate_container_states_count", Help: "Number of aggregate container states being tracked by the recommender",
		}),
		MetricServerResponses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "metric_server_responses", Help: "Count of responses to queries to metrics server",
		}, []string{"is_error", "client_name"}),
		APIWrites: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "api_writes_total", Help: "API writes made by the recommender, by kind (status, checkpoint, checkpoint_delete) and result.",
		}, []string{"kind", "result"}),
		StatusWritesWaiting: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: ns, Name: "status_writes_waiting", Help: "VPAs whose status write the last loop left for a later loop, because more writes were due than the client's rate limit writes in one interval.",
		}),
		CheckpointWritesPostponed: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: ns, Name: "checkpoint_writes_postponed_total", Help: "Checkpoint writes left for the next loop because --checkpoints-timeout ran out before their turn came.",
		}),
		OOMKillsAfterUpdate: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: ns, Name: "oom_kills_after_update_total", Help: "OOM kills of containers within 10 minutes of their pod's creation with requests patched by the admission controller, or of its latest in-place resize by the updater.",
		}),
	}
	for _, kind := range []string{"status", "checkpoint", "checkpoint_delete"} {
		for _, result := range []string{"success", "error"} {
			m.APIWrites.WithLabelValues(kind, result)
		}
	}
	if reg != nil {
		reg.MustRegister(m.VPAObjects, m.RecommendationLatency, m.ExecutionLatency, m.AggregateStates, m.MetricServerResponses, m.APIWrites, m.StatusWritesWaiting, m.CheckpointWritesPostponed, m.OOMKillsAfterUpdate)
	}
	return m
}

// VPACounts counts VPA objects by the labels of vpa_objects_count.
type VPACounts map[vpaCountKey]int

type vpaCountKey struct {
	mode                                    vpav1.UpdateMode
	hasRecommendation, matches, unsupported bool
}

// Add counts one VPA.
func (c VPACounts) Add(mode vpav1.UpdateMode, hasRecommendation, matchesPods, unsupportedConfig bool) {
	c[vpaCountKey{mode: mode, hasRecommendation: hasRecommendation, matches: matchesPods, unsupported: unsupportedConfig}]++
}

// SetVPACounts replaces vpa_objects_count with counts.
func (m *Metrics) SetVPACounts(counts VPACounts) {
	m.VPAObjects.Reset()
	for k, n := range counts {
		m.VPAObjects.WithLabelValues(string(k.mode), strconv.FormatBool(k.hasRecommendation), "v1",
			strconv.FormatBool(k.matches), strconv.FormatBool(k.unsupported)).Set(float64(n))
	}
}
