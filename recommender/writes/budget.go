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

// Package writes holds what the recommender's status and checkpoint writers
// share: the API write budget of one client (Budget), and the runner that
// takes their writes off the loop goroutine and hands each outcome back to
// the loop (Background).
package writes

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Budget divides one client's rate limit between status writes and
// checkpoint writes. Statuses come first: they are what users and the other
// components read. The loop calls StartLoop at the start of every loop; the
// status queue reports what it queued, finished and left waiting; the
// checkpoint writer asks how many checkpoints it may write.
type Budget struct {
	statusPerLoop  int
	minCheckpoints int
	workers        int

	// pending counts the status writes queued and not yet finished.
	pending atomic.Int64
	// backlog is the number of status writes of earlier loops still
	// running when this loop began.
	backlog int
	// firstWaiting is the number of first recommendations the last loop
	// left for a later one.
	firstWaiting int
}

// NewBudget returns a budget. statusPerLoop caps the status writes queued or
// running at once (what the client's rate limit writes in one interval; 0: no
// cap). minCheckpoints is how many due checkpoints are written at every loop
// even while status writes are backlogged (upstream's --min-checkpoints).
// workers is the number of write workers: a backlog is more status writes
// running than the workers take at once.
func NewBudget(statusPerLoop, minCheckpoints, workers int) *Budget {
	return &Budget{statusPerLoop: statusPerLoop, minCheckpoints: minCheckpoints, workers: workers}
}

// PerInterval is how many requests a client limited to qps with burst makes
// in one interval at most: the status writes a loop may have queued or
// running (NewBudget's statusPerLoop).
func PerInterval(qps float32, burst int, interval time.Duration) int {
	return int(float64(qps)*interval.Seconds()) + burst
}

// StartLoop notes the status writes of earlier loops still running.
func (b *Budget) StartLoop() { b.backlog = int(b.pending.Load()) }

// StatusRoom returns how many status writes this loop may queue, and whether
// there is a cap at all.
func (b *Budget) StatusRoom() (room int, capped bool) {
	return b.statusPerLoop - int(b.pending.Load()), b.statusPerLoop > 0
}

// StatusQueued notes n status writes queued.
func (b *Budget) StatusQueued(n int) { b.pending.Add(int64(n)) }

// StatusDone notes one queued status write finished (written, failed or
// skipped). Safe from any goroutine.
func (b *Budget) StatusDone() { b.pending.Add(-1) }

// StatusPending is the number of status writes queued and not finished.
func (b *Budget) StatusPending() int { return int(b.pending.Load()) }

// FirstWaiting notes how many first recommendations this loop left for a
// later one.
func (b *Budget) FirstWaiting(n int) { b.firstWaiting = n }

// Checkpoints returns how many checkpoints this loop may write: -1 for no
// limit. While first recommendations wait, none: first statuses get the
// whole budget (at 10,000 new VPAs, checkpoints took a third of it and
// pushed the last first status well past N / QPS; this lasts about N / QPS).
// While more status writes of earlier loops run than the workers take at
// once (a backlog, not a few late writes: at 10,000 young VPAs every status
// changes at every loop and the backlog can last hours), minCheckpoints, so
// that history is still saved meanwhile. reason says why there is a limit
// and holds the number it depends on.
func (b *Budget) Checkpoints() (limit int, reason string, n int) {
	if b.firstWaiting > 0 {
		return 0, "first recommendations left for later loops", b.firstWaiting
	}
	if b.backlog > b.workers {
		return max(b.minCheckpoints, 0), "status writes of earlier loops still running", b.backlog
	}
	return -1, "", 0
}

// Count counts one API write of kind in writes (the recommender's
// api_writes_total), by result.
func Count(writes *prometheus.CounterVec, kind string, err error) {
	result := "success"
	if err != nil {
		result = "error"
	}
	writes.WithLabelValues(kind, result).Inc()
}
