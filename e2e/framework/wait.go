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

package framework

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/utils/clock"
)

// PollInterval is how often WaitFor checks its condition.
const PollInterval = 200 * time.Millisecond

// WaitFor polls cond until it returns true, and fails the test if that has not happened within
// timeout. An error from cond does not end the wait (the API may be catching up); the last one is
// reported if the deadline passes. A condition that returns true together with an error is a
// mistake in the test (it would never end the wait), and fails at once.
func WaitFor(t testing.TB, timeout time.Duration, cond func() (bool, error)) {
	t.Helper()
	if err := poll(clock.RealClock{}, timeout, PollInterval, cond); err != nil {
		t.Fatal(err)
	}
}

// poll is WaitFor without the test, on clk, for reuse and unit tests.
func poll(clk clock.Clock, timeout, interval time.Duration, cond func() (bool, error)) error {
	deadline := clk.Now().Add(timeout)
	var lastErr error
	for {
		ok, err := cond()
		if ok {
			if err != nil {
				return fmt.Errorf("the condition returned true with an error, which never ends the wait: return false with the error (%w)", err)
			}
			return nil
		}
		if err != nil {
			lastErr = err
		}
		if !clk.Now().Add(interval).Before(deadline) {
			if lastErr != nil {
				return &TimeoutError{Timeout: timeout, LastErr: lastErr}
			}
			return &TimeoutError{Timeout: timeout}
		}
		clk.Sleep(interval)
	}
}

// TimeoutError says that a condition was not met in time.
type TimeoutError struct {
	Timeout time.Duration
	// LastErr is the last error the condition returned, if any.
	LastErr error
}

func (e *TimeoutError) Error() string {
	if e.LastErr != nil {
		return "condition not met within " + e.Timeout.String() + "; last error: " + e.LastErr.Error()
	}
	return "condition not met within " + e.Timeout.String()
}

func (e *TimeoutError) Unwrap() error { return e.LastErr }
