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
	"math"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// cpuTime returns the CPU time the process has used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPUTime adds a cpu-ns/op metric: wall-clock ns/op is inflated when
// other processes share the machine, CPU time much less so.
func reportCPUTime(b *testing.B, since time.Duration) {
	b.ReportMetric(float64(cpuTime()-since)/float64(b.N), "cpu-ns/op")
}

// dayOfCPU returns a day of 1-minute CPU samples (millicores) following a
// daily wave between 100m and 900m with some jitter.
func dayOfCPU() []ResourceAmount {
	out := make([]ResourceAmount, 24*60)
	for i := range out {
		out[i] = ResourceAmount(500 + 400*math.Sin(2*math.Pi*float64(i)/1440) + float64(i*37%50))
	}
	return out
}

func BenchmarkAddCPUSample(b *testing.B) {
	samples := dayOfCPU()
	times := make([]time.Time, len(samples))
	for i := range times {
		times[i] = testStart.Add(time.Duration(i) * time.Minute)
	}
	agg := NewAggregateState(nil, testStart)
	// One container instance per day of samples, all feeding one aggregate.
	instances := make([]*ContainerState, b.N/len(samples)+1)
	for i := range instances {
		instances[i] = NewContainerState(agg)
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := cpuTime()
	for i, n := 0, 0; n < b.N; i++ {
		c := instances[i]
		for k := 0; k < len(samples) && n < b.N; k, n = k+1, n+1 {
			c.AddCPUSample(times[k], samples[k])
		}
	}
	reportCPUTime(b, start)
}

func BenchmarkPercentile(b *testing.B) {
	agg, _ := history(1)
	b.ReportAllocs()
	b.ResetTimer()
	var sink float64
	start := cpuTime()
	for i := 0; i < b.N; i++ {
		sink += agg.CPU.Percentile(0.9)
	}
	reportCPUTime(b, start)
	_ = sink
}

func BenchmarkSaveCheckpoint(b *testing.B) {
	agg, c := history(3)
	open := []*ContainerState{c}
	now := c.WindowEnd.Add(-time.Hour)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := SaveCheckpoint(agg, open, now); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRestoreCheckpoint(b *testing.B) {
	agg, c := history(3)
	s, err := SaveCheckpoint(agg, []*ContainerState{c}, c.WindowEnd)
	if err != nil {
		b.Fatal(err)
	}
	cfg := DefaultConfig()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := RestoreCheckpoint(cfg, &s, testStart); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBytesPerContainer reports the heap held by one tracked container
// (its aggregate and its instance state) after a day of 1-minute CPU samples
// and one memory peak. The CPU pattern spans about 25 buckets.
func BenchmarkBytesPerContainer(b *testing.B) {
	const n = 2000
	samples := dayOfCPU()
	cfg := DefaultConfig()
	build := func() []*ContainerState {
		out := make([]*ContainerState, n)
		for k := range out {
			c := NewContainerState(NewAggregateState(cfg, testStart))
			for i, m := range samples {
				c.AddCPUSample(testStart.Add(time.Duration(i)*time.Minute), m)
			}
			c.AddMemorySample(testStart, 200*mib)
			out[k] = c
		}
		return out
	}
	var perContainer float64
	for i := 0; i < b.N; i++ {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		held := build()
		runtime.GC()
		runtime.ReadMemStats(&after)
		perContainer = float64(after.HeapAlloc-before.HeapAlloc-uint64(8*n)) / n
		runtime.KeepAlive(held)
	}
	b.ReportMetric(perContainer, "bytes/container")
}
