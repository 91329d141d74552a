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

// Package loop is the recommender's main loop. Every interval it feeds the
// cluster state (recommender/cluster) with the VPAs, their pods, usage and
// OOM kills, computes each VPA's status (recommender/status), queues the
// writes of those that changed, and keeps the checkpoints written
// (recommender/checkpoint). Status and checkpoint writes share one write
// budget (recommender/writes) and run in the background; their outcomes are
// applied at the start of the next loop.
package loop

import (
	"context"
	"fmt"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/limitrange"
	"github.com/openvpa/openvpa/pkg/namespaces"
	"github.com/openvpa/openvpa/pkg/nodefit"
	"github.com/openvpa/openvpa/pkg/quota"
	"github.com/openvpa/openvpa/pkg/target"
	"github.com/openvpa/openvpa/recommender/checkpoint"
	"github.com/openvpa/openvpa/recommender/cluster"
	"github.com/openvpa/openvpa/recommender/estimator"
	"github.com/openvpa/openvpa/recommender/input"
	"github.com/openvpa/openvpa/recommender/metrics"
	"github.com/openvpa/openvpa/recommender/model"
	"github.com/openvpa/openvpa/recommender/status"
	"github.com/openvpa/openvpa/recommender/vpacache"
	"github.com/openvpa/openvpa/recommender/writes"
)

// AggregateGCInterval is how often expired aggregates are dropped, as upstream.
const AggregateGCInterval = time.Hour

// Resolver resolves a VPA's targetRef (pkg/target.Resolver).
type Resolver interface {
	Resolve(ctx context.Context, vpa *vpav1.VerticalPodAutoscaler) (*target.Target, error)
}

// ControllerResolver finds topmost controllers (pkg/target.Resolver).
type ControllerResolver interface {
	TopmostController(ctx context.Context, ref target.Ref) (*target.Ref, error)
}

// VPALister reads the recommender's VPA cache (vpacache.Lister).
type VPALister interface {
	List() []*vpacache.VPA
	// Get returns nil when there is no such VPA.
	Get(namespace, name string) *vpacache.VPA
}

// Config are the loop's settings.
type Config struct {
	RecommenderName          string
	Namespaces               namespaces.Filter
	Interval                 time.Duration
	CheckpointsGCInterval    time.Duration
	CheckpointsTimeout       time.Duration
	CheckpointsWriteInterval time.Duration
	// MinCheckpoints due checkpoints are written at every loop even while
	// status writes of earlier loops are backlogged (upstream's
	// --min-checkpoints); 0: none until the backlog drains.
	MinCheckpoints int
	Workers        int
	// PerVPAConfig honours the per-VPA model fields of container policies.
	PerVPAConfig bool
	// Model is the global model configuration; nil means the default.
	Model *model.Config
	// StatusWritesPerLoop caps the status writes queued or running at
	// once: a loop queues no more than this, less those still running from
	// earlier loops, and the rest wait for a later loop, which computes them
	// afresh. Set it to what the client's rate limit writes in one interval
	// (writes.PerInterval): a longer queue only delays writes past the next
	// loop while holding the statuses, and what is written that late is a
	// loop or more stale. Zero means no cap.
	StatusWritesPerLoop int
	// StatusMaxAge is the period of the bounds slots: how long small bound
	// drifts stay unwritten at most (see status.NeedsWrite); zero means
	// CheckpointsWriteInterval.
	StatusMaxAge time.Duration
}

func (c Config) statusMaxAge() time.Duration {
	if c.StatusMaxAge > 0 {
		return c.StatusMaxAge
	}
	return c.CheckpointsWriteInterval
}

