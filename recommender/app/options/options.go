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

// Package options holds the recommender's command-line options: every flag of
// upstream VPA's recommender with the same name and default, plus OpenVPA's
// own (--checkpoints-write-interval, --estimator).
package options

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/featuregate"

	"github.com/openvpa/openvpa/pkg/component"
	"github.com/openvpa/openvpa/pkg/features"
	"github.com/openvpa/openvpa/pkg/kubeclient"
	"github.com/openvpa/openvpa/pkg/leaderelection"
	"github.com/openvpa/openvpa/pkg/namespaces"
	"github.com/openvpa/openvpa/pkg/promhistory"
	"github.com/openvpa/openvpa/pkg/shards"
	"github.com/openvpa/openvpa/recommender/app/options/tunables"
	"github.com/openvpa/openvpa/recommender/estimator"
	"github.com/openvpa/openvpa/recommender/input/history"
	"github.com/openvpa/openvpa/recommender/model"
)

// Storage modes of --storage.
const (
	StorageCheckpoint = "checkpoint"
	StoragePrometheus = "prometheus"
)

// Ways --shard-by divides the VPAs.
const (
	ShardByVPA       = "vpa"
	ShardByNamespace = "namespace"
)

// LeaseName is the recommender's leader election lease.
const LeaseName = "vpa-recommender-lease"

// Prometheus holds the history-provider flags (--storage=prometheus),
// which `kubectl vpa replay` shares.
type Prometheus = promhistory.Flags

// Options are the recommender's settings.
type Options struct {
	Kube           kubeclient.Options
	Namespaces     namespaces.Options
	LeaderElection leaderelection.Options
	Features       featuregate.MutableFeatureGate

	RecommenderName          string
	RecommenderInterval      time.Duration
	CheckpointsGCInterval    time.Duration
	CheckpointsTimeout       time.Duration
	CheckpointsWriteInterval time.Duration
	MinCheckpoints           int
	UpdateWorkerCount        int
	Address                  string
	Profiling                bool
	Storage                  string
	MemorySaver              bool
	// RecommendationMetrics exports every VPA's recommendation as gauges.
	RecommendationMetrics bool
	// NodeFit caps recommendations to the largest node the pods may use.
	NodeFit bool
	// QuotaFit checks recommendations against the namespaces'
	// ResourceQuotas (the ResourceQuotaConflict condition).
	QuotaFit bool
	// PolicyController runs the policy controller on the leader: a managed
	// VPA for every workload a VerticalPodAutoscalerPolicy or its
	// namespace's openvpa.io/vpa-update-mode label selects.
	PolicyController bool
	// YieldToHPA reports resources an HPA scales on by utilization as left
	// to it (HPAConflict reason ResourceYieldedToHPA).
	YieldToHPA bool
	Shards     int
	ShardBy    string
	Estimator  string

	// Estimators holds every estimator's tunables (recommendation-margin-fraction,
	// percentiles, the peak estimator's margins, ...).
	Estimators estimator.Options
	// Model tunables (half-lives, memory windows, OOM bump).
	Model model.Config

	MaxAllowedCPU    string
	MaxAllowedMemory string

	UseExternalMetrics          bool
	ExternalMetricsCPUMetric    string
	ExternalMetricsMemoryMetric string

	Prometheus Prometheus

	Logging *component.Logging
}

// NewOptions returns upstream's defaults.
func NewOptions() *Options {
	return &Options{
		Logging:                  component.NewLogging(),
		Kube:                     kubeclient.NewOptions("vpa-recommender"),
		LeaderElection:           leaderelection.NewOptions(LeaseName),
		Features:                 features.NewGate(),
		RecommenderName:          "default",
		RecommenderInterval:      time.Minute,
		CheckpointsGCInterval:    10 * time.Minute,
		CheckpointsTimeout:       time.Minute,
		CheckpointsWriteInterval: 10 * time.Minute,
		MinCheckpoints:           10,
		UpdateWorkerCount:        10,
		Address:                  ":8942",
		Storage:                  StorageCheckpoint,
		ShardBy:                  ShardByVPA,
		Estimator:                estimator.PercentileName,
		Estimators:               estimator.DefaultOptions(),
		Model:                    *model.DefaultConfig(),
		Prometheus:               promhistory.DefaultFlags(),
		NodeFit:                  true,
		QuotaFit:                 true,
		YieldToHPA:               true,
	}
}

