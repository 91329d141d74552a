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

// Package loop is the recommender's main loop: it loads the VPAs and their
// pods, feeds usage samples and OOM kills into per-VPA, per-container
// aggregates, writes each VPA's status when it changed, and keeps the
// checkpoints written and garbage-collected.
package loop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	vpaclient "github.com/openvpa/openvpa/apis/generated/clientset/versioned/typed/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/hpa"
	"github.com/openvpa/openvpa/pkg/namespaces"
	"github.com/openvpa/openvpa/pkg/recommendation"
	"github.com/openvpa/openvpa/pkg/target"
	"github.com/openvpa/openvpa/recommender/checkpoint"
	"github.com/openvpa/openvpa/recommender/estimator"
	"github.com/openvpa/openvpa/recommender/input"
	"github.com/openvpa/openvpa/recommender/model"
	"github.com/openvpa/openvpa/recommender/vpacache"
)

// AggregateGCInterval is how often expired aggregates are dropped, as upstream.
const AggregateGCInterval = time.Hour

// Resolver resolves a VPA's targetRef (pkg/target.Resolver).
type Resolver interface {
	Resolve(ctx context.Context, vpa *vpav1.VerticalPodAutoscaler) (*target.Target, error)
}

// CheckpointStore persists checkpoints (checkpoint.Store).
type CheckpointStore interface {
	Write(ctx context.Context, k checkpoint.Key, status vpav1.VerticalPodAutoscalerCheckpointStatus) error
	Each(ctx context.Context, namespace string, fn func(*vpav1.VerticalPodAutoscalerCheckpoint) error) error
	GarbageCollect(ctx context.Context, namespace string, keep func(*vpav1.VerticalPodAutoscalerCheckpoint) bool) ([]checkpoint.Key, error)
}

// VPALister reads the recommender's VPA cache (vpacache.Lister).
type VPALister interface {
	List() []*vpacache.VPA
	// Get returns nil when there is no such VPA.
	Get(namespace, name string) *vpacache.VPA
}

// StatusWriter writes a VPA's status and returns the updated object, of
// which the loop reads the resourceVersion and status.
type StatusWriter interface {
	WriteStatus(ctx context.Context, vpa *vpav1.VerticalPodAutoscaler, status vpav1.VerticalPodAutoscalerStatus) (*vpav1.VerticalPodAutoscaler, error)
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
	// (QPS × interval + burst): a longer queue only delays writes past the
	// next loop while holding the statuses, and what is written that late is
	// a loop or more stale. Zero means no cap.
	StatusWritesPerLoop int
	// StatusMaxAge is the period of the bounds slots: how long small bound
	// drifts stay unwritten at most (see NeedsWrite); zero means
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
	VPAs        VPALister
	Pods        input.PodLister
	Resolver    Resolver
	Metrics     input.MetricsSource
	OOMs        func() []input.OOM
	Checkpoints CheckpointStore
	Status      StatusWriter
	Estimator   estimator.Estimator
	Clock       clock.WithTicker
	Prom        *Metrics
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
	LimitRanges func(namespace string) recommendation.LimitRanges
	// Controllers finds the topmost controller of a pod's owner
	// (pkg/target.Resolver), for the VPA the OverlappingVPA condition says
	// the admission controller applies; nil leaves that part out.
	Controllers ControllerResolver
	// HPAs returns a namespace's HorizontalPodAutoscalers and whether they
	// are known (pkg/hpa.Cache.Lookup); while they are not, HPAConflict
	// keeps its last state. Nil means no HPAConflict is checked.
	HPAs func(namespace string) ([]*autoscalingv2.HorizontalPodAutoscaler, bool)
}

// ControllerResolver finds topmost controllers (pkg/target.Resolver).
type ControllerResolver interface {
	TopmostController(ctx context.Context, ref target.Ref) (*target.Ref, error)
}

type instanceKey struct {
	pod       types.NamespacedName
	container string
}

// vpaState is everything the loop keeps about one VPA.
type vpaState struct {
	key types.NamespacedName
	// obj is the cached VPA, its stored recommendation in compact form.
	obj *vpacache.VPA
	tgt *target.Target
	// unsupported is the ConfigUnsupported message, "" when the config is fine.
	unsupported string
	aggregates  map[string]*model.AggregateState
	instances   instanceSet
	podCount    int
	// sample is one of the VPA's pods in the last loop, nil when none: the
	// pod the recommendation is checked against the LimitRanges with.
	sample *input.Pod
	// live are the containers of the VPA's pods in the last loop.
	live nameSet
	// overlaps are the other VPAs matching some of this VPA's pods in the
	// last loop, by name; chosen the VPAs the admission controller applies
	// to those pods ("" for none).
	overlaps, chosen map[string]struct{}
	// lastLive is the container set of the last loop that had pods; it
	// decides the recommendation while the workload has no pods.
	lastLive nameSet
	// written is when the status was last written by this process.
	written time.Time
	// patchedOver and patched let a just-patched object stand in for the
	// informer's copy until the informer catches up.
	patchedOver string
	patched     *vpacache.VPA
	// historyDone is whether the VPA's history was loaded (always true
	// without a HistorySource); until then its status keeps its
	// recommendation and says FetchingHistory.
	historyDone bool
}

// nameSet is a small set of names (a pod's containers), in the order added.
type nameSet []string

func (s nameSet) has(name string) bool { return slices.Contains(s, name) }

func (s *nameSet) add(name string) {
	if !s.has(name) {
		*s = append(*s, name)
	}
}

type podInfo struct {
	vpas   []types.NamespacedName
	init   map[string]struct{}
	labels map[string]string
}

// MetricsQueries returns the pods whose usage the loop reads, each with the
// selector of a VPA it is under, sorted by pod: what the external metrics
// source (input.ExternalMetrics) asks for. It is meant to be called by the
// metrics source while the loop reads usage.
func (r *Recommender) MetricsQueries() []input.PodQuery {
	out := make([]input.PodQuery, 0, len(r.pods))
	for id, info := range r.pods {
		for _, k := range info.vpas {
			if st := r.vpas[k]; st != nil && st.tgt != nil {
				out = append(out, input.PodQuery{Pod: id, Selector: st.tgt.Selector})
				break
			}
		}
	}
	slices.SortFunc(out, func(a, b input.PodQuery) int {
		return strings.Compare(a.Pod.String(), b.Pod.String())
	})
	return out
}

