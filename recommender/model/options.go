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
	"sync"
)

const (
	// MinSampleWeight is the weight of one CPU usage sample.
	MinSampleWeight = 0.1
	// Epsilon is the weight below which a bucket counts as empty.
	Epsilon = 0.001 * MinSampleWeight

	// CPUHistogramFirstBucket is the size of the first CPU bucket, in cores.
	CPUHistogramFirstBucket = 0.01
	// CPUHistogramMaxValue is the value covered by the last CPU bucket, in cores.
	CPUHistogramMaxValue = 1000.0
	// MemoryHistogramFirstBucket is the size of the first memory bucket, in bytes.
	MemoryHistogramFirstBucket = 1e7
	// MemoryHistogramMaxValue is the value covered by the last memory bucket, in bytes.
	MemoryHistogramMaxValue = 1e12
	// HistogramBucketRatio is the ratio between the sizes of consecutive buckets.
	HistogramBucketRatio = 1.05
)

// HistogramOptions is an exponential bucketing scheme: bucket 0 covers
// [0, first), and bucket b ≥ 1 starts at first·(ratio^b − 1)/(ratio − 1). The
// last bucket starts at or above the maximum value and has no upper edge.
// Options are immutable once built and are shared by pointer.
type HistogramOptions struct {
	numBuckets int
	first      float64
	ratio      float64
	epsilon    float64
	logRatio   float64
	starts     []float64
	index      *bucketIndex
}

// NewExponentialHistogramOptions returns the scheme with the given maximum
// value, first bucket size, ratio and epsilon. It needs maxValue > 0,
// first > 0, ratio > 1 and epsilon > 0.
func NewExponentialHistogramOptions(maxValue, first, ratio, epsilon float64) (*HistogramOptions, error) {
	if !(maxValue > 0) || !(first > 0) || !(ratio > 1) || !(epsilon > 0) ||
		math.IsInf(maxValue, 0) || math.IsInf(first, 0) || math.IsInf(ratio, 0) || math.IsInf(epsilon, 0) {
		return nil, errors.New("histogram options: maxValue, first bucket and epsilon must be finite and > 0, ratio finite and > 1")
	}
	n := int(math.Ceil(math.Log(maxValue*(ratio-1)/first+1)/math.Log(ratio))) + 1
	if n < 1 || n > 1<<16 {
		return nil, fmt.Errorf("histogram options: %d buckets is out of range", n)
	}
	o := &HistogramOptions{
		numBuckets: n,
		first:      first,
		ratio:      ratio,
		epsilon:    epsilon,
		logRatio:   math.Log(ratio),
		starts:     make([]float64, n),
	}
	for b := 1; b < n; b++ {
		o.starts[b] = first * (math.Pow(ratio, float64(b)) - 1) / (ratio - 1)
	}
	o.index = newBucketIndex(o)
	return o, nil
}

// DefaultCPUHistogramOptions returns the CPU scheme: 0.01 core first bucket,
// ratio 1.05, up to 1000 cores, 176 buckets. Every call returns the same
// (immutable) options.
func DefaultCPUHistogramOptions() *HistogramOptions { return defaultCPUOptions() }

// DefaultMemoryHistogramOptions returns the memory scheme: 1e7 bytes first
// bucket, ratio 1.05, up to 1e12 bytes, 176 buckets. Every call returns the
// same (immutable) options.
func DefaultMemoryHistogramOptions() *HistogramOptions { return defaultMemoryOptions() }

var (
	defaultCPUOptions = sync.OnceValue(func() *HistogramOptions {
		return constOptions(CPUHistogramMaxValue, CPUHistogramFirstBucket, HistogramBucketRatio, Epsilon)
	})
	defaultMemoryOptions = sync.OnceValue(func() *HistogramOptions {
		return constOptions(MemoryHistogramMaxValue, MemoryHistogramFirstBucket, HistogramBucketRatio, Epsilon)
	})
)

// mustOptions builds options from constant arguments known to be valid.
func constOptions(maxValue, first, ratio, epsilon float64) *HistogramOptions {
	o, err := NewExponentialHistogramOptions(maxValue, first, ratio, epsilon)
	if err != nil {
		panic(err) // constant arguments
	}
	return o
}

// NumBuckets returns the number of buckets.
func (o *HistogramOptions) NumBuckets() int { return o.numBuckets }

// Epsilon returns the weight below which a bucket counts as empty.
func (o *HistogramOptions) Epsilon() float64 { return o.epsilon }

// FindBucket returns the bucket of value: 0 below the first bucket size, else
// min(floor(log_ratio(value·(ratio−1)/first + 1)), NumBuckets−1). NaN falls in
// bucket 0 and +Inf in the last bucket.
//
// The answer is always the formula's, bit for bit; a precomputed index (see
// bucketIndex) gives it without computing the logarithm for almost all values.
func (o *HistogramOptions) FindBucket(value float64) int {
	if b, ok := o.index.find(value); ok {
		return b
	}
	return o.findBucketOutsideIndex(value)
}

// findBucketOutsideIndex is FindBucket for a value the index does not
// answer for.
func (o *HistogramOptions) findBucketOutsideIndex(value float64) int {
	if !(value >= o.first) {
		return 0
	}
	return o.findBucketByLog(value)
}

// findBucketByLog is FindBucket computed by the formula, for value ≥ first.
func (o *HistogramOptions) findBucketByLog(value float64) int {
	f := math.Log(value*(o.ratio-1)/o.first+1) / o.logRatio
	if f >= float64(o.numBuckets-1) {
		return o.numBuckets - 1
	}
	return int(f)
}

// BucketStart returns the lower edge of bucket b: 0 for b = 0, else
// first·(ratio^b − 1)/(ratio − 1). Indexes outside the range are clamped.
func (o *HistogramOptions) BucketStart(b int) float64 {
	if b <= 0 {
		return 0
	}
	if b >= o.numBuckets {
		b = o.numBuckets - 1
	}
	return o.starts[b]
}

// Equal reports whether two schemes bucket values identically.
func (o *HistogramOptions) Equal(other *HistogramOptions) bool {
	if o == other {
		return true
	}
	if o == nil || other == nil {
		return false
	}
	return o.numBuckets == other.numBuckets && o.first == other.first && o.ratio == other.ratio && o.epsilon == other.epsilon
}
