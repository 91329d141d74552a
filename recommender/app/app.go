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

// Package app wires the recommender: options, clients, informers, the
// target resolver, the loop, leader election and the health server, run by
// pkg/component's runtime.
package app

import (
	"context"
	"fmt"
	"os"

	"github.com/google/uuid"
	"k8s.io/klog/v2"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned/typed/metrics/v1beta1"
	"k8s.io/utils/clock"

	"github.com/openvpa/openvpa/pkg/component"
	"github.com/openvpa/openvpa/pkg/features"
	"github.com/openvpa/openvpa/pkg/healthserver"
	"github.com/openvpa/openvpa/pkg/hpa"
	"github.com/openvpa/openvpa/pkg/informers"
	"github.com/openvpa/openvpa/pkg/kubeclient"
	"github.com/openvpa/openvpa/pkg/leaderelection"
	"github.com/openvpa/openvpa/pkg/leases"
	"github.com/openvpa/openvpa/pkg/nodefit"
	"github.com/openvpa/openvpa/pkg/quota"
	"github.com/openvpa/openvpa/pkg/shards"
	"github.com/openvpa/openvpa/recommender/app/options"
	"github.com/openvpa/openvpa/recommender/estimator"
	"github.com/openvpa/openvpa/recommender/input"
	"github.com/openvpa/openvpa/recommender/input/history"
	"github.com/openvpa/openvpa/recommender/metrics"
)

// Name is the recommender's binary and logger name.
const Name = "vpa-recommender"

// NewCommand returns the recommender's command line.
func NewCommand() *component.Command[options.Config] {
	return &component.Command[options.Config]{Name: Name, Usage: "Usage: vpa-recommender [flags]", Options: options.NewOptions(), Run: Run}
}