// Recommender is the loop. Its methods must not be called concurrently.
type Recommender struct {
	cfg  Config
	deps Deps

	vpas     map[types.NamespacedName]*vpaState
	pods     map[types.NamespacedName]podInfo
	removed  map[types.NamespacedName]podInfo
	schedule *checkpoint.Schedule
	lastGC   time.Time
	lastAggr time.Time

	// Status and checkpoint writes run in the background (see updateVPAs
	// and maintainCheckpoints). The in-flight sets hold the VPAs whose writes
	// are queued or running, so that a VPA is never written twice at once.
	bg                 background
	statusInflight     map[types.NamespacedName]struct{}
	checkpointInflight map[string]struct{}

	// owned are the shards this replica serves (Deps.Shards).
	owned map[int]bool
	// statusPending counts the status writes queued and not yet finished
	// (statusInflight also holds the finished ones until the next loop
	// applies them).
	statusPending atomic.Int64
	// statusBacklog is the number of status writes of earlier loops still
	// running when this loop began.
	statusBacklog int
	// firstWaiting is the number of first recommendations the last
	// UpdateVPAs left for a later loop (Config.StatusWritesPerLoop).
	firstWaiting int
}

// New returns a Recommender.
func New(cfg Config, deps Deps) *Recommender {
	if cfg.Model == nil {
		cfg.Model = model.DefaultConfig()
	}
	if cfg.Workers < 1 {
		cfg.Workers = 1
	}
	if deps.Clock == nil {
		deps.Clock = clock.RealClock{}
	}
	if deps.Prom == nil {
		deps.Prom = NewMetrics(nil)
	}
	if deps.OOMs == nil {
		deps.OOMs = func() []input.OOM { return nil }
	}
	return &Recommender{
		cfg:                cfg,
		deps:               deps,
		vpas:               map[types.NamespacedName]*vpaState{},
		pods:               map[types.NamespacedName]podInfo{},
		schedule:           checkpoint.NewSchedule(cfg.CheckpointsWriteInterval),
		statusInflight:     map[types.NamespacedName]struct{}{},
		checkpointInflight: map[string]struct{}{},
	}
}

func keyOf(v *vpav1.VerticalPodAutoscaler) types.NamespacedName {
	return types.NamespacedName{Namespace: v.Namespace, Name: v.Name}
}

// handles reports whether this recommender is responsible for v.
func (r *Recommender) handles(v *vpav1.VerticalPodAutoscaler) bool {
	return r.cfg.Namespaces.Allows(v.Namespace) && v.SelectsRecommender(r.cfg.RecommenderName) && r.serves(keyOf(v))
}

// serves reports whether the VPA's shard is one this replica serves.
func (r *Recommender) serves(k types.NamespacedName) bool {
	return r.deps.Shards == nil || r.owned[r.deps.Shards.Of(k.String())]
}

// mayWrite reports whether this replica may write the VPA's status and
// checkpoints now: without shards always, with shards while it holds the
// VPA's shard.
func (r *Recommender) mayWrite(k types.NamespacedName) bool {
	return r.deps.Shards == nil || r.deps.Shards.Valid(r.deps.Shards.Of(k.String()))
}

// modelConfig returns the model configuration of a VPA's container.
func (r *Recommender) modelConfig(v *vpav1.VerticalPodAutoscaler, container string) *model.Config {
	if !r.cfg.PerVPAConfig || v == nil {
		return r.cfg.Model
	}
	return r.cfg.Model.ForPolicy(vpav1.GetContainerResourcePolicy(container, v.Spec.ResourcePolicy))
}

// Restore loads every checkpoint of the VPAs this recommender handles. Call it
// once, after the informers synced and before the first RunOnce, so that the
// first status written already reflects the saved history. Corrupt
// checkpoints are logged and skipped; they are overwritten at the next write.
func (r *Recommender) Restore(ctx context.Context) error {
	return r.restore(ctx, nil)
}

// restore loads the checkpoints of the handled VPAs that keep accepts (nil:
// all).
func (r *Recommender) restore(ctx context.Context, keep func(types.NamespacedName) bool) error {
	if r.deps.Checkpoints == nil {
		return nil
	}
	logger := klog.FromContext(ctx)
	now := r.deps.Clock.Now()
	objs := map[types.NamespacedName]*vpacache.VPA{}
	var restored []checkpoint.Restored
	skipped := 0
	// A page of checkpoints at a time: each is decoded into its aggregate
	// and dropped.
	err := r.deps.Checkpoints.Each(ctx, r.cfg.Namespaces.WatchNamespace(), func(cp *vpav1.VerticalPodAutoscalerCheckpoint) error {
		k := types.NamespacedName{Namespace: cp.Namespace, Name: cp.Spec.VPAObjectName}
		if keep != nil && !keep(k) {
			return nil
		}
		v := r.deps.VPAs.Get(k.Namespace, k.Name)
		if v == nil || !r.handles(v.VerticalPodAutoscaler) {
			return nil
		}
		objs[k] = v
		rs, err := checkpoint.Restore(cp, r.modelConfig(v.VerticalPodAutoscaler, cp.Spec.ContainerName), now)
		if err != nil {
			logger.Error(err, "Skipping unreadable checkpoint")
			skipped++
			return nil
		}
		restored = append(restored, rs)
		return nil
	})
	if err != nil {
		return err
	}
	last := map[types.NamespacedName]time.Time{}
	for _, rs := range restored {
		k := types.NamespacedName{Namespace: rs.Key.Namespace, Name: rs.Key.VPA}
		st := r.state(objs[k])
		st.aggregates[rs.Key.Container] = rs.Aggregate
		if rs.LastUpdate.After(last[k]) {
			last[k] = rs.LastUpdate
		}
	}
	for k, t := range last {
		r.schedule.Track(k.String(), t, now)
	}
	logger.Info("Restored checkpoints", "checkpoints", len(restored), "vpas", len(last), "skipped", skipped)
	return nil
}

