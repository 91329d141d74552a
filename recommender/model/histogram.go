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

import "math"

// Histogram is a weighted histogram over an exponential bucketing scheme that
// stores only the window of buckets from its lowest to its highest non-zero
// bucket. A bucket whose weight is below the options' epsilon counts as empty:
// minBucket and maxBucket track the first and last non-empty buckets (or
// NumBuckets−1 and 0 when there are none), exactly as in upstream's dense
// histogram, and every loop visits the same buckets in the same order, so the
// results are identical to upstream's.
//
// The zero value is not usable; build one with NewHistogram.
type Histogram struct {
	opts *HistogramOptions
	// w[i] is the weight of bucket lo+i; buckets outside the window weigh 0.
	w   []float64
	lo  int32
	min int32
	max int32
	// total is the total weight, tracked separately as upstream does.
	total float64
}

// NewHistogram returns an empty histogram over the given scheme.
func NewHistogram(opts *HistogramOptions) Histogram {
	return Histogram{opts: opts, min: int32(opts.numBuckets - 1)}
}

// Options returns the bucketing scheme.
func (h *Histogram) Options() *HistogramOptions { return h.opts }

// TotalWeight returns the total weight of the samples.
func (h *Histogram) TotalWeight() float64 { return h.total }

// weight returns the weight of bucket b, 0 outside the window.
func (h *Histogram) weight(b int) float64 {
	i := b - int(h.lo)
	if i < 0 || i >= len(h.w) {
		return 0
	}
	return h.w[i]
}

// slot returns a pointer to the weight of bucket b, growing the window to
// cover it. The window is reallocated to its exact size so that a long-lived
// histogram holds no spare capacity.
func (h *Histogram) slot(b int) *float64 {
	if len(h.w) == 0 {
		h.w = make([]float64, 1)
		h.lo = int32(b)
		return &h.w[0]
	}
	lo, hi := int(h.lo), int(h.lo)+len(h.w)-1
	switch {
	case b < lo:
		w := make([]float64, hi-b+1)
		copy(w[lo-b:], h.w)
		h.w, h.lo = w, int32(b)
	case b > hi:
		w := make([]float64, b-lo+1)
		copy(w, h.w)
		h.w = w
	}
	return &h.w[b-int(h.lo)]
}

// trim drops zero-weight buckets at both ends of the window.
func (h *Histogram) trim() {
	i, j := 0, len(h.w)
	for i < j && h.w[i] == 0 {
		i++
	}
	for j > i && h.w[j-1] == 0 {
		j--
	}
	switch {
	case i == j:
		h.w, h.lo = nil, 0
	case i > 0 || j < len(h.w):
		w := make([]float64, j-i)
		copy(w, h.w[i:j])
		h.w, h.lo = w, h.lo+int32(i)
	}
}

// span returns the buckets of [min, max] that lie inside the window, as
// window indexes [from, to); from ≥ to when there are none.
func (h *Histogram) span() (from, to int) {
	from = int(h.min) - int(h.lo)
	to = int(h.max) - int(h.lo) + 1
	if from < 0 {
		from = 0
	}
	if to > len(h.w) {
		to = len(h.w)
	}
	return from, to
}

// AddSample adds weight to the bucket of value. A negative, NaN or infinite
// weight is ignored.
func (h *Histogram) AddSample(value, weight float64) {
	if !(weight >= 0) || math.IsInf(weight, 1) {
		return
	}
	h.add(h.opts.FindBucket(value), weight)
}

// add adds weight ≥ 0 to bucket b. The common case, a bucket inside the
// window and inside [min, max], is small enough to be inlined.
func (h *Histogram) add(b int, weight float64) {
	i := b - int(h.lo)
	if uint(i) >= uint(len(h.w)) || b < int(h.min) || b > int(h.max) {
		h.addOutside(b, weight)
		return
	}
	h.w[i] += weight
	h.total += weight
}

// addOutside is add for a bucket outside the window or outside [min, max]:
// the window grows to cover it, and min and max move to it once it holds at
// least epsilon.
func (h *Histogram) addOutside(b int, weight float64) {
	p := h.slot(b)
	*p += weight
	h.total += weight
	if *p >= h.opts.epsilon {
		h.min = int32(min(b, int(h.min)))
		h.max = int32(max(b, int(h.max)))
	}
}

