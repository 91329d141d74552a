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

package history

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"k8s.io/utils/clock"

	"github.com/openvpa/openvpa/e2e/framework"
	"github.com/openvpa/openvpa/recommender/input/history"
	"github.com/openvpa/openvpa/recommender/input/history/historytest"
	"github.com/openvpa/openvpa/recommender/model"
)

// BenchmarkLoad1000Containers fetches 8 days of hourly history of 1,000
// containers (500 pods of two) in one namespace from a real Prometheus and
// feeds it into the model, as the recommender does at start. It reports the
// time per load, the bytes allocated, and the heap the loaded namespace
// keeps until the loop has applied it.
//
//	go test ./e2e/history/ -run '^$' -bench Load1000 -benchtime 5x
func BenchmarkLoad1000Containers(b *testing.B) {
	c := framework.Start(b)
	const ns = "bench"
	var pods []historytest.Pod
	for i := range 500 {
		pods = append(pods, historytest.Pod{Namespace: ns, Name: fmt.Sprintf("web-%03d", i), Labels: map[string]string{"app": "web"},
			Containers: []historytest.Container{{Name: "app", Usage: webApp}, {Name: "sidecar", Usage: webSidecar}}})
	}
	series := filepath.Join(b.TempDir(), "series.om")
	f, err := os.Create(series)
	if err != nil {
		b.Fatal(err)
	}
	// A point every 30 minutes, on the hour and the half hour: three per
	// hour-long rate window, and one on each hour for the memory gauge,
	// for a thirtieth of the file of a 1-minute scrape.
	now := time.Now().Truncate(time.Hour)
	if err := historytest.WriteOpenMetrics(f, pods, historytest.Options{From: now.Add(-historyLength - 2*time.Hour), To: now.Add(2 * time.Hour), Scrape: 30 * time.Minute}); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	prom := c.NewPrometheus(b, framework.PrometheusOptions{OpenMetrics: series})
	prom.Start(b)
	cfg := history.Config{
		Address: prom.URL, CadvisorJobName: historytest.CadvisorJob, Length: historyLength, Resolution: time.Hour,
		CPUMetric: "container_cpu_usage_seconds_total", MemoryMetric: "container_memory_working_set_bytes",
		QueryTimeout: time.Minute, PodLabelsMetric: `up{job="kubernetes-pods"}`, PodLabelPrefix: "pod_label_",
		PodNamespaceLabel: "kubernetes_namespace", PodNameLabel: "kubernetes_pod_name",
		ContainerNamespaceLabel: "namespace", ContainerPodNameLabel: "pod_name", ContainerNameLabel: "name",
	}
	p, err := history.NewProvider(cfg, clock.RealClock{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	var kept uint64
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		var before runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		h, err := p.Fetch(context.Background(), ns)
		if err != nil {
			b.Fatal(err)
		}
		var after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&after)
		kept = after.HeapAlloc - min(after.HeapAlloc, before.HeapAlloc)
		aggs := map[string]*model.AggregateState{}
		for _, pod := range h.Pods {
			for name, ctr := range pod.Containers {
				a, ok := aggs[name]
				if !ok {
					a = model.NewAggregateState(nil, now)
					aggs[name] = a
				}
				historytest.Feed(a, ctr)
			}
		}
		if n := len(h.Pods); n != 500 {
			b.Fatalf("pods = %d, want 500", n)
		}
		if cpu, mem := h.Samples(); cpu != 1000*193 || mem != 1000*193 {
			b.Fatalf("samples = %d cpu, %d memory, want %d each", cpu, mem, 1000*193)
		}
		runtime.KeepAlive(h)
	}
	b.ReportMetric(float64(kept)/(1<<20), "MiB-kept")
}
