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
	"math/bits"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

type rounding int

const (
	roundDown rounding = iota
	roundUp
)

// exactBelow bounds the magnitude (in whole units) under which a quantity's
// MilliValue and Value are exact: past it they overflow int64, and a limit of
// 1e100000 would read as some arbitrary number, 0 included.
const exactBelow = 1e15

// fitsMilli reports whether q.MilliValue() is exact.
func fitsMilli(q resource.Quantity) bool {
	return math.Abs(q.AsApproximateFloat64()) < exactBelow
}

// units returns q in the unit a resource is scaled in: millicores for cpu,
// whole units (bytes) for everything else, rounded up as Quantity's
// ScaledValue rounds. ok is false when that does not fit an int64; use
// bigUnits then.
func units(name corev1.ResourceName, q resource.Quantity) (v int64, ok bool) {
	if !fitsMilli(q) {
		return 0, false
	}
	if name == corev1.ResourceCPU {
		return q.MilliValue(), true
	}
	return q.Value(), true
}

// maxExponent bounds the power of ten bigUnits computes: a quantity can be
// written with an exponent in the millions, and nothing that large is a
// resource amount; past it the value is taken as ±10^maxExponent units.
const maxExponent = 1000

// bigUnits is units for quantities of any size.
func bigUnits(name corev1.ResourceName, q resource.Quantity) *big.Int {
	d := q.AsDec()
	v := new(big.Int).Set(d.UnscaledBig())
	exp := -int64(d.Scale())
	if name == corev1.ResourceCPU {
		exp += 3
	}
	if v.Sign() == 0 {
		return v
	}
	switch {
	case exp > maxExponent:
		return v.Mul(big.NewInt(int64(v.Sign())), pow10(maxExponent))
	case exp >= 0:
		return v.Mul(v, pow10(exp))
	case exp < -maxExponent:
		// Less than one unit: rounds up to one, or to zero if negative.
		if v.Sign() > 0 {
			return v.SetInt64(1)
		}
		return v.SetInt64(0)
	}
	// Round up (towards positive infinity), as ScaledValue does.
	den := pow10(-exp)
	var m big.Int
	v.DivMod(v, den, &m) // Euclidean: the remainder is never negative
	if m.Sign() != 0 {
		v.Add(v, big.NewInt(1))
	}
	return v
}

func pow10(n int64) *big.Int {
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(n), nil)
}

// compareUnits compares a and b in the resource's units (MilliValue for
// every resource, as the capping code compares them), exactly for
// quantities of any size.
func compareUnits(a, b resource.Quantity) int {
	if fitsMilli(a) && fitsMilli(b) {
		x, y := a.MilliValue(), b.MilliValue()
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	}
	return bigUnits(corev1.ResourceCPU, a).Cmp(bigUnits(corev1.ResourceCPU, b))
}

func fromUnits(name corev1.ResourceName, v int64, format resource.Format) resource.Quantity {
	if name == corev1.ResourceCPU {
		return *resource.NewMilliQuantity(v, format)
	}
	return *resource.NewQuantity(v, format)
}

// scale returns q*to/from in the resource's units, with big-integer
// arithmetic. ok is false when the result does not fit an int64; the result is
// then MaxInt64 units. A zero from returns to
// unchanged (there is no ratio to keep). Quantities past int64 in the
// resource's units (a limit of 1e100000) are scaled exactly too.
func scale(name corev1.ResourceName, q, from, to resource.Quantity, r rounding) (resource.Quantity, bool) {
	f, fok := units(name, from)
	a, aok := units(name, q)
	b, bok := units(name, to)
	if !fok || !aok || !bok {
		return scaleBig(name, q, from, to, r)
	}
	if f == 0 {
		return to.DeepCopy(), true
	}
	if hi, lo := bits.Mul64(abs(a), abs(b)); hi == 0 && lo <= math.MaxInt64 && f != -1 {
		// The product fits an int64: the same truncated division as
		// big.Int.QuoRem below, without allocating.
		num := a * b
		quo, rem := num/f, num%f
		if r == roundUp && rem != 0 && (rem > 0) == (f > 0) {
			quo++
		}
		return fromUnits(name, quo, q.Format), true
	}
	return scaleBig(name, q, from, to, r)
}

func scaleBig(name corev1.ResourceName, q, from, to resource.Quantity, r rounding) (resource.Quantity, bool) {
	den := bigUnits(name, from)
	if den.Sign() == 0 {
		return to.DeepCopy(), true
	}
	var num big.Int
	num.Mul(bigUnits(name, q), bigUnits(name, to))
	var quo, rem big.Int
	quo.QuoRem(&num, den, &rem)
	if r == roundUp && rem.Sign() != 0 && (rem.Sign() > 0) == (den.Sign() > 0) {
		quo.Add(&quo, big.NewInt(1))
	}
	if !quo.IsInt64() {
		return fromUnits(name, math.MaxInt64, q.Format), false
	}
	return fromUnits(name, quo.Int64(), q.Format), true
}

// sameUnits reports whether a and b are equal in the resource's units.
func sameUnits(name corev1.ResourceName, a, b resource.Quantity) bool {
	x, xok := units(name, a)
	y, yok := units(name, b)
	if xok && yok {
		return x == y
	}
	return bigUnits(name, a).Cmp(bigUnits(name, b)) == 0
}

func get(l corev1.ResourceList, name corev1.ResourceName) *resource.Quantity {
	if q, ok := l[name]; ok {
		return &q
	}
	return nil
}

func abs(v int64) uint64 {
	if v < 0 {
		return uint64(-v)
	}
	return uint64(v)
}

// sortedNames appends the names of l to buf and sorts them; with a buffer on
// the caller's stack, it does not allocate for small lists.
func sortedNames(l corev1.ResourceList, buf []corev1.ResourceName) []corev1.ResourceName {
	for name := range l {
		buf = append(buf, name)
	}
	slices.Sort(buf)
	return buf
}
