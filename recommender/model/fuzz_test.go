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
	"encoding/binary"
	"math"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
)

// finite fails the test when x is NaN or infinite.
func finite(t *testing.T, what string, x float64) {
	t.Helper()
	if math.IsNaN(x) || math.IsInf(x, 0) {
		t.Fatalf("%s = %v", what, x)
	}
}

func checkAggregate(t *testing.T, a *AggregateState, now time.Time) {
	t.Helper()
	for _, p := range []float64{0, 0.5, 0.9, 0.95, 1} {
		finite(t, "cpu percentile", a.CPU.Percentile(p))
		finite(t, "memory percentile", a.Memory.Percentile(p))
	}
	s, err := SaveCheckpoint(a, nil, now)
	if err != nil {
		return // a non-finite total is reported, not written
	}
	finite(t, "saved cpu total", s.CPUHistogram.TotalWeight)
	finite(t, "saved memory total", s.MemoryHistogram.TotalWeight)
}

func FuzzRestoreCheckpoint(f *testing.F) {
	f.Add("v3", 10051.0, 3, uint32(1), 40, uint32(10000), 60, uint32(50), 1440, int64(0), int64(86400))
	f.Add("v3", 0.0, 0, uint32(0), 0, uint32(0), 0, uint32(0), 0, int64(0), int64(0))
	f.Add("v3", -1.0, 1, uint32(1), 2, uint32(2), 3, uint32(3), 1, int64(0), int64(0))
	f.Add("v3", 1e308, 175, uint32(4294967295), 0, uint32(4294967295), 176, uint32(1), -1, int64(-1e18), int64(1e18))
	f.Add("v2", math.NaN(), -1, uint32(1), 2, uint32(2), 3, uint32(3), 5, int64(0), int64(60))
	f.Fuzz(func(t *testing.T, version string, total float64, b1 int, w1 uint32, b2 int, w2 uint32, b3 int, w3 uint32, samples int, refSec, lastSec int64) {
		ref := metav1.NewTime(time.Unix(refSec, 0))
		hc := vpav1.HistogramCheckpoint{
			ReferenceTimestamp: ref,
			BucketWeights:      map[int]uint32{b1: w1, b2: w2, b3: w3},
			TotalWeight:        total,
		}
		s := &vpav1.VerticalPodAutoscalerCheckpointStatus{
			Version:           version,
			CPUHistogram:      hc,
			MemoryHistogram:   hc,
			FirstSampleStart:  ref,
			LastSampleStart:   metav1.NewTime(time.Unix(lastSec, 0)),
			TotalSamplesCount: samples,
		}
		a, err := RestoreCheckpoint(nil, s, testStart)
		if err != nil {
			if a != nil {
				t.Fatalf("aggregate returned with error %v", err)
			}
			return
		}
		checkAggregate(t, a, testStart)
		c := NewContainerState(a)
		now := time.Unix(lastSec, 0).Add(time.Minute)
		c.AddCPUSample(now, 250)
		c.AddMemorySample(now, 100*mib)
		_ = c.RecordOOM(now, 200*mib)
		checkAggregate(t, a, now)
	})
}

// FuzzHistogramOps interprets the input as a sequence of 12-byte operations
// on two aggregates: an opcode, a value and a time offset.
func FuzzHistogramOps(f *testing.F) {
	f.Add([]byte{0, 1, 0, 0, 0, 100, 0, 0, 0, 1, 0, 0})
	f.Add([]byte{1, 255, 255, 255, 255, 255, 255, 255, 127, 255, 255, 255, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 9, 9, 9})
	f.Add([]byte("a sequence of twelve byte records, forty-eight"))
	f.Fuzz(func(t *testing.T, data []byte) {
		aggs := [2]*AggregateState{NewAggregateState(nil, testStart), NewAggregateState(nil, testStart)}
		cs := [2]*ContainerState{NewContainerState(aggs[0]), NewContainerState(aggs[1])}
		now := testStart
		for len(data) >= 12 {
			op, v, dt := data[0], binary.LittleEndian.Uint64(data[1:9]), binary.LittleEndian.Uint32(data[8:12])
			data = data[12:]
			i := int(op>>4) & 1
			now = now.Add(time.Duration(dt) * time.Second)
			amount := ResourceAmount(v >> 10)
			switch op % 6 {
			case 0:
				cs[i].AddCPUSample(now, amount)
			case 1:
				cs[i].AddMemorySample(now, amount)
			case 2:
				_ = cs[i].RecordOOM(now.Add(-time.Duration(v%(1<<40))), amount)
			case 3:
				if err := aggs[i].Merge(aggs[1-i]); err != nil {
					t.Fatal(err)
				}
			case 4:
				aggs[i].Memory.SubtractSample(math.Float64frombits(v), 1, now)
			case 5:
				aggs[i].CPU.AddSample(math.Float64frombits(v), float64(dt)/7, now.Add(-time.Duration(v)))
			}
			for _, a := range aggs {
				finite(t, "cpu total", a.CPU.TotalWeight())
				checkAggregate(t, a, now)
			}
		}
	})
}