// AddFlags registers every flag on fs, klog's included.
func (o *Options) AddFlags(fs *pflag.FlagSet) { o.FlagSections().AddTo(fs) }

// FlagSections registers every flag, in the sections --help shows.
func (o *Options) FlagSections() *component.Sections {
	s := &component.Sections{}
	fs := s.FlagSet("recommender")
	fs.StringVar(&o.RecommenderName, "recommender-name", o.RecommenderName, "Set the recommender name. Recommender will generate recommendations for VPAs that configure the same recommender name. If the recommender name is left as default it will also generate recommendations that don't explicitly specify recommender.")
	fs.DurationVar(&o.RecommenderInterval, "recommender-interval", o.RecommenderInterval, "How often metrics should be fetched")
	fs.DurationVar(&o.CheckpointsGCInterval, "checkpoints-gc-interval", o.CheckpointsGCInterval, "How often orphaned checkpoints should be garbage collected")
	fs.DurationVar(&o.CheckpointsTimeout, "checkpoints-timeout", o.CheckpointsTimeout, "Timeout for writing checkpoints since the start of the recommender's main loop")
	fs.DurationVar(&o.CheckpointsWriteInterval, "checkpoints-write-interval", o.CheckpointsWriteInterval, "How often each VPA's checkpoints are written; writes are spread evenly over the interval, and all are written on graceful shutdown")
	fs.IntVar(&o.MinCheckpoints, "min-checkpoints", o.MinCheckpoints, "Minimum number of checkpoints to write per recommender's main loop: while status writes of earlier loops are backlogged, due checkpoints wait except this many per loop (none while first recommendations wait for the QPS budget)")
	fs.IntVar(&o.UpdateWorkerCount, "update-worker-count", o.UpdateWorkerCount, "Number of concurrent workers to update VPA recommendations and checkpoints. When increasing this setting, make sure the client-side rate limits (kube-api-qps and kube-api-burst) are either increased or turned off as well.")
	fs.StringVar(&o.Address, "address", o.Address, "The address to expose Prometheus metrics and health endpoints.")
	fs.BoolVar(&o.Profiling, "profiling", o.Profiling, "Is debug/pprof endpoint enabled")
	fs.StringVar(&o.Storage, "storage", o.Storage, `Specifies storage mode. Supported values: "prometheus", "checkpoint"`)
	fs.BoolVar(&o.MemorySaver, "memory-saver", o.MemorySaver, "If true, only track pods which have an associated VPA")
	fs.BoolVar(&o.RecommendationMetrics, "recommendation-metrics", o.RecommendationMetrics, "Export each VPA's recommendation as gauges vpa_recommender_recommendation_<bound>_<cpu_cores|memory_bytes>{namespace,verticalpodautoscaler,container}: 8 series per container of every VPA with a recommendation (target, lower and upper bound, uncapped target, for CPU and memory); deleted with the VPA")
	fs.IntVar(&o.Shards, "shards", o.Shards, "Divide the VPAs among the recommender's replicas in this many shards (at most 64), each held through a Lease <leader-elect-resource-name>-shard-<i> in --leader-elect-resource-namespace, with the --leader-elect-lease-duration, -renew-deadline and -retry-period timings; replicas can be added and removed at any time. 0: one replica serves every VPA (use --leader-elect for standbys). Excludes --leader-elect.")
	fs.StringVar(&o.ShardBy, "shard-by", o.ShardBy, `How --shards divides the VPAs: "vpa" hashes each VPA's namespace/name, so every shard has VPAs of every namespace and each replica caches every pod, controller and VPA; "namespace" hashes the namespace, so all VPAs of a namespace are in one shard and each replica caches only its shards' namespaces (and lists them again when its shards change)`)
	fs.StringVar(&o.Estimator, "estimator", o.Estimator, `Estimator computing recommendations: "percentile" (upstream's chain), "peak" or "adaptive"`)
	fs.BoolVar(&o.NodeFit, "node-fit", o.NodeFit, "Cap each VPA's target and bounds (not its uncappedTarget) so that its pods fit the largest node they may be scheduled on (nodeSelector, required node affinity, tolerations; allocatable less the requests of the DaemonSet pods on it and of the pods' other containers), and set the RecommendationCappedToNode condition. Needs list and watch on nodes and pods; the recommender is ready once both are cached. false gives upstream's numbers")
	fs.BoolVar(&o.YieldToHPA, "yield-to-hpa", o.YieldToHPA, "Report a resource that a HorizontalPodAutoscaler scales the VPA's target on by its utilization as left to the HPA (HPAConflict reason ResourceYieldedToHPA), as the admission controller and the updater, with their --yield-to-hpa, leave it. false reports the conflict as upstream's behaviour has it: both set the resource")
	fs.BoolVar(&o.PolicyController, "policy-controller", o.PolicyController, "Run the policy controller on the leader (with --shards, on the holder of the Lease <leader-elect-resource-name>-policy): every workload that a VerticalPodAutoscalerPolicy (openvpa.io/v1alpha1) or its namespace's openvpa.io/vpa-update-mode label selects gets a managed VPA, unless a VPA of its own targets it. Needs the VerticalPodAutoscalerPolicy CRD, list and watch on namespaces and on the workload kinds, and create, update and delete on VPAs")
	fs.BoolVar(&o.QuotaFit, "resource-quota-fit", o.QuotaFit, "Set the ResourceQuotaConflict condition on a VPA whose pods the namespace's ResourceQuotas would not admit with the whole recommendation. Needs list and watch on resourcequotas; without them nothing is checked")

	fs = s.FlagSet("estimator")
	tunables.AddEstimatorFlags(fs, &o.Estimators)
	fs.StringVar(&o.MaxAllowedCPU, "container-recommendation-max-allowed-cpu", o.MaxAllowedCPU, "Maximum amount of CPU that will be recommended for a container. VerticalPodAutoscaler-level maximum allowed takes precedence over the global maximum allowed.")
	fs.StringVar(&o.MaxAllowedMemory, "container-recommendation-max-allowed-memory", o.MaxAllowedMemory, "Maximum amount of memory that will be recommended for a container. VerticalPodAutoscaler-level maximum allowed takes precedence over the global maximum allowed.")

	tunables.AddModelFlags(s.FlagSet("model"), &o.Model)

	fs = s.FlagSet("history and external metrics")
	fs.BoolVar(&o.UseExternalMetrics, "use-external-metrics", o.UseExternalMetrics, "ALPHA.  Use an external metrics provider instead of metrics_server.")
	fs.StringVar(&o.ExternalMetricsCPUMetric, "external-metrics-cpu-metric", o.ExternalMetricsCPUMetric, "ALPHA.  Metric to use with external metrics provider for CPU usage.")
	fs.StringVar(&o.ExternalMetricsMemoryMetric, "external-metrics-memory-metric", o.ExternalMetricsMemoryMetric, "ALPHA.  Metric to use with external metrics provider for memory usage.")

	o.Prometheus.AddFlags(fs, "prometheus-address")

	o.Kube.AddFlags(s.FlagSet("kubernetes client"))
	o.Namespaces.AddFlags(s.FlagSet("namespaces"))
	o.LeaderElection.AddFlags(s.FlagSet("leader election"))
	features.AddFlag(s.FlagSet("feature gates"), o.Features)
	s.AddLogging(o.Logging)
	return s
}

