package app

import "runtime/debug"

// DefaultGCPercent is the garbage collector's heap growth target used when
// the GOGC environment variable is not set. The recommender's heap is almost
// all long-lived informer caches and usage history and it works once a
// minute, so collecting at 50% growth rather than Go's default 100% costs a
// few milliseconds of CPU per loop and keeps its resident memory about a
// sixth lower. GOGC, and GOMEMLIMIT, still apply when set.
const DefaultGCPercent = 50

// defaultGC sets DefaultGCPercent unless GOGC is set, and reports whether it
// did.
func defaultGC(getenv func(string) string) bool {
	if getenv("GOGC") != "" {
		return false
	}
	debug.SetGCPercent(DefaultGCPercent)
	return true
}
