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

// ResourceAmount is an amount of a resource: millicores for CPU, bytes for
// memory. Valid amounts lie in [0, MaxResourceAmount].
type ResourceAmount int64

// MaxResourceAmount is the largest amount; conversions clamp to it.
const MaxResourceAmount = ResourceAmount(1e14)

// CPUAmountFromCores converts cores to millicores, truncating toward zero and
// clamping to [0, MaxResourceAmount].
func CPUAmountFromCores(cores float64) ResourceAmount {
	return AmountFromFloat(cores * 1000.0)
}

// CoresFromCPUAmount converts millicores to cores.
func CoresFromCPUAmount(m ResourceAmount) float64 {
	return float64(m) / 1000.0
}

// MemoryAmountFromBytes converts bytes to an amount, truncating toward zero
// and clamping to [0, MaxResourceAmount].
func MemoryAmountFromBytes(bytes float64) ResourceAmount {
	return AmountFromFloat(bytes)
}

// BytesFromMemoryAmount converts an amount of memory to bytes.
func BytesFromMemoryAmount(b ResourceAmount) float64 {
	return float64(b)
}

// ScaleResource returns amount·factor, truncated toward zero and clamped to
// [0, MaxResourceAmount].
func ScaleResource(amount ResourceAmount, factor float64) ResourceAmount {
	return AmountFromFloat(float64(amount) * factor)
}

// AmountFromFloat truncates x toward zero and clamps it to
// [0, MaxResourceAmount]. NaN becomes 0.
func AmountFromFloat(x float64) ResourceAmount {
	switch {
	case x > float64(MaxResourceAmount):
		return MaxResourceAmount
	case !(x > 0) || math.IsNaN(x):
		return 0
	}
	return ResourceAmount(x)
}