// Deps are the loop's collaborators.
type Deps struct {
	VPAs     VPALister
	Pods     input.PodLister
	Resolver Resolver
	Metrics  input.MetricsSource
	OOMs     func() []input.OOM
	// Checkpoints persists the history; nil with History.
	Checkpoints checkpoint.Storage
	Status      status.Writer
	Estimator   estimator.Estimator
	Clock       clock.WithTicker
	Prom        *metrics.Metrics
	// Recommendations exports every VPA's recommendation as gauges
	// (--recommendation-metrics); nil exports none.
	Recommendations *metrics.RecommendationGauges
	// Shards divides the VPAs among replicas (--shards); nil means this
	// replica serves every VPA.
	Shards ShardSource
	// History loads past usage from Prometheus (--storage=prometheus); nil
	// means checkpoints keep the history. With History, Checkpoints is nil.
	History HistorySource
	// OnLoop is called after every loop (e.g. healthserver.LoopHealth.MarkLoop).
	OnLoop func()
	// LimitRanges returns a namespace's LimitRanges; nil means none are
	// checked.
	LimitRanges func(namespace string) limitrange.Merged
	// Controllers finds the topmost controller of a pod's owner
	// (pkg/target.Resolver), for the VPA the OverlappingVPA condition says
	// the admission controller applies; nil leaves that part out.
	Controllers ControllerResolver
	// HPAs returns a namespace's HorizontalPodAutoscalers and whether they
	// are known (pkg/hpa.Cache.Lookup); while they are not, HPAConflict
	// keeps its last state. Nil means no HPAConflict is checked.
	HPAs func(namespace string) ([]*autoscalingv2.HorizontalPodAutoscaler, bool)
	// Nodes, Quotas and Surge are status.Sources' (node fit, the
	// ResourceQuotaConflict condition); nil checks none.
	Nodes  func(key, exclude string) ([]nodefit.Room, bool)
	Quotas func(namespace string) (*quota.Room, bool)
	Surge  func(vpa *vpav1.VerticalPodAutoscaler) int32
	// YieldToHPA leaves a resource an HPA scales on by its utilization to
	// the HPA (status.Sources.YieldToHPA).
	YieldToHPA bool
}

// Recommender is the loop. Its methods must not be called concurrently.
type Recommender struct {
	cfg  Config
	deps Deps

	state    *cluster.State
	sources  status.Sources
	budget   *writes.Budget
	bg       *writes.Background
	statuses *status.Queue
	// checkpoints is nil without Deps.Checkpoints.
	checkpoints *checkpoint.Writer
	// owned are the shards this replica serves (Deps.Shards).
	owned    map[int]bool
	lastAggr time.Time
}

// New returns a Recommender.
func New(cfg Config, deps Deps) *Recommender {
	if cfg.Workers < 1 {
		cfg.Workers = 1
	}
	if deps.Clock == nil {
		deps.Clock = clock.RealClock{}
	}
	if deps.Prom == nil {
		deps.Prom = metrics.New(nil)
	}
	if deps.OOMs == nil {
		deps.OOMs = func() []input.OOM { return nil }
	}
	r := &Recommender{
		cfg:    cfg,
		deps:   deps,
		budget: writes.NewBudget(cfg.StatusWritesPerLoop, cfg.MinCheckpoints, cfg.Workers),
		bg:     &writes.Background{},
		sources: status.Sources{Estimator: deps.Estimator, LimitRanges: deps.LimitRanges, HPAs: deps.HPAs, History: deps.History,
			Nodes: deps.Nodes, Quotas: deps.Quotas, Surge: deps.Surge, YieldToHPA: deps.YieldToHPA},
	}
	r.state = cluster.New(cluster.Config{
		RecommenderName: cfg.RecommenderName,
		Namespaces:      cfg.Namespaces,
		PerVPAConfig:    cfg.PerVPAConfig,
		Model:           cfg.Model,
		Serves:          r.serves,
		HistoryPending:  deps.History != nil,
	})
	var mayWrite func(types.NamespacedName) bool
	if deps.Shards != nil {
		mayWrite = r.mayWrite
	}
	r.statuses = status.NewQueue(status.QueueConfig{
		Writer: deps.Status, Workers: cfg.Workers, Budget: r.budget, Background: r.bg, MayWrite: mayWrite,
		Writes: deps.Prom.APIWrites, Waiting: deps.Prom.StatusWritesWaiting,
	})
	if deps.Checkpoints != nil {
		r.checkpoints = checkpoint.NewWriter(checkpoint.WriterConfig{
			Storage: deps.Checkpoints, VPAs: deps.VPAs, Namespaces: cfg.Namespaces,
			WriteInterval: cfg.CheckpointsWriteInterval, GCInterval: cfg.CheckpointsGCInterval, Timeout: cfg.CheckpointsTimeout,
			Workers: cfg.Workers, Budget: r.budget, Background: r.bg, Clock: deps.Clock, MayWrite: mayWrite,
			Writes: deps.Prom.APIWrites, Postponed: deps.Prom.CheckpointWritesPostponed,
		})
	}
	return r
}

// serves reports whether the VPA's shard is one this replica serves.
func (r *Recommender) serves(k types.NamespacedName) bool {
	return r.deps.Shards == nil || r.owned[r.deps.Shards.Of(k.String())]
}

