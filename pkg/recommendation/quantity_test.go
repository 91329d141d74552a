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

package recommendation

import (
	"math"
	"math/big"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// bigScale is q*to/from with big integers, as scale computes it when the
// product does not fit an int64.
func bigScale(q, to, from int64, r rounding) (int64, bool) {
	var num big.Int
	num.Mul(big.NewInt(q), big.NewInt(to))
	den := big.NewInt(from)
	var quo, rem big.Int
	quo.QuoRem(&num, den, &rem)
	if r == roundUp && rem.Sign() != 0 && (rem.Sign() > 0) == (den.Sign() > 0) {
		quo.Add(&quo, big.NewInt(1))
	}
	if !quo.IsInt64() {
		return math.MaxInt64, false
	}
	return quo.Int64(), true
}

func TestScaleMatchesBigIntegers(t *testing.T) {
	values := []int64{-7, -3, -1, 1, 2, 3, 7, 10, 999, 1000, 1 << 31, 1<<31 + 3, 1 << 40, math.MaxInt64 / 3, math.MaxInt64, math.MinInt64 + 1}
	for _, q := range values {
		for _, to := range values {
			for _, from := range values {
				for _, r := range []rounding{roundDown, roundUp} {
					want, wantOK := bigScale(q, to, from, r)
					got, ok := scale(corev1.ResourceMemory, *resource.NewQuantity(q, resource.BinarySI),
						*resource.NewQuantity(from, resource.BinarySI), *resource.NewQuantity(to, resource.BinarySI), r)
					if ok != wantOK || got.Value() != want {
						t.Errorf("scale(%d, from %d, to %d, %v) = %d %v, want %d %v", q, from, to, r, got.Value(), ok, want, wantOK)
					}
				}
			}
		}
	}
}

// TestProportionalLimitHugeQuantities: quantities past int64 in the
// resource's units keep their ratio, or are capped to int64 with a note;
// never read as an arbitrary number such as 0.
func TestProportionalLimitHugeQuantities(t *testing.T) {
	const maxMilli = "9223372036854775807m"
	tests := map[string]struct {
		name                             corev1.ResourceName
		limit, request, newRequest, want string
		wantNote                         bool
	}{
		"cpu limit 1e100000":           {name: corev1.ResourceCPU, limit: "1e100000", request: "1", newRequest: "2", want: maxMilli, wantNote: true},
		"memory limit 1e100000":        {name: corev1.ResourceMemory, limit: "1e100000", request: "1Gi", newRequest: "2Gi", want: "9223372036854775807", wantNote: true},
		"limit equal to request":       {name: corev1.ResourceCPU, limit: "1e100000", request: "1e100000", newRequest: "3", want: "3"},
		"ratio of two huge quantities": {name: corev1.ResourceMemory, limit: "2e500", request: "1e500", newRequest: "1Gi", want: "2Gi"},
		// Past 10^maxExponent units, amounts are taken as 10^maxExponent.
		"past the largest exponent": {name: corev1.ResourceMemory, limit: "2e100000", request: "1e100000", newRequest: "1Gi", want: "1Gi"},
		"ratio past int64":          {name: corev1.ResourceCPU, limit: "1e30", request: "1e29", newRequest: "250m", want: "2500m"},
		"exponent in the millions":  {name: corev1.ResourceCPU, limit: "1e9000000", request: "1", newRequest: "1", want: maxMilli, wantNote: true},
		"tiny request":              {name: corev1.ResourceMemory, limit: "1e20", request: "1e-100000", newRequest: "1", want: "9223372036854775807", wantNote: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			limit, request, newRequest := resource.MustParse(tc.limit), resource.MustParse(tc.request), resource.MustParse(tc.newRequest)
			got, ok, note := ProportionalLimit(tc.name, &limit, &request, &newRequest, nil)
			if !ok {
				t.Fatal("no limit")
			}
			if want := resource.MustParse(tc.want); got.Cmp(want) != 0 || got.IsZero() {
				t.Errorf("limit %s, want %s", got.String(), tc.want)
			}
			if (note != "") != tc.wantNote {
				t.Errorf("note %q, want one: %v", note, tc.wantNote)
			}
		})
	}
}

// TestCompareUnitsHuge: the RequestsOnly cap compares a recommendation with
// the container's limit, whatever their size.
func TestCompareUnitsHuge(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"1", "1e100000", -1}, {"1e100000", "1", 1}, {"1e100000", "1e100000", 0}, {"-1e100000", "1", -1},
		{"100m", "200m", -1}, {"1Gi", "1073741824", 0}, {"1e9000000", "1e100000", 0},
	}
	for _, tc := range tests {
		if got := compareUnits(resource.MustParse(tc.a), resource.MustParse(tc.b)); got != tc.want {
			t.Errorf("compareUnits(%s, %s) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
