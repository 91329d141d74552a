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
// target resolver, the loop, leader election and the health server.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/pflag"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned/typed/metrics/v1beta1"
	"k8s.io/utils/clock"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/features"
	"github.com/openvpa/openvpa/pkg/healthserver"
	"github.com/openvpa/openvpa/pkg/hpa"
	"github.com/openvpa/openvpa/pkg/informers"
	"github.com/openvpa/openvpa/pkg/kubeclient"
	"github.com/openvpa/openvpa/pkg/leaderelection"
	"github.com/openvpa/openvpa/pkg/leases"
	"github.com/openvpa/openvpa/pkg/shards"
	"github.com/openvpa/openvpa/pkg/target"
	"github.com/openvpa/openvpa/recommender/app/options"
	"github.com/openvpa/openvpa/recommender/checkpoint"
	"github.com/openvpa/openvpa/recommender/estimator"
	"github.com/openvpa/openvpa/recommender/input"
	"github.com/openvpa/openvpa/recommender/input/history"
	"github.com/openvpa/openvpa/recommender/loop"
)

// Main runs the recommender.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o := options.NewOptions()
	fs := pflag.NewFlagSet("vpa-recommender", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	sections := o.FlagSections()
	sections.AddTo(fs)
	fs.Usage = func() { sections.Usage(stderr, "Usage: vpa-recommender [flags]") }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if err := o.Validate(); err != nil {
		return err
	}
	ctx, err := o.Logging.Apply(ctx, "vpa-recommender")
	if err != nil {
		return err
	}
	return Run(ctx, o)
}

// Run runs the recommender until ctx is cancelled or leadership is lost.
func Run(ctx context.Context, o *options.Options) error {
	logger := klog.FromContext(ctx)
	for _, w := range o.Warnings() {
		logger.Info("Warning: " + w)
	}
	if defaultGC(os.Getenv) {
		logger.V(1).Info("GOGC is not set; the garbage collector targets the recommender's default heap growth", "gcPercent", DefaultGCPercent)
	}
	cfg, err := o.Kube.RESTConfig()
	if err != nil {
		return err
	}
	// Uncompressed responses: the API server is near, and each pooled gzip
	// reader holds tens of kilobytes for the life of the process.
	cfg.DisableCompression = true
	clients, err := kubeclient.NewClients(cfg)
	if err != nil {
		return err
	}
	metrics, err := metricsclient.NewForConfig(cfg)
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
	var usage input.MetricsSource = input.NewMetricsServer(metrics, o.Namespaces.Filter().WatchNamespace())
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
	prom := loop.NewMetrics(reg)
	clk := clock.RealClock{}
	// Every replica keeps its caches warm and answers probes; only the
	// leader runs the loop. Liveness holds the loop to its interval only
	// while leading (a standby runs none), and checks that a leader keeps
	// renewing its lease; readiness is the caches and the CRDs, never
	// leadership.
	loopHealth := healthserver.NewLoopHealth(clk, o.RecommenderInterval)
	loopHealth.SetActive(false)
	watchdog := leaderelection.NewWatchdog(clk, o.LeaderElection.LeaseDuration)
	election := o.LeaderElection
	election.Watchdog = watchdog
	if election.OnLeading, err = leaderelection.LeaderMetric(reg, election.ResourceName); err != nil {
		return err
	}
	var ready atomic.Bool
	hs := healthserver.Options{
		Address:   o.Address,
		Registry:  reg,
		Profiling: o.Profiling,
		Liveness: []healthserver.Check{
			{Name: "loop", Func: loopHealth.Check},
			{Name: "leader-election", Func: watchdog.Check},
		},
		Readiness: []healthserver.Check{
			{Name: "informers", Func: func() error {
				if !ready.Load() {
					return errors.New("informers not synced")
				}
				return nil
			}},
			{Name: "crds", Func: crdCheck(disc)},
		},
	}

	var hist *history.Loader
	if o.Storage == options.StoragePrometheus {
		hcfg, err := o.HistoryConfig()
		if err != nil {
			return err
		}
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
	reg.MustRegister(inf.Collector())
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		if err := healthserver.Serve(gctx, hs); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("health server: %w", err)
		}
		return nil
	})
	inf.Start(gctx)
	waitForSync := func(ctx context.Context) error {
		klog.FromContext(ctx).Info("Waiting for informer caches")
		if err := inf.WaitForSync(ctx); err != nil {
			return err
		}
		ready.Store(true)
		klog.FromContext(ctx).Info("Informer caches synced")
		return nil
	}
	g.Go(func() error {
		if shardManager != nil {
			return runSharded(gctx, shardManager, scope, o.LeaderElection.RenewDeadline, waitForSync, func(ctx context.Context, src loop.ShardSource) error {
				return lead(ctx, gctx, o, clients, inf, oom, usage, disc, est, prom, loopHealth, clk, hist, src)
			})
		}
		if err := waitForSync(gctx); err != nil {
			return err
		}
		return leaderelection.Run(gctx, election, leaseClient, func(lctx context.Context) error {
			// Checkpoints are written at the end only when gctx ended (a
			// graceful shutdown), not when the lease was lost: another
			// replica may be writing already.
			return lead(lctx, gctx, o, clients, inf, oom, usage, disc, est, prom, loopHealth, clk, hist, nil)
		})
	})
	err = g.Wait()
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return nil
	}
	return err
}