func (r *Recommender) state(v *vpacache.VPA) *vpaState {
	k := keyOf(v.VerticalPodAutoscaler)
	st, ok := r.vpas[k]
	if !ok {
		st = &vpaState{key: k, aggregates: map[string]*model.AggregateState{},
			historyDone: r.deps.History == nil}
		r.vpas[k] = st
	}
	st.obj = v
	return st
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
	r.bg.apply()
	r.statusBacklog = int(r.statusPending.Load())
	if r.deps.Shards != nil {
		r.syncShards(ctx)
	}
	r.loadVPAs(ctx)
	t = r.timed(StepLoadVPAs, t)
	r.loadPods(ctx)
	t = r.timed(StepLoadPods, t)
	if r.deps.History != nil {
		r.applyHistory(ctx)
		t = r.timed(StepLoadHistory, t)
	}
	r.loadMetrics(ctx)
	t = r.timed(StepLoadMetrics, t)
	r.deleteRemovedPods()
	t = r.timed(StepDeleteRemovedPods, t)
	r.updateVPAs(ctx)
	t = r.timed(StepUpdateVPAs, t)
	r.maintainCheckpoints(ctx)
	t = r.timed(StepMaintainCheckpoints, t)
	r.garbageCollect()
	r.timed(StepGarbageCollect, t)
	r.timed(StepTotal, begin)
	if ctx.Err() == nil && r.deps.OnLoop != nil {
		r.deps.OnLoop()
	}
	logger.V(3).Info("Loop finished", "vpas", len(r.vpas), "pods", len(r.pods), "duration", r.deps.Clock.Since(begin))
}

func (r *Recommender) loadVPAs(ctx context.Context) {
	logger := klog.FromContext(ctx)
	list := r.deps.VPAs.List()
	now := r.deps.Clock.Now()
	seen := map[types.NamespacedName]bool{}
	for _, v := range list {
		if !r.handles(v.VerticalPodAutoscaler) {
			continue
		}
		k := keyOf(v.VerticalPodAutoscaler)
		seen[k] = true
		if old, ok := r.vpas[k]; ok && old.patched != nil {
			if v.ResourceVersion == old.patchedOver {
				v = old.patched // the informer has not seen our patch yet
			}
			old.patched, old.patchedOver = nil, ""
		}
		st := r.state(v)
		r.schedule.Track(k.String(), time.Time{}, now)
		tgt, err := r.deps.Resolver.Resolve(ctx, v.VerticalPodAutoscaler)
		if err != nil {
			st.tgt = nil
			var ce *target.ConfigError
			if errors.As(err, &ce) {
				st.unsupported = ce.Message
			} else {
				st.unsupported = fmt.Sprintf("Cannot read targetRef. Reason: %s", err)
			}
			logger.V(4).Info("VPA has an unsupported targetRef", "vpa", klog.KObj(v), "reason", st.unsupported)
		} else {
			st.tgt, st.unsupported = tgt, ""
		}
		for name, a := range st.aggregates {
			if cfg := r.modelConfig(v.VerticalPodAutoscaler, name); a.Config() != cfg {
				if err := a.SetConfig(cfg); err != nil {
					logger.Error(err, "Applying the container policy's model settings", "vpa", klog.KObj(v), "container", name)
				}
			}
		}
	}
	for k := range r.vpas {
		if !seen[k] {
			delete(r.vpas, k)
			r.schedule.Forget(k.String())
		}
	}
}

func (r *Recommender) loadPods(ctx context.Context) {
	logger := klog.FromContext(ctx)
	pods, err := r.deps.Pods.List()
	if err != nil {
		logger.Error(err, "Listing pods")
		return
	}
	targets := make([]*target.Target, 0, len(r.vpas))
	for _, st := range r.vpas {
		st.podCount = 0
		st.sample = nil
		st.live = nil // a new set: lastLive may hold the last one
		st.overlaps, st.chosen = nil, nil
		if st.tgt != nil {
			targets = append(targets, st.tgt)
		}
	}
	matcher := target.NewMatcher(targets)
	now := r.deps.Clock.Now()
	current := make(map[types.NamespacedName]podInfo, len(r.pods))
	topmost := map[target.Ref]*target.Ref{}
	for _, pod := range pods {
		if pod.Phase == corev1.PodPending || !r.cfg.Namespaces.Allows(pod.Namespace) {
			continue
		}
		sel := matcher.Selecting(pod.Namespace, pod.Labels)
		if len(sel) == 0 {
			continue // only pods under a VPA are tracked
		}
		if len(sel) > 1 {
			r.recordOverlap(ctx, pod, sel, topmost)
		}
		id := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
		info := podInfo{labels: pod.Labels}
		if len(pod.InitContainers) > 0 {
			info.init = map[string]struct{}{}
			for _, c := range pod.InitContainers {
				info.init[c] = struct{}{}
			}
		}
		for _, t := range sel {
			k := keyOf(t.VPA)
			st := r.vpas[k]
			if st == nil {
				continue
			}
			info.vpas = append(info.vpas, k)
			st.podCount++
			if st.sample == nil || pod.Phase == corev1.PodRunning && st.sample.Phase != corev1.PodRunning {
				st.sample = pod
			}
			for _, c := range pod.Containers {
				st.live.add(c.Name)
				r.instance(st, id, c.Name, now)
			}
		}
		current[id] = info
	}
	r.removed = map[types.NamespacedName]podInfo{}
	for id, info := range r.pods {
		if _, ok := current[id]; !ok {
			r.removed[id] = info
		}
	}
	r.pods = current
}

