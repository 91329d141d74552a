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

package status

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/recommender/cluster"
	"github.com/openvpa/openvpa/recommender/vpacache"
	"github.com/openvpa/openvpa/recommender/writes"
)

// Writer writes a VPA's status and returns the updated object, of which the
// queue keeps the resourceVersion and status (APIWriter).
type Writer interface {
	WriteStatus(ctx context.Context, vpa *vpav1.VerticalPodAutoscaler, status vpav1.VerticalPodAutoscalerStatus) (*vpav1.VerticalPodAutoscaler, error)
}

// QueueConfig are the status queue's settings and collaborators.
type QueueConfig struct {
	Writer  Writer
	Workers int
	Budget  *writes.Budget
	// Background runs the writes off the loop goroutine and hands their
	// outcomes back to it.
	Background *writes.Background
	// MayWrite reports whether this replica may write a VPA's status now
	// (it holds the VPA's shard); nil means always.
	MayWrite func(types.NamespacedName) bool
	// Writes counts the writes (api_writes_total, kind status); Waiting is
	// the number of writes the last loop left for a later one.
	Writes  *prometheus.CounterVec
	Waiting prometheus.Gauge
}

// Job is the write of one VPA's status.
type Job struct {
	Key types.NamespacedName
	Obj *vpacache.VPA
	// Status is computed by the caller for the jobs Limit keeps.
	Status vpav1.VerticalPodAutoscalerStatus
	// First is whether the write gives the VPA its first recommendation;
	// Written is when this process last wrote the VPA's status.
	First   bool
	Written time.Time
}

// Queue writes statuses in the background on the write workers: a loop's
// length does not depend on the API server's write throughput, so samples
// keep being taken every interval however many VPAs change at once (every
// VPA's first recommendation, for instance, at QPS 50 is 40 s of writes for
// 2,000 VPAs). The next loop applies each outcome: the written object stands
// in for the informer's copy until the informer has it. A VPA whose write is
// still running is not written again until it finishes.
type Queue struct {
	cfg QueueConfig
	// inflight holds the VPAs whose writes are queued or running, and
	// those finished until the next loop applies them.
	inflight map[types.NamespacedName]struct{}
}

// NewQueue returns an empty queue.
func NewQueue(cfg QueueConfig) *Queue {
	return &Queue{cfg: cfg, inflight: map[types.NamespacedName]struct{}{}}
}

// Busy reports whether a write of the VPA's status is queued or running, or
// finished with its outcome not yet applied: the next loop decides.
func (q *Queue) Busy(k types.NamespacedName) bool {
	_, busy := q.inflight[k]
	return busy
}

// InFlight is the number of VPAs whose status writes are queued or running,
// or finished with their outcome not yet applied.
func (q *Queue) InFlight() int { return len(q.inflight) }

// Limit orders the loop's status writes, every VPA's first recommendation
// first, then the VPAs written longest ago, and keeps as many as the budget
// has room for. The others wait for a later loop, which computes them
// afresh: their statuses are not held.
func (q *Queue) Limit(jobs []Job) []Job {
	room, capped := q.cfg.Budget.StatusRoom()
	run, waiting, firstWaiting := limitJobs(jobs, room, capped)
	q.cfg.Budget.FirstWaiting(firstWaiting)
	q.cfg.Waiting.Set(float64(waiting))
	return run
}

// limitJobs orders jobs, every VPA's first recommendation first, then the
// VPAs written longest ago, and with capped keeps at most room of them (none
// when room is not positive). It returns the jobs to run, how many wait for a
// later loop, and how many of those are first recommendations.
func limitJobs(jobs []Job, room int, capped bool) (run []Job, waiting, firstWaiting int) {
	slices.SortFunc(jobs, func(a, b Job) int {
		if a.First != b.First {
			if a.First {
				return -1
			}
			return 1
		}
		if c := a.Written.Compare(b.Written); c != 0 {
			return c
		}
		if c := strings.Compare(a.Key.Namespace, b.Key.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Key.Name, b.Key.Name)
	})
	if !capped || len(jobs) <= room {
		return jobs, 0, 0
	}
	room = max(room, 0)
	for _, j := range jobs[room:] {
		if j.First {
			firstWaiting++
		}
	}
	waiting = len(jobs) - room
	clear(jobs[room:]) // the statuses of the waiting VPAs are not held
	return jobs[:room], waiting, firstWaiting
}

// Write starts the jobs' writes in the background. The loop that applies
// their outcomes records each written object on the VPA's state in state.
func (q *Queue) Write(ctx context.Context, jobs []Job, state *cluster.State, now time.Time) {
	if len(jobs) == 0 {
		return
	}
	logger := klog.FromContext(ctx)
	for _, j := range jobs {
		q.inflight[j.Key] = struct{}{}
	}
	q.cfg.Budget.StatusQueued(len(jobs))
	q.cfg.Background.Run(func() {
		updated := make([]*vpacache.VPA, len(jobs))
		writes.Parallel(q.cfg.Workers, len(jobs), func(i int) {
			defer q.cfg.Budget.StatusDone()
			j := jobs[i]
			// The computed status is not held past its write: the outcome
			// is kept in the cached form.
			jobs[i].Status = vpav1.VerticalPodAutoscalerStatus{}
			if q.cfg.MayWrite != nil && !q.cfg.MayWrite(j.Key) {
				return // the shard moved to another replica meanwhile
			}
			u, err := q.cfg.Writer.WriteStatus(ctx, j.Obj.VerticalPodAutoscaler, j.Status)
			writes.Count(q.cfg.Writes, "status", err)
			if err != nil {
				logger.Error(err, "Cannot update VPA status", "vpa", klog.KObj(j.Obj.VerticalPodAutoscaler))
				return
			}
			logger.V(5).Info("Wrote VPA status", "vpa", j.Key.String())
			updated[i] = standIn(j.Obj, u)
		})
		q.cfg.Background.Finished(func() {
			for i, j := range jobs {
				delete(q.inflight, j.Key)
				if v := state.Get(j.Key); v != nil && updated[i] != nil {
					v.Wrote(now, j.Obj.ResourceVersion, updated[i])
				}
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