// SubtractSample takes weight from the bucket of value and from the total,
// as upstream does: each of them becomes 0 when less than epsilon would
// remain. The total drops by weight even when the bucket held less (it then
// stays above the sum of the buckets). A negative, NaN or infinite weight is
// ignored.
func (h *Histogram) SubtractSample(value, weight float64) {
	if !(weight >= 0) || math.IsInf(weight, 1) {
		return
	}
	eps := h.opts.epsilon
	if h.total -= weight; h.total < eps {
		h.total = 0
	}
	b := h.opts.FindBucket(value)
	if cur := h.weight(b); cur != 0 {
		rest := cur - weight
		if rest < eps {
			rest = 0
		}
		*h.slot(b) = rest
	}
	h.updateMinMax()
	h.trim()
}

// updateMinMax moves minBucket up and maxBucket down past empty buckets.
func (h *Histogram) updateMinMax() {
	eps := h.opts.epsilon
	last := int32(h.opts.numBuckets - 1)
	for h.min < last && h.weight(int(h.min)) < eps {
		h.min++
	}
	for h.max > 0 && h.weight(int(h.max)) < eps {
		h.max--
	}
}

// IsEmpty reports whether the histogram has no bucket of at least epsilon.
func (h *Histogram) IsEmpty() bool {
	return h.weight(int(h.min)) < h.opts.epsilon
}

// Percentile returns the upper edge of the bucket in which the cumulative
// weight first reaches p·TotalWeight, scanning from the first to the last
// non-empty bucket; for the last bucket of the scheme it returns its start.
// An empty histogram returns 0.
func (h *Histogram) Percentile(p float64) float64 {
	if h.IsEmpty() {
		return 0
	}
	threshold := p * h.total
	b := int(h.max)
	// min is inside the window because the histogram is not empty. Buckets
	// past the window add nothing, so the scan can stop at its end.
	from := int(h.min) - int(h.lo)
	to := int(h.max) - int(h.lo)
	if to > len(h.w) {
		to = len(h.w)
	}
	sum := 0.0
	for i := from; i < to; i++ {
		sum += h.w[i]
		if sum >= threshold {
			b = i + int(h.lo)
			break
		}
	}
	if b < h.opts.numBuckets-1 {
		return h.opts.starts[b+1]
	}
	return h.opts.starts[b]
}

// Buckets calls f, from the lowest bucket to the highest, with the index,
// lower edge and weight of every bucket from minBucket to maxBucket that
// holds a non-zero weight.
func (h *Histogram) Buckets(f func(bucket int, start, weight float64)) {
	from, to := h.span()
	for i := from; i < to; i++ {
		if w := h.w[i]; w != 0 {
			b := i + int(h.lo)
			f(b, h.opts.starts[b], w)
		}
	}
}

// Merge adds the buckets from minBucket to maxBucket of other, and its total
// weight, to h. Both must use equal options.
func (h *Histogram) Merge(other *Histogram) error {
	if !h.opts.Equal(other.opts) {
		return errOptionsMismatch
	}
	from, to := other.span()
	for i := from; i < to; i++ {
		if v := other.w[i]; v != 0 {
			*h.slot(i + int(other.lo)) += v
		}
	}
	h.total += other.total
	if other.min < h.min {
		h.min = other.min
	}
	if other.max > h.max {
		h.max = other.max
	}
	return nil
}

// scale multiplies the buckets from minBucket to maxBucket, and the total
// weight, by factor ≥ 0.
func (h *Histogram) scale(factor float64) {
	from, to := h.span()
	for i := from; i < to; i++ {
		h.w[i] *= factor
	}
	h.total *= factor
	h.updateMinMax()
	h.trim()
}

// clone returns a deep copy.
func (h *Histogram) clone() Histogram {
	c := *h
	if h.w != nil {
		c.w = make([]float64, len(h.w))
		copy(c.w, h.w)
	}
	return c
}

// Equal reports whether two histograms hold the same state, bucket by bucket.
func (h *Histogram) Equal(other *Histogram) bool {
	if !h.opts.Equal(other.opts) || h.min != other.min || h.max != other.max || h.total != other.total {
		return false
	}
	lo, hi := min(int(h.lo), int(other.lo)), max(int(h.lo)+len(h.w), int(other.lo)+len(other.w))
	for b := lo; b < hi; b++ {
		if h.weight(b) != other.weight(b) {
			return false
		}
	}
	return true
}