// recordOverlap notes, on each VPA matching the pod, the others and the one
// the admission controller applies to the pod (target.AdmissionChoiceAmong,
// the admission controller's rule). topmost caches topmost controllers for
// one loop.
func (r *Recommender) recordOverlap(ctx context.Context, pod *input.Pod, sel []*target.Target, topmost map[target.Ref]*target.Ref) {
	chosen := ""
	if r.deps.Controllers != nil && pod.Controller != nil {
		top, ok := topmost[*pod.Controller]
		if !ok {
			var err error
			top, err = r.deps.Controllers.TopmostController(ctx, *pod.Controller)
			if err != nil {
				klog.FromContext(ctx).V(4).Info("Cannot find the pod's topmost controller", "pod", klog.KObj(pod), "err", err)
				top = nil
			}
			topmost[*pod.Controller] = top
		}
		if t := target.AdmissionChoiceAmong(sel, top); t != nil {
			chosen = t.VPA.Name
		}
	}
	for _, t := range sel {
		st := r.vpas[keyOf(t.VPA)]
		if st == nil {
			continue
		}
		if st.overlaps == nil {
			st.overlaps, st.chosen = map[string]struct{}{}, map[string]struct{}{}
		}
		for _, o := range sel {
			if o != t {
				st.overlaps[o.VPA.Name] = struct{}{}
			}
		}
		st.chosen[chosen] = struct{}{}
	}
}

// OverlapMessage is the OverlappingVPA message of VPA self whose pods are
// also matched by others, the admission controller applying chosen to them
// ("" in chosen: none). Names are sorted, so the message is stable.
func OverlapMessage(self string, others, chosen []string) string {
	if len(others) == 0 {
		return ""
	}
	others, chosen = slices.Sorted(slices.Values(others)), slices.Sorted(slices.Values(chosen))
	noun := "VPA"
	if len(others) > 1 {
		noun = "VPAs"
	}
	msg := fmt.Sprintf("Pods of this VPA are also matched by %s %s; ", noun, strings.Join(others, ", "))
	var names []string
	none := false
	for _, c := range chosen {
		switch c {
		case "":
			none = true
		case self:
			names = append(names, "this VPA ("+self+")")
		default:
			names = append(names, "VPA "+c)
		}
	}
	switch {
	case len(names) == 0:
		msg += "the admission controller applies none of them (each is in mode Off or does not target the pods' controller)"
	case len(names) == 1 && !none:
		msg += "the admission controller applies " + names[0] + " to them"
	default:
		if none {
			names = append(names, "none")
		}
		msg += "the admission controller applies, depending on the pod, " + strings.Join(names, " or ")
	}
	return msg
}

func setKeys(m map[string]struct{}) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// instance returns the container state of a pod's container under a VPA,
// creating it (and the aggregate) when needed.
func (r *Recommender) instance(st *vpaState, pod types.NamespacedName, container string, now time.Time) *model.ContainerState {
	ik := instanceKey{pod: pod, container: container}
	if cs, ok := st.instances.get(ik); ok {
		return cs
	}
	a, ok := st.aggregates[container]
	if !ok {
		a = model.NewAggregateState(r.modelConfig(st.obj.VerticalPodAutoscaler, container), now)
		st.aggregates[container] = a
	}
	cs := model.NewContainerState(a)
	st.instances.put(ik, cs)
	return cs
}

// tracked says whether the loop reads the usage of pod: only pods of a
// served VPA are in r.pods.
func (r *Recommender) tracked(pod types.NamespacedName) bool {
	_, ok := r.pods[pod]
	return ok
}

func (r *Recommender) loadMetrics(ctx context.Context) {
	logger := klog.FromContext(ctx)
	if r.deps.Metrics != nil && len(r.pods) > 0 {
		usage, err := r.deps.Metrics.Usage(ctx, r.tracked)
		r.deps.Prom.MetricServerResponses.WithLabelValues(fmt.Sprint(err != nil), "metrics-server").Inc()
		if err != nil {
			logger.Error(err, "Cannot read usage from metrics-server; recommendations keep their last value")
		}
		accepted := 0
		for _, u := range usage {
			info, ok := r.pods[u.Pod]
			if !ok {
				continue
			}
			if _, isInit := info.init[u.Container]; isInit {
				continue
			}
			for _, k := range info.vpas {
				st := r.vpas[k]
				cs, ok := st.instances.get(instanceKey{pod: u.Pod, container: u.Container})
				if !ok {
					continue // not a container of the pod's spec
				}
				if u.CPU >= 0 && cs.AddCPUSample(u.Time, u.CPU) {
					accepted++
				}
				if u.Memory >= 0 {
					cs.AddMemorySample(u.Time, u.Memory)
				}
			}
		}
		logger.V(4).Info("Loaded usage", "samples", len(usage), "accepted", accepted)
	}
	for _, o := range r.deps.OOMs() {
		info, ok := r.pods[o.Pod]
		if !ok {
			info, ok = r.removed[o.Pod]
		}
		if !ok {
			continue
		}
		for _, k := range info.vpas {
			st := r.vpas[k]
			if st == nil {
				continue
			}
			cs, ok := st.instances.get(instanceKey{pod: o.Pod, container: o.Container})
			if !ok {
				continue
			}
			if err := cs.RecordOOM(o.Time, o.Memory); err != nil {
				logger.V(4).Info("OOM not recorded", "pod", o.Pod, "container", o.Container, "err", err)
				continue
			}
			logger.V(2).Info("Recorded OOM", "pod", o.Pod, "container", o.Container, "vpa", k)
		}
	}
}

// deleteRemovedPods drops the container states of pods that vanished or are
// no longer under their VPA.
func (r *Recommender) deleteRemovedPods() {
	for _, st := range r.vpas {
		st.instances.deleteFunc(func(ik instanceKey) bool {
			info, ok := r.pods[ik.pod]
			return !ok || !containsKey(info.vpas, st.key)
		})
	}
	r.removed = nil
}

func containsKey(ks []types.NamespacedName, k types.NamespacedName) bool {
	for _, x := range ks {
		if x == k {
			return true
		}
	}
	return false
}

// recommendable returns the aggregates a VPA's recommendation is built from:
// when pods match, only the containers some matching pod has; with no pods
// (scaled to zero, between job runs) every aggregate, so the recommendation
// stays available for the next pod.
func (st *vpaState) recommendable() map[string]*model.AggregateState {
	live := st.live
	if st.podCount == 0 {
		live = st.lastLive
	} else {
		st.lastLive = st.live
	}
	if len(live) == 0 {
		return st.aggregates
	}
	out := make(map[string]*model.AggregateState, len(live))
	for name, a := range st.aggregates {
		if live.has(name) {
			out[name] = a
		}
	}
	return out
}

