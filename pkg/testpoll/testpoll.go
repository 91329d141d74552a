// Package testpoll waits in tests for what another goroutine does, by
// polling a condition with a deadline, never by sleeping a guessed time.
package testpoll

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Interval is how often Until checks its condition.
const Interval = 2 * time.Millisecond

// Until returns once cond holds, checking it at once and then every
// Interval, and fails the test after timeout.
func Until(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), Interval, timeout, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("timed out after %v waiting for %s", timeout, what)
	}
}
