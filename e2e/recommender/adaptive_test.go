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

package recommender

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	"github.com/openvpa/openvpa/e2e/framework"
	"github.com/openvpa/openvpa/recommender/estimator"
	"github.com/openvpa/openvpa/recommender/model"
)

// adaptiveMemoryTarget returns the adaptive estimator's memory target, at its
// defaults, for an aggregate restored from status (or, when status is nil,
// for minutes of history with every memory peak at peakBytes).
func adaptiveMemoryTarget(t *testing.T, status *vpav1.VerticalPodAutoscalerCheckpointStatus, peakBytes float64) resource.Quantity {
	t.Helper()
	cfg := model.DefaultConfig()
	now := time.Now()
	var a *model.AggregateState
	if status != nil {
		var err error
		if a, err = model.RestoreCheckpoint(cfg, status, now); err != nil {
			t.Fatal(err)
		}
	} else {
		a = model.NewAggregateState(cfg, now)
		cs := model.NewContainerState(a)
		cs.AddCPUSample(now.Add(-2*time.Minute), model.CPUAmountFromCores(0.3))
		cs.AddCPUSample(now.Add(-time.Minute), model.CPUAmountFromCores(0.3))
		cs.AddMemorySample(now.Add(-2*time.Minute), model.MemoryAmountFromBytes(peakBytes))
	}
	res := estimator.NewAdaptive(estimator.DefaultConfig(), estimator.DefaultAdaptiveConfig()).Recommend(map[string]*model.AggregateState{"app": a}, nil, nil)
	if len(res.Containers) != 1 {
		t.Fatalf("adaptive estimator recommended %d containers", len(res.Containers))
	}
	return res.Containers[0].Target[corev1.ResourceMemory]
}

// memoryBuckets returns the memory histogram buckets of a checkpoint that
// hold a weight.
func memoryBuckets(cp *vpav1.VerticalPodAutoscalerCheckpoint) map[int]bool {
	out := map[int]bool{}
	for b, w := range cp.Status.MemoryHistogram.BucketWeights {
		if w > 0 {
			out[b] = true
		}
	}
	return out
}

// TestAdaptiveEstimatorRestoresFromCheckpoints runs the recommender with
// --estimator=adaptive: the VPA gets the adaptive estimator's target (not the
// percentile chain's), and after a SIGKILL the new process continues from
// the checkpoints, whose restored peaks keep setting the recommendation after
// usage drops (a process starting from scratch would see only the lower
// usage).
func TestAdaptiveEstimatorRestoresFromCheckpoints(t *testing.T) {
	t.Parallel()
	e := setup(t)
	const high, low = 600 << 20, 300 << 20
	e.c.CreateDeployment(t, e.ns, framework.Workload{Name: "web", Usage: framework.Usage{CPU: "300m", Memory: "600Mi"}})
	e.createVPA(t, e.ns, "web", "apps/v1", "Deployment", "web")
	// One-minute memory windows, so that checkpoints hold closed peaks
	// within the test's time.
	args := []string{"--vpa-object-namespace=" + e.ns, "--estimator=adaptive", "--memory-aggregation-interval=1m"}
	pidFile := filepath.Join(t.TempDir(), "pid")
	p := e.runKillable(t, pidFile, args...)

	want := adaptiveMemoryTarget(t, nil, high)
	percentile := resource.NewQuantity(int64(model.MemoryAmountFromBytes(
		float64(withPercentileMargin(model.DefaultMemoryHistogramOptions(), high)))), resource.BinarySI)
	if want.Cmp(*percentile) == 0 {
		t.Fatalf("test workload does not tell the estimators apart: both recommend %s", want.String())
	}
	framework.WaitFor(t, 4*time.Minute, func() (bool, error) {
		v, err := e.getVPA(e.ns, "web")
		if err != nil {
			return false, err
		}
		r := recommendation(v, "app")
		if r == nil {
			return false, fmt.Errorf("no recommendation yet; status %+v", v.Status)
		}
		if m := r.Target[corev1.ResourceMemory]; m.Cmp(want) != 0 {
			return false, fmt.Errorf("memory target %s, want the adaptive estimator's %s", m.String(), want.String())
		}
		return true, nil
	})
	highBucket := model.DefaultMemoryHistogramOptions().FindBucket(high)
	lowBucket := model.DefaultMemoryHistogramOptions().FindBucket(low)
	var saved int
	framework.WaitFor(t, 4*time.Minute, func() (bool, error) {
		cp, err := e.checkpoint(t, "web-app")
		if err != nil {
			return false, err
		}
		if !memoryBuckets(cp)[highBucket] {
			return false, fmt.Errorf("checkpoint holds no closed memory peak yet: %v", cp.Status.MemoryHistogram.BucketWeights)
		}
		saved = cp.Status.TotalSamplesCount
		return true, nil
	})
	kill(t, p, pidFile)

	// Usage drops; the restarted recommender must keep the high peaks it
	// restores.
	pods := e.c.WaitForPods(t, e.ns, "app=web", 1, framework.PodRunning)
	e.c.SetUsage(t, e.ns, pods[0].Name, framework.Usage{CPU: "300m", Memory: "300Mi"})
	e.run(t, args...)
	fresh := adaptiveMemoryTarget(t, nil, low)
	var cp *vpav1.VerticalPodAutoscalerCheckpoint
	framework.WaitFor(t, 4*time.Minute, func() (bool, error) {
		var err error
		if cp, err = e.checkpoint(t, "web-app"); err != nil {
			return false, err
		}
		if cp.Status.TotalSamplesCount <= saved {
			return false, fmt.Errorf("checkpoint not rewritten by the new process yet (%d samples, %d saved)", cp.Status.TotalSamplesCount, saved)
		}
		if b := memoryBuckets(cp); !b[lowBucket] || !b[highBucket] {
			return false, fmt.Errorf("checkpoint memory buckets %v, want both %d (restored) and %d (new usage)", cp.Status.MemoryHistogram.BucketWeights, highBucket, lowBucket)
		}
		return true, nil
	})
	if got := adaptiveMemoryTarget(t, &cp.Status, 0); got.Cmp(want) != 0 || got.Cmp(fresh) == 0 {
		t.Fatalf("adaptive target from the new process's checkpoint is %s, want %s (from scratch it would be %s)", got.String(), want.String(), fresh.String())
	}
	// The live recommendation is the one the checkpoint gives.
	framework.WaitFor(t, 2*time.Minute, func() (bool, error) {
		v, err := e.getVPA(e.ns, "web")
		if err != nil {
			return false, err
		}
		r := recommendation(v, "app")
		if r == nil {
			return false, fmt.Errorf("no recommendation; status %+v", v.Status)
		}
		if m := r.Target[corev1.ResourceMemory]; m.Cmp(want) != 0 {
			return false, fmt.Errorf("memory target %s after restart, want %s", m.String(), want.String())
		}
		return true, nil
	})
}

// withPercentileMargin returns the percentile chain's memory target for a
// histogram of peaks all at bytes: the bucket's upper edge plus 15%.
func withPercentileMargin(o *model.HistogramOptions, bytes float64) model.ResourceAmount {
	edge := model.MemoryAmountFromBytes(o.BucketStart(o.FindBucket(bytes) + 1))
	return edge + model.ScaleResource(edge, 0.15)
}
