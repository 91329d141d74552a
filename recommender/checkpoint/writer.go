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

package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/pkg/namespaces"
	"github.com/openvpa/openvpa/recommender/cluster"
	"github.com/openvpa/openvpa/recommender/model"
	"github.com/openvpa/openvpa/recommender/vpacache"
	"github.com/openvpa/openvpa/recommender/writes"
)

// Storage persists checkpoints (Store).
type Storage interface {
	Write(ctx context.Context, k Key, status vpav1.VerticalPodAutoscalerCheckpointStatus) error
	Each(ctx context.Context, namespace string, fn func(*vpav1.VerticalPodAutoscalerCheckpoint) error) error
	GarbageCollect(ctx context.Context, namespace string, keep func(*vpav1.VerticalPodAutoscalerCheckpoint) bool) ([]Key, error)
}

// VPAGetter reads the recommender's VPA cache (vpacache.Lister).
type VPAGetter interface {
	// Get returns nil when there is no such VPA.
	Get(namespace, name string) *vpacache.VPA
}

// WriterConfig are the checkpoint writer's settings and collaborators.
type WriterConfig struct {
	Storage    Storage
	VPAs       VPAGetter
	Namespaces namespaces.Filter
	// WriteInterval is how often each VPA's checkpoints are written
	// (--checkpoints-write-interval); GCInterval how often the garbage is
	// collected; Timeout bounds when a loop's writes may start and each
	// write (--checkpoints-timeout).
	WriteInterval, GCInterval, Timeout time.Duration
	Workers                            int
	Budget                             *writes.Budget
	Background                         *writes.Background
	Clock                              clock.Clock
	// MayWrite reports whether this replica may write a VPA's checkpoints
	// now (it holds the VPA's shard); nil means always.
	MayWrite func(types.NamespacedName) bool
	// Writes counts writes and deletions (api_writes_total, kinds
	// checkpoint and checkpoint_delete); Postponed the writes left for the
	// next loop.
	Writes    *prometheus.CounterVec
	Postponed prometheus.Counter
}

// Writer keeps the checkpoints of the loop's VPAs written. Its methods are
// called from the loop's goroutine; the writes it starts run in the
// background and their outcomes are applied by the next loop.
type Writer struct {
	cfg      WriterConfig
	schedule *Schedule
	// inflight holds the schedule keys of the VPAs whose writes are
	// queued or running.
	inflight map[string]struct{}
	lastGC   time.Time
}

// NewWriter returns a writer with an empty schedule.
func NewWriter(cfg WriterConfig) *Writer {
	return &Writer{cfg: cfg, schedule: NewSchedule(cfg.WriteInterval), inflight: map[string]struct{}{}}
}

func scheduleKey(k types.NamespacedName) string { return k.String() }

// Track keeps the schedule to the loop's VPAs: kept are tracked (new ones
// at their own phase), gone forgotten.
func (w *Writer) Track(kept, gone []types.NamespacedName, now time.Time) {
	for _, k := range kept {
		w.schedule.Track(scheduleKey(k), time.Time{}, now)
	}
	for _, k := range gone {
		w.schedule.Forget(scheduleKey(k))
	}
}

