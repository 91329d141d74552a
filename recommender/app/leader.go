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
	"sync"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/component"
	"github.com/openvpa/openvpa/pkg/features"
	"github.com/openvpa/openvpa/pkg/healthserver"
	"github.com/openvpa/openvpa/pkg/informers"
	"github.com/openvpa/openvpa/pkg/kubeclient"
	"github.com/openvpa/openvpa/pkg/shards"
	"github.com/openvpa/openvpa/pkg/target"
	"github.com/openvpa/openvpa/recommender/app/options"
	"github.com/openvpa/openvpa/recommender/checkpoint"
	"github.com/openvpa/openvpa/recommender/estimator"
	"github.com/openvpa/openvpa/recommender/input"
	"github.com/openvpa/openvpa/recommender/input/history"
	"github.com/openvpa/openvpa/recommender/loop"
	"github.com/openvpa/openvpa/recommender/metrics"
	"github.com/openvpa/openvpa/recommender/status"
	"github.com/openvpa/openvpa/recommender/writes"
)

// leader holds what the recommender's loop is built from while this
// replica leads (or holds shards).
type leader struct {
	options   *options.Options
	clients   kubeclient.Clients
	informers *input.Informers
	ooms      *input.OOMObserver
	usage     input.MetricsSource
	discovery *kubeclient.Discovery
	estimator estimator.Estimator
	metrics   *metrics.Metrics
	// recommendations are the per-VPA gauges; nil without
	// --recommendation-metrics.
	recommendations *metrics.RecommendationGauges
	loopHealth      *healthserver.LoopHealth
	clock           clock.WithTicker
	// history is the Prometheus history loader; nil with checkpoints.
	history *history.Loader
}

// run runs the recommender while this replica holds the lease, or the
// shards shardSource gives (nil: every VPA).
func (l *leader) run(ctx context.Context, shardSource loop.ShardSource) error {
	// The names the construction of the loop below reads.
	o, clients, inf, oom, usage, est, prom, lh, clk, hist := l.options, l.clients, l.informers, l.ooms, l.usage, l.estimator, l.metrics, l.loopHealth, l.clock, l.history
	logger := klog.FromContext(ctx)
	nsFilter := o.Namespaces.Filter()
	resolver := target.NewResolver(inf.Targets, target.NewScaleClientFor(l.discovery), target.Options{})
	var store checkpoint.Storage = checkpoint.NewStore(clients.VPA)
	var historySource loop.HistorySource
	if hist != nil {
		// --storage=prometheus: history from Prometheus instead of checkpoints, as upstream.
		store, historySource = nil, hist
		var wg sync.WaitGroup
		defer wg.Wait()
		wg.Go(func() { hist.Run(ctx) })
	}
	modelCfg := o.ModelConfig()
	deps := loop.Deps{
		VPAs:            inf.VPALister,
		Pods:            inf.PodLister,
		Resolver:        resolver,
		Metrics:         usage,
		OOMs:            oom.Drain,
		Checkpoints:     store,
		History:         historySource,
		Shards:          shardSource,
		Status:          status.APIWriter{Client: clients.VPA},
		Estimator:       est,
		Clock:           clk,
		Prom:            prom,
		Recommendations: l.recommendations,
		OnLoop:          lh.MarkLoop,
		LimitRanges:     inf.LimitRanges,
		Controllers:     resolver,
		HPAs:            inf.HPAs.Lookup,
		Surge:           func(vpa *vpav1.VerticalPodAutoscaler) int32 { return target.SurgeOf(inf.Targets, vpa) },
		YieldToHPA:      o.YieldToHPA,
	}
	if inf.Nodes != nil {
		deps.Nodes = inf.Nodes.RoomsByKey
	}
	if inf.Quotas != nil {
		deps.Quotas = inf.Quotas.Lookup
	}
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
		StatusWritesPerLoop:      writes.PerInterval(o.Kube.QPS, o.Kube.Burst, o.RecommenderInterval),
	}, deps)
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
	if component.Stopping(ctx) {
		// Graceful shutdown, not a lost lease (another replica may be
		// writing already): save everything, bounded by the checkpoint
		// timeout.
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
// shards. Without a scope the caches have synced before (the runtime waits
// for them), so that a replica joining takes shards only when it can serve
// them. With a scope (--shard-by=namespace) the manager starts first: the
// caches list only the namespaces of the shards it takes, and waitForSync
// waits for them after. The Leases outlive the loop, so that its last
// checkpoints are written while the shards are still held, and are released
// after it.
func runSharded(ctx context.Context, m *shards.Manager, scope *informers.Scope, releaseTimeout time.Duration,
	waitForSync func(context.Context) error, run func(context.Context, loop.ShardSource) error) error {
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
