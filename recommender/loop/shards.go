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

package loop

import (
	"context"
	"sort"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/openvpa/openvpa/pkg/shards"
	"github.com/openvpa/openvpa/recommender/cluster"
	"github.com/openvpa/openvpa/recommender/writes"
)

// ShardSource says which VPAs this replica serves (shards.Manager).
type ShardSource interface {
	// Of returns the shard of a VPA's "namespace/name".
	Of(key string) int
	// Snapshot returns the shards served and being given away.
	Snapshot() shards.Snapshot
	// Valid reports whether the replica may write a shard's objects now.
	Valid(shard int) bool
	// Drained says a shard's VPAs are saved and its Lease can go.
	Drained(shard int)
}

// syncShards applies the shards this replica serves, at the start of a
// loop. VPAs of shards it gives away (or lost) leave: their in-flight writes
// finish, their checkpoints are written while the shard is still held, and
// only then is the shard's Lease released. VPAs of shards it gained arrive
// with their checkpoints restored, so the first status this replica writes
// for them carries their history.
func (r *Recommender) syncShards(ctx context.Context) {
	logger := klog.FromContext(ctx)
	snap := r.deps.Shards.Snapshot()
	var leaving []*cluster.VPA
	for v := range r.state.VPAs() {
		if !snap.Owned[r.deps.Shards.Of(v.Key.String())] {
			leaving = append(leaving, v)
		}
	}
	if len(leaving) > 0 {
		r.WaitWrites()
		r.bg.Apply()
		saved := 0
		if r.checkpoints != nil {
			now := r.deps.Clock.Now()
			cctx, cancel := context.WithTimeout(ctx, r.cfg.CheckpointsTimeout)
			errs := make([]error, len(leaving))
			writes.Parallel(r.cfg.Workers, len(leaving), func(i int) {
				if v := leaving[i]; len(v.Aggregates) > 0 && r.mayWrite(v.Key) {
					errs[i] = r.checkpoints.WriteVPA(cctx, v, now)
				}
			})
			cancel()
			for i, err := range errs {
				if err != nil {
					logger.Error(err, "Cannot save the checkpoints of a VPA another replica takes over", "vpa", leaving[i].Key)
				} else {
					saved++
				}
			}
		}
		for _, v := range leaving {
			r.state.Remove(v.Key)
			if r.checkpoints != nil {
				r.checkpoints.Forget(v.Key)
			}
		}
		logger.Info("Handed VPAs over to other replicas", "vpas", len(leaving), "saved", saved)
	}
	for i := range snap.Draining {
		r.deps.Shards.Drained(i)
	}
	var gained []int
	for i := range snap.Owned {
		if !r.owned[i] {
			gained = append(gained, i)
		}
	}
	sort.Ints(gained)
	r.owned = snap.Owned
	if len(gained) == 0 {
		return
	}
	isGained := map[int]bool{}
	for _, i := range gained {
		isGained[i] = true
	}
	var err error
	if r.checkpoints != nil {
		err = r.checkpoints.Restore(ctx, r.state, func(k types.NamespacedName) bool { return isGained[r.deps.Shards.Of(k.String())] })
	}
	if err != nil {
		// Without their history the first statuses would regress: serve
		// these shards from the next loop, which retries.
		logger.Error(err, "Cannot restore the checkpoints of new shards; retrying at the next loop", "shards", gained)
		for _, i := range gained {
			delete(r.owned, i)
		}
		return
	}
	logger.Info("Serving new shards", "shards", gained, "serving", len(r.owned))
}
