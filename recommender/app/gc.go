package app

import "runtime/debug"

// DefaultGCPercent is the garbage collector's heap growth target used when
// the GOGC environment variable is not set. The recommender's heap is almost
// all long-lived caches and usage history (8 MB at 500 VPAs) and it works
// once a minute, so collecting at 25% growth rather than Go's default 100%
// keeps its heap within a few megabytes of what is live. Measured with
// scale-test at 500 VPAs against 50%: peak RSS 41.5 against 44.5 MB, for
// 0.4 s more CPU over the first two minutes (docs/benchmarks.md). GOGC, and
// GOMEMLIMIT, still apply when set.
const DefaultGCPercent = 25

// defaultGC sets DefaultGCPercent unless GOGC is set, and reports whether it
// did.
func defaultGC(getenv func(string) string) bool {
	if getenv("GOGC") != "" {
		return false
	}
	debug.SetGCPercent(DefaultGCPercent)
	return true
}