type objectCountKey struct {
	mode, hasRec, matches, unsupported string
}

func (r *Recommender) updateVPAs(ctx context.Context) {
	logger := klog.FromContext(ctx)
	now := r.deps.Clock.Now()
	var jobs []statusJob
	counts := map[objectCountKey]int{}
	for _, st := range r.vpas {
		status := r.computeStatus(st, now)
		rec := status.Recommendation
		first := HasRecommendation(rec) && len(st.obj.Recommendation) == 0
		if first {
			r.deps.Prom.RecommendationLatency.Observe(now.Sub(st.obj.CreationTimestamp.Time).Seconds())
		}
		counts[objectCountKey{
			mode:        string(vpav1.GetUpdateMode(st.obj.VerticalPodAutoscaler)),
			hasRec:      fmt.Sprint(HasRecommendation(rec)),
			matches:     fmt.Sprint(st.podCount > 0),
			unsupported: fmt.Sprint(st.unsupported != ""),
		}]++
		if _, busy := r.statusInflight[st.key]; busy {
			continue // the previous write is still running; the next loop decides
		}
		if NeedsWrite(st.obj.VerticalPodAutoscaler.Status, st.obj.Recommendation, status, st.written, now, r.cfg.statusMaxAge(), checkpoint.Offset(st.key.String(), r.cfg.statusMaxAge())) {
			// The status is not held: most of the VPAs that need a write
			// wait for a later loop when many do (every VPA's first
			// recommendation), and those that run it are computed again
			// below.
			jobs = append(jobs, statusJob{key: st.key, obj: st.obj, first: first, written: st.written})
		}
	}
	r.deps.Prom.VPAObjects.Reset()
	for k, n := range counts {
		r.deps.Prom.VPAObjects.WithLabelValues(k.mode, k.hasRec, "v1", k.matches, k.unsupported).Set(float64(n))
	}
	jobs, waiting, firstWaiting := limitStatusJobs(jobs, r.cfg.StatusWritesPerLoop-int(r.statusPending.Load()), r.cfg.StatusWritesPerLoop > 0)
	r.firstWaiting = firstWaiting
	r.deps.Prom.StatusWritesWaiting.Set(float64(waiting))
	for i := range jobs {
		jobs[i].status = r.computeStatus(r.vpas[jobs[i].key], now)
	}
	r.writeStatuses(ctx, jobs, now)
	n := 0
	for _, st := range r.vpas {
		n += len(st.aggregates)
	}
	r.deps.Prom.AggregateStates.Set(float64(n))
	logger.V(3).Info("Updated VPAs", "vpas", len(r.vpas), "statusWrites", len(jobs), "statusWritesWaiting", waiting)
}

// computeStatus returns the status a VPA should have now. It changes
// nothing: computed twice in one loop, it is the same.
func (r *Recommender) computeStatus(st *vpaState, now time.Time) vpav1.VerticalPodAutoscalerStatus {
	var facts Facts
	if st.historyDone {
		res := r.deps.Estimator.Recommend(st.recommendable(), st.obj.Spec.ResourcePolicy, st.obj.Annotations)
		if len(res.Containers) > 0 {
			facts.Recommendation = &vpav1.RecommendedPodResources{ContainerRecommendations: res.Containers}
		}
		facts.Confidence = res.Confidence
	} else {
		// Never a recommendation computed without the history being
		// fetched: the last one stays until the history is in.
		facts.Recommendation = st.obj.Recommendation.Expand()
		facts.FetchingHistory, facts.FetchingHistoryMessage = r.fetchingHistory(st.key.Namespace)
	}
	rec := facts.Recommendation
	facts.PodsMatched = st.podCount > 0
	facts.Unsupported = st.unsupported
	facts.LimitRangeConflict, facts.LimitRangeConflictMessage = r.limitRangeConflict(st, rec)
	facts.Overlap = OverlapMessage(st.key.Name, setKeys(st.overlaps), setKeys(st.chosen))
	if r.deps.HPAs != nil && st.tgt != nil {
		if hpas, ok := r.deps.HPAs(st.key.Namespace); ok {
			var containers []string // nil: every container
			if len(st.live) > 0 {
				containers = st.live
			}
			facts.HPAConflict = hpa.Message(st.obj.VerticalPodAutoscaler, hpa.Conflicts(st.obj.VerticalPodAutoscaler, hpas, containers))
		} else if c := trueCondition(st.obj.VerticalPodAutoscaler.Status.Conditions, vpav1.HPAConflict); c != nil {
			facts.HPAConflict = c.Message // not known yet: keep it
		}
	}
	return BuildStatus(st.obj.VerticalPodAutoscaler, facts, now)
}

// WritesPerInterval is how many requests a client limited to qps with burst
// makes in one interval at most: Config.StatusWritesPerLoop.
func WritesPerInterval(qps float32, burst int, interval time.Duration) int {
	return int(float64(qps)*interval.Seconds()) + burst
}

// limitStatusJobs orders the loop's status writes, every VPA's first
// recommendation first, then the VPAs written longest ago, and with capped
// keeps at most room of them (none when room is not positive). It returns
// the jobs to run, how many wait for a later loop, and how many of those are
// first recommendations.
func limitStatusJobs(jobs []statusJob, room int, capped bool) (run []statusJob, waiting, firstWaiting int) {
	slices.SortFunc(jobs, func(a, b statusJob) int {
		if a.first != b.first {
			if a.first {
				return -1
			}
			return 1
		}
		if c := a.written.Compare(b.written); c != 0 {
			return c
		}
		if c := strings.Compare(a.key.Namespace, b.key.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.key.Name, b.key.Name)
	})
	if !capped || len(jobs) <= room {
		return jobs, 0, 0
	}
	room = max(room, 0)
	for _, j := range jobs[room:] {
		if j.first {
			firstWaiting++
		}
	}
	waiting = len(jobs) - room
	clear(jobs[room:]) // the statuses of the waiting VPAs are not held
	return jobs[:room], waiting, firstWaiting
}