// Config is what the recommender runs with: the validated options and what
// they resolve to.
type Config struct {
	Options *Options
	// REST is the API server's client configuration (--kubeconfig, the
	// client's QPS and burst).
	REST *rest.Config
	// History is the Prometheus history provider's configuration; nil
	// unless --storage=prometheus.
	History *history.Config
}

// Config resolves the validated options.
func (o *Options) Config() (Config, error) {
	c := Config{Options: o}
	var err error
	if c.REST, err = o.Kube.RESTConfig(); err != nil {
		return c, err
	}
	if o.Storage == StoragePrometheus {
		h, err := o.HistoryConfig()
		if err != nil {
			return c, err
		}
		c.History = &h
	}
	return c, nil
}

// Validate reports every invalid option at once.
func (o *Options) Validate() []error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	add(o.Kube.Validate())
	errs = append(errs, o.Logging.Validate()...)
	add(o.Namespaces.Validate())
	add(o.LeaderElection.Validate())
	add(tunables.Validate(o.Estimator, o.Estimators, o.Model))
	if o.RecommenderName == "" {
		add(errors.New("--recommender-name must not be empty"))
	}
	for name, d := range map[string]time.Duration{
		"--recommender-interval":       o.RecommenderInterval,
		"--checkpoints-gc-interval":    o.CheckpointsGCInterval,
		"--checkpoints-timeout":        o.CheckpointsTimeout,
		"--checkpoints-write-interval": o.CheckpointsWriteInterval,
	} {
		if d <= 0 {
			add(fmt.Errorf("%s must be positive, got %v", name, d))
		}
	}
	if o.Shards < 0 || o.Shards > shards.MaxShards {
		add(fmt.Errorf("--shards must be between 0 and %d, got %d", shards.MaxShards, o.Shards))
	}
	switch o.ShardBy {
	case ShardByVPA, ShardByNamespace:
	default:
		add(fmt.Errorf("--shard-by must be %q or %q, got %q", ShardByVPA, ShardByNamespace, o.ShardBy))
	}
	if o.Shards > 0 {
		le := o.LeaderElection
		switch {
		case le.LeaderElect:
			add(errors.New("--shards and --leader-elect are mutually exclusive: with shards every replica is active on its own shards"))
		case le.RenewDeadline <= 0 || le.RenewDeadline >= le.LeaseDuration || le.RetryPeriod <= 0:
			add(fmt.Errorf("--shards: --leader-elect-renew-deadline (%v) must be positive and less than --leader-elect-lease-duration (%v), and --leader-elect-retry-period positive", le.RenewDeadline, le.LeaseDuration))
		}
	}
	if o.UpdateWorkerCount < 1 {
		add(fmt.Errorf("--update-worker-count must be at least 1, got %d", o.UpdateWorkerCount))
	}
	switch o.Storage {
	case "", StorageCheckpoint:
	case StoragePrometheus:
		if _, err := o.HistoryConfig(); err != nil {
			add(err)
		}
	default:
		add(fmt.Errorf("--storage must be %q or %q, got %q", StorageCheckpoint, StoragePrometheus, o.Storage))
	}
	if o.UseExternalMetrics && o.ExternalMetricsCPUMetric == "" && o.ExternalMetricsMemoryMetric == "" {
		add(errors.New("--use-external-metrics needs --external-metrics-cpu-metric or --external-metrics-memory-metric"))
	}
	if _, err := o.MaxAllowed(); err != nil {
		add(err)
	}
	if p := o.Prometheus; o.Storage != StoragePrometheus && ((p.Username != "" || p.Password != "") && (p.BearerToken != "" || p.BearerTokenFile != "") || p.BearerToken != "" && p.BearerTokenFile != "") {
		// Checked in every mode, as upstream does (HistoryConfig checks it too).
		add(errors.New("--username/--password, --prometheus-bearer-token and --prometheus-bearer-token-file are mutually exclusive"))
	}
	return errs
}

