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

package policy

import (
	"github.com/prometheus/client_golang/prometheus"
)

type controllerMetrics struct {
	writes *prometheus.CounterVec
	errors prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *controllerMetrics {
	m := &controllerMetrics{
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "vpa_recommender", Subsystem: "policy", Name: "vpa_writes_total",
			Help: "Writes of managed VPAs by the policy controller, by verb (create, update, delete; status for policy statuses).",
		}, []string{"verb"}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "vpa_recommender", Subsystem: "policy", Name: "reconcile_errors_total",
			Help: "Namespace reconciles of the policy controller that failed a write; each is retried with backoff.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.writes, m.errors)
	}
	return m
}