// limitRangeConflict checks rec against the namespace's LimitRanges (and
// pod-level resources) on one of the VPA's pods, as the admission controller
// and the updater will, and returns the LimitRangeConflict condition's reason
// and message, or "" when the recommendation fits. Namespaces without
// LimitRanges cost a lookup.
func (r *Recommender) limitRangeConflict(st *vpaState, rec *vpav1.RecommendedPodResources) (string, string) {
	if r.deps.LimitRanges == nil || st.sample == nil || !HasRecommendation(rec) {
		return "", ""
	}
	lr := r.deps.LimitRanges(st.key.Namespace)
	if len(lr.Items) == 0 && st.sample.PodResources == nil {
		return "", ""
	}
	vpa := *st.obj.VerticalPodAutoscaler
	vpa.Status.Recommendation = rec
	plan := recommendation.PlanForPodShared(st.sample.SpecPod(), &vpa, lr)
	if plan.Conflict == nil {
		return "", ""
	}
	if plan.PolicyOverridden {
		return ReasonLimitRangeOverridesPolicy, "Pods get the recommendation capped to the namespace's LimitRanges past the resource policy, which they do not admit: " + plan.Why()
	}
	return ReasonPodsKeepRequests, "Pods keep their requests: the API server would refuse them with the recommendation: " + plan.Why()
}

// statusJob is the write of one VPA's status.
type statusJob struct {
	key    types.NamespacedName
	obj    *vpacache.VPA
	status vpav1.VerticalPodAutoscalerStatus
	// first is whether the write gives the VPA its first recommendation;
	// written is when this process last wrote the VPA's status.
	first   bool
	written time.Time
}

// writeStatuses writes statuses in the background on the update workers: a
// loop's length does not depend on the API server's write throughput, so
// samples keep being taken every interval however many VPAs change at once
// (every VPA's first recommendation, for instance, at QPS 50 is 40 s of
// writes for 2,000 VPAs). The next loop applies each outcome: the written
// object stands in for the informer's copy until the informer has it. A VPA
// whose write is still running is not written again until it finishes.
func (r *Recommender) writeStatuses(ctx context.Context, jobs []statusJob, now time.Time) {
	if len(jobs) == 0 {
		return
	}
	logger := klog.FromContext(ctx)
	for _, j := range jobs {
		r.statusInflight[j.key] = struct{}{}
	}
	r.statusPending.Add(int64(len(jobs)))
	r.bg.run(func() {
		updated := make([]*vpacache.VPA, len(jobs))
		r.parallel(len(jobs), func(i int) {
			defer r.statusPending.Add(-1)
			j := jobs[i]
			// The computed status is not held past its write: the outcome
			// is kept in the cached form.
			jobs[i].status = vpav1.VerticalPodAutoscalerStatus{}
			if !r.mayWrite(j.key) {
				return // the shard moved to another replica meanwhile
			}
			u, err := r.deps.Status.WriteStatus(ctx, j.obj.VerticalPodAutoscaler, j.status)
			r.deps.Prom.write("status", err)
			if err != nil {
				logger.Error(err, "Cannot update VPA status", "vpa", klog.KObj(j.obj.VerticalPodAutoscaler))
				return
			}
			logger.V(5).Info("Wrote VPA status", "vpa", j.key.String())
			updated[i] = standIn(j.obj, u)
		})
		r.bg.finished(func() {
			for i, j := range jobs {
				delete(r.statusInflight, j.key)
				st, ok := r.vpas[j.key]
				if !ok || updated[i] == nil {
					continue
				}
				st.written = now
				st.patchedOver = j.obj.ResourceVersion
				st.patched = updated[i]
				st.obj = updated[i]
			}
		})
	})
}

// standIn is what stands in for the informer's copy of a VPA whose status
// this process just wrote, until the informer catches up: the cached object
// the write was based on, its metadata and spec shared rather than held a
// second time as decoded from the answer, with the answer's resourceVersion
// and status in the cached form. A spec changed meanwhile reaches the loop as
// it would without the write, through the informer, whose resourceVersion
// then differs from the one the write was based on.
func standIn(base *vpacache.VPA, written *vpav1.VerticalPodAutoscaler) *vpacache.VPA {
	obj := *base.VerticalPodAutoscaler
	obj.ResourceVersion = written.ResourceVersion
	obj.Status = written.Status
	return vpacache.New(&obj)
}

