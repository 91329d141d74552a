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
	"time"
)

// TestExp2MatchesMath checks exp2 against math.Exp2 bit for bit: over a dense
// grid of the decay exponents a day-long half-life produces (one per second
// over the 100 half-lives before a reference shift, and back as far), at and
// around every half-integer, and for random and special arguments.
func TestExp2MatchesMath(t *testing.T) {
	check := func(x float64) {
		t.Helper()
		got, want := exp2(x), math.Exp2(x)
		if math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Fatalf("exp2(%v) = %v, math.Exp2 = %v", x, got, want)
		}
	}
	halfLife := float64(24 * time.Hour)
	for s := int64(-2 * MaxDecayExponent * 86400); s <= 2*MaxDecayExponent*86400; s += 7 {
		check(float64(s*int64(time.Second)) / halfLife)
	}
	for k := -1100; k <= 1100; k++ {
		h := float64(k) / 2
		for _, x := range []float64{h, math.Nextafter(h, math.Inf(1)), math.Nextafter(h, math.Inf(-1))} {
			check(x)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 2_000_000 {
		check((rng.Float64()*2 - 1) * 1100)
		check((rng.Float64()*2 - 1) * 2)
	}
	for _, x := range []float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1), 1e-300, -1e-300, 1023.9, -1074.5, 1e300, -1e300} {
		check(x)
	}
}

func BenchmarkExp2(b *testing.B) {
	var sink float64
	for i := 0; i < b.N; i++ {
		sink += exp2(float64(i&65535) * 1.1e-3)
	}
	_ = sink
}