// Restore loads into state every checkpoint of the VPAs state handles that
// keep accepts (nil: all). Corrupt checkpoints are logged and skipped; they
// are overwritten at the next write.
func (w *Writer) Restore(ctx context.Context, state *cluster.State, keep func(types.NamespacedName) bool) error {
	logger := klog.FromContext(ctx)
	now := w.cfg.Clock.Now()
	objs := map[types.NamespacedName]*vpacache.VPA{}
	var restored []Restored
	skipped := 0
	// A page of checkpoints at a time: each is decoded into its aggregate
	// and dropped.
	err := w.cfg.Storage.Each(ctx, w.cfg.Namespaces.WatchNamespace(), func(cp *vpav1.VerticalPodAutoscalerCheckpoint) error {
		k := types.NamespacedName{Namespace: cp.Namespace, Name: cp.Spec.VPAObjectName}
		if keep != nil && !keep(k) {
			return nil
		}
		v := w.cfg.VPAs.Get(k.Namespace, k.Name)
		if v == nil || !state.Handles(v.VerticalPodAutoscaler) {
			return nil
		}
		objs[k] = v
		rs, err := Restore(cp, state.ModelConfig(v.VerticalPodAutoscaler, cp.Spec.ContainerName), now)
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
		state.Restore(objs[k], rs.Key.Container, rs.Aggregate)
		if rs.LastUpdate.After(last[k]) {
			last[k] = rs.LastUpdate
		}
	}
	for k, t := range last {
		w.schedule.Track(scheduleKey(k), t, now)
	}
	logger.Info("Restored checkpoints", "checkpoints", len(restored), "vpas", len(last), "skipped", skipped)
	return nil
}

// encoded is one container's checkpoint, ready to write.
type encoded struct {
	key    Key
	status vpav1.VerticalPodAutoscalerCheckpointStatus
}

// encode encodes every aggregate of a VPA at now.
func encode(v *cluster.VPA, now time.Time) ([]encoded, error) {
	open := v.OpenStates()
	names := make([]string, 0, len(v.Aggregates))
	for name := range v.Aggregates {
		names = append(names, name)
	}
	sort.Strings(names)
	var errs []error
	out := make([]encoded, 0, len(names))
	for _, name := range names {
		status, err := model.SaveCheckpoint(v.Aggregates[name], open[name], now)
		if err != nil {
			errs = append(errs, fmt.Errorf("encoding checkpoint of %s container %s: %w", v.Key, name, err))
			continue
		}
		out = append(out, encoded{key: Key{Namespace: v.Key.Namespace, VPA: v.Key.Name, Container: name}, status: status})
	}
	return out, errors.Join(errs...)
}

// write writes encoded checkpoints. It is safe to call from any goroutine: it
// touches no loop state.
func (w *Writer) write(ctx context.Context, cps []encoded) error {
	var errs []error
	for _, cp := range cps {
		if w.cfg.MayWrite != nil && !w.cfg.MayWrite(types.NamespacedName{Namespace: cp.key.Namespace, Name: cp.key.VPA}) {
			errs = append(errs, fmt.Errorf("checkpoint of %s/%s not written: its shard is not held", cp.key.Namespace, cp.key.VPA))
			continue
		}
		err := w.cfg.Storage.Write(ctx, cp.key, cp.status)
		writes.Count(w.cfg.Writes, "checkpoint", err)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// WriteVPA saves every aggregate of a VPA now, on the caller's goroutine
// (a VPA whose shard is handed over).
func (w *Writer) WriteVPA(ctx context.Context, v *cluster.VPA, now time.Time) error {
	cps, encErr := encode(v, now)
	return errors.Join(encErr, w.write(ctx, cps))
}

// InFlight is the number of VPAs whose checkpoint writes are queued or
// running, or finished with their outcome not yet applied.
func (w *Writer) InFlight() int { return len(w.inflight) }

// NextWrite returns when a VPA's checkpoints are next due, and whether the
// schedule tracks it.
func (w *Writer) NextWrite(k types.NamespacedName) (time.Time, bool) {
	return w.schedule.Next(scheduleKey(k))
}

// Forget drops a VPA from the schedule (its shard went to another replica).
func (w *Writer) Forget(k types.NamespacedName) { w.schedule.Forget(scheduleKey(k)) }

// WriteAll writes every VPA's checkpoints now, e.g. on graceful shutdown. ctx
// bounds the whole operation.
func (w *Writer) WriteAll(ctx context.Context, state *cluster.State) error {
	now := w.cfg.Clock.Now()
	var vpas []*cluster.VPA
	for v := range state.VPAs() {
		if len(v.Aggregates) > 0 {
			vpas = append(vpas, v)
		}
	}
	errs := make([]error, len(vpas))
	writes.Parallel(w.cfg.Workers, len(vpas), func(i int) {
		if ctx.Err() != nil {
			errs[i] = ctx.Err()
			return
		}
		errs[i] = w.WriteVPA(ctx, vpas[i], now)
	})
	return errors.Join(errs...)
}

// Maintain writes the checkpoints of the VPAs that are due, within what the
// write budget leaves them, and collects the garbage once per GCInterval. It
// encodes them in the loop, where the model is, and hands the writes to a
// background batch on the workers bounded by Timeout: a loop never waits on
// the API server's write throughput for checkpoints, so a large cluster's
// writes cannot push the next loop, and its samples, back. A VPA whose writes
// are still running is not queued again; the outcome is applied to the
// schedule by the next loop (a failed write stays due and is retried).
func (w *Writer) Maintain(ctx context.Context, state *cluster.State) {
	logger := klog.FromContext(ctx)
	limit, why, n := w.cfg.Budget.Checkpoints()
	if limit == 0 {
		logger.V(3).Info("Checkpoint writes wait", "for", why, "count", n)
		return
	}
	if limit > 0 {
		logger.V(3).Info("Checkpoint writes limited", "by", why, "count", n, "checkpoints", limit)
	}
	now := w.cfg.Clock.Now()
	var jobs []job
	for _, k := range w.schedule.Due(now) {
		if limit >= 0 && len(jobs) >= limit {
			break
		}
		if _, busy := w.inflight[k]; busy {
			continue
		}
		v := byScheduleKey(state, k)
		if v == nil || len(v.Aggregates) == 0 {
			w.schedule.Written(k, now) // nothing to save yet
			continue
		}
		cps, err := encode(v, now)
		if err != nil {
			logger.Error(err, "Cannot encode checkpoints", "vpa", v.Key)
		}
		if len(cps) == 0 {
			continue
		}
		w.inflight[k] = struct{}{}
		jobs = append(jobs, job{vpa: k, cps: cps})
	}
	if len(jobs) > 0 {
		w.cfg.Background.Run(func() { w.writeBatch(ctx, jobs, now) })
	}
	if now.Sub(w.lastGC) >= w.cfg.GCInterval {
		w.lastGC = now
		w.collect(ctx, state)
	}
}

// job is the encoded checkpoints of one VPA, due to be written.
type job struct {
	vpa string // the schedule key
	cps []encoded
}

// writeBatch writes a loop's due checkpoints on the workers, in the
// background. Timeout bounds when a write may start, counted on the loop's
// clock from now, as upstream's bounds its batch; each write that started
// gets that long of its own, so a hung API server cannot hold a worker.
// Writes whose turn comes later stay due for the next loop: they waited for
// the client's rate limiter, they did not fail, so they are counted as
// postponed, not as API errors. (Handing the batch's deadline to each request
// made client-go's rate limiter refuse at once any write whose wait for a
// token would pass it, logged as one error per VPA.)
func (w *Writer) writeBatch(ctx context.Context, jobs []job, now time.Time) {
	logger := klog.FromContext(ctx)
	deadline := now.Add(w.cfg.Timeout)
	errs := make([]error, len(jobs))
	writes.Parallel(w.cfg.Workers, len(jobs), func(i int) {
		if !w.cfg.Clock.Now().Before(deadline) {
			errs[i] = errPostponed
			return
		}
		wctx, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
		defer cancel()
		errs[i] = w.write(wctx, jobs[i].cps)
	})
	written, postponed := 0, 0
	for i, err := range errs {
		switch {
		case err == nil:
			written++
		case errors.Is(err, errPostponed):
			postponed++
		default:
			logger.Error(err, "Cannot write checkpoints", "vpa", jobs[i].vpa)
		}
	}
	if postponed > 0 {
		w.cfg.Postponed.Add(float64(postponed))
		logger.Info("Checkpoint writes wait for the next loop: --checkpoints-timeout ran out before their turn",
			"postponed", postponed, "written", written, "timeout", w.cfg.Timeout)
	}
	logger.V(3).Info("Wrote checkpoints", "vpas", written, "attempted", len(jobs)-postponed)
	// The schedule is the loop's: the next loop applies the outcomes. A
	// write that failed or never started stays due.
	w.cfg.Background.Finished(func() {
		for i, j := range jobs {
			delete(w.inflight, j.vpa)
			if _, tracked := w.schedule.Next(j.vpa); tracked && errs[i] == nil {
				w.schedule.Written(j.vpa, now)
			}
		}
	})
}

// errPostponed marks a checkpoint write whose turn came after Timeout: it
// never started.
var errPostponed = errors.New("checkpoint write postponed to the next loop")

// byScheduleKey returns the state of the VPA a schedule key names, nil when
// there is none.
func byScheduleKey(state *cluster.State, k string) *cluster.VPA {
	ns, name, ok := strings.Cut(k, "/")
	if !ok {
		return nil
	}
	return state.Get(types.NamespacedName{Namespace: ns, Name: name})
}

// collect deletes checkpoints whose VPA no longer exists, and checkpoints of
// the state's VPAs for containers whose history expired. Checkpoints in
// namespaces or shards this recommender does not handle are left alone.
func (w *Writer) collect(ctx context.Context, state *cluster.State) {
	logger := klog.FromContext(ctx)
	deleted, err := w.cfg.Storage.GarbageCollect(ctx, w.cfg.Namespaces.WatchNamespace(), func(cp *vpav1.VerticalPodAutoscalerCheckpoint) bool {
		if !w.cfg.Namespaces.Allows(cp.Namespace) || !state.Serves(types.NamespacedName{Namespace: cp.Namespace, Name: cp.Spec.VPAObjectName}) {
			return true // another recommender's or another replica's
		}
		obj := w.cfg.VPAs.Get(cp.Namespace, cp.Spec.VPAObjectName)
		if obj == nil {
			return false // the VPA is gone
		}
		v := state.Get(cluster.KeyOf(obj.VerticalPodAutoscaler))
		if v == nil {
			return true // another recommender's VPA
		}
		_, ok := v.Aggregates[cp.Spec.ContainerName]
		return ok
	})
	for _, k := range deleted {
		writes.Count(w.cfg.Writes, "checkpoint_delete", nil)
		logger.V(2).Info("Deleted orphaned checkpoint", "namespace", k.Namespace, "vpa", k.VPA, "container", k.Container)
	}
	if err != nil {
		logger.Error(err, "Checkpoint garbage collection")
	}
}
