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
	"hash/fnv"
	"sort"
	"time"
)

// Schedule tracks when each VPA's checkpoints are due. Every VPA is written at
// most once per interval, at a phase of its own: a VPA restored from a
// checkpoint keeps the phase of its last write, a new one gets a phase derived
// from a hash of its name, so writes spread evenly over the interval. Schedule
// is not safe for concurrent use.
type Schedule struct {
	interval time.Duration
	next     map[string]time.Time
}

// NewSchedule returns a schedule with the given write interval (> 0).
func NewSchedule(interval time.Duration) *Schedule {
	if interval <= 0 {
		interval = time.Minute
	}
	return &Schedule{interval: interval, next: map[string]time.Time{}}
}

// Interval returns the write interval.
func (s *Schedule) Interval() time.Duration { return s.interval }

// Track adds key if it is not tracked yet. lastWritten is the time of its
// newest checkpoint, zero if it has none.
func (s *Schedule) Track(key string, lastWritten, now time.Time) {
	if _, ok := s.next[key]; ok {
		return
	}
	if !lastWritten.IsZero() {
		s.next[key] = s.advance(lastWritten.Add(s.interval), now)
		return
	}
	s.next[key] = now.Add(Offset(key, s.interval))
}

// advance moves t forward by whole intervals until it is after now, keeping
// its phase; a t already after now is returned as is, but never later than
// one interval from now.
func (s *Schedule) advance(t, now time.Time) time.Time {
	if t.After(now.Add(s.interval)) {
		return now.Add(s.interval)
	}
	if !t.After(now) {
		n := now.Sub(t)/s.interval + 1
		t = t.Add(n * s.interval)
	}
	return t
}

// Forget stops tracking key.
func (s *Schedule) Forget(key string) { delete(s.next, key) }

// Next returns when key is due, and whether it is tracked.
func (s *Schedule) Next(key string) (time.Time, bool) {
	t, ok := s.next[key]
	return t, ok
}

// Due returns the tracked keys due at now, the longest overdue first.
func (s *Schedule) Due(now time.Time) []string {
	var due []string
	for k, t := range s.next {
		if !t.After(now) {
			due = append(due, k)
		}
	}
	sort.Slice(due, func(i, j int) bool {
		ti, tj := s.next[due[i]], s.next[due[j]]
		if !ti.Equal(tj) {
			return ti.Before(tj)
		}
		return due[i] < due[j]
	})
	return due
}

// Written records that key was written at now; it is next due one interval
// after its previous due time (the same phase), or later if it fell behind.
func (s *Schedule) Written(key string, now time.Time) {
	prev, ok := s.next[key]
	if !ok {
		prev = now
	}
	s.next[key] = s.advance(prev.Add(s.interval), now)
}

// Offset returns the phase of key in [0, interval).
func Offset(key string, interval time.Duration) time.Duration {
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	return time.Duration(h.Sum64() % uint64(interval))
}
