package recommendation

import (
	"fmt"
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

// units returns q in the unit a resource is scaled in: millicores for cpu,
// whole units (bytes) for everything else.
func units(name corev1.ResourceName, q resource.Quantity) int64 {
	if name == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

func fromUnits(name corev1.ResourceName, v int64, format resource.Format) resource.Quantity {
	if name == corev1.ResourceCPU {
		return *resource.NewMilliQuantity(v, format)
	}
	return *resource.NewQuantity(v, format)
}

// scale returns q*to/from in the resource's units, with big-integer
// arithmetic. ok is false when the result does not fit an int64; the result is
// then MaxInt64 units. A zero from returns to unchanged (there is no ratio to
// keep).
func scale(name corev1.ResourceName, q, from, to resource.Quantity, r rounding) (resource.Quantity, bool) {
	f := units(name, from)
	if f == 0 {
		return to.DeepCopy(), true
	}
	a, b := units(name, q), units(name, to)
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
	var num big.Int
	num.Mul(big.NewInt(units(name, q)), big.NewInt(units(name, to)))
	den := big.NewInt(f)
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

// ProportionalLimit returns the limit that keeps the original limit:request
// ratio for a new request, and a note when the ratio could not be kept. A
// missing or zero original limit is replaced by defaultLimit (the LimitRange
// default); with neither, ok is false and no limit should be set. A missing
// request, or a request equal to the limit, gives limit = newRequest.
func ProportionalLimit(name corev1.ResourceName, originalLimit, originalRequest, newRequest, defaultLimit *resource.Quantity) (limit resource.Quantity, ok bool, note string) {
	if originalLimit == nil || originalLimit.IsZero() {
		originalLimit = defaultLimit
	}
	if originalLimit == nil || originalLimit.IsZero() || newRequest == nil || newRequest.IsZero() {
		return resource.Quantity{}, false, ""
	}
	if originalRequest == nil || originalRequest.IsZero() || units(name, *originalRequest) == units(name, *originalLimit) {
		return newRequest.DeepCopy(), true, ""
	}
	l, fits := scale(name, *originalLimit, *originalRequest, *newRequest, roundDown)
	if !fits {
		return l, true, fmt.Sprintf("%s: failed to keep limit to request ratio; capping limit to int64", name)
	}
	return l, true, ""
}

// ProportionalLimits applies ProportionalLimit to every resource of newRequests
// and returns the limits to set (nil when none) and the notes.
func ProportionalLimits(originalLimits, originalRequests, newRequests, defaultLimits corev1.ResourceList) (corev1.ResourceList, []string) {
	var out corev1.ResourceList
	var notes []string
	var buf [4]corev1.ResourceName
	for _, name := range sortedNames(newRequests, buf[:0]) {
		req := newRequests[name]
		l, ok, note := ProportionalLimit(name, get(originalLimits, name), get(originalRequests, name), &req, get(defaultLimits, name))
		if note != "" {
			notes = append(notes, note)
		}
		if !ok {
			continue
		}
		if out == nil {
			out = corev1.ResourceList{}
		}
		out[name] = l
	}
	return out, notes
}

// boundaryRequest converts a LimitRange bound on the limit into a bound on the
// request, using the container's limit:request ratio. It returns nil when no
// bound applies.
func boundaryRequest(name corev1.ResourceName, c *corev1.Container, bound, defaultLimit *resource.Quantity) *resource.Quantity {
	if bound == nil || bound.IsZero() {
		return nil
	}
	limit := get(c.Resources.Limits, name)
	if limit == nil || limit.IsZero() {
		limit = defaultLimit
	}
	if limit == nil || limit.IsZero() {
		return nil
	}
	request := get(c.Resources.Requests, name)
	if request == nil || request.IsZero() {
		b := bound.DeepCopy()
		return &b
	}
	r, _ := scale(name, *request, *limit, *bound, roundDown)
	return &r
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
