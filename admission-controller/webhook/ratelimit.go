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

package webhook

import (
	"sync"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// DecodeLogInterval is the least time between two log lines about
// undecodable requests: anyone who can reach the port can send them, and one
// line each would let them fill the logs.
const DecodeLogInterval = 10 * time.Second

// sampledLog writes at most one line per interval; the lines it drops are
// counted in the next one it writes.
type sampledLog struct {
	clock    clock.PassiveClock
	interval time.Duration

	mu         sync.Mutex
	last       time.Time
	logged     bool
	suppressed int
}

func newSampledLog(c clock.PassiveClock, interval time.Duration) *sampledLog {
	return &sampledLog{clock: c, interval: interval}
}

// Error logs err with msg and keysAndValues, unless a line was written less
// than the interval ago; it reports whether it wrote one.
func (l *sampledLog) Error(logger klog.Logger, err error, msg string, keysAndValues ...any) bool {
	l.mu.Lock()
	now := l.clock.Now()
	if l.logged && now.Sub(l.last) < l.interval {
		l.suppressed++
		l.mu.Unlock()
		return false
	}
	suppressed := l.suppressed
	l.logged, l.last, l.suppressed = true, now, 0
	l.mu.Unlock()
	if suppressed > 0 {
		keysAndValues = append(keysAndValues, "suppressedSinceLast", suppressed)
	}
	logger.Error(err, msg, keysAndValues...)
	return true
}
