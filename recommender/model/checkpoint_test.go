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
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
)

// history builds an aggregate fed by one instance with days of 1-minute CPU
// samples following a daily wave, and memory samples every 10 minutes.
func history(days int) (*AggregateState, *ContainerState) {
	agg := NewAggregateState(nil, testStart)
	c := NewContainerState(agg)
	for i := 0; i < days*24*60; i++ {
		ts := testStart.Add(time.Duration(i) * time.Minute)
		phase := 2 * math.Pi * float64(i%1440) / 1440
		c.AddCPUSample(ts, ResourceAmount(500+400*math.Sin(phase)+float64(i%7)*10))
		if i%10 == 0 {
			c.AddMemorySample(ts, ResourceAmount((300+100*math.Cos(phase))*mib))
		}
	}
	return agg, c
}

func TestCheckpointRoundTrip(t *testing.T) {
	agg, c := history(3)
	now := c.WindowEnd // the last window has just ended: nothing is open
	status, err := SaveCheckpoint(agg, []*ContainerState{c}, now)
	if err != nil {
		t.Fatal(err)
	}
	if status.Version != CheckpointVersion || status.TotalSamplesCount != agg.TotalSamplesCount {
		t.Errorf("status = %q, %d samples", status.Version, status.TotalSamplesCount)
	}
	restored, err := RestoreCheckpoint(nil, &status, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []float64{0, 0.1, 0.5, 0.9, 0.95, 0.99, 1} {
		if got, want := restored.CPU.Percentile(p), agg.CPU.Percentile(p); got != want {
			t.Errorf("cpu P%v = %v, want %v", p*100, got, want)
		}
		if got, want := restored.Memory.Percentile(p), agg.Memory.Percentile(p); got != want {
			t.Errorf("memory P%v = %v, want %v", p*100, got, want)
		}
	}
	if restored.TotalSamplesCount != agg.TotalSamplesCount || !restored.FirstSampleStart.Equal(agg.FirstSampleStart) ||
		!restored.LastSampleStart.Equal(agg.LastSampleStart) || restored.CPU.TotalWeight() != agg.CPU.TotalWeight() ||
		!restored.CPU.ReferenceTimestamp().Equal(agg.CPU.ReferenceTimestamp()) {
		t.Errorf("restored statistics differ")
	}
	again, err := SaveCheckpoint(restored, nil, now)
	if err != nil {
		t.Fatal(err)
	}
	for b, w := range status.CPUHistogram.BucketWeights {
		if again.CPUHistogram.BucketWeights[b] != w {
			t.Errorf("re-saved cpu bucket %d = %d, want %d", b, again.CPUHistogram.BucketWeights[b], w)
		}
	}
}

func TestCheckpointLeavesOutOpenPeak(t *testing.T) {
	agg := NewAggregateState(nil, testStart)
	c := NewContainerState(agg)
	c.AddMemorySample(testStart, 100*mib)
	c.AddMemorySample(testStart.Add(25*time.Hour), 200*mib) // second window, open until +48h
	before := agg.Memory.clone()

	tests := map[string]struct {
		now       time.Time
		wantPeaks int
	}{
		"open window is left out": {now: testStart.Add(30 * time.Hour), wantPeaks: 1},
		"ended window is kept":    {now: testStart.Add(48 * time.Hour), wantPeaks: 2},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			status, err := SaveCheckpoint(agg, []*ContainerState{c}, tc.now)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(status.MemoryHistogram.BucketWeights); got != tc.wantPeaks {
				t.Errorf("memory buckets = %v, want %d", status.MemoryHistogram.BucketWeights, tc.wantPeaks)
			}
			if !agg.Memory.Equal(&before) {
				t.Errorf("SaveCheckpoint modified the aggregate")
			}
		})
	}
}

func TestRestoreCorruptCheckpoint(t *testing.T) {
	valid := func() *vpav1.VerticalPodAutoscalerCheckpointStatus {
		agg, _ := history(1)
		s, err := SaveCheckpoint(agg, nil, testStart.Add(48*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		return &s
	}
	tests := map[string]struct {
		mutate  func(s *vpav1.VerticalPodAutoscalerCheckpointStatus)
		wantErr string
	}{
		"unknown version":   {func(s *vpav1.VerticalPodAutoscalerCheckpointStatus) { s.Version = "v2" }, `unsupported version "v2"`},
		"missing version":   {func(s *vpav1.VerticalPodAutoscalerCheckpointStatus) { s.Version = "" }, `unsupported version ""`},
		"negative total":    {func(s *vpav1.VerticalPodAutoscalerCheckpointStatus) { s.CPUHistogram.TotalWeight = -1 }, "cpuHistogram: negative total weight"},
		"NaN total":         {func(s *vpav1.VerticalPodAutoscalerCheckpointStatus) { s.MemoryHistogram.TotalWeight = math.NaN() }, "memoryHistogram: total weight NaN is not finite"},
		"infinite total":    {func(s *vpav1.VerticalPodAutoscalerCheckpointStatus) { s.CPUHistogram.TotalWeight = math.Inf(1) }, "cpuHistogram: total weight +Inf is not finite"},
		"negative bucket":   {func(s *vpav1.VerticalPodAutoscalerCheckpointStatus) { s.CPUHistogram.BucketWeights[-1] = 5 }, "cpuHistogram: negative bucket index -1"},
		"bucket past range": {func(s *vpav1.VerticalPodAutoscalerCheckpointStatus) { s.MemoryHistogram.BucketWeights[176] = 5 }, "memoryHistogram: bucket index 176 out of range"},
		"negative samples":  {func(s *vpav1.VerticalPodAutoscalerCheckpointStatus) { s.TotalSamplesCount = -3 }, "negative totalSamplesCount -3"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := valid()
			tc.mutate(s)
			got, err := RestoreCheckpoint(nil, s, testStart)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("RestoreCheckpoint() error = %v, want it to contain %q", err, tc.wantErr)
			}
			if got != nil {
				t.Errorf("RestoreCheckpoint() returned an aggregate with the error")
			}
		})
	}
	if _, err := RestoreCheckpoint(nil, nil, testStart); err == nil {
		t.Errorf("RestoreCheckpoint(nil) succeeded")
	}
}

func TestRestoreEmptyCheckpoint(t *testing.T) {
	ref := metav1.NewTime(testStart)
	s := &vpav1.VerticalPodAutoscalerCheckpointStatus{
		Version:      CheckpointVersion,
		CPUHistogram: vpav1.HistogramCheckpoint{ReferenceTimestamp: ref},
	}
	a, err := RestoreCheckpoint(nil, s, testStart)
	if err != nil {
		t.Fatal(err)
	}
	if !a.CPU.IsEmpty() || !a.Memory.IsEmpty() || !a.CPU.ReferenceTimestamp().Equal(testStart) {
		t.Errorf("restored empty checkpoint is not empty or lost its reference")
	}
}
