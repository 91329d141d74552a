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
