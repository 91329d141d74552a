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

// Constants of the exp2 reduction below: ln 2 split into a high part with
// trailing zero bits and the remainder, and the coefficients of the minimax
// polynomial in r² with which the classic BSD libm exponential, the basis of
// Go's math.Exp2, approximates e^r on [−ln2/2, ln2/2].
const (
	ln2High = 6.93147180369123816490e-01
	ln2Low  = 1.90821492927058770002e-10
	expP1   = 1.66666666666666657415e-01
	expP2   = -2.77777777770155933842e-03
	expP3   = 6.61375632143793436117e-05
	expP4   = -1.65339022054652515390e-06
	expP5   = 4.13813679705723846039e-08

	// exp2FastLimit bounds the exponents for which exp2 scales by building the
	// power of two directly: 2^n is a normal float64 and so is the result.
	exp2FastLimit = 1000
)

// exp2 returns 2^x, bit for bit equal to math.Exp2(x). Every CPU sample's
// decay weight is one such power, and the weights must equal upstream's,
// which uses math.Exp2; this version takes the same steps (round x to the
// nearest integer n, evaluate e^(r) for r = (x − n)·ln 2 with the rational
// approximation of the BSD libm, scale by 2^n) but skips the special-case
// tests and the general-purpose Ldexp that math.Exp2 needs for arguments far
// outside the range of decay exponents. Outside ±exp2FastLimit, and for NaN,
// it defers to math.Exp2.
func exp2(x float64) float64 {
	if !(x > -exp2FastLimit && x < exp2FastLimit) {
		return math.Exp2(x)
	}
	n := 0
	if x > 0 {
		n = int(x + 0.5)
	} else if x < 0 {
		n = int(x - 0.5)
	}
	t := x - float64(n)
	hi := t * ln2High
	lo := -t * ln2Low
	r := hi - lo
	r2 := r * r
	c := r - r2*(expP1+r2*(expP2+r2*(expP3+r2*(expP4+r2*expP5))))
	y := 1 - ((lo - (r*c)/(2-c)) - hi)
	// y is within [0.7, 1.5) and |n| < 1000, so y·2^n is exact and normal.
	return y * math.Float64frombits(uint64(n+1023)<<52)
}
