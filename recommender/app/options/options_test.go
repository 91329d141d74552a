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

package options

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestDefaults(t *testing.T) {
	o := NewOptions()
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	o.AddFlags(fs)
	want := map[string]string{
		"recommender-name": "default", "recommender-interval": "1m0s", "checkpoints-gc-interval": "10m0s",
		"checkpoints-timeout": "1m0s", "checkpoints-write-interval": "10m0s", "min-checkpoints": "10",
		"update-worker-count": "10", "address": ":8942", "storage": "checkpoint", "memory-saver": "false",
		"recommendation-margin-fraction": "0.15", "pod-recommendation-min-cpu-millicores": "25",
		"pod-recommendation-min-memory-mb": "250", "target-cpu-percentile": "0.9",
		"recommendation-lower-bound-cpu-percentile": "0.5", "recommendation-upper-bound-cpu-percentile": "0.95",
		"confidence-interval-cpu": "24h0m0s", "target-memory-percentile": "0.9",
		"recommendation-lower-bound-memory-percentile": "0.5", "recommendation-upper-bound-memory-percentile": "0.95",
		"confidence-interval-memory": "24h0m0s", "humanize-memory": "false", "round-cpu-millicores": "1",
		"round-memory-bytes": "1", "memory-aggregation-interval": "24h0m0s", "memory-aggregation-interval-count": "8",
		"memory-histogram-decay-half-life": "24h0m0s", "cpu-histogram-decay-half-life": "24h0m0s",
		"oom-bump-up-ratio": "1.2", "oom-min-bump-up-bytes": "1.048576e+08", "cpu-integer-post-processor-enabled": "false",
		"container-recommendation-max-allowed-cpu": "", "container-recommendation-max-allowed-memory": "",
		"use-external-metrics": "false", "prometheus-address": "http://prometheus.monitoring.svc",
		"prometheus-cadvisor-job-name": "kubernetes-cadvisor", "history-length": "8d", "history-resolution": "1h",
		"history-cpu-metric": "container_cpu_usage_seconds_total", "history-memory-metric": "container_memory_working_set_bytes",
		"prometheus-query-timeout": "5m", "pod-label-prefix": "pod_label_", "metric-for-pod-labels": `up{job="kubernetes-pods"}`,
		"pod-namespace-label": "kubernetes_namespace", "pod-name-label": "kubernetes_pod_name", "container-namespace-label": "namespace",
		"container-pod-name-label": "pod_name", "container-name-label": "name", "kube-api-qps": "50", "kube-api-burst": "100",
		"leader-elect": "false", "leader-elect-resource-name": "vpa-recommender-lease", "leader-elect-resource-namespace": "kube-system",
		"vpa-object-namespace": "", "ignored-vpa-object-namespaces": "", "v": "4", "estimator": "percentile",
	}
	for name, def := range want {
		f := fs.Lookup(name)
		if f == nil {
			t.Errorf("flag --%s missing", name)
			continue
		}
		if f.DefValue != def {
			t.Errorf("--%s default = %q, want %q", name, f.DefValue, def)
		}
	}
	if err := errors.Join(o.Validate()...); err != nil {
		t.Errorf("defaults do not validate: %v", err)
	}
}