// parallel runs f(0..n-1) on the configured number of workers and returns
// when every call has returned.
func (r *Recommender) parallel(n int, f func(int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(r.cfg.Workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// encodedCheckpoint is one container's checkpoint, ready to write.
type encodedCheckpoint struct {
	key    checkpoint.Key
	status vpav1.VerticalPodAutoscalerCheckpointStatus
}

// encodeCheckpoints encodes every aggregate of a VPA at now.
func (r *Recommender) encodeCheckpoints(st *vpaState, now time.Time) ([]encodedCheckpoint, error) {
	open := map[string][]*model.ContainerState{}
	st.instances.each(func(ik instanceKey, cs *model.ContainerState) {
		open[ik.container] = append(open[ik.container], cs)
	})
	names := make([]string, 0, len(st.aggregates))
	for name := range st.aggregates {
		names = append(names, name)
	}
	sort.Strings(names)
	var errs []error
	out := make([]encodedCheckpoint, 0, len(names))
	for _, name := range names {
		status, err := model.SaveCheckpoint(st.aggregates[name], open[name], now)
		if err != nil {
			errs = append(errs, fmt.Errorf("encoding checkpoint of %s container %s: %w", st.key, name, err))
			continue
		}
		out = append(out, encodedCheckpoint{key: checkpoint.Key{Namespace: st.key.Namespace, VPA: st.key.Name, Container: name}, status: status})
	}
	return out, errors.Join(errs...)
}

// writeEncoded writes encoded checkpoints. It is safe to call from any
// goroutine: it touches no loop state.
func (r *Recommender) writeEncoded(ctx context.Context, cps []encodedCheckpoint) error {
	var errs []error
	for _, cp := range cps {
		if !r.mayWrite(types.NamespacedName{Namespace: cp.key.Namespace, Name: cp.key.VPA}) {
			errs = append(errs, fmt.Errorf("checkpoint of %s/%s not written: its shard is not held", cp.key.Namespace, cp.key.VPA))
			continue
		}
		err := r.deps.Checkpoints.Write(ctx, cp.key, cp.status)
		r.deps.Prom.write("checkpoint", err)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// writeCheckpoints saves every aggregate of a VPA.
func (r *Recommender) writeCheckpoints(ctx context.Context, st *vpaState, now time.Time) error {
	cps, encErr := r.encodeCheckpoints(st, now)
	return errors.Join(encErr, r.writeEncoded(ctx, cps))
}

// maintainCheckpoints writes the checkpoints of the VPAs that are due. It
// encodes them in the loop, where the model is, and hands the writes to a
// background batch on --update-worker-count workers bounded by
// --checkpoints-timeout: a loop never waits on the API server's write
// throughput for checkpoints, so a large cluster's writes cannot push the
// next loop, and its samples, back. A VPA whose writes are still running is
// not queued again; the outcome is applied to the schedule by the next loop
// (a failed write stays due and is retried).
func (r *Recommender) maintainCheckpoints(ctx context.Context) {
	if r.deps.Checkpoints == nil {
		return // --storage=prometheus: history lives in Prometheus
	}
	logger := klog.FromContext(ctx)
	if r.firstWaiting > 0 {
		// First statuses get the whole budget: they are what users and
		// the other components read, and checkpoints share the client's
		// QPS budget (at 10,000 new VPAs, checkpoints took a third of it
		// and pushed the last first status well past N / QPS). This lasts
		// about N / QPS.
		logger.V(3).Info("Checkpoint writes wait for first recommendations left for later loops", "firstRecommendationsWaiting", r.firstWaiting)
		return
	}
	limit := -1
	if n := r.statusBacklog; n > r.cfg.Workers {
		// Statuses first while more status writes of earlier loops are
		// running than the workers can take at once (a backlog, not a few
		// late writes): at 10,000 young VPAs every status changes at every
		// loop and the backlog can last for hours. Checkpoints still get
		// MinCheckpoints writes per loop, as upstream's, so that history is
		// saved meanwhile.
		limit = max(r.cfg.MinCheckpoints, 0)
		if limit == 0 {
			logger.V(3).Info("Checkpoint writes wait for the status writes still running from earlier loops", "statusWrites", n)
			return
		}
		logger.V(3).Info("Checkpoint writes limited while status writes of earlier loops are running", "statusWrites", n, "checkpoints", limit)
	}
	now := r.deps.Clock.Now()
	var jobs []checkpointJob
	for _, k := range r.schedule.Due(now) {
		if limit >= 0 && len(jobs) >= limit {
			break
		}
		if _, busy := r.checkpointInflight[k]; busy {
			continue
		}
		st, ok := r.byScheduleKey(k)
		if !ok || len(st.aggregates) == 0 {
			r.schedule.Written(k, now) // nothing to save yet
			continue
		}
		cps, err := r.encodeCheckpoints(st, now)
		if err != nil {
			logger.Error(err, "Cannot encode checkpoints", "vpa", st.key)
		}
		if len(cps) == 0 {
			continue
		}
		r.checkpointInflight[k] = struct{}{}
		jobs = append(jobs, checkpointJob{vpa: k, cps: cps})
	}
	if len(jobs) > 0 {
		r.bg.run(func() { r.writeCheckpointBatch(ctx, jobs, now) })
	}
	if now.Sub(r.lastGC) >= r.cfg.CheckpointsGCInterval {
		r.lastGC = now
		r.collectCheckpoints(ctx)
	}
}

// checkpointJob is the encoded checkpoints of one VPA, due to be written.
type checkpointJob struct {
	vpa string // the schedule key
	cps []encodedCheckpoint
}

// writeCheckpointBatch writes a loop's due checkpoints on the workers, in the
// background. --checkpoints-timeout bounds when a write may start, counted
// on the loop's clock from now, as upstream's bounds its batch; each write
// that started gets that long of its own, so a hung API server cannot hold a
// worker. Writes whose turn comes later stay due for the next loop: they
// waited for the client's rate limiter, they did not fail, so they are
// counted as postponed, not as API errors. (Handing the batch's deadline to
// each request made client-go's rate limiter refuse at once any write whose
// wait for a token would pass it, logged as one error per VPA.)
func (r *Recommender) writeCheckpointBatch(ctx context.Context, jobs []checkpointJob, now time.Time) {
	logger := klog.FromContext(ctx)
	deadline := now.Add(r.cfg.CheckpointsTimeout)
	errs := make([]error, len(jobs))
	r.parallel(len(jobs), func(i int) {
		if !r.deps.Clock.Now().Before(deadline) {
			errs[i] = errCheckpointPostponed
			return
		}
		wctx, cancel := context.WithTimeout(ctx, r.cfg.CheckpointsTimeout)
		defer cancel()
		errs[i] = r.writeEncoded(wctx, jobs[i].cps)
	})
	written, postponed := 0, 0
	for i, err := range errs {
		switch {
		case err == nil:
			written++
		case errors.Is(err, errCheckpointPostponed):
			postponed++
		default:
			logger.Error(err, "Cannot write checkpoints", "vpa", jobs[i].vpa)
		}
	}
	if postponed > 0 {
		r.deps.Prom.CheckpointWritesPostponed.Add(float64(postponed))
		logger.Info("Checkpoint writes wait for the next loop: --checkpoints-timeout ran out before their turn",
			"postponed", postponed, "written", written, "timeout", r.cfg.CheckpointsTimeout)
	}
	logger.V(3).Info("Wrote checkpoints", "vpas", written, "attempted", len(jobs)-postponed)
	// The schedule is the loop's: the next loop applies the outcomes. A
	// write that failed or never started stays due.
	r.bg.finished(func() {
		for i, j := range jobs {
			delete(r.checkpointInflight, j.vpa)
			if _, tracked := r.schedule.Next(j.vpa); tracked && errs[i] == nil {
				r.schedule.Written(j.vpa, now)
			}
		}
	})
}

// errCheckpointPostponed marks a checkpoint write whose turn came after
// --checkpoints-timeout: it never started.
var errCheckpointPostponed = errors.New("checkpoint write postponed to the next loop")

// byScheduleKey returns the state of the VPA a schedule key names.
func (r *Recommender) byScheduleKey(k string) (*vpaState, bool) {
	ns, name, ok := strings.Cut(k, "/")
	if !ok {
		return nil, false
	}
	st, ok := r.vpas[types.NamespacedName{Namespace: ns, Name: name}]
	return st, ok
}

// WaitWrites blocks until the background status and checkpoint writes
// started so far have finished. The next loop applies their outcomes.
func (r *Recommender) WaitWrites() { r.bg.wait() }

// collectCheckpoints deletes checkpoints whose VPA no longer exists, and
// checkpoints of this recommender's VPAs for containers whose history expired.
// Checkpoints in namespaces this recommender does not handle are left alone.
func (r *Recommender) collectCheckpoints(ctx context.Context) {
	logger := klog.FromContext(ctx)
	deleted, err := r.deps.Checkpoints.GarbageCollect(ctx, r.cfg.Namespaces.WatchNamespace(), func(cp *vpav1.VerticalPodAutoscalerCheckpoint) bool {
		if !r.cfg.Namespaces.Allows(cp.Namespace) || !r.serves(types.NamespacedName{Namespace: cp.Namespace, Name: cp.Spec.VPAObjectName}) {
			return true // another recommender's or another replica's
		}
		v := r.deps.VPAs.Get(cp.Namespace, cp.Spec.VPAObjectName)
		if v == nil {
			return false // the VPA is gone
		}
		st, mine := r.vpas[keyOf(v.VerticalPodAutoscaler)]
		if !mine {
			return true // another recommender's VPA
		}
		_, ok := st.aggregates[cp.Spec.ContainerName]
		return ok
	})
	for _, k := range deleted {
		r.deps.Prom.write("checkpoint_delete", nil)
		logger.V(2).Info("Deleted orphaned checkpoint", "namespace", k.Namespace, "vpa", k.VPA, "container", k.Container)
	}
	if err != nil {
		logger.Error(err, "Checkpoint garbage collection")
	}
}

// garbageCollect drops, once per AggregateGCInterval, the aggregates whose
// history expired and that no live pod feeds.
func (r *Recommender) garbageCollect() {
	now := r.deps.Clock.Now()
	if now.Sub(r.lastAggr) < AggregateGCInterval {
		return
	}
	r.lastAggr = now
	for _, st := range r.vpas {
		for name, a := range st.aggregates {
			if st.live.has(name) || !a.IsExpired(now) {
				continue
			}
			delete(st.aggregates, name)
			st.instances.deleteFunc(func(ik instanceKey) bool { return ik.container == name })
		}
	}
}

// WriteAllCheckpoints writes every VPA's checkpoints now, e.g. on graceful
// shutdown. ctx bounds the whole operation.
func (r *Recommender) WriteAllCheckpoints(ctx context.Context) error {
	if r.deps.Checkpoints == nil {
		return nil
	}
	now := r.deps.Clock.Now()
	sts := make([]*vpaState, 0, len(r.vpas))
	for _, st := range r.vpas {
		if len(st.aggregates) > 0 {
			sts = append(sts, st)
		}
	}
	errs := make([]error, len(sts))
	r.parallel(len(sts), func(i int) {
		if ctx.Err() != nil {
			errs[i] = ctx.Err()
			return
		}
		errs[i] = r.writeCheckpoints(ctx, sts[i], now)
	})
	return errors.Join(errs...)
}

// APIStatusWriter writes status with a JSON patch on the status subresource.
// The API server answers with the whole object, managed fields included;
// only its resourceVersion and status are decoded, since that is all the
// loop keeps of it (standIn). Decoding the whole answer was 18% of the
// recommender's CPU at 10,000 VPAs; this takes about half as long and
// allocates half as much (BenchmarkStatusAnswer).
type APIStatusWriter struct {
	Client vpaclient.AutoscalingV1Interface
}

// writtenStatus is what WriteStatus decodes of the API server's answer.
type writtenStatus struct {
	Metadata struct {
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
	Status vpav1.VerticalPodAutoscalerStatus `json:"status"`
}

// WriteStatus implements StatusWriter. The object it returns holds the
// VPA's namespace and name and the answer's resourceVersion and status.
func (w APIStatusWriter) WriteStatus(ctx context.Context, vpa *vpav1.VerticalPodAutoscaler, status vpav1.VerticalPodAutoscalerStatus) (*vpav1.VerticalPodAutoscaler, error) {
	patch, err := json.Marshal([]map[string]any{{"op": "add", "path": "/status", "value": status}})
	if err != nil {
		return nil, err
	}
	raw, err := w.Client.RESTClient().Patch(types.JSONPatchType).
		Namespace(vpa.Namespace).Resource("verticalpodautoscalers").Name(vpa.Name).SubResource("status").
		VersionedParams(&metav1.PatchOptions{FieldManager: checkpoint.FieldManager}, metav1.ParameterCodec).
		Body(patch).Do(ctx).Raw()
	if err != nil {
		return nil, err
	}
	return decodeWrittenStatus(vpa, raw)
}

func decodeWrittenStatus(vpa *vpav1.VerticalPodAutoscaler, raw []byte) (*vpav1.VerticalPodAutoscaler, error) {
	var a writtenStatus
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, fmt.Errorf("decoding the answer to the status write: %w", err)
	}
	if a.Metadata.ResourceVersion == "" {
		return nil, fmt.Errorf("the answer to the status write has no resourceVersion")
	}
	return &vpav1.VerticalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: vpa.Namespace, Name: vpa.Name, ResourceVersion: a.Metadata.ResourceVersion},
		Status:     a.Status,
	}, nil
}
