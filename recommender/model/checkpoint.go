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

package model

import (
	"errors"
	"fmt"
	"math"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
)

const (
	// CheckpointVersion is the checkpoint format this package reads and writes.
	CheckpointVersion = "v3"
	// MaxCheckpointWeight is the weight of the heaviest bucket in a checkpoint.
	MaxCheckpointWeight = 10000
)

// SaveCheckpoint encodes a in checkpoint format v3. The still-open memory
// peak of every instance in open whose window has not ended at now is left
// out, so that restoring does not count a partial window twice. a itself is
// not modified. LastUpdateTime is set to now.
func SaveCheckpoint(a *AggregateState, open []*ContainerState, now time.Time) (vpav1.VerticalPodAutoscalerCheckpointStatus, error) {
	memory := &a.Memory
	if len(open) > 0 {
		var m DecayingHistogram
		for _, c := range open {
			end, peak, ok := c.openPeak(now)
			if !ok {
				continue
			}
			if memory == &a.Memory {
				m = a.Memory.clone()
				memory = &m
			}
			memory.SubtractSample(BytesFromMemoryAmount(peak), 1.0, end)
		}
	}
	status := vpav1.VerticalPodAutoscalerCheckpointStatus{
		LastUpdateTime:    metav1.NewTime(now),
		Version:           CheckpointVersion,
		CPUHistogram:      encodeHistogram(&a.CPU),
		MemoryHistogram:   encodeHistogram(memory),
		FirstSampleStart:  metav1.NewTime(a.FirstSampleStart),
		LastSampleStart:   metav1.NewTime(a.LastSampleStart),
		TotalSamplesCount: a.TotalSamplesCount,
	}
	if math.IsNaN(status.CPUHistogram.TotalWeight) || math.IsInf(status.CPUHistogram.TotalWeight, 0) ||
		math.IsNaN(status.MemoryHistogram.TotalWeight) || math.IsInf(status.MemoryHistogram.TotalWeight, 0) {
		return vpav1.VerticalPodAutoscalerCheckpointStatus{}, errors.New("checkpoint: histogram total weight is not finite")
	}
	return status, nil
}

// encodeHistogram scales the buckets from minBucket to maxBucket so that the
// heaviest is MaxCheckpointWeight, rounds each with floor(x+0.5) and drops
// zeros. The total weight and reference timestamp are kept as they are.
func encodeHistogram(d *DecayingHistogram) vpav1.HistogramCheckpoint {
	h := &d.h
	out := vpav1.HistogramCheckpoint{
		ReferenceTimestamp: metav1.NewTime(d.reference),
		BucketWeights:      map[int]uint32{},
		TotalWeight:        h.total,
	}
	from, to := h.span()
	heaviest := 0.0
	for i := from; i < to; i++ {
		heaviest = max(heaviest, h.w[i])
	}
	if !(heaviest > 0) || math.IsInf(heaviest, 1) {
		return out
	}
	ratio := float64(MaxCheckpointWeight) / heaviest
	for i := from; i < to; i++ {
		if w := roundHalfUp(h.w[i] * ratio); w > 0 {
			out.BucketWeights[i+int(h.lo)] = uint32(w)
		}
	}
	return out
}

// RestoreCheckpoint decodes a checkpoint into a fresh aggregate using cfg
// (DefaultConfig when nil), created at now. A corrupt checkpoint (unknown
// version, negative or non-finite total weight, bucket index out of range,
// negative sample count) returns an error naming the problem; nothing
// existing is modified either way, so the caller swaps the result in only on
// success.
func RestoreCheckpoint(cfg *Config, status *vpav1.VerticalPodAutoscalerCheckpointStatus, now time.Time) (*AggregateState, error) {
	if status == nil {
		return nil, errors.New("checkpoint: status is nil")
	}
	if status.Version != CheckpointVersion {
		return nil, fmt.Errorf("checkpoint: unsupported version %q, want %q", status.Version, CheckpointVersion)
	}
	if status.TotalSamplesCount < 0 {
		return nil, fmt.Errorf("checkpoint: negative totalSamplesCount %d", status.TotalSamplesCount)
	}
	a := NewAggregateState(cfg, now)
	if err := decodeHistogram(&a.CPU, &status.CPUHistogram); err != nil {
		return nil, fmt.Errorf("checkpoint: cpuHistogram: %w", err)
	}
	if err := decodeHistogram(&a.Memory, &status.MemoryHistogram); err != nil {
		return nil, fmt.Errorf("checkpoint: memoryHistogram: %w", err)
	}
	a.FirstSampleStart = status.FirstSampleStart.Time
	a.LastSampleStart = status.LastSampleStart.Time
	a.TotalSamplesCount = status.TotalSamplesCount
	return a, nil
}

// decodeHistogram loads c into the empty histogram d: each bucket weighs
// weight·totalWeight/sum(weights).
func decodeHistogram(d *DecayingHistogram, c *vpav1.HistogramCheckpoint) error {
	if math.IsNaN(c.TotalWeight) || math.IsInf(c.TotalWeight, 0) {
		return fmt.Errorf("total weight %v is not finite", c.TotalWeight)
	}
	if c.TotalWeight < 0 {
		return fmt.Errorf("negative total weight %v", c.TotalWeight)
	}
	n := d.h.opts.numBuckets
	var sum int64
	lo, hi := n, -1
	for b, w := range c.BucketWeights {
		if b < 0 {
			return fmt.Errorf("negative bucket index %d", b)
		}
		if b >= n {
			return fmt.Errorf("bucket index %d out of range, the histogram has %d buckets", b, n)
		}
		sum += int64(w)
		lo, hi = min(lo, b), max(hi, b)
	}
	d.setReference(c.ReferenceTimestamp.Time)
	if sum == 0 {
		return nil
	}
	ratio := c.TotalWeight / float64(sum)
	h := &d.h
	h.w = make([]float64, hi-lo+1)
	h.lo = int32(lo)
	for b, w := range c.BucketWeights {
		h.w[b-lo] = float64(w) * ratio
	}
	h.min, h.max = int32(lo), int32(hi)
	h.total = c.TotalWeight
	return nil
}