// mayWrite reports whether this replica may write the VPA's status and
// checkpoints now: while it holds the VPA's shard.
func (r *Recommender) mayWrite(k types.NamespacedName) bool {
	return r.deps.Shards.Valid(r.deps.Shards.Of(k.String()))
}

// MetricsQueries returns the pods whose usage the loop reads, each with the
// selector of a VPA it is under, sorted by pod: what the external metrics
// source (input.ExternalMetrics) asks for. It is meant to be called by the
// metrics source while the loop reads usage.
func (r *Recommender) MetricsQueries() []input.PodQuery { return r.state.MetricsQueries() }

// Restore loads every checkpoint of the VPAs this recommender handles. Call it
// once, after the informers synced and before the first RunOnce, so that the
// first status written already reflects the saved history. Corrupt
// checkpoints are logged and skipped; they are overwritten at the next write.
func (r *Recommender) Restore(ctx context.Context) error {
	if r.checkpoints == nil {
		return nil
	}
	return r.checkpoints.Restore(ctx, r.state, nil)
}

// Run runs RunOnce now and then every interval until ctx ends. It does not
// restore checkpoints (call Restore first) nor write them at the end (call
// WriteAllCheckpoints).
//
// Run returns only after the background writes it started have stopped
// (they end with ctx), so that a final WriteAllCheckpoints cannot be
// overtaken by an older write.
func (r *Recommender) Run(ctx context.Context) error {
	t := r.deps.Clock.NewTicker(r.cfg.Interval)
	defer t.Stop()
	defer r.WaitWrites()
	// A shard source that says when it has shards to serve runs a loop at
	// once, so a hand-over does not wait for the next interval.
	var changed <-chan struct{}
	if c, ok := r.deps.Shards.(interface{ Changed() <-chan struct{} }); ok {
		changed = c.Changed()
		select { // shards taken before the first loop are served by it
		case <-changed:
		default:
		}
	}
	for {
		r.RunOnce(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		case <-changed:
			klog.FromContext(ctx).V(2).Info("Running a loop at once for the shards taken")
		}
	}
}

func (r *Recommender) timed(step string, start time.Time) time.Time {
	now := r.deps.Clock.Now()
	r.deps.Prom.ExecutionLatency.WithLabelValues(step).Observe(now.Sub(start).Seconds())
	return now
}

// RunOnce runs one loop.
func (r *Recommender) RunOnce(ctx context.Context) {
	logger := klog.FromContext(ctx)
	begin := r.deps.Clock.Now()
	t := begin
	r.bg.Apply()
	r.budget.StartLoop()
	if r.deps.Shards != nil {
		r.syncShards(ctx)
	}
	r.loadVPAs(ctx)
	t = r.timed(metrics.StepLoadVPAs, t)
	r.loadPods(ctx)
	t = r.timed(metrics.StepLoadPods, t)
	if r.deps.History != nil {
		r.applyHistory(ctx)
		t = r.timed(metrics.StepLoadHistory, t)
	}
	r.loadMetrics(ctx)
	t = r.timed(metrics.StepLoadMetrics, t)
	r.state.DeleteRemovedPods()
	t = r.timed(metrics.StepDeleteRemovedPods, t)
	r.updateVPAs(ctx)
	t = r.timed(metrics.StepUpdateVPAs, t)
	if r.checkpoints != nil { // --storage=prometheus: history lives in Prometheus
		r.checkpoints.Maintain(ctx, r.state)
	}
	t = r.timed(metrics.StepMaintainCheckpoints, t)
	r.garbageCollect()
	r.timed(metrics.StepGarbageCollect, t)
	r.timed(metrics.StepTotal, begin)
	if ctx.Err() == nil && r.deps.OnLoop != nil {
		r.deps.OnLoop()
	}
	vpas, pods := r.state.Size()
	logger.V(3).Info("Loop finished", "vpas", vpas, "pods", pods, "duration", r.deps.Clock.Since(begin))
}

func (r *Recommender) loadVPAs(ctx context.Context) {
	kept, gone := r.state.SyncVPAs(ctx, r.deps.VPAs.List(), r.deps.Resolver.Resolve)
	if r.checkpoints != nil {
		r.checkpoints.Track(kept, gone, r.deps.Clock.Now())
	}
}

