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

import (
	"fmt"
	"time"
)

// ContainerState is the per-instance state of one running container (one
// pod × container name): the time of its last CPU sample and its current
// memory aggregation window. It feeds the AggregateState it was built with;
// the aggregate's Config supplies the window length and the OOM parameters.
type ContainerState struct {
	aggregate *AggregateState

	// LastCPUSampleStart is the time of the last CPU sample accepted.
	LastCPUSampleStart time.Time
	// WindowEnd is the end (exclusive) of the current memory window; zero
	// before the first memory sample.
	WindowEnd time.Time

	lastMemorySampleStart time.Time
	memoryPeak            ResourceAmount
	oomPeak               ResourceAmount
}

// NewContainerState returns the state of a new container instance feeding
// aggregate.
func NewContainerState(aggregate *AggregateState) *ContainerState {
	return &ContainerState{aggregate: aggregate}
}

// Aggregate returns the aggregate this instance feeds.
func (c *ContainerState) Aggregate() *AggregateState { return c.aggregate }

// SetAggregate points the instance at another aggregate, for example after
// its VPA was recreated. Peaks already recorded stay in the old aggregate.
func (c *ContainerState) SetAggregate(a *AggregateState) { c.aggregate = a }

// MaxMemoryPeak returns the larger of the usage peak and the OOM peak of the
// current window.
func (c *ContainerState) MaxMemoryPeak() ResourceAmount {
	return max(c.memoryPeak, c.oomPeak)
}

// AddCPUSample records usage in millicores measured at t. It returns false,
// and records nothing, when usage is negative or t is not after the previous
// CPU sample of this instance.
func (c *ContainerState) AddCPUSample(t time.Time, usage ResourceAmount) bool {
	w := wallOf(t)
	if usage < 0 || !wallOf(c.LastCPUSampleStart).before(w) {
		return false
	}
	c.aggregate.addCPU(t, w, usage)
	c.LastCPUSampleStart = t
	return true
}

// AddMemorySample records usage in bytes measured at t. It returns false,
// and records nothing, when usage is negative or t is before the previous
// memory sample of this instance.
func (c *ContainerState) AddMemorySample(t time.Time, usage ResourceAmount) bool {
	return c.addMemory(t, usage, false)
}

// addMemory keeps one peak per window in the aggregate. Inside the current
// window a larger value replaces the peak (subtract the old, add the new),
// except when the peak so far is 0 and the Config does not ReplaceZeroPeak
// (upstream's rule). At or past the window end, the window moves forward by
// whole intervals to cover t and the value starts a new peak.
func (c *ContainerState) addMemory(t time.Time, usage ResourceAmount, oom bool) bool {
	if usage < 0 || (!oom && t.Before(c.lastMemorySampleStart)) {
		return false
	}
	c.lastMemorySampleStart = t
	if c.WindowEnd.IsZero() {
		c.WindowEnd = t
	}
	add := false
	if t.Before(c.WindowEnd) {
		if old := c.MaxMemoryPeak(); (old != 0 || c.aggregate.config.ReplaceZeroPeak) && usage > old {
			c.aggregate.subtractMemoryPeak(c.WindowEnd, old)
			add = true
		}
	} else {
		interval := c.aggregate.config.MemoryAggregationInterval
		c.WindowEnd = c.WindowEnd.Add(t.Sub(c.WindowEnd).Truncate(interval) + interval)
		c.memoryPeak, c.oomPeak = 0, 0
		add = true
	}
	if add {
		c.aggregate.addMemoryPeak(c.WindowEnd, usage)
		if oom {
			c.oomPeak = usage
		} else {
			c.memoryPeak = usage
		}
	}
	return true
}

// RecordOOM records an OOM kill at t of a container that requested
// requestBytes of memory, as a memory sample of
// max(used + OOMMinBumpUpBytes, used × OOMBumpUpRatio) where
// used = max(requestBytes, current usage peak). The OOM peak itself is left
// out of used so that repeated OOMs do not compound. An OOM older than the
// last memory sample minus one window is rejected with an error.
func (c *ContainerState) RecordOOM(t time.Time, requestBytes ResourceAmount) error {
	cfg := c.aggregate.config
	if t.Before(c.lastMemorySampleStart.Add(-cfg.MemoryAggregationInterval)) {
		return fmt.Errorf("OOM at %v is too old: last memory sample at %v", t, c.lastMemorySampleStart)
	}
	used := max(requestBytes, c.memoryPeak)
	needed := max(used+MemoryAmountFromBytes(cfg.OOMMinBumpUpBytes), ScaleResource(used, cfg.OOMBumpUpRatio))
	if !c.addMemory(t, needed, true) {
		return fmt.Errorf("OOM at %v with request %d bytes was not recorded", t, requestBytes)
	}
	return nil
}

// openPeak returns the peak of the current window and its end when the
// window has not ended at now.
func (c *ContainerState) openPeak(now time.Time) (time.Time, ResourceAmount, bool) {
	if !now.Before(c.WindowEnd) {
		return time.Time{}, 0, false
	}
	return c.WindowEnd, c.MaxMemoryPeak(), true
}

// wallTime is a time as Unix seconds and nanoseconds, ordered on the wall
// clock. Unlike time.Time.Before, comparing wallTimes ignores monotonic clock
// readings (sample times come from metrics and checkpoints, which have none),
// and both it and wallOf are small enough to be inlined on the per-sample
// path.
type wallTime struct {
	sec  int64
	nsec int
}

func wallOf(t time.Time) wallTime { return wallTime{t.Unix(), t.Nanosecond()} }

func (a wallTime) before(b wallTime) bool {
	return a.sec < b.sec || a.sec == b.sec && a.nsec < b.nsec
}
