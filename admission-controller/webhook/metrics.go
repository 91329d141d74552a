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

package webhook

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

const metricsNamespace = "vpa_admission_controller"

// outcome is the status label of a review.
type outcome int

const (
	statusError outcome = iota
	statusSkipped
	statusApplied
	numOutcomes
)

var outcomeLabels = [numOutcomes]string{statusError: "error", statusSkipped: "skipped", statusApplied: "applied"}

// kind is the resource label of a review.
type kind int

const (
	resourcePod kind = iota
	resourceVPA
	resourceUnknown
	numKinds
)

var kindLabels = [numKinds]string{resourcePod: "Pod", resourceVPA: "VPA", resourceUnknown: "unknown"}

// Whether a pod review patched the pod (admission_pods_total{applied}).
const (
	notAPod = iota
	podPatched
	podNotPatched
)

// Metrics are the admission controller's metrics, with upstream's names.
// The series a review touches are looked up once, at creation.
type Metrics struct {
	podsTotal        *prometheus.CounterVec
	admissionLatency *prometheus.HistogramVec
	executionLatency *prometheus.HistogramVec
	conflicts        *prometheus.CounterVec

	latency                 [numOutcomes][numKinds]atomic.Value // of prometheus.Observer
	readRequest, admit, all prometheus.Observer
	podsApplied, podsNot    prometheus.Counter
}

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		podsTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: metricsNamespace, Name: "admission_pods_total",
			Help: "Number of pods processed by VPA Admission Controller.",
		}, []string{"applied"}),
		admissionLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: metricsNamespace, Name: "admission_latency_seconds",
			Help:    "Time spent in VPA Admission Controller.",
			Buckets: []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0},
		}, []string{"status", "resource"}),
		executionLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: metricsNamespace, Name: "execution_latency_seconds",
			Help:    "Time spent in various parts of VPA Admission Controller.",
			Buckets: []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0},
		}, []string{"step"}),
		conflicts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: metricsNamespace, Name: "limit_range_conflicts_total",
			Help: "Pods whose patch gave way to the namespace's LimitRanges, by the reason of the event on the VPA (LimitRangeConflict: left as they are; LimitRangeOverridesPolicy: capped past the VPA's resource policy).",
		}, []string{"reason"}),
	}
	if reg != nil {
		reg.MustRegister(m.podsTotal, m.admissionLatency, m.executionLatency, m.conflicts)
	}
	m.podsApplied = m.podsTotal.WithLabelValues("true")
	m.podsNot = m.podsTotal.WithLabelValues("false")
	m.readRequest = m.executionLatency.WithLabelValues("read_request")
	m.admit = m.executionLatency.WithLabelValues("admit")
	m.all = m.executionLatency.WithLabelValues("total")
	return m
}

// LimitRangeConflict counts a pod whose patch gave way to the LimitRanges,
// by event reason (for pod.Handler.WithConflictCounter).
func (m *Metrics) LimitRangeConflict(reason string) {
	m.conflicts.WithLabelValues(reason).Inc()
}

// latencyOf returns the admission_latency_seconds series of a status and
// resource, creating it on first use (as WithLabelValues would), so that
// only the series that occur are exported.
func (m *Metrics) latencyOf(status outcome, resource kind) prometheus.Observer {
	cell := &m.latency[status][resource]
	if o, ok := cell.Load().(prometheus.Observer); ok {
		return o
	}
	o := m.admissionLatency.WithLabelValues(outcomeLabels[status], kindLabels[resource])
	cell.Store(o)
	return o
}

func (m *Metrics) observe(start, read, admitted time.Time, status outcome, resource kind, pod int) {
	if m == nil {
		return
	}
	end := time.Now()
	m.latencyOf(status, resource).Observe(end.Sub(start).Seconds())
	m.readRequest.Observe(read.Sub(start).Seconds())
	if !admitted.IsZero() {
		m.admit.Observe(admitted.Sub(read).Seconds())
	}
	m.all.Observe(end.Sub(start).Seconds())
	switch pod {
	case podPatched:
		m.podsApplied.Inc()
	case podNotPatched:
		m.podsNot.Inc()
	}
}