func TestValidate(t *testing.T) {
	tests := map[string]struct {
		args    []string
		wantErr string
	}{
		"namespace flags exclusive": {args: []string{"--vpa-object-namespace=a", "--ignored-vpa-object-namespaces=b"}, wantErr: "mutually exclusive"},
		"prometheus auth exclusive": {args: []string{"--username=u", "--prometheus-bearer-token=t"}, wantErr: "mutually exclusive"},
		"bad storage":               {args: []string{"--storage=disk"}, wantErr: "--storage"},
		"bad max allowed":           {args: []string{"--container-recommendation-max-allowed-cpu=lots"}, wantErr: "max-allowed-cpu"},
		"zero interval":             {args: []string{"--recommender-interval=0"}, wantErr: "--recommender-interval"},
		"zero workers":              {args: []string{"--update-worker-count=0"}, wantErr: "--update-worker-count"},
		"unknown estimator":         {args: []string{"--estimator=magic"}, wantErr: "--estimator"},
		"fine":                      {args: []string{"--vpa-object-namespace=a", "--recommender-interval=5s"}},
		"prometheus storage":        {args: []string{"--storage=prometheus", "--prometheus-address=https://prom:9090", "--history-length=2w"}},
		"prometheus auth exclusive in prometheus mode": {args: []string{"--storage=prometheus", "--prometheus-bearer-token=t", "--prometheus-bearer-token-file=/f"}, wantErr: "mutually exclusive"},
		"bad history length":                           {args: []string{"--storage=prometheus", "--history-length=8days"}, wantErr: "--history-length"},
		"resolution above length":                      {args: []string{"--storage=prometheus", "--history-length=1h", "--history-resolution=2h"}, wantErr: "must not exceed"},
		"bad prometheus address":                       {args: []string{"--storage=prometheus", "--prometheus-address=prometheus:9090"}, wantErr: "--prometheus-address"},
		"bad pod labels metric":                        {args: []string{"--storage=prometheus", "--metric-for-pod-labels=sum(up)"}, wantErr: "--metric-for-pod-labels"},
		"bad container label":                          {args: []string{"--storage=prometheus", "--container-name-label=a-b"}, wantErr: "--container-name-label"},
		"history flags unused by checkpoint mode":      {args: []string{"--history-length=8days"}},
		"shards":                      {args: []string{"--shards=8"}},
		"too many shards":             {args: []string{"--shards=65"}, wantErr: "--shards"},
		"shards by namespace":         {args: []string{"--shards=8", "--shard-by=namespace"}},
		"shards by what":              {args: []string{"--shards=8", "--shard-by=pod"}, wantErr: "--shard-by"},
		"shards with leader election": {args: []string{"--shards=8", "--leader-elect"}, wantErr: "mutually exclusive"},
		"shards with bad timings":     {args: []string{"--shards=8", "--leader-elect-renew-deadline=20s"}, wantErr: "--leader-elect-renew-deadline"},
		"bad adaptive arms": {args: []string{"--estimator=adaptive", "--adaptive-memory-horizons=24h,-1h"},
			wantErr: "adaptive memory horizon must be > 0"},
		"adaptive CPU target above its upper bound": {args: []string{"--estimator=adaptive", "--adaptive-cpu-target-percentile=0.97"},
			wantErr: "above the CPU upper bound percentile 0.95"},
		"adaptive CPU target within the bounds": {args: []string{"--estimator=adaptive", "--adaptive-cpu-target-percentile=0.95"}},
		"external metrics unnamed":              {args: []string{"--use-external-metrics"}, wantErr: "--external-metrics-cpu-metric"},
		"external metrics":                      {args: []string{"--use-external-metrics", "--external-metrics-cpu-metric=cpu_usage"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o := NewOptions()
			fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
			o.AddFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			err := errors.Join(o.Validate()...)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error = %v, want containing %q", err, tc.wantErr)
			}
		})
	}
	o := NewOptions()
	o.MaxAllowedCPU = "2"
	if eo := o.EstimatorOptions(); eo.Config.MaxAllowed.Cpu().String() != "2" {
		t.Errorf("max allowed not applied: %v", eo.Config.MaxAllowed)
	}
	_ = time.Second
}

func TestEstimatorFlagAcceptsEveryKnownEstimator(t *testing.T) {
	for _, name := range []string{"percentile", "peak", "adaptive"} {
		o := NewOptions()
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		o.AddFlags(fs)
		if err := fs.Parse([]string{"--estimator=" + name, "--peak-memory-margin=0.2", "--adaptive-memory-margins=0,0.25", "--adaptive-memory-horizons=48h,168h"}); err != nil {
			t.Fatal(err)
		}
		if err := errors.Join(o.Validate()...); err != nil {
			t.Errorf("--estimator=%s rejected: %v", name, err)
		}
		if a := o.Estimators.Adaptive; len(a.MemoryMargins) != 2 || a.MemoryMargins[1] != 0.25 || len(a.MemoryHorizons) != 2 || a.MemoryHorizons[1] != 168*time.Hour {
			t.Errorf("adaptive arms not parsed: %+v", a)
		}
		// Only percentile keeps upstream's rule for windows that open at 0.
		if got, want := o.ModelConfig().ReplaceZeroPeak, name != "percentile"; got != want {
			t.Errorf("--estimator=%s: model ReplaceZeroPeak %v, want %v", name, got, want)
		}
	}
	o := NewOptions()
	o.Estimator = "nope"
	if errs := o.Validate(); len(errs) == 0 {
		t.Error("an unknown estimator must be rejected")
	}
}

// TestHistoryMetricFlagsReachTheQueries: --history-cpu-metric and
// --history-memory-metric name the series the Prometheus history is read
// from. Upstream registered both flags and ignored them until 1.7.1
// ("honour --history-cpu-metric and --history-memory-metric"); here they
// were always honoured.
func TestHistoryMetricFlagsReachTheQueries(t *testing.T) {
	o := NewOptions()
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--storage=prometheus", "--prometheus-address=http://prometheus:9090",
		"--history-cpu-metric=node_cpu_by_container", "--history-memory-metric=node_memory_by_container"}); err != nil {
		t.Fatal(err)
	}
	c, err := o.HistoryConfig()
	if err != nil {
		t.Fatal(err)
	}
	if q := c.CPUQuery("ns"); !strings.HasPrefix(q, "rate(node_cpu_by_container{") {
		t.Errorf("CPU query %q does not read --history-cpu-metric", q)
	}
	if q := c.MemoryQuery("ns"); !strings.HasPrefix(q, "node_memory_by_container{") {
		t.Errorf("memory query %q does not read --history-memory-metric", q)
	}
}