// lead runs the recommender while this replica holds the lease.
func lead(ctx, root context.Context, o *options.Options, clients kubeclient.Clients, inf *input.Informers, oom *input.OOMObserver,
	usage input.MetricsSource, disc *kubeclient.Discovery, est estimator.Estimator, prom *loop.Metrics,
	lh *healthserver.LoopHealth, clk clock.WithTicker, hist *history.Loader, shardSource loop.ShardSource) error {
	logger := klog.FromContext(ctx)
	nsFilter := o.Namespaces.Filter()
	resolver := target.NewResolver(inf.Targets, target.NewScaleClientFor(disc), target.Options{})
	var store loop.CheckpointStore = checkpoint.NewStore(clients.VPA)
	var historySource loop.HistorySource
	if hist != nil {
		// --storage=prometheus: history from Prometheus instead of checkpoints, as upstream.
		store, historySource = nil, hist
		var wg sync.WaitGroup
		defer wg.Wait()
		wg.Go(func() { hist.Run(ctx) })
	}
	modelCfg := o.ModelConfig()
	rec := loop.New(loop.Config{
		RecommenderName:          o.RecommenderName,
		Namespaces:               nsFilter,
		Interval:                 o.RecommenderInterval,
		CheckpointsGCInterval:    o.CheckpointsGCInterval,
		CheckpointsTimeout:       o.CheckpointsTimeout,
		CheckpointsWriteInterval: o.CheckpointsWriteInterval,
		MinCheckpoints:           o.MinCheckpoints,
		Workers:                  o.UpdateWorkerCount,
		PerVPAConfig:             o.Features.Enabled(features.PerVPAConfig),
		Model:                    &modelCfg,
		StatusWritesPerLoop:      loop.WritesPerInterval(o.Kube.QPS, o.Kube.Burst, o.RecommenderInterval),
	}, loop.Deps{
		VPAs:        inf.VPALister,
		Pods:        inf.PodLister,
		Resolver:    resolver,
		Metrics:     usage,
		OOMs:        oom.Drain,
		Checkpoints: store,
		History:     historySource,
		Shards:      shardSource,
		Status:      loop.APIStatusWriter{Client: clients.VPA},
		Estimator:   est,
		Clock:       clk,
		Prom:        prom,
		OnLoop:      lh.MarkLoop,
		LimitRanges: inf.LimitRanges,
		Controllers: resolver,
		HPAs:        inf.HPAs.Lookup,
	})
	if ext, ok := usage.(*input.ExternalMetrics); ok {
		ext.Pods = rec.MetricsQueries
	}
	if hist != nil {
		// The first loop's statuses carry the history when it comes in time
		// (a failed fetch does not hold the loop back: it is retried).
		nss := rec.WantHistory(ctx)
		start := clk.Now()
		settled := hist.WaitSettled(ctx, nss, historyStartWait)
		logger.Info("Waited for usage history before the first loop", "namespaces", len(nss), "settled", settled, "waited", clk.Since(start).Round(time.Millisecond))
	}
	if err := rec.Restore(ctx); err != nil {
		// Without the saved history the first statuses would regress; retry
		// on the next start rather than overwrite good checkpoints.
		return fmt.Errorf("restoring checkpoints: %w", err)
	}
	lh.SetActive(true)
	defer lh.SetActive(false)
	logger.Info("Recommender started", "interval", o.RecommenderInterval, "estimator", est.Name())
	if err := rec.Run(ctx); err != nil {
		return err
	}
	if root.Err() != nil {
		// Graceful shutdown: save everything, bounded by the checkpoint timeout.
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.CheckpointsTimeout)
		defer cancel()
		if err := rec.WriteAllCheckpoints(wctx); err != nil {
			logger.Error(err, "Writing checkpoints on shutdown")
		} else {
			logger.Info("Wrote all checkpoints on shutdown")
		}
	}
	return nil
}

// runSharded runs the loop while the shard manager keeps this replica's
// shards. Without a scope the caches sync first, so that a replica joining
// takes shards only when it can serve them. With a scope
// (--shard-by=namespace) the manager starts first: the caches list only the
// namespaces of the shards it takes. The Leases outlive the loop, so that
// its last checkpoints are written while the shards are still held, and are
// released after it.
func runSharded(ctx context.Context, m *shards.Manager, scope *informers.Scope, releaseTimeout time.Duration,
	waitForSync func(context.Context) error, run func(context.Context, loop.ShardSource) error) error {
	if scope == nil {
		if err := waitForSync(ctx); err != nil {
			return err
		}
	}
	mctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	defer func() {
		stop()
		wg.Wait()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
		defer cancel()
		m.Release(rctx)
	}()
	wg.Go(func() { m.Run(mctx) })
	// The first loop waits for the first shards (a retry period after the
	// start), or for a lease duration when the Leases cannot be written.
	settle := time.NewTimer(m.LeaseDuration())
	select {
	case <-m.Settled():
	case <-settle.C:
	case <-ctx.Done():
	}
	settle.Stop()
	if scope == nil {
		return run(ctx, m)
	}
	scoped := shards.NewScoped(m, scope)
	scoped.Update(ctx)
	wg.Go(func() { scoped.Run(mctx) })
	if err := waitForSync(ctx); err != nil {
		return err
	}
	return run(ctx, scoped)
}

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

// Exit is a convenience for main: it prints err and returns the exit code.
func Exit(err error) int {
	if err == nil {
		return 0
	}
	fmt.Fprintln(os.Stderr, "vpa-recommender:", err)
	return 1
}
