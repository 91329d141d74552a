package webhook

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

const metricsNamespace = "vpa_admission_controller"

// Metrics are the admission controller's metrics, with upstream's names.
type Metrics struct {
	podsTotal        *prometheus.CounterVec
	admissionLatency *prometheus.HistogramVec
	executionLatency *prometheus.HistogramVec
}

// Admission outcome labels.
const (
	statusError   = "error"
	statusSkipped = "skipped"
	statusApplied = "applied"

	resourcePod     = "Pod"
	resourceVPA     = "VPA"
	resourceUnknown = "unknown"
)

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
	}
	if reg != nil {
		reg.MustRegister(m.podsTotal, m.admissionLatency, m.executionLatency)
	}
	for _, v := range []string{"true", "false"} {
		m.podsTotal.WithLabelValues(v)
	}
	return m
}

func (m *Metrics) observe(start, read, admitted time.Time, status, resource string, podApplied *bool) {
	if m == nil {
		return
	}
	end := time.Now()
	m.admissionLatency.WithLabelValues(status, resource).Observe(end.Sub(start).Seconds())
	m.executionLatency.WithLabelValues("read_request").Observe(read.Sub(start).Seconds())
	if !admitted.IsZero() {
		m.executionLatency.WithLabelValues("admit").Observe(admitted.Sub(read).Seconds())
	}
	m.executionLatency.WithLabelValues("total").Observe(end.Sub(start).Seconds())
	if podApplied != nil {
		if *podApplied {
			m.podsTotal.WithLabelValues("true").Inc()
		} else {
			m.podsTotal.WithLabelValues("false").Inc()
		}
	}
}
