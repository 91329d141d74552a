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

package estimator

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/openvpa/openvpa/recommender/model"
)

// TestSteadyContainer is the issue-5 scenario: one container at a steady
// 300m CPU and 200Mi memory gets 350m CPU (P90 upper edge 0.305390 core →
// 305m → +15% → 350m) and the 250Mi pod minimum.
func TestSteadyContainer(t *testing.T) {
	start := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	agg := model.NewAggregateState(nil, start)
	c := model.NewContainerState(agg)
	for i := 0; i < 24*60; i++ {
		ts := start.Add(time.Duration(i) * time.Minute)
		c.AddCPUSample(ts, 300)
		c.AddMemorySample(ts, 200*1024*1024)
	}
	res := NewPercentile(DefaultConfig()).Recommend(map[string]*model.AggregateState{"app": agg}, nil, nil)
	if len(res.Containers) != 1 {
		t.Fatalf("got %d containers, want 1", len(res.Containers))
	}
	r := res.Containers[0]
	want := map[corev1.ResourceName]string{corev1.ResourceCPU: "350m", corev1.ResourceMemory: "250Mi"}
	for name, w := range want {
		got := r.Target[name]
		if got.Cmp(resource.MustParse(w)) != 0 {
			t.Errorf("target %s = %s, want %s", name, got.String(), w)
		}
	}
}
