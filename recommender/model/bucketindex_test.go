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
	"math"
	"math/rand/v2"
	"testing"
)

// TestBucketIndexAgreesWithFormula checks that the index answers exactly as
// the logarithm formula around every bucket edge, at cell boundaries and for
// random values over the whole float range.
func TestBucketIndexAgreesWithFormula(t *testing.T) {
	custom, err := NewExponentialHistogramOptions(50, 0.5, 1.2, Epsilon)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opts *HistogramOptions
	}{
		{"cpu", DefaultCPUHistogramOptions()},
		{"memory", DefaultMemoryHistogramOptions()},
		{"custom", custom},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.opts
			if o.index == nil {
				t.Fatal("no bucket index was built")
			}
			check := func(v float64) {
				t.Helper()
				want := 0
				if v >= o.first {
					want = o.findBucketByLog(v)
				}
				if got := o.FindBucket(v); got != want {
					t.Fatalf("FindBucket(%v [%#x]) = %d, formula says %d", v, math.Float64bits(v), got, want)
				}
			}
			// Every float within 2000 ulps of each bucket start and each
			// edge of the formula.
			for b := 0; b < o.numBuckets; b++ {
				for _, c := range []float64{o.starts[b], o.findEdge(max(b, 1))} {
					bits := math.Float64bits(c)
					for d := uint64(0); d <= 2000 && d <= bits; d++ {
						check(math.Float64frombits(bits - d))
						check(math.Float64frombits(bits + d))
					}
				}
			}
			// Both sides of every cell boundary.
			for k := range o.index.cells {
				bits := (o.index.base + uint64(k)) << o.index.shift
				check(math.Float64frombits(bits))
				check(math.Float64frombits(bits - 1))
			}
			// Random values: uniform over the bucket range, uniform over
			// exponents, and the special values.
			rng := rand.New(rand.NewPCG(1, 2))
			top := o.starts[o.numBuckets-1] * 2
			for range 200000 {
				check(rng.Float64() * top)
				check(math.Ldexp(1+rng.Float64(), rng.IntN(2100)-1075))
			}
			for _, v := range []float64{0, -1, math.NaN(), math.Inf(1), math.Inf(-1), math.MaxFloat64, math.SmallestNonzeroFloat64, o.first, o.findEdge(o.numBuckets - 1)} {
				check(v)
			}
		})
	}
}
