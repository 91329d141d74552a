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

// Package checkpoint saves and restores the recommender's history as
// VerticalPodAutoscalerCheckpoint objects, one per VPA and container name,
// named <vpa>-<container> in the VPA's namespace (format v3, through
// recommender/model).
//
//   - Store writes a checkpoint (JSON patch of /status, Create when it does not
//     exist yet), lists and deletes them.
//   - Restore decodes listed checkpoints into aggregates; a corrupt one is
//     reported and skipped.
//   - Schedule decides when each VPA's checkpoints are written: at most once
//     per write interval, each VPA at its own phase of the interval so that the
//     writes of many VPAs spread evenly over time instead of piling into one
//     loop.
//   - GarbageCollect deletes checkpoints that no longer belong to anything.
//   - Writer keeps them written for the recommender's loop: it restores the
//     handled VPAs' checkpoints into the cluster state, encodes the due ones in
//     the loop and writes them in the background within the shared write
//     budget, writes a VPA's before its shard is handed over and every one on
//     shutdown, and collects the garbage.
package checkpoint
