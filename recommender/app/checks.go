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

package app

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/kubeclient"
	"github.com/openvpa/openvpa/recommender/app/options"
	"github.com/openvpa/openvpa/recommender/input"
)

// historyStartWait bounds how long the first loop waits for the history of
// the VPAs that exist at the start (--storage=prometheus).
const historyStartWait = time.Minute

// externalCheckTimeout bounds the start-up check that the external metrics
// API is served.
const externalCheckTimeout = 30 * time.Second

// externalMetrics returns the --use-external-metrics source, failing when
// the API server does not serve the external metrics API.
func externalMetrics(ctx context.Context, cfg *rest.Config, o *options.Options) (*input.ExternalMetrics, error) {
	names := map[corev1.ResourceName]string{}
	if o.ExternalMetricsCPUMetric != "" {
		names[corev1.ResourceCPU] = o.ExternalMetricsCPUMetric
	}
	if o.ExternalMetricsMemoryMetric != "" {
		names[corev1.ResourceMemory] = o.ExternalMetricsMemoryMetric
	}
	ext, err := input.NewExternalMetrics(cfg, input.ExternalOptions{Metrics: names, ContainerNameLabel: o.Prometheus.ContainerNameLabel})
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, externalCheckTimeout)
	defer cancel()
	if err := ext.Check(cctx); err != nil {
		return nil, err
	}
	return ext, nil
}

// crdCheckTimeout bounds the readiness probe's discovery request.
const crdCheckTimeout = 5 * time.Second

// crdCheck reports whether the API server serves both kinds, through
// discovery (no extra RBAC needed).
func crdCheck(disc *kubeclient.Discovery) func() error {
	var ok atomic.Bool
	return func() error {
		if ok.Load() {
			return nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), crdCheckTimeout)
		defer cancel()
		l, err := disc.Resources(ctx, vpav1.SchemeGroupVersion)
		if err != nil {
			return fmt.Errorf("discovering %s: %w", vpav1.SchemeGroupVersion, err)
		}
		found := map[string]bool{}
		for _, r := range l.APIResources {
			found[r.Name] = true
		}
		for _, name := range []string{"verticalpodautoscalers", "verticalpodautoscalercheckpoints"} {
			if !found[name] {
				return fmt.Errorf("resource %s.autoscaling.k8s.io is not served", name)
			}
		}
		ok.Store(true)
		return nil
	}
}
