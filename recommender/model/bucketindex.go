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

// bucketIndex finds buckets without a logarithm. Positive float64 values
// order like their bit patterns, so the exponent and the top mantissa bits of
// a value name a cell: a range of values no wider than 2^-mantissaBits of its
// start. Cells are narrow enough that at most one bucket edge lies near each,
// so a cell answers with its bucket, or the next one above its edge.
//
// The edges are not the exact bucket starts but the points at which the
// logarithm formula itself (findBucketByLog) changes its answer, found by
// bisection when the options are built. Values within a relative guardBand of
// an edge are still answered by the formula, so the index returns exactly
// what the formula returns even where floating-point rounding makes the
// formula disagree with the exact bucket starts.
//
// The index answers nothing (and FindBucket uses the formula) for values
// outside its cells: below the first bucket, in the last bucket, NaN, and
// negative values, whose bit patterns all fall outside the cell range.
type bucketIndex struct {
	shift uint
	base  uint64
	cells []bucketCell
}

// bucketCell answers for the values whose bits share one key: those below lo
// are in bucket b, those at or above hi in bucket b+1, those in between are
// left to the formula. lo = hi = +Inf when no edge is near the cell.
type bucketCell struct {
	lo, hi float64
	b      int32
}

const (
	// guardBand is the relative distance from an edge below which the formula
	// decides. It is many orders of magnitude wider than the rounding error of
	// math.Log, and far narrower than the gap between two bucket edges.
	guardBand = 1e-9
	// maxMantissaBits bounds the table size; options whose buckets are closer
	// than that resolution allows fall back to the formula.
	maxMantissaBits = 10
)

// newBucketIndex builds the index of o; it has no cells when o's buckets are
// too narrow for a table of reasonable size.
func newBucketIndex(o *HistogramOptions) *bucketIndex {
	if o.numBuckets < 2 {
		return &bucketIndex{}
	}
	edges := make([]float64, o.numBuckets)
	for b := 1; b < o.numBuckets; b++ {
		edges[b] = o.findEdge(b)
	}
	for bits := uint(4); bits <= maxMantissaBits; bits++ {
		if idx := buildBucketIndex(o, edges, bits); idx != nil {
			return idx
		}
	}
	return &bucketIndex{}
}

// findEdge returns the smallest value ≥ first that the formula puts in bucket
// b or above, by bisection over the bit patterns of positive floats.
func (o *HistogramOptions) findEdge(b int) float64 {
	lo, hi := math.Float64bits(o.first), math.Float64bits(math.MaxFloat64)
	if o.findBucketByLog(o.first) >= b {
		return o.first
	}
	// Invariant: formula(lo) < b ≤ formula(hi).
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if o.findBucketByLog(math.Float64frombits(mid)) >= b {
			hi = mid
		} else {
			lo = mid
		}
	}
	return math.Float64frombits(hi)
}

// buildBucketIndex lays cells of the given mantissa resolution over the
// edges, or returns nil when the guard bands of two edges meet one cell.
func buildBucketIndex(o *HistogramOptions, edges []float64, mantissaBits uint) *bucketIndex {
	shift := 52 - mantissaBits
	last := o.numBuckets - 1
	top := edges[last] * (1 + guardBand)
	idx := &bucketIndex{
		shift: shift,
		base:  math.Float64bits(o.first) >> shift,
	}
	n := math.Float64bits(top)>>shift - idx.base + 1
	idx.cells = make([]bucketCell, n)
	for k := range idx.cells {
		start := math.Float64frombits((idx.base + uint64(k)) << shift)
		end := math.Float64frombits((idx.base + uint64(k) + 1) << shift)
		c := bucketCell{lo: math.Inf(1), hi: math.Inf(1), b: int32(o.findBucketByLog(max(start, o.first)))}
		near := 0
		for b := 1; b <= last; b++ {
			lo, hi := edges[b]*(1-guardBand), edges[b]*(1+guardBand)
			if hi <= start || lo >= end {
				continue
			}
			near++
			c = bucketCell{lo: lo, hi: hi, b: int32(b - 1)}
		}
		if near > 1 {
			return nil
		}
		idx.cells[k] = c
	}
	return idx
}

// find returns the bucket of value, or false when the formula must decide:
// value is outside the cells or so close to an edge.
func (idx *bucketIndex) find(value float64) (int, bool) {
	k := math.Float64bits(value)>>idx.shift - idx.base
	if k >= uint64(len(idx.cells)) {
		return 0, false
	}
	c := &idx.cells[k]
	if value < c.lo {
		return int(c.b), true
	}
	if value >= c.hi {
		return int(c.b) + 1, true
	}
	return 0, false
}
