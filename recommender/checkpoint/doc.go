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
package checkpoint
