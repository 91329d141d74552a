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

// Package model holds the recommender's usage model: exponential decaying
// histograms, the per-container aggregate state built from them, the
// per-container-instance memory window state that feeds an aggregate, and the
// checkpoint codec (format v3) that saves and restores an aggregate.
//
// # Layout of the state
//
// The model is keyed by its users, by VPA and container name:
//
//	VPA × container name ──▶ *AggregateState   (histograms, sample statistics)
//	                               ▲   ▲
//	pod A / container ─────────────┘   │        *ContainerState (one per running
//	pod B / container ─────────────────┘         container instance)
//
// An AggregateState holds what is shared by every instance of a container
// under one VPA: the decaying CPU usage histogram, the decaying histogram of
// memory peaks, and FirstSampleStart, LastSampleStart and TotalSamplesCount
// (counted from CPU samples only). A ContainerState holds what belongs to one
// container instance: the time of its last CPU sample and its current memory
// aggregation window (end, usage peak, OOM peak). Samples and OOM events are
// fed through the ContainerState, which updates its window and writes into
// the aggregate it points to. Several ContainerStates may point to the same
// AggregateState.
//
// For a recommendation the caller merges the aggregates of each container
// name (Merge on a fresh NewAggregateState) and hands the result to an
// estimator. Checkpoints are written from such a merged copy with
// SaveCheckpoint, which leaves out the still-open memory peaks of the
// instances' current windows, and read back with RestoreCheckpoint, which
// builds a fresh aggregate and never touches an existing one.
//
// # Numbers
//
// Every operation reproduces upstream VPA 1.7 bit for bit: the same bucket
// boundaries (math.Pow and math.Log in the same order), the same decay
// factors and reference shifts, the same epsilon rules for empty buckets and
// the same checkpoint scaling. Histograms store only the window of buckets
// between the lowest and the highest non-zero bucket instead of upstream's two
// dense 176-entry arrays; an absent bucket reads as weight 0, which leaves
// every sum unchanged.
//
// Nothing in this package is safe for concurrent use; callers serialise access
// per aggregate.
package model
