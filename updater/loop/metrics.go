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

package loop

import (
	"math"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

const metricsNamespace = "vpa_updater"

// Metrics are the updater's Prometheus metrics, with upstream's names.
type Metrics struct {
	ControlledPods           *prometheus.GaugeVec
	EvictablePods            *prometheus.GaugeVec
	EvictedPods              *prometheus.CounterVec
	VPAsWithEvictablePods    *prometheus.GaugeVec
	VPAsWithEvictedPods      *prometheus.GaugeVec
	FailedEvictions          *prometheus.CounterVec
	InPlaceUpdatablePods     *prometheus.GaugeVec
	InPlaceUpdatedPods       *prometheus.CounterVec
	VPAsWithInPlaceUpdatable *prometheus.GaugeVec
	VPAsWithInPlaceUpdated   *prometheus.GaugeVec
	FailedInPlaceUpdates     *prometheus.CounterVec
	InfeasibleSkips          *prometheus.CounterVec
	ExecutionLatency         *prometheus.HistogramVec
	// AdmissionControllerStatusInvalid counts loops skipped because the
	// admission controller's status Lease could not be read ("error") or was
	// missing or stale ("invalid").
	AdmissionControllerStatusInvalid *prometheus.CounterVec
	// DryRunDecisions counts what --dry-run would have done (OpenVPA only).
	DryRunDecisions *prometheus.CounterVec
	// LimitRangeConflicts counts pods whose update gave way to the
	// namespace's LimitRanges, by event reason (OpenVPA only).
	LimitRangeConflicts *prometheus.CounterVec
	// HPAScalePointWrites counts the writes of HPAs whose scale point is
	// kept (--hpa-scale-point), by action (record, retune, restore) and
	// result (success, forbidden, error) (OpenVPA only).
	HPAScalePointWrites *prometheus.CounterVec
}

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	g := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: metricsNamespace, Name: name, Help: help}, labels)
	}
	c := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: metricsNamespace, Name: name, Help: help}, labels)
	}
	m := &Metrics{
		ControlledPods:           g("controlled_pods_total", "Number of Pods controlled by VPA updater.", "vpa_size_log2", "update_mode"),
		EvictablePods:            g("evictable_pods_total", "Number of Pods matching evicition criteria.", "vpa_size_log2", "update_mode"),
		EvictedPods:              c("evicted_pods_total", "Number of Pods evicted by Updater to apply a new recommendation.", "vpa_size_log2", "update_mode", "vpa_name", "vpa_namespace"),
		VPAsWithEvictablePods:    g("vpas_with_evictable_pods_total", "Number of VPA objects with at least one Pod matching evicition criteria.", "vpa_size_log2", "update_mode"),
		VPAsWithEvictedPods:      g("vpas_with_evicted_pods_total", "Number of VPA objects with at least one evicted Pod.", "vpa_size_log2", "update_mode"),
		FailedEvictions:          c("failed_eviction_attempts_total", "Number of failed attempts to update Pods by eviction", "vpa_size_log2", "update_mode", "reason", "vpa_name", "vpa_namespace"),
		InPlaceUpdatablePods:     g("in_place_updatable_pods_total", "Number of Pods matching in place update criteria.", "vpa_size_log2"),
		InPlaceUpdatedPods:       c("in_place_updated_pods_total", "Number of Pods updated in-place by Updater to apply a new recommendation.", "vpa_size_log2", "vpa_name", "vpa_namespace"),
		VPAsWithInPlaceUpdatable: g("vpas_with_in_place_updatable_pods_total", "Number of VPA objects with at least one Pod matching in place update criteria.", "vpa_size_log2"),
		VPAsWithInPlaceUpdated:   g("vpas_with_in_place_updated_pods_total", "Number of VPA objects with at least one in-place updated Pod.", "vpa_size_log2"),
		FailedInPlaceUpdates:     c("failed_in_place_update_attempts_total", "Number of failed attempts to update Pods in-place.", "vpa_size_log2", "reason", "vpa_name", "vpa_namespace"),
		InfeasibleSkips:          c("in_place_infeasible_skip_pods_total", "Number of Pods skipped because an earlier in-place update was infeasible.", "vpa_size_log2", "vpa_name", "vpa_namespace"),
		ExecutionLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: metricsNamespace, Name: "execution_latency_seconds", Help: "Time spent in various parts of VPA Updater main loop.",
			Buckets: []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0},
		}, []string{"step"}),
		AdmissionControllerStatusInvalid: c("admission_controller_status_invalid_total", "Number of times Updater skipped its main loop because the Admission Controller status Lease was missing, stale or otherwise invalid.", "reason"),
		LimitRangeConflicts:              c("limit_range_conflicts_total", "Pods whose update gave way to the namespace's LimitRanges, by the reason of the event on the VPA (LimitRangeConflict: left as they are; LimitRangeOverridesPolicy: capped past the VPA's resource policy).", "reason"),
		HPAScalePointWrites:              c("hpa_scale_point_writes_total", "Writes of HorizontalPodAutoscalers whose scale point is kept (--hpa-scale-point), by action (record, retune, restore) and result (success, forbidden, error).", "action", "result"),
		DryRunDecisions:                  c("dry_run_decisions_total", "Updates --dry-run decided on without acting, by action (evict or in-place); the event on the pod names its VPA.", "action"),
	}
	for _, reason := range []string{"error", "invalid"} {
		m.AdmissionControllerStatusInvalid.WithLabelValues(reason)
	}
	reg.MustRegister(m.ControlledPods, m.EvictablePods, m.EvictedPods, m.VPAsWithEvictablePods, m.VPAsWithEvictedPods,
		m.FailedEvictions, m.InPlaceUpdatablePods, m.InPlaceUpdatedPods, m.VPAsWithInPlaceUpdatable, m.VPAsWithInPlaceUpdated,
		m.FailedInPlaceUpdates, m.InfeasibleSkips, m.ExecutionLatency, m.AdmissionControllerStatusInvalid, m.DryRunDecisions, m.LimitRangeConflicts, m.HPAScalePointWrites)
	return m
}

// sizeLog2 is upstream's vpa_size_log2 label: min(floor(log2(n)), 20).
func sizeLog2(n int) string {
	if n <= 0 {
		return "0"
	}
	return strconv.Itoa(int(math.Min(math.Floor(math.Log2(float64(n))), 20)))
}