// Run runs the recommender until ctx is cancelled or leadership is lost.
func Run(ctx context.Context, c options.Config) error {
	o := c.Options
	logger := klog.FromContext(ctx)
	for _, w := range o.Warnings() {
		logger.Info("Warning: " + w)
	}
	if defaultGC(os.Getenv) {
		logger.V(1).Info("GOGC is not set; the garbage collector targets the recommender's default heap growth", "gcPercent", DefaultGCPercent)
	}
	cfg := c.REST
	// Uncompressed responses: the API server is near, and each pooled gzip
	// reader holds tens of kilobytes for the life of the process.
	cfg.DisableCompression = true
	clients, err := kubeclient.NewClients(cfg)
	if err != nil {
		return err
	}
	podMetrics, err := metricsclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	leaseClient, err := leases.New(cfg)
	if err != nil {
		return err
	}
	disc, err := kubeclient.NewDiscovery(cfg)
	if err != nil {
		return err
	}
	var usage input.MetricsSource = input.NewMetricsServer(podMetrics, o.Namespaces.Filter().WatchNamespace())
	if o.UseExternalMetrics {
		ext, err := externalMetrics(ctx, cfg, o)
		if err != nil {
			return err
		}
		logger.Info("Reading usage from the external metrics API", "cpuMetric", o.ExternalMetricsCPUMetric, "memoryMetric", o.ExternalMetricsMemoryMetric,
			"containerNameLabel", o.Prometheus.ContainerNameLabel)
		usage = ext
	}
	est, err := estimator.New(o.Estimator, o.EstimatorOptions())
	if err != nil {
		return err
	}

	reg := healthserver.NewRegistry()
	prom := metrics.New(reg)
	var recs *metrics.RecommendationGauges
	if o.RecommendationMetrics {
		recs = metrics.NewRecommendationGauges(reg)
	}
	clk := clock.RealClock{}
	// Only the leader runs the loop (component.Runtime). Liveness holds the
	// loop to its interval only while it runs, from the end of its restore
	// (a standby runs none); readiness adds the CRDs to the caches.
	loopHealth := healthserver.NewLoopHealth(clk, o.RecommenderInterval)
	loopHealth.SetActive(false)

	var hist *history.Loader
	if c.History != nil {
		hcfg := *c.History
		provider, err := history.NewProvider(hcfg, clk, history.NewMetrics(reg))
		if err != nil {
			return err
		}
		hist = history.NewLoader(provider, history.LoaderOptions{Clock: clk, Registerer: reg})
		logger.Info("Usage history comes from Prometheus; checkpoints are neither read nor written", "address", hcfg.Address,
			"historyLength", hcfg.Length, "resolution", hcfg.Resolution)
	}

	var shardManager *shards.Manager
	var scope *informers.Scope
	if o.Shards > 0 {
		lc, err := leases.NewListClient(cfg)
		if err != nil {
			return err
		}
		host, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("reading the hostname for the shard identity: %w", err)
		}
		le := o.LeaderElection
		shardManager, err = shards.New(shards.Options{
			Shards: o.Shards, ByNamespace: o.ShardBy == options.ShardByNamespace,
			Name: le.ResourceName, Namespace: le.ResourceNamespace, Identity: host + "_" + uuid.NewString(),
			LeaseDuration: le.LeaseDuration, RenewDeadline: le.RenewDeadline, RetryPeriod: le.RetryPeriod,
			Clock: clk, Registerer: reg,
		}, lc)
		if err != nil {
			return err
		}
		if o.ShardBy == options.ShardByNamespace {
			scope = informers.NewScope()
		}
		logger.Info("Shard identity", "identity", shardManager.Identity(), "shards", o.Shards, "shardBy", o.ShardBy)
	}

	nsFilter := o.Namespaces.Filter()
	oom := input.NewOOMObserver()
	inf, err := input.NewInformers(clients, nsFilter.WatchNamespace(), oom, o.Features.Enabled(features.NativeSidecar), scope)
	if err != nil {
		return err
	}
	if inf.HPAs, err = hpa.NewCache(cfg, nsFilter.WatchNamespace()); err != nil {
		return err
	}
	if o.NodeFit {
		if inf.Nodes, err = nodefit.NewCache(clients.Core); err != nil {
			return err
		}
	}
	if o.QuotaFit {
		inf.Quotas = quota.NewCache(clients.Core, nsFilter.WatchNamespace())
	}
	reg.MustRegister(inf.Collector())

	l := &leader{
		options: o, clients: clients, informers: inf, ooms: oom, usage: usage, discovery: disc,
		estimator: est, metrics: prom, recommendations: recs, loopHealth: loopHealth, clock: clk, history: hist,
	}
	rt := &component.Runtime{
		Health: healthserver.Options{
			Address:   o.Address,
			Registry:  reg,
			Profiling: o.Profiling,
			Liveness:  []healthserver.Check{{Name: "loop", Func: loopHealth.Check}},
			Readiness: []healthserver.Check{{Name: "crds", Func: crdCheck(disc)}},
		},
		Informers: inf,
		Election:  &component.Election{Options: o.LeaderElection, Leases: leaseClient},
		Clock:     clk,
	}
	rt.Work = func(ctx context.Context) error { return l.run(ctx, nil) }
	if shardManager != nil {
		// --shards excludes --leader-elect: every replica works on the
		// shards it holds.
		rt.SyncInWork = scope != nil
		rt.Work = func(ctx context.Context) error {
			return runSharded(ctx, shardManager, scope, o.LeaderElection.RenewDeadline, rt.WaitForSync, l.run)
		}
	}
	if o.PolicyController {
		pc, err := newPolicyController(cfg, o, reg, clk)
		if err != nil {
			return err
		}
		run := pc.Run
		if shardManager != nil {
			// Every sharded replica works; the policy controller runs on one,
			// under a Lease of its own.
			le := o.LeaderElection
			le.LeaderElect, le.ResourceName = true, le.ResourceName+policyLeaseSuffix
			run = func(ctx context.Context) error { return leaderelection.Run(ctx, le, leaseClient, pc.Run) }
		}
		rt.Work = alongside(rt.Work, run)
	}
	return rt.Run(ctx)
}
