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

package checkpoint

import (
	"fmt"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestScheduleTrack(t *testing.T) {
	const interval = 10 * time.Minute
	tests := map[string]struct {
		lastWritten time.Time
		want        time.Time
	}{
		"new key gets its hash phase":     {want: t0.Add(Offset("ns/a", interval))},
		"recent checkpoint keeps phase":   {lastWritten: t0.Add(-3 * time.Minute), want: t0.Add(7 * time.Minute)},
		"old checkpoint keeps phase":      {lastWritten: t0.Add(-34 * time.Minute), want: t0.Add(6 * time.Minute)},
		"checkpoint exactly one interval": {lastWritten: t0.Add(-interval), want: t0.Add(interval)},
		"clock skew caps at one interval": {lastWritten: t0.Add(time.Hour), want: t0.Add(interval)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := NewSchedule(interval)
			s.Track("ns/a", tc.lastWritten, t0)
			got, ok := s.Next("ns/a")
			if !ok || !got.Equal(tc.want) {
				t.Errorf("next = %v, want %v", got, tc.want)
			}
			s.Track("ns/a", time.Time{}, t0.Add(time.Hour)) // tracking again changes nothing
			if again, _ := s.Next("ns/a"); !again.Equal(got) {
				t.Errorf("re-tracking moved next from %v to %v", got, again)
			}
		})
	}
}

func TestScheduleSpreadsAndKeepsPhase(t *testing.T) {
	const interval = 10 * time.Minute
	s := NewSchedule(interval)
	const n = 1000
	for i := range n {
		s.Track(fmt.Sprintf("ns/vpa-%d", i), time.Time{}, t0)
	}
	// Ten one-minute loops cover one interval: each key is due exactly once,
	// and no loop gets much more than its share (n/10).
	seen := map[string]int{}
	for m := 1; m <= 10; m++ {
		now := t0.Add(time.Duration(m) * time.Minute)
		due := s.Due(now)
		if len(due) > n/10*2 {
			t.Errorf("minute %d: %d due, want about %d", m, len(due), n/10)
		}
		for _, k := range due {
			seen[k]++
			s.Written(k, now)
		}
	}
	if len(seen) != n {
		t.Fatalf("%d keys written in one interval, want %d", len(seen), n)
	}
	for k, c := range seen {
		if c != 1 {
			t.Errorf("%s written %d times", k, c)
		}
		next, _ := s.Next(k)
		if next.Sub(t0.Add(Offset(k, interval))) != interval {
			t.Errorf("%s next = %v, phase lost", k, next)
		}
	}
}

func TestScheduleDueOrderAndFallingBehind(t *testing.T) {
	s := NewSchedule(time.Minute)
	s.Track("late", t0.Add(-5*time.Minute+time.Second), t0.Add(-5*time.Minute+2*time.Second))
	s.Track("later", t0.Add(-2*time.Minute), t0.Add(-2*time.Minute))
	due := s.Due(t0)
	if len(due) != 2 || due[0] != "late" {
		t.Fatalf("due = %v, want the longest overdue first", due)
	}
	s.Written("late", t0)
	next, _ := s.Next("late")
	if !next.After(t0) || next.Sub(t0) > time.Minute {
		t.Errorf("after falling behind next = %v, want within one interval after %v", next, t0)
	}
	s.Forget("later")
	if _, ok := s.Next("later"); ok {
		t.Error("forgotten key still tracked")
	}
}