func (r *Recommender) loadPods(ctx context.Context) {
	pods, err := r.deps.Pods.List()
	if err != nil {
		klog.FromContext(ctx).Error(err, "Listing pods")
		return
	}
	var topmost cluster.TopmostFunc
	if r.deps.Controllers != nil {
		topmost = r.deps.Controllers.TopmostController
	}
	r.state.SyncPods(ctx, pods, topmost, r.deps.Clock.Now())
}

func (r *Recommender) loadMetrics(ctx context.Context) {
	logger := klog.FromContext(ctx)
	if _, pods := r.state.Size(); r.deps.Metrics != nil && pods > 0 {
		usage, err := r.deps.Metrics.Usage(ctx, r.state.Tracked)
		r.deps.Prom.MetricServerResponses.WithLabelValues(fmt.Sprint(err != nil), "metrics-server").Inc()
		if err != nil {
			logger.Error(err, "Cannot read usage from metrics-server; recommendations keep their last value")
		}
		accepted := r.state.AddUsage(usage)
		logger.V(4).Info("Loaded usage", "samples", len(usage), "accepted", accepted)
	}
	ooms := r.deps.OOMs()
	for i := range ooms {
		if ooms[i].AfterUpdate(metrics.OOMAfterUpdateWindow) {
			r.deps.Prom.OOMKillsAfterUpdate.Inc()
		}
	}
	r.state.AddOOMs(ctx, ooms)
}

// updateVPAs computes every VPA's status and queues the writes of those that
// need one, as many as the write budget has room for.
func (r *Recommender) updateVPAs(ctx context.Context) {
	now := r.deps.Clock.Now()
	var jobs []status.Job
	counts := metrics.VPACounts{}
	maxAge := r.cfg.statusMaxAge()
	for v := range r.state.VPAs() {
		st := r.sources.Compute(v, now)
		rec := st.Recommendation
		first := status.HasRecommendation(rec) && len(v.Obj.Recommendation) == 0
		if first {
			r.deps.Prom.RecommendationLatency.Observe(now.Sub(v.Obj.CreationTimestamp.Time).Seconds())
		}
		counts.Add(vpav1.GetUpdateMode(v.Obj.VerticalPodAutoscaler), status.HasRecommendation(rec), v.PodCount > 0, v.Unsupported != "")
		r.deps.Recommendations.Observe(v.Key, rec)
		if r.statuses.Busy(v.Key) {
			continue // the previous write is still running; the next loop decides
		}
		if status.NeedsWrite(v.Obj.VerticalPodAutoscaler.Status, v.Obj.Recommendation, st, v.Written, now, maxAge, checkpoint.Offset(v.Key.String(), maxAge)) {
			// The status is not held: most of the VPAs that need a write
			// wait for a later loop when many do (every VPA's first
			// recommendation), and those that run it are computed again
			// below.
			jobs = append(jobs, status.Job{Key: v.Key, Obj: v.Obj, First: first, Written: v.Written})
		}
	}
	r.deps.Prom.SetVPACounts(counts)
	r.deps.Recommendations.Sweep()
	queued := len(jobs)
	jobs = r.statuses.Limit(jobs)
	for i := range jobs {
		jobs[i].Status = r.sources.Compute(r.state.Get(jobs[i].Key), now)
	}
	r.statuses.Write(ctx, jobs, r.state, now)
	r.deps.Prom.AggregateStates.Set(float64(r.state.AggregateCount()))
	vpas, _ := r.state.Size()
	klog.FromContext(ctx).V(3).Info("Updated VPAs", "vpas", vpas, "statusWrites", len(jobs), "statusWritesWaiting", queued-len(jobs))
}

// garbageCollect drops, once per AggregateGCInterval, the aggregates whose
// history expired and that no live pod feeds.
func (r *Recommender) garbageCollect() {
	now := r.deps.Clock.Now()
	if now.Sub(r.lastAggr) < AggregateGCInterval {
		return
	}
	r.lastAggr = now
	r.state.GarbageCollect(now)
}

// WaitWrites blocks until the background status and checkpoint writes
// started so far have finished. The next loop applies their outcomes.
func (r *Recommender) WaitWrites() { r.bg.Wait() }

// WriteAllCheckpoints writes every VPA's checkpoints now, e.g. on graceful
// shutdown. ctx bounds the whole operation.
func (r *Recommender) WriteAllCheckpoints(ctx context.Context) error {
	if r.checkpoints == nil {
		return nil
	}
	return r.checkpoints.WriteAll(ctx, r.state)
}