// HistoryConfig returns the Prometheus history provider's configuration
// (--storage=prometheus), validated.
func (o *Options) HistoryConfig() (history.Config, error) {
	return o.Prometheus.Config("prometheus-address")
}

// Warnings returns notes about deprecated flags that are set.
func (o *Options) Warnings() []string {
	var w []string
	if o.Estimators.Config.HumanizeMemory {
		w = append(w, "--humanize-memory is deprecated")
	}
	return w
}

// MaxAllowed parses --container-recommendation-max-allowed-cpu and -memory.
func (o *Options) MaxAllowed() (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	for name, v := range map[corev1.ResourceName]string{corev1.ResourceCPU: o.MaxAllowedCPU, corev1.ResourceMemory: o.MaxAllowedMemory} {
		if strings.TrimSpace(v) == "" {
			continue
		}
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("--container-recommendation-max-allowed-%s: %w", name, err)
		}
		out[name] = q
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// EstimatorOptions returns the estimators' settings with the global
// max-allowed values applied.
func (o *Options) EstimatorOptions() estimator.Options {
	eo := o.Estimators
	if m, err := o.MaxAllowed(); err == nil {
		eo.Config.MaxAllowed = m
	}
	return eo
}

// ModelConfig returns the model's settings for the chosen estimator (see
// estimator.ModelConfig).
func (o *Options) ModelConfig() model.Config {
	return estimator.ModelConfig(o.Estimator, o.Model)
}
