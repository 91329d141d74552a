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
